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

use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, run};
use gguf::{ByteOrder, GgufFile, Value};
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// `j` without the human-only fields (keys starting with `_`) and the file name.
fn strip(j: &Json) -> Json {
    match j {
        Json::Object(m) => Json::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('_') && k.as_str() != "file")
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Json::Array(a) => Json::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

/// The first place where `a` and `b` differ, for a failure message.
fn first_diff(a: &Json, b: &Json, path: &str) -> Option<String> {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(u), Some(v)) => first_diff(u, v, &format!("{path}.{k}")),
                (u, v) => Some(format!("{path}.{k}: {u:?} vs {v:?}")),
            })
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_diff(u, v, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

fn assert_same(what: &str, a: &Json, b: &Json) {
    if let Some(diff) = first_diff(a, b, "") {
        panic!("{what}: first difference at {diff}");
    }
}

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

/// The Python interpreter with the pinned reference installed: `$GGUF_PYTHON`, else the venv.
fn python() -> PathBuf {
    let reqs = std::fs::read_to_string(manifest_dir().join("tests/conformance/requirements.txt"))
        .expect("read tests/conformance/requirements.txt");
    let pinned = reqs
        .lines()
        .find_map(|l| l.trim().strip_prefix("gguf=="))
        .expect("requirements.txt pins gguf==VERSION")
        .trim()
        .to_string();
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("GGUF_PYTHON").filter(|p| !p.is_empty()) {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(manifest_dir().join(".venv/bin/python"));
    let check = "import numpy, gguf, importlib.metadata as m; print(m.version('gguf'))";
    let mut tried = Vec::new();
    for py in candidates {
        match Command::new(&py).args(["-c", check]).output() {
            Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == pinned => {
                return py
            }
            Ok(o) => tried.push(format!(
                "{}: {}{}",
                py.display(),
                String::from_utf8_lossy(&o.stdout).trim(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => tried.push(format!("{}: {e}", py.display())),
        }
    }
    panic!(
        "these tests need the reference reader (PyPI gguf=={pinned}): run `make venv` or point \
         GGUF_PYTHON at an interpreter that has it. Tried:\n  {}",
        tried.join("\n  ")
    );
}

fn order_name(order: ByteOrder) -> &'static str {
    match order {
        ByteOrder::Little => "little",
        ByteOrder::Big => "big",
    }
}

/// A value in the sidecar's form.
fn canon_value(v: &Value<'_>) -> Json {
    let ty = v.value_type().name();
    match *v {
        Value::U8(x) => json!({"type": ty, "value": x}),
        Value::I8(x) => json!({"type": ty, "value": x}),
        Value::U16(x) => json!({"type": ty, "value": x}),
        Value::I16(x) => json!({"type": ty, "value": x}),
        Value::U32(x) => json!({"type": ty, "value": x}),
        Value::I32(x) => json!({"type": ty, "value": x}),
        Value::U64(x) => json!({"type": ty, "value": x}),
        Value::I64(x) => json!({"type": ty, "value": x}),
        Value::Bool(x) => json!({"type": ty, "value": x}),
        Value::F32(x) => json!({"type": ty, "bits": x.to_bits()}),
        Value::F64(x) => json!({"type": ty, "bits": x.to_bits()}),
        Value::String(s) => json!({"type": ty, "hex": hex(s)}),
        Value::Array(a) => json!({
            "type": ty,
            "elem": a.elem_type().name(),
            "len": a.len(),
            "items": a.iter().map(|x| canon_value(&x)).collect::<Vec<_>>(),
        }),
    }
}

/// libgguf's view of the file (Rust API), in the sidecar's form.
fn describe_ours(path: &Path) -> Json {
    let f = GgufFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let metadata: Vec<Json> = f
        .metadata()
        .map(|e| json!({"key_hex": hex(e.key), "value": canon_value(&e.value)}))
        .collect();
    let tensors: Vec<Json> = f
        .tensors()
        .map(|t| {
            json!({
                "name_hex": hex(t.name),
                "n_dims": t.n_dims,
                "shape": &t.dims[..t.n_dims as usize],
                "type": t.dtype.id(),
                "type_name": t.dtype.name(),
                "block": [t.dtype.block_elems(), t.dtype.block_bytes()],
                "n_elements": t.n_elements,
                "offset": t.offset,
                "file_offset": t.file_offset,
                "n_bytes": t.data.len(),
                "sha256": sha256(t.data),
            })
        })
        .collect();
    json!({
        "version": f.version(),
        "byte_order": order_name(f.byte_order()),
        "alignment": f.alignment(),
        "data_offset": f.data_offset(),
        "file_size": f.file_size(),
        "kv_count": f.metadata_count(),
        "tensor_count": f.tensor_count(),
        "metadata": metadata,
        "tensors": tensors,
    })
}

/// What the reference reader sees must be what test_writer.c wrote (its manifest) and what
/// libgguf sees.
#[test]
fn the_reference_reader_reads_what_c_wrote() {
    let py = python();
    let dir = corpus();
    let out = Command::new(&py)
        .arg(manifest_dir().join("tests/conformance/generate.py"))
        .arg("dump")
        .args(CORPUS.iter().map(|name| dir.join(name)))
        .output()
        .expect("run the reference reader");
    assert!(
        out.status.success(),
        "generate.py dump failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
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
        );
        // And both hold what the C program wrote.
        for field in ["version", "byte_order", "alignment", "metadata"] {
            assert_same(
                &format!("{name}: reference vs test_writer.c, {field}"),
                &reference[field],
                &expected[field],
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

fn ggml_dir() -> PathBuf {
    let dir = std::env::var_os("GGUF_GGML_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("target/ggml"));
    assert!(
        dir.join("libggml-base.so").is_file(),
        "ggml's libggml-base.so is not in {}: run `make ggml` (tools/fetch-ggml.sh)",
        dir.display()
    );
    dir
}

/// tests/ggml/crosscheck.c, built as tests/ggml_crosscheck.rs builds it.
fn crosscheck_exe() -> PathBuf {
    let root = manifest_dir();
    let (lib, ggml) = (lib_dir(), ggml_dir());
    let exe = bin_dir("c_writer").join("crosscheck");
    let mut cmd = Command::new(cc());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg(format!("-I{}", root.join("tests/ggml").display()))
        .arg(root.join("tests/ggml/crosscheck.c"))
        .arg(format!("-L{}", lib.display()))
        .arg("-lgguf")
        .arg(format!("-L{}", ggml.display()))
        .arg("-l:libggml-base.so")
        .arg(format!("-Wl,-rpath,{}:{}", lib.display(), ggml.display()));
    link_aside(&mut cmd, &exe);
    exe
}

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
