//! The 4-bit float types MXFP4 and NVFP4: ggml's reference quantizers (they take no
//! importance). One row per call.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use super::search::trunc_i32;
use crate::quant::fp4::{e8m0_to_f32_half, ue4m3_to_f32_half};
use crate::quant::tables::KVALUES_MXFP4;

/// The E2M1 value (index into the doubled table) nearest to `x` at scale `e`; the first of
/// equals.
#[inline(always)]
fn best_index(x: f32, e: f32) -> u8 {
    let mut best_index = 0;
    let mut best_err = (f32::from(KVALUES_MXFP4[0]) * e - x).abs();
    for (i, &k) in KVALUES_MXFP4.iter().enumerate().skip(1) {
        let err = (f32::from(k) * e - x).abs();
        if err < best_err {
            best_index = i;
            best_err = err;
        }
    }
    best_index as u8
}

#[inline(always)]
fn abs_max(xb: &[f32]) -> f32 {
    let mut amax = 0f32;
    for &v in xb {
        if amax < v.abs() {
            amax = v.abs();
        }
    }
    amax
}

/// `log2f` correctly rounded (as glibc gives it for these inputs), without the platform's libm.
#[inline(always)]
fn log2f(x: f32) -> f32 {
    f64::from(x).log2() as f32
}

#[inline(always)]
fn mxfp4_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(17)) {
        let amax = abs_max(xb);
        let e = if amax > 0.0 {
            trunc_i32(log2f(amax).floor() - 2.0 + 127.0) as u8
        } else {
            0
        };
        let d = e8m0_to_f32_half(e);
        yb[0] = e;
        for j in 0..16 {
            yb[1 + j] = best_index(xb[j], d) | (best_index(xb[16 + j], d) << 4);
        }
    }
}

/// `ggml_fp32_to_ue4m3`.
#[inline(always)]
fn to_ue4m3(x: f32) -> u8 {
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN too, as in C
    if !(x > 0.0) {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let fp32_exp = ((bits >> 23) & 0xFF) as i32 - 127;
    let fp32_man = ((bits >> 20) & 0x7) as i32;
    let mut exp = fp32_exp + 7;
    if exp <= 0 {
        let man = trunc_i32(x * 512.0 + 0.5).min(7);
        return if man < 1 { 0 } else { man as u8 };
    }
    if exp >= 15 {
        return 0x7E;
    }
    let mut man = fp32_man + ((bits >> 19) & 1) as i32;
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7E;
        }
    }
    ((exp << 3) | man) as u8
}

#[inline(always)]
fn nvfp4_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // d[4] at 0, qs[32] at 4.
    for (xb, yb) in x.chunks_exact(64).zip(y.chunks_exact_mut(36)) {
        for s in 0..4 {
            let xs = &xb[16 * s..16 * s + 16];
            let ue = to_ue4m3(abs_max(xs) / 6.0);
            yb[s] = ue;
            let d = ue4m3_to_f32_half(ue);
            for j in 0..8 {
                yb[4 + 8 * s + j] = best_index(xs[j], d) | (best_index(xs[8 + j], d) << 4);
            }
        }
    }
}

entry!(mxfp4 => mxfp4_rows, nvfp4 => nvfp4_rows);
