//! Every output and every source of tensor data write the same file: `Writer::write_file`,
//! `Writer::to_bytes`, `Writer::write_to_slice` and a stream (`Writer::begin_file`), from bytes
//! owned or shared, a range of an open file, or a model, mapped, in memory or read by position
//! (`Writer::from_model`). And the refusals
//! of each, which change nothing.

use gguf::source::Source;
use gguf::writer::TensorData;
use gguf::{DataType, ErrorCode, GgufFile, MetadataValue, Model, Writer};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// A fresh, empty directory for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("writer_outputs")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Tensor sizes: below and above the size from which files are copied inside the kernel.
const SIZES: [usize; 3] = [12, 200_000, 5];

fn tensor_data(i: usize, size: usize) -> Vec<u8> {
    (0..size).map(|j| (j * 7 + i * 13) as u8).collect()
}

/// The model, every tensor given as `data(i, bytes)`.
fn model(data: &mut dyn FnMut(usize, Vec<u8>) -> TensorData) -> Writer {
    let mut w = Writer::new();
    w.set_sync(false);
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    for (i, &size) in SIZES.iter().enumerate() {
        let bytes = tensor_data(i, size);
        w.add_tensor_data(
            format!("t.{i}"),
            &[size as u64],
            DataType::I8,
            data(i, bytes),
        )
        .unwrap();
    }
    w
}

#[test]
fn every_output_and_every_source_write_the_same_bytes() {
    let dir = fresh_dir("same_bytes");
    let expected = model(&mut |_, b| TensorData::bytes(b)).to_bytes().unwrap();

    // The tensors' bytes in a file of their own, back to back.
    let data_path = dir.join("data.bin");
    let mut offsets = Vec::new();
    {
        let mut f = std::fs::File::create(&data_path).unwrap();
        f.write_all(b"junk").unwrap();
        let mut at = 4u64;
        for (i, &size) in SIZES.iter().enumerate() {
            offsets.push(at);
            f.write_all(&tensor_data(i, size)).unwrap();
            at += size as u64;
        }
    }
    let file = Arc::new(std::fs::File::open(&data_path).unwrap());
    let shared: Arc<Vec<u8>> = Arc::new(std::fs::read(&data_path).unwrap());

    let writers = [
        ("shared", {
            let shared = Arc::clone(&shared);
            model(&mut |i, b| {
                let at = offsets[i] as usize;
                TensorData::shared(shared.clone(), at..at + b.len()).unwrap()
            })
        }),
        (
            "file range",
            model(&mut |i, _| TensorData::file_range(Arc::clone(&file), offsets[i])),
        ),
        (
            "file range, mapped",
            model(&mut |i, b| {
                let at = offsets[i] as usize;
                TensorData::file_range_mapped(
                    Arc::clone(&file),
                    offsets[i],
                    shared.clone(),
                    at..at + b.len(),
                )
                .unwrap()
            }),
        ),
    ];
    for (what, w) in &writers {
        assert_eq!(w.file_size().unwrap(), expected.len() as u64, "{what}");
        assert!(w.to_bytes().unwrap() == expected, "{what}: to_bytes");
        let out = dir.join("out.gguf");
        w.write_file(&out).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == expected,
            "{what}: write_file"
        );
        let mut buffer = vec![0xa5u8; expected.len() + 3];
        assert_eq!(
            w.write_to_slice(&mut buffer).unwrap(),
            expected.len() as u64
        );
        assert!(
            buffer[..expected.len()] == expected,
            "{what}: write_to_slice"
        );
        assert_eq!(buffer[expected.len()..], [0xa5; 3], "{what}: past the file");
    }

    // Streamed: the same bytes.
    let streamed = model(&mut |_, _| TensorData::streamed());
    let out = dir.join("streamed.gguf");
    let mut stream = streamed.begin_file(&out).unwrap();
    assert!(stream.is_open());
    for (i, &size) in SIZES.iter().enumerate() {
        assert_eq!(stream.written(), i);
        stream.write_tensor_data(&tensor_data(i, size)).unwrap();
    }
    stream.finish().unwrap();
    assert!(!stream.is_open());
    assert!(std::fs::read(&out).unwrap() == expected);
}

