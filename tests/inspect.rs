//! `tools/gguf-inspect.c`, the inspector `make` builds, driven from `cargo test`.
//!
//! It is compiled as the Makefile compiles it (`cc -std=c99 -Wall -Wextra -Werror -pthread
//! -Iinclude`, the bundled sample's absolute path as `GGUF_INSPECT_DEFAULT_SAMPLE`), plus ASan
//! and UBSan, against this test's profile's `libgguf.so` (built first, as in `tests/c_api.rs`),
//! then run on the sample, on files it cannot open, and with bad arguments. What it prints about the sample is checked
//! against what the Rust reader ([`gguf::MappedFile`]) finds in the same file.
//!
//! Its options: `--json` is parsed and compared with the reference reader (PyPI `gguf`, through
//! `tests/conformance/generate.py dump`; the interpreter is `$GGUF_PYTHON`, else
//! `<repo>/.venv/bin/python`, and the tests fail without it: run `make venv`) on the sample and
//! on files written with [`gguf::Writer`] (every value type, nested arrays, both byte orders,
//! several data types, a split model), and with the Rust reader on files the reference cannot
//! read (version 1, keys that are not UTF-8 or hold NUL); `--tensors`, `--metadata KEY` and
//! `--verify` (the sample passes; per-shard verdicts, exit status on truncated and corrupt files
//! and on NaN scales) are checked against the Rust reader. `--hash` is compared byte for byte
//! with the reference's `gguf_hash.py` (the sample, random files from the reference writer, every
//! shard of split models, names it skips), and `--check` with manifests from `--hash`,
//! `gguf_hash.py` and in `llama-gguf-hash`'s format (a flipped byte in any tensor is named). The
//! long modes draw a progress bar only on a terminal (a pseudo-terminal here).
//! For people: sizes in binary units beside byte counts, the parameter count, and
//! `general.file_type` by its llama.cpp name (every name of the reference's `LlamaFileType`).
//! Hardening: keys holding NUL, control bytes escaped in every text output, `--metadata` without
//! a key, `--version`, `--help` on stdout naming every option, bad usage in one line.

mod common;
#[path = "url/servers.rs"]
mod servers;

use common::canon::{self, hex, read_json, strip, unhex};
use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, run_reference, show};
use gguf::{ByteOrder, DataType, MappedFile, MetadataValue, Value, ValueType, Writer};
use serde_json::{json, Value as Json};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const CFLAGS: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror", "-pthread"];

/// Added to [`CFLAGS`]: every run of the inspector is checked by ASan and UBSan (files from
/// strangers, manifests, names with NUL bytes), leaks included.
const SANITIZE: &[&str] = &[
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
    "-O1",
];

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
            .args(SANITIZE)
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
    // Sizes also in binary units, and the model's parameters: every tensor's elements.
    has(&format!(
        "* GGUF version 3, little-endian, {} bytes (1011.59 KiB), alignment {}, data section at \
         offset {}",
        f.file_size(),
        f.alignment(),
        f.data_offset()
    ));
    let params: u64 = f.tensors().map(|t| t.n_elements).sum();
    let data: u64 = f.tensors().map(|t| t.size).sum();
    assert_eq!((params, data), (1_454_848, 1_027_696));
    has(&format!(
        "* {params} parameter(s) (1.45 M) in 21 tensor(s), {data} bytes of tensor data \
         (1003.61 KiB)"
    ));
    has("* Dumping 18 key/value pair(s)");
    has("* Dumping 21 tensor(s)");
    assert_eq!(
        lines.len(),
        3 + 1 + f.metadata_count() + 2 + f.tensor_count(),
        "{}",
        show(&output)
    );
    // general.file_type with its name.
    assert_eq!(f.get("general.file_type"), Some(Value::U32(7)));
    has(&format!(
        "{:7}: UINT32     |        1 | general.file_type = 7 (MOSTLY_Q8_0)",
        f.metadata_index("general.file_type").unwrap() + 1
    ));

    // Every metadata entry: its index, type, count and key, in file order.
    for (i, entry) in f.metadata().enumerate() {
        let key = String::from_utf8(entry.key.to_vec()).unwrap();
        let (type_name, count) = match entry.value {
            Value::Array(a) => (format!("[{}]", a.elem_type().name()), a.len()),
            ref v => (v.value_type().name().to_string(), 1),
        };
        let prefix = format!("{:7}: {type_name:<10} | {count:8} | {key} = ", i + 1);
        assert!(
            lines[4 + i].starts_with(&prefix),
            "line {} is not entry {i} ({prefix:?})\n{}",
            4 + i + 1,
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
    let table = 4 + f.metadata_count() + 1;
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

/// Bad usage: exit status 2, nothing on stdout, and one line on stderr that names the problem
/// (ending `(see PROGRAM --help)`), not the whole help. Returns that line.
fn bad_usage_line(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}", show(out));
    assert!(out.stdout.is_empty(), "{}", show(out));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    let exe = inspector().display().to_string();
    assert!(
        stderr.starts_with(&format!("{exe}: "))
            && stderr.ends_with(&format!(" (see {exe} --help)\n"))
            && stderr.lines().count() == 1,
        "not one line naming the problem and --help\n{}",
        show(out)
    );
    stderr
}

#[test]
fn help_goes_to_stdout_and_bad_usage_is_one_line() {
    for flag in ["--help", "-h"] {
        let output = inspect(&[flag.as_ref()]);
        assert_eq!(output.status.code(), Some(0), "{}", show(&output));
        // On stdout, so that `gguf-inspect --help | less` shows it.
        assert!(output.stderr.is_empty(), "{}", show(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.starts_with("usage: ") && stdout.contains("[FILE.gguf]"),
            "{}",
            show(&output)
        );
        // The default it names is the sample this build was given.
        assert!(
            stdout.contains(&*sample().to_string_lossy()),
            "{}",
            show(&output)
        );
    }

    // An unknown option: named, with the way to the help.
    let exe = inspector().display().to_string();
    let line = bad_usage_line(&inspect(&["--x".as_ref()]));
    assert_eq!(
        line,
        format!("{exe}: unknown option '--x' (see {exe} --help)\n")
    );
    // Escaped like every text output, quote included.
    let line = bad_usage_line(&inspect(&["--it's\x1b[2J".as_ref()]));
    assert_eq!(
        line,
        format!("{exe}: unknown option '--it\\'s\\x1b[2J' (see {exe} --help)\n")
    );

    let sample = sample();
    let line = bad_usage_line(&inspect(&[sample.as_os_str(), sample.as_os_str()]));
    assert_eq!(
        line,
        format!(
            "{exe}: a second FILE '{}' (see {exe} --help)\n",
            sample.display()
        )
    );
}

// ------------------------------------------------------------------------------------------------
// Sizes, parameters and file types, as a person reads them.
// ------------------------------------------------------------------------------------------------

/// A model of one I8 tensor of shape `dims` whose data is a hole (a sparse file): as large as a
/// real model, written at once. The header is written by hand, as the format lays it out.
fn sparse_model(path: &Path, dims: &[u64]) {
    use std::io::Write;
    let mut h = Vec::new();
    h.extend_from_slice(b"GGUF");
    h.extend_from_slice(&3u32.to_le_bytes());
    h.extend_from_slice(&1u64.to_le_bytes()); // tensors
    h.extend_from_slice(&0u64.to_le_bytes()); // metadata entries
    let name = b"big.weight";
    h.extend_from_slice(&(name.len() as u64).to_le_bytes());
    h.extend_from_slice(name);
    h.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        h.extend_from_slice(&d.to_le_bytes());
    }
    h.extend_from_slice(&DataType::I8.id().to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // offset in the data section
    h.resize(h.len().next_multiple_of(32), 0);
    let data = DataType::I8.tensor_bytes(dims).unwrap();
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(&h).unwrap();
    file.set_len(h.len() as u64 + data).unwrap();
}

/// The header line and the size line of the default output, then `--json`'s sums: byte counts of
/// 1 KiB and more also in binary units (two decimals), the parameters in K, M or B from 1000.
#[test]
fn sizes_are_readable_and_parameters_counted() {
    let dir = work_dir("sizes");
    let dump = |path: &Path| -> (String, String, Json) {
        let out = expect(&[path.as_os_str()], 0);
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let doc = json_of(path);
        (lines[1].to_string(), lines[2].to_string(), doc)
    };
    let header = |path: &Path, size: &str| {
        let f = MappedFile::open(path).unwrap();
        format!(
            "* GGUF version 3, little-endian, {} bytes{size}, alignment 32, data section at \
             offset {}",
            f.file_size(),
            f.data_offset()
        )
    };

    // 3 GiB of I8: 3.22 billion parameters.
    let big = dir.join("big.gguf");
    sparse_model(&big, &[65536, 49152]);
    let (head, totals, doc) = dump(&big);
    assert_eq!(head, header(&big, " (3.00 GiB)"));
    assert_eq!(
        totals,
        "* 3221225472 parameter(s) (3.22 B) in 1 tensor(s), 3221225472 bytes of tensor data \
         (3.00 GiB)"
    );
    assert_eq!(doc["parameter_count"], 3_221_225_472u64);
    assert_eq!(doc["tensor_data_size"], 3_221_225_472u64);
    assert_eq!(doc["file_type"], Json::Null);

    // Thousands, KiB; and below 1000 parameters and 1 KiB, the counts alone.
    for (n, params, bytes) in [(1536, " (1.54 K)", " (6.00 KiB)"), (100, "", "")] {
        let path = dir.join(format!("f32-{n}.gguf"));
        let mut w = Writer::new();
        w.add_tensor("w", &[n], DataType::F32, filler(1, 4 * n as usize))
            .unwrap();
        w.write_file(&path).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let (head, totals, doc) = dump(&path);
        let unit = if size < 1024 {
            String::new()
        } else {
            format!(" ({})", in_units(size))
        };
        assert_eq!(head, header(&path, &unit));
        assert_eq!(
            totals,
            format!(
                "* {n} parameter(s){params} in 1 tensor(s), {} bytes of tensor data{bytes}",
                4 * n
            )
        );
        assert_eq!(doc["parameter_count"], n);
        assert_eq!(doc["tensor_data_size"], 4 * n);
    }

    // The sample: MiB and M, its file type named in --json too; --verify gives its data's size.
    let doc = json_of(&sample());
    let f = MappedFile::open(sample()).unwrap();
    assert_eq!(
        doc["parameter_count"],
        f.tensors().map(|t| t.n_elements).sum::<u64>()
    );
    assert_eq!(
        doc["tensor_data_size"],
        f.tensors().map(|t| t.size).sum::<u64>()
    );
    assert_eq!(doc["file_type"], "MOSTLY_Q8_0");
    let out = expect(&[OsStr::new("--verify"), sample().as_os_str()], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        format!(
            "* Verifying {}: 1 shard(s), 21 tensor(s), 1027696 bytes of tensor data \
             (1003.61 KiB)",
            sample().display()
        )
    );
    // The binary units up the scale, as the inspector rounds them.
    assert_eq!(in_units(1023), "");
    assert_eq!(in_units(1024), "1.00 KiB");
    assert_eq!(in_units(5 << 20), "5.00 MiB");
    assert_eq!(in_units((1 << 40) + (1 << 39)), "1.50 TiB");
}

/// `general.file_type` is printed with its name: every name of the reference package's
/// `LlamaFileType` (llama.cpp's `llama_ftype`), and the withdrawn values `llama.h` keeps as
/// comments. A value without a name, a negative one, a string, or the same value under another
/// key are printed as they are.
#[test]
fn file_type_is_printed_with_its_name() {
    let out = common::run(Command::new(common::reference_python()).args([
        "-c",
        "from gguf.constants import LlamaFileType as T\nfor t in T: print(t.value, t.name)",
    ]));
    let mut names: Vec<(u32, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (v, name) = l.split_once(' ').unwrap();
            (v.parse().unwrap(), name.to_string())
        })
        .collect();
    assert!(names.len() > 30, "{names:?}");
    assert!(names.contains(&(15, "MOSTLY_Q4_K_M".to_string())));
    assert!(names.contains(&(1024, "GUESSED".to_string())));
    for (v, name) in [
        (4, "MOSTLY_Q4_1_SOME_F16"),
        (5, "MOSTLY_Q4_2"),
        (6, "MOSTLY_Q4_3"),
        (33, "MOSTLY_Q4_0_4_4"),
        (34, "MOSTLY_Q4_0_4_8"),
        (35, "MOSTLY_Q4_0_8_8"),
    ] {
        assert!(!names.iter().any(|(w, _)| *w == v), "{v} is named now");
        names.push((v, name.to_string()));
    }

    let dir = work_dir("file-type");
    // The line of `key` in the default output, from " = ", and --json's "file_type".
    let file_with = |key: &str, value: MetadataValue| -> PathBuf {
        let path = dir.join("model.gguf");
        let mut w = Writer::new();
        w.add_metadata("general.architecture", s("llama")).unwrap();
        w.add_metadata(key, value).unwrap();
        w.write_file(&path).unwrap();
        path
    };
    let text_of = |key: &str, value: MetadataValue| -> String {
        let path = file_with(key, value);
        let out = expect(&[path.as_os_str()], 0);
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(&format!("| {key} = ")))
            .unwrap_or_else(|| panic!("no {key}:\n{text}"));
        line[line.find(" = ").unwrap() + 3..].to_string()
    };
    let shown = |key: &str, value: MetadataValue| -> (String, Json) {
        let text = text_of(key, value.clone());
        (text, json_of(&file_with(key, value))["file_type"].clone())
    };
    for (v, name) in &names {
        let value = MetadataValue::U32(*v);
        if [4, 7, 15, 1024].contains(v) {
            assert_eq!(
                shown("general.file_type", value),
                (format!("{v} ({name})"), json!(name))
            );
        } else {
            assert_eq!(text_of("general.file_type", value), format!("{v} ({name})"));
        }
    }
    assert_eq!(
        shown("general.file_type", MetadataValue::I32(15)),
        ("15 (MOSTLY_Q4_K_M)".to_string(), json!("MOSTLY_Q4_K_M"))
    );
    assert_eq!(
        shown("general.file_type", MetadataValue::U64(7)),
        ("7 (MOSTLY_Q8_0)".to_string(), json!("MOSTLY_Q8_0"))
    );
    for (key, value, text) in [
        ("general.file_type", MetadataValue::U32(999), "999"),
        ("general.file_type", MetadataValue::I32(-1), "-1"),
        ("general.file_type", s("15"), "'15'"),
        ("general.file_typo", MetadataValue::U32(15), "15"),
    ] {
        assert_eq!(
            shown(key, value),
            (text.to_string(), Json::Null),
            "{key} = {text}"
        );
    }
}

