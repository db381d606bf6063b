//! The 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) and the one-scale types Q1_0 and
//! Q2_0: one f16 scale (and min) per block, then packed quants. Each value is `quant * d`, or
//! `quant * d + m` with a min, in that order, as ggml computes it.

use super::blocks::{f16_at, q1_0, q2_0, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, u32_at};
use super::{add, mul};

/// Q4_0: `(nibble - 8) * d`; low nibbles are the first 16 elements, high nibbles the rest.
pub fn q4_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q4_0::D);
        let qs = &b[q4_0::QS..q4_0::QS + 16];
        for (j, &q) in qs.iter().enumerate() {
            y[j] = mul(f32::from((q & 0x0F) as i8 - 8), d);
            y[j + 16] = mul(f32::from((q >> 4) as i8 - 8), d);
        }
    }
}

/// Q4_1: `nibble * d + m`.
pub fn q4_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(20).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q4_1::D);
        let m = f16_at(b, q4_1::M);
        let qs = &b[q4_1::QS..q4_1::QS + 16];
        for (j, &q) in qs.iter().enumerate() {
            y[j] = add(mul(f32::from(q & 0x0F), d), m);
            y[j + 16] = add(mul(f32::from(q >> 4), d), m);
        }
    }
}

/// The fifth bits of elements j and j + 16, moved to bit 4.
#[inline(always)]
fn fifth_bits(qh: u32, j: usize) -> (u8, u8) {
    (
        (((qh >> j) << 4) & 0x10) as u8,
        ((qh >> (j + 12)) & 0x10) as u8,
    )
}

/// Q5_0: `(5-bit quant - 16) * d`.
pub fn q5_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(22).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q5_0::D);
        let qh = u32_at(b, q5_0::QH);
        let qs = &b[q5_0::QS..q5_0::QS + 16];
        for (j, &q) in qs.iter().enumerate() {
            let (h0, h1) = fifth_bits(qh, j);
            y[j] = mul(f32::from(((q & 0x0F) | h0) as i8 - 16), d);
            y[j + 16] = mul(f32::from(((q >> 4) | h1) as i8 - 16), d);
        }
    }
}

/// Q5_1: `5-bit quant * d + m`.
pub fn q5_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(24).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q5_1::D);
        let m = f16_at(b, q5_1::M);
        let qh = u32_at(b, q5_1::QH);
        let qs = &b[q5_1::QS..q5_1::QS + 16];
        for (j, &q) in qs.iter().enumerate() {
            let (h0, h1) = fifth_bits(qh, j);
            y[j] = add(mul(f32::from((q & 0x0F) | h0), d), m);
            y[j + 16] = add(mul(f32::from((q >> 4) | h1), d), m);
        }
    }
}

/// Q8_0: `quant * d`.
pub fn q8_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(34).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q8_0::D);
        for (y, &q) in y.iter_mut().zip(&b[q8_0::QS..q8_0::QS + 32]) {
            *y = mul(f32::from(q as i8), d);
        }
    }
}

/// Q8_1 (ggml has no converter): its scale times each quant; the stored sum is not used.
pub fn q8_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(36).zip(dst.chunks_exact_mut(32)) {
        let d = f16_at(b, q8_1::D);
        for (y, &q) in y.iter_mut().zip(&b[q8_1::QS..q8_1::QS + 32]) {
            *y = mul(f32::from(q as i8), d);
        }
    }
}

/// Q1_0: 128 sign bits, bit j of the bytes (lowest first) for element j: `d` where it is set,
/// `-d` (a negation, as ggml's build gives it: a NaN's sign flips too) where it is clear.
pub fn q1_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(128)) {
        let d = f16_at(b, q1_0::D);
        let qs = &b[q1_0::QS..q1_0::QS + 16];
        for (j, y) in y.iter_mut().enumerate() {
            let bit = (qs[j / 8] >> (j % 8)) & 1;
            *y = if bit != 0 { d } else { -d };
        }
    }
}

/// Q2_0: 64 2-bit codes, element j in bits 2(j%4) of byte j/4: `(code - 1) * d`.
pub fn q2_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(64)) {
        let d = f16_at(b, q2_0::D);
        let qs = &b[q2_0::QS..q2_0::QS + 16];
        for (j, y) in y.iter_mut().enumerate() {
            let code = (qs[j / 4] >> (2 * (j % 4))) & 3;
            *y = mul(f32::from(code as i8 - 1), d);
        }
    }
}
