//! `tools/gguf-inspect.c`, the inspector `make` builds, driven from `cargo test`.
//!
//! It is compiled as the Makefile compiles it (`cc -std=c99 -Wall -Wextra -Werror -Iinclude`,
//! the bundled sample's absolute path as `GGUF_INSPECT_DEFAULT_SAMPLE`) against this test's
//! profile's `libgguf.so` (built first, as in `tests/c_api.rs`), then run on the sample, on
//! files it cannot open, and with bad arguments. What it prints about the sample is checked
//! against what the Rust reader ([`gguf::MappedFile`]) finds in the same file.

mod common;

use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, show};
use gguf::{ByteOrder, MappedFile, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const CFLAGS: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror"];

/// The inspector's `ARRAY_PREVIEW`: how many items of an array it shows.
const ARRAY_PREVIEW: usize = 6;

fn sample() -> PathBuf {
    manifest_dir().join("testdata/sample.gguf")
}

/// The inspector, compiled once per test process.
fn inspector() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let root = manifest_dir();
        let lib = lib_dir();
        let sample = sample().display().to_string();
        assert!(
            !sample.contains(['"', '\\']),
            "the sample's path {sample} cannot be written as a C string literal"
        );
        let exe = bin_dir("inspect").join("gguf-inspect");
        let mut cmd = Command::new(cc());
        cmd.args(CFLAGS)
            .arg(format!("-I{}", root.join("include").display()))
            .arg(format!("-DGGUF_INSPECT_DEFAULT_SAMPLE=\"{sample}\""))
            .arg(root.join("tools/gguf-inspect.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lgguf")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
        link_aside(&mut cmd, &exe);
        exe
    })
}

