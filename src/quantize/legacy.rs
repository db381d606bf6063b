//! The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and the sign/ternary-free small
//! types Q1_0 and Q2_0: ggml's reference quantizers, and with importance weights its searches
//! (`quantize_row_q4_0_impl` and its siblings). One row per call.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use super::search::{
    f32_to_f16, make_qkx_lanes, make_qx_lanes, map_trunc32, mul_x86, put_f16, round_i32x8,
    sum_squares, Qkx,
};

/// The importance path of the 32-value types, `BLOCK_LANES` blocks side by side: each block's weights
/// `qw[j] * sqrt(sigma2 + x[j]^2)` (`sigma2` over the whole row), the search on the lanes
/// (values and weights lane-major, quants out, each lane's scale and minimum), then each block
/// written; the type is told by its block's bytes.
#[inline(always)]
fn importance_lanes<const BLOCK_BYTES: usize>(x: &[f32], qw: &[f32], y: &mut [u8]) {
    let block_bytes = BLOCK_BYTES;
    let sigma2 = row_sigma2(x);
    let nb = x.len() / 32;
    let mut b = 0;
    while b < nb {
        let n = (nb - b).min(BLOCK_LANES);
        let mut xt = [[0f32; BLOCK_LANES]; 32];
        let mut wt = [[0f32; BLOCK_LANES]; 32];
        for k in 0..n {
            let xb = &x[32 * (b + k)..32 * (b + k + 1)];
            let q = &qw[32 * (b + k)..32 * (b + k + 1)];
            for i in 0..32 {
                xt[i][k] = xb[i];
                wt[i][k] = mul_x86(q[i], (sigma2 + xb[i] * xb[i]).sqrt());
            }
        }
        let mut lt = [[0u8; BLOCK_LANES]; 32];
        // The type, by its block size (every call site is inlined into its type's entry).
        let (d, m) = match BLOCK_BYTES {
            18 => q4_0_search(&xt, &wt, &mut lt),
            20 => q4_1_search(&xt, &wt, &mut lt),
            22 => q5_0_search(&xt, &wt, &mut lt),
            _ => q5_1_search(&xt, &wt, &mut lt),
        };
        for k in 0..n {
            let mut l = [0u8; 32];
            for i in 0..32 {
                l[i] = lt[i][k];
            }
            let yb = &mut y[block_bytes * (b + k)..block_bytes * (b + k + 1)];
            match BLOCK_BYTES {
                18 => q4_0_write(d[k], m[k], &l, yb),
                20 => q4_1_write(d[k], m[k], &l, yb),
                22 => q5_0_write(d[k], m[k], &l, yb),
                _ => q5_1_write(d[k], m[k], &l, yb),
            }
        }
        b += n;
    }
}

/// Blocks searched side by side (two AVX-512 registers of lanes).
const BLOCK_LANES: usize = 32;
type Lanes = [[f32; BLOCK_LANES]; 32];
type Quants = [[u8; BLOCK_LANES]; 32];
type PerLane = [f32; BLOCK_LANES];

/// `make_qx_quants` on the lanes' blocks, as bytes.
#[inline(always)]
fn qx_search(nmax: i32, xt: &Lanes, wt: &Lanes, lt: &mut Quants) -> (PerLane, PerLane) {
    let mut l8 = [[0i8; BLOCK_LANES]; 32];
    let d = make_qx_lanes(nmax, xt, Some(wt), &mut l8);
    for (o, i) in lt.iter_mut().zip(&l8) {
        *o = i.map(|v| v as u8);
    }
    (d, [0.0; BLOCK_LANES])
}

#[inline(always)]
fn q4_0_search(xt: &Lanes, wt: &Lanes, lt: &mut Quants) -> (PerLane, PerLane) {
    qx_search(8, xt, wt, lt)
}

#[inline(always)]
fn q5_0_search(xt: &Lanes, wt: &Lanes, lt: &mut Quants) -> (PerLane, PerLane) {
    qx_search(16, xt, wt, lt)
}

#[inline(always)]
fn q4_1_search(xt: &Lanes, wt: &Lanes, lt: &mut Quants) -> (PerLane, PerLane) {
    make_qkx_lanes(&QKX3_LEGACY, xt, wt, lt)
}

#[inline(always)]
fn q5_1_search(xt: &Lanes, wt: &Lanes, lt: &mut Quants) -> (PerLane, PerLane) {
    make_qkx_lanes(
        &Qkx {
            nmax: 31,
            ..QKX3_LEGACY
        },
        xt,
        wt,
        lt,
    )
}

#[inline(always)]
fn q4_0_write(d: f32, _min: f32, l: &[u8; 32], yb: &mut [u8]) {
    put_f16(yb, 0, d);
    for j in 0..16 {
        yb[2 + j] = l[j] | (l[j + 16] << 4);
    }
}

#[inline(always)]
fn q4_1_write(d: f32, min: f32, l: &[u8; 32], yb: &mut [u8]) {
    put_f16(yb, 0, d);
    put_f16(yb, 2, -min);
    for j in 0..16 {
        yb[4 + j] = l[j] | (l[j + 16] << 4);
    }
}

