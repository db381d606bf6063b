//! The whole requantize command against llama.cpp's: wall time of `gguf::requantize` (with the
//! flush before the rename, its default, and without) and of `llama_model_quantize` (the
//! pinned libllama, `make ggml`; it never flushes) on the same F16 source, same preset, same
//! thread count, in the same process, their outputs compared byte for byte.
//!
//!   cargo run --release --example requantize_bench -- [DIR] [PRESETS] [THREADS] [LAYERS] [ROUNDS] [SHAPE]
//!
//! The source is a llama-like model written into DIR (default target/requantize-bench): SHAPE
//! `base` (the default) is 1024 wide, FFN 2816, vocabulary 32000; `small` is 256 wide, FFN 768,
//! vocabulary 8000; LAYERS layers (default 8), F16 weights of random values. PRESETS is a
//! comma-separated list of llama-quantize presets (`COPY` too; default Q4_K_M), THREADS
//! defaults to 2. After one warm-up run of each side, each runs ROUNDS times (default 3),
//! interleaved; a table row per preset gives the minimum and the median wall time.

mod common;
#[path = "../tests/ggml/dl.rs"]
mod ggml_dl;

use common::cpu_model;
use ggml_dl::Lib;
use gguf::requantize::{requantize_file, Options, Progress};
use gguf::{DataType, MetadataValue, Writer};
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[repr(C)]
#[derive(Clone, Copy)]
struct QuantizeParams {
    nthread: i32,
    ftype: u32,
    output_tensor_type: u32,
    token_embedding_type: u32,
    flags: [bool; 6],
    imatrix: *const c_void,
    kv_overrides: *const c_void,
    tt_overrides: *const c_void,
    prune_layers: *const i32,
    max_buf_size: usize,
}

unsafe extern "C" fn quiet(_: u32, _: *const c_char, _: *mut c_void) {}

/// The model's shape: width, feed-forward length, vocabulary.
fn shape(name: &str) -> (u64, u64, u64) {
    match name {
        "small" => (256, 768, 8000),
        "base" => (1024, 2816, 32000),
        _ => panic!("SHAPE is small or base, not {name}"),
    }
}

fn write_source(path: &Path, layers: u32, (e, f, v): (u64, u64, u64)) {
    let mut w = Writer::new();
    w.set_sync(false);
    let s = MetadataValue::string;
    for (k, val) in [
        ("general.architecture", s("llama")),
        ("general.file_type", MetadataValue::U32(1)),
        ("llama.block_count", MetadataValue::U32(layers)),
        ("llama.context_length", MetadataValue::U32(2048)),
        ("llama.embedding_length", MetadataValue::U32(e as u32)),
        ("llama.feed_forward_length", MetadataValue::U32(f as u32)),
        ("llama.attention.head_count", MetadataValue::U32(16)),
        ("llama.attention.head_count_kv", MetadataValue::U32(4)),
        (
            "llama.rope.dimension_count",
            MetadataValue::U32((e / 16) as u32),
        ),
        (
            "llama.attention.layer_norm_rms_epsilon",
            MetadataValue::F32(1e-5),
        ),
    ] {
        w.add_metadata(k, val).unwrap();
    }
    let mut tensors = vec![("token_embd.weight".to_string(), vec![e, v])];
    for i in 0..layers {
        for (n, d) in [
            ("attn_norm", vec![e]),
            ("attn_q", vec![e, e]),
            ("attn_k", vec![e, e / 4]),
            ("attn_v", vec![e, e / 4]),
            ("attn_output", vec![e, e]),
            ("ffn_norm", vec![e]),
            ("ffn_gate", vec![e, f]),
            ("ffn_up", vec![e, f]),
            ("ffn_down", vec![f, e]),
        ] {
            tensors.push((format!("blk.{i}.{n}.weight"), d));
        }
    }
    tensors.push(("output_norm.weight".into(), vec![e]));
    tensors.push(("output.weight".into(), vec![e, v]));
    for (n, d) in &tensors {
        let ty = if d.len() == 1 {
            DataType::F32
        } else {
            DataType::F16
        };
        w.add_tensor_info(n, d, ty).unwrap();
    }
    let mut stream = w.begin_file(path).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for (_, d) in &tensors {
        let n: u64 = d.iter().product();
        let vals: Vec<f32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.05
            })
            .collect();
        let bytes = if d.len() == 1 {
            vals.iter().flat_map(|v| (v + 1.0).to_le_bytes()).collect()
        } else {
            let mut out = vec![0u8; vals.len() * 2];
            gguf::quantize::quantize(DataType::F16, &vals, d[0] as usize, None, &mut out).unwrap();
            out
        };
        stream.write_tensor_data(&bytes).unwrap();
    }
    stream.finish().unwrap();
}

type Quantize = unsafe extern "C" fn(*const c_char, *const c_char, *const QuantizeParams) -> u32;