// ------------------------------------------------------------------------------------------------
// The options: --json, --tensors, --metadata KEY, --verify.
// ------------------------------------------------------------------------------------------------

fn run_inspector<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let args: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
    inspect(&args)
}

/// Runs the inspector, asserting its exit status.
fn expect<S: AsRef<OsStr>>(args: &[S], code: i32) -> Output {
    let out = run_inspector(args);
    let shown: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
    assert_eq!(
        out.status.code(),
        Some(code),
        "gguf-inspect {shown:?}\n{}",
        show(&out)
    );
    out
}

/// A fresh directory of this process for one test's files.
fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("inspect")
        .join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Deterministic filler bytes. Bit 6 of every byte is clear, so that no float value or scale is
/// NaN or infinite (every exponent that is all ones needs it): `--verify` checks values.
fn filler(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 & 0xbf
        })
        .collect()
}

// --- the reference reader --------------------------------------------------------------------

/// What the reference reader sees in each file (`generate.py dump`), without the human-only
/// fields and the fields the inspector does not print (block geometry, data digests). The
/// reference writes its sidecar (`FILE.json`) beside each file: they must be scratch files.
fn reference(paths: &[&Path]) -> Vec<Json> {
    for p in paths {
        assert!(
            p.starts_with(env!("CARGO_TARGET_TMPDIR")),
            "{} is not a scratch file",
            p.display()
        );
    }
    run_reference(std::iter::once(OsStr::new("dump")).chain(paths.iter().map(|p| p.as_os_str())));
    paths
        .iter()
        .map(|p| {
            let sidecar = PathBuf::from(format!("{}.json", p.display()));
            without_block_and_digest(strip(&read_json(&sidecar)))
        })
        .collect()
}

/// A canonical view without the tensors' block geometry and data digests, which the inspector
/// does not print.
fn without_block_and_digest(mut j: Json) -> Json {
    for t in j["tensors"].as_array_mut().unwrap() {
        let t = t.as_object_mut().unwrap();
        t.remove("block");
        t.remove("sha256");
    }
    j
}

/// Panics with `what` and where `want` and `got` first differ unless they are equal.
#[track_caller]
fn assert_same(want: &Json, got: &Json, what: &str) {
    canon::assert_same(what, want, got, ("expected", "found"));
}

// --- the inspector's JSON in the reference's canonical form ----------------------------------

/// The inspector's JSON output, parsed. Numbers with a fraction or an exponent are kept as their
/// text (`{"$float": "1e-05"}`): serde_json's default float parsing may be one ULP off, and
/// floats are compared by their exact bits (`str::parse` is exact).
fn parse_json(stdout: &[u8]) -> Json {
    let text = std::str::from_utf8(stdout).expect("the JSON output is UTF-8");
    if let Err(e) = serde_json::from_str::<Json>(text) {
        panic!("the output is not JSON ({e}):\n{text}");
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i;
            i += 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str(&text[start..i]);
        } else if b[i] == b'-' || b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            let token = &text[start..i];
            if token.contains(['.', 'e', 'E']) {
                out.push_str(&format!("{{\"$float\": \"{token}\"}}"));
            } else {
                out.push_str(token);
            }
        } else {
            let start = i;
            while i < b.len() && b[i] != b'"' && b[i] != b'-' && !b[i].is_ascii_digit() {
                i += 1;
            }
            out.push_str(&text[start..i]);
        }
    }
    serde_json::from_str(&out).unwrap()
}

/// A string of the inspector's JSON: a JSON string, or `{"hex": ...}` exactly when the bytes are
/// not UTF-8.
fn bytes_of(j: &Json, what: &str) -> Vec<u8> {
    match j {
        Json::String(s) => s.clone().into_bytes(),
        Json::Object(m) if m.len() == 1 && m.contains_key("hex") => {
            let bytes = unhex(m["hex"].as_str().unwrap());
            assert!(
                std::str::from_utf8(&bytes).is_err(),
                "{what}: UTF-8 written as hex: {j}"
            );
            bytes
        }
        other => panic!("{what}: not a string: {other}"),
    }
}

fn float_bits(j: &Json, single: bool, what: &str) -> u64 {
    match j {
        Json::Object(m) if m.len() == 1 && m.contains_key("$float") => {
            let text = m["$float"].as_str().unwrap();
            if single {
                u64::from(text.parse::<f32>().unwrap().to_bits())
            } else {
                text.parse::<f64>().unwrap().to_bits()
            }
        }
        Json::String(s) if s == "inf" || s == "-inf" => match (single, s.starts_with('-')) {
            (true, false) => u64::from(f32::INFINITY.to_bits()),
            (true, true) => u64::from(f32::NEG_INFINITY.to_bits()),
            (false, false) => f64::INFINITY.to_bits(),
            (false, true) => f64::NEG_INFINITY.to_bits(),
        },
        Json::String(s) if s.starts_with("nan:0x") => {
            let digits = &s["nan:0x".len()..];
            assert_eq!(digits.len(), if single { 8 } else { 16 }, "{what}: {s}");
            let bits = u64::from_str_radix(digits, 16).unwrap();
            let nan = if single {
                f32::from_bits(bits as u32).is_nan()
            } else {
                f64::from_bits(bits).is_nan()
            };
            assert!(nan, "{what}: {s} is not a NaN");
            bits
        }
        other => panic!("{what}: not a float (floats have a '.' or an exponent): {other}"),
    }
}

/// A value of the inspector's JSON (`entry` holds `array_type` and `count` for arrays) in the
/// reference sidecar's canonical form.
fn canon_json_value(ty: &str, value: &Json, entry: &Json, what: &str) -> Json {
    match ty {
        "UINT8" | "INT8" | "UINT16" | "INT16" | "UINT32" | "INT32" | "UINT64" | "INT64" => {
            assert!(value.is_u64() || value.is_i64(), "{what}: {ty} {value}");
            json!({"type": ty, "value": value})
        }
        "BOOL" => {
            assert!(value.is_boolean(), "{what}: {ty} {value}");
            json!({"type": ty, "value": value})
        }
        "FLOAT32" => json!({"type": ty, "bits": float_bits(value, true, what)}),
        "FLOAT64" => json!({"type": ty, "bits": float_bits(value, false, what)}),
        "STRING" => json!({"type": ty, "hex": hex(&bytes_of(value, what))}),
        "ARRAY" => {
            let elem = entry["array_type"].as_str().expect("array_type");
            let items = value.as_array().expect("an array's value is a JSON array");
            assert_eq!(entry["count"].as_u64(), Some(items.len() as u64), "{what}");
            let items: Vec<Json> = items
                .iter()
                .map(|item| {
                    if elem == "ARRAY" {
                        assert_eq!(item["type"], "ARRAY", "{what}");
                        canon_json_value("ARRAY", &item["value"], item, what)
                    } else {
                        canon_json_value(elem, item, item, what)
                    }
                })
                .collect();
            json!({"type": "ARRAY", "elem": elem, "len": items.len(), "items": items})
        }
        other => panic!("{what}: unknown type {other}"),
    }
}

fn canon_json_entry(e: &Json) -> Json {
    let key = bytes_of(&e["key"], "key");
    let what = format!("key {}", String::from_utf8_lossy(&key));
    let ty = e["type"].as_str().expect("type");
    canon::entry(&key, canon_json_value(ty, &e["value"], e, &what))
}

fn canon_json_tensor(t: &Json) -> Json {
    let shape = t["shape"].as_array().unwrap();
    assert_eq!(t["n_dims"].as_u64(), Some(shape.len() as u64), "{t}");
    json!({
        "name_hex": hex(&bytes_of(&t["name"], "tensor name")),
        "n_dims": t["n_dims"],
        "shape": t["shape"],
        "type": t["type_id"],
        "type_name": t["type"],
        "n_elements": t["n_elements"],
        "offset": t["offset"],
        "file_offset": t["file_offset"],
        "n_bytes": t["size"],
    })
}

/// The inspector's `--json` document in the reference sidecar's form.
fn canon_json(doc: &Json) -> Json {
    let metadata = doc["metadata"].as_array().expect("metadata");
    let tensors = doc["tensors"].as_array().expect("tensors");
    assert_eq!(doc["metadata_count"].as_u64(), Some(metadata.len() as u64));
    assert_eq!(doc["tensor_count"].as_u64(), Some(tensors.len() as u64));
    json!({
        "version": doc["version"],
        "byte_order": doc["byte_order"],
        "alignment": doc["alignment"],
        "data_offset": doc["data_offset"],
        "file_size": doc["file_size"],
        "kv_count": doc["metadata_count"],
        "tensor_count": doc["tensor_count"],
        "metadata": metadata.iter().map(canon_json_entry).collect::<Vec<_>>(),
        "tensors": tensors.iter().map(canon_json_tensor).collect::<Vec<_>>(),
    })
}

/// The same facts from the Rust reader, for files the reference cannot read. Each tensor's
/// `size` must be the length of its data, which the view gives as `n_bytes`.
fn canon_rust(path: &Path) -> Json {
    let f = MappedFile::open(path).unwrap();
    for t in f.tensors() {
        assert_eq!(
            t.size,
            t.data.len() as u64,
            "{}",
            String::from_utf8_lossy(t.name)
        );
    }
    without_block_and_digest(canon::file(&f))
}

/// `--json` on `path`: parsed, with the single-file facts (one shard, the path) checked.
fn json_of(path: &Path) -> Json {
    let out = expect(&[OsStr::new("--json"), path.as_os_str()], 0);
    assert!(out.stderr.is_empty(), "{}", show(&out));
    let doc = parse_json(&out.stdout);
    assert_eq!(
        bytes_of(&doc["file"], "file"),
        path.as_os_str().as_encoded_bytes()
    );
    doc
}

