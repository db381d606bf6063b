//! Hostile counts cost nothing: a file under 1 KB that claims 2^63 elements, strings, keys or
//! tensors is refused quickly and with almost no memory, measured by a counting allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

struct Counting;

// Per thread, so the test harness's other threads do not disturb a measurement. `const`
// initialisation keeps the counters themselves from allocating.
thread_local! {
    static BYTES: Cell<usize> = const { Cell::new(0) };
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    let _ = BYTES.try_with(|b| b.set(b.get() + bytes));
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
}

fn counters() -> (usize, usize) {
    (BYTES.with(Cell::get), CALLS.with(Cell::get))
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn header(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut f = b"GGUF".to_vec();
    f.extend_from_slice(&3u32.to_le_bytes());
    f.extend_from_slice(&tensors.to_le_bytes());
    f.extend_from_slice(&kvs.to_le_bytes());
    f
}

fn key(f: &mut Vec<u8>, k: &str, ty: u32) {
    f.extend_from_slice(&(k.len() as u64).to_le_bytes());
    f.extend_from_slice(k.as_bytes());
    f.extend_from_slice(&ty.to_le_bytes());
}

/// Parses `bytes` (expecting a refusal) and returns the time, bytes allocated and allocations.
fn measure(bytes: &[u8]) -> (gguf::ErrorCode, Duration, usize, usize) {
    let (b0, c0) = counters();
    let start = Instant::now();
    let result = gguf::GgufFile::from_bytes(bytes);
    let elapsed = start.elapsed();
    let (b1, c1) = counters();
    let code = result.err().expect("a hostile file was accepted").code();
    (code, elapsed, b1 - b0, c1 - c0)
}

fn hostile_files() -> Vec<(&'static str, Vec<u8>)> {
    let huge = 1u64 << 63;
    let mut files = vec![
        ("2^63 tensors", header(huge, 0)),
        ("2^63 keys", header(0, huge)),
    ];
    let mut strings = header(0, 1);
    key(&mut strings, "tokenizer.ggml.tokens", 9);
    strings.extend_from_slice(&8u32.to_le_bytes());
    strings.extend_from_slice(&huge.to_le_bytes());
    strings.extend_from_slice(&[0; 64]);
    files.push(("array of 2^63 strings", strings));
    let mut floats = header(0, 1);
    key(&mut floats, "tokenizer.ggml.scores", 9);
    floats.extend_from_slice(&6u32.to_le_bytes());
    floats.extend_from_slice(&huge.to_le_bytes());
    files.push(("array of 2^63 floats", floats));
    let mut nested = header(0, 1);
    key(&mut nested, "nested", 9);
    nested.extend_from_slice(&9u32.to_le_bytes());
    nested.extend_from_slice(&huge.to_le_bytes());
    files.push(("array of 2^63 arrays", nested));
    let mut long = header(0, 1);
    key(&mut long, "general.name", 8);
    long.extend_from_slice(&huge.to_le_bytes());
    files.push(("string of 2^63 bytes", long));
    let mut elements = header(1, 0);
    elements.extend_from_slice(&1u64.to_le_bytes());
    elements.push(b't');
    elements.extend_from_slice(&4u32.to_le_bytes());
    for _ in 0..4 {
        elements.extend_from_slice(&(1u64 << 16).to_le_bytes());
    }
    elements.extend_from_slice(&0u32.to_le_bytes());
    elements.extend_from_slice(&0u64.to_le_bytes());
    files.push(("tensor of 2^64 elements", elements));
    files
}

#[test]
fn hostile_counts_are_refused_in_under_10ms_and_1mb() {
    for (what, bytes) in hostile_files() {
        assert!(
            bytes.len() < 1024,
            "{what}: fixture is {} bytes",
            bytes.len()
        );
        // Best of a few runs: the bound is on the work done, not on scheduler noise.
        let (code, elapsed, allocated, calls) = (0..5)
            .map(|_| measure(&bytes))
            .min_by_key(|m| m.1)
            .expect("five runs");
        println!("{what}: {code:?} in {elapsed:?}, {allocated} bytes in {calls} allocations");
        assert!(
            elapsed < Duration::from_millis(10),
            "{what}: took {elapsed:?}"
        );
        assert!(allocated < 1 << 20, "{what}: allocated {allocated} bytes");
    }
}

#[test]
fn refusals_allocate_only_their_message() {
    // Refusing a 2^63-key file allocates the error message and nothing sized by the claim.
    let (_, _, allocated, calls) = measure(&header(0, 1 << 63));
    assert!(allocated < 4096, "allocated {allocated} bytes");
    assert!(calls < 8, "{calls} allocations");
}

/// A model with a 262144-token vocabulary (tokens, scores, token types) and 240 tensors.
fn big_vocabulary_model() -> Vec<u8> {
    use gguf::{DataType, MetadataValue as V, ValueType, Writer};
    let n = 262_144;
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("gemma3"))
        .unwrap();
    let tokens = (0..n).map(|i| V::string(format!("▁t{i}"))).collect();
    w.add_metadata("tokenizer.ggml.tokens", V::Array(ValueType::String, tokens))
        .unwrap();
    let scores = (0..n).map(|i| V::F32(i as f32)).collect();
    w.add_metadata(
        "tokenizer.ggml.scores",
        V::Array(ValueType::Float32, scores),
    )
    .unwrap();
    let types = (0..n).map(|_| V::I32(1)).collect();
    w.add_metadata(
        "tokenizer.ggml.token_type",
        V::Array(ValueType::Int32, types),
    )
    .unwrap();
    for i in 0..240 {
        w.add_tensor(
            format!("blk.{}.w{}", i / 13, i % 13),
            &[32],
            DataType::Q8_0,
            vec![0; 34],
        )
        .unwrap();
    }
    w.to_bytes().unwrap()
}

/// Opening allocates nothing per array element: a few dozen allocations, well under 256 KB,
/// for a 262144-token vocabulary (both the Rust parse and the C handle with its records).
#[test]
fn opening_a_big_vocabulary_allocates_nothing_per_element() {
    let bytes = big_vocabulary_model();
    let (b0, c0) = counters();
    let f = gguf::GgufFile::from_bytes(&bytes[..]).unwrap();
    let (b1, c1) = counters();
    assert_eq!(f.tensor_count(), 240);
    drop(f);
    println!("Rust parse: {} bytes in {} allocations", b1 - b0, c1 - c0);
    assert!(c1 - c0 <= 16, "{} allocations", c1 - c0);
    assert!(b1 - b0 < 128 << 10, "{} bytes", b1 - b0);

    let (b0, c0) = counters();
    // SAFETY: `bytes` outlives the handle, closed below.
    let h = unsafe { gguf::ffi::gguf_open_memory(bytes.as_ptr().cast(), bytes.len()) };
    let (b1, c1) = counters();
    assert!(!h.is_null());
    // SAFETY: a live handle, closed once.
    unsafe { gguf::ffi::gguf_close(h) };
    println!("C handle: {} bytes in {} allocations", b1 - b0, c1 - c0);
    assert!(c1 - c0 <= 36, "{} allocations", c1 - c0);
    assert!(b1 - b0 < 256 << 10, "{} bytes", b1 - b0);
}