fn inspect(args: &[&std::ffi::OsStr]) -> Output {
    let exe = inspector();
    Command::new(exe)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// A scratch file of this process holding `bytes`.
fn scratch_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspect");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn with_no_argument_it_dumps_the_bundled_sample() {
    let output = inspect(&[]);
    assert!(output.status.success(), "{}", show(&output));
    assert!(output.stderr.is_empty(), "{}", show(&output));
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8 output");
    let lines: Vec<&str> = stdout.lines().collect();
    let has = |line: &str| {
        assert!(
            lines.contains(&line),
            "no line\n{line}\nin the output\n{}",
            show(&output)
        );
    };
    let contains = |text: &str| {
        assert!(
            stdout.contains(text),
            "no {text:?} in the output\n{}",
            show(&output)
        );
    };

    let f = MappedFile::open(sample()).expect("testdata/sample.gguf");
    assert_eq!(f.version(), 3);
    assert_eq!(f.byte_order(), ByteOrder::Little);
    assert_eq!(f.metadata_count(), 18);
    assert_eq!(f.tensor_count(), 21);

    // The header, the counts, and nothing but one line per entry and per tensor.
    has(&format!("* File: {}", sample().display()));
    has(&format!(
        "* GGUF version 3, little-endian, {} bytes, alignment {}, data section at offset {}",
        f.file_size(),
        f.alignment(),
        f.data_offset()
    ));
    has("* Dumping 18 key/value pair(s)");
    has("* Dumping 21 tensor(s)");
    assert_eq!(
        lines.len(),
        2 + 1 + f.metadata_count() + 2 + f.tensor_count(),
        "{}",
        show(&output)
    );

    // Every metadata entry: its index, type, count and key, in file order.
    for (i, entry) in f.metadata().enumerate() {
        let key = String::from_utf8(entry.key.to_vec()).unwrap();
        let (type_name, count) = match entry.value {
            Value::Array(a) => (format!("[{}]", a.elem_type().name()), a.len()),
            ref v => (v.value_type().name().to_string(), 1),
        };
        let prefix = format!("{:7}: {type_name:<10} | {count:8} | {key} = ", i + 1);
        assert!(
            lines[3 + i].starts_with(&prefix),
            "line {} is not entry {i} ({prefix:?})\n{}",
            3 + i + 1,
            show(&output)
        );
    }
    has(&format!(
        "{:7}: STRING     |        1 | general.architecture = 'llama'",
        f.metadata_index("general.architecture").unwrap() + 1
    ));

    // The token array, summarized: its length and first items.
    contains("[STRING]   |      279 | tokenizer.ggml.tokens = ['<unk>', '<s>', '</s>'");
    let tokens = f.get("tokenizer.ggml.tokens").unwrap().as_array().unwrap();
    let shown: Vec<String> = tokens
        .strings()
        .unwrap()
        .take(ARRAY_PREVIEW)
        .map(|s| format!("'{}'", String::from_utf8(s.to_vec()).unwrap()))
        .collect();
    assert!(tokens.len() as usize > ARRAY_PREVIEW);
    has(&format!(
        "{:7}: [STRING]   | {:8} | tokenizer.ggml.tokens = [{}, ...]",
        f.metadata_index("tokenizer.ggml.tokens").unwrap() + 1,
        tokens.len(),
        shown.join(", ")
    ));

    // Every tensor row, in file order, after the table's heading.
    let table = 3 + f.metadata_count() + 1;
    assert!(
        lines[table]
            .trim_start()
            .starts_with("#      elements | shape"),
        "{}",
        show(&output)
    );
    for (i, t) in f.tensors().enumerate() {
        let shape = if t.n_dims == 0 {
            "scalar".to_string()
        } else {
            let dims: Vec<String> = t.dims[..t.n_dims as usize]
                .iter()
                .map(u64::to_string)
                .collect();
            dims.join(", ")
        };
        let row = format!(
            "{:7}: {:12} | {shape:<30} | {:<7} | {:12} | {:12} | {}",
            i + 1,
            t.n_elements,
            t.dtype.name(),
            t.file_offset,
            t.size,
            String::from_utf8(t.name.to_vec()).unwrap()
        );
        assert_eq!(lines[table + 1 + i], row, "tensor {i}\n{}", show(&output));
    }

    // One row in full, as the sample's generator wrote it.
    let embd = f.tensor("token_embd.weight").unwrap();
    assert_eq!(embd.file_offset, f.data_offset());
    has(&format!(
        "{:7}: {:12} | {:<30} | {:<7} | {:12} | {:12} | token_embd.weight",
        f.tensor_index("token_embd.weight").unwrap() + 1,
        256 * 279,
        "256, 279",
        "Q8_0",
        f.data_offset(),
        75888
    ));
}

#[test]
fn a_file_it_cannot_open_exits_1_with_the_library_error() {
    let not_gguf = scratch_file("not_gguf.txt", b"this is not a GGUF file\n");
    let missing = not_gguf.with_file_name(format!("{}-missing.gguf", std::process::id()));
    let _ = std::fs::remove_file(&missing);
    for path in [&not_gguf, &missing] {
        let output = inspect(&[path.as_os_str()]);
        assert_eq!(output.status.code(), Some(1), "{}", show(&output));
        assert!(output.stdout.is_empty(), "{}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("gguf: ") && stderr.contains(&*path.to_string_lossy()),
            "stderr does not start 'gguf: ' and name {}\n{}",
            path.display(),
            show(&output)
        );
        assert_eq!(stderr.lines().count(), 1, "{}", show(&output));
    }
    let _ = std::fs::remove_file(not_gguf);
}

#[test]
fn help_exits_0_and_bad_usage_exits_2() {
    for flag in ["--help", "-h"] {
        let output = inspect(&[flag.as_ref()]);
        assert_eq!(output.status.code(), Some(0), "{}", show(&output));
        assert!(output.stdout.is_empty(), "{}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("usage: ") && stderr.contains("[FILE.gguf]"),
            "{}",
            show(&output)
        );
        // The default it names is the sample this build was given.
        assert!(
            stderr.contains(&*sample().to_string_lossy()),
            "{}",
            show(&output)
        );
    }

    let sample = sample();
    let output = inspect(&[sample.as_os_str(), sample.as_os_str()]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(output.stdout.is_empty(), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("usage: "),
        "{}",
        show(&output)
    );
}
