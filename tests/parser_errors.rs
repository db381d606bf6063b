//! The parser refuses malformed files with the right code and offset, and never reads out of
//! bounds: hand-patched files for each rule it enforces, and every truncation of valid files.

mod common;

use common::raw::{file, kv, le_u64, tensor_info};
use gguf::{ByteOrder, DataType, ErrorCode, GgufFile, MetadataValue, ValueType, Writer};

fn refuse(bytes: &[u8]) -> (ErrorCode, Option<u64>) {
    match GgufFile::from_bytes(bytes) {
        Ok(_) => panic!("accepted a malformed file"),
        Err(e) => {
            assert!(e.to_string().starts_with("gguf: "), "{e}");
            (e.code(), e.offset())
        }
    }
}

#[test]
fn header_rules() {
    assert_eq!(refuse(b"").0, ErrorCode::Truncated);
    assert_eq!(refuse(b"GGU").0, ErrorCode::Truncated);
    assert_eq!(refuse(b"GGML\x03\0\0\0").0, ErrorCode::BadMagic);
    let mut v0 = file(0, 0, &[]);
    v0[4] = 0;
    assert_eq!(refuse(&v0), (ErrorCode::UnsupportedVersion, Some(4)));
    let mut v4 = file(0, 0, &[]);
    v4[4] = 4;
    assert_eq!(refuse(&v4).0, ErrorCode::UnsupportedVersion);
    assert_eq!(
        refuse(&file(1 << 63, 0, &[])),
        (ErrorCode::TensorCountTooLarge, Some(8))
    );
    assert_eq!(
        refuse(&file(0, u64::MAX, &[])),
        (ErrorCode::KeyCountTooLarge, Some(16))
    );
    // Counts that fit the arithmetic but not the bytes present.
    assert_eq!(
        refuse(&file(0, 3, &kv("a", 0, &[1]))).0,
        ErrorCode::KeyCountTooLarge
    );
    assert!(GgufFile::from_bytes(&file(0, 0, &[])[..]).is_ok());
}

#[test]
fn metadata_rules() {
    let long_key = [le_u64(u64::MAX).as_slice(), b"k"].concat();
    assert_eq!(
        refuse(&file(0, 1, &[long_key.as_slice(), &[0; 8]].concat())),
        (ErrorCode::StringTooLong, Some(24))
    );
    assert_eq!(
        refuse(&file(0, 1, &kv("", 0, &[1, 0, 0, 0, 0]))).0,
        ErrorCode::EmptyKey
    );
    let dup = [kv("a", 0, &[1]), kv("a", 0, &[2])].concat();
    assert_eq!(
        refuse(&file(0, 2, &dup)),
        (ErrorCode::DuplicateKey, Some(24 + 14))
    );
    assert_eq!(
        refuse(&file(0, 1, &kv("a", 13, &[0; 8]))),
        (ErrorCode::BadValueType, Some(33))
    );
    assert_eq!(
        refuse(&file(0, 1, &kv("a", 7, &[2]))),
        (ErrorCode::BadBool, Some(37))
    );
    // Array of 2^62 UINT32: refused in O(1) from its count.
    let huge = [&4u32.to_le_bytes()[..], &le_u64(1 << 62)].concat();
    assert_eq!(
        refuse(&file(0, 1, &kv("a", 9, &huge))).0,
        ErrorCode::ArrayTooLong
    );
    let bad_elem = [&99u32.to_le_bytes()[..], &le_u64(0)].concat();
    assert_eq!(
        refuse(&file(0, 1, &kv("a", 9, &bad_elem))).0,
        ErrorCode::BadValueType
    );
    let bools = [&7u32.to_le_bytes()[..], &le_u64(3), &[1, 0, 5]].concat();
    assert_eq!(
        refuse(&file(0, 1, &kv("a", 9, &bools))).0,
        ErrorCode::BadBool
    );
    // Nesting: 9 levels of arrays of arrays, each holding one element.
    let mut deep = Vec::new();
    for _ in 0..9 {
        deep.extend_from_slice(&9u32.to_le_bytes());
        deep.extend_from_slice(&le_u64(1));
    }
    deep.extend_from_slice(&[0; 64]);
    let deep_kv = [&deep[8 + 4..], &[][..]].concat();
    let mut body = kv("a", 9, &deep_kv);
    body.extend_from_slice(&[0; 16]);
    assert_eq!(refuse(&file(0, 1, &body)).0, ErrorCode::ArrayTooDeep);
}

