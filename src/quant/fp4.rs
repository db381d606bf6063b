//! The 4-bit float types: MXFP4 (32 E2M1 values and an E8M0 exponent) and NVFP4 (64 E2M1 values,
//! a UE4M3 scale per 16). The E2M1 table holds doubled values; each scale carries the half.
//! Every scale either type can encode is finite, so no value is NaN: plain operations are exact.

use super::arith::fixed;
use super::blocks::{mxfp4, nvfp4};
use super::tables::KVALUES_MXFP4;

/// Half of 2^(e - 127), as ggml reads an E8M0 byte: e = 0 and 1 give subnormals, 255 gives
/// 2^127 (not NaN).
#[inline(always)]
pub fn e8m0_to_f32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// Half of an unsigned E4M3 byte (bias 7, subnormals for exponent 0); the top bit is ignored,
/// and 0x7F (E4M3's NaN) reads as zero, as ggml reads it. Exact: every value is representable.
#[inline(always)]
pub fn ue4m3_to_f32_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0x0F);
    let man = f32::from(x & 7);
    let value = if exp == 0 {
        man * f32::from_bits(((127 - 9) as u32) << 23)
    } else {
        (1.0 + man / 8.0) * f32::from_bits(((127 + exp - 7) as u32) << 23)
    };
    value * 0.5
}

/// MXFP4: `value[nibble] * scale`; low nibbles are the first 16 elements.
pub fn mxfp4(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(17).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed::<17, 32>(b, y);
        let d = e8m0_to_f32_half(b[mxfp4::E]);
        for j in 0..16 {
            let q = b[mxfp4::QS + j];
            y[j] = f32::from(KVALUES_MXFP4[usize::from(q & 0x0F)]) * d;
            y[j + 16] = f32::from(KVALUES_MXFP4[usize::from(q >> 4)]) * d;
        }
    }
}

/// NVFP4: four sub-blocks of 16, each with its scale byte and 8 bytes of nibbles (low nibbles
/// are its first 8 elements).
pub fn nvfp4(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(36).zip(dst.chunks_exact_mut(64)) {
        let (b, y) = fixed::<36, 64>(b, y);
        for (s, y) in y.chunks_exact_mut(16).enumerate() {
            let d = ue4m3_to_f32_half(b[nvfp4::D + s]);
            let qs = &b[nvfp4::QS + 8 * s..nvfp4::QS + 8 * s + 8];
            for (j, &q) in qs.iter().enumerate() {
                y[j] = f32::from(KVALUES_MXFP4[usize::from(q & 0x0F)]) * d;
                y[j + 8] = f32::from(KVALUES_MXFP4[usize::from(q >> 4)]) * d;
            }
        }
    }
}
