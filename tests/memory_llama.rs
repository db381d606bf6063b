//! The memory estimate against llama.cpp itself: `tests/llama/memory_shim.cpp`, built against
//! the v0.5.0 headers (the llama.cpp sources node-llama-cpp 3.22.1 bundles, which
//! `tools/fetch-ggml.sh` unpacks into `target/ggml/llama.cpp-v0.5.0`) and linked with the
//! prebuilt `libllama.v0.5.0.so`, loads each model in llama.cpp's memory-fit mode (no mmap,
//! `no_alloc`), creates a context with the same parameters and prints llama.cpp's figures.
//!
//! The models are headers written with [`gguf::Writer`] and extended to their full size as
//! sparse files (and the bundled sample, with its data): one or more per architecture and
//! shape of memory (grouped-query attention, per-layer KV heads, sliding windows and chunks,
//! shared KV layers, recurrent and hybrid state, multi-head latent attention with an MTP
//! layer, mixture of experts, tied embeddings), each at several contexts (0, not a multiple of
//! 256, past the training context), sequence counts (unified and not), KV types and
//! flash-attention settings; parameters llama.cpp refuses must be refused by both. Weights,
//! K, V, recurrent state, the output buffer and the context used must equal llama.cpp's to the
//! byte, and the weights as mapped when each model is loaded once with mmap (a real load of
//! the sparse file). The compute buffer is a bound: never below llama.cpp's, at most 10% above
//! (more only for the models `COMPUTE_ABOVE` lists, each with its measured worst ratio).

mod common;

use common::{ggml_dir, link_aside, manifest_dir};
use gguf::memory::{estimate, FlashAttn, MemoryEstimate, MemoryParams};
use gguf::{DataType, MetadataValue, Model, OpenOptions, ValueType, Writer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The shim, built once per test process.
fn shim() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let ggml = ggml_dir();
        let src = ggml.join("llama.cpp-v0.5.0");
        assert!(
            ggml.join("libllama.v0.5.0.so").is_file() && src.join("src/llama-ext.h").is_file(),
            "libllama.v0.5.0.so or its headers are not in {}: run `make ggml` (tools/fetch-ggml.sh)",
            ggml.display()
        );
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory_llama");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("memory_shim");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let mut cmd = Command::new(cxx);
        cmd.args(["-std=c++17", "-O1", "-w", "-rdynamic"])
            .arg(format!("-I{}", src.join("include").display()))
            .arg(format!("-I{}", src.join("src").display()))
            .arg(format!("-I{}", src.join("ggml/include").display()))
            .arg(manifest_dir().join("tests/llama/memory_shim.cpp"))
            .arg(format!("-L{}", ggml.display()))
            .args(["-l:libllama.v0.5.0.so", "-l:libggml.v0.5.0.so", "-lggml-base", "-ldl"])
            .arg(format!("-Wl,-rpath,{}", ggml.display()));
        link_aside(&mut cmd, &exe);
        exe
    })
}

/// llama.cpp's figures for one model and parameters; `None` where it refuses the context.
fn llama(path: &Path, p: &MemoryParams) -> Option<BTreeMap<String, u64>> {
    llama_with(path, p, false)
}

