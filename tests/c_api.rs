//! The C test suite (`c_tests/*.c`), driven from `cargo test`.
//!
//! 1. `cargo build --lib` in this test's profile, because `cargo test` builds only the rlib and
//!    would leave a stale `libgguf.so` / `libgguf.a` behind.
//! 2. Fixture files written with [`gguf::Writer`] (plus a few byte-patched broken ones) into
//!    `CARGO_TARGET_TMPDIR`. `c_tests/README.md` lists what each holds; the C programs hard-code
//!    the same values, so a change here must be mirrored there.
//! 3. Each C program (with `c_tests/check.h`, the helpers they share) compiled with ASan and
//!    UBSan, once against the shared library and once
//!    against the static one, then run with every fixture path as an argument. One `#[test]` per
//!    program.
//! 4. Each C program compiled without sanitizers and run under valgrind memcheck, which must
//!    report no error and no leaked byte (definitely, indirectly or possibly lost) after
//!    `gguf_close`. One `#[test]` per program.
//!
//! For another target (`tools/cross.sh`) the programs are built with its C compiler
//! (`$GGUF_TEST_CC`) without sanitizers, which the cross compilers and emulators lack, and run
//! with its runner (`$GGUF_TEST_RUNNER`); for Windows the script builds them ahead
//! (`$GGUF_TEST_C_PROGRAMS`). The valgrind tests stay on the host.

mod common;

