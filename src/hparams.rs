//! A model's hyperparameters as llama.cpp reads them from the header: the keys each
//! architecture's loader reads, with llama.cpp's defaults where a key is absent (llama.cpp
//! v0.5.0, `llama_model_base::load_hparams` and each architecture's `load_arch_hparams`).
//!
//! Only the architectures whose rules are written here are read; any other is refused with an
//! error naming it, never guessed.

use crate::error::{Error, ErrorKind, Result};
use crate::file::GgufFile;
use crate::value::Value;

/// The most layers llama.cpp loads (`LLAMA_MAX_LAYERS`).
pub const MAX_LAYERS: u32 = 512;

/// How an architecture keeps its per-token state, which decides the shape of its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// A KV cache over every layer (grouped-query or multi-head attention).
    Attention,
    /// A KV cache split into a full cache and a sliding-window cache (`llama_kv_cache_iswa`).
    SlidingWindow,
    /// Only recurrent state (`llama_memory_recurrent`): Mamba, RWKV.
    Recurrent,
    /// A KV cache for the attention layers and recurrent state for the others
    /// (`llama_memory_hybrid`).
    Hybrid,
}

/// The sliding-window rule of the SWA layers (`llama_swa_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwaType {
    /// No sliding window.
    None,
    /// Each token sees the `n_swa` tokens before it.
    Standard,
    /// Each token sees the tokens of its chunk of `n_swa` (Llama 4).
    Chunked,
}

/// RoPE parameters as llama.cpp reads them (the training values).
#[derive(Clone, Debug, PartialEq)]
pub struct Rope {
    /// Rotated dimensions per head of the full-attention layers (`rope.dimension_count`).
    pub n_rot: u32,
    /// Rotated dimensions per head of the SWA layers.
    pub n_rot_swa: u32,
    /// `rope.freq_base` (10000 when absent).
    pub freq_base: f32,
    /// 1 / `rope.scaling.factor` (1 when absent or 0).
    pub freq_scale: f32,
    /// `rope.scaling.type` (`linear` when absent).
    pub scaling_type: String,
    /// `rope.scaling.original_context_length` (the training context when absent).
    pub n_ctx_orig: u32,
}

/// The hyperparameters of a model, per layer where llama.cpp keeps them per layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Hparams {
    /// `general.architecture`.
    pub architecture: String,
    /// `block_count`: every layer, the MTP (next-token prediction) layers included.
    pub n_layer_all: u32,
    /// `nextn_predict_layers`: the MTP layers at the end (0 when absent).
    pub n_layer_nextn: u32,
    /// `embedding_length`.
    pub n_embd: u32,
    /// `feed_forward_length`, per layer (0 when absent).
    pub n_ff: Vec<u32>,
    /// `attention.head_count`, per layer.
    pub n_head: Vec<u32>,
    /// `attention.head_count_kv`, per layer (the head count when absent).
    pub n_head_kv: Vec<u32>,
    /// Key dimension per head of the full-attention layers (`attention.key_length`, else
    /// `n_embd / n_head`).
    pub n_embd_head_k: u32,
    /// Value dimension per head of the full-attention layers.
    pub n_embd_head_v: u32,
    /// Key dimension per head of the SWA layers (`attention.key_length_swa`).
    pub n_embd_head_k_swa: u32,
    /// Value dimension per head of the SWA layers.
    pub n_embd_head_v_swa: u32,
    /// Multi-head latent attention's head sizes (`attention.key_length_mla`,
    /// `attention.value_length_mla`); both 0 when the model does not use MLA.
    pub n_embd_head_k_mla: u32,
    /// See [`Hparams::n_embd_head_k_mla`].
    pub n_embd_head_v_mla: u32,
    /// `context_length`: the training context.
    pub n_ctx_train: u32,
    /// RoPE.
    pub rope: Rope,
    /// The sliding-window rule.
    pub swa_type: SwaType,
    /// The window (`attention.sliding_window`; 0 without one).
    pub n_swa: u32,
    /// Which layers use the sliding window.
    pub is_swa: Vec<bool>,
    /// Which layers are recurrent.
    pub is_recurrent: Vec<bool>,
    /// Layers with neither a KV cache nor recurrent state: Nemotron-H's feed-forward layers.
    pub ffn_only: Vec<bool>,
    /// Every layer runs attention and a recurrent mixer side by side (Falcon-H1): each layer
    /// has both a KV cache and recurrent state.
    pub parallel_hybrid: bool,
    /// Layers with a KV cache of their own: the first `n_layer_kv`; the others reuse one
    /// (Gemma 4's `attention.shared_kv_layers`). All layers when there are no shared ones.
    pub n_layer_kv: u32,
    /// `expert_count` (0 when absent).
    pub n_expert: u32,
    /// `expert_used_count`, per layer (0 when absent).
    pub n_expert_used: Vec<u32>,
    /// `ssm.conv_kernel`, `ssm.inner_size`, `ssm.state_size`, `ssm.time_step_rank`,
    /// `ssm.group_count` (0 when absent).
    pub ssm_d_conv: u32,
    /// See [`Hparams::ssm_d_conv`].
    pub ssm_d_inner: u32,
    /// See [`Hparams::ssm_d_conv`].
    pub ssm_d_state: u32,
    /// See [`Hparams::ssm_d_conv`].
    pub ssm_dt_rank: u32,
    /// See [`Hparams::ssm_d_conv`].
    pub ssm_n_group: u32,
    /// RWKV's head size (`wkv.head_size`; 0 otherwise).
    pub wkv_head_size: u32,
    /// RWKV's token shifts kept per layer (`token_shift_count`, 2 when absent).
    pub token_shift_count: u32,
    /// The short convolution's cache length of LFM2's convolution layers
    /// (`shortconv.l_cache`; 0 otherwise).
    pub shortconv_l_cache: u32,
    /// The vocabulary's size: the tokenizer's token count (or `vocab_size` for models
    /// without a vocabulary).
    pub n_vocab: u32,
    /// Whether attention is causal (`attention.causal`, true when absent).
    pub causal_attn: bool,
    /// The shape of the model's memory.
    pub memory: MemoryKind,
}

