//! aarch64 NEON kernels (NEON is part of the aarch64 baseline: no detection), each bit-identical
//! to the scalar kernel of its type: integer quants widened and converted exactly, then the
//! scalar code's multiplies and adds in its order (never `vfma`: ggml multiplies, then adds).
//!
//! A NaN result is where Arm and x86 differ (which operand's NaN comes out; the sign of the
//! default NaN), and the scalar kernels follow x86: a block whose output holds a NaN is
//! converted again by the scalar kernel ([`fix_nans`]), which costs a scan of the block's floats
//! while they are in L1.

use super::isa::Kernel;
use crate::quant::blocks::{q4_0, q4_1, q4_k, q5_0, q5_1, q5_k, q6_k, q8_0};
use crate::quant::kquant::scale_min_k4;
use crate::types::DataType;
use core::arch::aarch64::*;

/// Little-endian `u16` at `at`.
#[inline(always)]
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Eight f16 as f32, by the CPU's conversion (`fcvtl`, which quiets signalling NaNs as ggml's
/// conversion does): written in assembly because the standard library's f16 vector type is not
/// stable.
#[inline(always)]
fn f16x8(x: uint16x8_t) -> (float32x4_t, float32x4_t) {
    let lo: float32x4_t;
    let hi: float32x4_t;
    // SAFETY: two register-only conversions (NEON is baseline on aarch64).
    unsafe {
        core::arch::asm!(
            "fcvtl {lo:v}.4s, {x:v}.4h",
            "fcvtl2 {hi:v}.4s, {x:v}.8h",
            x = in(vreg) x,
            lo = out(vreg) lo,
            hi = out(vreg) hi,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    (lo, hi)
}

/// Redoes a block with the scalar kernel of `dtype` if any of its floats `y` is a NaN.
#[inline(always)]
fn fix_nans(dtype: DataType, b: &[u8], y: &mut [f32]) {
    let mut any = 0u32;
    for v in y.chunks_exact(4) {
        // SAFETY: 4 readable floats; NEON register operations (baseline).
        any |= unsafe {
            let v = vld1q_f32(v.as_ptr());
            vmaxvq_u32(vmvnq_u32(vceqq_f32(v, v)))
        };
    }
    if any != 0 {
        crate::quant::scalar::scalar_kernel(dtype)(b, y);
    }
}

/// The f16 at `at` as f32, by the same conversion.
#[inline(always)]
fn half(b: &[u8], at: usize) -> f32 {
    // SAFETY: NEON is baseline; lane 0 of a register built from a value.
    unsafe { vgetq_lane_f32::<0>(f16x8(vdupq_n_u16(le16(b, at))).0) }
}

/// 16 signed bytes as four vectors of floats.
#[inline(always)]
fn i8_to_f32(v: int8x16_t) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    unsafe {
        let lo = vmovl_s8(vget_low_s8(v));
        let hi = vmovl_s8(vget_high_s8(v));
        [
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))),
            vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))),
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))),
            vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))),
        ]
    }
}

/// 16 unsigned bytes as four vectors of floats.
#[inline(always)]
fn u8_to_f32(v: uint8x16_t) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    unsafe {
        let lo = vmovl_u8(vget_low_u8(v));
        let hi = vmovl_u8(vget_high_u8(v));
        [
            vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))),
            vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo))),
            vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))),
            vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi))),
        ]
    }
}

/// Stores four vectors at y[0..16].
#[inline(always)]
fn store16(y: &mut [f32], v: [float32x4_t; 4]) {
    let y = &mut y[..16];
    // SAFETY: y has 16 floats (the slice above is bounds-checked).
    unsafe {
        for (k, v) in v.into_iter().enumerate() {
            vst1q_f32(y.as_mut_ptr().add(4 * k), v);
        }
    }
}

/// 16 bytes from `b[at..]`.
#[inline(always)]
fn load16(b: &[u8], at: usize) -> uint8x16_t {
    let b = &b[at..at + 16];
    // SAFETY: 16 readable bytes (bounds-checked above).
    unsafe { vld1q_u8(b.as_ptr()) }
}

