//! The K types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): ggml's reference quantizers
//! (`quantize_row_q*_K_ref`) and, with importance weights, its searches
//! (`quantize_row_q*_K_impl`). One row per call; blocks of 256 values.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

use super::search::{
    make_q3_lanes, make_q3_split, make_qkx_lanes, make_qp_quants, make_qx_lanes, make_qx_quants,
    nearest_int, put_f16, signed_abs_max, sum_squares, via_f16, Qkx, GROUP_MAX_EPS,
};
use crate::quant::f16_to_f32;

const QK_K: usize = 256;

entry!(q2_k => q2_k_rows, q3_k => q3_k_rows, q4_k => q4_k_rows, q5_k => q5_k_rows, q6_k => q6_k_rows);

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// 2-bit values of 256 into 64 bytes, four 32-value groups per 128.
#[inline(always)]
fn pack2(l: &[u8; QK_K], qs: &mut [u8]) {
    for j in (0..QK_K).step_by(128) {
        for i in 0..32 {
            qs[j / 4 + i] =
                l[j + i] | (l[j + i + 32] << 2) | (l[j + i + 64] << 4) | (l[j + i + 96] << 6);
        }
    }
}

/// Whole blocks `x` (and their importance `imp`) as lanes into `xt` (and `qt`): value `i` of
/// group `k` (`S` values each, the groups in order across the blocks) at `[i][k]`; lanes past
/// the blocks are left as they are (zeros). (The arrays are the caller's: returned, they may be
/// copied.)
#[inline(always)]
fn to_lanes<const S: usize, const L: usize>(
    x: &[f32],
    imp: Option<&[f32]>,
    xt: &mut [[f32; L]; S],
    qt: &mut [[f32; L]; S],
) {
    let groups = QK_K / S;
    for b in 0..x.len() / QK_K {
        for g in 0..groups {
            for i in 0..S {
                let at = QK_K * b + S * g + i;
                xt[i][groups * b + g] = x[at];
                if let Some(q) = imp {
                    qt[i][groups * b + g] = q[at];
                }
            }
        }
    }
}

/// Block `b`'s values out of the lanes [`to_lanes`] made.
#[inline(always)]
fn from_lanes<T: Copy + Default, const S: usize, const L: usize>(
    lt: &[[T; L]; S],
    b: usize,
    l: &mut [T; QK_K],
) {
    let groups = QK_K / S;
    for g in 0..groups {
        for i in 0..S {
            l[S * g + i] = lt[i][groups * b + g];
        }
    }
}

/// Block `b`'s `G` entries of a per-lane array.
#[inline(always)]
fn block_of<const G: usize, const L: usize>(v: &[f32; L], b: usize) -> [f32; G] {
    let mut out = [0f32; G];
    out.copy_from_slice(&v[G * b..G * b + G]);
    out
}

/// The importance weights on the lanes of the blocks `x`: `qw * sqrt(sigma2 + x^2)`, where
/// `sigma2 = factor * sum(x^2) / 256` over the value's block, into `wt`; their sum for each
/// lane into `sw` (zeros before).
#[inline(always)]
fn importance_weights<const S: usize, const L: usize>(
    x: &[f32],
    factor: f32,
    xt: &[[f32; L]; S],
    qt: &[[f32; L]; S],
    wt: &mut [[f32; L]; S],
    sw: &mut [f32; L],
) {
    let groups = QK_K / S;
    let mut sigma2 = [0f32; L];
    for (b, xb) in x.chunks_exact(QK_K).enumerate() {
        let s2 = factor * sum_squares(xb) / QK_K as f32;
        sigma2[groups * b..groups * b + groups].fill(s2);
    }
    for i in 0..S {
        for k in 0..L {
            wt[i][k] = qt[i][k] * (sigma2[k] + xt[i][k] * xt[i][k]).sqrt();
            sw[k] += wt[i][k];
        }
    }
}

/// The largest of `v` and 0.
#[inline(always)]
fn positive_max(v: &[f32]) -> f32 {
    let mut m = 0f32;
    for &a in v {
        if a > m {
            m = a;
        }
    }
    m
}

