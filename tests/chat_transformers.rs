//! Chat templates against transformers: every template of llama.cpp's `models/templates/` and
//! every template inside llama.cpp's vocabulary files (named variants included), rendered over
//! the conversations of `tests/chat/conversations.jsonl` by libgguf and, in the same run, by
//! transformers 5.24.0 with jinja2 3.1.6 (`tests/chat/reference.py`). Each result must be the
//! same text, or both must fail; where the template raised (`raise_exception`), with the
//! template's own message.

mod common;

use gguf::chat::ChatTemplate;
use gguf::{ErrorCode, GgufFile};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter with transformers and jinja2: the test venv's (`make venv`).
fn python() -> PathBuf {
    let py = common::reference_python().to_path_buf();
    let probe = Command::new(&py)
        .args([
            "-c",
            "import transformers, jinja2; print(transformers.__version__, jinja2.__version__)",
        ])
        .output()
        .expect("run the reference interpreter");
    let versions = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    assert_eq!(
        versions,
        "5.24.0 3.1.6",
        "the test venv needs transformers 5.24.0 and jinja2 3.1.6 (tests/conformance/requirements.txt): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    py
}

/// (name, template source): llama.cpp's template files, then the templates of its vocabulary
/// files.
fn templates() -> Vec<(String, String)> {
    let models = common::llama_src_dir().join("models");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(models.join("templates"))
        .expect("models/templates")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    files.sort();
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    let mut vocabs: Vec<PathBuf> = std::fs::read_dir(&models)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    vocabs.sort();
    for p in vocabs {
        let file = GgufFile::from_bytes(std::fs::read(&p).unwrap()).unwrap();
        for name in gguf::chat::template_names(&file) {
            let src = gguf::chat::file_template(&file, name.as_deref()).unwrap();
            let label = format!(
                "{}:{}",
                p.file_name().unwrap().to_string_lossy(),
                name.as_deref().unwrap_or("default")
            );
            out.push((label, src));
        }
    }
    out
}

fn conversations() -> Vec<(String, String)> {
    let path = common::manifest_dir().join("tests/chat/conversations.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, json) = l.split_once('\t').expect("NAME<TAB>JSON");
            (name.to_string(), json.to_string())
        })
        .collect()
}

/// transformers' results for each (template, request), from one reference process.
fn reference(cases: &[(&str, &str)], dir: &Path) -> Vec<serde_json::Value> {
    let input = dir.join("cases.json");
    let output = dir.join("results.json");
    let list: Vec<serde_json::Value> = cases
        .iter()
        .map(|(t, r)| serde_json::json!({"template": t, "request": r}))
        .collect();
    std::fs::write(&input, serde_json::to_string(&list).unwrap()).unwrap();
    let mut cmd = Command::new(python());
    cmd.arg(common::manifest_dir().join("tests/chat/reference.py"))
        .arg(&input)
        .arg(&output)
        .env("SOURCE_DATE_EPOCH", "1722000309")
        .env("TRANSFORMERS_VERBOSITY", "error");
    common::run(&mut cmd);
    let text = std::fs::read_to_string(&output).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or(a.len().min(b.len()));
    let from = a[..at].char_indices().rev().nth(40).map_or(0, |(i, _)| i);
    format!(
        "at byte {at}:\n    ours:         {:?}\n    transformers: {:?}",
        &a[from..(at + 60).min(a.len())].chars().collect::<String>(),
        b.get(from..(at + 60).min(b.len()))
            .unwrap_or(&b[from.min(b.len())..])
    )
}

/// The cases libgguf still renders otherwise than transformers, each with the reason. The test
/// fails when one of them comes to agree (take it off the list) or any other case differs.
/// `GGUF_CHAT_SHOW_KNOWN=1` prints where each of them differs.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[(
    "meetkai-functionary-medium-v3.1.jinja",
    "jinja2's Markup escapes a plain string added to it (`\"...\"|safe + t | tojson` writes \
     &#34; for each quote, even with autoescape off); minijinja escapes there only with \
     autoescape on, through the same formatter that prints `{{ }}` (which must not escape), so \
     no public hook can tell the two apart",
)];

fn known_difference(template: &str) -> Option<&'static str> {
    KNOWN_DIFFERENCES
        .iter()
        .find(|(t, _)| *t == template)
        .map(|(_, why)| *why)
}

#[test]
fn every_template_and_conversation_renders_as_transformers_renders_it() {
    // The dates strftime_now prints, pinned as the reference pins them.
    std::env::set_var("SOURCE_DATE_EPOCH", "1722000309");
    let templates = templates();
    assert!(templates.len() >= 70, "only {} templates", templates.len());
    let convs = conversations();
    let mut cases = Vec::new();
    for (tname, t) in &templates {
        for (cname, c) in &convs {
            cases.push((tname.as_str(), cname.as_str(), t.as_str(), c.as_str()));
        }
    }
    let dir = tempfile_dir();
    let pairs: Vec<(&str, &str)> = cases.iter().map(|c| (c.2, c.3)).collect();
    let want = reference(&pairs, &dir);
    assert_eq!(want.len(), cases.len());

    let mut compiled = std::collections::HashMap::new();
    let mut failures = Vec::new();
    let mut known = std::collections::BTreeMap::new();
    let (mut same_text, mut both_fail) = (0, 0);
    for ((tname, cname, t, c), want) in cases.iter().zip(&want) {
        let tmpl = compiled
            .entry(*tname)
            .or_insert_with(|| ChatTemplate::new(t));
        let ours = match tmpl {
            Ok(tmpl) => tmpl.render(c.as_bytes()),
            Err(e) => Err(e.clone()),
        };
        match (ours, want.get("text").and_then(|v| v.as_str())) {
            (Ok(text), Some(expected)) if text == expected => {
                if known_difference(tname).is_some() {
                    known.entry(*tname).or_insert(false);
                }
                same_text += 1
            }
            (Ok(text), Some(expected)) if known_difference(tname).is_some() => {
                if std::env::var_os("GGUF_CHAT_SHOW_KNOWN").is_some() {
                    eprintln!("{tname} / {cname}: {}", first_difference(&text, expected));
                }
                known.insert(*tname, true);
            }
            (Ok(text), Some(expected)) => failures.push(format!(
                "{tname} / {cname}: different text {}",
                first_difference(&text, expected)
            )),
            (Ok(_), None) => failures.push(format!(
                "{tname} / {cname}: transformers fails ({}), libgguf renders",
                want["error"]
            )),
            (Err(e), Some(_)) => failures.push(format!(
                "{tname} / {cname}: libgguf fails ({e}), transformers renders"
            )),
            (Err(e), None) => {
                let raised = want["raised"].as_bool().unwrap_or(false);
                let expected = want["error"].as_str().unwrap_or_default();
                let message = e.to_string();
                if raised && !(e.code() == ErrorCode::TemplateRender && message.ends_with(expected))
                {
                    failures.push(format!(
                        "{tname} / {cname}: the template raised {expected:?}; libgguf: {message}"
                    ));
                } else {
                    both_fail += 1;
                }
            }
        }
    }
    for (template, why) in KNOWN_DIFFERENCES {
        if known.get(template) != Some(&true) {
            failures.push(format!(
                "{template}: listed as differing ({why}) but renders as transformers does now"
            ));
        }
    }
    eprintln!(
        "{} cases: {same_text} identical, {both_fail} refused by both, {} known differences, {} other differences",
        cases.len(),
        known.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from transformers:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Most cases render: a renderer that refused everything would pass the loop above.
    assert!(same_text * 2 > cases.len(), "{same_text} identical");
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("libgguf-chat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