/// [`llama`], loading with mmap instead of `no_alloc` when `mmap` (the weights' mapped figure).
fn llama_with(path: &Path, p: &MemoryParams, mmap: bool) -> Option<BTreeMap<String, u64>> {
    let fa = match p.flash_attn {
        FlashAttn::Auto => -1,
        FlashAttn::Off => 0,
        FlashAttn::On => 1,
    };
    let cpu = ggml_dir().join("libggml-cpu-x64.so");
    let mut cmd = Command::new(shim());
    if mmap {
        cmd.env("MEMORY_SHIM_MMAP", "1");
    }
    let out = cmd
        .env("MEMORY_SHIM_CPU_BACKEND", cpu)
        .arg(path)
        .args([
            p.n_ctx.to_string(),
            p.n_batch.to_string(),
            p.n_ubatch.to_string(),
            p.n_seq_max.to_string(),
            p.type_k.id().to_string(),
            p.type_v.id().to_string(),
            fa.to_string(),
            u8::from(p.swa_full).to_string(),
            u8::from(p.kv_unified).to_string(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text == "error context\n" {
        return None;
    }
    assert!(
        text.ends_with("ok\n"),
        "the shim failed on {}: {text}",
        path.display()
    );
    Some(
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

/// A model to write: metadata, and tensors by name, shape and type.
struct Spec {
    arch: &'static str,
    kv: Vec<(String, MetadataValue)>,
    tensors: Vec<(String, Vec<u64>, DataType)>,
}

impl Spec {
    fn new(arch: &'static str, n_layer: u32, n_embd: u32, n_vocab: u32, n_ctx_train: u32) -> Spec {
        let mut s = Spec {
            arch,
            kv: Vec::new(),
            tensors: Vec::new(),
        };
        s.kv.push(("general.architecture".into(), MetadataValue::string(arch)));
        s.kv.push(("tokenizer.ggml.model".into(), MetadataValue::string("none")));
        s.u32("vocab_size", n_vocab);
        s.u32("block_count", n_layer);
        s.u32("embedding_length", n_embd);
        s.u32("context_length", n_ctx_train);
        s.kv.push((
            format!("{arch}.attention.layer_norm_rms_epsilon"),
            MetadataValue::F32(1e-5),
        ));
        s
    }

    fn u32(&mut self, key: &str, v: u32) -> &mut Spec {
        self.kv
            .push((format!("{}.{key}", self.arch), MetadataValue::U32(v)));
        self
    }

    fn arr(&mut self, key: &str, v: &[u32]) -> &mut Spec {
        let items = v.iter().map(|&x| MetadataValue::U32(x)).collect();
        self.kv.push((
            format!("{}.{key}", self.arch),
            MetadataValue::Array(ValueType::Uint32, items),
        ));
        self
    }

    /// A weight: 1-D tensors in F32, matrices in F16.
    fn t(&mut self, name: &str, dims: &[u64]) -> &mut Spec {
        let dtype = if dims.len() == 1 {
            DataType::F32
        } else {
            DataType::F16
        };
        self.tensors.push((name.into(), dims.to_vec(), dtype));
        self
    }

    fn embeddings(&mut self, n_embd: u64, n_vocab: u64) -> &mut Spec {
        self.t("token_embd.weight", &[n_embd, n_vocab])
            .t("output_norm.weight", &[n_embd])
            .t("output.weight", &[n_embd, n_vocab])
    }

    /// Attention: Q, K, V and the output projection of layer `i`.
    fn attention(&mut self, i: u32, n_embd: u64, q: u64, k: u64, v: u64) -> &mut Spec {
        self.t(&format!("blk.{i}.attn_q.weight"), &[n_embd, q])
            .t(&format!("blk.{i}.attn_k.weight"), &[n_embd, k])
            .t(&format!("blk.{i}.attn_v.weight"), &[n_embd, v])
            .t(&format!("blk.{i}.attn_output.weight"), &[q, n_embd])
    }

    fn ffn(&mut self, i: u32, n_embd: u64, n_ff: u64) -> &mut Spec {
        self.t(&format!("blk.{i}.ffn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
            .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
            .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff])
    }

    /// Writes the header and extends the file to its full size (sparse: no data is written).
    fn write(&self, name: &str) -> PathBuf {
        let mut w = Writer::new();
        for (k, v) in &self.kv {
            w.add_metadata(k, v.clone()).unwrap();
        }
        for (n, dims, dtype) in &self.tensors {
            w.add_tensor_info(n, dims, *dtype).unwrap();
        }
        let header = w.header_bytes().unwrap();
        let offsets = w.tensor_offsets().unwrap();
        let last = self.tensors.len() - 1;
        let end = offsets[last] + w.tensor_size(last).unwrap();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory_llama");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.{}.gguf", std::process::id()));
        std::fs::write(&path, &header).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(header.len() as u64 + end).unwrap();
        path
    }
}

/// A llama-shaped model: `n_head` query heads, `n_head_kv` KV heads.
fn llama_spec(arch: &'static str, n_layer: u32, n_head: u32, n_head_kv: u32, head: u32) -> Spec {
    let (n_embd, n_ff, n_vocab) = (256u32, 512u32, 1000u32);
    let mut s = Spec::new(arch, n_layer, n_embd, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff)
        .u32("attention.head_count", n_head)
        .u32("attention.head_count_kv", n_head_kv)
        .u32("attention.key_length", head)
        .u32("attention.value_length", head)
        .u32("rope.dimension_count", head);
    let (e, q, kv) = (
        u64::from(n_embd),
        u64::from(head * n_head),
        u64::from(head * n_head_kv),
    );
    s.embeddings(e, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[e]);
        s.attention(i, e, q, kv, kv);
        match arch {
            "qwen3" | "qwen3moe" | "qwen3vl" => {
                s.t(&format!("blk.{i}.attn_q_norm.weight"), &[u64::from(head)])
                    .t(&format!("blk.{i}.attn_k_norm.weight"), &[u64::from(head)]);
            }
            "gemma2" | "gemma3" => {
                s.t(&format!("blk.{i}.post_attention_norm.weight"), &[e])
                    .t(&format!("blk.{i}.post_ffw_norm.weight"), &[e]);
                if arch == "gemma3" {
                    s.t(&format!("blk.{i}.attn_q_norm.weight"), &[u64::from(head)])
                        .t(&format!("blk.{i}.attn_k_norm.weight"), &[u64::from(head)]);
                }
            }
            _ => {}
        }
        if arch == "qwen2moe" {
            let (n_ff_exp, n_expert) = (128u64, 8u64);
            s.t(&format!("blk.{i}.ffn_norm.weight"), &[e])
                .t(&format!("blk.{i}.ffn_gate_inp.weight"), &[e, n_expert])
                .t(
                    &format!("blk.{i}.ffn_gate_exps.weight"),
                    &[e, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_down_exps.weight"),
                    &[n_ff_exp, e, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_up_exps.weight"),
                    &[e, n_ff_exp, n_expert],
                )
                .t(&format!("blk.{i}.ffn_gate_inp_shexp.weight"), &[e])
                .t(&format!("blk.{i}.ffn_gate_shexp.weight"), &[e, n_ff_exp])
                .t(&format!("blk.{i}.ffn_down_shexp.weight"), &[n_ff_exp, e])
                .t(&format!("blk.{i}.ffn_up_shexp.weight"), &[e, n_ff_exp]);
        } else if arch == "qwen3moe" {
            let (n_ff_exp, n_expert) = (128u64, 8u64);
            s.t(&format!("blk.{i}.ffn_norm.weight"), &[e])
                .t(&format!("blk.{i}.ffn_gate_inp.weight"), &[e, n_expert])
                .t(
                    &format!("blk.{i}.ffn_gate_exps.weight"),
                    &[e, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_down_exps.weight"),
                    &[n_ff_exp, e, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_up_exps.weight"),
                    &[e, n_ff_exp, n_expert],
                );
        } else {
            s.ffn(i, e, u64::from(n_ff));
        }
    }
    match arch {
        "qwen2moe" => {
            s.u32("expert_count", 8)
                .u32("expert_used_count", 2)
                .u32("expert_feed_forward_length", 128)
                .u32("expert_shared_feed_forward_length", 128);
        }
        "qwen3moe" => {
            s.u32("expert_count", 8)
                .u32("expert_used_count", 2)
                .u32("expert_feed_forward_length", 128);
        }
        "granite" => {
            s.kv.push(("granite.logit_scale".into(), MetadataValue::F32(8.0)));
        }
        "qwen2vl" | "qwen3vl" => {
            s.arr("rope.dimension_sections", &[8, 4, 4, 0]);
        }
        _ => {}
    }
    if arch == "gemma2" {
        // Gemma 2 ties the output to the embeddings.
        s.tensors.retain(|t| t.0 != "output.weight");
    }
    s
}

fn mamba_spec(arch: &'static str, n_layer: u32) -> Spec {
    let (n_embd, n_vocab) = (128u64, 1000u32);
    let (d_conv, d_inner, d_state) = (4u64, 2 * n_embd, 16u64);
    let mut s = Spec::new(arch, n_layer, n_embd as u32, n_vocab, 2048);
    s.u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", d_inner as u32)
        .u32("ssm.state_size", d_state as u32);
    s.embeddings(n_embd, u64::from(n_vocab));
    if arch == "mamba" {
        let dt_rank = 8u64;
        s.u32("ssm.time_step_rank", dt_rank as u32);
        for i in 0..n_layer {
            s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
                .t(&format!("blk.{i}.ssm_in.weight"), &[n_embd, 2 * d_inner])
                .t(&format!("blk.{i}.ssm_conv1d.weight"), &[d_conv, d_inner])
                .t(&format!("blk.{i}.ssm_conv1d.bias"), &[d_inner])
                .t(
                    &format!("blk.{i}.ssm_x.weight"),
                    &[d_inner, dt_rank + 2 * d_state],
                )
                .t(&format!("blk.{i}.ssm_dt.weight"), &[dt_rank, d_inner])
                .t(&format!("blk.{i}.ssm_dt.bias"), &[d_inner])
                .t(&format!("blk.{i}.ssm_a"), &[d_state, d_inner])
                .t(&format!("blk.{i}.ssm_d"), &[d_inner])
                .t(&format!("blk.{i}.ssm_out.weight"), &[d_inner, n_embd]);
        }
    } else {
        let (n_head, n_group) = (8u64, 2u64);
        s.u32("ssm.time_step_rank", n_head as u32)
            .u32("ssm.group_count", n_group as u32);
        for i in 0..n_layer {
            s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd]);
            mamba2_layer(&mut s, i, n_embd, d_conv, d_inner, d_state, n_head, n_group);
        }
    }
    s
}

#[allow(clippy::too_many_arguments)]
fn mamba2_layer(
    s: &mut Spec,
    i: u32,
    n_embd: u64,
    d_conv: u64,
    d_inner: u64,
    d_state: u64,
    n_head: u64,
    n_group: u64,
) {
    let conv = d_inner + 2 * n_group * d_state;
    s.t(
        &format!("blk.{i}.ssm_in.weight"),
        &[n_embd, 2 * d_inner + 2 * n_group * d_state + n_head],
    )
    .t(&format!("blk.{i}.ssm_conv1d.weight"), &[d_conv, conv])
    .t(&format!("blk.{i}.ssm_conv1d.bias"), &[conv])
    .t(&format!("blk.{i}.ssm_dt.bias"), &[n_head])
    .t(&format!("blk.{i}.ssm_a"), &[1, n_head])
    .t(&format!("blk.{i}.ssm_d"), &[1, n_head])
    .t(
        &format!("blk.{i}.ssm_norm.weight"),
        &[d_inner / n_group, n_group],
    )
    .t(&format!("blk.{i}.ssm_out.weight"), &[d_inner, n_embd]);
}

/// RWKV 7: time mixing and channel mixing, one token-shift and one WKV state per sequence.
fn rwkv7_spec(n_layer: u32) -> Spec {
    let (n_embd, n_ff, n_vocab, head) = (128u64, 256u64, 1000u32, 32u64);
    let (decay, iclr, mix, gate) = (16u64, 16u64, 16u64, 32u64);
    let mut s = Spec::new("rwkv7", n_layer, n_embd as u32, n_vocab, 1_048_576);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("wkv.head_size", head as u32)
        .u32("attention.decay_lora_rank", decay as u32)
        .u32("attention.iclr_lora_rank", iclr as u32)
        .u32("attention.value_residual_mix_lora_rank", mix as u32)
        .u32("attention.gate_lora_rank", gate as u32);
    s.t("token_embd.weight", &[n_embd, u64::from(n_vocab)])
        .t("token_embd_norm.weight", &[n_embd])
        .t("token_embd_norm.bias", &[n_embd])
        .t("output_norm.weight", &[n_embd])
        .t("output_norm.bias", &[n_embd])
        .t("output.weight", &[n_embd, u64::from(n_vocab)]);
    for i in 0..n_layer {
        let v_rank = if i == 0 { iclr } else { mix };
        let b = |n: &str| format!("blk.{i}.{n}");
        for n in ["attn_norm", "attn_norm_2", "time_mix_ln"] {
            s.t(&b(&format!("{n}.weight")), &[n_embd])
                .t(&b(&format!("{n}.bias")), &[n_embd]);
        }
        for n in [
            "time_mix_w0",
            "time_mix_a0",
            "time_mix_v0",
            "time_mix_k_k",
            "time_mix_k_a",
            "time_mix_r_k",
        ] {
            s.t(&b(&format!("{n}.weight")), &[n_embd]);
        }
        for (n, rank) in [("w", decay), ("a", iclr), ("v", v_rank), ("g", gate)] {
            s.t(&b(&format!("time_mix_{n}1.weight")), &[n_embd, rank])
                .t(&b(&format!("time_mix_{n}2.weight")), &[rank, n_embd]);
        }
        // F32 like the norms: 4-D with an innermost n_embd.
        s.tensors.push((
            b("time_mix_lerp_fused.weight"),
            vec![n_embd, 1, 1, 6],
            DataType::F32,
        ));
        s.tensors.push((
            b("channel_mix_lerp_k.weight"),
            vec![n_embd, 1, 1],
            DataType::F32,
        ));
        for n in [
            "time_mix_key",
            "time_mix_value",
            "time_mix_receptance",
            "time_mix_output",
        ] {
            s.t(&b(&format!("{n}.weight")), &[n_embd, n_embd]);
        }
        s.t(&b("channel_mix_key.weight"), &[n_embd, n_ff])
            .t(&b("channel_mix_value.weight"), &[n_ff, n_embd]);
    }
    s
}

/// Granite 4 (hybrid): Mamba 2 layers, and attention layers with their own KV head counts.
fn granite_hybrid_spec(n_head_kv: &[u32]) -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, head) = (128u64, 256u64, 1000u32, 4u32, 32u64);
    let n_layer = n_head_kv.len() as u32;
    let mut s = Spec::new("granitehybrid", n_layer, n_embd as u32, n_vocab, 4096);
    let (d_conv, d_inner, d_state, ssm_heads, n_group) = (4u64, 2 * n_embd, 16u64, 8u64, 1u64);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head)
        .arr("attention.head_count_kv", n_head_kv)
        .u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", d_inner as u32)
        .u32("ssm.state_size", d_state as u32)
        .u32("ssm.time_step_rank", ssm_heads as u32)
        .u32("ssm.group_count", n_group as u32);
    s.embeddings(n_embd, u64::from(n_vocab));
    for (i, &kv) in n_head_kv.iter().enumerate() {
        let i = i as u32;
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd]);
        if kv == 0 {
            mamba2_layer(
                &mut s, i, n_embd, d_conv, d_inner, d_state, ssm_heads, n_group,
            );
        } else {
            let q = head * u64::from(n_head);
            s.attention(i, n_embd, q, head * u64::from(kv), head * u64::from(kv));
        }
        s.ffn(i, n_embd, n_ff);
    }
    s
}

