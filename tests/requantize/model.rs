//! A small llama-like model written with the writer, for the requantize tests: the tensor names
//! and shapes of llama.cpp's `llama` architecture (token embeddings, per layer attention norm,
//! Q, K, V, output, FFN norm, gate, up, down, then the output norm and output), complete
//! hyperparameters, and pseudo-random weights. The feed-forward width is a multiple of 32 but
//! not of 256, so `ffn_down` rows take the K types' fallbacks.

#![allow(dead_code)]

use gguf::{DataType, MetadataValue, Writer};
use std::path::Path;

/// The model's shape.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub n_layer: u32,
    pub n_embd: u64,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub n_ff: u64,
    pub n_vocab: u64,
    /// Source type of the 2-D weights (F32 or F16); 1-D tensors are F32.
    pub weights: DataType,
    /// Whether `output.weight` is left out (embeddings tied to the output).
    pub tied: bool,
    /// Rows of every 2-D weight instead of its real count (a thin model: the rules look only at
    /// names and row lengths, and llama.cpp's quantizer does not check shapes).
    pub rows: Option<u64>,
}

pub const SPEC: Spec = Spec {
    n_layer: 8,
    n_embd: 256,
    n_head: 4,
    n_head_kv: 1,
    n_ff: 288,
    n_vocab: 320,
    weights: DataType::F32,
    tied: false,
    rows: None,
};

/// A deterministic generator of floats in about [-0.05, 0.05].
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let u = (self.0 >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
                                                             // A heavier tail now and then, as real weights have.
        let x = (u - 0.5) * 0.1;
        if self.0 % 97 == 0 {
            x * 6.0
        } else {
            x
        }
    }
}

/// Each tensor of the model: name and dimensions, in the order a converter writes them.
pub fn tensors(spec: &Spec) -> Vec<(String, Vec<u64>)> {
    let head_dim = spec.n_embd / u64::from(spec.n_head);
    let kv = head_dim * u64::from(spec.n_head_kv);
    let (e, f) = (spec.n_embd, spec.n_ff);
    let mut out = vec![("token_embd.weight".to_string(), vec![e, spec.n_vocab])];
    for i in 0..spec.n_layer {
        let b = |s: &str| format!("blk.{i}.{s}");
        out.push((b("attn_norm.weight"), vec![e]));
        out.push((b("attn_q.weight"), vec![e, e]));
        out.push((b("attn_k.weight"), vec![e, kv]));
        out.push((b("attn_v.weight"), vec![e, kv]));
        out.push((b("attn_output.weight"), vec![e, e]));
        out.push((b("ffn_norm.weight"), vec![e]));
        out.push((b("ffn_gate.weight"), vec![e, f]));
        out.push((b("ffn_up.weight"), vec![e, f]));
        out.push((b("ffn_down.weight"), vec![f, e]));
    }
    out.push(("output_norm.weight".to_string(), vec![e]));
    if !spec.tied {
        out.push(("output.weight".to_string(), vec![e, spec.n_vocab]));
    }
    if let Some(rows) = spec.rows {
        for (_, dims) in &mut out {
            if dims.len() == 2 {
                dims[1] = rows;
            }
        }
    }
    out
}

/// The floats of tensor `name` (1-D norms are near 1).
pub fn values(name: &str, dims: &[u64]) -> Vec<f32> {
    let n: u64 = dims.iter().product();
    let seed = name
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(b.into()));
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let x = rng.next_f32();
            if dims.len() == 1 {
                1.0 + x
            } else {
                x
            }
        })
        .collect()
}

fn to_bytes(ty: DataType, v: &[f32], row: u64) -> Vec<u8> {
    if ty == DataType::F32 {
        return v.iter().flat_map(|x| x.to_le_bytes()).collect();
    }
    let size = gguf::quantize::output_bytes(ty, v.len() as u64 / row, row).unwrap();
    let mut out = vec![0u8; size as usize];
    gguf::quantize::quantize(ty, v, row as usize, None, &mut out).unwrap();
    out
}

/// The metadata of a llama model of `spec`.
pub fn metadata(w: &mut Writer, spec: &Spec) {
    let s = MetadataValue::string;
    let head_dim = spec.n_embd / u64::from(spec.n_head);
    let file_type = if spec.weights == DataType::F16 { 1 } else { 0 };
    let kvs = [
        ("general.architecture", s("llama")),
        ("general.name", s("requantize test")),
        ("general.file_type", MetadataValue::U32(file_type)),
        ("llama.context_length", MetadataValue::U32(256)),
        (
            "llama.embedding_length",
            MetadataValue::U32(spec.n_embd as u32),
        ),
        ("llama.block_count", MetadataValue::U32(spec.n_layer)),
        (
            "llama.feed_forward_length",
            MetadataValue::U32(spec.n_ff as u32),
        ),
        (
            "llama.rope.dimension_count",
            MetadataValue::U32(head_dim as u32),
        ),
        (
            "llama.attention.head_count",
            MetadataValue::U32(spec.n_head),
        ),
        (
            "llama.attention.head_count_kv",
            MetadataValue::U32(spec.n_head_kv),
        ),
        (
            "llama.attention.layer_norm_rms_epsilon",
            MetadataValue::F32(1e-5),
        ),
        ("llama.vocab_size", MetadataValue::U32(spec.n_vocab as u32)),
    ];
    for (k, v) in kvs {
        w.add_metadata(k, v).unwrap();
    }
}

/// A writer holding the model of `spec` (metadata and every tensor).
pub fn writer(spec: &Spec) -> Writer {
    let mut w = Writer::new();
    metadata(&mut w, spec);
    for (name, dims) in tensors(spec) {
        let v = values(&name, &dims);
        let ty = if dims.len() == 1 {
            DataType::F32
        } else {
            spec.weights
        };
        w.add_tensor(&name, &dims, ty, to_bytes(ty, &v, dims[0]))
            .unwrap();
    }
    w
}

/// Writes the model of `spec` to `path`.
pub fn write(path: &Path, spec: &Spec) {
    let mut w = writer(spec);
    w.set_sync(false);
    w.write_file(path).unwrap();
}