fn check_single_shard(doc: &Json, path: &Path) {
    let shards = doc["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 1);
    let s = &shards[0];
    assert_eq!(
        bytes_of(&s["path"], "path"),
        path.as_os_str().as_encoded_bytes()
    );
    for (k, top) in [
        ("version", "version"),
        ("file_size", "file_size"),
        ("alignment", "alignment"),
        ("data_offset", "data_offset"),
        ("tensor_count", "tensor_count"),
    ] {
        assert_eq!(s[k], doc[top], "shard field {k}");
    }
    assert_eq!(s["first_tensor"], 0);
    for t in doc["tensors"].as_array().unwrap() {
        assert_eq!(t["shard"], 0);
    }
}

// --- files written with gguf::Writer ---------------------------------------------------------

fn s(bytes: impl AsRef<[u8]>) -> MetadataValue {
    MetadataValue::string(bytes)
}

/// Every value type with edge values, exact-float traps, strings needing escapes or not UTF-8,
/// arrays of every element type (empty too) and nested arrays.
fn every_value() -> Vec<(Vec<u8>, MetadataValue)> {
    use MetadataValue::{Array, Bool, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8};
    let f32s: Vec<f32> = [
        0x7fc0_1234u32, // NaN with a payload
        0x7f80_0001,    // signalling NaN
        0x8000_0000,    // -0.0
        0x0000_0001,    // smallest subnormal
        0xff80_0000,    // -inf
        0x7f7f_ffff,    // largest
        0x3dcc_cccd,    // 0.1
    ]
    .into_iter()
    .map(f32::from_bits)
    .chain([
        1e-5,
        10000.0,
        16_777_216.0,
        1.0e30,
        1.0 / 3.0,
        -2.5,
        1.0,
        123_456_790.0,
    ])
    .collect();
    let f64s: Vec<f64> = [
        0xfff8_0000_dead_beefu64,
        0x7ff0_0000_0000_0001,
        0x8000_0000_0000_0000,
        0x0000_0000_0000_0001,
        0x7ff0_0000_0000_0000,
    ]
    .into_iter()
    .map(f64::from_bits)
    .chain([
        f64::MAX,
        f64::MIN_POSITIVE,
        0.1,
        1e16,
        1.234_567_890_123_456_7e16,
        9_007_199_254_740_993.0,
        1e17,
        1e100,
        -1e-300,
        1.0 / 3.0,
        2f64.powi(63),
        100.0,
    ])
    .collect();
    let strings: Vec<&[u8]> = vec![
        b"",
        b"plain",
        b"quote\" backslash\\ slash/",
        b"newline\n tab\t cr\r bell\x07 esc\x1b del\x7f nul\0end",
        "h\u{e9}llo \u{65e5}\u{672c} \u{1f999} \u{2028}".as_bytes(),
        b"\xff\xfe not UTF-8",
        b"overlong \xc0\xaf",
        b"surrogate \xed\xa0\x80",
        b"past U+10FFFF \xf4\x90\x80\x80",
        b"cut \xe6\x97",
        b"'single quotes'",
    ];
    let mut kv: Vec<(Vec<u8>, MetadataValue)> = vec![
        (b"general.architecture".to_vec(), s("llama")),
        (b"u8".to_vec(), U8(u8::MAX)),
        (b"i8".to_vec(), I8(i8::MIN)),
        (b"u16".to_vec(), U16(u16::MAX)),
        (b"i16".to_vec(), I16(i16::MIN)),
        (b"u32".to_vec(), U32(u32::MAX)),
        (b"i32".to_vec(), I32(i32::MIN)),
        (b"u64".to_vec(), U64(u64::MAX)),
        (b"i64.min".to_vec(), I64(i64::MIN)),
        (b"i64.max".to_vec(), I64(i64::MAX)),
        (b"bool.true".to_vec(), Bool(true)),
        (b"bool.false".to_vec(), Bool(false)),
        (
            "\u{43a}\u{43b}\u{44e}\u{447}".as_bytes().to_vec(),
            s("\u{437}\u{43d}\u{430}\u{447}"),
        ),
        (b"key \"with\" \\escapes\\\t".to_vec(), U8(1)),
    ];
    for (i, v) in f32s.iter().enumerate() {
        kv.push((format!("f32.{i}").into_bytes(), F32(*v)));
    }
    for (i, v) in f64s.iter().enumerate() {
        kv.push((format!("f64.{i}").into_bytes(), F64(*v)));
    }
    for (i, v) in strings.iter().enumerate() {
        kv.push((format!("str.{i}").into_bytes(), s(v)));
    }
    let arrays: Vec<(ValueType, Vec<MetadataValue>)> = vec![
        (ValueType::Uint8, vec![U8(0), U8(1), U8(255)]),
        (ValueType::Int8, vec![I8(-128), I8(0), I8(127)]),
        (ValueType::Uint16, vec![U16(0), U16(65535)]),
        (ValueType::Int16, vec![I16(-32768), I16(32767)]),
        (ValueType::Uint32, vec![U32(0), U32(u32::MAX)]),
        (
            ValueType::Int32,
            vec![I32(i32::MIN), I32(-1), I32(i32::MAX)],
        ),
        (ValueType::Uint64, vec![U64(0), U64(u64::MAX)]),
        (ValueType::Int64, vec![I64(i64::MIN), I64(i64::MAX)]),
        (ValueType::Float32, f32s.iter().map(|&v| F32(v)).collect()),
        (ValueType::Float64, f64s.iter().map(|&v| F64(v)).collect()),
        (ValueType::Bool, vec![Bool(true), Bool(false), Bool(true)]),
        (ValueType::String, strings.iter().map(s).collect()),
    ];
    for (elem, items) in arrays {
        kv.push((
            format!("array.{}", elem.name()).into_bytes(),
            Array(elem, items),
        ));
        kv.push((
            format!("array.{}.empty", elem.name()).into_bytes(),
            Array(elem, vec![]),
        ));
    }
    kv.push((
        b"nested.deep".to_vec(),
        (0..7).fold(
            Array(ValueType::Int16, vec![I16(-1), I16(2)]),
            |inner, _| Array(ValueType::Array, vec![inner]),
        ),
    ));
    kv.push((
        b"nested.mixed".to_vec(),
        Array(
            ValueType::Array,
            vec![
                Array(ValueType::Uint64, vec![U64(1), U64(u64::MAX)]),
                Array(ValueType::String, vec![s("x"), s(""), s(b"\xff")]),
                Array(ValueType::Bool, vec![]),
                Array(
                    ValueType::Array,
                    vec![Array(ValueType::Float64, vec![F64(-0.5), F64(f64::NAN)])],
                ),
                Array(ValueType::Float32, vec![F32(0.1), F32(-0.0)]),
                Array(ValueType::Array, vec![]),
            ],
        ),
    ));
    kv.push((b"nested.empty".to_vec(), Array(ValueType::Array, vec![])));
    kv
}

/// Tensors of several data types, 0 to 4 dimensions, one empty.
fn some_tensors() -> Vec<(Vec<u8>, Vec<u64>, DataType)> {
    vec![
        (b"token_embd.weight".to_vec(), vec![64, 3], DataType::Q8_0),
        (
            b"blk.0.attn_q.weight".to_vec(),
            vec![256, 2],
            DataType::Q4_K,
        ),
        (b"blk.0.ffn_down.weight".to_vec(), vec![256], DataType::Q6_K),
        (b"norm".to_vec(), vec![7], DataType::F32),
        (b"half".to_vec(), vec![5, 2, 3], DataType::F16),
        (b"bf".to_vec(), vec![4, 1, 2, 2], DataType::BF16),
        (b"ints".to_vec(), vec![3], DataType::I32),
        (b"scalar".to_vec(), vec![], DataType::F32),
        (b"empty".to_vec(), vec![32, 0], DataType::Q4_0),
        (
            "\u{442}\u{435}\u{43d}\u{437}\u{43e}\u{440}"
                .as_bytes()
                .to_vec(),
            vec![2],
            DataType::F64,
        ),
    ]
}

struct Plan {
    version: u32,
    order: ByteOrder,
    alignment: Option<u32>,
    kv: Vec<(Vec<u8>, MetadataValue)>,
    tensors: Vec<(Vec<u8>, Vec<u64>, DataType)>,
}

fn write(path: &Path, plan: &Plan) {
    writer(plan).write_file(path).unwrap();
}

fn writer(plan: &Plan) -> Writer {
    let mut w = Writer::new();
    w.set_version(plan.version)
        .unwrap()
        .set_byte_order(plan.order);
    for (k, v) in &plan.kv {
        w.add_metadata(k, v.clone()).unwrap();
    }
    if let Some(a) = plan.alignment {
        w.set_alignment(a).unwrap();
    }
    for (i, (name, dims, dtype)) in plan.tensors.iter().enumerate() {
        let size = dtype.tensor_bytes(dims).unwrap() as usize;
        w.add_tensor(name, dims, *dtype, filler(i as u64 + 1, size))
            .unwrap();
    }
    w
}

fn plan(version: u32, order: ByteOrder, alignment: Option<u32>, kv: bool, tensors: bool) -> Plan {
    Plan {
        version,
        order,
        alignment,
        kv: if kv { every_value() } else { vec![] },
        tensors: if tensors { some_tensors() } else { vec![] },
    }
}

#[test]
fn json_agrees_with_the_reference_reader() {
    let dir = work_dir("json-reference");
    // A copy: the reference writes its sidecar (FILE.json) beside each file.
    let copy = dir.join("sample.gguf");
    std::fs::copy(sample(), &copy).unwrap();
    let mut paths = vec![copy];
    for (name, p) in [
        ("v3-le", plan(3, ByteOrder::Little, None, true, true)),
        ("v3-be", plan(3, ByteOrder::Big, Some(64), true, true)),
        ("v2-le", plan(2, ByteOrder::Little, Some(1), true, true)),
        ("v2-be", plan(2, ByteOrder::Big, Some(8), true, true)),
        (
            "metadata-only",
            plan(3, ByteOrder::Little, None, true, false),
        ),
        (
            "tensors-only",
            plan(3, ByteOrder::Little, Some(128), false, true),
        ),
        ("empty", plan(3, ByteOrder::Little, None, false, false)),
    ] {
        let path = dir.join(format!("{name}.gguf"));
        write(&path, &p);
        paths.push(path);
    }
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let expected = reference(&refs);
    for (path, want) in paths.iter().zip(&expected) {
        let doc = json_of(path);
        check_single_shard(&doc, path);
        assert_same(want, &canon_json(&doc), &path.display().to_string());
        // The Rust reader agrees too (a check of the comparison itself).
        assert_same(
            &canon_rust(path),
            &canon_json(&doc),
            &path.display().to_string(),
        );
    }
}

#[test]
fn json_of_files_the_reference_cannot_read_agrees_with_the_rust_reader() {
    let dir = work_dir("json-rust");
    let mut odd = plan(3, ByteOrder::Little, None, false, false);
    odd.kv = vec![
        (b"\xffkey".to_vec(), s("value")),
        (
            b"nul\0key".to_vec(),
            MetadataValue::Array(ValueType::Uint32, vec![MetadataValue::U32(7)]),
        ),
        (b"nul".to_vec(), s("not the one above")),
    ];
    odd.tensors = vec![
        (b"t\xe9nsor".to_vec(), vec![4], DataType::F32),
        (b"we\"ird\\name\n".to_vec(), vec![2], DataType::F16),
    ];
    let mut paths = Vec::new();
    for (name, p) in [
        ("v1-le", plan(1, ByteOrder::Little, None, true, true)),
        ("v1-be", plan(1, ByteOrder::Big, Some(16), true, true)),
        ("odd-names", odd),
    ] {
        let path = dir.join(format!("{name}.gguf"));
        write(&path, &p);
        paths.push(path);
    }
    for path in &paths {
        let doc = json_of(path);
        check_single_shard(&doc, path);
        assert_same(
            &canon_rust(path),
            &canon_json(&doc),
            &path.display().to_string(),
        );
    }
    // Bytes that are not UTF-8 are written as hex, the rest as JSON strings.
    let doc = json_of(&paths[2]);
    assert_eq!(doc["metadata"][0]["key"], json!({"hex": "ff6b6579"}));
    assert_eq!(doc["metadata"][1]["key"], "nul\u{0}key");
    assert_eq!(doc["tensors"][0]["name"], json!({"hex": "74e96e736f72"}));
    assert_eq!(doc["tensors"][1]["name"], "we\"ird\\name\n");
}

/// The default output and the JSON of a file with many strings stay one line per entry.
#[test]
fn json_escapes_every_control_byte() {
    let dir = work_dir("json-escapes");
    let all: Vec<u8> = (0u8..0x80).collect();
    let mut p = plan(3, ByteOrder::Little, None, false, false);
    p.kv = vec![(b"ascii".to_vec(), s(&all))];
    let path = dir.join("escapes.gguf");
    write(&path, &p);
    let out = expect(&[OsStr::new("--json"), path.as_os_str()], 0);
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        !text.bytes().any(|b| b < 0x20 && b != b'\n'),
        "raw control bytes in the JSON:\n{text}"
    );
    let doc = parse_json(&out.stdout);
    assert_eq!(
        doc["metadata"][0]["value"].as_str().unwrap().as_bytes(),
        &all[..]
    );
}

