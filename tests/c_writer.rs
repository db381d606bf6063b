//! Files written from C read identically by the reference Python reader and by ggml's parser.
//!
//! `c_tests/test_writer.c`, run with `GGUF_WRITER_OUT=DIR`, writes its interop corpus into DIR
//! through the C writer API (every value type, flat and nested arrays, several tensor types,
//! versions 2 and 3, alignments 32, 64 and 256, both byte orders, a streamed file, a file edited
//! with `gguf_writer_from_file`) and beside each file `NAME.expected.json`: what the C program
//! gave the writer, in the sidecar form of `tests/conformance/generate.py` (tensor data as hex).
//! The C tables are the one place the expected content lives.
//!
//! * The reference reader (PyPI `gguf`, `generate.py dump`; interpreter `$GGUF_PYTHON`, else
//!   `.venv/bin/python`: `make venv`) describes each file. Its view must equal the manifest
//!   (version, byte order, alignment, every key in order with its type and value, float bits,
//!   string bytes, array elements, nested arrays; every tensor's name, shape, type, size and the
//!   sha256 of its bytes) and libgguf's own view through `gguf::GgufFile` (the same, plus data
//!   offset, file size and every tensor's offsets).
//! * ggml's parser (`libggml-base.so`, `make ggml`; `GGUF_GGML_LIB_DIR` points elsewhere), linked
//!   with libgguf into `tests/ggml/crosscheck.c`: every file the manifest marks `"ggml": true`
//!   (little-endian, version 2 or 3, no nested arrays) is accepted by both, which agree on every
//!   header field, key, value, array element and tensor.

mod common;

use common::canon::{self, assert_same, read_json, sha256, strip, unhex};
use common::{bin_dir, cc, crosscheck_exe, lib_dir, link_aside, manifest_dir, run, run_reference};
use gguf::GgufFile;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The files test_writer.c writes; the last two are not for ggml (nested arrays, big-endian).
const CORPUS: &[&str] = &[
    "values.gguf",
    "aligned.gguf",
    "streamed.gguf",
    "edited.gguf",
    "nested.gguf",
    "big_endian.gguf",
];

// ---------------------------------------------------------------------------------------------
// The corpus, written by test_writer.c.

/// c_tests/test_writer.c built against libgguf.so (no sanitizers: c_api.rs runs those).
fn test_writer_exe() -> PathBuf {
    let root = manifest_dir();
    let lib = lib_dir();
    let exe = bin_dir("c_writer").join("test_writer");
    let mut cmd = Command::new(cc());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg(format!("-I{}", root.join("c_tests").display()))
        .arg(root.join("c_tests/test_writer.c"))
        .arg(format!("-L{}", lib.display()))
        .arg("-lgguf")
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    link_aside(&mut cmd, &exe);
    exe
}

/// Writes the corpus (once per test process, into `target/tmp/c_writer/corpus`, left there for
/// inspection) and returns its directory.
fn corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_writer/corpus");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        run(Command::new(test_writer_exe()).env("GGUF_WRITER_OUT", &dir));
        for name in CORPUS {
            for file in [name.to_string(), format!("{name}.expected.json")] {
                assert!(
                    dir.join(&file).is_file(),
                    "test_writer.c did not write {file}"
                );
            }
        }
        dir
    })
}

fn manifest(name: &str) -> Json {
    read_json(&corpus().join(format!("{name}.expected.json")))
}

// ---------------------------------------------------------------------------------------------
// The reference reader.

/// libgguf's view of the file (Rust API), in the sidecar's form.
fn describe_ours(path: &Path) -> Json {
    let f = GgufFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    canon::file(&f)
}

/// What the reference reader sees must be what test_writer.c wrote (its manifest) and what
/// libgguf sees.
#[test]
fn the_reference_reader_reads_what_c_wrote() {
    let dir = corpus();
    run_reference(
        std::iter::once("dump".into())
            .chain(CORPUS.iter().map(|name| dir.join(name).into_os_string())),
    );
    for name in CORPUS {
        let path = dir.join(name);
        let reference = strip(&read_json(&dir.join(format!("{name}.json"))));
        let expected = manifest(name);
        // The reference and libgguf agree on everything, offsets and sizes included.
        assert_same(
            &format!("{name}: reference vs libgguf"),
            &reference,
            &describe_ours(&path),
            ("reference", "libgguf"),
        );
        // And both hold what the C program wrote.
        for field in ["version", "byte_order", "alignment", "metadata"] {
            assert_same(
                &format!("{name}: reference vs test_writer.c, {field}"),
                &reference[field],
                &expected[field],
                ("reference", "test_writer.c"),
            );
        }
        let got = reference["tensors"].as_array().unwrap();
        let want = expected["tensors"].as_array().unwrap();
        assert_eq!(
            reference["kv_count"],
            json!(expected["metadata"].as_array().unwrap().len())
        );
        assert_eq!(got.len(), want.len(), "{name}: tensor count");
        assert_eq!(reference["tensor_count"], json!(want.len()));
        let alignment = reference["alignment"].as_u64().unwrap();
        let data_offset = reference["data_offset"].as_u64().unwrap();
        for (r, w) in got.iter().zip(want) {
            for field in ["name_hex", "n_dims", "shape", "type", "n_bytes"] {
                assert_eq!(
                    r[field], w[field],
                    "{name}: tensor {}: {field}",
                    w["name_hex"]
                );
            }
            let data = unhex(w["data_hex"].as_str().unwrap());
            assert_eq!(
                r["sha256"],
                json!(sha256(&data)),
                "{name}: tensor {} bytes",
                w["name_hex"]
            );
            let offset = r["offset"].as_u64().unwrap();
            assert_eq!(
                offset % alignment,
                0,
                "{name}: tensor {} offset",
                w["name_hex"]
            );
            assert_eq!(r["file_offset"], json!(data_offset + offset));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ggml's parser.

/// Every file for ggml is read by both parsers alike.
#[test]
fn ggml_reads_what_c_wrote() {
    let dir = corpus();
    let for_ggml: Vec<&str> = CORPUS
        .iter()
        .copied()
        .filter(|name| manifest(name)["ggml"] == json!(true))
        .collect();
    assert_eq!(
        for_ggml,
        [
            "values.gguf",
            "aligned.gguf",
            "streamed.gguf",
            "edited.gguf"
        ],
        "the files test_writer.c marks for ggml"
    );
    let output =
        run(Command::new(crosscheck_exe()).args(for_ggml.iter().map(|name| dir.join(name))));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), for_ggml.len(), "{text}");
    for (name, line) in for_ggml.iter().zip(lines) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            fields[1..],
            ["ours=ok", "ggml=ok", "same"],
            "{name}: {line}"
        );
    }
}
