//! Shared pieces of the grid searches.

use super::grids::{Grid, Lookup, Neighbours, LANES};
use crate::quantize::search::{c_max, nearest_int};

/// Whether the dispatch allows the AVX2 neighbour search (asked once per row or block, not
/// per search).
#[inline(always)]
pub(super) fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::quant::simd::{active, Isa};
        matches!(active(), Isa::Avx512 | Isa::Avx2)
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// ggml's `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: the neighbour of the point
/// nearest `xval` at `scale` (weighted); writes its levels to `l`. `None` where ggml asserts.
///
/// [`LANES`] neighbours are computed side by side (each lane summing its terms in ggml's
/// order: the same bits), then taken in ggml's order with its strict comparison.
#[inline(always)]
#[allow(unsafe_code)]
pub(super) fn find_best_neighbour<const N: usize>(
    grid: &Grid<N>,
    nb: &Neighbours<'_>,
    xval: &[f32],
    weight: &[f32],
    scale: f32,
    l: &mut [i8],
    avx2: bool,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    let grid_index = if avx2 {
        // SAFETY: `avx2` comes from `use_avx2`: the CPU has AVX2.
        unsafe { nearest_neighbour_avx2::<N>(nb, xval, weight, scale) }
    } else {
        nearest_neighbour::<N>(nb, xval, weight, scale)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let grid_index = {
        let _ = avx2;
        nearest_neighbour::<N>(nb, xval, weight, scale)
    };
    let grid_index = usize::from(*nb.ids.get(grid_index)?);
    let lv = grid.levels.get(grid_index)?;
    for i in 0..N {
        l[i] = lv[i] as i8;
    }
    Some(grid_index)
}

/// The position in `nb` of the neighbour nearest `xval` at `scale` (weighted), as ggml picks
/// it; `usize::MAX` where none compares below `f32::MAX`.
///
/// [`LANES`] neighbours are computed side by side (each lane summing its terms in ggml's
/// order: the same bits), then taken in ggml's order with its strict comparison.
#[inline(always)]
pub(super) fn nearest_neighbour<const N: usize>(
    nb: &Neighbours<'_>,
    xval: &[f32],
    weight: &[f32],
    scale: f32,
) -> usize {
    let mut best_d2 = f32::MAX;
    let mut grid_index = usize::MAX;
    let n = nb.ids.len();
    for c0 in (0..nb.padded).step_by(LANES) {
        let mut d2 = [0f32; LANES];
        for i in 0..N {
            let lv: &[u8; LANES] = nb.lv[i * nb.padded + c0..][..LANES].try_into().unwrap();
            let (x, w) = (xval[i], weight[i]);
            for c in 0..LANES {
                let q = (2 * i32::from(lv[c]) + 1) as f32;
                let diff = scale * q - x;
                d2[c] += w * diff * diff;
            }
        }
        // ggml's strict `<` in ggml's order: the first of the smallest (NaN never chosen),
        // without branches. A chunk none of whose lanes beats the best so far changes nothing
        // (the best only falls), so it is skipped after one vector comparison.
        let mut any = false;
        for c in 0..LANES {
            any |= d2[c] < best_d2;
        }
        if !any {
            continue;
        }
        for c in 0..LANES.min(n - c0) {
            let better = d2[c] < best_d2;
            best_d2 = if better { d2[c] } else { best_d2 };
            grid_index = if better { c0 + c } else { grid_index };
        }
    }
    grid_index
}

/// [`nearest_neighbour`] for AVX2: each value's term `w*diff*diff` at each of the 8 levels
/// computed once (ggml's operations on the same operands: the same bits), then each
/// neighbour's terms picked from those tables by its levels (a lane permutation) and summed in
/// ggml's order, 8 neighbours side by side.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
#[inline]
/// # Safety
/// The CPU must have AVX2.
pub(super) unsafe fn nearest_neighbour_avx2<const N: usize>(
    nb: &Neighbours<'_>,
    xval: &[f32],
    weight: &[f32],
    scale: f32,
) -> usize {
    use std::arch::x86_64::*;
    assert!(xval.len() >= N && weight.len() >= N);
    let q = _mm256_setr_ps(1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0);
    let sq = _mm256_mul_ps(_mm256_set1_ps(scale), q);
    let mut terms = [_mm256_setzero_ps(); N];
    for i in 0..N {
        let diff = _mm256_sub_ps(sq, _mm256_set1_ps(xval[i]));
        terms[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(weight[i]), diff), diff);
    }
    // SAFETY: the caller's CPU has AVX2 (this function's own requirement).
    unsafe { nearest_by_terms_avx2::<N>(nb, &terms) }
}