use common::golden::fnv1a64;
use common::{compile_c_program, manifest_dir, show, target_command, Link};
use gguf::{ByteOrder, DataType, MetadataValue, ValueType, Writer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------------
// Fixtures. c_tests/README.md describes them; the C programs check these exact values.

/// Byte `j` of tensor `k`'s data (the C programs recompute it).
fn pattern(k: usize, j: usize) -> u8 {
    (k * 37 + j * 11 + 1) as u8
}

fn metadata() -> Vec<(&'static [u8], MetadataValue)> {
    use MetadataValue::*;
    let strings = |items: &[&[u8]]| {
        Array(
            ValueType::String,
            items.iter().map(MetadataValue::string).collect(),
        )
    };
    vec![
        (b"general.architecture", MetadataValue::string("llama")),
        (b"general.name", MetadataValue::string("tiny test model")),
        (b"test.u8", U8(200)),
        (b"test.i8", I8(-5)),
        (b"test.u16", U16(65000)),
        (b"test.i16", I16(-30000)),
        (b"test.u32", U32(4_000_000_000)),
        (b"test.i32", I32(-2_000_000_000)),
        (b"test.f32", F32(1.5)),
        (b"test.bool_true", Bool(true)),
        (b"test.bool_false", Bool(false)),
        (b"test.u64", U64(u64::MAX - 1)),
        (b"test.i64", I64(i64::MIN + 1)),
        (b"test.f64", F64(-2.25)),
        (
            b"test.string",
            MetadataValue::string(b"h\xc3\xa9llo\0world"),
        ),
        (b"test.empty_string", MetadataValue::string("")),
        (b"key\0tail", U32(7)),
        (
            b"tokenizer.ggml.tokens",
            strings(&[b"<s>", b"", b"h\xc3\xa9llo", b"a\0b", b"</s>"]),
        ),
        (
            b"tokenizer.ggml.scores",
            Array(
                ValueType::Float32,
                vec![F32(0.5), F32(-1.0), F32(3.25), F32(0.0), F32(100.0)],
            ),
        ),
        (
            b"tokenizer.ggml.token_type",
            Array(
                ValueType::Int32,
                vec![I32(1), I32(-3), I32(i32::MAX), I32(i32::MIN), I32(0)],
            ),
        ),
        (
            b"arr.u8",
            Array(ValueType::Uint8, vec![U8(0), U8(1), U8(255)]),
        ),
        (
            b"arr.i8",
            Array(ValueType::Int8, vec![I8(-128), I8(0), I8(127)]),
        ),
        (
            b"arr.u16",
            Array(ValueType::Uint16, vec![U16(0), U16(65535), U16(1234)]),
        ),
        (
            b"arr.i16",
            Array(ValueType::Int16, vec![I16(-32768), I16(32767), I16(-1)]),
        ),
        (
            b"arr.u32",
            Array(
                ValueType::Uint32,
                vec![U32(0), U32(u32::MAX), U32(123_456_789)],
            ),
        ),
        (
            b"arr.u64",
            Array(ValueType::Uint64, vec![U64(0), U64(u64::MAX), U64(1 << 40)]),
        ),
        (
            b"arr.i64",
            Array(
                ValueType::Int64,
                vec![I64(i64::MIN), I64(i64::MAX), I64(-1)],
            ),
        ),
        (
            b"arr.f64",
            Array(ValueType::Float64, vec![F64(1.5), F64(-0.125), F64(1e300)]),
        ),
        (
            b"arr.bool",
            Array(ValueType::Bool, vec![Bool(true), Bool(false), Bool(true)]),
        ),
        (b"arr.empty_f32", Array(ValueType::Float32, vec![])),
        (b"arr.empty_string", Array(ValueType::String, vec![])),
        (
            b"arr.nested",
            Array(
                ValueType::Array,
                vec![
                    Array(ValueType::Uint16, vec![U16(1), U16(2)]),
                    strings(&[b"x"]),
                ],
            ),
        ),
    ]
}

fn tensors() -> Vec<(&'static [u8], Vec<u64>, DataType)> {
    vec![
        (b"token_embd.weight", vec![4, 3], DataType::F32),
        (b"blk.0.attn_q.weight", vec![64, 2], DataType::Q4_0),
        (b"blk.0.ffn_down.weight", vec![256, 2], DataType::Q4_K),
        (b"scalar", vec![], DataType::F16),
        (b"empty", vec![0, 5], DataType::F32),
        (b"four_d", vec![2, 3, 4, 5], DataType::I8),
        (b"nul\0name", vec![3], DataType::I32),
        (b"output_norm.weight", vec![7], DataType::F32),
    ]
}

/// The model every valid fixture holds, in the given version, byte order and alignment.
fn model(version: u32, order: ByteOrder, alignment: Option<u32>) -> Vec<u8> {
    let mut w = Writer::new();
    w.set_version(version).unwrap().set_byte_order(order);
    for (key, value) in metadata() {
        w.add_metadata(key, value).unwrap();
    }
    if let Some(a) = alignment {
        w.set_alignment(a).unwrap();
    }
    for (k, (name, dims, dtype)) in tensors().into_iter().enumerate() {
        let size = dtype.tensor_bytes(&dims).unwrap() as usize;
        let data = (0..size).map(|j| pattern(k, j)).collect();
        w.add_tensor(name, &dims, dtype, data).unwrap();
    }
    w.to_bytes().unwrap()
}

fn patched(mut bytes: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    bytes[at..at + with.len()].copy_from_slice(with);
    bytes
}

fn small(build: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    build(&mut w);
    w.to_bytes().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Engine fixtures: a model to plan uploads over, and split models (whole and broken).

/// The 40 tensors of `plan.gguf`: `plan.00` to `plan.39`, of varied types and sizes (17 bytes
/// to 3 MB, about 9 MiB in all). `plan.05` (1.5 MB) and `plan.29` (3 MB) exceed 1 MiB;
/// `plan.12` is empty; `plan.23` (1 040 000 bytes) fits 1 MiB only when its pages do.
fn plan_tensors() -> Vec<(String, Vec<u64>, DataType)> {
    (0..40u64)
        .map(|k| {
            let bytes = match k {
                5 => 1_500_000,
                23 => 1_040_000,
                29 => 3_000_000,
                _ => k * 2_654_435_761 % 240_000 + 17,
            };
            let (dims, dtype) = match k {
                12 => (vec![0, 4], DataType::F32),
                _ => match k % 5 {
                    0 => (vec![bytes], DataType::I8),
                    1 => (vec![bytes / 2], DataType::F16),
                    2 => (vec![bytes / 12, 3], DataType::F32),
                    3 => (vec![32 * (bytes / 18).max(1)], DataType::Q4_0),
                    _ => (vec![256 * (bytes / 144).max(1), 1], DataType::Q4_K),
                },
            };
            (format!("plan.{k:02}"), dims, dtype)
        })
        .collect()
}

/// `plan.gguf` (its data section deliberately not page-aligned) and `plan.digests`, one line
/// `NAME SIZE FNV1A64` per tensor, in file order.
fn plan_model() -> (Vec<u8>, Vec<u8>) {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    w.add_metadata("general.name", MetadataValue::string("upload plan model"))
        .unwrap();
    let mut digests = String::new();
    for (k, (name, dims, dtype)) in plan_tensors().into_iter().enumerate() {
        let size = dtype.tensor_bytes(&dims).unwrap() as usize;
        let data: Vec<u8> = (0..size).map(|j| pattern(k, j)).collect();
        // FNV-1a, 64 bits: the digest `test_plan_pinned.c` computes over each tensor it copies.
        let digest = fnv1a64(data.iter().copied());
        digests.push_str(&format!("{name} {size} {digest:016x}\n"));
        w.add_tensor(&name, &dims, dtype, data).unwrap();
    }
    let header = w.header_bytes().unwrap().len();
    assert!(
        header % 4096 != 0 && header % 16384 != 0,
        "plan.gguf's data section must not start on a page ({header})"
    );
    (w.to_bytes().unwrap(), digests.into_bytes())
}

/// Byte `j` of tensor `k` of the split fixtures (`k` counts across shards).
fn split_pattern(k: usize, j: usize) -> u8 {
    (k * 53 + j * 7 + 3) as u8
}

/// The split model: 3 metadata entries and 13 tensors `split.00` to `split.12`, I8 of
/// `1000 + 4099 k` bytes (`split.09` is 200 000 bytes), in shards of 3 tensors (5 shards).
fn split_model() -> Writer {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    w.add_metadata("general.name", MetadataValue::string("split test model"))
        .unwrap();
    w.add_metadata("test.u32", MetadataValue::U32(77)).unwrap();
    for k in 0..13 {
        let size = if k == 9 { 200_000 } else { 1000 + 4099 * k };
        let data = (0..size).map(|j| split_pattern(k, j)).collect();
        w.add_tensor(format!("split.{k:02}"), &[size as u64], DataType::I8, data)
            .unwrap();
    }
    w
}

/// A model of `n` small I8 tensors named `{stem}.{k}`, split `per_shard` to a shard.
fn small_split(stem: &str, n: usize, per_shard: usize) -> Vec<Writer> {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    for k in 0..n {
        let data = (0..64).map(|j| split_pattern(k, j)).collect();
        w.add_tensor(format!("{stem}.{k}"), &[64], DataType::I8, data)
            .unwrap();
    }
    w.into_shards(per_shard).unwrap()
}

/// Each shard's file name (`prefix-0000i-of-0000N.gguf`) and bytes, leaving out shard `skip`.
fn shard_files(prefix: &str, shards: &[Writer], skip: Option<usize>) -> Vec<(String, Vec<u8>)> {
    shards
        .iter()
        .enumerate()
        .filter(|&(no, _)| Some(no) != skip)
        .map(|(no, s)| {
            (
                Writer::shard_path(prefix, no, shards.len()),
                s.to_bytes().unwrap(),
            )
        })
        .collect()
}

/// The fixtures of the engine programs (c_tests/README.md lists them).
fn engine_fixtures() -> Vec<(String, Vec<u8>)> {
    let (plan, digests) = plan_model();
    let mut files = vec![
        ("plan.gguf".to_string(), plan),
        ("plan.digests".to_string(), digests),
    ];
    files.extend(shard_files(
        "split",
        &split_model().into_shards(3).unwrap(),
        None,
    ));
    // Shard 2 of 3 is missing.
    files.extend(shard_files("missing", &small_split("m", 6, 2), Some(1)));
    // Shard 3 of 3 says there are 4.
    let mut badcount = small_split("c", 6, 2);
    badcount[2]
        .set_metadata("split.count", MetadataValue::U16(4))
        .unwrap();
    files.extend(shard_files("badcount", &badcount, None));
    // Shard 2 of 2 says the model has 5 tensors; it has 4.
    let mut badtensors = small_split("t", 4, 2);
    badtensors[1]
        .set_metadata("split.tensors.count", MetadataValue::I32(5))
        .unwrap();
    files.extend(shard_files("badtensors", &badtensors, None));
    // Both shards hold `dup.weight` (written by hand: one Writer refuses a duplicate name).
    let dup: Vec<Writer> = (0..2u8)
        .map(|no| {
            let mut w = Writer::new();
            w.add_metadata("split.no", MetadataValue::U16(no.into()))
                .unwrap();
            w.add_metadata("split.count", MetadataValue::U16(2))
                .unwrap();
            w.add_metadata("split.tensors.count", MetadataValue::I32(4))
                .unwrap();
            w.add_tensor(format!("own.{no}"), &[4], DataType::I8, vec![no; 4])
                .unwrap();
            w.add_tensor("dup.weight", &[4], DataType::I8, vec![8 + no; 4])
                .unwrap();
            w
        })
        .collect();
    files.extend(shard_files("dup", &dup, None));
    // Shard 1 of 2 under a name that does not follow the pattern.
    let renamed = small_split("r", 4, 2);
    files.push(("renamed.gguf".to_string(), renamed[0].to_bytes().unwrap()));
    files
}

/// A vocabulary with chat templates (`chat.gguf`, test_chat.c): tokens `<unk>`, `<s>`, `</s>`
/// (BOS 1, EOS 2); `tokenizer.chat_template` writes BOS, then each message as `ROLE: CONTENT\n`
/// (`<|assistant|>` after, with add_generation_prompt); `tokenizer.chat_template.shout` writes
/// the contents upper-cased; `tokenizer.chat_templates` names `shout`.
fn chat_fixture() -> Vec<u8> {
    small(|w| {
        let strings = |items: &[&str]| {
            MetadataValue::Array(
                ValueType::String,
                items.iter().map(MetadataValue::string).collect(),
            )
        };
        w.add_metadata("tokenizer.ggml.model", MetadataValue::string("llama"))
            .unwrap();
        w.add_metadata("tokenizer.ggml.tokens", strings(&["<unk>", "<s>", "</s>"]))
            .unwrap();
        w.add_metadata("tokenizer.ggml.bos_token_id", MetadataValue::U32(1))
            .unwrap();
        w.add_metadata("tokenizer.ggml.eos_token_id", MetadataValue::U32(2))
            .unwrap();
        w.add_metadata(
            "tokenizer.chat_template",
            MetadataValue::string(
                "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}\
                 {% if add_generation_prompt %}<|assistant|>{% endif %}",
            ),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.chat_template.shout",
            MetadataValue::string("{% for m in messages %}{{ m.content.upper() }}{% endfor %}"),
        )
        .unwrap();
        w.add_metadata("tokenizer.chat_templates", strings(&["shout"]))
            .unwrap();
    })
}

/// Writes every fixture (once per test process) and returns their paths.
/// A small SentencePiece vocabulary (`vocab_spm.gguf`, test_tokenizer.c): `<unk>`, `<s>`,
/// `</s>`, the 256 byte tokens (3 to 258), then `▁` (259), `▁H` (260), `▁He` (261), `▁Hel`
/// (262), `▁Hell` (263), `▁Hello` (264), each scored below the one before; and a copy whose
/// BOS id is past the vocabulary (`vocab_bad_bos.gguf`).
fn vocab_fixture(bos: u32) -> Vec<u8> {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec(), b"<s>".to_vec(), b"</s>".to_vec()];
    let mut types = vec![2, 3, 3];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>").into_bytes());
        types.push(6);
    }
    for t in [
        "\u{2581}",
        "\u{2581}H",
        "\u{2581}He",
        "\u{2581}Hel",
        "\u{2581}Hell",
        "\u{2581}Hello",
    ] {
        tokens.push(t.as_bytes().to_vec());
        types.push(1);
    }
    let n = tokens.len();
    let scores: Vec<MetadataValue> = (0..n).map(|i| MetadataValue::F32(-(i as f32))).collect();
    small(|w| {
        w.add_metadata("tokenizer.ggml.model", MetadataValue::string("llama"))
            .unwrap();
        w.add_metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(
                ValueType::String,
                tokens.into_iter().map(MetadataValue::String).collect(),
            ),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.ggml.scores",
            MetadataValue::Array(ValueType::Float32, scores),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.ggml.token_type",
            MetadataValue::Array(
                ValueType::Int32,
                types.into_iter().map(MetadataValue::I32).collect(),
            ),
        )
        .unwrap();
        w.add_metadata("tokenizer.ggml.bos_token_id", MetadataValue::U32(bos))
            .unwrap();
    })
}

