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

/// Why llama.cpp's text differs where it does. Engine: llama.cpp's own Jinja engine renders
/// differently from jinja2 (transformers' engine, which the library follows), so the library
/// does not imitate it. Probe: what llama.cpp learns of a template from watching its engine.
const FLOATS: &str = "engine: llama.cpp prints the floats 1e-07 as 0.0 and 1e+21 as 1000000000000000000000.0 (jinja2 prints 1e-07 and 1e+21)";
const APPEND: &str = "engine: llama.cpp allows list.append, which jinja2's immutable sandbox (transformers') refuses";
const UNDEFINED_ADD: &str = "engine: llama.cpp adds an undefined value to a string, jinja2 raises (and the library's probes then see no system role or content, so the system message is not merged)";
const GENERATOR: &str =
    "engine: llama.cpp serializes a map() result with tojson, jinja2 refuses a generator";
const DICT_STR: &str =
    "engine: llama.cpp writes a dict as an empty string, jinja2 as Python's repr";
const PART_LOOP: &str = "probe: llama.cpp's second typed-content probe (caps_get) gives an empty list of parts and counts content as typed only where the template then loops over, subscripts or selectattr's it; these templates reach their loop over the parts only for a non-empty list (`message.get(\"content\")`, `content | length > 0`), so llama.cpp counts content as a string only and joins the parts with a newline first (repeating that needs the engine to track which values a template touches, as llama.cpp's does)";

const DOCUMENTED: &[(&str, &[&str], &str)] = &[
    (
        "Apriel-1.6-15b-Thinker-fixed",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        FLOATS,
    ),
    (
        "GigaChat3-10B-A1.8B",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        FLOATS,
    ),
    (
        "GigaChat3.1-10B-A1.8B",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        FLOATS,
    ),
    (
        "meetkai-functionary-medium-v3.2",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        FLOATS,
    ),
    (
        "unsloth-Apriel-1.5",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        FLOATS,
    ),
    (
        "Kimi-K2-Instruct",
        &["tools_call_object", "tools_call_string"],
        APPEND,
    ),
    (
        "Kimi-K2-Thinking",
        &["tools_call_object", "tools_call_string"],
        APPEND,
    ),
    (
        "fireworks-ai-llama-3-firefunction-v2",
        &[
            "single_user",
            "system_multiturn",
            "multiturn_no_prompt",
            "reasoning",
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
            "content_parts",
            "continue_final",
            "injection_text",
            "scripts_emoji",
            "numbers_and_vars",
            "documents",
            "developer_role",
        ],
        UNDEFINED_ADD,
    ),
    (
        "llama-cpp-deepseek-r1",
        &[
            "tools_call_object",
            "tools_call_string",
            "tools_defined_only",
        ],
        GENERATOR,
    ),
    ("openbmb-MiniCPM5-1B", &["tools_call_object"], DICT_STR),
    ("LFM2.5-8B-A1B", &["content_parts"], PART_LOOP),
    (
        "mistralai-Ministral-3-14B-Reasoning-2512",
        &["content_parts"],
        PART_LOOP,
    ),
];

/// Templates where the probes' view differs from llama.cpp's (system role, string content,
/// typed content, tool calls, object arguments), and why.
const CAPS_DOCUMENTED: &[(&str, &str)] = &[
    ("Kimi-K2-Instruct", APPEND),
    ("Kimi-K2-Thinking", APPEND),
    ("fireworks-ai-llama-3-firefunction-v2", UNDEFINED_ADD),
    ("llama-cpp-deepseek-r1", GENERATOR),
    ("LFM2.5-8B-A1B", PART_LOOP),
    ("mistralai-Ministral-3-14B-Reasoning-2512", PART_LOOP),
];

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
    // llama.cpp reads the clock for `datetime` and `date_string`; so must the library here.
    // SAFETY: the only test of this file, before it starts any thread or process.
    unsafe { std::env::remove_var("SOURCE_DATE_EPOCH") };
    // Four shims at once, each over a share of the templates, their outputs in order.
    let exe = shim();
    let share = templates.len().div_ceil(4);
    let children: Vec<_> = templates
        .chunks(share)
        .map(|part| {
            Command::new(&exe)
                .env("TZ", "UTC")
                .arg(&convs_path)
                .args(part)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut text = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "the shim failed: {out:?}");
        text.extend_from_slice(&out.stdout);
    }
    let (mut same, mut differ, mut both_refuse, mut caps_differ) = (0, Vec::new(), 0, Vec::new());
    let mut pos = 0;
    for t in &templates {
        let nl = text[pos..].iter().position(|&b| b == b'\n').unwrap() + pos;
        let head = std::str::from_utf8(&text[pos..nl]).unwrap().to_string();
        pos = nl + 1;
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        let stem = name.trim_end_matches(".jinja").to_string();
        let src = std::fs::read_to_string(t).unwrap();
        let ours = ChatTemplate::new(&src);
        if let (Some(theirs), Ok(o)) = (head.strip_prefix("CAPS "), &ours) {
            let c = o.llama_cpp_caps().unwrap();
            let mine = format!(
                "{} {} {} {} {}",
                c.supports_system_role as u8,
                c.supports_string_content as u8,
                c.supports_typed_content as u8,
                c.supports_tool_calls as u8,
                c.supports_object_arguments as u8
            );
            if mine != theirs {
                caps_differ.push((
                    stem.clone(),
                    format!("{name}: ours {mine}, llama.cpp {theirs}"),
                ));
            }
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
                (tag, m) => differ.push((
                    stem.clone(),
                    cname.clone(),
                    format!("{name} / {cname}: {}", show_difference(tag, body, &m)),
                )),
            }
        }
    }
    let documented = |t: &str, c: &str| {
        DOCUMENTED
            .iter()
            .any(|(dt, cs, _)| *dt == t && cs.contains(&c))
    };
    let mut listed = 0;
    let mut unexpected = Vec::new();
    for (t, c, text) in &differ {
        if documented(t, c) {
            listed += 1;
        } else {
            unexpected.push(text.clone());
        }
    }
    let mut now_agree = Vec::new();
    for (t, cs, why) in DOCUMENTED {
        for c in *cs {
            if !differ.iter().any(|(dt, dc, _)| dt == t && dc == c) {
                now_agree.push(format!("{t} / {c} ({why})"));
            }
        }
    }
    let caps_unexpected: Vec<_> = caps_differ
        .iter()
        .filter(|(t, _)| !CAPS_DOCUMENTED.iter().any(|(d, _)| d == t))
        .map(|(_, d)| d.clone())
        .collect();
    let caps_agree: Vec<_> = CAPS_DOCUMENTED
        .iter()
        .filter(|(d, _)| !caps_differ.iter().any(|(t, _)| t == d))
        .collect();
    eprintln!(
        "{} templates x {} conversations: identical {same}, documented differences {listed}, refused by both {both_refuse}",
        templates.len(),
        convs.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} renderings differ from llama.cpp's without a documented reason:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        now_agree.is_empty(),
        "documented differences that now agree (remove them from DOCUMENTED):\n{}",
        now_agree.join("\n")
    );
    assert!(
        caps_unexpected.is_empty() && caps_agree.is_empty(),
        "the probes' view differs from llama.cpp's: {caps_unexpected:?}; documented but agreeing: {caps_agree:?}"
    );
    assert!(same > 0 && same + listed + both_refuse == templates.len() * convs.len());
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