// --- --tensors and --metadata ----------------------------------------------------------------

#[test]
fn tensors_prints_the_tensor_table_only() {
    let sample = sample();
    let full = expect(&[sample.as_os_str()], 0);
    let full = String::from_utf8(full.stdout).unwrap();
    let table = &full[full.find("* Dumping 21 tensor(s)").unwrap()..];
    let out = expect(&[OsStr::new("--tensors"), sample.as_os_str()], 0);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), table);

    let out = expect(&["--json", "--tensors"], 0);
    let tensors = parse_json(&out.stdout);
    assert_eq!(tensors, json_of(&sample)["tensors"]);
    assert_eq!(tensors.as_array().unwrap().len(), 21);
}

/// The inspector's escaping of bytes from a file: backslashes (and `quote`) escaped with a
/// backslash; control characters (C0, DEL, C1) and bytes that are not UTF-8 as `\xNN`.
fn escaped(bytes: &[u8], quote: Option<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut buf = [0; 4];
            let enc = c.encode_utf8(&mut buf).as_bytes();
            if c.is_control() {
                for b in enc {
                    out.extend(format!("\\x{b:02x}").bytes());
                }
            } else if c == '\\' || (c.is_ascii() && Some(c as u8) == quote) {
                out.extend([b'\\', c as u8]);
            } else {
                out.extend(enc);
            }
        }
        for b in chunk.invalid() {
            out.extend(format!("\\x{b:02x}").bytes());
        }
    }
    out
}

/// The inspector's quoting of a string inside an array.
fn quoted(bytes: &[u8]) -> Vec<u8> {
    [&b"'"[..], &escaped(bytes, Some(b'\'')), b"'"].concat()
}

#[test]
fn metadata_prints_one_value_in_full() {
    let sample = sample();
    let f = MappedFile::open(&sample).unwrap();
    let value = |key: &str| {
        let out = expect(
            &[
                OsStr::new("--metadata"),
                OsStr::new(key),
                sample.as_os_str(),
            ],
            0,
        );
        assert!(out.stderr.is_empty(), "{}", show(&out));
        out.stdout
    };
    assert_eq!(value("general.architecture"), b"llama\n");
    assert_eq!(value("llama.block_count"), b"2\n");
    let eps = f.get("llama.attention.layer_norm_rms_epsilon").unwrap();
    let Value::F32(eps) = eps else {
        panic!("{eps:?}")
    };
    let printed = String::from_utf8(value("llama.attention.layer_norm_rms_epsilon")).unwrap();
    assert_eq!(
        printed.trim_end().parse::<f32>().unwrap().to_bits(),
        eps.to_bits()
    );

    // An array in full: every token, quoted.
    let tokens = f.get("tokenizer.ggml.tokens").unwrap().as_array().unwrap();
    let mut want = b"[".to_vec();
    for (i, t) in tokens.strings().unwrap().enumerate() {
        if i > 0 {
            want.extend(b", ");
        }
        want.extend(quoted(t));
    }
    want.extend(b"]\n");
    assert!(tokens.len() > ARRAY_PREVIEW as u64);
    assert_eq!(
        String::from_utf8_lossy(&value("tokenizer.ggml.tokens")),
        String::from_utf8_lossy(&want)
    );
    // Float arrays print every element exactly.
    let scores = f.get("tokenizer.ggml.scores").unwrap().as_array().unwrap();
    let printed = String::from_utf8(value("tokenizer.ggml.scores")).unwrap();
    let printed: Vec<u32> = printed
        .trim_end()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(", ")
        .map(|x| x.parse::<f32>().unwrap().to_bits())
        .collect();
    let want: Vec<u32> = scores
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(printed, want);

    // With --json: the entry, as in the whole document.
    let out = expect(
        &[
            OsStr::new("--json"),
            OsStr::new("--metadata"),
            OsStr::new("tokenizer.ggml.tokens"),
            sample.as_os_str(),
        ],
        0,
    );
    let doc = json_of(&sample);
    let index = f.metadata_index("tokenizer.ggml.tokens").unwrap();
    assert_eq!(parse_json(&out.stdout), doc["metadata"][index]);

    // A missing key: exit status 1, nothing on stdout.
    let out = expect(
        &[
            OsStr::new("--metadata"),
            OsStr::new("no.such.key"),
            sample.as_os_str(),
        ],
        1,
    );
    assert!(out.stdout.is_empty(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no.such.key"),
        "{}",
        show(&out)
    );
}

#[test]
fn metadata_prints_nested_arrays_and_exact_floats() {
    let dir = work_dir("metadata-values");
    let path = dir.join("values.gguf");
    write(&path, &plan(3, ByteOrder::Big, None, true, false));
    let value = |key: &str| {
        let out = expect(
            &[OsStr::new("--metadata"), OsStr::new(key), path.as_os_str()],
            0,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(value("nested.deep"), "[[[[[[[[-1, 2]]]]]]]]\n");
    assert_eq!(
        value("nested.mixed"),
        "[[1, 18446744073709551615], ['x', '', '\\xff'], [], [[-0.5, nan]], [0.1, -0], []]\n"
    );
    assert_eq!(value("array.INT8"), "[-128, 0, 127]\n");
    assert_eq!(value("array.BOOL.empty"), "[]\n");
    assert_eq!(value("u64"), "18446744073709551615\n");
    assert_eq!(value("i64.min"), "-9223372036854775808\n");
    assert_eq!(value("bool.false"), "false\n");
    let out = expect(
        &[
            OsStr::new("--metadata"),
            OsStr::new("str.3"),
            path.as_os_str(),
        ],
        0,
    );
    // Top-level strings are printed bare, their control bytes escaped (--json has them raw).
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "newline\\x0a tab\\x09 cr\\x0d bell\\x07 esc\\x1b del\\x7f nul\\x00end\n"
    );
    for (i, v) in [
        "nan",
        "nan",
        "-0",
        "1e-45",
        "-inf",
        "3.4028235e+38",
        "0.1",
        "1e-05",
        "10000",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(value(&format!("f32.{i}")), format!("{v}\n"), "f32.{i}");
    }
    assert_eq!(value("f64.7"), "0.1\n");
    assert_eq!(value("f64.8"), "10000000000000000\n");
    assert_eq!(value("f64.9"), "12345678901234568\n");
    assert_eq!(value("f64.11"), "1e+17\n");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--bogus"][..],
        &["--metadata"],
        &["--verify", "--json"],
        &["--tensors", "--metadata", "k"],
        &["--verify", "--tensors"],
    ] {
        bad_usage_line(&expect(args, 2));
    }
    // `--` ends the options: a file named like one.
    let out = expect(&["--", "--verify"], 1);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--verify"),
        "{}",
        show(&out)
    );
}

// --- --verify --------------------------------------------------------------------------------

