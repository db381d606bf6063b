//! The IQ quantizers' speed, side by side with ggml (figures in BENCHMARKS.md, "Quantization").
//!
//!   cargo run --release --example quantize_iq_bench -- [ROUNDS] [ROWS] [GGML_DIR] [TYPE]
//!
//! One thread. For each IQ type: ROWS rows (default 16) of 4096 bell-shaped random floats with
//! an importance column (random positive weights, as an importance matrix gives), quantized by
//! libgguf's `gguf::quantize::quantize` and by `ggml_quantize_chunk` of the pinned
//! `libggml-base.so` (GGML_DIR, default target/ggml) in the same process, ROUNDS rounds
//! (default 15) interleaved; MB/s of float input (4 bytes per value), minimum and median of the
//! thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time the thread ran, so other processes on a
//! busy machine do not count; their effect on the caches does).
//! The two outputs are compared byte for byte first (the run fails if they differ). ggml's grid
//! tables (`ggml_quantize_init`) and ours are built before timing.

mod common;
#[path = "../tests/ggml/dl.rs"]
mod ggml_dl;
#[path = "../tests/common/rng.rs"]
mod rng;

use common::cpu_model;
use ggml_dl::Lib;
use gguf::quantize::quantize;
use gguf::DataType;
use rng::Rng;
use std::ffi::c_void;
use std::path::Path;

/// The calling thread's CPU time, in seconds.
fn cpu_time() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

type Init = unsafe extern "C" fn(u32);
type Chunk = unsafe extern "C" fn(u32, *const f32, *mut c_void, i64, i64, i64, *const f32) -> usize;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).map_or(15, |a| a.parse().expect("ROUNDS"));
    let rows: usize = args.get(2).map_or(16, |a| a.parse().expect("ROWS"));
    let dir = args.get(3).map_or("target/ggml", String::as_str);
    let only = args.get(4);
    let lib = Lib::open(&Path::new(dir).join("libggml-base.so"));
    // SAFETY: the library stays loaded; the symbols are transmuted to their C signatures
    // (ggml.h).
    let (init, chunk) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Init>(lib.sym("ggml_quantize_init")),
            std::mem::transmute::<*mut c_void, Chunk>(lib.sym("ggml_quantize_chunk")),
        )
    };
    let n_per_row = 4096;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let src: Vec<f32> = (0..rows * n_per_row).map(|_| rng.bell()).collect();
    let imp: Vec<f32> = (0..n_per_row).map(|_| rng.uniform() * 1.9 + 2.0).collect();
    let mb = (src.len() * 4) as f64 / 1e6;
    println!("CPU: {}", cpu_model());
    println!(
        "one thread, {rows} rows of {n_per_row} floats ({mb:.2} MB) with importance, {rounds} rounds"
    );
    println!("| type | libgguf MB/s (min time) | libgguf MB/s (median) | ggml MB/s (min time) | ggml MB/s (median) | ratio (min) | ratio (median) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut inits = Vec::new();
    for t in [
        DataType::IQ4_NL,
        DataType::IQ4_XS,
        DataType::IQ3_XXS,
        DataType::IQ3_S,
        DataType::IQ2_XXS,
        DataType::IQ2_XS,
        DataType::IQ2_S,
        DataType::IQ1_S,
        DataType::IQ1_M,
    ] {
        if only.is_some_and(|o| o != t.name()) {
            continue;
        }
        let len = rows * n_per_row / t.block_elems() as usize * t.block_bytes() as usize;
        let mut ours = vec![0u8; len];
        let mut theirs = vec![0u8; len];
        let run_ours = |out: &mut [u8]| {
            quantize(t, &src, n_per_row, Some(&imp), out).unwrap();
        };
        let run_ggml = |out: &mut [u8]| {
            // SAFETY: src holds rows * n_per_row floats, out their blocks, imp n_per_row.
            let n = unsafe {
                chunk(
                    t.id(),
                    src.as_ptr(),
                    out.as_mut_ptr().cast(),
                    0,
                    rows as i64,
                    n_per_row as i64,
                    imp.as_ptr(),
                )
            };
            assert_eq!(n, out.len());
        };
        // SAFETY: builds ggml's tables for t.
        let t0 = std::time::Instant::now();
        unsafe { init(t.id()) };
        let ggml_init = t0.elapsed().as_secs_f64();
        let t0 = std::time::Instant::now();
        run_ours(&mut ours);
        let ours_first = t0.elapsed().as_secs_f64();
        run_ggml(&mut theirs);
        inits.push(format!(
            "{}: ggml_quantize_init {:.3} s, libgguf's first call (grids built) {:.3} s",
            t.name(),
            ggml_init,
            ours_first
        ));
        assert!(ours == theirs, "{t:?}: libgguf and ggml differ");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t0 = cpu_time();
            run_ours(&mut ours);
            a.push(cpu_time() - t0);
            let t0 = cpu_time();
            run_ggml(&mut theirs);
            b.push(cpu_time() - t0);
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let (amin, amed, bmin, bmed) = (a[0], a[a.len() / 2], b[0], b[b.len() / 2]);
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.2}x |",
            t.name(),
            mb / amin,
            mb / amed,
            mb / bmin,
            mb / bmed,
            bmin / amin,
            bmed / amed
        );
    }
    println!();
    println!("one-time setup (wall time, first use in the process):");
    for l in inits {
        println!("  {l}");
    }
}
