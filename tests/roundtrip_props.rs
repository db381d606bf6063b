//! Property tests: anything the writer can write, the reader reads back identically, in every
//! version, byte order and alignment; and what is invalid is refused.
//!
//! The 17 correctness properties of the reader design (seed document 003) map to tests here:
//! 1 magic: `magic_is_checked`; 2 header, 3 metadata, 5 tensor infos, 8 tensor offsets,
//! 9 tensor sizes, 10 tensor data, 11 metadata retrieval, 12 tensor retrieval, 13 counts and
//! version: `writer_and_reader_round_trip`; 4 and 16 invalid types:
//! `invalid_value_types_and_versions_are_refused`, `invalid_data_types_are_refused`;
//! 6 alignment: `alignment_arithmetic`; 7 default alignment: `default_alignment_is_32`;
//! 14 truncation: `truncations_are_refused`; 15 versions: `invalid_value_types_and_versions_are_refused`;
//! 17 string lengths: `string_lengths_past_the_end_are_refused`.

#[path = "common/values.rs"]
mod values;

use gguf::{ByteOrder, DataType, GgufFile, MetadataValue, ValueType};
use proptest::prelude::*;
use values::same;

fn scalar() -> impl Strategy<Value = MetadataValue> {
    use MetadataValue::*;
    prop_oneof![
        any::<u8>().prop_map(U8),
        any::<i8>().prop_map(I8),
        any::<u16>().prop_map(U16),
        any::<i16>().prop_map(I16),
        any::<u32>().prop_map(U32),
        any::<i32>().prop_map(I32),
        // Compared by bits below, so NaNs round-trip too.
        any::<u32>().prop_map(|b| F32(f32::from_bits(b))),
        any::<bool>().prop_map(Bool),
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(String),
        any::<u64>().prop_map(U64),
        any::<i64>().prop_map(I64),
        any::<u64>().prop_map(|b| F64(f64::from_bits(b))),
    ]
}

/// Arrays of one element type, nested up to 3 levels.
fn value() -> impl Strategy<Value = MetadataValue> {
    scalar().prop_recursive(3, 48, 6, |inner| {
        (inner, 0usize..6).prop_flat_map(|(template, n)| {
            let elem = template.value_type();
            proptest::collection::vec(Just(template), n)
                .prop_map(move |items| MetadataValue::Array(elem, items))
        })
    })
}

#[derive(Debug, Clone)]
struct TensorSpec {
    dtype: DataType,
    dims: Vec<u64>,
    seed: u8,
}