/// The runs of at most `per` of `nb` blocks: each run's first block and length. (A loop over
/// these, not a closure: a closure's body is compiled once, without the instruction set of the
/// row function that calls it.)
#[inline(always)]
fn block_runs(nb: usize, per: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..nb).step_by(per).map(move |ib| (ib, (nb - ib).min(per)))
}

// Q2_K: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82.

/// Q2_K's last step: every value again from the stored scales, then packed.
#[inline(always)]
fn q2_k_finish(x: &[f32], yb: &mut [u8], l: &mut [u8; QK_K]) {
    let d_all = f16_at(yb, 80);
    let m_all = f16_at(yb, 82);
    for j in 0..16 {
        let d = d_all * f32::from(yb[j] & 0xF);
        if d == 0.0 {
            continue;
        }
        let dm = m_all * f32::from(yb[j] >> 4);
        for ii in 0..16 {
            l[16 * j + ii] = nearest_int((x[16 * j + ii] + dm) / d).min(3).max(0) as u8;
        }
    }
    pack2(l, &mut yb[16..80]);
}

/// Q2_K's blocks searched side by side.
const Q2_LANES: usize = 64;

#[inline(always)]
fn q2_k_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    // Four blocks' 16 groups side by side (64 lanes, so the searches' sums of one hide the
    // latency of the others'); missing last blocks are zeros.
    for (ib, n) in block_runs(x.len() / QK_K, Q2_LANES / 16) {
        let xs = &x[QK_K * ib..QK_K * (ib + n)];
        let qw = imp.map(|q| &q[QK_K * ib..QK_K * (ib + n)]);
        let (mut xt, mut qt) = ([[0f32; Q2_LANES]; 16], [[0f32; Q2_LANES]; 16]);
        to_lanes(xs, qw, &mut xt, &mut qt);
        let mut wt = [[0f32; Q2_LANES]; 16];
        let mut lt = [[0u8; Q2_LANES]; 16];
        let mut sw = [0f32; Q2_LANES];
        let (scales, mins) = if imp.is_some() {
            importance_weights(xs, 1.0, &xt, &qt, &mut wt, &mut sw);
            let p = Qkx {
                nmax: 3,
                rmin: -0.9,
                rdelta: 0.05,
                nstep: 36,
                use_mad: false,
                x3: true,
            };
            make_qkx_lanes(&p, &xt, &wt, &mut lt)
        } else {
            for i in 0..16 {
                for k in 0..Q2_LANES {
                    wt[i][k] = xt[i][k].abs();
                }
            }
            let p = Qkx {
                nmax: 3,
                rmin: -0.5,
                rdelta: 0.1,
                nstep: 15,
                use_mad: true,
                x3: false,
            };
            make_qkx_lanes(&p, &xt, &wt, &mut lt)
        };
        for b in 0..n {
            let mut l = [0u8; QK_K];
            from_lanes(&lt, b, &mut l);
            let sc: [f32; 16] = block_of(&scales, b);
            let mn: [f32; 16] = block_of(&mins, b);
            let xb = &x[QK_K * (ib + b)..QK_K * (ib + b + 1)];
            let yb = &mut y[84 * (ib + b)..84 * (ib + b + 1)];
            if imp.is_some() {
                let sww: [f32; 16] = block_of(&sw, b);
                let mut ls = [0u8; 16];
                let mut lm = [0u8; 16];
                let dm = make_qp_quants(15, &sc, &mut ls, &sww);
                let mm = make_qp_quants(15, &mn, &mut lm, &sww);
                put_f16(yb, 80, dm);
                put_f16(yb, 82, mm);
                for j in 0..16 {
                    yb[j] = ls[j] | (lm[j] << 4);
                }
            } else {
                let max_scale = positive_max(&sc);
                let max_min = positive_max(&mn);
                if max_scale > 0.0 {
                    let iscale = 15.0 / max_scale;
                    for j in 0..16 {
                        yb[j] = nearest_int(iscale * sc[j]) as u8;
                    }
                    put_f16(yb, 80, max_scale / 15.0);
                } else {
                    yb[..16].fill(0);
                    put_f16(yb, 80, 0.0);
                }
                if max_min > 0.0 {
                    let iscale = 15.0 / max_min;
                    for j in 0..16 {
                        yb[j] |= (nearest_int(iscale * mn[j]) << 4) as u8;
                    }
                    put_f16(yb, 82, max_min / 15.0);
                } else {
                    put_f16(yb, 82, 0.0);
                }
            }
            q2_k_finish(xb, yb, &mut l);
        }
    }
}

