//! The tokenizer's Unicode layer and pre-tokenizer split against llama.cpp's own functions,
//! called in a helper process (`tests/llama/split_shim.cpp`, linked against the prebuilt
//! `libllama` beside ggml's library): the flags, lower case and NFD of every code point, the
//! decoding of valid and invalid UTF-8, GPT-2's byte mapping, and the words of every
//! pre-tokenizer's expressions on generated text in many scripts and on hostile bytes. Also the
//! pre-tokenizer names and expressions against llama.cpp's `llama-vocab.cpp`, verbatim.
//!
//! Where llama.cpp throws instead of answering (a code point above 0x10FFFF, which its decoder
//! yields for lead bytes 0xF4..=0xF7, cannot be re-encoded; the Kimi K2 and AFMoE expressions on
//! empty text fall through to `std::regex`, which rejects `\p{...}`), the test says so and checks
//! that these are the only cases.

mod common;

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

use common::rng::RngStar as Rng;
use gguf::tokenizer::pretokenize::{PreType, Splitter};
use gguf::tokenizer::unicode;

/// The shim, built once per test process.
fn shim_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokenizer_split");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("split_shim");
        let ggml = common::ggml_dir();
        assert!(
            ggml.join("libllama.v0.5.0.so").is_file(),
            "libllama.v0.5.0.so is not in {}: run `make ggml` (tools/fetch-ggml.sh)",
            ggml.display()
        );
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let mut cmd = Command::new(cxx);
        cmd.args(["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror"])
            .arg(common::manifest_dir().join("tests/llama/split_shim.cpp"))
            .arg(format!("-L{}", ggml.display()))
            .arg("-l:libllama.v0.5.0.so")
            .arg(format!("-Wl,-rpath,{}", ggml.display()));
        common::link_aside(&mut cmd, &exe);
        exe
    })
}

struct Shim {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Shim {
    fn start() -> Shim {
        let mut child = Command::new(shim_exe())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // llama.cpp prints the `std::regex` error before throwing, for the inputs
            // `llama_cpp_throws` accepts.
            .stderr(Stdio::null())
            .spawn()
            .expect("start the shim");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Shim {
            child,
            stdin,
            stdout,
        }
    }

    fn u32(&mut self) -> u32 {
        let mut b = [0; 4];
        self.stdout.read_exact(&mut b).expect("shim reply");
        u32::from_le_bytes(b)
    }

    fn u8(&mut self) -> u8 {
        let mut b = [0; 1];
        self.stdout.read_exact(&mut b).expect("shim reply");
        b[0]
    }

    fn bytes(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        let mut v = vec![0; n];
        self.stdout.read_exact(&mut v).expect("shim reply");
        v
    }

    fn send(&mut self, msg: &[u8]) {
        self.stdin.write_all(msg).unwrap();
        self.stdin.flush().unwrap();
    }

    /// llama.cpp's `unicode_regex_split`; `None` when it throws.
    fn split(&mut self, regexes: &[&str], byte_encode: bool, text: &[u8]) -> Option<Vec<Vec<u8>>> {
        let mut msg = vec![b'S'];
        put(&mut msg, &(regexes.len() as u32).to_le_bytes(), false);
        for r in regexes {
            put(&mut msg, r.as_bytes(), true);
        }
        msg.push(u8::from(byte_encode));
        put(&mut msg, text, true);
        self.send(&msg);
        if self.u8() != 0 {
            return None;
        }
        let n = self.u32();
        Some((0..n).map(|_| self.bytes()).collect())
    }

