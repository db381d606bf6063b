//! Copying a file's metadata costs no allocation per vocabulary string (arrays are kept as the
//! file encodes them), whether copied with `Writer::copy_metadata_from` or
//! `gguf_writer_from_file`, or written out; and such arrays are re-encoded right when the
//! file written has another version or byte order. Allocations are counted per thread.

use gguf::{ByteOrder, DataType, GgufFile, MetadataValue, Value, ValueType, Writer};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = CALLS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = CALLS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = CALLS.with(Cell::get);
    let out = f();
    (out, CALLS.with(Cell::get) - before)
}

/// A model with an `n`-token vocabulary (strings, scores, types), nested arrays and 3 tensors.
fn vocab_model(n: usize) -> Vec<u8> {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        MetadataValue::Array(
            ValueType::String,
            (0..n)
                .map(|i| MetadataValue::string(format!("tok{i}")))
                .collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.scores",
        MetadataValue::Array(
            ValueType::Float32,
            (0..n).map(|i| MetadataValue::F32(i as f32)).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "nested",
        MetadataValue::Array(
            ValueType::Array,
            vec![
                MetadataValue::Array(ValueType::Uint16, vec![MetadataValue::U16(7)]),
                MetadataValue::Array(ValueType::String, vec![MetadataValue::string("x")]),
            ],
        ),
    )
    .unwrap();
    for i in 0..3 {
        w.add_tensor(format!("t.{i}"), &[8], DataType::F32, vec![i as u8; 32])
            .unwrap();
    }
    w.to_bytes().unwrap()
}

/// Every key and value of `f`, in order, as owned values.
fn metadata(f: &GgufFile<Vec<u8>>) -> Vec<(Vec<u8>, MetadataValue)> {
    f.metadata()
        .map(|e| (e.key.to_vec(), MetadataValue::from(e.value)))
        .collect()
}

#[test]
fn copying_a_vocabulary_allocates_per_array_not_per_string() {
    let mut counts = Vec::new();
    for n in [1_000, 100_000] {
        let file = GgufFile::from_bytes(vocab_model(n)).unwrap();
        let mut w = Writer::new();
        let (_, copy) = allocations(|| {
            w.copy_metadata_from(&file).unwrap();
        });
        for t in file.tensors() {
            w.add_tensor(t.name, &t.dims[..1], t.dtype, t.data.to_vec())
                .unwrap();
        }
        let (bytes, write) = allocations(|| w.to_bytes().unwrap());
        assert!(bytes == *file.bytes(), "a copy is byte-identical");
        counts.push((n, copy, write));
    }
    eprintln!("allocations (tokens, copy, write): {counts:?}");
    let (small, large) = (counts[0], counts[1]);
    // 100 times the strings, the same number of allocations (the buffers grow a few more times).
    assert!(large.1 <= small.1 + 4, "copy: {counts:?}");
    assert!(large.1 < 40, "copy: {counts:?}");
    assert!(large.2 <= small.2 + 40, "write: {counts:?}");
    assert!(large.2 < 80, "write: {counts:?}");
}

#[test]
fn the_c_editor_allocates_per_array_not_per_string() {
    use gguf::ffi::*;
    let mut counts = Vec::new();
    for n in [1_000, 100_000] {
        let bytes = vocab_model(n);
        // SAFETY: `bytes` outlives the handle; the writer is freed before the handle closes.
        let copy = unsafe {
            let src = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
            assert!(!src.is_null());
            let (w, copy) = allocations(|| gguf_writer_from_file(src));
            assert!(!w.is_null());
            gguf_writer_free(w);
            gguf_close(src);
            copy
        };
        counts.push(copy);
    }
    eprintln!("gguf_writer_from_file allocations (1000, 100000 tokens): {counts:?}");
    assert!(counts[1] <= counts[0] + 4, "{counts:?}");
}

#[test]
fn copied_arrays_are_re_encoded_for_another_version_or_byte_order() {
    let source = GgufFile::from_bytes(vocab_model(50)).unwrap();
    let want = metadata(&source);
    for (version, order) in [
        (1, ByteOrder::Little),
        (2, ByteOrder::Big),
        (3, ByteOrder::Big),
        (3, ByteOrder::Little),
    ] {
        let mut w = Writer::new();
        w.set_version(version).unwrap().set_byte_order(order);
        w.copy_metadata_from(&source).unwrap();
        let out = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
        assert_eq!(out.version(), version);
        assert_eq!(out.byte_order(), order);
        assert_eq!(metadata(&out), want, "version {version}, {order:?}");
        // And back again, from that file.
        let mut back = Writer::new();
        back.copy_metadata_from(&out).unwrap();
        let again = GgufFile::from_bytes(back.to_bytes().unwrap()).unwrap();
        assert_eq!(metadata(&again), want);
        let tokens = again.get("tokenizer.ggml.tokens").unwrap();
        let Value::Array(a) = tokens else {
            panic!("{tokens:?}")
        };
        assert_eq!(a.strings().unwrap().nth(49), Some(&b"tok49"[..]));
    }
}