/// The architectures whose rules are written here, with the shape of their memory.
pub const ARCHITECTURES: &[(&str, MemoryKind)] = &[
    ("llama", MemoryKind::Attention),
    ("qwen2", MemoryKind::Attention),
    ("qwen3", MemoryKind::Attention),
    ("qwen2moe", MemoryKind::Attention),
    ("qwen3moe", MemoryKind::Attention),
    ("granite", MemoryKind::Attention),
    ("mistral3", MemoryKind::Attention),
    ("smollm3", MemoryKind::Attention),
    ("qwen2vl", MemoryKind::Attention),
    ("qwen3vl", MemoryKind::Attention),
    ("olmo2", MemoryKind::SlidingWindow),
    ("phi3", MemoryKind::Attention),
    ("deci", MemoryKind::Attention),
    ("exaone", MemoryKind::Attention),
    ("xverse", MemoryKind::Attention),
    ("baichuan", MemoryKind::Attention),
    ("ernie4_5", MemoryKind::Attention),
    ("cohere2", MemoryKind::SlidingWindow),
    ("deepseek2", MemoryKind::Attention),
    ("glm4moe", MemoryKind::Attention),
    ("gemma2", MemoryKind::SlidingWindow),
    ("gemma3", MemoryKind::SlidingWindow),
    ("gpt-oss", MemoryKind::SlidingWindow),
    ("gemma4", MemoryKind::SlidingWindow),
    ("llama4", MemoryKind::SlidingWindow),
    ("mamba", MemoryKind::Recurrent),
    ("mamba2", MemoryKind::Recurrent),
    ("rwkv7", MemoryKind::Recurrent),
    ("granitehybrid", MemoryKind::Hybrid),
    ("qwen35", MemoryKind::Hybrid),
    ("qwen3next", MemoryKind::Hybrid),
    ("nemotron_h", MemoryKind::Hybrid),
    ("jamba", MemoryKind::Hybrid),
    ("lfm2", MemoryKind::Hybrid),
    ("falcon-h1", MemoryKind::Hybrid),
];

/// Reads keys of one architecture, llama.cpp's way.
struct Keys<'a, S: AsRef<[u8]>> {
    file: &'a GgufFile<S>,
    arch: &'a str,
}

fn bad(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument { message })
}

