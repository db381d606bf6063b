//! Round trips through the writer and the reader, in every version and byte order.

use gguf::{ByteOrder, DataType, ErrorCode, GgufFile, MetadataValue, Value, ValueType, Writer};

fn every_value_type() -> Vec<(&'static str, MetadataValue)> {
    use MetadataValue::*;
    vec![
        ("u8", U8(200)),
        ("i8", I8(-5)),
        ("u16", U16(65000)),
        ("i16", I16(-30000)),
        ("u32", U32(4_000_000_000)),
        ("i32", I32(-2_000_000_000)),
        ("f32", F32(1.5)),
        ("bool", Bool(true)),
        ("str", MetadataValue::string("héllo\0world")),
        ("u64", U64(u64::MAX - 1)),
        ("i64", I64(i64::MIN + 1)),
        ("f64", F64(-2.25)),
        (
            "tokens",
            Array(
                ValueType::String,
                vec![
                    MetadataValue::string("<s>"),
                    MetadataValue::string(""),
                    MetadataValue::string("ab"),
                ],
            ),
        ),
        (
            "scores",
            Array(ValueType::Float32, vec![F32(0.5), F32(-1.0)]),
        ),
        ("types", Array(ValueType::Int32, vec![I32(1), I32(-3)])),
        (
            "bools",
            Array(ValueType::Bool, vec![Bool(false), Bool(true)]),
        ),
        ("empty", Array(ValueType::Uint64, vec![])),
        (
            "nested",
            Array(
                ValueType::Array,
                vec![
                    Array(ValueType::Uint16, vec![U16(1), U16(2)]),
                    Array(ValueType::String, vec![MetadataValue::string("x")]),
                ],
            ),
        ),
    ]
}

/// A tensor as written: name, dimensions, type and data.
type Written = (String, Vec<u64>, DataType, Vec<u8>);

fn sample(version: u32, order: ByteOrder) -> (Writer, Vec<Written>) {
    let mut w = Writer::new();
    w.set_version(version).unwrap().set_byte_order(order);
    for (k, v) in every_value_type() {
        w.add_metadata(k, v).unwrap();
    }
    let tensors = vec![
        (
            "a".to_string(),
            vec![3, 2],
            DataType::F32,
            (0..24).collect::<Vec<u8>>(),
        ),
        ("b.q4".to_string(), vec![64], DataType::Q4_0, vec![7u8; 36]),
        ("c.scalar".to_string(), vec![], DataType::F16, vec![1, 2]),
        ("d.empty".to_string(), vec![0, 5], DataType::F32, vec![]),
        (
            "e.k".to_string(),
            vec![256, 2],
            DataType::Q6_K,
            vec![9u8; 420],
        ),
    ];
    for (n, d, t, data) in &tensors {
        w.add_tensor(n, d, *t, data.clone()).unwrap();
    }
    (w, tensors)
}

#[test]
fn everything_written_reads_back_in_every_version_and_byte_order() {
    for version in 1..=3 {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let (w, tensors) = sample(version, order);
            let bytes = w.to_bytes().unwrap();
            let f = GgufFile::from_bytes(&bytes[..]).unwrap();
            assert_eq!(f.version(), version);
            assert_eq!(f.byte_order(), order);
            assert_eq!(f.alignment(), 32);
            assert_eq!(f.data_offset() % 32, 0);
            let expected = every_value_type();
            assert_eq!(f.metadata_count(), expected.len());
            for ((k, v), entry) in expected.iter().zip(f.metadata()) {
                assert_eq!(entry.key, k.as_bytes());
                assert_eq!(
                    &MetadataValue::from(entry.value),
                    v,
                    "key {k} v{version} {order:?}"
                );
                assert_eq!(f.get(k).map(MetadataValue::from).as_ref(), Some(v));
            }
            assert_eq!(f.tensor_count(), tensors.len());
            for ((n, d, t, data), info) in tensors.iter().zip(f.tensors()) {
                assert_eq!(info.name, n.as_bytes());
                assert_eq!(&info.dims[..d.len()], &d[..]);
                assert!(info.dims[d.len()..].iter().all(|&x| x == 1));
                assert_eq!(info.n_dims as usize, d.len());
                assert_eq!(info.dtype, *t);
                assert_eq!(info.data, &data[..]);
                assert_eq!(info.file_offset % 32, 0);
                assert_eq!(f.tensor(n).unwrap(), info);
            }
        }
    }
}

#[test]
fn typed_array_decoding_respects_the_byte_order() {
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let (w, _) = sample(3, order);
        let bytes = w.to_bytes().unwrap();
        let f = GgufFile::from_bytes(bytes).unwrap();
        let scores = f.get("scores").unwrap().as_array().unwrap();
        assert_eq!(scores.to_vec::<f32>(), Some(vec![0.5, -1.0]));
        assert_eq!(scores.to_vec::<i32>(), None);
        let tokens: Vec<&[u8]> = f
            .get("tokens")
            .unwrap()
            .as_array()
            .unwrap()
            .strings()
            .unwrap()
            .collect();
        assert_eq!(tokens, vec![&b"<s>"[..], b"", b"ab"]);
        assert_eq!(f.get("u32"), Some(Value::U32(4_000_000_000)));
    }
}

#[test]
fn custom_alignment_is_written_and_honoured() {
    let (mut w, _) = sample(3, ByteOrder::Little);
    w.set_alignment(4096).unwrap();
    let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.alignment(), 4096);
    assert_eq!(f.data_offset() % 4096, 0);
    for t in f.tensors() {
        assert_eq!(t.file_offset % 4096, 0);
    }
}

