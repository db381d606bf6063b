//! Writes `testdata/sample.gguf`: a tiny llama-style model with a tokenizer vocabulary (tokens,
//! scores, token types) and tensors of several data types, made with this crate's writer. The
//! weights are random bytes, except that every float value and every quantized block's scale is
//! finite, as ggml requires of a model it runs (so `gguf-inspect --verify` passes it). The
//! inspector shows it when run without an argument; `tests/sample.rs` checks the committed file
//! is exactly what this program writes.
//!
//! cargo run --example make_sample [OUTPUT]

use gguf::quant::blocks::{self, FieldKind};
use gguf::{DataType, MetadataValue as V, ValueType, Writer};

const EMBED: u64 = 256;
const LAYERS: usize = 2;

/// A deterministic byte stream (xorshift), so the sample is reproducible.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// Makes every float field of `data` (tensor bytes of `dtype`, little-endian) finite: a value or
/// scale whose exponent is all ones (an infinity or a NaN, which ggml refuses) gets the top bit of
/// its exponent cleared. Only those bytes change; the rest stay as `bytes` made them.
fn finite_floats(dtype: DataType, data: &mut [u8]) {
    let size = dtype.block_bytes() as usize;
    for block in data.chunks_exact_mut(size) {
        for field in blocks::fields(dtype) {
            // The byte holding the sign and the top of the exponent, and the exponent's bits in
            // it and in the byte below.
            let (top, low_mask) = match field.kind {
                FieldKind::F16 => (field.offset + 1, 0x00),
                FieldKind::F32 => (field.offset + 3, 0x80),
                _ => continue,
            };
            let high_mask = if field.kind == FieldKind::F16 {
                0x7c
            } else {
                0x7f
            };
            if block[top] & high_mask == high_mask && block[top - 1] & low_mask == low_mask {
                block[top] &= !0x40;
            }
        }
    }
}

fn vocabulary() -> Vec<String> {
    let mut tokens: Vec<String> = ["<unk>", "<s>", "</s>"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    tokens.extend((0..=255u32).map(|b| format!("<0x{b:02X}>")));
    let words = [
        "▁the",
        "▁a",
        "▁model",
        "▁file",
        "▁tensor",
        "▁zero",
        "▁copy",
        "▁reader",
        "▁gguf",
        "▁llama",
        "ing",
        "ed",
        "er",
        "▁is",
        "▁of",
        "▁and",
        "▁to",
        "▁in",
        "▁it",
        "▁you",
    ];
    tokens.extend(words.iter().map(|w| w.to_string()));
    tokens
}

/// The sample model's bytes.
pub fn sample_model() -> Vec<u8> {
    let tokens = vocabulary();
    let n_vocab = tokens.len() as u64;
    let mut w = Writer::new();
    let mut kv = |k: &str, v: V| {
        w.add_metadata(k, v).expect("valid metadata");
    };
    kv("general.architecture", V::string("llama"));
    kv("general.name", V::string("libgguf sample (random weights)"));
    kv("general.file_type", V::U32(7));
    kv("llama.context_length", V::U32(2048));
    kv("llama.embedding_length", V::U32(EMBED as u32));
    kv("llama.block_count", V::U32(LAYERS as u32));
    kv("llama.feed_forward_length", V::U32(512));
    kv("llama.attention.head_count", V::U32(4));
    kv("llama.attention.head_count_kv", V::U32(4));
    kv("llama.attention.layer_norm_rms_epsilon", V::F32(1e-5));
    kv("llama.rope.freq_base", V::F32(10000.0));
    kv("tokenizer.ggml.model", V::string("llama"));
    kv(
        "tokenizer.ggml.tokens",
        V::Array(ValueType::String, tokens.iter().map(V::string).collect()),
    );
    kv(
        "tokenizer.ggml.scores",
        V::Array(
            ValueType::Float32,
            (0..n_vocab).map(|i| V::F32(-(i as f32) / 10.0)).collect(),
        ),
    );
    kv(
        "tokenizer.ggml.token_type",
        V::Array(
            ValueType::Int32,
            (0..n_vocab)
                .map(|i| {
                    V::I32(match i {
                        0 => 2,
                        1 | 2 => 3,
                        3..=258 => 6,
                        _ => 1,
                    })
                })
                .collect(),
        ),
    );
    kv("tokenizer.ggml.bos_token_id", V::U32(1));
    kv("tokenizer.ggml.eos_token_id", V::U32(2));
    kv("tokenizer.ggml.add_bos_token", V::Bool(true));

    let mut seed = 0;
    let mut tensor = |name: &str, dims: &[u64], dtype: DataType| {
        seed += 1;
        let size = dtype.tensor_bytes(dims).expect("valid shape") as usize;
        let mut data = bytes(seed, size);
        finite_floats(dtype, &mut data);
        w.add_tensor(name, dims, dtype, data).expect("valid tensor");
    };
    tensor("token_embd.weight", &[EMBED, n_vocab], DataType::Q8_0);
    for l in 0..LAYERS {
        tensor(
            &format!("blk.{l}.attn_norm.weight"),
            &[EMBED],
            DataType::F32,
        );
        tensor(
            &format!("blk.{l}.attn_q.weight"),
            &[EMBED, EMBED],
            DataType::Q4_0,
        );
        tensor(
            &format!("blk.{l}.attn_k.weight"),
            &[EMBED, EMBED],
            DataType::Q4_0,
        );
        tensor(
            &format!("blk.{l}.attn_v.weight"),
            &[EMBED, EMBED],
            DataType::Q6_K,
        );
        tensor(
            &format!("blk.{l}.attn_output.weight"),
            &[EMBED, EMBED],
            DataType::Q4_K,
        );
        tensor(&format!("blk.{l}.ffn_norm.weight"), &[EMBED], DataType::F32);
        tensor(
            &format!("blk.{l}.ffn_gate.weight"),
            &[EMBED, 512],
            DataType::Q4_K,
        );
        tensor(
            &format!("blk.{l}.ffn_up.weight"),
            &[EMBED, 512],
            DataType::Q4_K,
        );
        tensor(
            &format!("blk.{l}.ffn_down.weight"),
            &[512, EMBED],
            DataType::Q5_K,
        );
    }
    tensor("output_norm.weight", &[EMBED], DataType::F32);
    tensor("output.weight", &[EMBED, n_vocab], DataType::F16);
    w.to_bytes().expect("sample is valid")
}

#[allow(dead_code)]
fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "testdata/sample.gguf".to_string());
    std::fs::write(&out, sample_model()).expect("cannot write the sample");
    println!("wrote {out}");
}