/// A llama-shaped model for `test_memory.c`: 2 layers, width 64, 2 query heads of 32 and 1 KV
/// head, feed-forward 128, 100 dummy tokens, a 1024-token training context; zero weights.
fn memory_fixture(arch: &str) -> Vec<u8> {
    small(|w| {
        w.add_metadata("general.architecture", MetadataValue::string(arch))
            .unwrap();
        w.add_metadata("tokenizer.ggml.model", MetadataValue::string("none"))
            .unwrap();
        for (k, v) in [
            ("vocab_size", 100),
            ("block_count", 2),
            ("embedding_length", 64),
            ("context_length", 1024),
            ("feed_forward_length", 128),
            ("attention.head_count", 2),
            ("attention.head_count_kv", 1),
        ] {
            w.add_metadata(format!("{arch}.{k}"), MetadataValue::U32(v))
                .unwrap();
        }
        let mut t = |name: &str, dims: &[u64]| {
            let n: u64 = dims.iter().product();
            w.add_tensor(name, dims, DataType::F32, vec![0; n as usize * 4])
                .unwrap();
        };
        t("token_embd.weight", &[64, 100]);
        t("output_norm.weight", &[64]);
        for i in 0..2 {
            t(&format!("blk.{i}.attn_norm.weight"), &[64]);
            t(&format!("blk.{i}.attn_q.weight"), &[64, 64]);
            t(&format!("blk.{i}.attn_k.weight"), &[64, 32]);
            t(&format!("blk.{i}.attn_v.weight"), &[64, 32]);
            t(&format!("blk.{i}.attn_output.weight"), &[64, 64]);
            t(&format!("blk.{i}.ffn_norm.weight"), &[64]);
            t(&format!("blk.{i}.ffn_gate.weight"), &[64, 128]);
            t(&format!("blk.{i}.ffn_down.weight"), &[128, 64]);
            t(&format!("blk.{i}.ffn_up.weight"), &[64, 128]);
        }
    })
}

