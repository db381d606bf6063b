//! The 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) and the one-scale types Q1_0 and
//! Q2_0: one f16 scale (and min) per block, then packed quants. Each value is `quant * d`, or
//! `quant * d + m` with a min, in that order, as ggml computes it.

use super::arith::{by_scales, fixed, Arith};
use super::blocks::{f16_at, q1_0, q2_0, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, u32_at};

/// Q4_0: `(nibble - 8) * d`; low nibbles are the first 16 elements, high nibbles the rest.
pub fn q4_0(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 18], y: &mut [f32; 32]) {
        for j in 0..16 {
            let q = b[q4_0::QS + j];
            y[j] = A::mul(f32::from((q & 0x0F) as i8 - 8), d);
            y[j + 16] = A::mul(f32::from((q >> 4) as i8 - 8), d);
        }
    }
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, q4_0::D);
        by_scales!([d], block(d, b, y));
    }
}

/// Q4_1: `nibble * d + m`.
pub fn q4_1(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, m: f32, b: &[u8; 20], y: &mut [f32; 32]) {
        for j in 0..16 {
            let q = b[q4_1::QS + j];
            y[j] = A::add(A::mul(f32::from(q & 0x0F), d), m);
            y[j + 16] = A::add(A::mul(f32::from(q >> 4), d), m);
        }
    }
    for (b, y) in src.chunks_exact(20).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed(b, y);
        let (d, m) = (f16_at(b, q4_1::D), f16_at(b, q4_1::M));
        by_scales!([d, m], block(d, m, b, y));
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
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 22], y: &mut [f32; 32]) {
        let qh = u32_at(b, q5_0::QH);
        for j in 0..16 {
            let q = b[q5_0::QS + j];
            let (h0, h1) = fifth_bits(qh, j);
            y[j] = A::mul(f32::from(((q & 0x0F) | h0) as i8 - 16), d);
            y[j + 16] = A::mul(f32::from(((q >> 4) | h1) as i8 - 16), d);
        }
    }
    for (b, y) in src.chunks_exact(22).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, q5_0::D);
        by_scales!([d], block(d, b, y));
    }
}

/// Q5_1: `5-bit quant * d + m`.
pub fn q5_1(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, m: f32, b: &[u8; 24], y: &mut [f32; 32]) {
        let qh = u32_at(b, q5_1::QH);
        for j in 0..16 {
            let q = b[q5_1::QS + j];
            let (h0, h1) = fifth_bits(qh, j);
            y[j] = A::add(A::mul(f32::from((q & 0x0F) | h0), d), m);
            y[j + 16] = A::add(A::mul(f32::from((q >> 4) | h1), d), m);
        }
    }
    for (b, y) in src.chunks_exact(24).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed(b, y);
        let (d, m) = (f16_at(b, q5_1::D), f16_at(b, q5_1::M));
        by_scales!([d, m], block(d, m, b, y));
    }
}

/// `quant * d` for 32 signed bytes from `at` (Q8_0, Q8_1).
#[inline(always)]
fn times_d<A: Arith>(d: f32, b: &[u8], at: usize, y: &mut [f32; 32]) {
    let qs: &[u8; 32] = b[at..at + 32].try_into().expect("32 quants");
    for (y, &q) in y.iter_mut().zip(qs) {
        *y = A::mul(f32::from(q as i8), d);
    }
}

/// Q8_0: `quant * d`.
pub fn q8_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(34).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed::<34, 32>(b, y);
        let d = f16_at(b, q8_0::D);
        by_scales!([d], times_d(d, b, q8_0::QS, y));
    }
}

/// Q8_1 (ggml has no converter): its scale times each quant; the stored sum is not used.
pub fn q8_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(36).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed::<36, 32>(b, y);
        let d = f16_at(b, q8_1::D);
        by_scales!([d], times_d(d, b, q8_1::QS, y));
    }
}

/// Q1_0: 128 sign bits, bit j of the bytes (lowest first) for element j: `d` where it is set,
/// `-d` (a negation, as ggml's build gives it: a NaN's sign flips too) where it is clear.
pub fn q1_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(128)) {
        let (b, y) = fixed::<18, 128>(b, y);
        let d = f16_at(b, q1_0::D);
        for (j, y) in y.iter_mut().enumerate() {
            let bit = (b[q1_0::QS + j / 8] >> (j % 8)) & 1;
            *y = if bit != 0 { d } else { -d };
        }
    }
}

/// Q2_0: 64 2-bit codes, element j in bits 2(j%4) of byte j/4: `(code - 1) * d`.
pub fn q2_0(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 18], y: &mut [f32; 64]) {
        for (j, y) in y.iter_mut().enumerate() {
            let code = (b[q2_0::QS + j / 4] >> (2 * (j % 4))) & 3;
            *y = A::mul(f32::from(code as i8 - 1), d);
        }
    }
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(64)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, q2_0::D);
        by_scales!([d], block(d, b, y));
    }
}