#[inline(always)]
fn q5_0_write(d: f32, _min: f32, l: &[u8; 32], yb: &mut [u8]) {
    put_f16(yb, 0, d);
    let (qh, qs) = yb[2..].split_at_mut(4);
    pack5(l, qh, qs);
}

#[inline(always)]
fn q5_1_write(d: f32, min: f32, l: &[u8; 32], yb: &mut [u8]) {
    put_f16(yb, 0, d);
    put_f16(yb, 2, -min);
    let (qh, qs) = yb[4..].split_at_mut(4);
    pack5(l, qh, qs);
}

/// `sum(x^2) / n` over the whole row, in order.
#[inline(always)]
fn row_sigma2(x: &[f32]) -> f32 {
    sum_squares(x) / x.len() as f32
}

/// The largest magnitude in `xb` (0 for none; NaN never wins a comparison), over eight
/// interleaved lanes: magnitudes are never -0, so the lanes' order does not matter.
#[inline(always)]
fn abs_max(xb: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    for c in xb.chunks_exact(8) {
        for k in 0..8 {
            let a = c[k].abs();
            if lanes[k] < a {
                lanes[k] = a;
            }
        }
    }
    let mut amax = 0f32;
    for a in lanes {
        if amax < a {
            amax = a;
        }
    }
    amax
}

/// The absolute maximum and the value that has it (the first one), as Q4_0 and Q5_0 find them.
#[inline(always)]
fn signed_max(xb: &[f32]) -> f32 {
    // The largest magnitude, then the first value that has it: what the sequential search
    // keeps.
    let amax = abs_max(xb);
    if amax == 0.0 {
        return 0.0;
    }
    xb.iter().copied().find(|v| v.abs() == amax).unwrap_or(0.0)
}

#[inline(always)]
fn min_max(xb: &[f32]) -> (f32, f32) {
    // Over eight interleaved lanes (NaN never wins a comparison), then across them. Only the
    // sign of a zero depends on the order (the first of equal zeros stays): such blocks take
    // the sequential scan.
    let mut lo = [f32::MAX; 8];
    let mut hi = [-f32::MAX; 8];
    for c in xb.chunks_exact(8) {
        for k in 0..8 {
            if c[k] < lo[k] {
                lo[k] = c[k];
            }
            if c[k] > hi[k] {
                hi[k] = c[k];
            }
        }
    }
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for k in 0..8 {
        if lo[k] < min {
            min = lo[k];
        }
        if hi[k] > max {
            max = hi[k];
        }
    }
    if min != 0.0 && max != 0.0 {
        return (min, max);
    }
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in xb {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

#[inline(always)]
fn q1_0_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (xb, yb) in x.chunks_exact(128).zip(y.chunks_exact_mut(18)) {
        let mut sum_abs = 0f32;
        for &v in xb {
            sum_abs += v.abs();
        }
        put_f16(yb, 0, sum_abs / 128.0);
        yb[2..].fill(0);
        for (j, &v) in xb.iter().enumerate() {
            if v >= 0.0 {
                yb[2 + j / 8] |= 1 << (j % 8);
            }
        }
    }
}

#[inline(always)]
fn q2_0_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (xb, yb) in x.chunks_exact(64).zip(y.chunks_exact_mut(18)) {
        let d = abs_max(xb);
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        put_f16(yb, 0, d);
        yb[2..].fill(0);
        for (c, out) in xb.chunks_exact(8).zip(yb[2..].chunks_exact_mut(2)) {
            let mut v = [0f32; 8];
            for k in 0..8 {
                v[k] = c[k] * id;
            }
            let r = round_i32x8(v);
            for (k, q) in r.iter().enumerate() {
                out[k / 4] |= (q.wrapping_add(1).clamp(0, 3) as u8) << ((k % 4) * 2);
            }
        }
    }
}

/// `f` on each of 32 integers, in a plain loop (`array::map` is not always inlined, and its call
/// costs more than the block's arithmetic).
#[inline(always)]
fn narrow(t: &[i32; 32], f: impl Fn(i32) -> u8) -> [u8; 32] {
    let mut q = [0u8; 32];
    for j in 0..32 {
        q[j] = f(t[j]);
    }
    q
}

/// A 32-value type's rows: each block by its reference quantizer, or with importance weights
/// by the search on [`importance_lanes`]; the type is told by its block's bytes (a constant:
/// a function passed in would be compiled once, without the caller's instruction set).
#[inline(always)]
fn rows<const BLOCK_BYTES: usize>(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    let Some(qw) = imp else {
        for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(BLOCK_BYTES)) {
            match BLOCK_BYTES {
                18 => q4_0_ref(xb, yb),
                20 => q4_1_ref(xb, yb),
                22 => q5_0_ref(xb, yb),
                _ => q5_1_ref(xb, yb),
            }
        }
        return;
    };
    importance_lanes::<BLOCK_BYTES>(x, qw, y);
}

