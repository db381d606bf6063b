//! Criterion benchmarks of the Rust API on the benchmark models (`bench/models.rs`, written into
//! `target/bench-models` when missing): `MappedFile::open`, `GgufFile::from_bytes` on an
//! in-memory copy, lookups by name, and decoding whole vocabularies. Before them it prints how
//! many heap allocations (and bytes) one open makes, counted by this benchmark's global
//! allocator.
//!
//! cargo bench --bench open [-- FILTER]      (`make bench` runs it after bench/run.sh)

#[allow(dead_code)]
#[path = "../bench/models.rs"]
mod models;

use criterion::{BenchmarkId, Criterion, Throughput};
use gguf::{GgufFile, MappedFile};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The system allocator, counting allocations and the bytes they ask for.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (count, bytes) made while `f` runs; what it returns is dropped afterwards.
fn count_allocations<T>(f: impl FnOnce() -> T) -> (u64, u64, T) {
    let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    let out = f();
    let (a1, b1) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    (a1 - a0, b1 - b0, out)
}

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-models")
}

fn model(name: &str) -> PathBuf {
    models_dir().join(name)
}

/// Prints the allocations of one `MappedFile::open` and one `GgufFile::from_bytes` per model.
fn report_allocations() {
    println!("heap allocations of one open (counting global allocator):");
    for name in models::ALL {
        let path = model(name);
        let (n, bytes, file) = count_allocations(|| MappedFile::open(&path).unwrap());
        drop(file);
        println!("  {name:<24} MappedFile::open        {n:>4} allocations {bytes:>9} bytes");
        println!("RESULT file={name} what=rust_open_allocs allocs={n} bytes={bytes}");
        if name != models::GEMMA3_1TIB {
            let data = std::fs::read(&path).unwrap();
            let (n, bytes, file) = count_allocations(|| GgufFile::from_bytes(&data[..]).unwrap());
            drop(file);
            println!("  {name:<24} GgufFile::from_bytes    {n:>4} allocations {bytes:>9} bytes");
            println!("RESULT file={name} what=rust_from_bytes_allocs allocs={n} bytes={bytes}");
        }
    }
}

fn bench_open(c: &mut Criterion) {
    let mut g = c.benchmark_group("open");
    for name in models::ALL {
        let path = model(name);
        g.bench_function(BenchmarkId::new("MappedFile::open", name), |b| {
            b.iter(|| MappedFile::open(black_box(&path)).unwrap())
        });
    }
    for name in [models::GEMMA3, models::LLAMA3, models::MANY_TENSORS] {
        let data = std::fs::read(model(name)).unwrap();
        g.bench_function(BenchmarkId::new("GgufFile::from_bytes", name), |b| {
            b.iter(|| GgufFile::from_bytes(black_box(&data[..])).unwrap())
        });
    }
    g.finish();
}

fn bench_lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("lookup");
    let many = MappedFile::open(model(models::MANY_TENSORS)).unwrap();
    let names: Vec<Vec<u8>> = many.tensors().map(|t| t.name.to_vec()).collect();
    g.throughput(Throughput::Elements(names.len() as u64));
    g.bench_function(
        BenchmarkId::new("tensor by name", models::MANY_TENSORS),
        |b| {
            b.iter(|| {
                for n in &names {
                    black_box(many.tensor(black_box(n)).unwrap());
                }
            })
        },
    );
    for file_name in [models::MANY_TENSORS, models::GEMMA3] {
        let file = MappedFile::open(model(file_name)).unwrap();
        let keys: Vec<Vec<u8>> = file.metadata().map(|e| e.key.to_vec()).collect();
        g.throughput(Throughput::Elements(keys.len() as u64));
        g.bench_function(BenchmarkId::new("metadata by key", file_name), |b| {
            b.iter(|| {
                for k in &keys {
                    black_box(file.get(black_box(k)).unwrap());
                }
            })
        });
    }
    g.finish();
}

fn bench_vocab(c: &mut Criterion) {
    let mut g = c.benchmark_group("vocab");
    for (file_name, key) in [
        (models::GEMMA3, models::TOKENS_KEY),
        (models::LLAMA3, models::TOKENS_KEY),
        (models::LLAMA3, "tokenizer.ggml.merges"),
    ] {
        let file = MappedFile::open(model(file_name)).unwrap();
        let array = file.get(key).and_then(|v| v.as_array()).unwrap();
        g.throughput(Throughput::Elements(array.len()));
        g.bench_function(BenchmarkId::new(format!("{key} strings"), file_name), |b| {
            b.iter(|| {
                let mut out: Vec<&[u8]> = Vec::with_capacity(array.len() as usize);
                out.extend(array.strings().unwrap());
                out
            })
        });
    }
    let file = MappedFile::open(model(models::GEMMA3)).unwrap();
    let scores = file
        .get("tokenizer.ggml.scores")
        .and_then(|v| v.as_array())
        .unwrap();
    g.throughput(Throughput::Elements(scores.len()));
    g.bench_function(
        BenchmarkId::new("tokenizer.ggml.scores to_vec::<f32>", models::GEMMA3),
        |b| b.iter(|| scores.to_vec::<f32>().unwrap()),
    );
    g.finish();
}

fn main() {
    if let Err(e) = models::generate(&models_dir(), true) {
        eprintln!("cannot write the benchmark models: {e}");
        std::process::exit(1);
    }
    report_allocations();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench_open(&mut c);
    bench_lookup(&mut c);
    bench_vocab(&mut c);
    c.final_summary();
}