/// The fifth bits of 16 Q5 elements: bytes `lo` and `hi` of `qh` spread to one lane per bit,
/// 0x10 where set.
#[inline(always)]
fn q5_bits(lo: u8, hi: u8) -> uint8x16_t {
    const BITS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: NEON register operations (baseline); BITS is 16 bytes.
    unsafe {
        let v = vcombine_u8(vdup_n_u8(lo), vdup_n_u8(hi));
        vandq_u8(vtstq_u8(v, vld1q_u8(BITS.as_ptr())), vdupq_n_u8(0x10))
    }
}

fn f16(x: &[u8], y: &mut [f32]) {
    for (x, y) in x.chunks_exact(16).zip(y.chunks_exact_mut(8)) {
        // SAFETY: 16 bytes read, 8 floats written, within the chunks.
        unsafe {
            let (lo, hi) = f16x8(vld1q_u16(x.as_ptr().cast()));
            vst1q_f32(y.as_mut_ptr(), lo);
            vst1q_f32(y.as_mut_ptr().add(4), hi);
        }
    }
    let done = (x.len() / 16).min(y.len() / 8) * 8;
    for j in done..(x.len() / 2).min(y.len()) {
        y[j] = half(x, 2 * j);
    }
}

fn bf16(x: &[u8], y: &mut [f32]) {
    for (x, y) in x.chunks_exact(16).zip(y.chunks_exact_mut(8)) {
        // SAFETY: 16 bytes read, 8 floats written, within the chunks.
        unsafe {
            let v = vld1q_u16(x.as_ptr().cast());
            let lo = vshll_n_u16::<16>(vget_low_u16(v));
            let hi = vshll_n_u16::<16>(vget_high_u16(v));
            vst1q_f32(y.as_mut_ptr(), vreinterpretq_f32_u32(lo));
            vst1q_f32(y.as_mut_ptr().add(4), vreinterpretq_f32_u32(hi));
        }
    }
    let done = (x.len() / 16).min(y.len() / 8) * 8;
    for j in done..(x.len() / 2).min(y.len()) {
        y[j] = f32::from_bits(u32::from(le16(x, 2 * j)) << 16);
    }
}

/// x * d for each of four vectors.
#[inline(always)]
fn mul(v: [float32x4_t; 4], d: float32x4_t) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    v.map(|v| unsafe { vmulq_f32(v, d) })
}
/// d * x for each (the K-quants' order).
#[inline(always)]
fn mul_by(d: float32x4_t, v: [float32x4_t; 4]) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    v.map(|v| unsafe { vmulq_f32(d, v) })
}
/// x * d + m, not fused.
#[inline(always)]
fn mul_add(v: [float32x4_t; 4], d: float32x4_t, m: float32x4_t) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    v.map(|v| unsafe { vaddq_f32(vmulq_f32(v, d), m) })
}
/// d * x - m, not fused.
#[inline(always)]
fn mul_sub(d: float32x4_t, v: [float32x4_t; 4], m: float32x4_t) -> [float32x4_t; 4] {
    // SAFETY: NEON register operations (baseline).
    v.map(|v| unsafe { vsubq_f32(vmulq_f32(d, v), m) })
}
#[inline(always)]
fn splat(x: f32) -> float32x4_t {
    // SAFETY: NEON register operation (baseline).
    unsafe { vdupq_n_f32(x) }
}

fn q8_0(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(34).zip(y.chunks_exact_mut(32)) {
        let d = splat(half(b, q8_0::D));
        // SAFETY: NEON register operations (baseline).
        let (lo, hi) = unsafe {
            (
                vreinterpretq_s8_u8(load16(b, q8_0::QS)),
                vreinterpretq_s8_u8(load16(b, q8_0::QS + 16)),
            )
        };
        store16(&mut y[..16], mul(i8_to_f32(lo), d));
        store16(&mut y[16..], mul(i8_to_f32(hi), d));
        fix_nans(DataType::Q8_0, b, y);
    }
}

fn q4_0(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(32)) {
        let d = splat(half(b, q4_0::D));
        let qs = load16(b, q4_0::QS);
        // SAFETY: NEON register operations (baseline).
        let (lo, hi) = unsafe {
            let m4 = vdupq_n_u8(0x0f);
            let eight = vdupq_n_s8(8);
            (
                vsubq_s8(vreinterpretq_s8_u8(vandq_u8(qs, m4)), eight),
                vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8::<4>(qs)), eight),
            )
        };
        store16(&mut y[..16], mul(i8_to_f32(lo), d));
        store16(&mut y[16..], mul(i8_to_f32(hi), d));
        fix_nans(DataType::Q4_0, b, y);
    }
}