fn fixtures() -> &'static [PathBuf] {
    static PATHS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    PATHS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_api/fixtures");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(dir.join("a_directory.gguf")).unwrap();
        let full = model(3, ByteOrder::Little, None);
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("full.gguf", full.clone()),
            ("big.gguf", model(3, ByteOrder::Big, None)),
            ("v2.gguf", model(2, ByteOrder::Little, None)),
            ("v1.gguf", model(1, ByteOrder::Little, None)),
            ("v1big.gguf", model(1, ByteOrder::Big, None)),
            ("align.gguf", model(3, ByteOrder::Little, Some(256))),
            ("empty.gguf", small(|_| {})),
            ("vocab_spm.gguf", vocab_fixture(1)),
            ("vocab_bad_bos.gguf", vocab_fixture(100_000)),
            ("chat.gguf", chat_fixture()),
            ("memory_llama.gguf", memory_fixture("llama")),
            ("memory_unknown.gguf", memory_fixture("no-such-arch")),
            // Broken files; the offsets in the comments are where the C tests expect the error.
            ("not_gguf.txt", b"this is not a GGUF file\n".to_vec()),
            ("zero.bin", Vec::new()),
            // Version 4 at offset 4.
            (
                "bad_version.gguf",
                patched(full.clone(), 4, &4u32.to_le_bytes()),
            ),
            // The model cut at 40 bytes: 8 tensor infos (count at 8) cannot fit in 16 bytes.
            ("cut_model.gguf", full[..40].to_vec()),
            // One STRING "general.name" = "tiny test model" (length at 48, bytes from 56 to 71)
            // cut at 60.
            (
                "truncated.gguf",
                small(|w| {
                    w.add_metadata("general.name", MetadataValue::string("tiny test model"))
                        .unwrap();
                })[..60]
                    .to_vec(),
            ),
            // One BOOL "b": its byte, at 37, patched to 2.
            (
                "bad_bool.gguf",
                patched(
                    small(|w| {
                        w.add_metadata("b", MetadataValue::Bool(true)).unwrap();
                    }),
                    37,
                    &[2],
                ),
            ),
            // Keys "ka" (entry at 24) and "kb" (entry at 39, its bytes at 47), patched to "ka".
            (
                "dup_key.gguf",
                patched(
                    small(|w| {
                        w.add_metadata("ka", MetadataValue::U8(1)).unwrap();
                        w.add_metadata("kb", MetadataValue::U8(2)).unwrap();
                    }),
                    48,
                    b"a",
                ),
            ),
            // One F32 tensor "t" [1]: its type, at 45, patched to 4 (removed from ggml).
            (
                "bad_dtype.gguf",
                patched(
                    small(|w| {
                        w.add_tensor("t", &[1], DataType::F32, vec![0; 4]).unwrap();
                    }),
                    45,
                    &4u32.to_le_bytes(),
                ),
            ),
        ];
        let files = files
            .into_iter()
            .map(|(name, bytes)| (name.to_string(), bytes))
            .chain(engine_fixtures());
        let mut paths = vec![dir.join("a_directory.gguf")];
        // A FIFO nobody writes to: opening it must not block (test_errors.c).
        #[cfg(unix)]
        {
            let fifo = dir.join("a_fifo.gguf");
            let _ = std::fs::remove_file(&fifo);
            let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0, "mkfifo");
            paths.push(fifo);
        }
        for (name, bytes) in files {
            let path = dir.join(&name);
            // Written aside then renamed, so that a concurrent test run never reads half a file.
            let part = dir.join(format!(".{name}.{}", std::process::id()));
            std::fs::write(&part, bytes).unwrap();
            std::fs::rename(&part, &path).unwrap();
            paths.push(path);
        }
        paths.push(dir.join("does_not_exist.gguf"));
        let _ = std::fs::remove_file(dir.join("does_not_exist.gguf"));
        // The shard the `missing` set lacks.
        let _ = std::fs::remove_file(dir.join("missing-00002-of-00003.gguf"));
        paths
    })
}

