//! The ternary types TQ1_0 and TQ2_0: ggml's reference quantizers (they take no importance).
//! One row per call; blocks of 256 values.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use super::search::{abs_max_c, put_f16, round_i32x8};

/// The block's scale (its absolute maximum, C's `MAX` in order) and its inverse.
#[inline(always)]
fn scale(xb: &[f32]) -> (f32, f32) {
    let amax = abs_max_c(xb);
    (amax, if amax != 0.0 { 1.0 / amax } else { 0.0 })
}

/// `lroundf(v * id) + 1` of every value, as the low byte ggml adds (for NaN and infinities
/// `lroundf` gives `LONG_MIN`, `(int)roundf` `INT_MIN`: the same low byte after the `+ 1`).
#[inline(always)]
fn trits(xb: &[f32], id: f32) -> [u8; 256] {
    let mut t = [0u8; 256];
    for (c, o) in xb.chunks_exact(8).zip(t.chunks_exact_mut(8)) {
        let mut v = [0f32; 8];
        for k in 0..8 {
            v[k] = c[k] * id;
        }
        for (o, r) in o.iter_mut().zip(round_i32x8(v)) {
            *o = r.wrapping_add(1) as u8;
        }
    }
    t
}

/// Five (or four, then shifted) trits into a byte that maps onto 0..=255 (ceiling division).
#[inline(always)]
fn spread(q: u8) -> u8 {
    (u16::from(q) * 256).div_ceil(243) as u8
}

#[inline(always)]
fn tq1_0_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // qs[48] at 0, qh[4] at 48, d at 52.
    for (xb, yb) in x.chunks_exact(256).zip(y.chunks_exact_mut(54)) {
        let (d, id) = scale(xb);
        let t = trits(xb, id);
        put_f16(yb, 52, d);
        for m in 0..32 {
            let mut q = 0u8;
            for n in 0..5 {
                q = q.wrapping_mul(3).wrapping_add(t[m + n * 32]);
            }
            yb[m] = spread(q);
        }
        for m in 0..16 {
            let mut q = 0u8;
            for n in 0..5 {
                q = q.wrapping_mul(3).wrapping_add(t[160 + m + n * 16]);
            }
            yb[32 + m] = spread(q);
        }
        for j in 0..4 {
            let mut q = 0u8;
            for m in 0..4 {
                q = q.wrapping_mul(3).wrapping_add(t[240 + j + m * 4]);
            }
            yb[48 + j] = spread(q.wrapping_mul(3));
        }
    }
}

#[inline(always)]
fn tq2_0_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // qs[64] at 0, d at 64.
    for (xb, yb) in x.chunks_exact(256).zip(y.chunks_exact_mut(66)) {
        let (d, id) = scale(xb);
        let t = trits(xb, id);
        put_f16(yb, 64, d);
        for j in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    q = q.wrapping_add((t[128 * j + m + n * 32] & 3) << (2 * n));
                }
                yb[32 * j + m] = q;
            }
        }
    }
}

entry!(tq1_0 => tq1_0_rows, tq2_0 => tq2_0_rows);
