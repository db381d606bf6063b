//! IQ1_S and IQ1_M: ggml's `quantize_row_iq1_s_impl` and `quantize_row_iq1_m_impl`.

#[cfg(target_arch = "x86_64")]
use super::grid_search::nearest_by_terms_avx2;
use super::grid_search::{point_index, use_avx2, weights};
use super::grids::{self, Grid, Lookup, Neighbours};
use super::shared::{put_u16, NoAnswer};
use crate::quantize::search::{c_max, f32_to_f16, nearest_int, sum_squares};

/// glibc's `qsort` (a stable top-down merge sort, `msort_with_tmp`) of (value, index) pairs
/// with ggml's comparator `*l < *r ? -1 : *l > *r ? 1 : 0`: the left element is taken unless
/// it compares greater, so NaNs land exactly where ggml's land on the reference's platform.
pub(super) fn msort(b: &mut [(f32, u8)], tmp: &mut [(f32, u8)]) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (b1, b2) = b.split_at_mut(n1);
        msort(b1, tmp);
        msort(b2, tmp);
    }
    let (mut i1, mut i2, mut t) = (0, n1, 0);
    while i1 < n1 && i2 < n {
        if b[i1].0 > b[i2].0 {
            tmp[t] = b[i2];
            i2 += 1;
        } else {
            tmp[t] = b[i1];
            i1 += 1;
        }
        t += 1;
    }
    while i1 < n1 {
        tmp[t] = b[i1];
        i1 += 1;
        t += 1;
    }
    b[..t].copy_from_slice(&tmp[..t]);
}