/// A refused `general.alignment` leaves the alignment already set, where it stood.
#[test]
fn a_refused_alignment_keeps_the_previous_one() {
    let mut w = Writer::new();
    w.set_alignment(128).unwrap();
    w.add_metadata("k", MetadataValue::U8(1)).unwrap();
    for bad in [
        MetadataValue::U32(48),
        MetadataValue::U32(0),
        MetadataValue::U64(64),
    ] {
        let err = w.set_metadata("general.alignment", bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadAlignment);
        assert_eq!(w.alignment(), 128);
    }
    let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.alignment(), 128);
    assert_eq!(f.metadata_index("general.alignment"), Some(0));
}

#[test]
fn writer_refuses_what_the_reader_refuses() {
    let mut w = Writer::new();
    w.add_metadata("k", MetadataValue::U8(1)).unwrap();
    assert_eq!(
        w.add_metadata("k", MetadataValue::U8(2))
            .unwrap_err()
            .code(),
        ErrorCode::DuplicateKey
    );
    assert_eq!(
        w.add_metadata("", MetadataValue::U8(2)).unwrap_err().code(),
        ErrorCode::EmptyKey
    );
    assert_eq!(
        w.add_metadata(
            "arr",
            MetadataValue::Array(ValueType::Uint8, vec![MetadataValue::I8(1)])
        )
        .unwrap_err()
        .code(),
        ErrorCode::BadValueType
    );
    assert_eq!(
        w.set_alignment(3).unwrap_err().code(),
        ErrorCode::BadAlignment
    );
    assert_eq!(
        w.add_metadata("general.alignment", MetadataValue::U64(64))
            .unwrap_err()
            .code(),
        ErrorCode::BadAlignment
    );
    w.add_tensor("t", &[32], DataType::Q8_0, vec![0; 34])
        .unwrap();
    assert_eq!(
        w.add_tensor("t", &[32], DataType::Q8_0, vec![0; 34])
            .unwrap_err()
            .code(),
        ErrorCode::DuplicateTensor
    );
    assert_eq!(
        w.add_tensor("u", &[33], DataType::Q8_0, vec![0; 34])
            .unwrap_err()
            .code(),
        ErrorCode::BadBlockMultiple
    );
    assert_eq!(
        w.add_tensor("u", &[32], DataType::Q8_0, vec![0; 33])
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        w.add_tensor("u", &[1, 1, 1, 1, 1], DataType::F32, vec![0; 4])
            .unwrap_err()
            .code(),
        ErrorCode::TooManyDims
    );
    let mut deep = MetadataValue::Array(ValueType::Uint8, vec![]);
    for _ in 0..8 {
        deep = MetadataValue::Array(ValueType::Array, vec![deep]);
    }
    assert_eq!(
        w.add_metadata("deep", deep).unwrap_err().code(),
        ErrorCode::ArrayTooDeep
    );
}

#[test]
fn streamed_tensors_match_tensors_given_in_memory() {
    let mut whole = Writer::new();
    let mut streamed = Writer::new();
    let tensors = [
        ("a", vec![3u64], DataType::F32),
        ("b", vec![64, 2], DataType::Q4_0),
    ];
    for (name, dims, dtype) in &tensors {
        let size = dtype.tensor_bytes(dims).unwrap() as usize;
        whole.add_tensor(name, dims, *dtype, vec![7; size]).unwrap();
        streamed.add_tensor_info(name, dims, *dtype).unwrap();
    }
    assert_eq!(
        streamed.to_bytes().unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let mut bytes = streamed.header_bytes().unwrap();
    let data_offset = bytes.len();
    for ((_, dims, dtype), offset) in tensors.iter().zip(streamed.tensor_offsets().unwrap()) {
        let size = dtype.tensor_bytes(dims).unwrap() as usize;
        let at = data_offset + offset as usize;
        bytes.resize(at, 0);
        bytes.extend(std::iter::repeat_n(7, size));
    }
    bytes.resize(bytes.len().div_ceil(32) * 32, 0);
    assert_eq!(bytes, whole.to_bytes().unwrap());
}

/// An array given as a little-endian version-3 file encodes it is checked by the reader's rules
/// and written in the writer's own layout.
#[test]
fn encoded_arrays_are_checked_and_re_encoded() {
    let elements = [1u8, 0, 2, 0, 3, 0];
    let mut w = Writer::new();
    w.set_byte_order(ByteOrder::Big);
    w.set_array_encoded("e", ValueType::Uint16.id(), 3, &elements)
        .unwrap();
    let e = w
        .set_array_encoded("f", ValueType::Uint16.id(), 3, &[1, 0, 2, 0, 3, 0, 9])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(
        e.to_string()
            .contains("3 elements end after 6 of the 7 bytes given"),
        "{e}"
    );
    let e = w
        .set_array_encoded("f", ValueType::Uint16.id(), 3, &elements[..5])
        .unwrap_err();
    assert_ne!(e.code(), ErrorCode::None);
    assert!(w
        .set_array_encoded("", ValueType::Uint8.id(), 0, &[])
        .is_err());
    let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(f.metadata_count(), 1);
    let Some(Value::Array(a)) = f.get("e") else {
        panic!("e is not an array")
    };
    let got: Vec<MetadataValue> = a.iter().map(MetadataValue::from).collect();
    use MetadataValue::U16;
    assert_eq!(got, [U16(1), U16(2), U16(3)]);
}