// Q3_K: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108.

/// Q3_K's 6-bit scale `j` (0..16) of the 12 packed bytes, as stored (`l` in 0..64).
fn q3_k_put_scale(scales: &mut [u8], j: usize, l: i32) {
    if j < 8 {
        scales[j] = (l & 0xF) as u8;
    } else {
        scales[j - 8] |= ((l & 0xF) << 4) as u8;
    }
    scales[j % 4 + 8] |= ((l >> 4) << (2 * (j / 4))) as u8;
}

/// Q3_K's last step: every value again from the stored scales, then the high bits and the
/// packed low bits.
#[inline(always)]
fn q3_k_finish(x: &[f32], yb: &mut [u8], l: &mut [i8; QK_K]) {
    let d_all = f16_at(yb, 108);
    for j in 0..16 {
        let s = &yb[96..108];
        let lo = if j < 8 { s[j] & 0xF } else { s[j - 8] >> 4 };
        let sc = (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) as i8 - 32;
        let d = d_all * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let v = nearest_int(x[16 * j + ii] / d).min(3).max(-4);
            l[16 * j + ii] = (v + 4) as i8;
        }
    }
    // Value 32 * g + m (each 0..8) keeps its high bit in bit g of hmask[m], its low two bits in
    // the packed quants.
    let mut hmask = [0u8; 32];
    let mut lu = [0u8; QK_K];
    for g in 0..8 {
        for m in 0..32 {
            let v = l[32 * g + m] as u8;
            hmask[m] |= u8::from(v > 3) << g;
            lu[32 * g + m] = v & 3;
        }
    }
    yb[..32].copy_from_slice(&hmask);
    pack2(&lu, &mut yb[32..96]);
}

/// Whether this run uses AVX-512 (where Q3_K's refinement pays in lanes).
#[inline(always)]
fn wide_lanes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::quant::simd::active() == crate::quant::simd::Isa::Avx512
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Q3_K's blocks searched side by side.
const Q3_LANES: usize = 64;

#[inline(always)]
fn q3_k_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    // Four blocks' 16 groups side by side (64 lanes: the refinement's chain of one hides the
    // others' latency); missing last blocks are zeros.
    for (ib, n) in block_runs(x.len() / QK_K, Q3_LANES / 16) {
        let xs = &x[QK_K * ib..QK_K * (ib + n)];
        let qw = imp.map(|q| &q[QK_K * ib..QK_K * (ib + n)]);
        let (mut xt, mut qt) = ([[0f32; Q3_LANES]; 16], [[0f32; Q3_LANES]; 16]);
        to_lanes(xs, qw, &mut xt, &mut qt);
        let mut lt = [[0i8; Q3_LANES]; 16];
        let mut sw = [0f32; Q3_LANES];
        let scales = if imp.is_some() {
            let mut wt = [[0f32; Q3_LANES]; 16];
            importance_weights(xs, 2.0, &xt, &qt, &mut wt, &mut sw);
            make_qx_lanes(4, &xt, Some(&wt), &mut lt)
        } else if wide_lanes() {
            make_q3_lanes(4, &xt, &mut lt)
        } else {
            make_q3_split(4, &xt, &mut lt)
        };
        for b in 0..n {
            let mut l = [0i8; QK_K];
            from_lanes(&lt, b, &mut l);
            let sc: [f32; 16] = block_of(&scales, b);
            let xb = &x[QK_K * (ib + b)..QK_K * (ib + b + 1)];
            let yb = &mut y[110 * (ib + b)..110 * (ib + b + 1)];
            yb[96..108].fill(0);
            if imp.is_some() {
                let sww: [f32; 16] = block_of(&sw, b);
                let mut ls = [0i8; 16];
                let d_block = make_qx_quants(32, &sc, &mut ls, Some(&sww));
                for j in 0..16 {
                    q3_k_put_scale(&mut yb[96..108], j, i32::from(ls[j]));
                }
                put_f16(yb, 108, d_block);
            } else {
                let (max_scale, _) = signed_abs_max(&sc);
                if max_scale != 0.0 {
                    let iscale = -32.0 / max_scale;
                    for j in 0..16 {
                        let v = i32::from(nearest_int(iscale * sc[j]) as i8);
                        q3_k_put_scale(&mut yb[96..108], j, v.min(31).max(-32) + 32);
                    }
                    put_f16(yb, 108, 1.0 / iscale);
                } else {
                    put_f16(yb, 108, 0.0);
                }
            }
            q3_k_finish(xb, yb, &mut l);
        }
    }
}