/// The scan of [`nearest_neighbour_avx2`] given each value's terms by level (lane `l` of
/// `terms[i]`: value `i`'s term at level `l`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
#[inline]
/// # Safety
/// The CPU must have AVX2.
pub(super) unsafe fn nearest_by_terms_avx2<const N: usize>(
    nb: &Neighbours<'_>,
    terms: &[std::arch::x86_64::__m256; N],
) -> usize {
    use std::arch::x86_64::*;
    assert!(nb.lv.len() >= N * nb.padded);
    assert!(nb.padded % LANES == 0 && LANES == 8);
    let mut best_d2 = f32::MAX;
    let mut grid_index = usize::MAX;
    let n = nb.ids.len();
    let lv = nb.lv.as_ptr();
    let mut c0 = 0;
    while c0 < nb.padded {
        let mut d2 = _mm256_setzero_ps();
        for i in 0..N {
            // SAFETY: i * padded + c0 + 8 <= N * padded <= lv's length (asserted above); the
            // load takes 8 bytes, unaligned.
            let bytes = unsafe { _mm_loadl_epi64(lv.add(i * nb.padded + c0).cast::<__m128i>()) };
            let idx = _mm256_cvtepu8_epi32(bytes);
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(terms[i], idx));
        }
        // ggml's strict `<` in its order: the lanes below the best so far (NaN never is); if
        // some are, the first of their smallest becomes the best (what the scan in order
        // leaves), else the chunk changes nothing.
        let live = (1i32 << (n - c0).min(LANES)) - 1;
        let below =
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, _mm256_set1_ps(best_d2))) & live;
        if below != 0 {
            let inf = _mm256_set1_ps(f32::INFINITY);
            // The lanes below the best that hold a neighbour (not the padding).
            let real = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                _mm256_set1_epi32((n - c0).min(LANES) as i32),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            ));
            let keep = _mm256_and_ps(
                _mm256_cmp_ps::<_CMP_LT_OQ>(d2, _mm256_set1_ps(best_d2)),
                real,
            );
            let v = _mm256_blendv_ps(inf, d2, keep);
            let m = _mm256_min_ps(v, _mm256_permute2f128_ps::<1>(v, v));
            let m = _mm256_min_ps(m, _mm256_permute_ps::<0b01_00_11_10>(m));
            let m = _mm256_min_ps(m, _mm256_permute_ps::<0b10_11_00_01>(m));
            let at = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(v, m)) & below;
            let c = at.trailing_zeros() as usize;
            best_d2 = _mm_cvtss_f32(_mm256_castps256_ps128(m));
            grid_index = c0 + c;
        }
        c0 += LANES;
    }
    grid_index
}

/// The point of `n` levels (`bits` each) as ggml indexes its map: `u |= L << bits*i`, kept to
/// 16 bits as C's `uint16_t` keeps it.
#[inline(always)]
pub(super) fn point_index(l: &[i8], bits: u32) -> usize {
    let mut u = 0u16;
    for (i, &v) in l.iter().enumerate() {
        u |= (i32::from(v) << (bits * i as u32)) as u16;
    }
    usize::from(u)
}

/// The search shared by IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S: scales around `max`, each group of
/// `N` values rounded to the grid (or its best neighbour), the best scale kept, then off-grid
/// groups refined. Returns the scale; `l` holds the chosen levels.
pub(super) struct Search {
    pub(super) kmaxq: i32,
    pub(super) range: i32,
    pub(super) step: f32,
    /// Whether groups count as on the grid before any scale is taken (IQ3_S: not).
    pub(super) init_on_grid: bool,
    /// Whether the refinement redoes every group (IQ3_S) or only those off the grid.
    pub(super) refine_all: bool,
}