/// Qwen 3.5: gated delta-net layers (recurrent) and, every `full_attention_interval`-th layer,
/// gated attention.
/// Falcon-H1: every layer runs attention and a Mamba 2 mixer side by side, so each has a KV
/// cache and recurrent state.
fn falcon_h1_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv, head) =
        (128u64, 256u64, 1000u32, 4u32, 2u64, 32u64);
    let (d_conv, d_inner, d_state, ssm_heads, n_group) = (4u64, 2 * n_embd, 16u64, 8u64, 1u64);
    let n_layer = 3;
    let mut s = Spec::new("falcon-h1", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", d_inner as u32)
        .u32("ssm.state_size", d_state as u32)
        .u32("ssm.time_step_rank", ssm_heads as u32)
        .u32("ssm.group_count", n_group as u32);
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd]);
        mamba2_layer(
            &mut s, i, n_embd, d_conv, d_inner, d_state, ssm_heads, n_group,
        );
        let q = head * u64::from(n_head);
        s.attention(i, n_embd, q, head * n_head_kv, head * n_head_kv);
        // llama.cpp names this layer's FFN norm without the `.weight` suffix.
        s.t(&format!("blk.{i}.ffn_norm"), &[n_embd])
            .t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
            .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
            .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff]);
    }
    s
}

fn qwen35_spec(n_layer: u32, interval: Option<u32>) -> Spec {
    qwen35_like("qwen35", n_layer, interval)
}

/// Qwen 3.5 or Qwen3-Next (`qwen3next`: experts with a shared one, and the delta-net's beta and
/// alpha in one matrix).
fn qwen35_like(arch: &'static str, n_layer: u32, interval: Option<u32>) -> Spec {
    let next = arch == "qwen3next";
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv, head) =
        (128u64, 256u64, 1000u32, 4u32, 2u32, 64u64);
    let (d_conv, d_state, n_v_heads, n_k_heads) = (4u64, 32u64, 4u64, 2u64);
    let (key_dim, value_dim) = (d_state * n_k_heads, d_state * n_v_heads);
    let mut s = Spec::new(arch, n_layer, n_embd as u32, n_vocab, 8192);
    if next {
        s.u32("expert_count", 4)
            .u32("expert_used_count", 2)
            .u32("expert_feed_forward_length", 64)
            .u32("expert_shared_feed_forward_length", 64);
    }
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head)
        .u32("attention.head_count_kv", n_head_kv)
        .u32("attention.key_length", head as u32)
        .u32("attention.value_length", head as u32)
        .u32("rope.dimension_count", 32)
        .arr("rope.dimension_sections", &[8, 4, 4, 0])
        .u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", value_dim as u32)
        .u32("ssm.state_size", d_state as u32)
        .u32("ssm.time_step_rank", n_v_heads as u32)
        .u32("ssm.group_count", n_k_heads as u32);
    let interval = interval.map_or(4, |i| {
        s.u32("full_attention_interval", i);
        i
    });
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.post_attention_norm.weight"), &[n_embd]);
        if (i + 1) % interval == 0 {
            let q = head * u64::from(n_head);
            let kv = head * u64::from(n_head_kv);
            s.attention(i, n_embd, 2 * q, kv, kv);
            // The output projection takes the query width, not the gated one.
            s.tensors
                .retain(|t| t.0 != format!("blk.{i}.attn_output.weight"));
            s.t(&format!("blk.{i}.attn_output.weight"), &[q, n_embd])
                .t(&format!("blk.{i}.attn_q_norm.weight"), &[head])
                .t(&format!("blk.{i}.attn_k_norm.weight"), &[head]);
        } else {
            s.t(
                &format!("blk.{i}.attn_qkv.weight"),
                &[n_embd, key_dim * 2 + value_dim],
            )
            .t(&format!("blk.{i}.attn_gate.weight"), &[n_embd, value_dim])
            .t(
                &format!("blk.{i}.ssm_conv1d.weight"),
                &[d_conv, key_dim * 2 + value_dim],
            )
            .t(&format!("blk.{i}.ssm_dt.bias"), &[n_v_heads])
            .t(&format!("blk.{i}.ssm_a"), &[n_v_heads])
            .t(&format!("blk.{i}.ssm_norm.weight"), &[d_state])
            .t(&format!("blk.{i}.ssm_out.weight"), &[value_dim, n_embd]);
            if next {
                s.t(&format!("blk.{i}.ssm_ba.weight"), &[n_embd, 2 * n_v_heads]);
            } else {
                s.t(&format!("blk.{i}.ssm_beta.weight"), &[n_embd, n_v_heads])
                    .t(&format!("blk.{i}.ssm_alpha.weight"), &[n_embd, n_v_heads]);
            }
        }
        if next {
            let (ff, ne) = (64u64, 4u64);
            s.t(&format!("blk.{i}.ffn_gate_inp.weight"), &[n_embd, ne])
                .t(&format!("blk.{i}.ffn_down_exps.weight"), &[ff, n_embd, ne])
                .t(&format!("blk.{i}.ffn_gate_exps.weight"), &[n_embd, ff, ne])
                .t(&format!("blk.{i}.ffn_up_exps.weight"), &[n_embd, ff, ne])
                .t(&format!("blk.{i}.ffn_gate_inp_shexp.weight"), &[n_embd])
                .t(&format!("blk.{i}.ffn_gate_shexp.weight"), &[n_embd, ff])
                .t(&format!("blk.{i}.ffn_up_shexp.weight"), &[n_embd, ff])
                .t(&format!("blk.{i}.ffn_down_shexp.weight"), &[ff, n_embd]);
        } else {
            s.t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
                .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
                .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff]);
        }
    }
    s
}