#[test]
fn alignment_rules() {
    for (ty, value) in [
        (4u32, 0u32.to_le_bytes().to_vec()),
        (4, 48u32.to_le_bytes().to_vec()),
        (4, (1u32 << 25).to_le_bytes().to_vec()),
        (10, le_u64(32).to_vec()),
    ] {
        assert_eq!(
            refuse(&file(0, 1, &kv("general.alignment", ty, &value))).0,
            ErrorCode::BadAlignment
        );
    }
    let ok = file(0, 1, &kv("general.alignment", 4, &64u32.to_le_bytes()));
    assert_eq!(GgufFile::from_bytes(&ok[..]).unwrap().alignment(), 64);
}

/// Two 16-float tensors, the second 32 bytes after the first (which is 64 long), with room for
/// their data.
fn overlapping_tensors() -> Vec<u8> {
    let two = [
        tensor_info("a", &[16], 0, 0),
        tensor_info("b", &[16], 0, 32),
    ]
    .concat();
    let mut f = file(2, 0, &two);
    f.resize(f.len().div_ceil(32) * 32 + 128, 0);
    f
}

/// A file with one tensor info and enough zero bytes after it for the data.
fn one_tensor(dims: &[u64], dtype: u32, offset: u64, data: usize) -> Vec<u8> {
    let mut f = file(1, 0, &tensor_info("t", dims, dtype, offset));
    let aligned = f.len().div_ceil(32) * 32;
    f.resize(aligned + data, 0);
    f
}

#[test]
fn tensor_rules() {
    assert!(GgufFile::from_bytes(&one_tensor(&[8], 0, 0, 32)[..]).is_ok());
    assert_eq!(
        refuse(&one_tensor(&[1, 1, 1, 1, 1], 0, 0, 32)).0,
        ErrorCode::TooManyDims
    );
    assert_eq!(
        refuse(&one_tensor(&[1 << 32, 1 << 32, 1 << 10], 24, 0, 0)).0,
        ErrorCode::SizeOverflow
    );
    // 2^74 elements: ggml's count wraps to zero here.
    assert_eq!(
        refuse(&one_tensor(&[1 << 37, 1 << 37], 24, 0, 0)).0,
        ErrorCode::SizeOverflow
    );
    for removed in [4, 5, 31, 32, 33, 36, 37, 38, 43, u32::MAX] {
        assert_eq!(
            refuse(&one_tensor(&[32], removed, 0, 64)).0,
            ErrorCode::BadDataType,
            "type {removed}"
        );
    }
    assert_eq!(
        refuse(&one_tensor(&[33], 2, 0, 64)).0,
        ErrorCode::BadBlockMultiple
    );
    assert_eq!(
        refuse(&one_tensor(&[8], 0, 16, 64)).0,
        ErrorCode::MisalignedOffset
    );
    assert_eq!(
        refuse(&one_tensor(&[8], 0, 0, 31)).0,
        ErrorCode::DataOutOfBounds
    );
    assert_eq!(
        refuse(&one_tensor(&[8], 0, u64::MAX - 31, 64)).0,
        ErrorCode::DataOutOfBounds
    );
    let f = overlapping_tensors();
    assert_eq!(refuse(&f).0, ErrorCode::DataOverlap);
    let dup = [tensor_info("a", &[8], 0, 0), tensor_info("a", &[8], 0, 32)].concat();
    let mut f = file(2, 0, &dup);
    f.resize(f.len().div_ceil(32) * 32 + 64, 0);
    assert_eq!(refuse(&f).0, ErrorCode::DuplicateTensor);
}