impl<S: AsRef<[u8]>> Keys<'_, S> {
    fn name(&self, key: &str) -> String {
        format!("{}.{key}", self.arch)
    }

    fn value(&self, key: &str) -> Option<(String, Value<'_>)> {
        let name = self.name(key);
        let v = self.file.get(&name)?;
        Some((name, v))
    }

    /// An unsigned integer key: `Ok(None)` when absent.
    fn u32(&self, key: &str) -> Result<Option<u32>> {
        match self.value(key) {
            None => Ok(None),
            Some((name, v)) => int_u32(&name, &v).map(Some),
        }
    }

    fn u32_required(&self, key: &str) -> Result<u32> {
        self.u32(key)?.ok_or_else(|| {
            Error::new(ErrorKind::NotFound {
                message: format!(
                    "key {} is missing: llama.cpp needs it for a {} model",
                    self.name(key),
                    self.arch
                ),
            })
        })
    }

    fn f32(&self, key: &str) -> Result<Option<f32>> {
        match self.value(key) {
            None => Ok(None),
            Some((name, v)) => match v {
                Value::F32(x) => Ok(Some(x)),
                other => Err(bad(format!(
                    "key {name} has type {}, expected FLOAT32",
                    other.value_type().name()
                ))),
            },
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        match self.value(key) {
            None => Ok(None),
            Some((name, v)) => match v {
                Value::String(s) => Ok(Some(String::from_utf8_lossy(s).into_owned())),
                other => Err(bad(format!(
                    "key {name} has type {}, expected a string",
                    other.value_type().name()
                ))),
            },
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.value(key) {
            None => Ok(None),
            Some((name, v)) => match v {
                Value::Bool(b) => Ok(Some(b)),
                other => Err(bad(format!(
                    "key {name} has type {}, expected a bool",
                    other.value_type().name()
                ))),
            },
        }
    }

    /// `get_key_or_arr`: one value for every layer, or an array of exactly `n` values.
    fn per_layer(&self, key: &str, n: u32, into: &mut [u32]) -> Result<bool> {
        let Some((name, v)) = self.value(key) else {
            return Ok(false);
        };
        match v {
            Value::Array(a) => {
                if a.len() != u64::from(n) {
                    return Err(bad(format!(
                        "key {name} holds {} values, expected one per layer ({n})",
                        a.len()
                    )));
                }
                for (i, item) in a.iter().enumerate() {
                    into[i] = match item {
                        // Per-layer flags (`attention.recurrent_layers`) are booleans.
                        Value::Bool(b) => u32::from(b),
                        item => int_u32(&name, &item)?,
                    };
                }
            }
            v => {
                let x = int_u32(&name, &v)?;
                into.iter_mut().for_each(|slot| *slot = x);
            }
        }
        Ok(true)
    }

    /// The sliding-window pattern: an array of booleans (one per layer), else a period
    /// (`sliding_window_pattern`, `default` when absent) as `set_swa_pattern` expands it.
    fn swa_pattern(&self, default: u32, n_layer: u32, is_swa: &mut [bool]) -> Result<()> {
        if let Some((name, Value::Array(a))) = self.value("attention.sliding_window_pattern") {
            if a.len() > is_swa.len() as u64 {
                return Err(bad(format!(
                    "key {name} holds {} values, more than the {} layers",
                    a.len(),
                    is_swa.len()
                )));
            }
            for (i, item) in a.iter().enumerate() {
                is_swa[i] = match item {
                    Value::Bool(b) => b,
                    other => int_u32(&name, &other)? != 0,
                };
            }
            return Ok(());
        }
        let period = self
            .u32("attention.sliding_window_pattern")?
            .unwrap_or(default);
        for (il, slot) in (0u32..).zip(is_swa.iter_mut()) {
            *slot = il < n_layer && (period == 0 || il % period < period - 1);
        }
        Ok(())
    }
}

fn int_u32(name: &str, v: &Value<'_>) -> Result<u32> {
    let x = match v {
        Value::I8(_) | Value::I16(_) | Value::I32(_) | Value::I64(_) => {
            v.as_i64().and_then(|x| u32::try_from(x).ok())
        }
        Value::Bool(_) | Value::F32(_) | Value::F64(_) | Value::String(_) | Value::Array(_) => {
            return Err(bad(format!(
                "key {name} has type {}, expected an integer",
                v.value_type().name()
            )))
        }
        _ => v.as_u64().and_then(|x| u32::try_from(x).ok()),
    };
    x.ok_or_else(|| bad(format!("key {name} is out of range for a 32-bit count")))
}

impl Hparams {
    /// The hyperparameters of the model in `file` (its first shard for a split model).
    pub fn read<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Result<Hparams> {
        let arch = match file.get("general.architecture") {
            Some(Value::String(s)) => String::from_utf8_lossy(s).into_owned(),
            Some(other) => {
                return Err(bad(format!(
                    "key general.architecture has type {}, expected a string",
                    other.value_type().name()
                )))
            }
            None => {
                return Err(Error::new(ErrorKind::NotFound {
                    message: "key general.architecture is missing".into(),
                }))
            }
        };
        let Some(&(_, memory)) = ARCHITECTURES.iter().find(|(name, _)| *name == arch) else {
            return Err(Error::new(ErrorKind::Unsupported {
                message: format!(
                    "architecture {} is not one whose memory rules are known (known: {})",
                    crate::text::quote(arch.as_bytes()),
                    ARCHITECTURES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }));
        };
        let k = Keys { file, arch: &arch };

        let n_ctx_train = k.u32_required("context_length")?;
        let n_embd = k.u32_required("embedding_length")?;
        let n_layer_all = k.u32_required("block_count")?;
        if n_layer_all == 0 || n_layer_all > MAX_LAYERS {
            return Err(bad(format!(
                "key {}.block_count is {n_layer_all}, expected 1 to {MAX_LAYERS}",
                arch
            )));
        }
        let n_layer_nextn = k.u32("nextn_predict_layers")?.unwrap_or(0);
        if n_layer_nextn > n_layer_all {
            return Err(bad(format!(
                "key {arch}.nextn_predict_layers is {n_layer_nextn}, more than the {n_layer_all} layers"
            )));
        }
        let n_layer = n_layer_all - n_layer_nextn;
        let n = n_layer_all as usize;
        let n_expert = k.u32("expert_count")?.unwrap_or(0);
        let mut n_expert_used = vec![0; n];
        k.per_layer("expert_used_count", n_layer_all, &mut n_expert_used)?;
        let mut n_ff = vec![0; n];
        k.per_layer("feed_forward_length", n_layer_all, &mut n_ff)?;
        let mut n_head = vec![0; n];
        k.per_layer("attention.head_count", n_layer_all, &mut n_head)?;
        let mut n_head_kv = n_head.clone();
        k.per_layer("attention.head_count_kv", n_layer_all, &mut n_head_kv)?;
        let causal_attn = k.bool("attention.causal")?.unwrap_or(true);

        let n_ctx_orig = k
            .u32("rope.scaling.original_context_length")?
            .unwrap_or(n_ctx_train);
        let freq_base = k.f32("rope.freq_base")?.unwrap_or(10000.0);
        let scaling_type = k
            .string("rope.scaling.type")?
            .unwrap_or_else(|| "linear".into());
        let factor = match k.f32("rope.scaling.factor")? {
            Some(f) => f,
            None => k.f32("rope.scale_linear")?.unwrap_or(0.0),
        };
        let freq_scale = if factor == 0.0 { 1.0 } else { 1.0 / factor };

        let (mut head_k, mut head_v, mut n_rot) = (0, 0, 0);
        if let Some(per_head) = n_embd.checked_div(n_head[0]) {
            head_k = k.u32("attention.key_length")?.unwrap_or(per_head);
            head_v = k.u32("attention.value_length")?.unwrap_or(per_head);
            n_rot = k.u32("rope.dimension_count")?.unwrap_or(head_k);
            if arch == "llama" && n_rot != head_k {
                return Err(bad(format!(
                    "key {arch}.rope.dimension_count is {n_rot}, llama.cpp expects the key length {head_k}"
                )));
            }
        }
        let head_k_swa = k.u32("attention.key_length_swa")?.unwrap_or(head_k);
        let head_v_swa = k.u32("attention.value_length_swa")?.unwrap_or(head_v);
        let n_rot_swa = k.u32("rope.dimension_count_swa")?.unwrap_or(n_rot);

        let recurrent_all = memory == MemoryKind::Recurrent;
        let mut h = Hparams {
            architecture: arch.clone(),
            n_layer_all,
            n_layer_nextn,
            n_embd,
            n_ff,
            n_head,
            n_head_kv,
            n_embd_head_k: head_k,
            n_embd_head_v: head_v,
            n_embd_head_k_swa: head_k_swa,
            n_embd_head_v_swa: head_v_swa,
            n_embd_head_k_mla: 0,
            n_embd_head_v_mla: 0,
            n_ctx_train,
            rope: Rope {
                n_rot,
                n_rot_swa,
                freq_base,
                freq_scale,
                scaling_type,
                n_ctx_orig,
            },
            swa_type: SwaType::None,
            n_swa: 0,
            is_swa: vec![false; n],
            is_recurrent: (0..n_layer_all)
                .map(|il| recurrent_all && il < n_layer)
                .collect(),
            n_layer_kv: n_layer_all,
            ffn_only: vec![false; n],
            parallel_hybrid: false,
            n_expert,
            n_expert_used,
            ssm_d_conv: 0,
            ssm_d_inner: 0,
            ssm_d_state: 0,
            ssm_dt_rank: 0,
            ssm_n_group: 0,
            wkv_head_size: 0,
            token_shift_count: 2,
            shortconv_l_cache: 0,
            n_vocab: vocab_size(file, &arch)?,
            causal_attn,
            memory,
        };

        match arch.as_str() {
            "gemma2" => {
                h.swa_type = SwaType::Standard;
                h.n_swa = k.u32("attention.sliding_window")?.unwrap_or(4096);
                k.swa_pattern(2, n_layer, &mut h.is_swa)?;
            }
            "gemma3" | "olmo2" => {
                // A window only when the key is there and not 0; the pattern's default period
                // is 6 for Gemma 3, 4 for OLMo 2/3.
                let n_swa = k.u32("attention.sliding_window")?.unwrap_or(0);
                if n_swa > 0 {
                    h.swa_type = SwaType::Standard;
                    h.n_swa = n_swa;
                    let period = if arch == "gemma3" { 6 } else { 4 };
                    k.swa_pattern(period, n_layer, &mut h.is_swa)?;
                } else {
                    h.memory = MemoryKind::Attention;
                }
            }
            "gemma4" => {
                h.swa_type = SwaType::Standard;
                if !matches!(
                    k.value("attention.sliding_window_pattern"),
                    Some((_, Value::Array(_)))
                ) {
                    return Err(Error::new(ErrorKind::NotFound {
                        message: format!(
                            "key {arch}.attention.sliding_window_pattern (an array of one flag \
                             per layer) is missing: llama.cpp needs it for a {arch} model"
                        ),
                    }));
                }
                k.swa_pattern(0, n_layer, &mut h.is_swa)?;
                let shared = k.u32("attention.shared_kv_layers")?.unwrap_or(0);
                h.n_layer_kv = n_layer_all.checked_sub(shared).ok_or_else(|| {
                    bad(format!(
                        "key {arch}.attention.shared_kv_layers is {shared}, more than the {n_layer_all} layers"
                    ))
                })?;
                // A shared layer reuses the last full layer's cache, or the one before it for a
                // sliding-window layer, which must be of its kind (llama.cpp aborts otherwise).
                if h.n_layer_kv < n_layer_all {
                    let from = h.n_layer_kv as usize;
                    let ok = from >= 2 && !h.is_swa[from - 1] && h.is_swa[from - 2];
                    if !ok {
                        return Err(bad(format!(
                            "{arch}: layers {from} to {} share the KV cache of layer {} (full \
                             attention) and {} (sliding window), which are not of those kinds",
                            n_layer_all - 1,
                            from.saturating_sub(1),
                            from.saturating_sub(2)
                        )));
                    }
                }
                h.n_swa = k.u32_required("attention.sliding_window")?;
                h.n_embd_head_k_swa = k.u32_required("attention.key_length_swa")?;
                h.n_embd_head_v_swa = k.u32_required("attention.value_length_swa")?;
            }
            "llama4" => {
                // Chunked attention over chunks of 8192 on 3 layers of 4, unless the file
                // sets a window of 0 (whatever other window it gives).
                match k.u32("attention.sliding_window")? {
                    Some(0) => h.memory = MemoryKind::Attention,
                    _ => {
                        h.swa_type = SwaType::Chunked;
                        h.n_swa = 8192;
                        k.swa_pattern(4, n_layer, &mut h.is_swa)?;
                    }
                }
            }
            "cohere2" => {
                h.swa_type = SwaType::Standard;
                k.swa_pattern(4, n_layer, &mut h.is_swa)?;
                h.n_swa = k.u32_required("attention.sliding_window")?;
            }
            "gpt-oss" => {
                h.swa_type = SwaType::Standard;
                h.n_swa = k.u32_required("attention.sliding_window")?;
                k.swa_pattern(2, n_layer, &mut h.is_swa)?;
            }
            "mamba" | "mamba2" | "granitehybrid" | "qwen35" | "qwen3next" | "nemotron_h"
            | "jamba" | "falcon-h1" => {
                h.ssm_d_conv = k.u32_required("ssm.conv_kernel")?;
                h.ssm_d_inner = k.u32_required("ssm.inner_size")?;
                h.ssm_d_state = k.u32_required("ssm.state_size")?;
                h.ssm_dt_rank = k.u32_required("ssm.time_step_rank")?;
                if arch != "mamba" && arch != "jamba" {
                    h.ssm_n_group = k.u32_required("ssm.group_count")?;
                }
                if h.ssm_conv_width().is_none() {
                    return Err(bad(format!(
                        "keys {arch}.ssm.conv_kernel ({}), inner_size ({}), group_count ({}) and \
                         state_size ({}) make a convolution state of more than 2^64 values",
                        h.ssm_d_conv, h.ssm_d_inner, h.ssm_n_group, h.ssm_d_state
                    )));
                }
                if arch == "granitehybrid" || arch == "jamba" {
                    for il in 0..n_layer as usize {
                        h.is_recurrent[il] = h.n_head_kv[il] == 0;
                    }
                }
                if arch == "falcon-h1" {
                    // Every layer is recurrent and attends too.
                    h.parallel_hybrid = true;
                    for il in 0..n_layer as usize {
                        h.is_recurrent[il] = true;
                    }
                }
                if arch == "nemotron_h" {
                    // Three kinds of layer: Mamba 2 (no KV heads, no feed-forward), attention
                    // (no feed-forward) and feed-forward alone.
                    for il in 0..n_layer as usize {
                        let (kv, ff) = (h.n_head_kv[il], h.n_ff[il]);
                        h.is_recurrent[il] = kv == 0 && ff == 0;
                        h.ffn_only[il] = ff != 0;
                    }
                }
                if arch == "qwen35" || arch == "qwen3next" {
                    // Gated delta-net layers: `attention.recurrent_layers` per layer, else
                    // every layer but each `full_attention_interval`-th (4).
                    let mut recr = vec![0; n];
                    if k.per_layer("attention.recurrent_layers", n_layer_all, &mut recr)? {
                        for (slot, r) in h.is_recurrent.iter_mut().zip(recr) {
                            *slot = r != 0;
                        }
                    } else {
                        let interval = k.u32("full_attention_interval")?.unwrap_or(4);
                        if interval == 0 {
                            return Err(bad(format!("key {arch}.full_attention_interval is 0")));
                        }
                        for (il, slot) in (0u32..).zip(h.is_recurrent.iter_mut()) {
                            *slot = il < n_layer && (il + 1) % interval != 0;
                        }
                    }
                }
            }
            "rwkv7" => {
                h.wkv_head_size = k.u32_required("wkv.head_size")?;
                h.token_shift_count = k.u32("token_shift_count")?.unwrap_or(2);
            }
            "lfm2" => {
                // Convolution layers have no KV heads; attention layers may use a window.
                h.shortconv_l_cache = k.u32_required("shortconv.l_cache")?;
                for il in 0..n_layer as usize {
                    h.is_recurrent[il] = h.n_head_kv[il] == 0;
                }
                let n_swa = k.u32("attention.sliding_window")?.unwrap_or(0);
                if n_swa > 0 {
                    h.swa_type = SwaType::Standard;
                    h.n_swa = n_swa;
                    for il in 0..n_layer as usize {
                        h.is_swa[il] = !h.is_recurrent[il];
                    }
                }
            }
            "deepseek2" => {
                h.n_embd_head_k_mla = k.u32("attention.key_length_mla")?.unwrap_or(0);
                h.n_embd_head_v_mla = k.u32("attention.value_length_mla")?.unwrap_or(0);
                if (h.n_embd_head_k_mla == 0) != (h.n_embd_head_v_mla == 0) {
                    return Err(bad(format!(
                        "keys {arch}.attention.key_length_mla and value_length_mla must both be set or both absent"
                    )));
                }
            }
            _ => {}
        }
        Ok(h)
    }

    /// Layers before the MTP layers (`n_layer()`).
    pub fn n_layer(&self) -> u32 {
        self.n_layer_all - self.n_layer_nextn
    }

    /// Whether the model uses multi-head latent attention (K only in the cache).
    pub fn is_mla(&self) -> bool {
        self.n_embd_head_k_mla != 0 && self.n_embd_head_v_mla != 0
    }

    /// Key dimension per head of layer `il`.
    pub fn head_k(&self, il: usize) -> u32 {
        if self.is_swa[il] {
            self.n_embd_head_k_swa
        } else {
            self.n_embd_head_k
        }
    }

    /// Value dimension per head of layer `il`.
    pub fn head_v(&self, il: usize) -> u32 {
        if self.is_swa[il] {
            self.n_embd_head_v_swa
        } else {
            self.n_embd_head_v
        }
    }

    /// K values per token of layer `il` (`n_embd_k_gqa(il)`).
    pub fn n_embd_k_gqa(&self, il: usize) -> u64 {
        u64::from(self.head_k(il)) * u64::from(self.n_head_kv[il])
    }

    /// V values per token of layer `il` (`n_embd_v_gqa(il)`).
    pub fn n_embd_v_gqa(&self, il: usize) -> u64 {
        u64::from(self.head_v(il)) * u64::from(self.n_head_kv[il])
    }

    /// The widest layer's V values per token (`n_embd_v_gqa_max`).
    pub fn n_embd_v_gqa_max(&self) -> u64 {
        (0..self.n_layer_all as usize)
            .map(|il| self.n_embd_v_gqa(il))
            .max()
            .unwrap_or(0)
    }

    /// Recurrent convolution state per sequence and layer, in values (`n_embd_r`).
    pub fn n_embd_r(&self) -> u64 {
        if self.wkv_head_size != 0 {
            return u64::from(self.token_shift_count) * u64::from(self.n_embd);
        }
        if self.shortconv_l_cache != 0 {
            return u64::from(self.n_embd) * u64::from(self.shortconv_l_cache - 1);
        }
        // `read` refuses a header whose state is wider than 64 bits; a record made otherwise
        // gets the largest width, which every size computed from it refuses as an overflow.
        self.ssm_conv_width().unwrap_or(u64::MAX)
    }

    /// The Mamba convolution state's width, `(conv_kernel - 1) x (inner_size + 2 x group_count
    /// x state_size)`, where it fits in 64 bits.
    fn ssm_conv_width(&self) -> Option<u64> {
        u64::from(self.ssm_n_group)
            .checked_mul(2 * u64::from(self.ssm_d_state))?
            .checked_add(u64::from(self.ssm_d_inner))?
            .checked_mul(u64::from(self.ssm_d_conv.saturating_sub(1)))
    }

    /// Recurrent SSM state per sequence and layer, in values (`n_embd_s`).
    pub fn n_embd_s(&self) -> u64 {
        if self.wkv_head_size != 0 {
            return u64::from(self.n_embd) * u64::from(self.wkv_head_size);
        }
        u64::from(self.ssm_d_state) * u64::from(self.ssm_d_inner)
    }
}

/// The vocabulary's size as llama.cpp's vocabulary loader finds it.
fn vocab_size<S: AsRef<[u8]>>(file: &GgufFile<S>, arch: &str) -> Result<u32> {
    let model = match file.get("tokenizer.ggml.model") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(bad(format!(
                "key tokenizer.ggml.model has type {}, expected a string",
                other.value_type().name()
            )))
        }
        None => {
            return Err(Error::new(ErrorKind::NotFound {
                message: "key tokenizer.ggml.model is missing: llama.cpp needs a vocabulary".into(),
            }))
        }
    };
    if model == b"none" || model == b"no_vocab" {
        let key = format!("{arch}.vocab_size");
        return match file.get(&key) {
            None => Ok(0),
            Some(v) => int_u32(&key, &v),
        };
    }
    match file.get("tokenizer.ggml.tokens") {
        Some(Value::Array(a)) => u32::try_from(a.len())
            .map_err(|_| bad(format!("tokenizer.ggml.tokens holds {} tokens", a.len()))),
        Some(other) => Err(bad(format!(
            "key tokenizer.ggml.tokens has type {}, expected an array",
            other.value_type().name()
        ))),
        None => Err(Error::new(ErrorKind::NotFound {
            message: "key tokenizer.ggml.tokens is missing".into(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{MetadataValue as V, Writer};
    use crate::ValueType;

    fn file(arch: &str, kv: &[(&str, V)]) -> GgufFile<Vec<u8>> {
        let mut w = Writer::new();
        w.add_metadata("general.architecture", V::string(arch))
            .unwrap();
        w.add_metadata("tokenizer.ggml.model", V::string("none"))
            .unwrap();
        for (k, v) in kv {
            w.add_metadata(format!("{arch}.{k}"), v.clone()).unwrap();
        }
        GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap()
    }

    fn base() -> Vec<(&'static str, V)> {
        vec![
            ("context_length", V::U32(4096)),
            ("embedding_length", V::U32(512)),
            ("block_count", V::U32(4)),
            ("attention.head_count", V::U32(8)),
        ]
    }

    #[test]
    fn absent_keys_take_llama_cpp_defaults() {
        let h = Hparams::read(&file("llama", &base())).unwrap();
        assert_eq!(h.n_head_kv, vec![8; 4]); // the head count
        assert_eq!((h.n_embd_head_k, h.n_embd_head_v), (64, 64)); // n_embd / n_head
        assert_eq!(h.rope.n_rot, 64);
        assert_eq!(h.rope.freq_base, 10000.0);
        assert_eq!(h.rope.freq_scale, 1.0);
        assert_eq!(h.rope.scaling_type, "linear");
        assert_eq!(h.rope.n_ctx_orig, 4096);
        assert_eq!((h.n_vocab, h.n_expert, h.n_layer_nextn), (0, 0, 0));
        assert!(h.causal_attn);
        assert_eq!(h.memory, MemoryKind::Attention);
        assert_eq!(h.n_embd_k_gqa(0), 512);
    }

    #[test]
    fn a_recurrent_state_wider_than_64_bits_is_refused_naming_its_keys() {
        let mut kv = base();
        kv.push(("ssm.conv_kernel", V::U32(u32::MAX)));
        kv.push(("ssm.inner_size", V::U32(u32::MAX)));
        kv.push(("ssm.state_size", V::U32(u32::MAX)));
        kv.push(("ssm.time_step_rank", V::U32(8)));
        kv.push(("ssm.group_count", V::U32(u32::MAX)));
        let e = Hparams::read(&file("mamba2", &kv)).unwrap_err();
        assert!(
            e.to_string()
                .contains("mamba2.ssm.conv_kernel (4294967295)")
                && e.to_string().contains("more than 2^64 values"),
            "{e}"
        );
        // The largest state that fits is read.
        kv[8] = ("ssm.group_count", V::U32(1));
        kv[6] = ("ssm.state_size", V::U32(1));
        kv[5] = ("ssm.inner_size", V::U32(1));
        let h = Hparams::read(&file("mamba2", &kv)).unwrap();
        assert_eq!(h.n_embd_r(), (u64::from(u32::MAX) - 1) * 3);
    }

    #[test]
    fn per_layer_counts_and_their_lengths() {
        let mut kv = base();
        let arr = |v: &[u32]| V::Array(ValueType::Uint32, v.iter().map(|&x| V::U32(x)).collect());
        kv.push(("attention.head_count_kv", arr(&[0, 2, 0, 4])));
        kv.push(("ssm.conv_kernel", V::U32(4)));
        kv.push(("ssm.inner_size", V::U32(1024)));
        kv.push(("ssm.state_size", V::U32(16)));
        kv.push(("ssm.time_step_rank", V::U32(8)));
        kv.push(("ssm.group_count", V::U32(1)));
        let h = Hparams::read(&file("granitehybrid", &kv)).unwrap();
        assert_eq!(h.n_head_kv, vec![0, 2, 0, 4]);
        assert_eq!(h.is_recurrent, vec![true, false, true, false]);
        assert_eq!(h.n_embd_v_gqa_max(), 256);
        assert_eq!(h.n_embd_r(), 3 * (1024 + 2 * 16));
        assert_eq!(h.n_embd_s(), 16 * 1024);

        kv[4] = ("attention.head_count_kv", arr(&[1, 2, 3]));
        let e = Hparams::read(&file("granitehybrid", &kv)).unwrap_err();
        assert!(
            e.to_string()
                .contains("granitehybrid.attention.head_count_kv holds 3 values"),
            "{e}"
        );
    }

    #[test]
    fn sliding_window_patterns() {
        let h = Hparams::read(&file("gemma2", &base())).unwrap();
        assert_eq!((h.swa_type, h.n_swa), (SwaType::Standard, 4096));
        assert_eq!(h.is_swa, vec![true, false, true, false]);
        let mut kv = base();
        kv[2] = ("block_count", V::U32(7));
        kv.push(("attention.sliding_window", V::U32(512)));
        let h = Hparams::read(&file("gemma3", &kv)).unwrap();
        assert_eq!(h.memory, MemoryKind::SlidingWindow);
        assert_eq!(h.is_swa, vec![true, true, true, true, true, false, true]);
        // Gemma 3 without a window has none.
        let h = Hparams::read(&file("gemma3", &base())).unwrap();
        assert_eq!(
            (h.memory, h.swa_type),
            (MemoryKind::Attention, SwaType::None)
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let e = Hparams::read(&file("bert", &base())).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::Unsupported);
        assert!(e.to_string().contains("architecture 'bert'"), "{e}");
        let mut kv = base();
        kv.remove(0);
        let e = Hparams::read(&file("llama", &kv)).unwrap_err();
        assert!(
            e.to_string().contains("llama.context_length is missing"),
            "{e}"
        );
        let mut kv = base();
        kv[2] = ("block_count", V::U32(100_000));
        let e = Hparams::read(&file("llama", &kv)).unwrap_err();
        assert!(e.to_string().contains("block_count is 100000"), "{e}");
        let mut kv = base();
        kv[0] = ("context_length", V::string("long"));
        let e = Hparams::read(&file("llama", &kv)).unwrap_err();
        assert!(
            e.to_string()
                .contains("has type STRING, expected an integer"),
            "{e}"
        );
        let mut kv = base();
        kv.push(("rope.dimension_count", V::U32(32)));
        let e = Hparams::read(&file("llama", &kv)).unwrap_err();
        assert!(e.to_string().contains("rope.dimension_count is 32"), "{e}");
    }
}
