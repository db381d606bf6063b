//! The ternary types TQ1_0 and TQ2_0: ggml's reference quantizers (they take no importance).
//! One row per call; blocks of 256 values.
#![allow(clippy::cast_possible_truncation)] // C's conversions to narrower integers are the bytes

use super::search::{c_max, lround, put_f16};

/// The block's scale (its absolute maximum, C's `MAX` in order) and its inverse.
fn scale(xb: &[f32]) -> (f32, f32) {
    let mut amax = 0f32;
    for &v in xb {
        amax = c_max(amax, v.abs());
    }
    (amax, if amax != 0.0 { 1.0 / amax } else { 0.0 })
}

/// `lroundf(v * id) + 1` as ggml keeps it in an `int`.
fn trit(v: f32, id: f32) -> i32 {
    lround(v * id).wrapping_add(1) as i32
}

/// Five (or four, then shifted) trits into a byte that maps onto 0..=255 (ceiling division).
fn spread(q: u8) -> u8 {
    ((u16::from(q) * 256 + 242) / 243) as u8
}

pub(crate) fn tq1_0(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // qs[48] at 0, qh[4] at 48, d at 52.
    for (xb, yb) in x.chunks_exact(256).zip(y.chunks_exact_mut(54)) {
        let (d, id) = scale(xb);
        put_f16(yb, 52, d);
        for m in 0..32 {
            let mut q = 0u8;
            for n in 0..5 {
                q = q
                    .wrapping_mul(3)
                    .wrapping_add(trit(xb[m + n * 32], id) as u8);
            }
            yb[m] = spread(q);
        }
        let x2 = &xb[160..];
        for m in 0..16 {
            let mut q = 0u8;
            for n in 0..5 {
                q = q
                    .wrapping_mul(3)
                    .wrapping_add(trit(x2[m + n * 16], id) as u8);
            }
            yb[32 + m] = spread(q);
        }
        let x3 = &xb[240..];
        for j in 0..4 {
            let mut q = 0u8;
            for m in 0..4 {
                q = q
                    .wrapping_mul(3)
                    .wrapping_add(trit(x3[j + m * 4], id) as u8);
            }
            yb[48 + j] = spread(q.wrapping_mul(3));
        }
    }
}

pub(crate) fn tq2_0(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // qs[64] at 0, d at 64.
    for (xb, yb) in x.chunks_exact(256).zip(y.chunks_exact_mut(66)) {
        let (d, id) = scale(xb);
        put_f16(yb, 64, d);
        for j in 0..2 {
            let xs = &xb[128 * j..];
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    q = q.wrapping_add(((trit(xs[m + n * 32], id) & 3) << (2 * n)) as u8);
                }
                yb[32 * j + m] = q;
            }
        }
    }
}