fn q4_1(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(20).zip(y.chunks_exact_mut(32)) {
        let d = splat(half(b, q4_1::D));
        let m = splat(half(b, q4_1::M));
        let qs = load16(b, q4_1::QS);
        // SAFETY: NEON register operations (baseline).
        let (lo, hi) = unsafe { (vandq_u8(qs, vdupq_n_u8(0x0f)), vshrq_n_u8::<4>(qs)) };
        store16(&mut y[..16], mul_add(u8_to_f32(lo), d, m));
        store16(&mut y[16..], mul_add(u8_to_f32(hi), d, m));
        fix_nans(DataType::Q4_1, b, y);
    }
}

fn q5_0(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(22).zip(y.chunks_exact_mut(32)) {
        let d = splat(half(b, q5_0::D));
        let qs = load16(b, q5_0::QS);
        // SAFETY: NEON register operations (baseline).
        let (lo, hi) = unsafe {
            let lo = vorrq_u8(
                vandq_u8(qs, vdupq_n_u8(0x0f)),
                q5_bits(b[q5_0::QH], b[q5_0::QH + 1]),
            );
            let hi = vorrq_u8(
                vshrq_n_u8::<4>(qs),
                q5_bits(b[q5_0::QH + 2], b[q5_0::QH + 3]),
            );
            let sixteen = vdupq_n_s8(16);
            (
                vsubq_s8(vreinterpretq_s8_u8(lo), sixteen),
                vsubq_s8(vreinterpretq_s8_u8(hi), sixteen),
            )
        };
        store16(&mut y[..16], mul(i8_to_f32(lo), d));
        store16(&mut y[16..], mul(i8_to_f32(hi), d));
        fix_nans(DataType::Q5_0, b, y);
    }
}

fn q5_1(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(24).zip(y.chunks_exact_mut(32)) {
        let d = splat(half(b, q5_1::D));
        let m = splat(half(b, q5_1::M));
        let qs = load16(b, q5_1::QS);
        // SAFETY: NEON register operations (baseline).
        let (lo, hi) = unsafe {
            (
                vorrq_u8(
                    vandq_u8(qs, vdupq_n_u8(0x0f)),
                    q5_bits(b[q5_1::QH], b[q5_1::QH + 1]),
                ),
                vorrq_u8(
                    vshrq_n_u8::<4>(qs),
                    q5_bits(b[q5_1::QH + 2], b[q5_1::QH + 3]),
                ),
            )
        };
        store16(&mut y[..16], mul_add(u8_to_f32(lo), d, m));
        store16(&mut y[16..], mul_add(u8_to_f32(hi), d, m));
        fix_nans(DataType::Q5_1, b, y);
    }
}

fn q4_k(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(144).zip(y.chunks_exact_mut(256)) {
        let d = half(b, q4_k::D);
        let min = half(b, q4_k::DMIN);
        let scales = &b[q4_k::SCALES..q4_k::SCALES + 12];
        for g in 0..4 {
            let (sc1, m1) = scale_min_k4(2 * g, scales);
            let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
            let (d1, m1) = (splat(d * f32::from(sc1)), splat(min * f32::from(m1)));
            let (d2, m2) = (splat(d * f32::from(sc2)), splat(min * f32::from(m2)));
            for k in 0..2 {
                let qs = load16(b, q4_k::QS + 32 * g + 16 * k);
                // SAFETY: NEON register operations (baseline).
                let (lo, hi) = unsafe { (vandq_u8(qs, vdupq_n_u8(0x0f)), vshrq_n_u8::<4>(qs)) };
                let out = &mut y[64 * g..64 * g + 64];
                store16(&mut out[16 * k..], mul_sub(d1, u8_to_f32(lo), m1));
                store16(&mut out[32 + 16 * k..], mul_sub(d2, u8_to_f32(hi), m2));
            }
        }
        fix_nans(DataType::Q4_K, b, y);
    }
}