/// ggml's `iq1_find_best_neighbour2`, with its whole-grid fallback (which reads the input at
/// the grid index rather than at the value's position: `src` and `at`, the group's offset in
/// it, give that read; `None` where it would fall outside the input, or where ggml asserts).
#[allow(clippy::too_many_arguments, unsafe_code)]
#[inline(always)]
pub(super) fn iq1_find_best_neighbour2(
    grid: &Grid<8>,
    nb: &Neighbours<'_>,
    src: &[f32],
    at: usize,
    weight: &[f32],
    scale: f32,
    xx: &[f32; 3],
    l: &mut [i8],
    avx2: bool,
) -> Option<usize> {
    let xval = &src[at..at + 8];
    // Each value's term `w*diff*diff` at each of the three levels (ggml's operations on the
    // same operands: the same bits); each neighbour sums its terms in ggml's order.
    let mut e = [[0f32; 3]; 8];
    for i in 0..8 {
        for (lv, t) in e[i].iter_mut().enumerate() {
            let diff = scale * xx[lv] - xval[i];
            *t = weight[i] * diff * diff;
        }
    }
    let mut best_score = f32::MAX;
    let mut grid_index = usize::MAX;
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` comes from `use_avx2`: the CPU has AVX2.
        let c = unsafe { iq1_nearest_avx2(nb, xval, weight, scale, xx) };
        if c != usize::MAX {
            grid_index = usize::from(nb.ids[c]);
        }
    }
    for &j in nb.ids.iter().take(if avx2 { 0 } else { nb.ids.len() }) {
        let lv = &grid.levels[usize::from(j)];
        let mut d2 = 0f32;
        for i in 0..8 {
            d2 += e[i][usize::from(lv[i])];
        }
        // ggml's strict `<` in its order, without branches.
        let better = d2 < best_score;
        best_score = if better { d2 } else { best_score };
        grid_index = if better { usize::from(j) } else { grid_index };
    }
    if grid_index == usize::MAX {
        for (i, pg) in grid.points.iter().enumerate() {
            let xi = *src.get(at + i)?;
            let mut d2 = 0f32;
            for j in 0..8 {
                let w = weight[j];
                let q = xx[((pg[j] - 1) / 2) as usize];
                let diff = scale * q - xi;
                d2 += w * diff * diff;
            }
            if d2 < best_score {
                best_score = d2;
                grid_index = i;
            }
        }
    }
    let pg = grid.points.get(grid_index)?;
    for i in 0..8 {
        l[i] = (pg[i] - 1) / 2;
    }
    Some(grid_index)
}

/// [`iq1_find_best_neighbour2`]'s search over its list on AVX2: each value's term at each of
/// the three levels computed once (ggml's operations on the same operands), neighbours' terms
/// picked by lane permutation and summed in ggml's order. The position in the list of the
/// nearest, `usize::MAX` where none compares below `f32::MAX`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
#[inline]
/// # Safety
/// The CPU must have AVX2.
pub(super) unsafe fn iq1_nearest_avx2(
    nb: &Neighbours<'_>,
    xval: &[f32],
    weight: &[f32],
    scale: f32,
    xx: &[f32; 3],
) -> usize {
    use std::arch::x86_64::*;
    assert!(xval.len() >= 8 && weight.len() >= 8);
    let q = _mm256_setr_ps(xx[0], xx[1], xx[2], 0.0, 0.0, 0.0, 0.0, 0.0);
    let sq = _mm256_mul_ps(_mm256_set1_ps(scale), q);
    let mut terms = [_mm256_setzero_ps(); 8];
    for i in 0..8 {
        let diff = _mm256_sub_ps(sq, _mm256_set1_ps(xval[i]));
        terms[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(weight[i]), diff), diff);
    }
    // SAFETY: the caller's CPU has AVX2 (this function's own requirement).
    unsafe { nearest_by_terms_avx2::<8>(nb, &terms) }
}

/// IQ1's three levels shifted up (`x_p`) and down (`x_m`) by an eighth.
pub(super) const IQ1_XP: [f32; 3] = [-1.0 + 0.125, 0.125, 1.0 + 0.125];
pub(super) const IQ1_XM: [f32; 3] = [-1.0 - 0.125, -0.125, 1.0 - 0.125];

/// An IQ1 block's weights (see [`weights`]; without an importance, each value's square) and
/// its largest magnitude (C's `MAX` from the first).
#[inline(always)]
pub(super) fn iq1_group(xb: &[f32], qw: Option<&[f32]>, sigma2: f32, weight: &mut [f32]) -> f32 {
    weights(xb, qw, sigma2, 0.0, weight);
    let mut max = xb[0].abs();
    for &v in &xb[1..] {
        max = c_max(max, v.abs());
    }
    max
}

/// The levels of the best split: the sorted values before `i1` at 0, before `i2` at 1, the
/// rest at 2 (each at its position in the block); mirrored (`2 - level`) where the scale is
/// `negative`.
#[inline(always)]
pub(super) fn split_levels(
    pairs: &[(f32, u8)],
    i1: usize,
    i2: usize,
    negative: bool,
    l: &mut [i8],
) {
    for (j, p) in pairs.iter().enumerate() {
        let v = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
        l[usize::from(p.1)] = if negative { 2 - v } else { v };
    }
}

/// IQ1_S's and IQ1_M's block of `G` groups of 8 levels `l` (values at `at` in `src`) to the
/// grid: each group's index, where off the grid its best neighbour at `scale` (group `k`'s
/// three values `xx[k]`); where any was off, the scale refitted to the chosen points (kept if
/// the fit is not positive). `None` where ggml asserts.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn iq1_to_grid<const G: usize>(
    grid: &Grid<8>,
    src: &[f32],
    at: usize,
    weight: &[f32],
    scale: f32,
    xx: [&[f32; 3]; G],
    l: &mut [i8],
    avx2: bool,
) -> Option<([usize; G], f32)> {
    let mut all_on_grid = true;
    let mut index = [0usize; G];
    for k in 0..G {
        let g = 8 * k..8 * k + 8;
        index[k] = match grid.lookup(point_index(&l[g.clone()], 2))? {
            Lookup::On(gi) => gi,
            Lookup::Off(list) => {
                all_on_grid = false;
                iq1_find_best_neighbour2(
                    grid,
                    &list,
                    src,
                    at + 8 * k,
                    &weight[g.clone()],
                    scale,
                    xx[k],
                    &mut l[g],
                    avx2,
                )?
            }
        };
    }
    let mut scale = scale;
    if !all_on_grid {
        let xb = &src[at..at + 8 * G];
        let (mut sumqx, mut sumq2) = (0f32, 0f32);
        for k in 0..G {
            let xx = xx[k];
            let pg = &grid.points[index[k]];
            for j in 0..8 {
                let w = weight[8 * k + j];
                let q = xx[((pg[j] - 1) / 2) as usize];
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
        if sumqx > 0.0 && sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    Some((index, scale))
}

/// Sorts a block's values (with their positions) as ggml does before its split search.
pub(super) fn sorted_pairs<const B: usize>(xb: &[f32]) -> [(f32, u8); B] {
    let mut pairs = [(0f32, 0u8); B];
    for j in 0..B {
        pairs[j] = (xb[j], j as u8);
    }
    if xb.iter().any(|v| v.is_nan()) {
        let mut tmp = [(0f32, 0u8); B];
        msort(&mut pairs, &mut tmp);
        return pairs;
    }
    // Without NaN, `<` is a strict weak order and a stable sort has one result: an insertion
    // sort (moving a value only past greater ones) leaves glibc's merge sort's order.
    for j in 1..B {
        let cur = pairs[j];
        let mut k = j;
        while k > 0 && pairs[k - 1].0 > cur.0 {
            pairs[k] = pairs[k - 1];
            k -= 1;
        }
        pairs[k] = cur;
    }
    pairs
}

#[inline(always)]
pub(super) fn iq1_s_row(
    src: &[f32],
    row_at: usize,
    n_per_row: usize,
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const BS: usize = 32;
    let x = &src[row_at..row_at + n_per_row];
    let qw = qw.unwrap_or(&[]);
    let grid = grids::iq1();
    let avx2 = use_avx2();
    let (x_p, x_m) = (IQ1_XP, IQ1_XM);
    let mut scales = [0f32; 8];
    let mut weight = [0f32; BS];
    let mut shifts = [0i8; 8];
    let mut big_l = [0i8; BS];
    let mut sumx = [0f32; BS + 1];
    let mut sumw = [0f32; BS + 1];
    // Block: d (2), qs (32), qh (8 u16).
    for (ibl, yb) in y.chunks_exact_mut(50).enumerate() {
        let fail = || NoAnswer(256 * ibl);
        yb.fill(0);
        let mut qh = [0u16; 8];
        let mut max_scale = 0f32;
        let xbl = &x[256 * ibl..256 * ibl + 256];
        let sigma2 = 2.0 * sum_squares(xbl) / 256.0;
        for ib in 0..8 {
            let xb = &xbl[BS * ib..BS * ib + BS];
            let q = &qw[256 * ibl + BS * ib..256 * ibl + BS * ib + BS];
            let max = iq1_group(xb, Some(q), sigma2, &mut weight);
            if max < 1e-12 {
                scales[ib] = 0.0;
                shifts[ib] = 1;
                big_l.fill(1);
                continue;
            }
            let pairs = sorted_pairs::<BS>(xb);
            sumx[0] = 0.0;
            sumw[0] = 0.0;
            for j in 0..BS {
                let i = usize::from(pairs[j].1);
                sumx[j + 1] = sumx[j] + weight[i] * xb[i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            let mut best_score = -f32::MAX;
            let mut scale = max;
            let (mut besti1, mut besti2, mut best_shift) = (usize::MAX, usize::MAX, 0i8);
            // The products that depend on one split only, computed once (ggml's operations on
            // the same operands: the same bits; each sum then adds them in ggml's order).
            let mut cx = [[0f32; BS + 1]; 2];
            let mut wcq = [[0f32; BS + 1]; 2];
            for i2 in 0..=BS {
                let c = sumx[BS] - sumx[i2];
                let wc = sumw[BS] - sumw[i2];
                cx[0][i2] = c * x_p[2];
                cx[1][i2] = c * x_m[2];
                wcq[0][i2] = wc * x_p[2] * x_p[2];
                wcq[1][i2] = wc * x_m[2] * x_m[2];
            }
            for i1 in 0..=BS {
                let a = sumx[i1] - sumx[0];
                let wa = sumw[i1] - sumw[0];
                let (ax_p, ax_m) = (a * x_p[0], a * x_m[0]);
                let (waq_p, waq_m) = (wa * x_p[0] * x_p[0], wa * x_m[0] * x_m[0]);
                for i2 in i1..=BS {
                    let b = sumx[i2] - sumx[i1];
                    let wb = sumw[i2] - sumw[i1];
                    let sumqx = ax_p + b * x_p[1] + cx[0][i2];
                    let sumq2 = waq_p + wb * x_p[1] * x_p[1] + wcq[0][i2];
                    if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = 1;
                    }
                    let sumqx = ax_m + b * x_m[1] + cx[1][i2];
                    let sumq2 = waq_m + wb * x_m[1] * x_m[1] + wcq[1][i2];
                    if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = -1;
                    }
                }
            }
            if besti1 == usize::MAX || besti2 == usize::MAX || best_shift == 0 {
                scales[ib] = 0.0;
                shifts[ib] = 1;
                big_l.fill(1);
                continue;
            }
            split_levels(&pairs, besti1, besti2, scale < 0.0, &mut big_l);
            if scale < 0.0 {
                scale = -scale;
                best_shift = -best_shift;
            }
            let xx = if best_shift == 1 { &x_p } else { &x_m };
            let index: [usize; 4];
            (index, scale) = iq1_to_grid(
                grid,
                src,
                row_at + 256 * ibl + BS * ib,
                &weight,
                scale,
                [xx; 4],
                &mut big_l,
                avx2,
            )
            .ok_or_else(fail)?;
            let mut h = 0u16;
            for k in 0..4 {
                yb[2 + 4 * ib + k] = (index[k] & 255) as u8;
                h |= ((index[k] >> 8) << (3 * k)) as u16;
            }
            qh[ib] = h;
            if !(scale >= 0.0) {
                return Err(fail());
            }
            scales[ib] = scale;
            shifts[ib] = best_shift;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale != 0.0 {
            let d = max_scale / 15.0;
            put_u16(yb, 0, f32_to_f16(d * 1.125));
            let id = 1.0 / d;
            for ib in 0..8 {
                let mut l = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, 7);
                if shifts[ib] == -1 {
                    l |= 8;
                }
                qh[ib] |= (l << 12) as u16;
            }
        }
        for (i, v) in qh.iter().enumerate() {
            put_u16(yb, 34 + 2 * i, *v);
        }
    }
    Ok(())
}

#[inline(always)]
pub(super) fn iq1_m_row(
    src: &[f32],
    row_at: usize,
    n_per_row: usize,
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const BS: usize = 16;
    let x = &src[row_at..row_at + n_per_row];
    let grid = grids::iq1();
    let avx2 = use_avx2();
    let (x_p, x_m) = (IQ1_XP, IQ1_XM);
    pub(super) const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
    let mut scales = [0f32; 16];
    let mut weight = [0f32; BS];
    let mut shifts = [0usize; 16];
    let mut big_l = [0i8; BS];
    let pick = |k: usize, shift: usize| {
        if k == 0 {
            if shift < 2 {
                &x_p
            } else {
                &x_m
            }
        } else if shift % 2 == 0 {
            &x_p
        } else {
            &x_m
        }
    };
    // Block: qs (32), qh (16), scales (4 u16).
    for (ibl, yb) in y.chunks_exact_mut(56).enumerate() {
        let fail = || NoAnswer(256 * ibl);
        yb.fill(0);
        let mut max_scale = 0f32;
        let xbl = &x[256 * ibl..256 * ibl + 256];
        let qwbl = qw.map(|q| &q[256 * ibl..256 * ibl + 256]);
        let sigma2 = 2.0 * sum_squares(xbl) / 256.0;
        for ib in 0..16 {
            let xb = &xbl[BS * ib..BS * ib + BS];
            let max = iq1_group(
                xb,
                qwbl.map(|q| &q[BS * ib..BS * ib + BS]),
                sigma2,
                &mut weight,
            );
            if max < 1e-7 {
                scales[ib] = 0.0;
                shifts[ib] = 0;
                big_l.fill(1);
                continue;
            }
            let pairs = sorted_pairs::<BS>(xb);
            let mut best_score = -f32::MAX;
            let mut scale = max;
            let (mut besti1, mut besti2, mut best_k) = (usize::MAX, usize::MAX, usize::MAX);
            {
                let mut px = [[0f32; BS + 1]; 2];
                let mut pw = [[0f32; BS + 1]; 2];
                for j in 0..BS {
                    let i = usize::from(pairs[j].1);
                    let h = usize::from(i >= BS / 2);
                    px[h][j + 1] = px[h][j] + weight[i] * xb[i];
                    px[1 - h][j + 1] = px[1 - h][j];
                    pw[h][j + 1] = pw[h][j] + weight[i];
                    pw[1 - h][j + 1] = pw[1 - h][j];
                }
                let txs = [px[0][BS], px[1][BS]];
                let tws = [pw[0][BS], pw[1][BS]];
                let p2 = x_p[2];
                let m2 = x_m[2];
                let cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1];
                let cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2];
                let cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1];
                let cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2];
                // The terms that depend on one split only, computed once (the same operations
                // on the same operands: the same bits), added in ggml's order.
                let mut b_p = [[0f32; BS + 1]; 2];
                let mut b_m = [[0f32; BS + 1]; 2];
                let mut a_p = [[0f32; BS + 1]; 2];
                let mut a_m = [[0f32; BS + 1]; 2];
                let tx_p = [txs[0] * p2, txs[1] * p2];
                let tx_m = [txs[0] * m2, txs[1] * m2];
                for h in 0..2 {
                    for i in 0..=BS {
                        a_p[h][i] = tws[h] * p2 * p2 + pw[h][i] * cp1;
                        a_m[h][i] = tws[h] * m2 * m2 + pw[h][i] * cm1;
                        b_p[h][i] = pw[h][i] * cp2;
                        b_m[h][i] = pw[h][i] * cm2;
                    }
                }
                for i1 in 0..=BS {
                    for i2 in i1..=BS {
                        let mut qx_p = [0f32; 2];
                        let mut qx_m = [0f32; 2];
                        let mut q2_p = [0f32; 2];
                        let mut q2_m = [0f32; 2];
                        for h in 0..2 {
                            let sx = px[h][i1] + px[h][i2];
                            qx_p[h] = tx_p[h] - sx;
                            qx_m[h] = tx_m[h] - sx;
                            q2_p[h] = a_p[h][i1] + b_p[h][i2];
                            q2_m[h] = a_m[h][i1] + b_m[h][i2];
                        }
                        let sumqx = [
                            qx_p[0] + qx_p[1],
                            qx_p[0] + qx_m[1],
                            qx_m[0] + qx_p[1],
                            qx_m[0] + qx_m[1],
                        ];
                        let sumq2 = [
                            q2_p[0] + q2_p[1],
                            q2_p[0] + q2_m[1],
                            q2_m[0] + q2_p[1],
                            q2_m[0] + q2_m[1],
                        ];
                        for k in 0..4 {
                            if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                                scale = sumqx[k] / sumq2[k];
                                best_score = scale * sumqx[k];
                                besti1 = i1;
                                besti2 = i2;
                                best_k = k;
                            }
                        }
                    }
                }
            }
            if besti1 == usize::MAX || besti2 == usize::MAX || best_k == usize::MAX {
                scales[ib] = 0.0;
                shifts[ib] = 0;
                big_l.fill(1);
                continue;
            }
            split_levels(&pairs, besti1, besti2, scale < 0.0, &mut big_l);
            if scale < 0.0 {
                scale = -scale;
                best_k = 3 - best_k;
            }
            let index: [usize; 2];
            (index, scale) = iq1_to_grid(
                grid,
                src,
                row_at + 256 * ibl + BS * ib,
                &weight,
                scale,
                [pick(0, best_k), pick(1, best_k)],
                &mut big_l,
                avx2,
            )
            .ok_or_else(fail)?;
            yb[2 * ib] = (index[0] & 255) as u8;
            yb[2 * ib + 1] = (index[1] & 255) as u8;
            yb[32 + ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
            if !(scale >= 0.0) {
                return Err(fail());
            }
            scales[ib] = scale;
            shifts[ib] = best_k;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            continue;
        }
        let mut sc = [0u16; 4];
        let mut d = max_scale / 15.0;
        let id = 1.0 / d;
        let (mut sumqx, mut sumq2) = (0f32, 0f32);
        for ib in 0..16 {
            let l = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, 7);
            sc[ib / 4] |= (l << (3 * (ib % 4))) as u16;
            yb[32 + ib] |= MASKS[shifts[ib]];
            let xb = &xbl[BS * ib..BS * ib + BS];
            weights(
                xb,
                qwbl.map(|q| &q[BS * ib..BS * ib + BS]),
                sigma2,
                0.0,
                &mut weight,
            );
            for k in 0..2 {
                let xx = pick(k, shifts[ib]);
                let qh = usize::from(yb[32 + ib]);
                let gi = usize::from(yb[2 * ib + k]) + ((qh << (8 - 4 * k)) & 0x700);
                let pg = &grid.points[gi];
                for j in 0..8 {
                    let w = weight[8 * k + j];
                    let q = xx[((pg[j] - 1) / 2) as usize] * (2 * l + 1) as f32;
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if sumq2 > 0.0 {
            d = sumqx / sumq2;
        }
        let s = f32_to_f16(d * 1.1125);
        sc[0] |= (s & 0x000f) << 12;
        sc[1] |= (s & 0x00f0) << 8;
        sc[2] |= (s & 0x0f00) << 4;
        sc[3] |= s & 0xf000;
        for (i, v) in sc.iter().enumerate() {
            put_u16(yb, 48 + 2 * i, *v);
        }
    }
    Ok(())
}
