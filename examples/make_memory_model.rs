//! Writes the header of a Llama 3 8B-shaped model (32 layers, width 4096, 32 query heads and 8
//! KV heads of 128, feed-forward 14336, 128256 tokens, Q4_K weights and F32 norms) and extends
//! the file to its full size as a sparse file: no data is written. For `bench/memory_run.sh`.
//!
//!   cargo run --release --example make_memory_model PATH

use gguf::{DataType, MetadataValue, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: make_memory_model PATH")?;
    let (n_embd, n_ff, n_vocab, n_layer) = (4096u64, 14336u64, 128256u64, 32u32);
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))?;
    w.add_metadata("tokenizer.ggml.model", MetadataValue::string("none"))?;
    for (k, v) in [
        ("vocab_size", n_vocab as u32),
        ("block_count", n_layer),
        ("embedding_length", n_embd as u32),
        ("context_length", 131072),
        ("feed_forward_length", n_ff as u32),
        ("attention.head_count", 32),
        ("attention.head_count_kv", 8),
    ] {
        w.add_metadata(format!("llama.{k}"), MetadataValue::U32(v))?;
    }
    w.add_metadata(
        "llama.attention.layer_norm_rms_epsilon",
        MetadataValue::F32(1e-5),
    )?;
    w.add_metadata("llama.rope.freq_base", MetadataValue::F32(500000.0))?;
    w.add_tensor_info("token_embd.weight", &[n_embd, n_vocab], DataType::Q4_K)?;
    w.add_tensor_info("output_norm.weight", &[n_embd], DataType::F32)?;
    w.add_tensor_info("output.weight", &[n_embd, n_vocab], DataType::Q6_K)?;
    for i in 0..n_layer {
        let t = |n: &str| format!("blk.{i}.{n}.weight");
        w.add_tensor_info(t("attn_norm"), &[n_embd], DataType::F32)?;
        w.add_tensor_info(t("attn_q"), &[n_embd, n_embd], DataType::Q4_K)?;
        w.add_tensor_info(t("attn_k"), &[n_embd, 1024], DataType::Q4_K)?;
        w.add_tensor_info(t("attn_v"), &[n_embd, 1024], DataType::Q6_K)?;
        w.add_tensor_info(t("attn_output"), &[n_embd, n_embd], DataType::Q4_K)?;
        w.add_tensor_info(t("ffn_norm"), &[n_embd], DataType::F32)?;
        w.add_tensor_info(t("ffn_gate"), &[n_embd, n_ff], DataType::Q4_K)?;
        w.add_tensor_info(t("ffn_down"), &[n_ff, n_embd], DataType::Q6_K)?;
        w.add_tensor_info(t("ffn_up"), &[n_embd, n_ff], DataType::Q4_K)?;
    }
    let header = w.header_bytes()?;
    let last = w.tensor_count() - 1;
    let end = w.tensor_offsets()?[last] + w.tensor_size(last).ok_or("no size")?;
    std::fs::write(&path, &header)?;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)?
        .set_len(header.len() as u64 + end)?;
    Ok(())
}