#[test]
fn string_and_name_lengths_past_the_end() {
    let value = kv("k", 8, &le_u64(1 << 40));
    assert_eq!(
        refuse(&file(0, 1, &value)),
        (ErrorCode::StringTooLong, Some(24 + 8 + 1 + 4))
    );
    let mut name = le_u64(500).to_vec();
    name.extend_from_slice(&[b'x'; 30]);
    assert_eq!(
        refuse(&file(1, 0, &name)),
        (ErrorCode::StringTooLong, Some(24))
    );
    let in_array = kv(
        "k",
        9,
        &[
            &8u32.to_le_bytes()[..],
            &le_u64(2),
            &le_u64(1),
            b"a",
            &le_u64(99),
            b"bc",
        ]
        .concat(),
    );
    assert_eq!(refuse(&file(0, 1, &in_array)).0, ErrorCode::StringTooLong);
}

/// The cases the specification leaves open, and what this library decided (see the README).
#[test]
fn deliberate_choices() {
    // Tensor names longer than ggml's 64-byte limit are accepted: the C API has no fixed buffer.
    let long = "n".repeat(300);
    let mut f = file(1, 0, &tensor_info(&long, &[4], 0, 0));
    f.resize(f.len().div_ceil(32) * 32 + 32, 0);
    assert_eq!(
        GgufFile::from_bytes(&f[..])
            .unwrap()
            .tensor(&long)
            .unwrap()
            .name
            .len(),
        300
    );
    // No dimensions: a scalar of one element (as ggml reads it).
    let mut f = file(1, 0, &tensor_info("s", &[], 0, 0));
    f.resize(f.len().div_ceil(32) * 32 + 4, 0);
    let g = GgufFile::from_bytes(&f[..]).unwrap();
    assert_eq!(
        (
            g.tensor("s").unwrap().n_elements,
            g.tensor("s").unwrap().size
        ),
        (1, 4)
    );
    // Any power of two is an alignment, 1, 2 and 4 included.
    for a in [1u32, 2, 4, 8] {
        let mut w = Writer::new();
        w.set_alignment(a).unwrap();
        w.add_tensor("t", &[3], DataType::I8, vec![1, 2, 3])
            .unwrap();
        w.add_tensor("u", &[1], DataType::I8, vec![4]).unwrap();
        let bytes = w.to_bytes().unwrap();
        let g = GgufFile::from_bytes(&bytes[..]).unwrap();
        assert_eq!(g.alignment(), u64::from(a));
        assert_eq!(g.tensor("u").unwrap().data, &[4]);
    }
    // Booleans other than 0 and 1 are refused (the spec calls them invalid), scalars and arrays.
    assert_eq!(
        refuse(&file(0, 1, &kv("b", 7, &[0xff]))).0,
        ErrorCode::BadBool
    );
}

#[test]
fn spec_allowances_are_accepted() {
    // Out of offset order, with a gap, zero-element and zero-dimension tensors, no trailing pad.
    let infos = [
        tensor_info("late", &[8], 0, 96),
        tensor_info("early", &[8], 0, 0),
        tensor_info("empty", &[0, 3], 0, 0),
        tensor_info("scalar", &[], 0, 32),
    ]
    .concat();
    let mut f = file(4, 0, &infos);
    f.resize(f.len().div_ceil(32) * 32 + 96 + 32, 0);
    let g = GgufFile::from_bytes(&f[..]).unwrap();
    assert_eq!(g.tensor("empty").unwrap().size, 0);
    assert_eq!(g.tensor("scalar").unwrap().n_elements, 1);
    assert_eq!(g.tensor("late").unwrap().data.len(), 32);
    // Non-UTF-8 strings are bytes.
    let bytes = file(0, 1, &kv("k", 8, &[&le_u64(2)[..], &[0xff, 0xfe]].concat()));
    let g = GgufFile::from_bytes(&bytes[..]).unwrap();
    assert_eq!(g.get("k").unwrap().as_bytes(), Some(&[0xff, 0xfe][..]));
}

#[test]
fn every_truncation_is_refused_except_inside_trailing_padding() {
    for version in 1..=3 {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let bytes = common::rich_file(version, order, 20);
            let full = GgufFile::from_bytes(&bytes[..]).unwrap();
            let last = full
                .tensors()
                .map(|t| t.file_offset + t.size)
                .max()
                .unwrap() as usize;
            for cut in 0..bytes.len() {
                let result = GgufFile::from_bytes(&bytes[..cut]);
                if cut >= last {
                    assert!(
                        result.is_ok(),
                        "cut at {cut} inside trailing padding was refused"
                    );
                } else {
                    let e = result
                        .err()
                        .unwrap_or_else(|| panic!("cut at {cut} of {} accepted", bytes.len()));
                    assert!(e.offset().is_some(), "{e}");
                    // Whatever rule the cut breaks, the message says why: the file ends early.
                    assert!(
                        e.message().contains("the file ends early (truncated?)"),
                        "cut at {cut}: {e}"
                    );
                }
            }
        }
    }
}

