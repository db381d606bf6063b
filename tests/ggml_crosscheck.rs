//! Differential tests against ggml's own GGUF parser (`libggml-base.so` from the npm package
//! `@node-llama-cpp/linux-x64`, fetched by `make ggml` into `target/ggml`; `GGUF_GGML_LIB_DIR`
//! points elsewhere). `tests/ggml/crosscheck.c` links both libraries into one process, opens
//! each file with both and prints their verdicts, comparing every field when both accept.
//!
//! - Valid files (the sample, random models, edge cases ggml supports): both accept, and agree
//!   on every header field, key, value, array element and tensor.
//! - The hostile catalogue: each file is refused with its rule's code; where ggml accepts what
//!   we refuse, or refuses what we accept, the difference is one the README documents.
//! - Mutations of a valid file: whenever both accept, they agree; whenever only ggml accepts,
//!   the rule that refused it is one of the documented stricter ones.

mod common;

use common::raw::{file, kv, le_u64, tensor_info, with_data};
use common::rng::Rng;
use common::values::scalar;
use common::{crosscheck_exe, manifest_dir, run};
use gguf::{ByteOrder, DataType, ErrorCode, MetadataValue as V, ValueType, Writer};
use std::path::Path;
use std::process::Command;

/// What both parsers said about one file.
#[derive(Debug)]
struct Verdict {
    ours: Result<(), u32>,
    ggml_accepts: bool,
    difference: Option<String>,
}

/// Writes `files` and returns each one's verdicts, in order.
fn verdicts(batch: &str, files: &[(String, Vec<u8>)]) -> Vec<Verdict> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ggml_crosscheck")
        .join(format!("{batch}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (i, (_, bytes)) in files.iter().enumerate() {
        let path = dir.join(format!("{i:05}.gguf"));
        std::fs::write(&path, bytes).unwrap();
        paths.push(path);
    }
    let output = run(Command::new(crosscheck_exe()).args(&paths));
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), files.len(), "{text}");
    lines
        .iter()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let ours = match f[1].strip_prefix("ours=").unwrap() {
                "ok" => Ok(()),
                code => Err(code.parse().unwrap()),
            };
            Verdict {
                ours,
                ggml_accepts: f[2] == "ggml=ok",
                difference: f[3].strip_prefix("DIFF").map(str::to_string),
            }
        })
        .collect()
}

/// A random scalar or string of type `ty`.
fn random_value(rng: &mut Rng, ty: ValueType) -> V {
    let x = rng.next();
    // Strings without NUL bytes: ggml's are C strings.
    scalar(ty, x).unwrap_or_else(|| {
        V::String(
            (0..rng.below(12))
                .map(|_| b'a' + rng.below(26) as u8)
                .collect(),
        )
    })
}

/// A random model of the kind ggml reads: little-endian, version 2 or 3, arrays not nested.
fn random_model(rng: &mut Rng) -> Vec<u8> {
    let mut w = Writer::new();
    w.set_version(2 + rng.below(2) as u32).unwrap();
    if rng.below(3) == 0 {
        w.set_alignment(1 << rng.below(13)).unwrap();
    }
    for i in 0..rng.below(10) {
        let ty = ValueType::ALL[rng.below(13) as usize];
        let value = if ty == ValueType::Array {
            let elem = loop {
                let t = ValueType::ALL[rng.below(13) as usize];
                if t != ValueType::Array {
                    break t;
                }
            };
            V::Array(
                elem,
                (0..rng.below(6)).map(|_| random_value(rng, elem)).collect(),
            )
        } else {
            random_value(rng, ty)
        };
        w.add_metadata(format!("key.{i}"), value).unwrap();
    }
    for i in 0..rng.below(8) {
        let dtype = DataType::ALL[rng.below(DataType::ALL.len() as u64) as usize];
        let mut dims: Vec<u64> = (0..1 + rng.below(4)).map(|_| 1 + rng.below(3)).collect();
        dims[0] = dtype.block_elems() * (1 + rng.below(2));
        let size = dtype.tensor_bytes(&dims).unwrap() as usize;
        let data = (0..size).map(|_| rng.next() as u8).collect();
        w.add_tensor(format!("t.{i}"), &dims, dtype, data).unwrap();
    }
    w.to_bytes().unwrap()
}

#[test]
fn valid_files_read_the_same_in_both() {
    let sample = std::fs::read(manifest_dir().join("testdata/sample.gguf")).unwrap();
    let mut files = vec![("sample".to_string(), sample)];
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    for i in 0..150 {
        files.push((format!("random model {i}"), random_model(&mut rng)));
    }
    let mut edge = Writer::new();
    edge.add_metadata("empty.string", V::string("")).unwrap();
    edge.add_metadata(
        "tokens",
        V::Array(ValueType::String, vec![V::string(""), V::string("a")]),
    )
    .unwrap();
    edge.add_tensor("zero.elements", &[0, 4], DataType::F32, vec![])
        .unwrap();
    edge.add_tensor("one.element", &[1], DataType::F32, vec![1; 4])
        .unwrap();
    files.push(("edge cases".to_string(), edge.to_bytes().unwrap()));
    for ((name, _), v) in files.iter().zip(verdicts("valid", &files)) {
        assert!(
            v.ours.is_ok() && v.ggml_accepts && v.difference.is_none(),
            "{name}: {v:?}"
        );
    }
}