#[test]
fn a_model_is_copied_from_any_source() {
    let dir = fresh_dir("from_model");
    let original = model(&mut |_, b| TensorData::bytes(b));
    let path = dir.join("model.gguf");
    original.write_file(&path).unwrap();
    let expected = original.to_bytes().unwrap();
    let lent: &'static [u8] = Vec::leak(expected.clone());
    let models = [
        Model::open(&path, Default::default()).unwrap(),
        // Not mapped: only the header is in memory, the data is read by position.
        Model::open(
            &path,
            gguf::OpenOptions {
                no_map: true,
                ..Default::default()
            },
        )
        .unwrap(),
        GgufFile::from_bytes(Source::Lent(lent))
            .and_then(|f| Model::single(f, "<memory>".to_string()))
            .unwrap(),
    ];
    assert!(!models[1].first().source().in_memory());
    for m in models {
        let m = Arc::new(m);
        let w = Writer::from_model(&m).unwrap();
        assert!(w.to_bytes().unwrap() == expected);
        let out = dir.join("copy.gguf");
        w.write_file(&out).unwrap();
        assert!(std::fs::read(&out).unwrap() == expected);
    }
}

#[test]
fn refusals_change_nothing() {
    let mut w = model(&mut |_, b| TensorData::bytes(b));

    // A tensor's checks, whatever its source.
    let e = w
        .add_tensor("x", &[4], DataType::F32, vec![0; 15])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.to_string().contains("takes 16 bytes, 15 given"), "{e}");
    let e = w
        .add_tensor_data("t.0", &[4], DataType::F32, TensorData::streamed())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::DuplicateTensor);
    let owner: Arc<Vec<u8>> = Arc::new(vec![0; 8]);
    let e = TensorData::shared(owner, 4..12).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(w.tensor_count(), SIZES.len());

    // A buffer one byte short is refused and untouched.
    let size = w.file_size().unwrap() as usize;
    let mut short = vec![0xa5u8; size - 1];
    let e = w.write_to_slice(&mut short).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.to_string().contains("Writer::file_size"), "{e}");
    assert!(short.iter().all(|&b| b == 0xa5));

    // A tensor streamed: no whole file, in memory or on disk.
    w.add_tensor_info("late", &[3], DataType::I8).unwrap();
    let e = w.to_bytes().unwrap_err();
    assert!(e.to_string().contains("'late' has no data"), "{e}");
    let mut buffer = vec![0u8; size + 64];
    assert!(w.write_to_slice(&mut buffer).is_err());
    let dir = fresh_dir("refusals");
    assert!(w.write_file(dir.join("x.gguf")).is_err());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    // A stream refuses wrong sizes, too many tensors and an early finish, changing nothing.
    let path = dir.join("streamed.gguf");
    let mut stream = w.begin_file(&path).unwrap();
    let e = stream.write_tensor_data(&[0; 11]).unwrap_err();
    assert!(
        e.to_string().contains("tensor 0 takes 12 bytes, 11 given"),
        "{e}"
    );
    let e = stream.finish().unwrap_err();
    assert!(
        e.to_string()
            .contains("only 0 of the 4 tensors' data were written"),
        "{e}"
    );
    assert!(stream.is_open());
    for (i, &size) in SIZES.iter().enumerate() {
        stream.write_tensor_data(&tensor_data(i, size)).unwrap();
    }
    stream.write_tensor_data(&[1, 2, 3]).unwrap();
    let e = stream.write_tensor_data(&[1, 2, 3]).unwrap_err();
    assert!(
        e.to_string()
            .contains("every tensor's data is already written"),
        "{e}"
    );
    assert!(!path.exists());
    stream.finish().unwrap();
    assert!(stream.finish().is_err());
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.tensor("late").unwrap().data, [1, 2, 3]);
    // Dropped before finishing, a stream leaves nothing.
    let abandoned = dir.join("abandoned.gguf");
    let mut stream = w.begin_file(&abandoned).unwrap();
    stream.write_tensor_data(&tensor_data(0, SIZES[0])).unwrap();
    drop(stream);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}