/// The floor of a durable write of `bytes`: written to a new file beside the outputs, flushed
/// (`fdatasync`), renamed into place and the directory flushed (as `gguf::requantize` commits),
/// with nothing read or converted. A requantization that
/// flushes its output cannot take less; llama.cpp, which does not flush, can.
fn durable_write(dir: &Path, bytes: &[u8]) {
    use std::io::Write;
    let tmp = dir.join("floor.tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_data().unwrap();
    drop(f);
    std::fs::rename(&tmp, dir.join("floor.gguf")).unwrap();
    std::fs::File::open(dir).unwrap().sync_all().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .map_or("target/requantize-bench", String::as_str),
    );
    let presets = args.get(2).map_or("Q4_K_M", String::as_str);
    let threads: u32 = args.get(3).map_or(2, |t| t.parse().unwrap());
    let layers: u32 = args.get(4).map_or(8, |t| t.parse().unwrap());
    let rounds: usize = args.get(5).map_or(3, |t| t.parse().unwrap());
    let dims = shape(args.get(6).map_or("base", String::as_str));
    assert!(rounds > 0, "ROUNDS must be at least 1");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("source-f16.gguf");
    write_source(&src, layers, dims);
    let size = std::fs::metadata(&src).unwrap().len();

    let lib = Path::new("target/ggml/libllama.v0.5.0.so");
    let lib = Lib::open(lib);
    let sym = |n: &str| lib.sym(n);
    // SAFETY: the functions are cast to their signatures in llama.h and the library is never
    // closed.
    let (defaults, quantize) = unsafe {
        let log: unsafe extern "C" fn(
            Option<unsafe extern "C" fn(u32, *const c_char, *mut c_void)>,
            *mut c_void,
        ) = std::mem::transmute(sym("llama_log_set"));
        log(Some(quiet), std::ptr::null_mut());
        let d: unsafe extern "C" fn() -> QuantizeParams =
            std::mem::transmute(sym("llama_model_quantize_default_params"));
        let q: Quantize = std::mem::transmute(sym("llama_model_quantize"));
        (d, q)
    };
    println!(
        "{}: {:.1} MiB F16 source, {layers} layers, {threads} thread(s), {rounds} rounds, on {}",
        src.display(),
        size as f64 / 1048576.0,
        cpu_model()
    );
    println!(
        "| preset | libgguf, flush on (min / median) | libgguf, --no-sync | \
         llama_model_quantize | durable-write floor | ratio flush on (min) | \
         ratio --no-sync (min) | llama.cpp over the floor (min) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for preset in presets.split(',') {
        let options = Options::for_preset(preset).unwrap();
        let run = |side: usize| -> f64 {
            let ours = dir.join("ours.gguf");
            let theirs = dir.join("theirs.gguf");
            let t = Instant::now();
            if side < 2 {
                let mut o = options.clone();
                o.threads = threads;
                o.sync = side == 0;
                requantize_file(&src, &ours, &o, &mut |_: &Progress<'_>| true).unwrap();
            } else {
                // SAFETY: as llama.h declares them; the strings live through the call.
                unsafe {
                    let mut p = defaults();
                    p.nthread = threads as i32;
                    p.ftype = options.file_type.id();
                    p.flags[2] = options.only_copy;
                    let (s, d) = (
                        CString::new(src.to_str().unwrap()).unwrap(),
                        CString::new(theirs.to_str().unwrap()).unwrap(),
                    );
                    assert_eq!(
                        quantize(s.as_ptr(), d.as_ptr(), &p),
                        0,
                        "llama_model_quantize failed"
                    );
                }
            }
            t.elapsed().as_secs_f64()
        };
        // One warm-up of each side (page cache, lazily built tables), outputs compared.
        for side in 0..3 {
            run(side);
        }
        let ours = std::fs::read(dir.join("ours.gguf")).unwrap();
        assert!(
            ours == std::fs::read(dir.join("theirs.gguf")).unwrap(),
            "the outputs of {preset} differ"
        );
        let run = |side: usize| -> f64 {
            if side == 3 {
                let t = Instant::now();
                durable_write(&dir, &ours);
                return t.elapsed().as_secs_f64();
            }
            run(side)
        };
        run(3);
        let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for r in 0..rounds {
            // Interleaved, the order turned each round.
            for k in 0..4 {
                let side = (r + k) % 4;
                times[side].push(run(side));
            }
        }
        let stat = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[0], v[v.len() / 2])
        };
        let [a, b, c, d] = &mut times;
        let ((a0, a1), (b0, b1), (c0, c1), (d0, d1)) = (stat(a), stat(b), stat(c), stat(d));
        let ms = |x: f64| x * 1e3;
        println!(
            "| {preset} | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {:.1} / {:.1} ms | \
             {:.1} / {:.1} ms | **{:.2}x** | **{:.2}x** | {:.2}x |",
            ms(a0),
            ms(a1),
            ms(b0),
            ms(b1),
            ms(c0),
            ms(c1),
            ms(d0),
            ms(d1),
            c0 / a0,
            c0 / b0,
            c0 / d0
        );
    }
}