// ---------------------------------------------------------------------------------------------
// Compiling and running the C programs.

fn run_c_test(program: &str) {
    let fixtures = fixtures();
    for link in [Link::Shared, Link::Static] {
        let exe = compile_c_program("c_api", program, link);
        let output = target_command(&exe)
            .args(fixtures)
            .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
            .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
        assert!(
            output.status.success(),
            "{program} ({link:?} link) failed\n{}",
            show(&output)
        );
    }
}

/// Runs `program` under valgrind memcheck: no error, and no byte definitely, indirectly or
/// possibly lost. (Still-reachable blocks are the C runtime's and the thread-local error
/// record of the main thread, which the C runtime never tears down; `c_tests/valgrind.supp`
/// names the once-per-process tables valgrind counts as possibly lost.)
fn run_valgrind(program: &str) {
    let exe = compile_c_program("c_api", program, Link::Plain);
    let output = Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=99",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--track-origins=yes",
            "--quiet",
        ])
        .arg(format!(
            "--suppressions={}",
            common::manifest_dir()
                .join("c_tests/valgrind.supp")
                .display()
        ))
        .arg(&exe)
        .args(fixtures())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run valgrind (install it: apt-get install valgrind): {e}")
        });
    assert!(
        output.status.success(),
        "{program} under valgrind failed\n{}",
        show(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("definitely lost") && !stderr.contains("Invalid"),
        "{program} under valgrind reported problems\n{stderr}"
    );
}

