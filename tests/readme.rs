//! The README's C example ("Using it from C"), taken from README.md as it is: it compiles with
//! `-Wall -Wextra -Werror -pedantic` (C99) and prints the right things for a Llama model (the
//! bundled sample) and for a model of another architecture (a Gemma 3 file written here), whose
//! keys are named after it (`gemma3.block_count`). The Rust example is a doctest of the crate.

mod common;

use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, show};
use gguf::{DataType, MappedFile, MetadataValue as V, Value, ValueType, Writer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The first ```c block of the README's section "Using it from C".
fn c_example() -> String {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let section = readme
        .split_once("\n## Using it from C\n")
        .expect("README.md has a section \"Using it from C\"")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let code = section
        .split_once("```c\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("the section has a ```c block")
        .0;
    assert!(code.contains("int main("), "not a whole program:\n{code}");
    code.to_string()
}

/// The example, compiled once per test process against this profile's `libgguf.so`.
fn example_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = bin_dir("readme");
        let src = dir.join(format!("readme-example-{}.c", std::process::id()));
        std::fs::write(&src, c_example()).unwrap();
        let exe = dir.join("readme-example");
        let lib = lib_dir();
        let mut cmd = Command::new(cc());
        cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg(format!("-I{}", manifest_dir().join("include").display()))
            .arg(&src)
            .arg(format!("-L{}", lib.display()))
            .arg("-lgguf")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
        link_aside(&mut cmd, &exe);
        let _ = std::fs::remove_file(src);
        exe
    })
}

fn run_example(model: &Path) -> Output {
    Command::new(example_exe())
        .arg(model)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the README example: {e}"))
}

/// What the example must print for `model`, from the Rust reader.
fn expected_output(model: &Path) -> String {
    let f = MappedFile::open(model).unwrap();
    let mut out = String::new();
    if let Some(Value::String(arch)) = f.get("general.architecture") {
        let arch = String::from_utf8(arch.to_vec()).unwrap();
        out += &format!("architecture: {arch}\n");
        if let Some(Value::U32(n)) = f.get(format!("{arch}.block_count")) {
            out += &format!("layers: {n}\n");
        }
    }
    if let Some(tokens) = f.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()) {
        let first = tokens.strings().unwrap().next().unwrap();
        out += &format!(
            "vocab: {}, first token {}\n",
            tokens.len(),
            String::from_utf8(first.to_vec()).unwrap()
        );
    }
    if let Some(t) = f.tensor("token_embd.weight") {
        out += &format!(
            "token_embd.weight: {}, {} bytes at file offset {} (mapped)\n",
            t.dtype.name(),
            t.size,
            t.file_offset
        );
    }
    out
}

fn check(model: &Path, must_contain: &[&str]) {
    let out = run_example(model);
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(stdout, expected_output(model), "{}", model.display());
    for line in must_contain {
        assert!(
            stdout.lines().any(|l| l == *line),
            "the README example did not print {line:?} for {}:\n{}",
            model.display(),
            show(&out)
        );
    }
}

#[test]
fn the_c_example_runs_on_the_llama_sample() {
    let sample = manifest_dir().join("testdata/sample.gguf");
    let f = MappedFile::open(&sample).unwrap();
    let layers = f.get("llama.block_count").and_then(|v| v.as_u64()).unwrap();
    check(
        &sample,
        &["architecture: llama", &format!("layers: {layers}")],
    );
}

#[test]
fn the_c_example_runs_on_a_gemma3_model() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("readme-gemma3-{}.gguf", std::process::id()));
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("gemma3"))
        .unwrap();
    w.add_metadata("gemma3.block_count", V::U32(26)).unwrap();
    w.add_metadata("gemma3.context_length", V::U32(32768))
        .unwrap();
    let tokens = ["<pad>", "<eos>", "<bos>", "hello"];
    w.add_metadata(
        "tokenizer.ggml.tokens",
        V::Array(ValueType::String, tokens.iter().map(V::string).collect()),
    )
    .unwrap();
    w.add_tensor("token_embd.weight", &[8, 4], DataType::F32, vec![0; 128])
        .unwrap();
    w.write_file(&path).unwrap();
    check(
        &path,
        &[
            "architecture: gemma3",
            "layers: 26",
            "vocab: 4, first token <pad>",
        ],
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn the_c_example_reports_why_a_file_does_not_open() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-no-such-model.gguf");
    let out = run_example(&missing);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("readme-no-such-model.gguf"),
        "the error does not name the file: {stderr}"
    );
}
