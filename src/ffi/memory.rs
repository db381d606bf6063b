//! The memory llama.cpp needs to run a model at a context size (`src/memory.rs`), for C.
//!
//! Threading: both functions may be called from many threads at once, on one handle too.

use super::boundary::{guard, null, slice, try_from};
use super::handle::GGUFFile;
use crate::error::{Error, ErrorCode, Result};
use crate::memory::{FlashAttn, MemoryEstimate, MemoryParams};
use crate::types::DataType;

/// Flash attention as llama.cpp chooses it (on for the CPU).
pub const GGUF_FLASH_ATTN_AUTO: i32 = -1;
/// Flash attention off: V is stored transposed, and a quantized V cache is refused.
pub const GGUF_FLASH_ATTN_OFF: i32 = 0;
/// Flash attention on.
pub const GGUF_FLASH_ATTN_ON: i32 = 1;

/// The parameters of `gguf_memory_estimate`: those of llama.cpp's `llama_context_params` and
/// `llama_model_params` that change the figures. Start from `gguf_memory_params_default()`;
/// `size` is `sizeof(GGUFMemoryParams)` as the caller was built (fields are only ever appended).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFMemoryParams {
    /// `sizeof(GGUFMemoryParams)`.
    pub size: usize,
    /// The context in tokens; 0: the model's training context.
    pub n_ctx: u32,
    /// The logical batch.
    pub n_batch: u32,
    /// The physical batch (0: `n_batch`).
    pub n_ubatch: u32,
    /// Sequences (0 is taken as 1; at most 256).
    pub n_seq_max: u32,
    /// The K cache's type, a ggml type id (`GGUF_TYPE_F16` = 1, `Q8_0` = 8, ...).
    pub type_k: u32,
    /// The V cache's type, a ggml type id.
    pub type_v: u32,
    /// `GGUF_FLASH_ATTN_AUTO`, `_OFF` or `_ON`.
    pub flash_attn: i32,
    /// Layers on the GPU, as llama.cpp's loader splits them: the output layer counts as one more
    /// layer after the last, and the last `n_gpu_layers` of those go to the GPU (negative: all;
    /// 0: everything on the CPU); the token embeddings and the output buffer stay on the CPU.
    pub n_gpu_layers: i32,
    /// Full-size sliding-window caches.
    pub swa_full: bool,
    /// One KV stream for all sequences.
    pub kv_unified: bool,
    /// The KV cache and recurrent state of GPU layers on the GPU.
    pub offload_kqv: bool,
}

/// What `gguf_memory_estimate` writes: bytes per buffer, and the context llama.cpp uses. Set
/// `size` to `sizeof(GGUFMemoryEstimate)` before the call (fields are only ever appended).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GGUFMemoryEstimate {
    /// `sizeof(GGUFMemoryEstimate)`, set by the caller.
    pub size: usize,
    /// The weights llama.cpp loads (each padded to ggml's 32 bytes; MTP layers skipped; a tied
    /// embedding's copy counted where llama.cpp makes one).
    pub weights: u64,
    /// The K cache (every cache: full and sliding-window).
    pub k: u64,
    /// The V cache.
    pub v: u64,
    /// Recurrent state.
    pub recurrent: u64,
    /// The output buffer (logits).
    pub output: u64,
    /// The compute buffer: a bound on llama.cpp's on the CPU (on the tested models never below
    /// it, and at most 10% above but for two hybrids; docs/memory.md). On the GPU when the
    /// output layer is, where it is an estimate.
    pub compute: u64,
    /// All of the above.
    pub total: u64,
    /// The context llama.cpp uses (padded, a multiple of the sequences).
    pub n_ctx: u32,
    /// The context per sequence.
    pub n_ctx_seq: u32,
    /// Cells per stream of the sliding-window cache (0 without one).
    pub n_ctx_swa: u32,
    /// The micro-batch llama.cpp uses.
    pub n_ubatch: u32,
    /// Bytes on the CPU: what llama.cpp's buffers there take, each K, V and recurrent-state
    /// tensor padded to 32 bytes as its buffer holds it, so that `cpu + gpu` exceeds `total`
    /// (whose K, V and state are llama.cpp's unpadded byte counts) by under 32 bytes a tensor.
    pub cpu: u64,
    /// Bytes on the GPU (an estimate of llama.cpp's layer split; the compute buffer counted
    /// there is an estimate too).
    pub gpu: u64,
    /// The weights as llama.cpp maps them when it loads with mmap (its default on the CPU): per
    /// file, the span from the first byte of tensor data it uses to the last (padding and unused
    /// tensors between them included; a copied tied embedding shares the mapping).
    pub weights_mapped: u64,
}

fn invalid(message: String) -> Error {
    Error::msg(ErrorCode::InvalidArgument, message)
}

fn to_c(p: &MemoryParams) -> GGUFMemoryParams {
    GGUFMemoryParams {
        size: std::mem::size_of::<GGUFMemoryParams>(),
        n_ctx: p.n_ctx,
        n_batch: p.n_batch,
        n_ubatch: p.n_ubatch,
        n_seq_max: p.n_seq_max,
        type_k: p.type_k.id(),
        type_v: p.type_v.id(),
        flash_attn: match p.flash_attn {
            FlashAttn::Auto => GGUF_FLASH_ATTN_AUTO,
            FlashAttn::Off => GGUF_FLASH_ATTN_OFF,
            FlashAttn::On => GGUF_FLASH_ATTN_ON,
        },
        n_gpu_layers: p.n_gpu_layers,
        swa_full: p.swa_full,
        kv_unified: p.kv_unified,
        offload_kqv: p.offload_kqv,
    }
}

