//! The whole requantize command against llama.cpp's: wall time of `gguf::requantize` and of
//! `llama_model_quantize` (the pinned libllama, `make ggml`) on the same F16 source, same
//! preset, same thread count, in the same process, their outputs compared byte for byte.
//!
//!   cargo run --release --example requantize_bench -- [DIR] [PRESET] [THREADS] [LAYERS] [ROUNDS]
//!
//! The source is a llama-like model written into DIR (default target/requantize-bench): 1024
//! wide, FFN 2816, vocabulary 32000, LAYERS layers (default 8), F16 weights of random values.
//! PRESET defaults to Q4_K_M, THREADS to 2. Each side runs ROUNDS times (default 3),
//! alternating; the minimum and the median wall time are printed with the CPU model.

mod common;
#[path = "../tests/ggml/dl.rs"]
mod ggml_dl;

use common::cpu_model;
use ggml_dl::Lib;
use gguf::requantize::{requantize_file, FileType, Options, Progress};
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

fn write_source(path: &Path, layers: u32) {
    let (e, f, v) = (1024u64, 2816u64, 32000u64);
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
        ("llama.rope.dimension_count", MetadataValue::U32(64)),
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .map_or("target/requantize-bench", String::as_str),
    );
    let preset = FileType::from_name(args.get(2).map_or("Q4_K_M", String::as_str)).unwrap();
    let threads: u32 = args.get(3).map_or(2, |t| t.parse().unwrap());
    let layers: u32 = args.get(4).map_or(8, |t| t.parse().unwrap());
    let rounds: usize = args.get(5).map_or(3, |t| t.parse().unwrap());
    assert!(rounds > 0, "ROUNDS must be at least 1");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("source-f16.gguf");
    write_source(&src, layers);
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
        let q: unsafe extern "C" fn(*const c_char, *const c_char, *const QuantizeParams) -> u32 =
            std::mem::transmute(sym("llama_model_quantize"));
        (d, q)
    };
    let ours = dir.join("ours.gguf");
    let theirs = dir.join("theirs.gguf");
    let mut options = Options::new(preset);
    options.threads = threads;
    options.sync = false;
    let (mut t_ours, mut t_theirs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        requantize_file(&src, &ours, &options, &mut |_: &Progress<'_>| true).unwrap();
        t_ours.push(t.elapsed().as_secs_f64());
        // SAFETY: as llama.h declares them; the strings live through the call.
        let t = Instant::now();
        unsafe {
            let mut p = defaults();
            p.nthread = threads as i32;
            p.ftype = preset.id();
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
        t_theirs.push(t.elapsed().as_secs_f64());
    }
    assert!(
        std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
        "the outputs differ"
    );
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    };
    let ((a_min, a_med), (b_min, b_med)) = (stat(&mut t_ours), stat(&mut t_theirs));
    println!(
        "{} to {}, {} threads, {rounds} rounds, {:.0} MiB F16 source, on {}: libgguf {a_min:.2} s (median \
         {a_med:.2}), llama_model_quantize {b_min:.2} s (median {b_med:.2}): {:.2}x; identical \
         output",
        src.display(),
        preset.name(),
        threads,
        size as f64 / 1048576.0,
        cpu_model(),
        b_min / a_min
    );
}