// Q4_K: d at 0, dmin at 2, scales[12] at 4, qs[128] at 16.
// Q5_K: d at 0, dmin at 2, scales[12] at 4, qh[32] at 16, qs[128] at 48.

/// Scale and minimum `j` (0..8) into the 12 packed bytes of Q4_K and Q5_K.
fn k4_put(s: &mut [u8], j: usize, ls: u8, lm: u8) {
    if j < 4 {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
        s[j - 4] |= (ls >> 4) << 6;
        s[j] |= (lm >> 4) << 6;
    }
}

fn k4_get(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Q4_K's and Q5_K's blocks searched side by side, eight groups each.
const K45_LANES: usize = 32;

/// Q4_K's and Q5_K's search of each 32-value group's scale and minimum and of the block's two
/// super-scales, for up to four blocks (`xs`, `qw`: their values and weights; `ys`: their
/// bytes, `bb` each) side by side: 32 lanes, two AVX-512 registers (missing last blocks are
/// zeros). Writes d, dmin and the packed scales; leaves each block's values in `ls`.
#[inline(always)]
fn k45_blocks(
    xs: &[f32],
    qw: Option<&[f32]>,
    nmax: i32,
    bb: usize,
    ys: &mut [u8],
    ls: &mut [[u8; QK_K]; K45_LANES / 8],
) {
    let n = xs.len() / QK_K;
    let (mut xt, mut qt) = ([[0f32; K45_LANES]; 32], [[0f32; K45_LANES]; 32]);
    to_lanes(xs, qw, &mut xt, &mut qt);
    let mut wt = [[0f32; K45_LANES]; 32];
    let mut lt = [[0u8; K45_LANES]; 32];
    let (scales, mins);
    let mut sw = [0f32; K45_LANES];
    if qw.is_some() {
        importance_weights(xs, 2.0, &xt, &qt, &mut wt, &mut sw);
        let p = Qkx {
            nmax,
            rmin: -0.9,
            rdelta: 0.05,
            nstep: 36,
            use_mad: false,
            x3: true,
        };
        (scales, mins) = make_qkx_lanes(&p, &xt, &wt, &mut lt);
    } else {
        let p = if nmax == 15 {
            Qkx {
                nmax,
                rmin: -1.0,
                rdelta: 0.1,
                nstep: 20,
                use_mad: false,
                x3: false,
            }
        } else {
            Qkx {
                nmax,
                rmin: -0.5,
                rdelta: 0.1,
                nstep: 15,
                use_mad: false,
                x3: false,
            }
        };
        let mut sum_x2 = [0f32; K45_LANES];
        for row in &xt {
            for k in 0..K45_LANES {
                sum_x2[k] += row[k] * row[k];
            }
        }
        let mut av_x = [0f32; K45_LANES];
        for k in 0..K45_LANES {
            av_x[k] = (sum_x2[k] / 32.0).sqrt();
        }
        for i in 0..32 {
            for k in 0..K45_LANES {
                wt[i][k] = av_x[k] + xt[i][k].abs();
            }
        }
        (scales, mins) = make_qkx_lanes(&p, &xt, &wt, &mut lt);
    }
    for b in 0..n {
        let l = &mut ls[b];
        from_lanes(&lt, b, l);
        let sc: [f32; 8] = block_of(&scales, b);
        let mn: [f32; 8] = block_of(&mins, b);
        let xb = &xs[QK_K * b..QK_K * (b + 1)];
        let yb = &mut ys[bb * b..bb * (b + 1)];
        if qw.is_some() {
            let sww: [f32; 8] = block_of(&sw, b);
            let mut ls = [0u8; 8];
            let mut lm = [0u8; 8];
            let d_block = make_qp_quants(63, &sc, &mut ls, &sww);
            let m_block = make_qp_quants(63, &mn, &mut lm, &sww);
            for j in 0..8 {
                let (a, b) = if nmax == 31 {
                    (ls[j].min(63), lm[j].min(63))
                } else {
                    (ls[j], lm[j])
                };
                k4_put(&mut yb[4..16], j, a, b);
            }
            put_f16(yb, 0, d_block);
            put_f16(yb, 2, m_block);
        } else {
            let max_scale = positive_max(&sc);
            let max_min = positive_max(&mn);
            let inv_scale = if max_scale > 0.0 {
                63.0 / max_scale
            } else {
                0.0
            };
            let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
            for j in 0..8 {
                let ls = (nearest_int(inv_scale * sc[j]) as u8).min(63);
                let lm = (nearest_int(inv_min * mn[j]) as u8).min(63);
                k4_put(&mut yb[4..16], j, ls, lm);
            }
            put_f16(yb, 0, max_scale / 63.0);
            put_f16(yb, 2, max_min / 63.0);
        }
        let d_all = f16_at(yb, 0);
        let m_all = f16_at(yb, 2);
        for j in 0..8 {
            let (sc, m) = k4_get(j, &yb[4..16]);
            let d = d_all * f32::from(sc);
            if d == 0.0 {
                continue;
            }
            let dm = m_all * f32::from(m);
            for ii in 0..32 {
                l[32 * j + ii] = nearest_int((xb[32 * j + ii] + dm) / d).min(nmax).max(0) as u8;
            }
        }
    }
}

/// Q4_K's and Q5_K's rows (`nmax` 15 and 31, `bb` bytes a block): [`k45_blocks`] on up to four
/// blocks at a time, then each block's values (`l`) packed into its bytes.
#[inline(always)]
fn k45_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8], nmax: i32, bb: usize) {
    let mut ls = [[0u8; QK_K]; K45_LANES / 8];
    for (ib, n) in block_runs(x.len() / QK_K, K45_LANES / 8) {
        let xs = &x[QK_K * ib..QK_K * (ib + n)];
        let qw = imp.map(|q| &q[QK_K * ib..QK_K * (ib + n)]);
        let ys = &mut y[bb * ib..bb * (ib + n)];
        k45_blocks(xs, qw, nmax, bb, ys, &mut ls);
        for (b, l) in ls.iter().take(n).enumerate() {
            let yb = &mut ys[bb * b..bb * (b + 1)];
            if nmax == 15 {
                q4_k_pack(l, yb);
            } else {
                q5_k_pack(l, yb);
            }
        }
    }
}