fn from_c(c: &GGUFMemoryParams) -> Result<MemoryParams> {
    let dtype = |id: u32, what: &str| {
        DataType::from_id(id).ok_or_else(|| invalid(format!("{what} {id} is not a ggml type")))
    };
    Ok(MemoryParams {
        n_ctx: c.n_ctx,
        n_batch: c.n_batch,
        n_ubatch: c.n_ubatch,
        n_seq_max: c.n_seq_max,
        type_k: dtype(c.type_k, "type_k")?,
        type_v: dtype(c.type_v, "type_v")?,
        flash_attn: match c.flash_attn {
            GGUF_FLASH_ATTN_AUTO => FlashAttn::Auto,
            GGUF_FLASH_ATTN_OFF => FlashAttn::Off,
            GGUF_FLASH_ATTN_ON => FlashAttn::On,
            x => return Err(invalid(format!("flash_attn {x} is not -1, 0 or 1"))),
        },
        swa_full: c.swa_full,
        kv_unified: c.kv_unified,
        n_gpu_layers: c.n_gpu_layers,
        offload_kqv: c.offload_kqv,
    })
}

/// llama.cpp's context defaults (`llama_context_default_params`): a 512-token context, batch
/// 2048, micro-batch 512, one sequence, F16 K and V, flash attention auto, full-size
/// sliding-window caches, not unified, KV offload; every layer on the CPU (`n_gpu_layers` 0).
#[unsafe(no_mangle)]
pub extern "C" fn gguf_memory_params_default() -> GGUFMemoryParams {
    to_c(&MemoryParams::default())
}

/// The memory llama.cpp (v0.5.0) needs to run the model in `file` with `params` (NULL: the
/// defaults), from the header alone: written to `out`, whose `size` the caller sets. Weights,
/// K, V, recurrent state, output and the context equal llama.cpp's to the byte on the CPU;
/// the compute buffer is a bound (on the tested models never below llama.cpp's, and at most
/// 10% above but for two hybrids; docs/memory.md); the CPU/GPU split follows llama.cpp's
/// loader, and on the GPU the compute buffer is an estimate.
/// Returns false, writing nothing, for an architecture whose rules are not known
/// (GGUF_ERROR_CODE_UNSUPPORTED, naming it), a missing or malformed key, parameters llama.cpp
/// refuses (a quantized V cache without flash attention, ...) or a bad `size`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT), or a NULL `file` or `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_memory_estimate(
    file: GGUFFile,
    params: *const GGUFMemoryParams,
    out: *mut GGUFMemoryEstimate,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let p = if params.is_null() {
            MemoryParams::default()
        } else {
            // SAFETY: `params` points to a `GGUFMemoryParams` whose first field is its size.
            let size = unsafe { slice(params.cast::<usize>(), 1, "params")?[0] };
            let ours = std::mem::size_of::<GGUFMemoryParams>();
            if size < ours {
                return Err(invalid(format!(
                    "params->size {size} is smaller than GGUFMemoryParams ({ours} bytes)"
                )));
            }
            if isize::try_from(size).is_err() {
                return Err(invalid(format!(
                    "params->size {size} is larger than any object"
                )));
            }
            // SAFETY: `size` readable bytes (the contract, with `size` checked above).
            let bytes = unsafe { slice(params.cast::<u8>(), size, "params")? };
            if bytes[ours..].iter().any(|&b| b != 0) {
                return Err(invalid(format!(
                    "params->size {size} with fields set past the {ours} bytes this library knows"
                )));
            }
            // SAFETY: at least `ours` readable bytes.
            from_c(&unsafe { params.read_unaligned() })?
        };
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: `out` points to a `GGUFMemoryEstimate` whose first field the caller set.
        let size = unsafe { slice(out.cast_const().cast::<usize>(), 1, "out")?[0] };
        let ours = std::mem::size_of::<GGUFMemoryEstimate>();
        if size < ours {
            return Err(invalid(format!(
                "out->size {size} is smaller than GGUFMemoryEstimate ({ours} bytes)"
            )));
        }
        let e: MemoryEstimate = crate::memory::estimate(&f.model, &p).map_err(|e| f.about(e))?;
        let c = GGUFMemoryEstimate {
            size: ours,
            weights: e.weights,
            k: e.k,
            v: e.v,
            recurrent: e.recurrent,
            output: e.output,
            compute: e.compute,
            total: e.total,
            n_ctx: e.n_ctx,
            n_ctx_seq: e.n_ctx_seq,
            n_ctx_swa: e.n_ctx_swa,
            n_ubatch: e.n_ubatch,
            cpu: e.cpu,
            gpu: e.gpu,
            weights_mapped: e.weights_mapped,
        };
        // SAFETY: `out` is non-NULL, aligned (checked by `slice`) and has room for ours.
        unsafe { out.write(c) };
        Ok(true)
    })
}