    fn decode(&mut self, text: &[u8]) -> Vec<u32> {
        let mut msg = vec![b'D'];
        put(&mut msg, text, true);
        self.send(&msg);
        let n = self.u32();
        (0..n).map(|_| self.u32()).collect()
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"Q");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

fn put(msg: &mut Vec<u8>, bytes: &[u8], with_len: bool) {
    if with_len {
        msg.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    }
    msg.extend_from_slice(bytes);
}

#[test]
fn every_code_point_has_llama_cpp_flags_lower_case_nfd_and_han() {
    let mut shim = Shim::start();
    let mut diffs = Vec::new();
    let ranges = [(0u32, 0x11_0000u32), (0x11_0000, 64), (0x1F_FFC0, 64)];
    for (first, count) in ranges {
        let mut msg = vec![b'T'];
        msg.extend_from_slice(&first.to_le_bytes());
        msg.extend_from_slice(&count.to_le_bytes());
        shim.send(&msg);
        for cp in first..first + count {
            let bits = u16::from(shim.u8()) | u16::from(shim.u8()) << 8;
            let lower = shim.u32();
            let nfd = shim.u32();
            let han = shim.u8() != 0;
            let ours = (
                unicode::flags(cp).bits(),
                unicode::to_lower(cp),
                unicode::nfd(&[cp])[0],
                unicode::is_han(cp),
            );
            if ours != (bits, lower, nfd, han) && diffs.len() < 20 {
                diffs.push(format!(
                    "U+{cp:04X}: ours {ours:x?}, llama.cpp {:x?}",
                    (bits, lower, nfd, han)
                ));
            }
            assert_eq!(unicode::flag_bits(cp), unicode::flags(cp).bits());
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn byte_level_mapping_and_lengths_match_llama_cpp() {
    let mut shim = Shim::start();
    shim.send(b"B");
    for b in 0..=255u8 {
        let theirs = shim.bytes();
        assert_eq!(
            unicode::byte_to_utf8(b).as_bytes(),
            &theirs[..],
            "byte {b:#x}"
        );
        assert_eq!(unicode::utf8_to_byte(unicode::byte_to_utf8(b)), Some(b));
    }
    for b in 0..=255u8 {
        assert_eq!(unicode::len_utf8(b), usize::from(shim.u8()), "byte {b:#x}");
    }
}

/// Pieces of text the corpus is built from: prose, code, numbers and the scripts and
/// characters the pre-tokenizers treat specially.
const PIECES: &[&str] = &[
    "Hello",
    "world",
    "The",
    "quick brown fox",
    "jumps",
    "over the lazy dog.",
    "don't",
    "I'M",
    "we'LL",
    "they're",
    "You've",
    "she'd",
    "it's",
    "IT'S",
    "'s",
    "'S",
    "'t",
    "'T",
    "'re",
    "'rE",
    "'ve",
    "'Ve",
    "'m",
    "'M",
    "'ll",
    "'lL",
    "'d",
    "'D",
    "'x",
    "'",
    "''",
    "' s",
    "ʼs",
    "3.14159",
    "1234567890",
    "12",
    "123",
    "1234",
    "12345",
    "123456",
    "1,000,000",
    "0x1F",
    "v2.0.1",
    "٣٤٥",
    "१२३४",
    "½",
    "Ⅻ",
    "²³",
    "中文字符",
    "你好世界",
    "日本語のテキスト",
    "カタカナ",
    "ひらがな",
    "한국어 텍스트",
    "ㄱㄴㄷ",
    "ㄅㄆㄇ",
    "كلمة عربية",
    "مرحبا",
    "۔",
    "،",
    "हिन्दी भाषा",
    "।",
    "বাংলা",
    "தமிழ்",
    "తెలుగు",
    "ไทย สวัสดี",
    "ສະບາຍດີ",
    "ក្រុង",
    "မြန်မာ",
    "ქართული",
    "Ελληνικά",
    "ΑΒΓ αβγ",
    "Привет мир",
    "ÀÉÎÕÜ",
    "àéîõü",
    "e\u{301}",
    "a\u{300}\u{301}\u{302}",
    "\u{301}",
    "ǅǈǋ",
    "ß",
    "İstanbul",
    "ﬁ",
    "Ａｂｃ",
    "ｶﾀｶﾅ",
    "𝔘𝔫𝔦",
    "ℌℭ",
    "😀😃🤖",
    "👨\u{200D}👩\u{200D}👧",
    "🇫🇷",
    "✓",
    "€100",
    "$5",
    "£",
    "©®™",
    "fn main() { println!(\"hi\"); }",
    "x += 1;",
    "if (a<b && c>d) return;",
    "def f(x):\n    return x**2\n",
    "<div class=\"a\">",
    "</div>",
    "$%^&*",
    "@#!",
    "~`|",
    "[]{}()",
    "\\n",
    "\\",
    "/",
    "//",
    "a/b/c",
    "__init__",
    "CamelCase",
    "ALLCAPS",
    "mIxEd",
    "iPhone",
    "McDonald's",
    "<sentinel:12>",
    "<sentinel:>",
    "IMGIMGABZ",
    "IMGIMGAAAAAZ",
    "...",
    "…",
    "。",
    "，",
    "、",
    "！",
    "？",
    "：",
    "“quoted”",
    "‘single’",
    "—",
    "¿",
    "¡",
    " ",
    "  ",
    "   ",
    "    ",
    "        ",
    "\t",
    "\t\t",
    " \t ",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "\n ",
    " \r\n ",
    "\u{A0}",
    "\u{3000}",
    "\u{2028}",
    "\u{2029}",
    "\u{85}",
    "\u{1680}",
    "\u{2000}\u{200A}",
    "\u{202F}",
    "\u{205F}",
    "\u{200B}",
    "\u{FEFF}",
    "\u{1C}\u{1D}\u{1E}\u{1F}",
    "\u{0}",
    "\u{7F}",
    "\u{B}\u{C}",
    "\u{E000}",
    "\u{FFFD}",
    "\u{10FFFF}",
    "▁word",
    "Ġ",
    "<|im_start|>",
    "<s>",
    "</s>",
    "[CLS]",
    "µ",
];

fn push_cp(out: &mut Vec<u8>, cp: u32) {
    unicode::cpt_to_utf8(cp, out);
}

/// One generated text.
fn text(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    match rng.below(10) {
        // Pieces with joiners.
        0..=5 => {
            for _ in 0..1 + rng.below(24) {
                out.extend_from_slice(rng.pick(PIECES).as_bytes());
                let joiner = *rng.pick(&["", " ", " ", " ", "  ", "\n", "\t", "'", "1"]);
                out.extend_from_slice(joiner.as_bytes());
            }
        }
        // Random code points from all over the code space (surrogates and unassigned ones too).
        6 | 7 => {
            for _ in 0..1 + rng.below(40) {
                let cp = match rng.below(8) {
                    0 => rng.below(0x80) as u32,
                    1 => 0x80 + rng.below(0x780) as u32,
                    2 => 0x800 + rng.below(0xF800) as u32,
                    3 => 0x1_0000 + rng.below(0x10_0000) as u32,
                    4 => *rng.pick(&[0x20, 0x0A, 0x0D, 0x09, 0x27, 0x73, 0x53, 0x30, 0x3000, 0xA0]),
                    5 => 0x4E00 + rng.below(0x5200) as u32,
                    6 => 0x300 + rng.below(0x70) as u32,
                    _ => 0x2000 + rng.below(0x70) as u32,
                };
                push_cp(&mut out, cp);
            }
        }
        // Random bytes (invalid UTF-8, NUL).
        8 => {
            for _ in 0..1 + rng.below(40) {
                let b = match rng.below(4) {
                    0 => *rng.pick(&[
                        0x80, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF8, 0xFF,
                    ]),
                    1 => *rng.pick(&[b' ', b'a', b'1', b'\'', b'\n', 0]),
                    _ => rng.next() as u8,
                };
                out.push(b);
            }
        }
        // Runs of one character.
        _ => {
            let piece = rng.pick(&[
                " ", "a", "A", "1", "\n", "\r\n", " \n", "中", "'s", "!", "\t", "é",
            ]);
            for _ in 0..1 + rng.below(300) {
                out.extend_from_slice(piece.as_bytes());
            }
            if rng.below(2) == 0 {
                out.extend_from_slice(rng.pick(PIECES).as_bytes());
            }
        }
    }
    out
}

/// The generated texts: 600 from a fixed seed, or `$GGUF_SPLIT_TEXTS` from `$GGUF_SPLIT_SEED`
/// (for a longer search by hand), then fixed ones.
fn corpus() -> Vec<Vec<u8>> {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let mut rng = Rng(env("GGUF_SPLIT_SEED").unwrap_or(0x9E37_79B9_7F4A_7C15) | 1);
    let count = env("GGUF_SPLIT_TEXTS").unwrap_or(600);
    let mut texts: Vec<Vec<u8>> = (0..count).map(|_| text(&mut rng)).collect();
    // Every piece alone, then fixed hostile inputs.
    texts.extend(PIECES.iter().map(|p| p.as_bytes().to_vec()));
    texts.push(Vec::new());
    texts.push(b" ".repeat(3000));
    texts.push([b" ".repeat(1000), b"x".to_vec()].concat());
    texts.push(b"9".repeat(1001));
    texts.push("e\u{301}".repeat(500).into_bytes());
    texts.push(b"\xF4\x90\x80\x80 and \xF7\xBF\xBF\xBF".to_vec());
    texts
}

/// The distinct (expressions, byte encoding) pairs of all pre-tokenizers, with their names.
fn pre_tokenizer_groups() -> Vec<(Vec<PreType>, &'static [&'static str], bool)> {
    let mut groups: Vec<(Vec<PreType>, &'static [&'static str], bool)> = Vec::new();
    for pre in PreType::ALL {
        let key = (pre.regexes(), pre.byte_encode());
        match groups.iter_mut().find(|g| (g.1, g.2) == key) {
            Some(g) => g.0.push(pre),
            None => groups.push((vec![pre], key.0, key.1)),
        }
    }
    groups
}

/// True when llama.cpp throws for this input: a code point above 0x10FFFF (it cannot
/// re-encode it), or empty text for the expressions only a hand-written splitter handles.
fn llama_cpp_throws(regexes: &[&str], text: &[u8]) -> bool {
    let too_big = unicode::cpts_from_utf8(text)
        .iter()
        .any(|&cp| cp > 0x10_FFFF);
    let custom_only = regexes
        .iter()
        .any(|r| *r == r"\p{Han}+" || *r == r"\p{AFMoE_digits}");
    too_big || (text.is_empty() && custom_only)
}

fn show(words: &[Vec<u8>]) -> String {
    format!(
        "{:?}",
        words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect::<Vec<_>>()
    )
}

#[test]
fn every_pre_tokenizer_splits_as_llama_cpp() {
    let texts = corpus();
    let mut shim = Shim::start();
    let mut diffs = Vec::new();
    let mut compared = 0;
    for (pres, regexes, byte_encode) in pre_tokenizer_groups() {
        let splitter = Splitter::new(regexes).unwrap_or_else(|e| panic!("{pres:?}: {e}"));
        // Each group with its own byte encoding; GPT-2's also without.
        let encodings: &[bool] = if pres.contains(&PreType::Gpt2) {
            &[true, false]
        } else {
            &[byte_encode]
        };
        for &enc in encodings {
            for text in &texts {
                let ours = splitter.split(text, enc);
                match shim.split(regexes, enc, text) {
                    Some(theirs) => {
                        compared += 1;
                        if ours != theirs && diffs.len() < 12 {
                            diffs.push(format!(
                                "{pres:?} on {:?}:\n  ours      {}\n  llama.cpp {}",
                                String::from_utf8_lossy(text),
                                show(&ours),
                                show(&theirs)
                            ));
                        }
                    }
                    None => assert!(
                        llama_cpp_throws(regexes, text),
                        "llama.cpp throws for {pres:?} on {:?}",
                        String::from_utf8_lossy(text)
                    ),
                }
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert!(compared > texts.len() * 30, "only {compared} comparisons");
}

#[test]
fn decoding_matches_llama_cpp_on_valid_and_invalid_utf8() {
    let mut shim = Shim::start();
    let mut rng = Rng(7);
    let mut texts = corpus();
    for _ in 0..300 {
        let n = rng.below(64);
        texts.push((0..n).map(|_| rng.next() as u8).collect());
    }
    for lead in [0xC2u8, 0xE2, 0xF0, 0xF4, 0xF5, 0xF7] {
        for len in 1..5 {
            let mut t = vec![lead];
            t.extend(std::iter::repeat_n(0x80u8, len - 1));
            texts.push(t.clone());
            t.push(b'a');
            texts.push(t);
        }
    }
    for text in &texts {
        assert_eq!(
            unicode::cpts_from_utf8(text),
            shim.decode(text),
            "{:x?}",
            text
        );
    }
}

/// The string literal at the start of `s` (C escapes undone), and the rest.
fn c_literal(s: &str) -> Option<(String, &str)> {
    let s = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => {
                let (_, e) = chars.next()?;
                out.push(match e {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    other => other,
                });
            }
            c => out.push(c),
        }
    }
    None
}

#[test]
fn names_and_expressions_are_llama_cpp_s() {
    let src = common::llama_src_dir().join("src");
    let header = std::fs::read_to_string(src.join("llama-vocab.h")).unwrap();
    let vocab = std::fs::read_to_string(src.join("llama-vocab.cpp")).unwrap();
    // The enum: name -> number.
    let mut numbers = std::collections::HashMap::new();
    for line in header.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("LLAMA_VOCAB_PRE_TYPE_") {
            let (name, value) = rest.split_once('=').unwrap();
            let value: u8 = value.trim().trim_end_matches(',').parse().unwrap();
            numbers.insert(name.trim().to_string(), value);
        }
    }
    assert_eq!(numbers.len(), PreType::ALL.len());
    for (i, pre) in PreType::ALL.iter().enumerate() {
        assert_eq!(*pre as usize, i);
    }
    let type_named = |name: &str| PreType::ALL[usize::from(numbers[name])];

    // The loader: each `tokenizer_pre == "x"` group selects the type assigned after it.
    let start = vocab.find("if (tokenizer_pre.empty())").unwrap();
    let end = start + vocab[start..].find("unknown pre-tokenizer type").unwrap();
    let mut pending = Vec::new();
    let mut names = 0;
    let mut rest = &vocab[start..end];
    loop {
        let a = rest.find("tokenizer_pre == \"");
        let b = rest.find("pre_type = LLAMA_VOCAB_PRE_TYPE_");
        match (a, b) {
            (Some(a), b) if b.is_none_or(|b| a < b) => {
                let (name, after) = c_literal(&rest[a + "tokenizer_pre == ".len()..]).unwrap();
                pending.push(name);
                rest = after;
            }
            (_, Some(b)) => {
                let after = &rest[b + "pre_type = LLAMA_VOCAB_PRE_TYPE_".len()..];
                let ty = &after[..after.find(';').unwrap()];
                for name in pending.drain(..) {
                    assert_eq!(PreType::from_name(&name), Some(type_named(ty)), "{name}");
                    names += 1;
                }
                rest = after;
            }
            _ => break,
        }
    }
    assert!(names >= 90, "only {names} names");
    assert_eq!(PreType::from_name(""), Some(PreType::Default));
    assert_eq!(PreType::from_name("no-such-pre-tokenizer"), None);
    assert_eq!(PreType::from_name("Llama3"), None);

    // The expressions of `llm_tokenizer_bpe`'s constructor, case by case.
    let start = vocab
        .find("llm_tokenizer_bpe(const llama_vocab & vocab) {")
        .unwrap();
    let end = start
        + vocab[start..]
            .find("std::vector<std::string> regex_exprs;")
            .unwrap();
    let mut cases: Vec<String> = Vec::new();
    let mut exprs: Vec<String> = Vec::new();
    let mut no_byte_encode = false;
    let mut seen = Vec::new();
    for line in vocab[start..end].lines().map(str::trim) {
        if let Some(case) = line.strip_prefix("case LLAMA_VOCAB_PRE_TYPE_") {
            cases.push(case.trim_end_matches(':').to_string());
        } else if line.starts_with("default:") {
            cases.push("DEFAULT".into());
        } else if line.starts_with('"') {
            exprs.push(c_literal(line).unwrap().0);
        } else if line.starts_with("byte_encode = false") {
            no_byte_encode = true;
        } else if line.starts_with("break;") || line == "}" && !cases.is_empty() {
            for case in cases.drain(..) {
                let pre = type_named(&case);
                assert_eq!(pre.regexes(), exprs, "{case}");
                assert_eq!(pre.byte_encode(), !no_byte_encode, "{case}");
                seen.push(pre);
            }
            exprs.clear();
            no_byte_encode = false;
        }
    }
    // The types without a case of their own take the default's.
    for pre in PreType::ALL {
        if !seen.contains(&pre) {
            assert_eq!(pre.regexes(), PreType::Default.regexes(), "{pre:?}");
        }
    }
    assert!(seen.len() > 50);
}

/// The expressions llama.cpp runs over code points (`std::wregex`: those naming no category)
/// see every code point of the Basic Multilingual Plane as llama.cpp does: each between a space
/// and a letter, so `\s`, `\S`, `\d`, `\w` and the literal ranges meet them all.
#[test]
fn code_point_expressions_see_every_bmp_code_point_as_llama_cpp() {
    let mut shim = Shim::start();
    let mut checked = 0;
    for (pres, regexes, byte_encode) in pre_tokenizer_groups() {
        if regexes.iter().all(|r| r.contains(r"\p{")) {
            continue;
        }
        let splitter = Splitter::new(regexes).unwrap();
        for block in (0x80u32..0x1_0000).step_by(0x2000) {
            let mut text = Vec::new();
            for cp in block..block + 0x2000 {
                text.push(b' ');
                unicode::cpt_to_utf8(cp, &mut text);
                text.push(b'a');
            }
            let theirs = shim
                .split(regexes, byte_encode, &text)
                .expect("llama.cpp splits");
            let ours = splitter.split(&text, byte_encode);
            if let Some(i) =
                (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i))
            {
                panic!(
                    "{pres:?}, code points from U+{block:04X}: word {i}: ours {:?}, llama.cpp {:?}",
                    ours.get(i).map(|w| String::from_utf8_lossy(w)),
                    theirs.get(i).map(|w| String::from_utf8_lossy(w))
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 80, "{checked}");
}

/// The expression matcher stays linear on long runs of one character (where a backtracking
/// matcher, such as `std::regex`, goes quadratic or overflows its stack): four times the input
/// takes about four times the steps, for every pre-tokenizer, never sixteen. (The hand-written
/// splitters are llama.cpp's, linear by construction.)
#[test]
fn long_runs_split_in_linear_time() {
    let runs: [&str; 10] = [
        " ", "a", "A", "7", "\n", " \r\n", "e\u{301}", "'", "!", "中",
    ];
    for (pres, regexes, _) in pre_tokenizer_groups() {
        let splitter = Splitter::new(regexes).unwrap();
        for run in runs {
            for tail in ["", "x", " ", "1"] {
                let steps = |units: usize| {
                    let text = run.repeat(units / run.chars().count()) + tail;
                    splitter.matcher_steps(&unicode::cpts_from_utf8(text.as_bytes()))
                };
                let (small, large) = (steps(1_000), steps(4_000));
                assert!(
                    large <= 5 * small + 100,
                    "{pres:?} on {run:?}+{tail:?}: {small} steps for 1000, {large} for 4000"
                );
            }
        }
    }
}
