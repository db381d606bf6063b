//! F32, F16 and BF16 as `ggml_quantize_chunk` writes them: the bits, ggml's half conversion,
//! and its reference bfloat16 conversion. Little-endian, as GGUF stores them.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use super::search::{f32_to_bf16, f32_to_f16};

pub(crate) fn f32(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (v, out) in x.iter().zip(y.chunks_exact_mut(4)) {
        out.copy_from_slice(&v.to_le_bytes());
    }
}

pub(crate) fn f16(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (&v, out) in x.iter().zip(y.chunks_exact_mut(2)) {
        out.copy_from_slice(&f32_to_f16(v).to_le_bytes());
    }
}

pub(crate) fn bf16(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (&v, out) in x.iter().zip(y.chunks_exact_mut(2)) {
        out.copy_from_slice(&f32_to_bf16(v).to_le_bytes());
    }
}
