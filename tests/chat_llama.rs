//! `GGUF_CHAT_LLAMA_CPP` against llama.cpp itself: every template of llama.cpp's
//! `models/templates/` over the conversations of tests/chat/conversations.jsonl, rendered by
//! libllama-common's `common_chat_templates_apply` (through tests/llama/chat_shim.cpp) and by
//! `ChatTemplate::render_llama_cpp`. The counts are printed; the probes' view of each template
//! (system role, content kinds, tool calls, object arguments) is compared with llama.cpp's own.

mod common;

use common::{ggml_dir, link_aside, manifest_dir};
use gguf::chat::ChatTemplate;
use std::path::{Path, PathBuf};
use std::process::Command;

fn llama_src() -> PathBuf {
    PathBuf::from(std::env::var("GGUF_LLAMA_SRC_DIR").unwrap_or_else(|_| {
        manifest_dir()
            .join("target/llama.cpp")
            .to_string_lossy()
            .into_owned()
    }))
}

fn shim() -> PathBuf {
    let ggml = ggml_dir();
    let src = ggml.join("llama.cpp-v0.5.0");
    assert!(
        ggml.join("libllama-common.so").is_file() && src.join("common/chat.h").is_file(),
        "libllama-common.so or llama.cpp's common/ headers are not in {}: run `make ggml` (tools/fetch-ggml.sh)",
        ggml.display()
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chat_llama");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("chat_shim");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut cmd = Command::new(cxx);
    cmd.args(["-std=c++17", "-O1", "-w"])
        .arg(format!("-I{}", src.join("include").display()))
        .arg(format!("-I{}", src.join("common").display()))
        .arg(format!("-I{}", src.join("ggml/include").display()))
        .arg(manifest_dir().join("tests/llama/chat_shim.cpp"))
        .arg(format!("-L{}", ggml.display()))
        .args([
            "-l:libllama-common.so",
            "-l:libllama.v0.5.0.so",
            "-l:libggml.v0.5.0.so",
            "-lggml-base",
        ])
        .arg(format!("-Wl,-rpath,{}", ggml.display()));
    link_aside(&mut cmd, &exe);
    exe
}

/// One length-prefixed record of the shim's output.
fn record<'a>(out: &'a [u8], pos: &mut usize) -> (&'a str, &'a [u8]) {
    let nl = out[*pos..].iter().position(|&b| b == b'\n').unwrap() + *pos;
    let head = std::str::from_utf8(&out[*pos..nl]).unwrap();
    let (tag, len) = head.split_once(' ').unwrap();
    let len: usize = len.parse().unwrap();
    let body = &out[nl + 1..nl + 1 + len];
    *pos = nl + 1 + len + 1;
    (tag, body)
}

#[test]
fn llama_cpp_flag_matches_common_chat_templates_apply() {
    let convs_path = manifest_dir().join("tests/chat/conversations.jsonl");
    let convs: Vec<(String, String)> = std::fs::read_to_string(&convs_path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, r) = l.split_once('\t').unwrap();
            (n.to_string(), r.to_string())
        })
        .collect();
    let mut templates: Vec<PathBuf> = std::fs::read_dir(llama_src().join("models/templates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    templates.sort();
    assert!(templates.len() >= 60, "llama.cpp's templates are missing");
    let out = Command::new(shim())
        .env("TZ", "UTC")
        .arg(&convs_path)
        .args(&templates)
        .output()
        .unwrap();
    assert!(out.status.success(), "the shim failed: {out:?}");
    let text = out.stdout;
    let (mut same, mut differ, mut both_refuse, mut caps_differ) = (0, Vec::new(), 0, Vec::new());
    let mut pos = 0;
    for t in &templates {
        let nl = text[pos..].iter().position(|&b| b == b'\n').unwrap() + pos;
        let head = std::str::from_utf8(&text[pos..nl]).unwrap().to_string();
        pos = nl + 1;
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(t).unwrap();
        let ours = ChatTemplate::new(&src);
        if let (Some(c), Ok(o)) = (head.strip_prefix("CAPS "), &ours) {
            let c = o.llama_cpp_caps();
            let mine = format!(
                "{} {} {} {} {}",
                c.supports_system_role as u8,
                c.supports_string_content as u8,
                c.supports_typed_content as u8,
                c.supports_tool_calls as u8,
                c.supports_object_arguments as u8
            );
            let theirs = head.strip_prefix("CAPS ").unwrap();
            if mine != theirs {
                caps_differ.push(format!("{name}: ours {mine}, llama.cpp {theirs}"));
            }
            let _ = c;
        }
        for (cname, req) in &convs {
            let (tag, body) = record(&text, &mut pos);
            let mine = ours.as_ref().map_err(|e| e.to_string()).and_then(|o| {
                o.render_llama_cpp(req.as_bytes(), "", "", false, false)
                    .map_err(|e| e.to_string())
            });
            match (tag, mine) {
                ("OK", Ok(m)) if m.as_bytes() == body => same += 1,
                ("ERR", Err(_)) => both_refuse += 1,
                (tag, m) => differ.push(format!(
                    "{name} / {cname}: {}",
                    show_difference(tag, body, &m)
                )),
            }
        }
    }
    eprintln!(
        "identical {same}, different {}, refused by both {both_refuse}; caps differ on {} templates",
        differ.len(),
        caps_differ.len()
    );
    for d in &caps_differ {
        eprintln!("caps {d}");
    }
    for d in &differ {
        eprintln!("{d}");
    }
}

/// Where llama.cpp's text and ours part, with some context.
fn show_difference(tag: &str, theirs: &[u8], ours: &Result<String, String>) -> String {
    let theirs = String::from_utf8_lossy(theirs);
    match ours {
        Ok(m) if tag == "OK" => {
            let at = theirs
                .char_indices()
                .zip(m.chars())
                .find(|((_, a), b)| a != b)
                .map_or(theirs.len().min(m.len()), |((i, _), _)| i);
            let from = theirs[..at]
                .char_indices()
                .rev()
                .nth(60)
                .map_or(0, |(i, _)| i);
            let cut = |s: &str| s[from..].chars().take(160).collect::<String>();
            format!(
                "at byte {at}\n  llama.cpp {:?}\n  ours      {:?}",
                cut(&theirs),
                cut(m)
            )
        }
        Ok(m) => format!(
            "llama.cpp refuses ({theirs}), ours {:?}",
            m.chars().take(100).collect::<String>()
        ),
        Err(e) => format!(
            "ours refuses ({e}), llama.cpp {tag} {:?}",
            theirs.chars().take(100).collect::<String>()
        ),
    }
}