/// OLMo 2/3: Q and K norms over the whole projection, norms after attention and the
/// feed-forward only; a sliding window on 3 layers of 4 when `window` is not 0.
fn olmo2_spec(n_layer: u32, window: u32) -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv) = (256u64, 512u64, 1000u32, 8u64, 2u64);
    let head = n_embd / n_head;
    let mut s = Spec::new("olmo2", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32);
    if window > 0 {
        s.u32("attention.sliding_window", window);
    }
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.attention(i, n_embd, n_embd, head * n_head_kv, head * n_head_kv)
            .t(&format!("blk.{i}.attn_q_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.attn_k_norm.weight"), &[head * n_head_kv])
            .t(&format!("blk.{i}.post_attention_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
            .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff])
            .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
            .t(&format!("blk.{i}.post_ffw_norm.weight"), &[n_embd]);
    }
    s
}

/// GLM 4.5: a dense first layer, experts with a shared one, and an MTP layer llama.cpp skips.
fn glm4moe_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv, head) =
        (256u64, 512u64, 1000u32, 4u64, 2u64, 64u64);
    let (n_ff_exp, n_expert, n_layer) = (64u64, 8u64, 4u32);
    let mut s = Spec::new("glm4moe", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("attention.key_length", head as u32)
        .u32("attention.value_length", head as u32)
        .u32("rope.dimension_count", 32)
        .u32("expert_count", n_expert as u32)
        .u32("expert_used_count", 2)
        .u32("expert_shared_count", 1)
        .u32("expert_feed_forward_length", n_ff_exp as u32)
        .u32("leading_dense_block_count", 1)
        .u32("nextn_predict_layers", 1);
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .attention(i, n_embd, head * n_head, head * n_head_kv, head * n_head_kv)
            .t(&format!("blk.{i}.post_attention_norm.weight"), &[n_embd]);
        if i == 0 {
            s.t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
                .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
                .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff]);
        } else {
            s.t(&format!("blk.{i}.ffn_gate_inp.weight"), &[n_embd, n_expert])
                .t(&format!("blk.{i}.exp_probs_b.bias"), &[n_expert])
                .t(
                    &format!("blk.{i}.ffn_gate_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_down_exps.weight"),
                    &[n_ff_exp, n_embd, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_up_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_gate_shexp.weight"),
                    &[n_embd, n_ff_exp],
                )
                .t(
                    &format!("blk.{i}.ffn_down_shexp.weight"),
                    &[n_ff_exp, n_embd],
                )
                .t(&format!("blk.{i}.ffn_up_shexp.weight"), &[n_embd, n_ff_exp]);
        }
        if i == n_layer - 1 {
            s.t(
                &format!("blk.{i}.nextn.eh_proj.weight"),
                &[2 * n_embd, n_embd],
            )
            .t(&format!("blk.{i}.nextn.enorm.weight"), &[n_embd])
            .t(&format!("blk.{i}.nextn.hnorm.weight"), &[n_embd])
            .t(&format!("blk.{i}.nextn.shared_head_norm.weight"), &[n_embd]);
        }
    }
    s
}

/// Llama 4: chunked attention on 3 layers of 4, experts with a shared one on every other
/// layer.
fn llama4_spec(window: Option<u32>) -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv, head) =
        (256u64, 512u64, 1000u32, 4u64, 2u64, 64u64);
    let (n_ff_exp, n_expert, n_layer) = (128u64, 4u64, 8u32);
    let mut s = Spec::new("llama4", n_layer, n_embd as u32, n_vocab, 16384);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("expert_count", n_expert as u32)
        .u32("expert_used_count", 1)
        .u32("expert_feed_forward_length", n_ff_exp as u32)
        .u32("interleave_moe_layer_step", 2);
    if let Some(w) = window {
        s.u32("attention.sliding_window", w);
    }
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .attention(i, n_embd, head * n_head, head * n_head_kv, head * n_head_kv)
            .t(&format!("blk.{i}.ffn_norm.weight"), &[n_embd]);
        if (i + 1) % 2 == 0 {
            s.t(&format!("blk.{i}.ffn_gate_inp.weight"), &[n_embd, n_expert])
                .t(
                    &format!("blk.{i}.ffn_gate_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_down_exps.weight"),
                    &[n_ff_exp, n_embd, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_up_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_gate_shexp.weight"),
                    &[n_embd, n_ff_exp],
                )
                .t(
                    &format!("blk.{i}.ffn_down_shexp.weight"),
                    &[n_ff_exp, n_embd],
                )
                .t(&format!("blk.{i}.ffn_up_shexp.weight"), &[n_embd, n_ff_exp]);
        } else {
            s.t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
                .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
                .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff]);
        }
    }
    s
}

/// Phi 3/4: a fused QKV projection, gate and up in one matrix (its sliding window, which
/// llama.cpp ignores, set).
fn phi3_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv) = (256u64, 512u64, 1000u32, 8u64, 4u64);
    let (head, n_layer) = (n_embd / n_head, 3u32);
    let mut s = Spec::new("phi3", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("attention.sliding_window", 2048);
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .t(
                &format!("blk.{i}.attn_qkv.weight"),
                &[n_embd, n_embd + 2 * head * n_head_kv],
            )
            .t(&format!("blk.{i}.attn_output.weight"), &[n_embd, n_embd])
            .t(&format!("blk.{i}.ffn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
            .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, 2 * n_ff]);
    }
    s
}

/// Command A (Cohere 2): a sliding window on 3 layers of 4, parallel attention and
/// feed-forward, tied embeddings.
fn cohere2_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv) = (256u64, 512u64, 1000u32, 8u64, 2u64);
    let (head, n_layer) = (n_embd / n_head, 8u32);
    let mut s = Spec::new("cohere2", n_layer, n_embd as u32, n_vocab, 8192);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("attention.sliding_window", 512);
    s.kv.push(("cohere2.logit_scale".into(), MetadataValue::F32(0.25)));
    s.kv.push((
        "cohere2.attention.layer_norm_epsilon".into(),
        MetadataValue::F32(1e-5),
    ));
    s.t("token_embd.weight", &[n_embd, u64::from(n_vocab)])
        .t("output_norm.weight", &[n_embd]);
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .attention(i, n_embd, n_embd, head * n_head_kv, head * n_head_kv)
            .t(&format!("blk.{i}.ffn_gate.weight"), &[n_embd, n_ff])
            .t(&format!("blk.{i}.ffn_down.weight"), &[n_ff, n_embd])
            .t(&format!("blk.{i}.ffn_up.weight"), &[n_embd, n_ff]);
    }
    s
}

/// Llama 3.1 Nemotron (deci): per-layer query heads, KV heads and feed-forward widths, with
/// layers that have no attention (no KV heads) or no feed-forward.
fn deci_spec() -> Spec {
    let (n_embd, n_vocab, head) = (256u64, 1000u32, 32u64);
    let n_head = [8u32, 8, 0, 8, 8];
    let n_head_kv = [2u32, 0, 0, 4, 1];
    let n_ff = [512u32, 512, 256, 0, 384];
    let mut s = Spec::new("deci", n_head.len() as u32, n_embd as u32, n_vocab, 4096);
    s.arr("attention.head_count", &n_head)
        .arr("attention.head_count_kv", &n_head_kv)
        .arr("feed_forward_length", &n_ff);
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_head.len() {
        let (h, kv, ff) = (
            u64::from(n_head[i]),
            u64::from(n_head_kv[i]),
            u64::from(n_ff[i]),
        );
        let l = i as u32;
        if kv > 0 {
            s.t(&format!("blk.{l}.attn_norm.weight"), &[n_embd])
                .attention(l, n_embd, head * h, head * kv, head * kv);
        } else if h > 0 {
            s.t(&format!("blk.{l}.attn_norm.weight"), &[n_embd])
                .t(&format!("blk.{l}.attn_output.weight"), &[n_embd, n_embd]);
        }
        if ff > 0 {
            s.ffn(l, n_embd, ff);
        }
    }
    s
}