#[test]
fn valgrind_open() {
    run_valgrind("test_open");
}

#[test]
fn valgrind_metadata() {
    run_valgrind("test_metadata");
}

#[test]
fn valgrind_arrays() {
    run_valgrind("test_arrays");
}

#[test]
fn valgrind_tensors() {
    run_valgrind("test_tensors");
}

#[test]
fn valgrind_errors() {
    run_valgrind("test_errors");
}

#[test]
fn valgrind_threads() {
    run_valgrind("test_threads");
}

#[test]
fn valgrind_plan_metal() {
    run_valgrind("test_plan_metal");
}

#[test]
fn valgrind_plan_pinned() {
    run_valgrind("test_plan_pinned");
}

#[test]
fn valgrind_shards() {
    run_valgrind("test_shards");
}

#[test]
fn valgrind_writer() {
    run_valgrind("test_writer");
}

#[test]
fn valgrind_digest() {
    run_valgrind("test_digest");
}

#[test]
fn valgrind_values() {
    run_valgrind("test_values");
}

#[test]
fn valgrind_validate() {
    run_valgrind("test_validate");
}

#[test]
fn valgrind_quantize() {
    run_valgrind("test_quantize");
}

#[test]
fn valgrind_requantize() {
    run_valgrind("test_requantize");
}

