//! The requantizer's tensor-name patterns against libstdc++'s `std::regex` (ECMAScript, the
//! constructor and `std::regex_search` llama-quantize calls), in a helper process
//! (`tests/requantize/regex_shim.cpp`, built here with the system's C++ compiler): thousands
//! of generated patterns (classes, POSIX classes, escapes, groups, lookaheads,
//! back-references, anchors, word boundaries, every quantifier, lazy or not, and broken
//! syntax) over tensor names and random names, lower-cased as llama-quantize lower-cases them.
//! Each pattern is refused by both or by neither, and each accepted one finds the same names.
//! A search this crate stops for its bounds (a few pathological patterns) is counted, not
//! compared, and must stay rare.

mod common;

use common::rng::RngStar as Rng;
use gguf::requantize::Pattern;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

fn shim_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("requantize_pattern");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("regex_shim");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let mut cmd = Command::new(cxx);
        cmd.args([
            "-std=c++17",
            "-O1",
            "-pthread",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .arg(common::manifest_dir().join("tests/requantize/regex_shim.cpp"));
        common::link_aside(&mut cmd, &exe);
        exe
    })
}

fn put(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

/// What `std::regex` says of each pattern: `None` when it refuses the pattern, else for each
/// name whether it is found (`None` where the search throws).
fn std_regex(patterns: &[Vec<u8>], names: &[Vec<u8>]) -> Vec<Option<Vec<Option<bool>>>> {
    let mut input = Vec::new();
    input.extend_from_slice(&(patterns.len() as u32).to_le_bytes());
    for p in patterns {
        put(&mut input, p);
    }
    input.extend_from_slice(&(names.len() as u32).to_le_bytes());
    for n in names {
        put(&mut input, n);
    }
    let mut child = Command::new(shim_exe())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the shim");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "the shim failed: {:?}", out.status);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), patterns.len());
    lines
        .iter()
        .map(|l| {
            if *l == "E" {
                None
            } else {
                Some(
                    l.bytes()
                        .map(|c| match c {
                            b'1' => Some(true),
                            b'0' => Some(false),
                            _ => None,
                        })
                        .collect(),
                )
            }
        })
        .collect()
}

/// Pieces patterns are made of: every construct, each a few ways.
const ATOMS: &[&str] = &[
    "a",
    "b",
    "k",
    "_",
    ".",
    "0",
    "1",
    "9",
    "q",
    "attn",
    "blk",
    "weight",
    r"\.",
    r"\d",
    r"\D",
    r"\w",
    r"\W",
    r"\s",
    r"\S",
    r"\x61",
    r"\x2e",
    r"\u0062",
    r"\u0161",
    r"\0",
    r"\n",
    r"\t",
    r"\cJ",
    r"\-",
    r"\_",
    r"\a",
    "[a-c]",
    "[^0-9]",
    "[[:digit:]]",
    "[[:alpha:]_]",
    "[[:alnum:]]",
    "[[:punct:]]",
    "[[:space:]]",
    "[[:upper:]]",
    "[[:lower:]]",
    "[[:xdigit:]]",
    "[[:w:]]",
    "[[:d:]]",
    r"[\d.]",
    r"[\D]",
    r"[\w-]",
    "[-a]",
    "[a-]",
    "[a-c-e]",
    "[]",
    "[^]",
    "[.]",
    r"[\]]",
    "[]a]",
    r"[\b]",
    "[0-9_k]",
    "[[]",
    "[^.]",
    "[--/]",
    "]",
    "}",
    "|",
    "[[.a.]]",
    "[[.hyphen.]]",
    "[[.zero.]-[.two.]]",
    "[[=a=]]",
    "[[=_=]]",
    "[[:blank:]]",
    "[[:cntrl:]]",
    "[[:graph:]]",
    "[[:print:]]",
];

/// Pieces that std::regex refuses (or that make what follows them so).
const BROKEN: &[&str] = &[
    "{",
    "(",
    ")",
    "[",
    "*",
    "+",
    "?",
    r"\",
    "[[:foo:]]",
    "[z-a]",
    r"[\d-z]",
    "x{",
    "a{x}",
    "[[.foo.]]",
    "[[=x",
    "(?<=a)",
    "[[:digit:]-z]",
    r"[\B]",
    r"[\1]",
    "a{2,1}",
];

const QUANTIFIERS: &[&str] = &[
    "*", "+", "?", "*?", "+?", "??", "{2}", "{0}", "{1,}", "{0,2}", "{1,3}?", "{2}*", "{3}{2}",
];

fn pattern(rng: &mut Rng, depth: u32, groups: &mut u32) -> String {
    let mut s = String::new();
    let n = 1 + rng.below(4);
    for _ in 0..n {
        let r = rng.below(100);
        let piece = if r < 2 {
            BROKEN[rng.below(BROKEN.len())].to_string()
        } else if r < 50 || depth > 2 {
            ATOMS[rng.below(ATOMS.len())].to_string()
        } else if r < 60 {
            *groups += 1;
            format!("({})", pattern(rng, depth + 1, groups))
        } else if r < 68 {
            format!("(?:{})", pattern(rng, depth + 1, groups))
        } else if r < 73 {
            format!("(?={})", pattern(rng, depth + 1, groups))
        } else if r < 78 {
            format!("(?!{})", pattern(rng, depth + 1, groups))
        } else if r < 84 {
            format!(
                "{}|{}",
                pattern(rng, depth + 1, groups),
                pattern(rng, depth + 1, groups)
            )
        } else if r < 88 {
            ["^", "$", r"\b", r"\B"][rng.below(4)].to_string()
        } else if r < 93 {
            let k = match *groups as usize {
                0 => 1,
                g => 1 + rng.below(g) + usize::from(rng.below(8) == 0),
            };
            format!(r"\{k}")
        } else {
            format!("({})\\{}", pattern(rng, depth + 1, groups), *groups + 1)
        };
        s.push_str(&piece);
        // Assertions take no quantifier (std::regex refuses one).
        let assertion = piece.starts_with("(?=")
            || piece.starts_with("(?!")
            || ["^", "$", r"\b", r"\B", "|"].contains(&piece.as_str());
        if !assertion && rng.below(3) == 0 {
            s.push_str(QUANTIFIERS[rng.below(QUANTIFIERS.len())]);
        }
    }
    s
}

fn names(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        "token_embd.weight",
        "output.weight",
        "output_norm.weight",
        "blk.0.attn_q.weight",
        "blk.1.attn_k.weight",
        "blk.10.attn_v.weight",
        "blk.3.ffn_down.weight",
        "blk.0.ffn_up_exps.weight",
        "blk.12.ffn_gate.weight",
        "per_layer_token_embd.weight",
        "",
        "a",
        "aa",
        "abab",
        "k\nq",
        "_0_",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let alphabet = b"ab._0129kq-_\n\t [] ";
    for _ in 0..14 {
        let len = rng.below(12);
        v.push(
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect(),
        );
    }
    // Bytes past ASCII: a signed `char` on x86-64, where the test's reference is built.
    if cfg!(target_arch = "x86_64") {
        v.push(vec![b'a', 0xc3, 0xa9, b'.', 0xff]);
        v.push(vec![0x80, b'b', 0x7f]);
    }
    v
}

#[test]
fn patterns_mean_what_std_regex_means() {
    let mut rng = Rng(0x5eed_7e57);
    let names = names(&mut rng);
    let mut patterns: Vec<Vec<u8>> = Vec::new();
    for _ in 0..4000 {
        let mut groups = 0;
        // llama-quantize lower-cases the pattern (ASCII letters) before compiling it.
        patterns.push(
            pattern(&mut rng, 0, &mut groups)
                .to_ascii_lowercase()
                .into_bytes(),
        );
    }
    if cfg!(target_arch = "x86_64") {
        for p in [
            &b"[\x80-\xff]"[..],
            b"[a-\xff]",
            b"\xc3\xa9",
            b"[^\x01-\x7f]",
            b"[\\x80-\\xff]",
            b"\\W\\W",
        ] {
            patterns.push(p.to_vec());
        }
    }
    let theirs = std_regex(&patterns, &names);
    let (mut compared, mut accepted, mut refused, mut bounded) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    let mut slow = Vec::new();
    for (p, want) in patterns.iter().zip(&theirs) {
        let text = String::from_utf8_lossy(p).into_owned();
        if std::str::from_utf8(p).is_err() {
            // The crate takes patterns as UTF-8 text; a byte pattern is compared through its
            // bytes only where they are valid text.
            continue;
        }
        let ours = Pattern::new(&text);
        match (ours, want) {
            (Err(_), None) => refused += 1,
            (Ok(_), None) => failures.push(format!("{text:?}: std::regex refuses it, we accept")),
            (Err(e), Some(_)) => failures.push(format!("{text:?}: we refuse it ({e})")),
            (Ok(ours), Some(want)) => {
                accepted += 1;
                for (name, w) in names.iter().zip(want) {
                    let Some(w) = w else {
                        if slow.last() != Some(&text) {
                            slow.push(text.clone());
                        }
                        continue;
                    };
                    match ours.search(name) {
                        Ok(got) => {
                            compared += 1;
                            if got != *w {
                                failures.push(format!(
                                    "{text:?} on {:?}: std::regex {w}, we {got}",
                                    String::from_utf8_lossy(name)
                                ));
                            }
                        }
                        Err(e) => {
                            bounded += 1;
                            assert!(e.to_string().contains("pattern"), "{e}");
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    eprintln!(
        "{accepted} patterns accepted, {refused} refused; {compared} searches compared, \
         {bounded} stopped by the bounds; {} patterns not finished by std::regex",
        slow.len()
    );
    // Searches std::regex does not finish within a second are not compared: few.
    assert!(slow.len() < 5, "{} slow patterns: {slow:?}", slow.len());
    // The generator reaches both sides, and the bounds stay the exception.
    assert!(
        accepted > 1000 && refused > 300,
        "{accepted} accepted, {refused} refused"
    );
    assert!(compared > 60_000, "{compared}");
    assert!(
        bounded * 1000 < compared,
        "{bounded} searches stopped by the bounds"
    );
}

#[test]
fn bounded_work_on_hostile_patterns() {
    // An empty group repeated billions of times, as std::regex would wrap the count: refused
    // at once, clearly.
    let t = std::time::Instant::now();
    for p in [
        "(?:(?:){4000000000}){4000000000}",
        "(?:(?:){40000}){40000}",
        "(?:a{1000}){1000}",
        "a{99999999999}",
    ] {
        let e = Pattern::new(p).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("2147483647") || msg.contains("100000 states"),
            "{p}: {msg}"
        );
    }
    // Nested repetitions on a long name: the search stops with an error, fast.
    let p = Pattern::new("(?:(?:(?:a*)*)*)*b").unwrap();
    let e = p.search(&[b'a'; 200]).unwrap_err();
    assert!(e.to_string().contains("steps"), "{e}");
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
}