impl Search {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn run<const N: usize>(
        &self,
        grid: &Grid<N>,
        bits: u32,
        xval: &[f32],
        weight: &[f32],
        waux: &[f32],
        max: f32,
        l: &mut [i8],
    ) -> Option<f32> {
        let bs = xval.len();
        let ng = bs / N;
        let kmaxq = self.kmaxq;
        let to_grid = ToGrid {
            grid,
            bits,
            kmaxq,
            avx2: use_avx2(),
        };
        let mut laux = [0i8; 32];
        let mut on_grid = [self.init_on_grid; 8];
        let mut on_grid_aux = [true; 8];
        // `w*x*q` and `w*q*q` of each value at each level: ggml's products, computed once.
        let mut wxq = [[0f32; 8]; 32];
        let mut wqq = [[0f32; 8]; 32];
        for i in 0..bs {
            let w = weight[i];
            let wx = w * xval[i];
            for lv in 0..kmaxq as usize {
                let q = (2 * lv + 1) as f32;
                wxq[i][lv] = wx * q;
                wqq[i][lv] = w * q * q;
            }
        }
        let mut best = 0f32;
        let mut scale = max / (2 * kmaxq - 1) as f32;
        for is in -self.range..=self.range {
            let id = ((2 * kmaxq - 1) as f32 + is as f32 * self.step) / max;
            let this_scale = 1.0 / id;
            for k in 0..ng {
                (_, on_grid_aux[k]) = to_grid.round(k, id, this_scale, xval, waux, &mut laux)?;
            }
            let (mut sumqx, mut sumq2) = (0f32, 0f32);
            for i in 0..bs {
                let lv = laux[i] as usize;
                sumqx += wxq[i][lv];
                sumq2 += wqq[i][lv];
            }
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l[..bs].copy_from_slice(&laux[..bs]);
                on_grid[..ng].copy_from_slice(&on_grid_aux[..ng]);
            }
        }
        let n_not_ongrid = on_grid[..ng].iter().filter(|&&b| !b).count();
        if n_not_ongrid > 0 && scale > 0.0 {
            let id = 1.0 / scale;
            for k in 0..ng {
                if on_grid[k] && !self.refine_all {
                    continue;
                }
                to_grid.round(k, id, scale, xval, waux, l)?;
            }
            let (sumqx, sumq2) = fit(weight, xval, &l[..bs]);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        Some(scale)
    }
}

/// Group `xval`'s levels at the inverse scale `id`: `(id * x - 1) / 2` rounded, in
/// `0..kmaxq`.
#[inline(always)]
pub(super) fn round_levels(id: f32, kmaxq: i32, xval: &[f32], l: &mut [i8]) {
    for (o, &v) in l.iter_mut().zip(xval) {
        *o = nearest_int(0.5 * (id * v - 1.0)).clamp(0, kmaxq - 1) as i8;
    }
}

/// What a search rounds to: the grid, the bits of a level in its map, the levels (`0..kmaxq`),
/// and whether the neighbour search may use AVX2.
pub(super) struct ToGrid<'g, const N: usize> {
    pub(super) grid: &'g Grid<N>,
    pub(super) bits: u32,
    pub(super) kmaxq: i32,
    pub(super) avx2: bool,
}

impl<const N: usize> ToGrid<'_, N> {
    /// Group `k` (values `N*k..N*k+N` of `xval`, weights `waux`) to the grid: its levels at the
    /// inverse scale `id` into `l`, and where that point is off the grid, its best neighbour at
    /// `scale` instead. Returns the grid index and whether the rounded point was on the grid;
    /// `None` where ggml asserts.
    #[inline(always)]
    pub(super) fn round(
        &self,
        k: usize,
        id: f32,
        scale: f32,
        xval: &[f32],
        waux: &[f32],
        l: &mut [i8],
    ) -> Option<(usize, bool)> {
        let g = N * k..N * k + N;
        let (xval, waux, l) = (&xval[g.clone()], &waux[g.clone()], &mut l[g]);
        round_levels(id, self.kmaxq, xval, l);
        Some(match self.grid.lookup(point_index(l, self.bits))? {
            Lookup::On(gi) => (gi, true),
            Lookup::Off(list) => (
                find_best_neighbour(self.grid, &list, xval, waux, scale, l, self.avx2)?,
                false,
            ),
        })
    }
}