/// LFM2: short-convolution layers (no KV heads) and attention layers, with an optional
/// sliding window on the attention layers.
fn lfm2_spec(n_head_kv: &[u32], window: u32) -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, head, l_cache) =
        (128u64, 256u64, 1000u32, 4u32, 32u64, 3u64);
    let n_layer = n_head_kv.len() as u32;
    let mut s = Spec::new("lfm2", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head)
        .arr("attention.head_count_kv", n_head_kv)
        .u32("shortconv.l_cache", l_cache as u32);
    if window > 0 {
        s.u32("attention.sliding_window", window);
    }
    s.t("token_embd.weight", &[n_embd, u64::from(n_vocab)])
        .t("token_embd_norm.weight", &[n_embd]);
    for (i, &kv) in n_head_kv.iter().enumerate() {
        let i = i as u32;
        s.ffn(i, n_embd, n_ff);
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd]);
        if kv == 0 {
            s.t(
                &format!("blk.{i}.shortconv.conv.weight"),
                &[l_cache, n_embd],
            )
            .t(
                &format!("blk.{i}.shortconv.in_proj.weight"),
                &[n_embd, 3 * n_embd],
            )
            .t(
                &format!("blk.{i}.shortconv.out_proj.weight"),
                &[n_embd, n_embd],
            );
        } else {
            s.t(&format!("blk.{i}.attn_q_norm.weight"), &[head])
                .t(&format!("blk.{i}.attn_k_norm.weight"), &[head]);
            s.attention(
                i,
                n_embd,
                n_embd,
                head * u64::from(kv),
                head * u64::from(kv),
            );
        }
    }
    s
}

/// Gemma 4: sliding-window layers with their own head size, the last layers sharing the KV
/// cache of earlier ones, per-layer input embeddings.
fn gemma4_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, n_head, n_head_kv) = (256u64, 512u64, 1000u32, 4u64, 2u64);
    let (head, head_swa, per_layer) = (64u64, 32u64, 16u64);
    let pattern = [true, true, true, false, true, false];
    let (n_layer, shared) = (pattern.len() as u32, 2u32);
    let mut s = Spec::new("gemma4", n_layer, n_embd as u32, n_vocab, 8192);
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", n_head_kv as u32)
        .u32("attention.key_length", head as u32)
        .u32("attention.value_length", head as u32)
        .u32("attention.key_length_swa", head_swa as u32)
        .u32("attention.value_length_swa", head_swa as u32)
        .u32("attention.sliding_window", 128)
        .u32("attention.shared_kv_layers", shared)
        .u32("embedding_length_per_layer_input", per_layer as u32);
    s.kv.push((
        "gemma4.attention.sliding_window_pattern".into(),
        MetadataValue::Array(
            ValueType::Bool,
            pattern.iter().map(|&b| MetadataValue::Bool(b)).collect(),
        ),
    ));
    let n_l = u64::from(n_layer);
    s.t("token_embd.weight", &[n_embd, u64::from(n_vocab)])
        .t(
            "per_layer_token_embd.weight",
            &[per_layer * n_l, u64::from(n_vocab)],
        )
        .t("per_layer_model_proj.weight", &[n_embd, per_layer * n_l])
        .t("per_layer_proj_norm.weight", &[per_layer])
        .t("output_norm.weight", &[n_embd])
        .t("rope_freqs.weight", &[head / 2]);
    for (i, &swa) in pattern.iter().enumerate() {
        let hd = if swa { head_swa } else { head };
        let has_kv = (i as u32) < n_layer - shared;
        let i = i as u32;
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.attn_q.weight"), &[n_embd, hd * n_head])
            .t(
                &format!("blk.{i}.attn_output.weight"),
                &[hd * n_head, n_embd],
            )
            .t(&format!("blk.{i}.attn_q_norm.weight"), &[hd])
            .t(&format!("blk.{i}.post_attention_norm.weight"), &[n_embd]);
        if has_kv {
            s.t(&format!("blk.{i}.attn_k.weight"), &[n_embd, hd * n_head_kv])
                .t(&format!("blk.{i}.attn_v.weight"), &[n_embd, hd * n_head_kv])
                .t(&format!("blk.{i}.attn_k_norm.weight"), &[hd]);
        }
        s.ffn(i, n_embd, n_ff);
        s.t(&format!("blk.{i}.post_ffw_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.inp_gate.weight"), &[n_embd, per_layer])
            .t(&format!("blk.{i}.proj.weight"), &[per_layer, n_embd])
            .t(&format!("blk.{i}.post_norm.weight"), &[n_embd]);
    }
    s
}

/// gpt-oss: sliding-window attention on every other layer, attention sinks, experts with
/// biases.
fn gpt_oss_spec() -> Spec {
    let (n_embd, n_vocab, n_head, n_head_kv, head) = (256u64, 1000u32, 8u32, 2u32, 32u64);
    let (n_ff_exp, n_expert, n_layer) = (128u64, 4u64, 4u32);
    let mut s = Spec::new("gpt-oss", n_layer, n_embd as u32, n_vocab, 8192);
    s.u32("attention.head_count", n_head)
        .u32("attention.head_count_kv", n_head_kv)
        .u32("attention.key_length", head as u32)
        .u32("attention.value_length", head as u32)
        .u32("rope.dimension_count", head as u32)
        .u32("attention.sliding_window", 128)
        .u32("expert_count", n_expert as u32)
        .u32("expert_used_count", 2)
        .u32("expert_feed_forward_length", n_ff_exp as u32);
    s.embeddings(n_embd, u64::from(n_vocab));
    let (q, kv) = (head * u64::from(n_head), head * u64::from(n_head_kv));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.post_attention_norm.weight"), &[n_embd]);
        s.attention(i, n_embd, q, kv, kv);
        s.t(&format!("blk.{i}.attn_sinks.weight"), &[u64::from(n_head)])
            .t(&format!("blk.{i}.attn_output.bias"), &[n_embd])
            .t(&format!("blk.{i}.ffn_gate_inp.weight"), &[n_embd, n_expert])
            .t(
                &format!("blk.{i}.ffn_gate_exps.weight"),
                &[n_embd, n_ff_exp, n_expert],
            )
            .t(
                &format!("blk.{i}.ffn_down_exps.weight"),
                &[n_ff_exp, n_embd, n_expert],
            )
            .t(
                &format!("blk.{i}.ffn_up_exps.weight"),
                &[n_embd, n_ff_exp, n_expert],
            )
            .t(&format!("blk.{i}.ffn_gate_inp.bias"), &[n_expert])
            .t(
                &format!("blk.{i}.ffn_gate_exps.bias"),
                &[n_ff_exp, n_expert],
            )
            .t(&format!("blk.{i}.ffn_down_exps.bias"), &[n_embd, n_expert])
            .t(&format!("blk.{i}.ffn_up_exps.bias"), &[n_ff_exp, n_expert]);
    }
    s
}

/// Nemotron-H: Mamba 2 layers, attention layers and feed-forward layers, each its own kind.
fn nemotron_h_spec() -> Spec {
    let (n_embd, n_vocab, head) = (128u64, 1000u32, 32u64);
    let n_head_kv = [0u32, 0, 2, 0, 0, 1];
    let n_ff = [0u32, 256, 0, 0, 384, 0];
    let mut s = Spec::new(
        "nemotron_h",
        n_ff.len() as u32,
        n_embd as u32,
        n_vocab,
        4096,
    );
    let (d_conv, d_inner, d_state, ssm_heads, n_group) = (4u64, 2 * n_embd, 16u64, 8u64, 2u64);
    s.u32("attention.head_count", 4)
        .arr("attention.head_count_kv", &n_head_kv)
        .arr("feed_forward_length", &n_ff)
        .u32("attention.key_length", head as u32)
        .u32("attention.value_length", head as u32)
        .u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", d_inner as u32)
        .u32("ssm.state_size", d_state as u32)
        .u32("ssm.time_step_rank", ssm_heads as u32)
        .u32("ssm.group_count", n_group as u32);
    s.kv.push((
        "nemotron_h.attention.layer_norm_epsilon".into(),
        MetadataValue::F32(1e-5),
    ));
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_ff.len() {
        let (kv, ff) = (u64::from(n_head_kv[i]), u64::from(n_ff[i]));
        let l = i as u32;
        s.t(&format!("blk.{l}.attn_norm.weight"), &[n_embd]);
        if ff > 0 {
            s.t(&format!("blk.{l}.ffn_down.weight"), &[ff, n_embd])
                .t(&format!("blk.{l}.ffn_up.weight"), &[n_embd, ff]);
        } else if kv > 0 {
            s.attention(l, n_embd, head * 4, head * kv, head * kv);
        } else {
            mamba2_layer(
                &mut s, l, n_embd, d_conv, d_inner, d_state, ssm_heads, n_group,
            );
        }
    }
    s
}