fn q5_k(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(176).zip(y.chunks_exact_mut(256)) {
        let d = half(b, q5_k::D);
        let min = half(b, q5_k::DMIN);
        let scales = &b[q5_k::SCALES..q5_k::SCALES + 12];
        for g in 0..4 {
            let (sc1, m1) = scale_min_k4(2 * g, scales);
            let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
            let (d1, m1) = (splat(d * f32::from(sc1)), splat(min * f32::from(m1)));
            let (d2, m2) = (splat(d * f32::from(sc2)), splat(min * f32::from(m2)));
            for k in 0..2 {
                let qs = load16(b, q5_k::QS + 32 * g + 16 * k);
                let qh = load16(b, q5_k::QH + 16 * k);
                // SAFETY: NEON register operations (baseline).
                let (lo, hi) = unsafe {
                    let sixteen = vdupq_n_u8(16);
                    let h1 = vandq_u8(vtstq_u8(qh, vdupq_n_u8(1 << (2 * g))), sixteen);
                    let h2 = vandq_u8(vtstq_u8(qh, vdupq_n_u8(2 << (2 * g))), sixteen);
                    (
                        vaddq_u8(vandq_u8(qs, vdupq_n_u8(0x0f)), h1),
                        vaddq_u8(vshrq_n_u8::<4>(qs), h2),
                    )
                };
                let out = &mut y[64 * g..64 * g + 64];
                store16(&mut out[16 * k..], mul_sub(d1, u8_to_f32(lo), m1));
                store16(&mut out[32 + 16 * k..], mul_sub(d2, u8_to_f32(hi), m2));
            }
        }
        fix_nans(DataType::Q5_K, b, y);
    }
}

fn q6_k(x: &[u8], y: &mut [f32]) {
    for (b, y) in x.chunks_exact(210).zip(y.chunks_exact_mut(256)) {
        let d = half(b, q6_k::D);
        for n in 0..2 {
            let sc = |k: usize| splat(d * f32::from(b[q6_k::SCALES + 8 * n + k] as i8));
            let out = &mut y[128 * n..128 * n + 128];
            for l in 0..2 {
                let a = load16(b, q6_k::QL + 64 * n + 16 * l);
                let c = load16(b, q6_k::QL + 64 * n + 32 + 16 * l);
                let h = load16(b, q6_k::QH + 32 * n + 16 * l);
                // SAFETY: NEON register operations (baseline).
                let q = unsafe {
                    let m4 = vdupq_n_u8(0x0f);
                    let m3 = vdupq_n_u8(0x30);
                    let k32 = vdupq_n_s8(32);
                    let s = |v: uint8x16_t| vsubq_s8(vreinterpretq_s8_u8(v), k32);
                    [
                        s(vorrq_u8(vandq_u8(a, m4), vandq_u8(vshlq_n_u8::<4>(h), m3))),
                        s(vorrq_u8(vandq_u8(c, m4), vandq_u8(vshlq_n_u8::<2>(h), m3))),
                        s(vorrq_u8(vshrq_n_u8::<4>(a), vandq_u8(h, m3))),
                        s(vorrq_u8(
                            vshrq_n_u8::<4>(c),
                            vandq_u8(vshrq_n_u8::<2>(h), m3),
                        )),
                    ]
                };
                for (j, q) in q.into_iter().enumerate() {
                    store16(
                        &mut out[32 * j + 16 * l..],
                        mul_by(sc(2 * j + l), i8_to_f32(q)),
                    );
                }
            }
        }
        fix_nans(DataType::Q6_K, b, y);
    }
}

/// The NEON kernel for `dtype`, if there is one.
pub(super) fn kernel(dtype: DataType) -> Option<Kernel> {
    use DataType::*;
    Some(match dtype {
        F16 => f16,
        BF16 => bf16,
        Q8_0 => q8_0,
        Q4_0 => q4_0,
        Q4_1 => q4_1,
        Q5_0 => q5_0,
        Q5_1 => q5_1,
        Q4_K => q4_k,
        Q5_K => q5_k,
        Q6_K => q6_k,
        // Types with no NEON kernel: every type is named, so a new one must be placed here.
        F32 | Q8_1 | Q2_K | Q3_K | Q8_K | IQ2_XXS | IQ2_XS | IQ3_XXS | IQ1_S | IQ4_NL | IQ3_S
        | IQ2_S | IQ4_XS | I8 | I16 | I32 | I64 | F64 | IQ1_M | TQ1_0 | TQ2_0 | MXFP4 | NVFP4
        | Q1_0 | Q2_0 => return None,
    })
}