/// `--verify` of a file that opens: every tensor's digest line, in order, and the verdicts.
/// Returns stdout's lines.
fn verify_ok(path: &Path, shards: &[PathBuf]) -> Vec<String> {
    let out = expect(&[OsStr::new("--verify"), path.as_os_str()], 0);
    assert!(
        out.stderr.is_empty(),
        "no progress bar unless stderr is a terminal\n{}",
        show(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let mut want = Vec::new();
    let n = shards.len();
    for (i, shard) in shards.iter().enumerate() {
        let f = MappedFile::open(shard).unwrap();
        want.push(format!("* Shard {}/{n}: {}", i + 1, shard.display()));
        let bytes: u64 = f.tensors().map(|t| t.size).sum();
        let size = match in_units(bytes) {
            s if s.is_empty() => s,
            s => format!(", {s}"),
        };
        want.push(format!(
            "* Shard {}/{n}: OK ({} tensor(s), {bytes} bytes{size})",
            i + 1,
            f.tensor_count()
        ));
    }
    want.push(format!("* {}: OK", path.display()));
    assert!(
        lines[0].starts_with(&format!("* Verifying {}: {n} shard(s)", path.display())),
        "{text}"
    );
    assert_eq!(
        lines[1],
        "* Checks the format's rules, every entry and tensor record, that every byte of tensor \
         data can be read and that no value or scale is NaN or infinite (as ggml checks); not \
         whether the data changed (use --hash, --check)"
    );
    assert_eq!(lines[2..], want[..], "{text}");
    lines
}

/// A byte count as the inspector gives it beside the count: in the largest binary unit it
/// reaches, two decimals ("1003.61 KiB"); empty below 1 KiB.
fn in_units(n: u64) -> String {
    if n < 1024 {
        return String::new();
    }
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", units[u])
}

fn verify_fails(path: &Path, why: &str) {
    let out = expect(&[OsStr::new("--verify"), path.as_os_str()], 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some(format!("* {}: FAILED", path.display()).as_str()),
        "{why}\n{}",
        show(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("gguf: "),
        "{why}: the library's error on stderr\n{}",
        show(&out)
    );
}

#[test]
fn verify_passes_good_files_and_prints_no_digest() {
    // The bundled sample (random weights, finite scales), by path and with no argument.
    verify_ok(&sample(), &[sample()]);
    let out = expect(&["--verify"], 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(&format!("* {}: OK\n", sample().display())),
        "{}",
        show(&out)
    );
    let dir = work_dir("verify-good");
    for (name, p) in [
        ("v3-be", plan(3, ByteOrder::Big, Some(64), true, true)),
        ("v1-le", plan(1, ByteOrder::Little, None, true, true)),
        ("empty", plan(3, ByteOrder::Little, None, false, false)),
    ] {
        let path = dir.join(format!("{name}.gguf"));
        write(&path, &p);
        verify_ok(&path, std::slice::from_ref(&path));
    }
    // Odd tensor names pass; a path with control bytes is printed escaped.
    let mut p = plan(3, ByteOrder::Little, None, false, false);
    p.tensors = vec![
        (b"t\xe9nsor".to_vec(), vec![4], DataType::F32),
        (b"we\"ird\\name\n".to_vec(), vec![2], DataType::F16),
    ];
    let path = dir.join("odd\x1b[2Jname.gguf");
    write(&path, &p);
    let out = expect(&[OsStr::new("--verify"), path.as_os_str()], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\x1b'), "{text}");
    let shown = path.display().to_string().replace('\x1b', "\\x1b");
    assert!(text.ends_with(&format!("* {shown}: OK\n")), "{text}");
    assert_eq!(text.lines().count(), 5, "{text}");
}

#[test]
fn verify_fails_on_truncated_data_and_corrupt_headers() {
    let dir = work_dir("verify-bad");
    let good = dir.join("good.gguf");
    write(&good, &plan(3, ByteOrder::Little, None, true, true));
    let bytes = std::fs::read(&good).unwrap();
    let f = MappedFile::open(&good).unwrap();
    let last_end = f.tensors().map(|t| t.file_offset + t.size).max().unwrap() as usize;
    let header_end = f.data_offset() as usize;
    drop(f);

    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "truncated in the last tensor's data",
            bytes[..last_end - 1].to_vec(),
        ),
        (
            "truncated at the data section",
            bytes[..header_end].to_vec(),
        ),
        ("bad magic", [b"GGUX".as_slice(), &bytes[4..]].concat()),
        ("bad version", {
            let mut b = bytes.clone();
            b[4..8].copy_from_slice(&99u32.to_le_bytes());
            b
        }),
        ("huge tensor count", {
            let mut b = bytes.clone();
            b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("header cut short", bytes[..header_end / 2].to_vec()),
    ];
    for (i, (why, data)) in cases.into_iter().enumerate() {
        let path = dir.join(format!("bad-{i}.gguf"));
        std::fs::write(&path, data).unwrap();
        verify_fails(&path, why);
    }
    verify_fails(&dir.join("missing.gguf"), "a missing file");
}

/// `--verify` checks values too: a NaN or an infinity in a float tensor or a quantized block's
/// scale fails the tensor, the shard and the file, naming the tensor, the block or element and
/// the byte offset.
#[test]
fn verify_fails_on_nan_and_infinite_values() {
    let dir = work_dir("verify-values");
    let cases: [(&str, DataType, usize, &[u8], &str); 3] = [
        (
            "nan-scale",
            DataType::Q4_K,
            144 * 2 + 2,
            &[0x00, 0x7e],
            "block 2's dmin is NaN",
        ),
        (
            "inf-value",
            DataType::F32,
            4 * 5,
            &[0, 0, 0x80, 0xff],
            "element 5 is infinity",
        ),
        (
            "bf16-nan",
            DataType::BF16,
            2 * 7,
            &[0xc1, 0x7f],
            "element 7 is NaN",
        ),
    ];
    for (name, dtype, at, plant, said) in cases {
        let mut w = Writer::new();
        w.add_tensor("ok", &[32], DataType::F32, filler(1, 128))
            .unwrap();
        let size = dtype.tensor_bytes(&[256 * 4]).unwrap() as usize;
        let mut data = filler(2, size);
        data[at..at + plant.len()].copy_from_slice(plant);
        w.add_tensor("blk.0.bad", &[256 * 4], dtype, data).unwrap();
        let path = dir.join(format!("{name}.gguf"));
        w.write_file(&path).unwrap();
        let out = expect(&[OsStr::new("--verify"), path.as_os_str()], 1);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("FAILED  tensor blk.0.bad: bad values: "))
            .unwrap_or_else(|| panic!("{name}: no failure line\n{}", show(&out)));
        assert!(
            line.contains(said) && line.contains(&format!("byte {at} ")),
            "{line}"
        );
        assert!(!stdout.contains("FAILED  tensor ok"), "{}", show(&out));
        assert!(stdout.contains("* Shard 1/1: FAILED"), "{}", show(&out));
        assert_eq!(
            stdout.lines().last(),
            Some(format!("* {}: FAILED", path.display()).as_str())
        );
    }
}

/// A split model written with `Writer::into_shards`: any shard opens the whole model, `--json`
/// describes every shard as the reference reads it, and `--verify` checks every shard.
#[test]
fn split_models_are_inspected_and_verified_as_a_whole() {
    let dir = work_dir("split");
    let mut p = plan(3, ByteOrder::Little, Some(64), false, true);
    p.kv = vec![
        (b"general.architecture".to_vec(), s("llama")),
        (b"llama.block_count".to_vec(), MetadataValue::U32(2)),
    ];
    let shards = writer(&p).into_shards(4).unwrap();
    let n = shards.len();
    assert_eq!(n, 3);
    let prefix = dir.join("model").display().to_string();
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| PathBuf::from(Writer::shard_path(&prefix, i, n)))
        .collect();
    for (w, path) in shards.iter().zip(&paths) {
        w.write_file(path).unwrap();
    }

    // --json, from the second shard: the model's metadata (the first shard's), every shard, and
    // every tensor with its shard and its offsets in that shard, as the reference reads each file.
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let expected = reference(&refs);
    let doc = json_of(&paths[1]);
    let ours = canon_json(&doc);
    // The first shard's header fields but its tensor count, which is the model's (below).
    let fields = canon::HEADER_FIELDS
        .into_iter()
        .filter(|k| *k != "tensor_count");
    for k in fields.chain(["metadata"]) {
        assert_same(&expected[0][k], &ours[k], k);
    }
    let json_shards = doc["shards"].as_array().unwrap();
    assert_eq!(json_shards.len(), n);
    let mut first = 0;
    let mut all_tensors = Vec::new();
    for (i, (shard, want)) in json_shards.iter().zip(&expected).enumerate() {
        assert_eq!(
            bytes_of(&shard["path"], "path"),
            paths[i].as_os_str().as_encoded_bytes()
        );
        for k in [
            "version",
            "file_size",
            "alignment",
            "data_offset",
            "tensor_count",
        ] {
            assert_eq!(shard[k], want[k], "shard {i}: {k}");
        }
        assert_eq!(shard["first_tensor"], first);
        first += want["tensor_count"].as_u64().unwrap();
        for t in want["tensors"].as_array().unwrap() {
            all_tensors.push((i, t.clone()));
        }
    }
    let tensors = doc["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), all_tensors.len());
    assert_eq!(doc["tensor_count"], all_tensors.len());
    for (t, (shard, want)) in tensors.iter().zip(&all_tensors) {
        assert_eq!(t["shard"], *shard);
        assert_same(want, &canon_json_tensor(t), "split tensor");
    }

    // The default output names the shards and gives each tensor's.
    let out = expect(&[paths[0].as_os_str()], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("* Split model: 3 shards\n"), "{text}");
    for (i, path) in paths.iter().enumerate() {
        assert!(
            text.contains(&format!("*   shard {}: {}: ", i + 1, path.display())),
            "{text}"
        );
    }
    assert!(text.contains("| shard |"), "{text}");

    // --verify from the last shard: every shard, every tensor.
    verify_ok(&paths[2], &paths);

    // A shard truncated, or missing: FAILED.
    let second = std::fs::read(&paths[1]).unwrap();
    let data_end = MappedFile::open(&paths[1])
        .unwrap()
        .tensors()
        .map(|t| t.file_offset + t.size)
        .max()
        .unwrap() as usize;
    std::fs::write(&paths[1], &second[..data_end - 1]).unwrap();
    verify_fails(&paths[0], "a truncated shard");
    std::fs::remove_file(&paths[1]).unwrap();
    verify_fails(&paths[0], "a missing shard");
    std::fs::write(&paths[1], &second).unwrap();
    verify_ok(&paths[0], &paths);
}

/// Runs the inspector with its stderr on a pseudo-terminal: returns its output (stdout captured)
/// and what it wrote to the terminal.
fn on_a_terminal<S: AsRef<OsStr>>(args: &[S]) -> (Output, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    // The inspector's stderr is the follower side; this test reads the leader.
    // SAFETY: libc calls on descriptors this function opens and then owns.
    let (leader, follower) = unsafe {
        let leader = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            leader >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(leader), 0);
        assert_eq!(libc::unlockpt(leader), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(leader, name.as_mut_ptr(), name.len()), 0);
        let follower = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            follower >= 0,
            "open the pty: {}",
            std::io::Error::last_os_error()
        );
        (OwnedFd::from_raw_fd(leader), OwnedFd::from_raw_fd(follower))
    };
    let mut leader = std::fs::File::from(leader);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the inspector has exited and the follower is closed.
        while let Ok(n) = leader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let out = Command::new(inspector())
        .args(args)
        .stderr(std::fs::File::from(follower))
        .output()
        .unwrap();
    let tty = reader.join().unwrap();
    (out, String::from_utf8_lossy(&tty).into_owned())
}

/// A progress bar was drawn on the terminal, reached 100% and was cleared at the end.
fn assert_bar_drawn_and_cleared(tty: &str) {
    assert!(
        tty.contains("\r[") && tty.contains("100.0%"),
        "no progress bar: {tty:?}"
    );
    assert!(
        tty.ends_with("\r\x1b[K"),
        "the bar is not cleared at the end: {tty:?}"
    );
}

/// The progress bar goes to stderr when it is a terminal (a pseudo-terminal here), and the
/// verdicts to stdout all the same.
#[test]
fn verify_draws_a_progress_bar_only_on_a_terminal() {
    let sample = work_dir("verify-tty").join("good.gguf");
    write(&sample, &plan(3, ByteOrder::Little, None, true, true));
    let (out, tty) = on_a_terminal(&[OsStr::new("--verify"), sample.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.ends_with(&format!("* {}: OK\n", sample.display())),
        "{stdout}"
    );
    assert_bar_drawn_and_cleared(&tty);
    // Not a terminal: no bar (verify_ok checks that stderr stays empty).
    verify_ok(&sample, std::slice::from_ref(&sample));
}

/// `--hash` and `--check` (digests on threads, the bar drawn by the main thread) draw it too on
/// a terminal, cleared before the output; their output is the same as without a terminal, where
/// they draw nothing.
#[test]
fn hash_and_check_draw_a_progress_bar_only_on_a_terminal() {
    let dir = work_dir("hash-tty");
    let path = dir.join("model.gguf");
    let mut w = Writer::new();
    for k in 0..2u64 {
        w.add_tensor(
            format!("t{k}"),
            &[256, 1024],
            DataType::F32,
            filler(k, 4 * 256 * 1024),
        )
        .unwrap();
    }
    w.write_file(&path).unwrap();
    let plain = expect(&[OsStr::new("--hash"), path.as_os_str()], 0);
    assert!(plain.stderr.is_empty(), "{}", show(&plain));
    let (out, tty) = on_a_terminal(&[OsStr::new("--hash"), path.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(out.stdout, plain.stdout);
    assert_bar_drawn_and_cleared(&tty);
    // The data's 2 MiB, not the 10 MiB its five digests read.
    assert!(tty.contains(" 2/2 MiB"), "{tty:?}");

    let manifest = dir.join("model.manifest");
    std::fs::write(&manifest, &plain.stdout).unwrap();
    let args = [
        OsStr::new("--check"),
        manifest.as_os_str(),
        path.as_os_str(),
    ];
    let plain = expect(&args, 0);
    assert!(plain.stderr.is_empty(), "{}", show(&plain));
    let (out, tty) = on_a_terminal(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(out.stdout, plain.stdout);
    assert_bar_drawn_and_cleared(&tty);
}

// ------------------------------------------------------------------------------------------------
// --hash and --check: the reference's digests.
// ------------------------------------------------------------------------------------------------

/// What the reference's `gguf_hash.py` prints for `path`.
fn reference_hash(path: &Path) -> Vec<u8> {
    let out = common::run(
        Command::new(common::reference_python())
            .args(["-m", "gguf.scripts.gguf_hash"])
            .arg(path),
    );
    out.stdout
}

/// `--hash` of `path` equals the reference's output byte for byte; returns it.
fn hash_matches_reference(path: &Path) -> Vec<u8> {
    let ours = expect(&[OsStr::new("--hash"), path.as_os_str()], 0);
    assert!(ours.stderr.is_empty(), "{}", show(&ours));
    let want = reference_hash(path);
    assert!(
        ours.stdout == want,
        "--hash of {} differs from gguf_hash.py:\n--- ours ---\n{}\n--- reference ---\n{}",
        path.display(),
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&want)
    );
    ours.stdout
}

#[test]
fn hash_equals_the_reference_on_the_sample() {
    let out = hash_matches_reference(&sample());
    let f = MappedFile::open(sample()).unwrap();
    // Two lines per tensor and three for the model: the test compares something.
    assert_eq!(
        out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(),
        2 * f.tensor_count() + 3
    );
    // A relative path is printed as given.
    let out = Command::new(inspector())
        .args(["--hash", "testdata/sample.gguf"])
        .current_dir(manifest_dir())
        .output()
        .unwrap();
    let want = common::run(
        Command::new(common::reference_python())
            .args(["-m", "gguf.scripts.gguf_hash", "testdata/sample.gguf"])
            .current_dir(manifest_dir()),
    );
    assert_eq!(out.stdout, want.stdout, "{}", show(&out));
}

#[test]
fn hash_equals_the_reference_on_random_files_of_the_reference_writer() {
    let dir = work_dir("hash-random");
    run_reference([
        "generate".as_ref(),
        dir.as_os_str(),
        "16".as_ref(),
        "9".as_ref(),
    ]);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension() == Some(OsStr::new("gguf")) {
            hash_matches_reference(&path);
            n += 1;
        }
    }
    assert_eq!(n, 16);
}

/// gguf_hash.py hashes the one file it is given; so does --hash, for every shard.
#[test]
fn hash_equals_the_reference_on_every_shard_of_split_models() {
    let dir = work_dir("hash-split");
    run_reference(["split".as_ref(), dir.as_os_str(), "5".as_ref()]);
    let mut shards = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".gguf") {
            let out = hash_matches_reference(&path);
            shards += usize::from(name.contains("-of-"));
            // Only this shard's tensors.
            let f = MappedFile::open(&path).unwrap();
            let lines = out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
            assert_eq!(lines, 2 * f.tensor_count() + 3, "{name}");
        }
    }
    assert!(shards >= 6, "{shards} shards");
}

/// Tensors whose names gguf_hash.py skips, and names it prints as they are (backslashes,
/// quotes, non-ASCII), from libgguf's own writer.
#[test]
fn hash_skips_what_the_reference_skips() {
    let dir = work_dir("hash-skip");
    let mut p = plan(3, ByteOrder::Little, None, false, true);
    for name in [
        "h.0.attention.masked_bias",
        "h.0.attention.bias",
        "l.rotary_emb.inv_freq",
        "attention.bias",
        "we\"ird\\name 'q' \u{442}",
    ] {
        p.tensors
            .push((name.as_bytes().to_vec(), vec![8], DataType::F32));
    }
    let path = dir.join("skips.gguf");
    write(&path, &p);
    let out = String::from_utf8(hash_matches_reference(&path)).unwrap();
    assert!(!out.contains("masked_bias"), "{out}");
    assert!(!out.contains("inv_freq"), "{out}");
    assert!(out.contains(":attention.bias\n"), "{out}");
    assert!(out.contains(":we\"ird\\name 'q' \u{442}\n"), "{out}");
}

/// Names with control bytes: the reference would print them raw (it cannot write the bytes that
/// are not UTF-8 at all); --hash escapes such a line and marks it with a leading backslash, and
/// --check reads it back.
#[test]
fn hash_escapes_names_with_control_bytes_and_check_reads_them_back() {
    let dir = work_dir("hash-escape");
    let mut p = plan(3, ByteOrder::Little, None, false, false);
    p.tensors = vec![
        (b"plain\\name".to_vec(), vec![4], DataType::F32),
        (
            b"a\nsha1      0000  forged".to_vec(),
            vec![4],
            DataType::F32,
        ),
        (
            b"\x1b]0;title\x07\x1b[2J\xff\0x".to_vec(),
            vec![4],
            DataType::F32,
        ),
    ];
    let path = dir.join("odd.gguf");
    write(&path, &p);
    let out = expect(&[OsStr::new("--hash"), path.as_os_str()], 0);
    let text = String::from_utf8(out.stdout.clone()).expect("UTF-8");
    assert!(
        !text.bytes().any(|b| b < 0x20 && b != b'\n'),
        "raw control bytes: {text:?}"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * 3 + 3, "{text}");
    let p = path.display().to_string();
    assert!(
        lines[0].starts_with("sha1      ") && lines[0].ends_with(&format!("  {p}:plain\\name"))
    );
    assert!(lines[2].starts_with("\\sha1      "), "{text}");
    assert!(
        lines[2].ends_with(&format!("  {p}:a\\x0asha1      0000  forged")),
        "{text}"
    );
    assert!(
        lines[4].ends_with(&format!("  {p}:\\x1b]0;title\\x07\\x1b[2J\\xff\\x00x")),
        "{text}"
    );
    // Its own output is a manifest that --check accepts.
    let manifest = dir.join("odd.manifest");
    std::fs::write(&manifest, &out.stdout).unwrap();
    let out = expect(
        &[
            OsStr::new("--check"),
            manifest.as_os_str(),
            path.as_os_str(),
        ],
        0,
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(": OK (9 digest(s)"),
        "{}",
        show(&out)
    );
}

/// The tensor whose byte was flipped, named in --check's output.
fn check_names(manifest: &Path, path: &Path) -> (Output, String) {
    let out = run_inspector(&[
        OsStr::new("--check"),
        manifest.as_os_str(),
        path.as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

#[test]
fn check_catches_a_flipped_byte_in_any_tensor_and_names_it() {
    let dir = work_dir("check-flip");
    let mut p = plan(3, ByteOrder::Little, Some(32), true, true);
    p.tensors
        .push((b"h.0.attention.bias".to_vec(), vec![4], DataType::F32));
    let good = dir.join("good.gguf");
    write(&good, &p);
    let manifest = dir.join("good.manifest");
    std::fs::write(&manifest, reference_hash(&good)).unwrap();
    let (out, text) = check_names(&manifest, &good);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text.ends_with(" checked)\n") && text.contains(": OK ("),
        "{text}"
    );

    let bytes = std::fs::read(&good).unwrap();
    let f = MappedFile::open(&good).unwrap();
    let bad = dir.join("bad.gguf");
    let mut flipped = 0;
    for t in f.tensors() {
        for at in [0, t.size / 2, t.size.saturating_sub(1)] {
            if t.size == 0 {
                continue;
            }
            let mut b = bytes.clone();
            b[(t.file_offset + at) as usize] ^= 0x10;
            std::fs::write(&bad, &b).unwrap();
            let (out, text) = check_names(&manifest, &bad);
            let name = String::from_utf8(escaped(t.name, None)).unwrap();
            if t.name.ends_with(b".attention.bias") {
                // gguf_hash.py leaves it out of its manifests: --check says it is not covered.
                assert_eq!(out.status.code(), Some(0), "{}", show(&out));
                assert!(
                    text.contains(&format!(
                        "* not covered: tensor {name} (gguf_hash.py skips it"
                    )),
                    "{text}"
                );
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{}", show(&out));
            for alg in ["sha1", "sha256"] {
                assert!(
                    text.contains(&format!(
                        "FAILED  tensor {name}: its {alg} digest differs from the manifest's"
                    )),
                    "byte {at} of {name}:\n{text}"
                );
            }
            assert!(text.contains("FAILED  model: the sha256 digest"), "{text}");
            assert_eq!(
                text.lines()
                    .filter(|l| l.starts_with("FAILED  tensor"))
                    .count(),
                2,
                "{text}"
            );
            assert!(
                text.ends_with(" checked)\n") && text.contains(": FAILED ("),
                "{text}"
            );
            flipped += 1;
        }
    }
    assert!(flipped > 20);
    // A changed metadata value changes no digest.
    let mut p2 = p;
    p2.kv.push((b"extra.key".to_vec(), s("new")));
    let edited = dir.join("edited.gguf");
    write(&edited, &p2);
    let (out, _) = check_names(&manifest, &edited);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

/// llama-gguf-hash's manifests: `%-8s  HEX  FILE:TENSOR`, xxh64 as the 64-bit value in hex
/// (most significant byte first), every tensor hashed, whole-model lines last.
fn llama_manifest(path: &Path, file: &str, algorithms: &[gguf::DigestAlgorithm]) -> String {
    let f = MappedFile::open(path).unwrap();
    let mut out = String::new();
    for t in f.tensors() {
        for &a in algorithms {
            let d = gguf::digest::digest(a, t.data);
            let name = String::from_utf8(t.name.to_vec()).unwrap();
            out += &format!("{:<8}  {d}  {file}:{name}\n", a.name());
        }
    }
    for &a in algorithms {
        let mut m = gguf::Digester::new(a);
        for t in f.tensors() {
            m.update(t.data);
        }
        out += &format!("{:<8}  {}  {file}\n", a.name(), m.finish());
    }
    out
}

#[test]
fn check_accepts_llama_gguf_hash_manifests() {
    use gguf::DigestAlgorithm::{Sha1, Sha256, Uuid, Xxh3, Xxh64};
    let dir = work_dir("check-llama");
    let mut p = plan(3, ByteOrder::Little, None, false, true);
    p.tensors.push((
        b"h.0.attention.masked_bias".to_vec(),
        vec![4],
        DataType::F32,
    ));
    let path = dir.join("model.gguf");
    write(&path, &p);
    // The digests themselves, independently of this library: XXH64 is known for these bytes.
    assert_eq!(
        gguf::digest::digest(Xxh64, b"abc").to_string(),
        "44bc2cf5ad770999"
    );
    let manifest = dir.join("llama.manifest");
    // Another path for the file than the one checked: only the tensor names must agree.
    std::fs::write(
        &manifest,
        llama_manifest(&path, "elsewhere/model.gguf", &[Xxh64, Sha1, Sha256, Xxh3]),
    )
    .unwrap();
    let (out, text) = check_names(&manifest, &path);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(text.contains(": OK ("), "{text}");
    // The skipped tensor is in this manifest, and checked.
    let mut bytes = std::fs::read(&path).unwrap();
    let f = MappedFile::open(&path).unwrap();
    let t = f.tensor("h.0.attention.masked_bias").unwrap();
    bytes[t.file_offset as usize + 3] ^= 1;
    drop(f);
    let bad = dir.join("bad.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    let (out, text) = check_names(&manifest, &bad);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    for alg in ["xxh64", "sha1", "sha256", "xxh3"] {
        assert!(
            text.contains(&format!(
                "FAILED  tensor h.0.attention.masked_bias: its {alg} digest differs"
            )),
            "{text}"
        );
    }
    // A model-only manifest (--no-layer) with a UUID line.
    let whole: String = llama_manifest(&path, "m.gguf", &[Uuid, Xxh64])
        .lines()
        .filter(|l| l.ends_with("  m.gguf"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(whole.lines().count(), 2, "{whole}");
    std::fs::write(&manifest, &whole).unwrap();
    let (out, _) = check_names(&manifest, &path);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let (out, text) = check_names(&manifest, &bad);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(text.contains("FAILED  model: the uuid digest"), "{text}");
}

#[test]
fn check_reports_missing_tensors_and_malformed_manifests() {
    let dir = work_dir("check-bad");
    let path = dir.join("m.gguf");
    write(&path, &plan(3, ByteOrder::Little, None, false, true));
    let good = String::from_utf8(reference_hash(&path)).unwrap();
    let p = path.display().to_string();
    let manifest = dir.join("m.manifest");
    // A tensor of the manifest missing from the file, and one of the file not in the manifest.
    let renamed = good.replace(&format!("{p}:norm\n"), &format!("{p}:gone\n"));
    std::fs::write(&manifest, &renamed).unwrap();
    let (out, text) = check_names(&manifest, &path);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text.contains("FAILED  tensor gone: in the manifest (line "),
        "{text}"
    );
    assert!(
        text.contains("FAILED  tensor norm: not in the manifest"),
        "{text}"
    );

    for (bad, line, why) in [
        ("md5       0123  x\n", 1, "not a digest line"),
        ("sha1      0123  x\n", 1, "not 40 hex digits"),
        ("uuid      0123  x\n", 1, "in the form 8-4-4-4-12"),
        ("\n\nsha256    ", 3, "not 64 hex digits"),
        ("", 0, "no digest lines"),
    ] {
        let text = format!("{}{bad}", &good[..good.find('\n').unwrap() + 1]);
        let text = if bad.is_empty() { String::new() } else { text };
        std::fs::write(&manifest, &text).unwrap();
        let out = expect(
            &[
                OsStr::new("--check"),
                manifest.as_os_str(),
                path.as_os_str(),
            ],
            2,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let at = format!(
            "{}:{}: ",
            manifest.display(),
            if bad.is_empty() { 0 } else { line + 1 }
        );
        assert!(
            stderr.contains(&at) && stderr.contains(why),
            "{bad:?}: want {at}{why}\n{}",
            show(&out)
        );
    }
    // A line naming another file than the model's.
    let other = format!("{}sha1      {}  other.gguf\n", good, "0".repeat(40));
    std::fs::write(&manifest, other).unwrap();
    let out = expect(
        &[
            OsStr::new("--check"),
            manifest.as_os_str(),
            path.as_os_str(),
        ],
        2,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":1: names neither the model's file"),
        "{}",
        show(&out)
    );
    // No such manifest.
    let out = expect(
        &[
            OsStr::new("--check"),
            dir.join("none").as_os_str(),
            path.as_os_str(),
        ],
        2,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot open the manifest"),
        "{}",
        show(&out)
    );
}

// ------------------------------------------------------------------------------------------------
// Hardening.
// ------------------------------------------------------------------------------------------------

/// A valid file whose keys hold NUL bytes: the key "k\0long" must show its own array, not that of
/// "k" (a shorter one of another type: the old inspector read past its end or crashed).
#[test]
fn keys_holding_nul_show_their_own_values() {
    use MetadataValue::{Array, F32, U64, U8};
    let dir = work_dir("nul-keys");
    let mut p = plan(3, ByteOrder::Little, None, false, false);
    p.kv = vec![
        (b"k".to_vec(), Array(ValueType::Uint8, vec![U8(1)])),
        (
            b"k\0long".to_vec(),
            Array(ValueType::Uint64, (10..20).map(U64).collect()),
        ),
        (
            b"k\0strings".to_vec(),
            Array(
                ValueType::String,
                (0..8).map(|i| s(format!("s{i}"))).collect(),
            ),
        ),
        (b"s".to_vec(), s("plain")),
        (
            b"s\0x".to_vec(),
            Array(ValueType::Float32, vec![F32(0.5); 7]),
        ),
    ];
    let path = dir.join("nul.gguf");
    write(&path, &p);
    let out = expect(&[path.as_os_str()], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "      1: [UINT8]    |        1 | k = [1]",
        "      2: [UINT64]   |       10 | k\\x00long = [10, 11, 12, 13, 14, 15, ...]",
        "      3: [STRING]   |        8 | k\\x00strings = ['s0', 's1', 's2', 's3', 's4', 's5', ...]",
        "      4: STRING     |        1 | s = 'plain'",
        "      5: [FLOAT32]  |        7 | s\\x00x = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, ...]",
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
    }
    let out = expect(&[OsStr::new("--verify"), path.as_os_str()], 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(": OK\n"),
        "{}",
        show(&out)
    );
}

/// Bytes from a file that would act on a terminal (clear it, retitle it) or forge a line are
/// escaped in every text output; JSON escapes them its own way.
#[test]
fn control_bytes_are_escaped_in_every_text_output() {
    let dir = work_dir("escapes");
    let evil_key = b"k\x1b]0;owned\x07\x1b[2J\xc2\x9b\\".to_vec();
    let evil_name = b"t\n* /x: OK\r\x1b[1A\x7f".to_vec();
    let mut p = plan(3, ByteOrder::Little, None, false, false);
    p.kv = vec![
        (evil_key.clone(), s(b"v\x1b[31m\n")),
        (
            b"arr".to_vec(),
            MetadataValue::Array(ValueType::String, vec![s(b"\x1bc"), s(b"'")]),
        ),
    ];
    p.tensors = vec![(evil_name.clone(), vec![4], DataType::F32)];
    let path = dir.join("evil\x1b[2J.gguf");
    write(&path, &p);
    let clean = |out: &Output, what: &str| {
        let text = String::from_utf8(out.stdout.clone()).expect("UTF-8");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: raw control characters in {text:?}"
        );
        text
    };
    let key = String::from_utf8(escaped(&evil_key, None)).unwrap();
    let name = String::from_utf8(escaped(&evil_name, None)).unwrap();
    assert_eq!(key, "k\\x1b]0;owned\\x07\\x1b[2J\\xc2\\x9b\\\\");
    assert_eq!(name, "t\\x0a* /x: OK\\x0d\\x1b[1A\\x7f");

    let text = clean(&expect(&[path.as_os_str()], 0), "default");
    assert!(
        text.contains(&format!("| {key} = 'v\\x1b[31m\\x0a'\n")),
        "{text}"
    );
    assert!(text.contains("| arr = ['\\x1bc', '\\'']\n"), "{text}");
    assert!(text.ends_with(&format!("| {name}\n")), "{text}");
    assert!(text.starts_with("* File: "), "{text}");
    assert!(
        text.lines().next().unwrap().ends_with("evil\\x1b[2J.gguf"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3 + 1 + 2 + 2 + 1, "{text}");

    let text = clean(
        &expect(&[OsStr::new("--tensors"), path.as_os_str()], 0),
        "--tensors",
    );
    assert!(text.ends_with(&format!("| {name}\n")), "{text}");
    let text = clean(
        &expect(
            &[
                OsStr::new("--metadata"),
                OsStr::new("arr"),
                path.as_os_str(),
            ],
            0,
        ),
        "--metadata",
    );
    assert_eq!(text, "['\\x1bc', '\\'']\n");
    let text = clean(
        &expect(&[OsStr::new("--verify"), path.as_os_str()], 0),
        "--verify",
    );
    assert!(text.contains("evil\\x1b[2J.gguf"), "{text}");
    let text = clean(
        &expect(&[OsStr::new("--hash"), path.as_os_str()], 0),
        "--hash",
    );
    assert!(text.contains(&format!(":{name}\n")), "{text}");
    // A missing key named on the command line is escaped in the message too.
    let out = expect(
        &[
            OsStr::new("--metadata"),
            OsStr::new("no\x1b[2J"),
            path.as_os_str(),
        ],
        1,
    );
    assert!(!out.stderr.contains(&0x1b), "{}", show(&out));
    // JSON: the exact bytes, JSON-escaped.
    let out = expect(&[OsStr::new("--json"), path.as_os_str()], 0);
    let doc = parse_json(&out.stdout);
    assert_eq!(bytes_of(&doc["tensors"][0]["name"], "name"), evil_name);
}

#[test]
fn metadata_without_a_key_says_so() {
    let sample = sample();
    let stderr = bad_usage_line(&expect(&[OsStr::new("--metadata"), sample.as_os_str()], 2));
    assert!(
        stderr.contains(&format!(
            "--metadata needs a KEY before FILE, and '{}' is a file",
            sample.display()
        )),
        "{stderr}"
    );
    // A key but no file: also refused (not the sample inspected under a wrong name).
    let stderr = bad_usage_line(&expect(&["--metadata", "general.architecture"], 2));
    assert!(
        stderr.contains("--metadata KEY needs a FILE: none after 'general.architecture'"),
        "{stderr}"
    );
    let stderr = bad_usage_line(&expect(&["--hash"], 2));
    assert!(stderr.contains("--hash needs a FILE"), "{stderr}");
    let stderr = bad_usage_line(&expect(&[OsStr::new("--check"), sample.as_os_str()], 2));
    assert!(
        stderr.contains("--check needs a MANIFEST and a FILE"),
        "{stderr}"
    );
}

#[test]
fn version_prints_the_library_version() {
    let out = expect(&["--version"], 0);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("libgguf {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_documents_every_option() {
    let out = expect(&["--help"], 0);
    let help = String::from_utf8(out.stdout).unwrap();
    for option in [
        "--json",
        "--tensors",
        "--metadata KEY",
        "--verify",
        "--hash",
        "--check MANIFEST",
        "--tensor NAME --values [N]",
        "--version",
        "-h, --help",
    ] {
        assert!(
            help.contains(&format!("\n  {option}")),
            "{option} undocumented:\n{help}"
        );
    }
    // And every option the inspector accepts is one of those.
    let source = std::fs::read_to_string(manifest_dir().join("tools/gguf-inspect.c")).unwrap();
    for (i, _) in source.match_indices("!strcmp(a, \"--") {
        let opt = &source[i + 13..];
        let opt = &opt[..opt.find('"').unwrap()];
        if opt != "--" {
            assert!(help.contains(opt), "{opt} accepted but undocumented");
        }
    }
}

// --- --tensor NAME --values [N] ---------------------------------------------------------------

/// `--tensor NAME --values [N]`: the first N values as floats, one a line (exact decimals, NaN
/// by its bits), across rows, for quantized and plain types; and its refusals.
#[test]
fn values_prints_a_tensor_s_first_values() {
    let dir = work_dir("values");
    let floats: Vec<f32> = vec![0.1, -0.0, 1e-45, f32::from_bits(0x7FC0_0123), 3.0, -2.5];
    let mut q8 = vec![0x00, 0x38]; // d = 0.5
    q8.extend((0..32).map(|i| (i as i8 - 10) as u8));
    let mut w = Writer::new();
    w.add_tensor(
        "plain",
        &[3, 2],
        DataType::F32,
        floats.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .unwrap()
    .add_tensor("q8", &[32], DataType::Q8_0, q8)
    .unwrap();
    let path = dir.join("values.gguf");
    w.write_file(&path).unwrap();
    let lines = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        all.push(path.as_os_str());
        let out = expect(&all, 0);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    // Across both rows of the F32 tensor; the default (16) stops at its 6 elements.
    let all = ["0.1", "-0", "1e-45", "nan:0x7fc00123", "3", "-2.5"];
    assert_eq!(lines(&["--tensor", "plain", "--values"]), all);
    assert_eq!(lines(&["--tensor", "plain", "--values", "4"]), all[..4]);
    assert_eq!(lines(&["--values=0", "--tensor=plain"]), all);
    let q8: Vec<String> = (0..32)
        .map(|i| format!("{}", (i - 10) as f32 * 0.5))
        .collect();
    assert_eq!(lines(&["--tensor", "q8", "--values", "0"]), q8);
    assert_eq!(lines(&["--tensor", "q8", "--values", "20"]), q8[..20]);

    // No such tensor; a big-endian I8 tensor (no big-endian layout defined).
    let out = expect(
        &[
            OsStr::new("--tensor"),
            OsStr::new("nope"),
            OsStr::new("--values"),
            path.as_os_str(),
        ],
        1,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no tensor 'nope'"),
        "{}",
        show(&out)
    );
    let mut big = Writer::new();
    big.set_byte_order(ByteOrder::Big);
    big.add_tensor("bytes", &[4], DataType::I8, vec![1, 2, 3, 4])
        .unwrap();
    let big_path = dir.join("big.gguf");
    big.write_file(&big_path).unwrap();
    let out = expect(
        &[
            OsStr::new("--tensor"),
            OsStr::new("bytes"),
            OsStr::new("--values"),
            big_path.as_os_str(),
        ],
        1,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("I8 values cannot be read from a big-endian file"),
        "{}",
        show(&out)
    );

    // Bad usage.
    for args in [
        &["--values"][..],
        &["--tensor", "plain"],
        &["--tensor", "plain", "--values", "--json"],
        &["--tensor", "plain", "--values", "--tensors"],
        &["--tensor"],
        &["--tensor", "plain", "--values=x"],
    ] {
        bad_usage_line(&expect(args, 2));
    }
}

// ---------------------------------------------------------------------------------------------
// A URL wherever a file goes: served by nginx on the loopback (tests/url/servers.rs), the
// inspector prints what it prints for the file (with the URL where it names the file), reading
// only the header for the dumps and the data by ranges for --verify, --hash and --check.

#[cfg(feature = "net")]
#[test]
fn a_url_is_inspected_as_its_file() {
    let dir = servers::fresh_dir("inspect-url");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::copy(sample(), root.join("sample.gguf")).unwrap();
    // The sample with a NaN planted in one block's scale: --verify fails it, by path and by URL
    // alike (by URL the values are checked from data read by ranges).
    let mut bad = std::fs::read(sample()).unwrap();
    let at = {
        let f = MappedFile::open(sample()).unwrap();
        let t = f.tensor("blk.0.attn_q.weight").unwrap();
        assert_eq!(t.dtype, DataType::Q4_0);
        t.file_offset as usize + 18 * 3
    };
    bad[at..at + 2].copy_from_slice(&[0x00, 0x7e]);
    std::fs::write(root.join("nan-scale.gguf"), bad).unwrap();
    let mut w = Writer::new();
    w.add_metadata("general.name", MetadataValue::string("split"))
        .unwrap();
    for k in 0..4u64 {
        w.add_tensor(
            format!("t{k}"),
            &[1000 + 32 * k],
            DataType::F32,
            filler(k, 4 * (1000 + 32 * k as usize)),
        )
        .unwrap();
    }
    let shards = w.into_shards(2).unwrap();
    for (no, shard) in shards.iter().enumerate() {
        shard
            .write_file(root.join(Writer::shard_path("split", no, 2)))
            .unwrap();
    }
    let tls = servers::make_tls(&dir);
    let nginx = servers::Nginx::start(&dir, &root, &tls);

    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("sample.gguf", vec![]),
        ("sample.gguf", vec!["--json"]),
        ("sample.gguf", vec!["--tensors"]),
        ("sample.gguf", vec!["--json", "--tensors"]),
        ("sample.gguf", vec!["--metadata", "general.architecture"]),
        (
            "sample.gguf",
            vec!["--json", "--metadata", "tokenizer.ggml.tokens"],
        ),
        ("sample.gguf", vec!["--hash"]),
        ("sample.gguf", vec!["--verify"]),
        ("nan-scale.gguf", vec!["--verify"]),
        ("split-00002-of-00002.gguf", vec![]),
        ("split-00002-of-00002.gguf", vec!["--json"]),
        ("split-00001-of-00002.gguf", vec!["--hash"]),
        ("split-00002-of-00002.gguf", vec!["--verify"]),
    ];
    for (name, args) in &cases {
        let path = root.join(name);
        let url = nginx.url(&format!("m/{name}"));
        let code = i32::from(*name == "nan-scale.gguf");
        let by_path = expect(&[args.clone(), vec![path.to_str().unwrap()]].concat(), code);
        if code == 1 {
            let text = String::from_utf8_lossy(&by_path.stdout);
            assert!(
                text.contains("FAILED  tensor blk.0.attn_q.weight: bad values: ")
                    && text.contains("block 3's d is NaN"),
                "{}",
                show(&by_path)
            );
        }
        nginx.clear_log();
        let by_url = expect(&[args.clone(), vec![url.as_str()]].concat(), code);
        let want_err = String::from_utf8(by_path.stderr.clone())
            .unwrap()
            .replace(&path.display().to_string(), &url);
        assert_eq!(
            String::from_utf8_lossy(&by_url.stderr),
            want_err,
            "{args:?} {url}\n{}",
            show(&by_url)
        );
        // The outputs differ only where they name the file (each shard's, for split models).
        let mut want = String::from_utf8(by_path.stdout).unwrap();
        for no in 0..2 {
            let shard = Writer::shard_path("split", no, 2);
            want = want.replace(
                &root.join(&shard).display().to_string(),
                &nginx.url(&format!("m/{shard}")),
            );
        }
        want = want.replace(&path.display().to_string(), &url);
        let got = String::from_utf8(by_url.stdout).unwrap();
        assert_eq!(got, want, "gguf-inspect {args:?} {url}");
        // Only ranges were asked for; the dumps read no tensor data.
        let log = nginx.log();
        assert!(log.iter().all(|l| l.status == 206), "{args:?}: {log:?}");
        let reads_data = args.iter().any(|a| *a == "--hash" || *a == "--verify");
        if !reads_data {
            let sent: u64 = log.iter().map(|l| l.bytes).sum();
            let data: u64 = shards_data_bytes(&root, name);
            let size = std::fs::metadata(&path).unwrap().len();
            assert!(
                sent <= size - data || sent <= 256 * 1024,
                "{args:?}: {sent} bytes sent for a file of {size} with {data} of data"
            );
        }
    }

    // --check against the manifest --hash wrote for the file.
    let manifest = dir.join("sample.manifest");
    let out = expect(&["--hash", root.join("sample.gguf").to_str().unwrap()], 0);
    std::fs::write(&manifest, &out.stdout).unwrap();
    let url = nginx.url("m/sample.gguf");
    let out = expect(&["--check", manifest.to_str().unwrap(), url.as_str()], 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("OK"),
        "{}",
        show(&out)
    );

    // A URL that fails names it, and exits 1.
    let missing = nginx.url("m/missing.gguf");
    let out = expect(&[missing.as_str()], 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&missing) && err.contains("HTTP 404"), "{err}");

    // The bearer token comes from $GGUF_BEARER_TOKEN.
    let gated = nginx.url("gated/sample.gguf");
    expect(&["--tensors", gated.as_str()], 1);
    let out = Command::new(inspector())
        .args(["--tensors", gated.as_str()])
        .env("GGUF_BEARER_TOKEN", servers::TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

/// The bytes of tensor data in the file `name` under `root`.
#[cfg(feature = "net")]
fn shards_data_bytes(root: &Path, name: &str) -> u64 {
    let f = MappedFile::open(root.join(name)).unwrap();
    f.tensors().map(|t| t.size).sum()
}

// ------------------------------------------------------------------------------------------------
// The tokenizer: --tokenize and --detokenize.
// ------------------------------------------------------------------------------------------------

#[test]
fn tokenize_and_detokenize_print_llama_cpp_s_tokens_and_text() {
    let vocab = common::llama_src_dir().join("models/ggml-vocab-llama-spm.gguf");
    let v = vocab.as_os_str();
    // BOS added, "<s>" read as the special token, pieces quoted and escaped.
    let out = expect(
        &[OsStr::new("--tokenize"), "Hello <s>world\x01".as_ref(), v],
        0,
    );
    assert!(out.stderr.is_empty(), "{}", show(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "1\t'<s>'\n15043\t' Hello'\n29871\t' '\n1\t'<s>'\n3186\t' world'\n4\t'\\x01'\n"
    );
    let out = expect(&[OsStr::new("--detokenize"), "1,15043 3186".as_ref(), v], 0);
    assert_eq!(out.stdout, b"<s> Hello world\n");
    let out = expect(&[OsStr::new("--detokenize=15043,,3186"), v], 0);
    assert_eq!(out.stdout, b"Hello world\n");
    // No ids: an empty line, nothing written from a text that is not there (UBSan checks the
    // call).
    for ids in ["", " ,"] {
        let out = expect(&[OsStr::new("--detokenize"), ids.as_ref(), v], 0);
        assert_eq!(out.stdout, b"\n", "{ids:?}: {}", show(&out));
        assert!(out.stderr.is_empty(), "{ids:?}: {}", show(&out));
    }

    // An id outside the vocabulary, and a file without one: exit status 1, the reason.
    let out = expect(&[OsStr::new("--detokenize"), "1,32000".as_ref(), v], 1);
    assert!(out.stdout.is_empty(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("token id 32000 is not in the vocabulary"),
        "{stderr}"
    );
    let mut w = Writer::new();
    w.add_metadata("general.name", MetadataValue::string("no vocabulary"))
        .unwrap();
    let bare = scratch_file("no_vocab.gguf", &w.header_bytes().unwrap());
    let out = expect(
        &[OsStr::new("--tokenize"), "hi".as_ref(), bare.as_os_str()],
        1,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no tokenizer (key tokenizer.ggml.model)"),
        "{stderr}"
    );

    // Bad usage.
    let exe = inspector().display().to_string();
    let line = bad_usage_line(&inspect(&["--detokenize".as_ref(), "1,x".as_ref(), v]));
    assert_eq!(
        line,
        format!(
            "{exe}: --detokenize takes token ids separated by commas or spaces, not '1,x' (see {exe} --help)\n"
        )
    );
    bad_usage_line(&inspect(&["--tokenize".as_ref(), "hi".as_ref()]));
    bad_usage_line(&inspect(&["--tokenize".as_ref()]));
    bad_usage_line(&inspect(&["--json".as_ref(), "--tokenize=hi".as_ref(), v]));
    bad_usage_line(&inspect(&[
        "--tokenize=a".as_ref(),
        "--detokenize=1".as_ref(),
        v,
    ]));
}

// ------------------------------------------------------------------------------------------------
// --memory: the memory llama.cpp needs, as `gguf::memory::estimate` gives it.
// ------------------------------------------------------------------------------------------------

/// A llama-shaped model as a sparse file: 4 layers, width 256, 8 query heads of 32 and 2 KV
/// heads, 1000 dummy tokens, a training context of 4096 (or `arch` for another
/// architecture).
fn memory_model(path: &Path, arch: &str) {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", s(arch)).unwrap();
    w.add_metadata("tokenizer.ggml.model", s("none")).unwrap();
    for (k, v) in [
        ("vocab_size", 1000),
        ("block_count", 4),
        ("embedding_length", 256),
        ("context_length", 4096),
        ("feed_forward_length", 512),
        ("attention.head_count", 8),
        ("attention.head_count_kv", 2),
    ] {
        w.add_metadata(format!("{arch}.{k}"), MetadataValue::U32(v))
            .unwrap();
    }
    let mut t = |name: String, dims: &[u64]| {
        w.add_tensor_info(name, dims, DataType::F16).unwrap();
    };
    t("token_embd.weight".into(), &[256, 1000]);
    t("output_norm.weight".into(), &[256]);
    for i in 0..4 {
        for (n, d) in [
            ("attn_norm", &[256u64][..]),
            ("attn_q", &[256, 256]),
            ("attn_k", &[256, 64]),
            ("attn_v", &[256, 64]),
            ("attn_output", &[256, 256]),
            ("ffn_norm", &[256]),
            ("ffn_gate", &[256, 512]),
            ("ffn_down", &[512, 256]),
            ("ffn_up", &[256, 512]),
        ] {
            t(format!("blk.{i}.{n}.weight"), d);
        }
    }
    let header = w.header_bytes().unwrap();
    let last = w.tensor_count() - 1;
    let end = w.tensor_offsets().unwrap()[last] + w.tensor_size(last).unwrap();
    std::fs::write(path, &header).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(header.len() as u64 + end).unwrap();
}

#[test]
fn memory_prints_the_estimate_as_a_table_and_as_json() {
    use gguf::memory::{estimate, MemoryParams};
    let dir = work_dir("memory");
    let path = dir.join("llama.gguf");
    memory_model(&path, "llama");
    let model = gguf::Model::open(&path, gguf::OpenOptions::default()).unwrap();
    for ctx in [None, Some(1000u32), Some(100_000)] {
        let p = MemoryParams {
            n_ctx: ctx.unwrap_or(0),
            ..MemoryParams::default()
        };
        let e = estimate(&model, &p).unwrap();
        let mut args: Vec<OsString> = vec!["--memory".into()];
        if let Some(n) = ctx {
            args.extend(["--ctx".into(), n.to_string().into()]);
        }
        args.push(path.clone().into());
        let out = expect(&args, 0);
        let text = String::from_utf8(out.stdout).unwrap();
        let mut want = format!(
            "context: {} tokens ({} per sequence, micro-batch {})\n",
            e.n_ctx, e.n_ctx_seq, e.n_ubatch
        );
        for (name, n) in [
            ("weights", e.weights),
            ("weights_mapped", e.weights_mapped),
            ("k", e.k),
            ("v", e.v),
            ("recurrent", e.recurrent),
            ("output", e.output),
            ("compute", e.compute),
            ("total", e.total),
        ] {
            let units = in_units(n);
            let units = if units.is_empty() {
                units
            } else {
                format!(" ({units})")
            };
            want += &format!("{name:<14} {n:>20}{units}\n");
        }
        assert_eq!(text, want);

        args.insert(0, "--json".into());
        let j = parse_json(&expect(&args, 0).stdout);
        assert_eq!(
            j,
            json!({
                "n_ctx": e.n_ctx, "n_ctx_seq": e.n_ctx_seq, "n_ctx_swa": e.n_ctx_swa,
                "n_ubatch": e.n_ubatch, "weights": e.weights,
                "weights_mapped": e.weights_mapped, "k": e.k, "v": e.v,
                "recurrent": e.recurrent, "output": e.output, "compute": e.compute,
                "total": e.total
            })
        );
    }
    // 0 is the training context; 100000 goes past it.
    let j = parse_json(&expect(&["--json", "--memory", path.to_str().unwrap()], 0).stdout);
    assert_eq!(j["n_ctx"], 4096);

    // An architecture whose rules are not known: named, exit status 1.
    let other = dir.join("other.gguf");
    memory_model(&other, "nosucharch");
    let out = expect(&[OsStr::new("--memory"), other.as_os_str()], 1);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("'nosucharch'"),
        "{}",
        show(&out)
    );
    // Bad usage.
    for args in [
        &["--ctx", "5", "x.gguf"][..],
        &["--memory", "--ctx", "-1", "x.gguf"],
        &["--memory", "--ctx", "5000000000", "x.gguf"],
        &["--memory", "--ctx"],
        &["--memory", "--tensors", "x.gguf"],
    ] {
        expect(args, 2);
    }
}

/// Runs the inspector with `stdin` as its standard input.
fn inspect_with_input(args: &[&OsStr], stdin: &[u8]) -> Output {
    use std::io::Write;
    let exe = inspector();
    let mut child = Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn chat_prints_the_prompt_and_its_tokens() {
    let path = common::llama_src_dir().join("models/ggml-vocab-command-r.gguf");
    let file = gguf::GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let request = br#"{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|END_OF_TURN_TOKEN|>"}], "add_generation_prompt": true}"#;
    let want = gguf::chat::render_file(&file, None, request).unwrap();
    let out = inspect_with_input(&[OsStr::new("--chat"), path.as_os_str()], request);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);

    // The tokens: special-token text read as those tokens, nothing added.
    let tok = gguf::tokenizer::Tokenizer::from_file(&file).unwrap();
    let ids = tok.tokenize(want.as_bytes(), false, true);
    let out = inspect_with_input(&[OsStr::new("--chat-tokens"), path.as_os_str()], request);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let printed: Vec<i32> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(printed, ids);

    // A named template, and one the file does not have.
    let named = gguf::chat::render_file(&file, Some("rag"), br#"{"messages": [{"role": "user", "content": "q"}], "documents": [{"title": "t", "text": "x"}]}"#).unwrap();
    let out = inspect_with_input(
        &[OsStr::new("--chat"), OsStr::new("--template"), OsStr::new("rag"), path.as_os_str()],
        br#"{"messages": [{"role": "user", "content": "q"}], "documents": [{"title": "t", "text": "x"}]}"#,
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), named);
    let out = inspect_with_input(
        &[
            OsStr::new("--chat"),
            OsStr::new("--template=nope"),
            path.as_os_str(),
        ],
        request,
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokenizer.chat_template.nope"));
    // A malformed request: the offset in the message, exit status 1.
    let out = inspect_with_input(
        &[OsStr::new("--chat"), path.as_os_str()],
        b"{\"messages\": [}",
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the request, byte 14"),
        "{}",
        show(&out)
    );
    // As llama-server renders it.
    let want = gguf::chat::render_file_llama_cpp(&file, None, request).unwrap();
    let out = inspect_with_input(
        &[
            OsStr::new("--chat"),
            OsStr::new("--llama-cpp"),
            path.as_os_str(),
        ],
        request,
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
    // --template without --chat is bad usage.
    let out = inspect_with_input(
        &[OsStr::new("--template"), OsStr::new("x"), path.as_os_str()],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}