/// Q4_K's 4-bit values.
#[inline(always)]
fn q4_k_pack(l: &[u8; QK_K], yb: &mut [u8]) {
    let q = &mut yb[16..144];
    for (g, j) in (0..QK_K).step_by(64).enumerate() {
        for i in 0..32 {
            q[32 * g + i] = l[j + i] | (l[j + i + 32] << 4);
        }
    }
}

/// Q5_K's 5-bit values: the fifth bits, then the low nibbles.
#[inline(always)]
fn q5_k_pack(l: &[u8; QK_K], yb: &mut [u8]) {
    let (qh, ql) = yb[16..176].split_at_mut(32);
    qh.fill(0);
    let (mut m1, mut m2) = (1u8, 2u8);
    for (g, n) in (0..QK_K).step_by(64).enumerate() {
        for j in 0..32 {
            let mut l1 = l[n + j];
            if l1 > 15 {
                l1 -= 16;
                qh[j] |= m1;
            }
            let mut l2 = l[n + j + 32];
            if l2 > 15 {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[32 * g + j] = l1 | (l2 << 4);
        }
        m1 <<= 2;
        m2 <<= 2;
    }
}

#[inline(always)]
fn q4_k_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    k45_rows(x, imp, y, 15, 144);
}

#[inline(always)]
fn q5_k_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    k45_rows(x, imp, y, 31, 176);
}