/// Jamba: Mamba (1) layers with normed dt, B and C, attention layers, experts on some layers.
fn jamba_spec() -> Spec {
    let (n_embd, n_ff, n_vocab, head, n_expert) = (128u64, 256u64, 1000u32, 32u64, 4u64);
    let n_head_kv = [0u32, 0, 2, 0];
    let (d_conv, d_inner, d_state, dt_rank) = (4u64, 256u64, 16u64, 8u64);
    let mut s = Spec::new(
        "jamba",
        n_head_kv.len() as u32,
        n_embd as u32,
        n_vocab,
        4096,
    );
    s.u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", 4)
        .arr("attention.head_count_kv", &n_head_kv)
        .u32("expert_count", n_expert as u32)
        .u32("expert_used_count", 2)
        .u32("ssm.conv_kernel", d_conv as u32)
        .u32("ssm.inner_size", d_inner as u32)
        .u32("ssm.state_size", d_state as u32)
        .u32("ssm.time_step_rank", dt_rank as u32);
    s.embeddings(n_embd, u64::from(n_vocab));
    for (i, &kv) in n_head_kv.iter().enumerate() {
        let l = i as u32;
        let b = |n: &str| format!("blk.{l}.{n}");
        s.t(&b("attn_norm.weight"), &[n_embd]);
        if kv == 0 {
            s.t(&b("ssm_in.weight"), &[n_embd, 2 * d_inner])
                .t(&b("ssm_conv1d.weight"), &[d_conv, d_inner])
                .t(&b("ssm_conv1d.bias"), &[d_inner])
                .t(&b("ssm_x.weight"), &[d_inner, dt_rank + 2 * d_state])
                .t(&b("ssm_dt_norm.weight"), &[dt_rank])
                .t(&b("ssm_dt.weight"), &[dt_rank, d_inner])
                .t(&b("ssm_dt.bias"), &[d_inner])
                .t(&b("ssm_b_norm.weight"), &[d_state])
                .t(&b("ssm_c_norm.weight"), &[d_state])
                .t(&b("ssm_a"), &[d_state, d_inner])
                .t(&b("ssm_d"), &[d_inner])
                .t(&b("ssm_out.weight"), &[d_inner, n_embd]);
        } else {
            s.attention(
                l,
                n_embd,
                n_embd,
                head * u64::from(kv),
                head * u64::from(kv),
            );
        }
        s.t(&b("ffn_norm.weight"), &[n_embd]);
        if i % 2 == 1 {
            s.t(&b("ffn_gate_inp.weight"), &[n_embd, n_expert])
                .t(&b("ffn_gate_exps.weight"), &[n_embd, n_ff, n_expert])
                .t(&b("ffn_down_exps.weight"), &[n_ff, n_embd, n_expert])
                .t(&b("ffn_up_exps.weight"), &[n_embd, n_ff, n_expert]);
        } else {
            s.t(&b("ffn_gate.weight"), &[n_embd, n_ff])
                .t(&b("ffn_down.weight"), &[n_ff, n_embd])
                .t(&b("ffn_up.weight"), &[n_embd, n_ff]);
        }
    }
    s
}