/// Files this library accepts, as the specification allows, and ggml refuses: each is a
/// documented difference (README, "What is refused, and what is accepted").
#[test]
fn what_only_we_accept_is_documented() {
    let nested = {
        let mut w = Writer::new();
        let inner = V::Array(ValueType::Uint8, vec![V::U8(1)]);
        w.add_metadata("nested", V::Array(ValueType::Array, vec![inner]))
            .unwrap();
        w.to_bytes().unwrap()
    };
    let versioned = |version, order| {
        let mut w = Writer::new();
        w.set_version(version).unwrap().set_byte_order(order);
        w.add_metadata("k", V::U32(1)).unwrap();
        w.add_tensor("t", &[4], DataType::F32, vec![0; 16]).unwrap();
        w.to_bytes().unwrap()
    };
    let gap = with_data(
        file(
            2,
            0,
            &[tensor_info("a", &[8], 0, 0), tensor_info("b", &[8], 0, 64)].concat(),
        ),
        96,
    );
    let out_of_order = with_data(
        file(
            2,
            0,
            &[tensor_info("b", &[8], 0, 32), tensor_info("a", &[8], 0, 0)].concat(),
        ),
        64,
    );
    let long_name = "n".repeat(100);
    let long = with_data(file(1, 0, &tensor_info(&long_name, &[8], 0, 0)), 32);
    let files = vec![
        ("nested arrays".to_string(), nested),
        ("version 1".to_string(), versioned(1, ByteOrder::Little)),
        ("big-endian".to_string(), versioned(3, ByteOrder::Big)),
        ("a gap between tensors".to_string(), gap),
        ("tensors out of offset order".to_string(), out_of_order),
        ("a 100-byte tensor name".to_string(), long),
    ];
    for ((name, _), v) in files.iter().zip(verdicts("only-ours", &files)) {
        assert!(v.ours.is_ok(), "{name}: we refuse it: {v:?}");
        assert!(
            !v.ggml_accepts,
            "{name}: ggml accepts it now; update the README: {v:?}"
        );
    }
}

/// One file per rule; each is refused with its code. Where ggml accepts it, that is listed.
#[test]
fn the_hostile_catalogue() {
    let one = |ty: u32, value: &[u8]| file(0, 1, &kv("k", ty, value));
    let one_tensor = |dims: &[u64], dtype: u32, offset: u64, data: usize| {
        with_data(file(1, 0, &tensor_info("t", dims, dtype, offset)), data)
    };
    let overlap = with_data(
        file(
            2,
            0,
            &[
                tensor_info("a", &[16], 0, 0),
                tensor_info("b", &[16], 0, 32),
            ]
            .concat(),
        ),
        128,
    );
    let dup_tensor = with_data(
        file(
            2,
            0,
            &[tensor_info("a", &[8], 0, 0), tensor_info("a", &[8], 0, 32)].concat(),
        ),
        64,
    );
    let huge = 1u64 << 62;
    let floats = [&6u32.to_le_bytes()[..], &le_u64(huge)].concat();
    let alignment = |a: u32| file(0, 1, &kv("general.alignment", 4, &a.to_le_bytes()));
    // (what, bytes, our code, whether ggml accepts it)
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, ErrorCode, bool)> = vec![
        ("empty file", vec![], ErrorCode::Truncated, false),
        ("bad magic", b"GGML\x03\0\0\0".to_vec(), ErrorCode::BadMagic, false),
        ("version 4", patch(file(0, 0, &[]), 4, &[4]), ErrorCode::UnsupportedVersion, false),
        ("2^62 tensors", file(huge, 0, &[]), ErrorCode::TensorCountTooLarge, false),
        ("2^62 keys", file(0, huge, &[]), ErrorCode::KeyCountTooLarge, false),
        ("string past the end", one(8, &le_u64(1 << 40)), ErrorCode::StringTooLong, false),
        ("empty key", file(0, 1, &kv("", 4, &[1, 0, 0, 0])), ErrorCode::EmptyKey, false),
        ("duplicate key", file(0, 2, &[kv("a", 0, &[1]), kv("a", 0, &[2])].concat()), ErrorCode::DuplicateKey, false),
        ("value type 13", one(13, &[0; 8]), ErrorCode::BadValueType, false),
        ("2^62 floats", one(9, &floats), ErrorCode::ArrayTooLong, false),
        // ggml reads a BOOL as whatever byte is there.
        ("BOOL 2", one(7, &[2]), ErrorCode::BadBool, true),
        ("alignment 48", alignment(48), ErrorCode::BadAlignment, false),
        ("alignment 0", alignment(0), ErrorCode::BadAlignment, false),
        ("duplicate tensor", dup_tensor, ErrorCode::DuplicateTensor, false),
        ("5 dimensions", one_tensor(&[1; 5], 0, 0, 32), ErrorCode::TooManyDims, false),
        // ggml's element count wraps to 0: it sees an empty tensor.
        ("2^74 elements", one_tensor(&[1 << 37, 1 << 37], 24, 0, 0), ErrorCode::SizeOverflow, true),
        ("removed type 4", one_tensor(&[32], 4, 0, 64), ErrorCode::BadDataType, false),
        ("type 1000", one_tensor(&[32], 1000, 0, 64), ErrorCode::BadDataType, false),
        ("33 Q4_0 elements", one_tensor(&[33], 2, 0, 64), ErrorCode::BadBlockMultiple, false),
        ("misaligned offset", one_tensor(&[8], 0, 16, 64), ErrorCode::MisalignedOffset, false),
        // ggml's parser (no_alloc) never compares tensor data with the file size.
        ("data past the end", one_tensor(&[8], 0, 0, 31), ErrorCode::DataOutOfBounds, true),
        ("overlapping tensors", overlap, ErrorCode::DataOverlap, false),
    ];
    let files: Vec<(String, Vec<u8>)> = cases
        .iter()
        .map(|(n, b, _, _)| (n.to_string(), b.clone()))
        .collect();
    let mut changed = Vec::new();
    for ((name, _, code, ggml_accepts), v) in cases.iter().zip(verdicts("hostile", &files)) {
        assert_eq!(v.ours, Err(*code as u32), "{name}: {v:?}");
        if v.ggml_accepts != *ggml_accepts {
            changed.push(format!(
                "{name}: ggml now {}",
                if v.ggml_accepts {
                    "accepts it"
                } else {
                    "refuses it"
                }
            ));
        }
    }
    assert!(changed.is_empty(), "ggml's verdicts changed: {changed:#?}");
}