/// `sum(w*x*q)` and `sum(w*q*q)` over the values, `q = 2*l + 1`, in order.
#[inline(always)]
pub(super) fn fit(weight: &[f32], xval: &[f32], l: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for i in 0..l.len() {
        let w = weight[i];
        let q = (2 * i32::from(l[i]) + 1) as f32;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// The weights of a block: `qw * sqrt(sigma2 + x*x)` with an importance, else `bias + x*x`
/// (`bias` 0 but for IQ2_S: `0 + x*x` is `x*x` to the bit).
#[inline(always)]
pub(super) fn weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32, bias: f32, weight: &mut [f32]) {
    match qw {
        Some(q) => {
            for i in 0..xb.len() {
                weight[i] = q[i] * (sigma2 + xb[i] * xb[i]).sqrt();
            }
        }
        None => {
            for i in 0..xb.len() {
                weight[i] = bias + xb[i] * xb[i];
            }
        }
    }
}

/// Absolute values into `xval` and the sign bits of each 8 (IQ2_XXS, IQ2_XS, IQ3_XXS: with
/// an even count of flips, the least important value's sign changed to make it so).
#[inline(always)]
pub(super) fn signs(
    xb: &[f32],
    weight: &[f32],
    xval: &mut [f32],
    block_signs: &mut [u8],
    even: bool,
) {
    for k in 0..xb.len() / 8 {
        let mut nflip = 0;
        let mut s = 0u8;
        for i in 0..8 {
            let v = xb[8 * k + i];
            if v >= 0.0 {
                xval[8 * k + i] = v;
            } else {
                xval[8 * k + i] = -v;
                nflip += 1;
                s |= 1 << i;
            }
        }
        if even {
            if nflip % 2 == 1 {
                let mut imin = 0;
                let mut min = weight[8 * k] * xb[8 * k] * xb[8 * k];
                for i in 1..8 {
                    let ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                    if ax < min {
                        min = ax;
                        imin = i;
                    }
                }
                xval[8 * k + imin] = -xval[8 * k + imin];
                s ^= 1 << imin;
            }
            block_signs[k] = s & 127;
        } else {
            block_signs[k] = s;
        }
    }
}

/// A group of `B` values (16 or 32) as the IQ2 and IQ3 searches take it: the weights, their
/// square roots, the magnitudes and the sign bits of each 8 (the first `B / 8` bytes).
pub(super) struct Group<const B: usize> {
    pub(super) weight: [f32; B],
    pub(super) waux: [f32; B],
    pub(super) xval: [f32; B],
    pub(super) signs: [u8; 4],
}

impl<const B: usize> Group<B> {
    pub(super) const NEW: Self = Self {
        weight: [0.0; B],
        waux: [0.0; B],
        xval: [0.0; B],
        signs: [0; 4],
    };

    /// The group `xb`: its weights (see [`weights`]), their square roots, its magnitudes and
    /// signs (see [`signs`]). Returns the largest magnitude (C's `MAX` from the first).
    #[inline(always)]
    pub(super) fn load(
        &mut self,
        xb: &[f32],
        qw: Option<&[f32]>,
        sigma2: f32,
        bias: f32,
        even: bool,
    ) -> f32 {
        weights(xb, qw, sigma2, bias, &mut self.weight);
        for i in 0..B {
            self.waux[i] = self.weight[i].sqrt();
        }
        signs(xb, &self.weight, &mut self.xval, &mut self.signs, even);
        let mut max = self.xval[0];
        for &v in &self.xval[1..] {
            max = c_max(max, v);
        }
        max
    }

    /// The search's scale made positive (where it is negative, every sign flipped, `keep` the
    /// sign bits kept) and the grid index of each of the `G` groups of `N` levels in `l`.
    /// `None` where one is off the grid or the scale is not `>= 0` (NaN): ggml asserts.
    #[inline(always)]
    pub(super) fn grid_indices<const N: usize, const G: usize>(
        &mut self,
        grid: &Grid<N>,
        bits: u32,
        l: &[i8],
        scale: f32,
        keep: u8,
    ) -> Option<(f32, [usize; G])> {
        let mut scale = scale;
        if scale < 0.0 {
            scale = -scale;
            for s in &mut self.signs[..B / 8] {
                *s = !*s & keep;
            }
        }
        let mut gi = [0usize; G];
        for k in 0..G {
            match grid.lookup(point_index(&l[N * k..N * k + N], bits))? {
                Lookup::On(i) => gi[k] = i,
                Lookup::Off(_) => return None,
            }
        }
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN too, as ggml's assert
        if !(scale >= 0.0) {
            return None;
        }
        Some((scale, gi))
    }
}

/// The super-block's scale `d = max_scale / (2 * levels - 1)` and each group's scale in
/// `0..levels`: `(scale / d - 1) / 2` rounded.
#[inline(always)]
pub(super) fn sub_scales<const G: usize>(
    max_scale: f32,
    levels: i32,
    scales: &[f32; G],
) -> (f32, [i32; G]) {
    let d = max_scale / (2 * levels - 1) as f32;
    let id = 1.0 / d;
    let mut l = [0i32; G];
    for ib in 0..G {
        l[ib] = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, levels - 1);
    }
    (d, l)
}