#[test]
fn mutated_files_never_panic_and_accepted_ones_stay_in_bounds() {
    let base = common::rich_file(3, ByteOrder::Little, 20);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..common::rounds(20_000) {
        let mut m = base.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % m.len() as u64) as usize;
            m[i] ^= 1 << (next() % 8);
        }
        if let Ok(f) = GgufFile::from_bytes(&m[..]) {
            for t in f.tensors() {
                assert!(t.file_offset + t.size <= m.len() as u64);
                assert_eq!(t.data.len() as u64, t.size);
            }
            for e in f.metadata() {
                if let Some(a) = e.value.as_array() {
                    assert_eq!(a.iter().count() as u64, a.len());
                }
            }
        }
    }
}

/// A download cut short in the middle of the vocabulary: whether the cut leaves too few bytes for
/// the array's count (ARRAY_TOO_LONG) or ends inside one string (STRING_TOO_LONG or TRUNCATED),
/// the message says the file ends early, which key was being read, where its entry starts, and
/// what was needed against what remained; the codes are the rules' own.
#[test]
fn a_vocabulary_cut_short_says_the_file_ends_early_and_names_the_key() {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    let tokens = (0..1000)
        .map(|i| MetadataValue::string(format!("token{i:04}")))
        .collect();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        MetadataValue::Array(ValueType::String, tokens),
    )
    .unwrap();
    let bytes = w.to_bytes().unwrap();
    let file = GgufFile::from_bytes(&bytes[..]).unwrap();
    let entry = file.metadata_index("tokenizer.ggml.tokens").unwrap();
    // Entry: key length (8), key (21), type (4), element type (4), count (8), then 1000 strings
    // of 8 + 9 bytes.
    let entry_at = 24 + 8 + 20 + 4 + 8 + 5;
    assert_eq!(entry, 1);
    let count_at = entry_at + 8 + 21 + 4 + 4;
    let strings_at = count_at + 8;
    let prefix = format!(
        "the file ends early (truncated?) while reading key 'tokenizer.ggml.tokens', metadata \
         entry 2 of 2 (at offset {entry_at}): "
    );

    // 400 of the strings: the count check fails.
    let cut = strings_at + 400 * 17;
    let e = GgufFile::from_bytes(&bytes[..cut]).err().unwrap();
    assert_eq!(e.code(), ErrorCode::ArrayTooLong);
    assert_eq!(e.offset(), Some(count_at as u64));
    assert_eq!(
        e.message(),
        format!(
            "{prefix}the value is an array of 1000 STRING elements, which needs at least 8000 \
             bytes (8 each), but only 6800 bytes remain before the end of the file"
        )
    );

    // Inside the 700th string: its length runs past the end.
    let cut = strings_at + 699 * 17 + 8 + 3;
    let e = GgufFile::from_bytes(&bytes[..cut]).err().unwrap();
    assert_eq!(e.code(), ErrorCode::StringTooLong);
    assert_eq!(e.offset(), Some((strings_at + 699 * 17) as u64));
    assert_eq!(
        e.message(),
        format!("{prefix}the value has length 9, past the end of the file (3 bytes remain)")
    );

    // Inside the 700th string's length.
    let cut = strings_at + 699 * 17 + 5;
    let e = GgufFile::from_bytes(&bytes[..cut]).err().unwrap();
    assert_eq!(e.code(), ErrorCode::Truncated);
    assert_eq!(
        e.message(),
        format!("{prefix}expected 8 bytes for the value, found 5 before the end of the file")
    );
}

/// The error `bytes` are refused with.
fn refusal(bytes: &[u8]) -> gguf::Error {
    GgufFile::from_bytes(bytes)
        .err()
        .expect("a malformed file was accepted")
}

