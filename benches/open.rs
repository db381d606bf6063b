//! Benchmarks of the Rust API on the benchmark models (`bench/models.rs`, written into
//! `target/bench-models` when missing): `MappedFile::open`, `GgufFile::from_bytes` on an
//! in-memory copy, lookups by name, and decoding whole vocabularies. Before them it prints how
//! many heap allocations (and bytes) one open makes, counted by this benchmark's global
//! allocator.
//!
//! cargo bench --bench open [-- FILTER]      (`make bench` runs it after bench/run.sh)
//!
//! Each benchmark is warmed up for half a second, then timed in 21 samples of about 0.1 s each;
//! it prints the time of one iteration as the minimum and the median over the samples (and the
//! elements per second at the median, where it has a count). A benchmark runs when its name
//! (`group/function/model`) contains FILTER. The timing loop is this file's own: the test builds
//! then compile no benchmark framework.

#[allow(dead_code)]
#[path = "../bench/models.rs"]
mod models;

use gguf::{GgufFile, MappedFile};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

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

/// The timing loop: a name filter from the command line, and one line of results per benchmark.
struct Bench {
    filter: Option<String>,
}

impl Bench {
    /// The first argument that is not an option (cargo passes `--bench`) is the filter.
    fn from_args() -> Bench {
        Bench {
            filter: std::env::args().skip(1).find(|a| !a.starts_with('-')),
        }
    }

    /// Times `f`, named `group/function/model`, with `elements` items per iteration if given.
    fn run<T>(&self, name: &str, elements: Option<u64>, mut f: impl FnMut() -> T) {
        if self.filter.as_deref().is_some_and(|w| !name.contains(w)) {
            return;
        }
        const SAMPLES: usize = 21;
        const SAMPLE: Duration = Duration::from_millis(100);
        // Warm up for half a second, learning how many iterations fill a sample.
        let (mut iterations, started) = (0u64, Instant::now());
        while started.elapsed() < Duration::from_millis(500) {
            black_box(f());
            iterations += 1;
        }
        let per_sample = (iterations as f64 * SAMPLE.as_secs_f64()
            / started.elapsed().as_secs_f64())
        .ceil()
        .max(1.0) as u64;
        let mut times: Vec<f64> = (0..SAMPLES)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..per_sample {
                    black_box(f());
                }
                t.elapsed().as_secs_f64() / per_sample as f64
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let (min, median) = (times[0], times[SAMPLES / 2]);
        let rate = elements.map_or(String::new(), |n| {
            format!("  {:.1} M elements/s", n as f64 / median / 1e6)
        });
        println!(
            "{name:<56} min {:>10}  median {:>10}{rate}",
            show(min),
            show(median)
        );
    }
}

/// A time of one iteration, in the unit that suits it.
fn show(seconds: f64) -> String {
    match seconds {
        s if s < 1e-6 => format!("{:.1} ns", s * 1e9),
        s if s < 1e-3 => format!("{:.2} µs", s * 1e6),
        s => format!("{:.3} ms", s * 1e3),
    }
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

fn bench_open(b: &Bench) {
    for name in models::ALL {
        let path = model(name);
        b.run(&format!("open/MappedFile::open/{name}"), None, || {
            MappedFile::open(black_box(&path)).unwrap()
        });
    }
    for name in [models::GEMMA3, models::LLAMA3, models::MANY_TENSORS] {
        let data = std::fs::read(model(name)).unwrap();
        b.run(&format!("open/GgufFile::from_bytes/{name}"), None, || {
            GgufFile::from_bytes(black_box(&data[..])).unwrap()
        });
    }
}

fn bench_lookup(b: &Bench) {
    let many = MappedFile::open(model(models::MANY_TENSORS)).unwrap();
    let names: Vec<Vec<u8>> = many.tensors().map(|t| t.name.to_vec()).collect();
    let name = format!("lookup/tensor by name/{}", models::MANY_TENSORS);
    b.run(&name, Some(names.len() as u64), || {
        for n in &names {
            black_box(many.tensor(black_box(n)).unwrap());
        }
    });
    for file_name in [models::MANY_TENSORS, models::GEMMA3] {
        let file = MappedFile::open(model(file_name)).unwrap();
        let keys: Vec<Vec<u8>> = file.metadata().map(|e| e.key.to_vec()).collect();
        let name = format!("lookup/metadata by key/{file_name}");
        b.run(&name, Some(keys.len() as u64), || {
            for k in &keys {
                black_box(file.get(black_box(k)).unwrap());
            }
        });
    }
}

fn bench_vocab(b: &Bench) {
    for (file_name, key) in [
        (models::GEMMA3, models::TOKENS_KEY),
        (models::LLAMA3, models::TOKENS_KEY),
        (models::LLAMA3, "tokenizer.ggml.merges"),
    ] {
        let file = MappedFile::open(model(file_name)).unwrap();
        let array = file.get(key).and_then(|v| v.as_array()).unwrap();
        let name = format!("vocab/{key} strings/{file_name}");
        b.run(&name, Some(array.len()), || {
            let mut out: Vec<&[u8]> = Vec::with_capacity(array.len() as usize);
            out.extend(array.strings().unwrap());
            out
        });
    }
    let file = MappedFile::open(model(models::GEMMA3)).unwrap();
    let scores = file
        .get("tokenizer.ggml.scores")
        .and_then(|v| v.as_array())
        .unwrap();
    let name = format!(
        "vocab/tokenizer.ggml.scores to_vec::<f32>/{}",
        models::GEMMA3
    );
    b.run(&name, Some(scores.len()), || {
        scores.to_vec::<f32>().unwrap()
    });
}

fn main() {
    if let Err(e) = models::generate(&models_dir(), true) {
        eprintln!("cannot write the benchmark models: {e}");
        std::process::exit(1);
    }
    report_allocations();
    let b = Bench::from_args();
    bench_open(&b);
    bench_lookup(&b);
    bench_vocab(&b);
}