fn patch(mut bytes: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    bytes[at..at + with.len()].copy_from_slice(with);
    bytes
}

/// Rules under which we refuse files ggml's parser accepts: BOOL bytes (a deliberate choice),
/// and two checks ggml lacks: element counts that overflow, and tensor data past the end of the
/// file (README, "What is refused, and what is accepted").
const STRICTER_THAN_GGML: &[ErrorCode] = &[
    ErrorCode::BadBool,
    ErrorCode::SizeOverflow,
    ErrorCode::DataOutOfBounds,
];

#[test]
fn mutations_agree_whenever_both_accept() {
    let mut rng = Rng(0xD1FF_E4E4_7777_0042);
    let base = {
        let mut w = Writer::new();
        w.add_metadata("general.architecture", V::string("llama"))
            .unwrap();
        w.add_metadata("flag", V::Bool(true)).unwrap();
        w.add_metadata("n", V::U32(12)).unwrap();
        w.add_metadata(
            "tokens",
            V::Array(
                ValueType::String,
                (0..8).map(|i| V::string(format!("tok{i}"))).collect(),
            ),
        )
        .unwrap();
        w.add_metadata(
            "scores",
            V::Array(
                ValueType::Float32,
                (0..8).map(|i| V::F32(i as f32)).collect(),
            ),
        )
        .unwrap();
        w.add_tensor("a", &[32, 2], DataType::Q8_0, vec![3; 68])
            .unwrap();
        w.add_tensor("b", &[4], DataType::F32, vec![5; 16]).unwrap();
        w.to_bytes().unwrap()
    };
    let header_len = 400.min(base.len());
    let mut files = Vec::new();
    for i in 0..3000 {
        let mut m = base.clone();
        for _ in 0..1 + rng.below(2) {
            let at = rng.below(header_len as u64) as usize;
            m[at] = match rng.below(3) {
                0 => m[at] ^ (1 << rng.below(8)),
                1 => rng.next() as u8,
                _ => [0, 1, 2, 0x7f, 0x80, 0xff][rng.below(6) as usize],
            };
        }
        files.push((format!("mutation {i}"), m));
    }
    let mut counts = [0usize; 4];
    for ((name, bytes), v) in files.iter().zip(verdicts("mutations", &files)) {
        match (&v.ours, v.ggml_accepts) {
            (Ok(()), true) => {
                counts[0] += 1;
                assert!(v.difference.is_none(), "{name}: {v:?}\n{bytes:?}");
            }
            (Err(code), true) => {
                counts[1] += 1;
                assert!(
                    STRICTER_THAN_GGML.iter().any(|c| *c as u32 == *code),
                    "{name}: ggml accepts a file we refuse with code {code}: {v:?}\n{bytes:?}"
                );
            }
            (Ok(()), false) => counts[2] += 1,
            (Err(_), false) => counts[3] += 1,
        }
    }
    println!(
        "mutations: both accept {}, only ggml {}, only us {}, both refuse {}",
        counts[0], counts[1], counts[2], counts[3]
    );
    assert!(
        counts[0] > 100,
        "too few mutants accepted by both to compare: {counts:?}"
    );
}