/// Each rule's refusal is a variant of `ErrorKind` carrying that rule's facts, and its code is
/// the rule's own.
#[test]
fn every_rule_is_a_variant_with_its_facts() {
    use gguf::{AlignmentFound, ErrorKind as K, FirstSeen, Shortfall};
    let check = |bytes: &[u8], code: ErrorCode, facts: &dyn Fn(&K) -> bool| {
        let e = refusal(bytes);
        assert_eq!(e.code(), code, "{e}");
        assert_eq!(e.kind().code(), code, "{e}");
        assert!(facts(e.kind()), "{:?}", e.kind());
        e
    };
    let e = check(b"GGU", ErrorCode::Truncated, &|k| {
        matches!(k, K::Truncated { reading, needed: 4, remaining: 3, empty_file: false }
            if reading == "the magic")
    });
    assert_eq!(e.offset(), Some(0));
    check(
        b"GGML\x03\0\0\0",
        ErrorCode::BadMagic,
        &|k| matches!(k, K::BadMagic { found } if found == b"GGML"),
    );
    let mut v4 = file(0, 0, &[]);
    v4[4] = 4;
    check(&v4, ErrorCode::UnsupportedVersion, &|k| {
        matches!(k, K::UnsupportedVersion { found: 4 })
    });
    check(
        &file(1 << 63, 0, &[]),
        ErrorCode::TensorCountTooLarge,
        &|k| {
            matches!(k, K::TensorCountTooLarge { count, shortfall: Shortfall::Bytes { min_size: 24, remaining: 8 } }
            if *count == 1 << 63)
        },
    );
    check(
        &file(0, 3, &kv("a", 0, &[1])),
        ErrorCode::KeyCountTooLarge,
        &|k| {
            matches!(
                k,
                K::KeyCountTooLarge {
                    count: 3,
                    shortfall: Shortfall::Bytes { .. }
                }
            )
        },
    );
    let long_key = [le_u64(u64::MAX).as_slice(), b"k"].concat();
    let long = [long_key.as_slice(), &[0; 8]].concat();
    check(
        &file(0, 1, &long),
        ErrorCode::StringTooLong,
        &|k| matches!(k, K::StringTooLong { reading, len: u64::MAX, remaining: 9 } if reading == "the key"),
    );
    check(
        &file(0, 1, &kv("", 0, &[1, 0, 0, 0, 0])),
        ErrorCode::EmptyKey,
        &|k| matches!(k, K::EmptyKey { refused: false }),
    );
    let dup = [kv("a", 0, &[1]), kv("a", 0, &[2])].concat();
    check(
        &file(0, 2, &dup),
        ErrorCode::DuplicateKey,
        &|k| matches!(k, K::DuplicateKey { key, first: FirstSeen::AtOffset(24) } if key == "'a'"),
    );
    let e = check(
        &file(0, 1, &kv("a", 13, &[0; 8])),
        ErrorCode::BadValueType,
        &|k| matches!(k, K::BadValueType { found: 13 }),
    );
    // The entry being read is context, apart from the rule's facts.
    assert_eq!(
        e.context(),
        Some("key 'a', metadata entry 1 of 1 (at offset 24): the value type")
    );
    check(&file(0, 1, &kv("a", 7, &[2])), ErrorCode::BadBool, &|k| {
        matches!(
            k,
            K::BadBool {
                found: 2,
                element: None
            }
        )
    });
    let huge = [&4u32.to_le_bytes()[..], &le_u64(1 << 62)].concat();
    check(
        &file(0, 1, &kv("a", 9, &huge)),
        ErrorCode::ArrayTooLong,
        &|k| {
            matches!(k, K::ArrayTooLong { elem: ValueType::Uint32, count, shortfall: Shortfall::Bytes { min_size: 4, .. }, .. }
            if *count == 1 << 62)
        },
    );
    let mut deep = Vec::new();
    for _ in 0..9 {
        deep.extend_from_slice(&9u32.to_le_bytes());
        deep.extend_from_slice(&le_u64(1));
    }
    deep.extend_from_slice(&[0; 64]);
    let mut body = kv("a", 9, &deep[8 + 4..]);
    body.extend_from_slice(&[0; 16]);
    check(&file(0, 1, &body), ErrorCode::ArrayTooDeep, &|k| {
        matches!(k, K::ArrayTooDeep { max: 8 })
    });
    let a48 = kv("general.alignment", 4, &48u32.to_le_bytes());
    check(&file(0, 1, &a48), ErrorCode::BadAlignment, &|k| {
        matches!(
            k,
            K::BadAlignment {
                found: AlignmentFound::Value(48)
            }
        )
    });
    let a64 = kv("general.alignment", 10, &le_u64(32));
    check(&file(0, 1, &a64), ErrorCode::BadAlignment, &|k| {
        matches!(
            k,
            K::BadAlignment {
                found: AlignmentFound::Type(ValueType::Uint64)
            }
        )
    });
    check(
        &one_tensor(&[1, 1, 1, 1, 1], 0, 0, 32),
        ErrorCode::TooManyDims,
        &|k| matches!(k, K::TooManyDims { tensor, found: 5, max: 4, refused: false } if tensor == "'t'"),
    );
    check(
        &one_tensor(&[1 << 37, 1 << 37], 24, 0, 0),
        ErrorCode::SizeOverflow,
        &|k| matches!(k, K::SizeOverflow { tensor: Some(t), .. } if t == "'t'"),
    );
    check(&one_tensor(&[32], 4, 0, 64), ErrorCode::BadDataType, &|k| {
        matches!(
            k,
            K::BadDataType {
                found: 4,
                refused: false,
                ..
            }
        )
    });
    check(
        &one_tensor(&[33], 2, 0, 64),
        ErrorCode::BadBlockMultiple,
        &|k| {
            matches!(
                k,
                K::BadBlockMultiple {
                    first: 33,
                    data_type: DataType::Q4_0,
                    ..
                }
            )
        },
    );
    check(
        &one_tensor(&[8], 0, 16, 64),
        ErrorCode::MisalignedOffset,
        &|k| {
            matches!(
                k,
                K::MisalignedOffset {
                    alignment: 32,
                    found: 16,
                    ..
                }
            )
        },
    );
    let short = one_tensor(&[8], 0, 0, 31);
    let size = short.len() as u64;
    check(&short, ErrorCode::DataOutOfBounds, &|k| {
        matches!(k, K::DataOutOfBounds { tensor, end: Some(end), file_size }
            if tensor == "'t'" && *end == size + 1 && *file_size == size)
    });
    check(
        &one_tensor(&[8], 0, u64::MAX - 31, 64),
        ErrorCode::DataOutOfBounds,
        &|k| matches!(k, K::DataOutOfBounds { end: None, .. }),
    );
    let f = overlapping_tensors();
    check(&f, ErrorCode::DataOverlap, &|k| {
        matches!(k, K::DataOverlap { tensor, range: (32, 96), other, other_range: (0, 64) }
            if tensor == "'b'" && other == "'a'")
    });
    let dup = [tensor_info("a", &[8], 0, 0), tensor_info("a", &[8], 0, 32)].concat();
    let mut f = file(2, 0, &dup);
    f.resize(f.len().div_ceil(32) * 32 + 64, 0);
    check(
        &f,
        ErrorCode::DuplicateTensor,
        &|k| matches!(k, K::DuplicateTensor { tensor, first: FirstSeen::AtOffset(24) } if tensor == "'a'"),
    );
}

/// An I/O failure keeps the operating system's error as `source()`, and `Debug` (what `main`
/// prints for an `Err`) is the short message, not the structure.
#[test]
fn io_errors_have_their_source_and_debug_is_short() {
    use std::error::Error as _;
    let dir = std::env::temp_dir().join(format!("gguf-errors-{}", std::process::id()));
    let e = gguf::MappedFile::open(dir.join("missing.gguf"))
        .err()
        .expect("opened a missing file");
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(
        matches!(e.kind(), gguf::ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{e}"
    );
    let source = e.source().expect("an I/O error has a source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("the source is the io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(e.path().is_some_and(|p| p.ends_with("missing.gguf")));

    let debug = format!("{e:?}");
    assert_eq!(debug, e.to_string());
    assert!(debug.len() < 200, "{debug}");
    assert!(
        !debug.contains("Details {") && !debug.contains("Error("),
        "{debug}"
    );
    // A format error has no source.
    assert!(refusal(b"GGML\x03\0\0\0").source().is_none());
}