/// DeepSeek 2/3 with multi-head latent attention, mixture of experts after one dense layer,
/// and one MTP layer (which llama.cpp skips).
fn deepseek2_spec() -> Spec {
    let (n_embd, n_vocab, n_head) = (256u64, 1000u32, 4u64);
    let (n_layer, n_nextn) = (4u32, 1u32);
    let (q_lora, kv_lora, rope, k_mla, v_mla) = (64u64, 128u64, 32u64, 96u64, 64u64);
    let (n_ff, n_ff_exp, n_expert, n_used, n_shared) = (512u64, 64u64, 8u64, 2u32, 1u64);
    let mut s = Spec::new("deepseek2", n_layer, n_embd as u32, n_vocab, 4096);
    s.u32("nextn_predict_layers", n_nextn)
        .u32("feed_forward_length", n_ff as u32)
        .u32("attention.head_count", n_head as u32)
        .u32("attention.head_count_kv", 1)
        .u32("attention.key_length", (kv_lora + rope) as u32)
        .u32("attention.value_length", kv_lora as u32)
        .u32("attention.key_length_mla", k_mla as u32)
        .u32("attention.value_length_mla", v_mla as u32)
        .u32("rope.dimension_count", rope as u32)
        .u32("attention.q_lora_rank", q_lora as u32)
        .u32("attention.kv_lora_rank", kv_lora as u32)
        .u32("leading_dense_block_count", 1)
        .u32("expert_feed_forward_length", n_ff_exp as u32)
        .u32("expert_shared_count", n_shared as u32)
        .u32("expert_count", n_expert as u32)
        .u32("expert_used_count", n_used);
    s.embeddings(n_embd, u64::from(n_vocab));
    for i in 0..n_layer {
        s.t(&format!("blk.{i}.attn_norm.weight"), &[n_embd])
            .t(&format!("blk.{i}.attn_q_a_norm.weight"), &[q_lora])
            .t(&format!("blk.{i}.attn_kv_a_norm.weight"), &[kv_lora])
            .t(&format!("blk.{i}.attn_q_a.weight"), &[n_embd, q_lora])
            .t(
                &format!("blk.{i}.attn_q_b.weight"),
                &[q_lora, n_head * k_mla],
            )
            .t(
                &format!("blk.{i}.attn_kv_a_mqa.weight"),
                &[n_embd, kv_lora + rope],
            )
            .t(
                &format!("blk.{i}.attn_k_b.weight"),
                &[k_mla - rope, kv_lora, n_head],
            )
            .t(
                &format!("blk.{i}.attn_v_b.weight"),
                &[kv_lora, v_mla, n_head],
            )
            .t(
                &format!("blk.{i}.attn_output.weight"),
                &[n_head * v_mla, n_embd],
            );
        if i == 0 {
            s.ffn(i, n_embd, n_ff);
        } else {
            s.t(&format!("blk.{i}.ffn_norm.weight"), &[n_embd])
                .t(&format!("blk.{i}.ffn_gate_inp.weight"), &[n_embd, n_expert])
                .t(
                    &format!("blk.{i}.ffn_down_exps.weight"),
                    &[n_ff_exp, n_embd, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_gate_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_up_exps.weight"),
                    &[n_embd, n_ff_exp, n_expert],
                )
                .t(
                    &format!("blk.{i}.ffn_gate_shexp.weight"),
                    &[n_embd, n_ff_exp * n_shared],
                )
                .t(
                    &format!("blk.{i}.ffn_down_shexp.weight"),
                    &[n_ff_exp * n_shared, n_embd],
                )
                .t(
                    &format!("blk.{i}.ffn_up_shexp.weight"),
                    &[n_embd, n_ff_exp * n_shared],
                );
        }
        if i >= n_layer - n_nextn {
            s.t(
                &format!("blk.{i}.nextn.eh_proj.weight"),
                &[2 * n_embd, n_embd],
            )
            .t(&format!("blk.{i}.nextn.enorm.weight"), &[n_embd])
            .t(&format!("blk.{i}.nextn.hnorm.weight"), &[n_embd])
            .t(&format!("blk.{i}.nextn.shared_head_norm.weight"), &[n_embd]);
        }
    }
    s
}

fn params() -> MemoryParams {
    MemoryParams::default()
}

/// Every figure of ours against llama.cpp's, for one model and one set of parameters.
/// `None` where both refuse the parameters.
fn check(name: &str, path: &Path, p: &MemoryParams) -> Option<(MemoryEstimate, u64)> {
    let model = Model::open(path, OpenOptions::default()).unwrap();
    let case = format!("{} with {p:?}", path.display());
    let (ours, theirs) = match (estimate(&model, p), llama(path, p)) {
        (Ok(ours), Some(theirs)) => (ours, theirs),
        (Err(_), None) => return None,
        (ours, theirs) => {
            panic!("one refuses, the other not: ours {ours:?}, llama.cpp {theirs:?}: {case}")
        }
    };
    let them = |k: &str| theirs[k];
    assert_eq!(u64::from(ours.n_ctx), them("n_ctx"), "n_ctx: {case}");
    assert_eq!(
        u64::from(ours.n_ctx_seq),
        them("n_ctx_seq"),
        "n_ctx_seq: {case}"
    );
    assert_eq!(ours.weights, them("model"), "weights: {case}");
    assert_eq!(ours.k, them("k"), "K: {case}");
    assert_eq!(ours.v, them("v"), "V: {case}");
    assert_eq!(ours.recurrent, them("r") + them("s"), "recurrent: {case}");
    assert_eq!(ours.output, them("output"), "output: {case}");
    assert!(
        ours.k + ours.v + ours.recurrent <= them("context"),
        "context: {case}"
    );
    // The compute buffer is a bound: never below llama.cpp's, at most 10% above (more only
    // for the models listed in `COMPUTE_ABOVE`, each with its measured worst ratio).
    let theirs_compute = them("compute");
    let ratio = ours.compute as f64 / theirs_compute as f64;
    assert!(
        ours.compute >= theirs_compute,
        "compute {} below llama.cpp's {theirs_compute}: {case}",
        ours.compute
    );
    eprintln!(
        "RATIO {ratio:.4} ours {} llama.cpp {theirs_compute} {case}",
        ours.compute
    );
    let limit = COMPUTE_ABOVE
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(1.10, |&(_, r)| r);
    assert!(
        ratio <= limit,
        "compute {} is {ratio:.3}x llama.cpp's {theirs_compute} (at most {limit}): {case}",
        ours.compute
    );
    assert_eq!(
        ours.total,
        ours.weights + ours.k + ours.v + ours.recurrent + ours.output + ours.compute,
        "total: {case}"
    );
    Some((ours, them("compute")))
}

/// The models whose compute bound exceeds llama.cpp's compute buffer by more than 10% on some
/// case, with the worst ratio measured over their cases (rounded up): the allocator's
/// placement of these graphs varies more with the parameters than the bound's sum of live
/// tensors does (Jamba: llama.cpp's buffer at a 512-cell cache is half a MiB above what the
/// next sizes follow; LFM2 with a window: llama.cpp's buffer grows by a quarter from one
/// sequence to two with small sliding-window caches, for the same tensors). Every other model
/// is held to 1.10.
const COMPUTE_ABOVE: &[(&str, f64)] = &[("jamba", 1.14), ("lfm2-swa", 1.40)];

/// The parameter sets every attention model is checked with.
fn attention_cases() -> Vec<MemoryParams> {
    let d = params();
    vec![
        d,
        MemoryParams { n_ctx: 0, ..d },
        MemoryParams { n_ctx: 1000, ..d },
        MemoryParams { n_ctx: 8192, ..d },
        MemoryParams {
            n_ctx: 1000,
            n_seq_max: 3,
            ..d
        },
        MemoryParams {
            n_ctx: 1000,
            n_seq_max: 3,
            kv_unified: true,
            ..d
        },
        MemoryParams {
            flash_attn: FlashAttn::Off,
            n_ctx: 2048,
            ..d
        },
        MemoryParams {
            flash_attn: FlashAttn::Off,
            type_k: DataType::Q8_0,
            ..d
        },
        MemoryParams {
            flash_attn: FlashAttn::On,
            type_k: DataType::Q8_0,
            type_v: DataType::Q4_0,
            ..d
        },
        MemoryParams {
            n_ubatch: 128,
            n_batch: 256,
            n_ctx: 768,
            ..d
        },
        MemoryParams {
            n_ubatch: 1024,
            n_batch: 1024,
            n_ctx: 3000,
            flash_attn: FlashAttn::Off,
            ..d
        },
        MemoryParams {
            n_ubatch: 64,
            n_ctx: 0,
            ..d
        },
    ]
}

/// Where a compared model comes from: a header written here (and removed after), or a file
/// with its data.
enum Source {
    Spec(Spec),
    File(PathBuf),
}

/// One compared model: its name, where it comes from, and the parameter sets it is checked
/// with.
struct Case {
    name: &'static str,
    source: Source,
    params: Vec<MemoryParams>,
}

fn case(name: &'static str, spec: Spec, params: &[MemoryParams]) -> Case {
    Case {
        name,
        source: Source::Spec(spec),
        params: params.to_vec(),
    }
}

/// `d` with each `swa_full` setting over the given (context, sequences, unified) triples.
fn swa_cases(triples: &[(u32, u32, bool)], both: bool) -> Vec<MemoryParams> {
    let d = params();
    let settings: &[bool] = if both { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for &swa_full in settings {
        for &(n_ctx, n_seq_max, kv_unified) in triples {
            out.push(MemoryParams {
                n_ctx,
                n_seq_max,
                kv_unified,
                swa_full,
                ..d
            });
        }
    }
    out
}

/// Every compared model, one table: shapes of attention (grouped-query, a head size apart from
/// the width, experts, sliding windows and chunks, shared KV layers, sinks, latent attention
/// with an MTP layer), recurrent state and hybrids, and the bundled sample.
fn cases() -> Vec<Case> {
    let d = params();
    let all = attention_cases();
    let few = [
        d,
        MemoryParams { n_ctx: 0, ..d },
        MemoryParams {
            n_ctx: 1000,
            n_seq_max: 3,
            ..d
        },
        MemoryParams {
            flash_attn: FlashAttn::Off,
            ..d
        },
    ];
    let few_swa = [
        &few[..],
        &swa_cases(&[(4096, 1, false), (4096, 2, false)], false),
    ]
    .concat();
    let gemma = [
        &all[..],
        &swa_cases(
            &[
                (4096, 1, false),
                (4096, 2, false),
                (4096, 3, true),
                (300, 1, false),
            ],
            true,
        ),
    ]
    .concat();
    let shared = [
        &all[..],
        &swa_cases(&[(4096, 1, false), (4096, 3, false), (2048, 2, true)], true),
    ]
    .concat();
    let recurrent = [
        d,
        MemoryParams { n_ctx: 0, ..d },
        MemoryParams {
            n_seq_max: 4,
            n_ctx: 2048,
            ..d
        },
        MemoryParams {
            flash_attn: FlashAttn::Off,
            ..d
        },
    ];
    let mut hybrid = all.clone();
    hybrid.push(MemoryParams {
        n_seq_max: 4,
        n_ctx: 2048,
        flash_attn: FlashAttn::Off,
        ..d
    });
    let mut delta = all.clone();
    delta.push(MemoryParams {
        n_seq_max: 4,
        n_ctx: 4096,
        ..d
    });
    let mut lfm2 = all.clone();
    lfm2.push(MemoryParams {
        n_seq_max: 4,
        n_ctx: 4096,
        ..d
    });
    lfm2.extend(swa_cases(&[(4096, 1, false), (4096, 2, false)], false));
    let mut chunked = all.clone();
    chunked.extend([
        MemoryParams {
            n_ctx: 16384,
            swa_full: false,
            ..d
        },
        MemoryParams {
            n_ctx: 0,
            swa_full: false,
            n_seq_max: 2,
            ..d
        },
        MemoryParams {
            n_ctx: 9000,
            swa_full: false,
            ..d
        },
    ]);
    let mut mla = all.clone();
    mla.push(MemoryParams {
        type_k: DataType::Q8_0,
        type_v: DataType::Q8_0,
        flash_attn: FlashAttn::On,
        ..d
    });
    let mut g2 = llama_spec("gemma2", 4, 4, 2, 64);
    g2.u32("attention.sliding_window", 300);
    let mut g3 = llama_spec("gemma3", 7, 4, 1, 64);
    g3.u32("attention.sliding_window", 512);
    let mut sample = all.clone();
    sample.push(MemoryParams { n_ctx: 0, ..d });
    let mut out = vec![
        case("llama", llama_spec("llama", 4, 8, 2, 32), &all),
        case("qwen3", llama_spec("qwen3", 3, 4, 2, 128), &all),
        case("qwen2", llama_spec("qwen2", 2, 8, 2, 32), &few),
        case("granite", llama_spec("granite", 2, 8, 4, 32), &few),
        case("qwen3moe", llama_spec("qwen3moe", 2, 4, 1, 64), &few),
        case("qwen2moe", llama_spec("qwen2moe", 2, 8, 2, 32), &few),
        case("mistral3", llama_spec("mistral3", 2, 8, 2, 32), &few),
        case("smollm3", llama_spec("smollm3", 4, 8, 2, 32), &few),
        case("qwen2vl", llama_spec("qwen2vl", 2, 8, 2, 32), &few),
        case("qwen3vl", llama_spec("qwen3vl", 2, 4, 2, 64), &few),
        case("glm4moe", glm4moe_spec(), &few),
        case("phi3", phi3_spec(), &few),
        case("deci", deci_spec(), &few),
        case("exaone", llama_spec("exaone", 2, 8, 4, 32), &few),
        case("xverse", llama_spec("xverse", 2, 8, 4, 32), &few),
        case("baichuan", llama_spec("baichuan", 2, 8, 4, 32), &few),
        case("ernie4_5", llama_spec("ernie4_5", 2, 8, 4, 32), &few),
        case("cohere2", cohere2_spec(), &few_swa),
        case("olmo2", olmo2_spec(4, 0), &few_swa),
        case("olmo3", olmo2_spec(8, 256), &few_swa),
        case("gemma2", g2, &gemma),
        case("gemma3", g3, &gemma),
        case("mamba", mamba_spec("mamba", 3), &recurrent),
        case("mamba2", mamba_spec("mamba2", 3), &recurrent),
        case("rwkv7", rwkv7_spec(3), &recurrent),
        case(
            "granitehybrid",
            granite_hybrid_spec(&[0, 0, 4, 0, 0, 2]),
            &hybrid,
        ),
        case("nemotron_h", nemotron_h_spec(), &hybrid),
        case("jamba", jamba_spec(), &hybrid),
        case("falcon-h1", falcon_h1_spec(), &hybrid),
        case("qwen35", qwen35_spec(8, None), &delta),
        case("qwen35-3", qwen35_spec(6, Some(3)), &delta[..4]),
        case("qwen3next", qwen35_like("qwen3next", 8, None), &delta),
        case("lfm2", lfm2_spec(&[0, 0, 2, 0, 2, 0], 0), &lfm2),
        case("lfm2-swa", lfm2_spec(&[0, 2, 0, 0, 2, 0], 200), &lfm2),
        case("gemma4", gemma4_spec(), &shared),
        case("llama4", llama4_spec(None), &chunked),
        case("llama4-512", llama4_spec(Some(512)), &chunked[..4]),
        case("llama4-full", llama4_spec(Some(0)), &chunked[..4]),
        case("gpt-oss", gpt_oss_spec(), &shared),
        case("deepseek2", deepseek2_spec(), &mla),
    ];
    // The bundled sample: a real vocabulary (279 tokens) and quantized weights (Q4_0, Q4_K,
    // Q5_K, Q6_K, Q8_0), with its data.
    out.push(Case {
        name: "sample",
        source: Source::File(manifest_dir().join("testdata/sample.gguf")),
        params: sample,
    });
    out
}

/// Every model of the table against llama.cpp, on each of its parameter sets: one loop.
#[test]
fn every_model_against_llama_cpp() {
    let mut names = std::collections::BTreeSet::new();
    for c in cases() {
        assert!(names.insert(c.name), "{} is twice in the table", c.name);
        let (path, written) = match &c.source {
            Source::Spec(spec) => (spec.write(c.name), true),
            Source::File(path) => (path.clone(), false),
        };
        // The mapped figure: llama.cpp loading with mmap (a real load of the file).
        let model = Model::open(&path, OpenOptions::default()).unwrap();
        let mapped = llama_with(&path, &params(), true).expect("llama.cpp loads it with mmap");
        assert_eq!(
            estimate(&model, &params()).unwrap().weights_mapped,
            mapped["model"],
            "the mapped weights of {}",
            c.name
        );
        let mut refused = 0;
        for p in &c.params {
            let Some((ours, theirs)) = check(c.name, &path, p) else {
                refused += 1;
                continue;
            };
            eprintln!(
                "{}: n_ctx {} k {} v {} r {} out {} compute ours {} llama.cpp {theirs}",
                c.name, ours.n_ctx, ours.k, ours.v, ours.recurrent, ours.output, ours.compute
            );
        }
        if written {
            std::fs::remove_file(&path).unwrap();
        } else {
            assert_eq!(refused, 0, "llama.cpp takes {}", c.name);
        }
        assert!(
            refused < c.params.len(),
            "{}: every case was refused",
            c.name
        );
    }
    // Every model COMPUTE_ABOVE lets past 1.10 is in the table.
    for (name, _) in COMPUTE_ABOVE {
        assert!(
            names.contains(name),
            "{name} is in COMPUTE_ABOVE, not in the table"
        );
    }
}

/// The split of layers between the CPU and a GPU as llama.cpp's loader decides it
/// (`llama_model::load_tensors`: the output layer counts as layer `n_layer`, the last
/// `n_gpu_layers` of those `n_layer + 1` go to the GPU, all of them when negative, and the input
/// layer stays on the CPU), for every `n_gpu_layers` from -1 to past the layer count, with the
/// KV cache offloaded and not. The prebuilt libllama has no GPU backend, so this holds the
/// estimate to the loader's rule rather than to a GPU run.
#[test]
fn gpu_layer_split_as_the_loader_decides() {
    let n_layer = 4u32;
    let path = llama_spec("llama", n_layer, 8, 2, 32).write("gpu-split");
    let model = Model::open(&path, OpenOptions::default()).unwrap();
    let pad = |x: u64| x.div_ceil(32) * 32;
    // The weights of each repeating layer, then of the output layer (index n_layer); the rest
    // is the input layer's.
    let mut layer = vec![0u64; n_layer as usize + 1];
    let mut input = 0;
    for i in 0..model.tensor_count() {
        let t = model.tensor_at(i).unwrap();
        let name = std::str::from_utf8(t.info.name).unwrap();
        let bytes = pad(t.info.size);
        if let Some(rest) = name.strip_prefix("blk.") {
            let il: usize = rest.split('.').next().unwrap().parse().unwrap();
            layer[il] += bytes;
        } else if name.starts_with("output") {
            layer[n_layer as usize] += bytes;
        } else {
            input += bytes;
        }
    }
    for offload_kqv in [true, false] {
        for n_gpu_layers in -1..=(n_layer as i32 + 3) {
            let p = MemoryParams {
                n_gpu_layers,
                offload_kqv,
                ..params()
            };
            let e = estimate(&model, &p).unwrap();
            let n_gpu = u32::try_from(n_gpu_layers).map_or(n_layer + 1, |n| n.min(n_layer + 1));
            let kv = (e.k + e.v) / u64::from(n_layer);
            let mut gpu = 0;
            for il in n_layer + 1 - n_gpu..=n_layer {
                gpu += layer[il as usize];
                if il < n_layer && offload_kqv {
                    gpu += kv;
                }
            }
            // The compute buffer goes with the output layer: there, an estimate (the CPU's
            // bound).
            if n_gpu > 0 {
                gpu += e.compute;
            }
            let case = format!("n_gpu_layers {n_gpu_layers}, offload_kqv {offload_kqv}");
            assert_eq!(e.gpu, gpu, "{case}");
            assert_eq!(e.cpu + e.gpu, e.total, "{case}");
            // The token embeddings and the output buffer stay on the CPU.
            assert!(e.cpu >= input + e.output, "{case}");
        }
    }
    std::fs::remove_file(&path).unwrap();
}