#[test]
fn valgrind_sources() {
    run_valgrind("test_sources");
}

#[test]
fn valgrind_reads() {
    run_valgrind("test_reads");
}

#[test]
fn c_test_sources() {
    run_c_test("test_sources");
}

#[test]
fn c_test_reads() {
    run_c_test("test_reads");
}

#[test]
fn c_test_open() {
    run_c_test("test_open");
}

#[test]
fn c_test_metadata() {
    run_c_test("test_metadata");
}

#[test]
fn c_test_arrays() {
    run_c_test("test_arrays");
}

#[test]
fn c_test_tensors() {
    run_c_test("test_tensors");
}

#[test]
fn c_test_errors() {
    run_c_test("test_errors");
}

#[test]
fn c_test_threads() {
    run_c_test("test_threads");
}

#[test]
fn c_test_plan_metal() {
    run_c_test("test_plan_metal");
}

#[test]
fn c_test_plan_pinned() {
    run_c_test("test_plan_pinned");
}

#[test]
fn c_test_shards() {
    run_c_test("test_shards");
}

#[test]
fn c_test_writer() {
    run_c_test("test_writer");
}

#[test]
fn c_test_digest() {
    run_c_test("test_digest");
}

#[test]
fn c_test_memory() {
    run_c_test("test_memory");
}

#[test]
fn valgrind_memory() {
    run_valgrind("test_memory");
}

#[test]
fn c_test_values() {
    run_c_test("test_values");
}

#[test]
fn c_test_validate() {
    run_c_test("test_validate");
}

#[test]
fn c_test_quantize() {
    run_c_test("test_quantize");
}

#[test]
fn c_test_tokenizer() {
    run_c_test("test_tokenizer");
}

#[test]
fn valgrind_tokenizer() {
    run_valgrind("test_tokenizer");
}

#[test]
fn c_test_chat() {
    run_c_test("test_chat");
}

#[test]
fn valgrind_chat() {
    run_valgrind("test_chat");
}

#[test]
fn c_test_requantize() {
    run_c_test("test_requantize");
}

/// Every program in c_tests/ has a test above (or in tests/url.rs), so none is silently skipped.
#[test]
fn every_c_program_is_run() {
    let mut programs: Vec<String> = std::fs::read_dir(manifest_dir().join("c_tests"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".c").map(str::to_string)
        })
        .collect();
    programs.sort();
    // test_url.c needs the servers tests/url.rs starts: it is run there.
    let this = concat!(include_str!("c_api.rs"), include_str!("url.rs"));
    for p in &programs {
        for runner in ["run_c_test", "run_valgrind"] {
            assert!(
                this.contains(&format!("{runner}(\"{p}\")")),
                "c_tests/{p}.c has no #[test] calling {runner} in tests/c_api.rs (or tests/url.rs)"
            );
        }
    }
}

/// Every function the header declares is called by at least one C program (directly, or through
/// a helper of c_tests/check.h).
#[test]
fn every_header_function_is_called_from_c() {
    let header = std::fs::read_to_string(manifest_dir().join("include/gguf.h")).unwrap();
    let mut sources = String::new();
    for entry in std::fs::read_dir(manifest_dir().join("c_tests")).unwrap() {
        let path = entry.unwrap().path();
        // The programs and check.h, whose helpers every program calls.
        if path.extension().is_some_and(|e| e == "c" || e == "h") {
            sources.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    // Declarations start a line (after the return type) with `gguf_name(`.
    let functions: Vec<&str> = header
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with('/'))
        .filter_map(|l| {
            let start = l.find("gguf_")?;
            let end = start + l[start..].find('(')?;
            Some(&l[start..end])
        })
        .collect();
    assert!(
        functions.len() >= 12 && functions.contains(&"gguf_tensor_data"),
        "functions found: {functions:?}"
    );
    let uncalled: Vec<&&str> = functions
        .iter()
        .filter(|f| !sources.contains(&format!("{f}(")))
        .collect();
    assert!(
        uncalled.is_empty(),
        "functions of include/gguf.h no program in c_tests/ calls: {uncalled:?}"
    );
}