/// Q4_0's and Q5_0's reference quants (`half` 8 and 16): the scale `d = max / -half` (`max`
/// the signed value of largest magnitude) as a half at 0, each value's `x / d + half + 0.5`
/// truncated to `i8` and capped at `2 * half - 1`.
#[inline(always)]
fn symmetric_ref(xb: &[f32], yb: &mut [u8], half: f32, top: i32) -> [u8; 32] {
    let max = signed_max(xb);
    let d = max / -half;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    let t = map_trunc32(xb, |v| v * id + (half + 0.5));
    narrow(&t, |t| i32::from(t as i8).min(top) as u8)
}

/// Q4_1's and Q5_1's reference quants (`steps` 15 and 31): the scale `d = (max - min) / steps`
/// and the minimum as halves at 0 and 2, each value's `(x - min) / d + 0.5` truncated and made
/// a byte by `to_byte`.
#[inline(always)]
fn offset_ref(xb: &[f32], yb: &mut [u8], steps: f32, to_byte: impl Fn(i32) -> u8) -> [u8; 32] {
    let (min, max) = min_max(xb);
    let d = (max - min) / steps;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    put_f16(yb, 2, min);
    let t = map_trunc32(xb, |v| (v - min) * id + 0.5);
    narrow(&t, to_byte)
}

#[inline(always)]
fn q4_0_ref(xb: &[f32], yb: &mut [u8]) {
    let q = symmetric_ref(xb, yb, 8.0, 15);
    for (j, o) in yb[2..18].iter_mut().enumerate() {
        *o = q[j] | (q[16 + j] << 4);
    }
}

#[inline(always)]
fn q4_0_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    rows::<18>(x, imp, y);
}

#[inline(always)]
fn q4_1_ref(xb: &[f32], yb: &mut [u8]) {
    let q = offset_ref(xb, yb, 15.0, |t| i32::from(t as i8).min(15) as u8);
    for j in 0..16 {
        yb[4 + j] = q[j] | (q[16 + j] << 4);
    }
}

/// Q4_1's and Q5_1's importance search.
const QKX3_LEGACY: Qkx = Qkx {
    nmax: 15,
    rmin: -0.9,
    rdelta: 0.05,
    nstep: 36,
    use_mad: false,
    x3: true,
};

#[inline(always)]
fn q4_1_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    rows::<20>(x, imp, y);
}

/// Q5_0's and Q5_1's 5-bit values `l` into their low nibbles at `qs` and fifth bits at `qh`.
#[inline(always)]
fn pack5(l: &[u8; 32], qh_at: &mut [u8], qs: &mut [u8]) {
    let mut qh = 0u32;
    for j in 0..16 {
        let (xi0, xi1) = (l[j], l[j + 16]);
        qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
        qh |= u32::from((xi0 & 0x10) >> 4) << j;
        qh |= u32::from((xi1 & 0x10) >> 4) << (j + 16);
    }
    qh_at.copy_from_slice(&qh.to_le_bytes());
}

#[inline(always)]
fn q5_0_ref(xb: &[f32], yb: &mut [u8]) {
    let l = symmetric_ref(xb, yb, 16.0, 31);
    let (qh, qs) = yb[2..].split_at_mut(4);
    pack5(&l, qh, qs);
}

#[inline(always)]
fn q5_0_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    rows::<22>(x, imp, y);
}

#[inline(always)]
fn q5_1_ref(xb: &[f32], yb: &mut [u8]) {
    let l = offset_ref(xb, yb, 31.0, |t| t as u8);
    let (qh, qs) = yb[4..].split_at_mut(4);
    pack5(&l, qh, qs);
}

#[inline(always)]
fn q5_1_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    rows::<24>(x, imp, y);
}

#[inline(always)]
fn q8_0_rows(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    // Sixteen blocks at a time: their maxima, then their scales, reciprocals and halves side by
    // side (one vector division rather than sixteen), then each block's values.
    const G: usize = 16;
    for (xg, yg) in x.chunks(32 * G).zip(y.chunks_mut(34 * G)) {
        let n = xg.len() / 32;
        let mut d = [0f32; G];
        for (k, xb) in xg.chunks_exact(32).enumerate() {
            d[k] = super::search::abs_max_c(xb);
        }
        let mut id = [0f32; G];
        let mut h = [0u16; G];
        for k in 0..G {
            d[k] /= 127.0;
            id[k] = if d[k] != 0.0 { 1.0 / d[k] } else { 0.0 };
            h[k] = f32_to_f16(d[k]);
        }
        for k in 0..n {
            let (xb, yb) = (&xg[32 * k..32 * k + 32], &mut yg[34 * k..34 * k + 34]);
            yb[..2].copy_from_slice(&h[k].to_le_bytes());
            for (c, out) in xb.chunks_exact(8).zip(yb[2..].chunks_exact_mut(8)) {
                let mut v = [0f32; 8];
                for j in 0..8 {
                    v[j] = c[j] * id[k];
                }
                for (o, q) in out.iter_mut().zip(round_i32x8(v)) {
                    *o = q as u8;
                }
            }
        }
    }
}

entry!(q1_0 => q1_0_rows, q2_0 => q2_0_rows, q4_0 => q4_0_rows, q4_1 => q4_1_rows, q5_0 => q5_0_rows, q5_1 => q5_1_rows, q8_0 => q8_0_rows);