// Q6_K: ql[128] at 0, qh[64] at 128, scales[16] (signed) at 192, d at 208.

/// Q6_K's blocks searched side by side.
const Q6_LANES: usize = 64;

#[inline(always)]
fn q6_k_rows(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    // Four blocks' 16 groups side by side (64 lanes, so the searches' sums of one hide the
    // latency of the others'); missing last blocks are zeros.
    for (ib, n) in block_runs(x.len() / QK_K, Q6_LANES / 16) {
        let xs = &x[QK_K * ib..QK_K * (ib + n)];
        let qw = imp.map(|q| &q[QK_K * ib..QK_K * (ib + n)]);
        let (mut xt, mut qt) = ([[0f32; Q6_LANES]; 16], [[0f32; Q6_LANES]; 16]);
        to_lanes(xs, qw, &mut xt, &mut qt);
        let mut lt = [[0i8; Q6_LANES]; 16];
        let scales = make_qx_lanes(32, &xt, imp.map(|_| &qt), &mut lt);
        for b in 0..n {
            let mut l = [0i8; QK_K];
            from_lanes(&lt, b, &mut l);
            let sc = block_of(&scales, b);
            let xb = &x[QK_K * (ib + b)..QK_K * (ib + b + 1)];
            q6_k_finish(xb, &sc, &mut l, &mut y[210 * (ib + b)..210 * (ib + b + 1)]);
        }
    }
}

/// Q6_K's block from its groups' scales and quants: the super-scale, the 8-bit scales, every
/// value again from them, then the packed bits.
#[inline(always)]
fn q6_k_finish(xb: &[f32], scales: &[f32; 16], l: &mut [i8; QK_K], yb: &mut [u8]) {
    let (max_scale, max_abs_scale) = signed_abs_max(scales);
    if max_abs_scale < GROUP_MAX_EPS {
        yb.fill(0);
        return;
    }
    let iscale = -128.0 / max_scale;
    put_f16(yb, 208, 1.0 / iscale);
    for j in 0..16 {
        yb[192 + j] = nearest_int(iscale * scales[j]).min(127) as u8;
    }
    let d_all = via_f16(1.0 / iscale);
    for j in 0..16 {
        let d = d_all * f32::from(yb[192 + j] as i8);
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let v = nearest_int(xb[16 * j + ii] / d).min(31).max(-32);
            l[16 * j + ii] = (v + 32) as i8;
        }
    }
    let lu = l.map(|v| v as u8);
    let (ql, rest) = yb.split_at_mut(128);
    let qh = &mut rest[..64];
    for (g, j) in (0..QK_K).step_by(128).enumerate() {
        for i in 0..32 {
            let q1 = lu[j + i] & 0xF;
            let q2 = lu[j + i + 32] & 0xF;
            let q3 = lu[j + i + 64] & 0xF;
            let q4 = lu[j + i + 96] & 0xF;
            ql[64 * g + i] = q1 | (q3 << 4);
            ql[64 * g + i + 32] = q2 | (q4 << 4);
            qh[32 * g + i] = (lu[j + i] >> 4)
                | ((lu[j + i + 32] >> 4) << 2)
                | ((lu[j + i + 64] >> 4) << 4)
                | ((lu[j + i + 96] >> 4) << 6);
        }
    }
}