fn tensor() -> impl Strategy<Value = TensorSpec> {
    (
        0..DataType::ALL.len(),
        proptest::collection::vec(0u64..4, 0..=4),
        1u64..3,
        any::<u8>(),
    )
        .prop_map(|(t, mut dims, blocks, seed)| {
            let dtype = DataType::ALL[t];
            // A tensor without dimensions has one element: only types with 1-element blocks.
            if dims.is_empty() && dtype.block_elems() > 1 {
                dims.push(0);
            }
            if let Some(first) = dims.first_mut() {
                *first = dtype.block_elems() * blocks;
            }
            TensorSpec { dtype, dims, seed }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn writer_and_reader_round_trip(
        version in 1u32..=3,
        big in any::<bool>(),
        align_pow in prop::option::of(0u32..13),
        kvs in proptest::collection::vec(value(), 0..8),
        tensors in proptest::collection::vec(tensor(), 0..6),
    ) {
        let order = if big { ByteOrder::Big } else { ByteOrder::Little };
        let mut w = gguf::Writer::new();
        w.set_version(version).unwrap().set_byte_order(order);
        if let Some(p) = align_pow {
            w.set_alignment(1 << p).unwrap();
        }
        for (i, v) in kvs.iter().enumerate() {
            w.add_metadata(format!("key.{i}"), v.clone()).unwrap();
        }
        let mut datas = Vec::new();
        for (i, t) in tensors.iter().enumerate() {
            let size = t.dtype.tensor_bytes(&t.dims).unwrap() as usize;
            let data: Vec<u8> = (0..size).map(|j| (j as u8).wrapping_mul(31).wrapping_add(t.seed)).collect();
            w.add_tensor(format!("t.{i}"), &t.dims, t.dtype, data.clone()).unwrap();
            datas.push(data);
        }
        let bytes = w.to_bytes().unwrap();
        let f = GgufFile::from_bytes(&bytes[..]).unwrap();

        let alignment = 1u64 << align_pow.unwrap_or(5);
        prop_assert_eq!(f.version(), version);
        prop_assert_eq!(f.byte_order(), order);
        prop_assert_eq!(f.alignment(), alignment);
        prop_assert_eq!(f.data_offset() % alignment, 0);
        // The data section starts at the first aligned offset at or after the tensor infos.
        prop_assert!(f.data_offset() <= bytes.len() as u64 + alignment);
        let written: Vec<_> = kvs.iter().enumerate().map(|(i, v)| (format!("key.{i}"), v)).collect();
        let offset = usize::from(align_pow.is_some());
        prop_assert_eq!(f.metadata_count(), written.len() + offset);
        for (key, v) in &written {
            let read = MetadataValue::from(f.get(key).unwrap());
            prop_assert!(same(&read, v), "{}: wrote {:?}, read {:?}", key, v, read);
        }
        prop_assert_eq!(f.tensor_count(), tensors.len());
        for (i, (t, data)) in tensors.iter().zip(&datas).enumerate() {
            let info = f.tensor_at(i).unwrap();
            let name = format!("t.{i}");
            prop_assert_eq!(info.name, name.as_bytes());
            prop_assert_eq!(info.dtype, t.dtype);
            prop_assert_eq!(info.n_dims as usize, t.dims.len());
            prop_assert_eq!(&info.dims[..t.dims.len()], &t.dims[..]);
            prop_assert_eq!(info.n_elements, t.dims.iter().product::<u64>());
            // Size: bytes per block x blocks in the first dimension x the other dimensions.
            let first = t.dims.first().copied().unwrap_or(1);
            let rest: u64 = t.dims.iter().skip(1).product();
            prop_assert_eq!(info.size, t.dtype.block_bytes() * (first / t.dtype.block_elems()) * rest);
            prop_assert_eq!(info.file_offset, f.data_offset() + info.offset);
            prop_assert_eq!(info.offset % alignment, 0);
            prop_assert_eq!(info.data, &data[..]);
        }
    }

    #[test]
    fn invalid_value_types_and_versions_are_refused(ty in 13u32.., version in 4u32..) {
        let mut f = b"GGUF".to_vec();
        f.extend_from_slice(&3u32.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        f.extend_from_slice(&1u64.to_le_bytes());
        f.extend_from_slice(&1u64.to_le_bytes());
        f.push(b'k');
        f.extend_from_slice(&ty.to_le_bytes());
        f.extend_from_slice(&[0; 8]);
        prop_assert_eq!(GgufFile::from_bytes(&f[..]).err().map(|e| e.code()), Some(gguf::ErrorCode::BadValueType));
        let mut g = f.clone();
        g[4..8].copy_from_slice(&version.to_le_bytes());
        // A version that reads as 1-3 when byte-swapped is a big-endian file, not an error.
        prop_assume!(!(1..=3).contains(&version.swap_bytes()));
        prop_assert_eq!(GgufFile::from_bytes(&g[..]).err().map(|e| e.code()), Some(gguf::ErrorCode::UnsupportedVersion));
    }

    #[test]
    fn string_lengths_past_the_end_are_refused(extra in 1u64..u64::MAX / 2, body in proptest::collection::vec(any::<u8>(), 0..32)) {
        let mut f = b"GGUF".to_vec();
        f.extend_from_slice(&3u32.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        f.extend_from_slice(&1u64.to_le_bytes());
        let claimed = body.len() as u64 + extra;
        f.extend_from_slice(&claimed.to_le_bytes());
        f.extend_from_slice(&body);
        let code = GgufFile::from_bytes(&f[..]).err().map(|e| e.code());
        prop_assert!(matches!(code, Some(gguf::ErrorCode::StringTooLong) | Some(gguf::ErrorCode::KeyCountTooLarge)), "{:?}", code);
    }

    #[test]
    fn alignment_arithmetic(pos in 0u64..u64::MAX / 2, p in 0u32..25) {
        let a = 1u64 << p;
        let up = gguf::format::align_up(pos, a).unwrap();
        prop_assert!(up >= pos && up % a == 0 && up - pos < a);
    }
}

fn small_file(seed: u8) -> Vec<u8> {
    let mut w = gguf::Writer::new();
    w.add_metadata("general.name", MetadataValue::string(format!("m{seed}")))
        .unwrap();
    w.add_metadata(
        "tokens",
        MetadataValue::Array(
            ValueType::String,
            (0..seed % 7)
                .map(|i| MetadataValue::string(format!("t{i}")))
                .collect(),
        ),
    )
    .unwrap();
    w.add_tensor("w", &[32], DataType::Q8_0, vec![seed; 34])
        .unwrap();
    w.add_tensor("b", &[3], DataType::F32, vec![seed; 12])
        .unwrap();
    w.to_bytes().unwrap()
}

proptest! {
    #[test]
    fn magic_is_checked(magic in any::<[u8; 4]>(), seed in any::<u8>()) {
        let mut f = small_file(seed);
        f[..4].copy_from_slice(&magic);
        let result = GgufFile::from_bytes(&f[..]);
        if &magic == b"GGUF" {
            prop_assert!(result.is_ok());
        } else {
            prop_assert_eq!(result.err().map(|e| (e.code(), e.offset())), Some((gguf::ErrorCode::BadMagic, Some(0))));
        }
    }

    #[test]
    fn truncations_are_refused(seed in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let f = small_file(seed);
        let full = GgufFile::from_bytes(&f[..]).unwrap();
        let end_of_data = full.tensors().map(|t| t.file_offset + t.size).max().unwrap() as usize;
        let cut = cut.index(end_of_data);
        let e = GgufFile::from_bytes(&f[..cut]).err();
        prop_assert!(e.is_some(), "a file cut at {} of {} was accepted", cut, f.len());
    }

    #[test]
    fn invalid_data_types_are_refused(seed in any::<u8>(), id in prop_oneof![Just(4u32), Just(5), 31u32..=33, 36u32..=38, 43u32..]) {
        let mut f = small_file(seed);
        // Tensor "b"'s info: name length and name, n_dims (4 bytes), one dimension (8), type.
        let b_at = f.windows(9).position(|w| w == b"\x01\0\0\0\0\0\0\0b").unwrap();
        let type_at = b_at + 9 + 4 + 8;
        prop_assert_eq!(u32::from_le_bytes(f[type_at..type_at + 4].try_into().unwrap()), DataType::F32.id());
        f[type_at..type_at + 4].copy_from_slice(&id.to_le_bytes());
        let e = GgufFile::from_bytes(&f[..]).err().unwrap();
        prop_assert_eq!(e.code(), gguf::ErrorCode::BadDataType);
        prop_assert_eq!(e.offset(), Some(type_at as u64));
    }
}

#[test]
fn default_alignment_is_32() {
    let f = GgufFile::from_bytes(gguf::Writer::new().to_bytes().unwrap()).unwrap();
    assert_eq!(f.alignment(), 32);
    assert!(f.get("general.alignment").is_none());
    let _ = ValueType::Uint8;
}
