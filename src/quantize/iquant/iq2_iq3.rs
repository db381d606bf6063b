//! IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S: ggml's `quantize_row_iq2_xxs_impl`,
//! `quantize_row_iq2_xs_impl`, `quantize_row_iq2_s_impl`, `quantize_row_iq3_xxs_impl` and
//! `quantize_row_iq3_s_impl`.

use super::grid_search::{fit, sub_scales, use_avx2, Group, Search, ToGrid};
use super::grids::{self, Grid};
use super::shared::{put_u16, NoAnswer};
use crate::quantize::search::{c_max, f32_to_f16, make_qp_quants, sum_squares};

#[inline(always)]
pub(super) fn iq2_xxs_row(
    x: &[f32],
    qw: &[f32],
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const KMAXQ: i32 = 3;
    let grid = grids::iq2_xxs();
    let to_grid = ToGrid {
        grid,
        bits: 2,
        kmaxq: KMAXQ,
        avx2: use_avx2(),
    };
    let mut scales = [0f32; 8];
    let mut grp = Group::<32>::NEW;
    let mut big_l = [0i8; 32];
    let mut laux = [0i8; 32];
    for (ibl, yb) in y.chunks_exact_mut(66).enumerate() {
        let fail = || NoAnswer(256 * ibl);
        let mut q2 = [0u32; 16];
        let mut max_scale = 0f32;
        let xbl = &x[256 * ibl..256 * ibl + 256];
        let sigma2 = sum_squares(xbl) / 256.0;
        for ib in 0..8 {
            let xb = &xbl[32 * ib..32 * ib + 32];
            let q = &qw[256 * ibl + 32 * ib..256 * ibl + 32 * ib + 32];
            let max = grp.load(xb, Some(q), sigma2, 0.0, true);
            if max < 1e-15 {
                scales[ib] = 0.0;
                big_l.fill(0);
                continue;
            }
            let (xval, weight, waux) = (&grp.xval, &grp.weight, &grp.waux);
            let mut lu = [0u8; 32];
            for i in 0..32 {
                lu[i] = big_l[i] as u8;
            }
            let mut scale = make_qp_quants(KMAXQ + 1, xval, &mut lu, weight);
            for i in 0..32 {
                big_l[i] = lu[i] as i8;
            }
            let eff_max = scale * KMAXQ as f32;
            if eff_max <= 0.0 {
                scales[ib] = 0.0;
                big_l.fill(0);
                continue;
            }
            let mut best = 0f32;
            for is in -6..=6 {
                let id = ((2 * KMAXQ - 1) as f32 + is as f32 * 0.1) / eff_max;
                let this_scale = 1.0 / id;
                for k in 0..4 {
                    let r = to_grid.round(k, id, this_scale, xval, waux, &mut laux);
                    r.ok_or_else(fail)?;
                }
                let (sumqx, sumq2) = fit(weight, xval, &laux);
                if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    big_l = laux;
                }
            }
            if scale > 0.0 {
                let id = 1.0 / scale;
                for k in 0..4 {
                    let r = to_grid.round(k, id, scale, xval, waux, &mut big_l);
                    let (gi, _) = r.ok_or_else(fail)?;
                    let pg = &grid.points[gi];
                    for i in 0..8 {
                        big_l[8 * k + i] = (pg[i] - 1) / 2;
                    }
                }
                let (sumqx, sumq2) = fit(weight, xval, &big_l);
                if sumq2 > 0.0 {
                    scale = sumqx / sumq2;
                }
            }
            let (scale, gi): (f32, [usize; 4]) = grp
                .grid_indices(grid, 2, &big_l, scale, 127)
                .ok_or_else(fail)?;
            for k in 0..4 {
                q2[2 * ib] |= (gi[k] as u32) << (8 * k);
                q2[2 * ib + 1] |= u32::from(grp.signs[k]) << (7 * k);
            }
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        yb.fill(0);
        if max_scale == 0.0 {
            continue;
        }
        let (d, ls) = sub_scales(max_scale, 16, &scales);
        put_u16(yb, 0, f32_to_f16(d));
        for ib in 0..8 {
            q2[2 * ib + 1] |= (ls[ib] as u32) << 28;
        }
        for (i, v) in q2.iter().enumerate() {
            yb[2 + 4 * i..6 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S: ggml's `quantize_row_iq2_xs_impl`,
// `quantize_row_iq2_s_impl`, `quantize_row_iq3_xxs_impl` and `quantize_row_iq3_s_impl`.

/// The search of IQ2_XS and IQ2_S.
pub(super) const SEARCH_IQ2: Search = Search {
    kmaxq: 3,
    range: 9,
    step: 0.1,
    init_on_grid: true,
    refine_all: false,
};

/// What IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S set around the search they share.
pub(super) struct GridType {
    pub(super) search: Search,
    /// `sigma2` is `sigma_factor * sum(x^2) / 256` over the super-block.
    pub(super) sigma_factor: f32,
    /// A group whose largest magnitude is below this takes scale 0 and no search.
    pub(super) skip_below: f32,
    /// Whether each 8 signs are made even (see [`signs`]).
    pub(super) even: bool,
    /// The sign bits kept when a negative scale flips them.
    pub(super) keep: u8,
    /// The factor on the super-block scale `max_scale / 31` as stored.
    pub(super) adjust: f32,
}

/// The rows of the four types of [`GridType`]: super-blocks of `bb` bytes, each `256 / B`
/// groups of `B` values (`G` grid points of `N` values, `bits` a level). Without an importance,
/// the weights are `x*x`, or given `bias`, `bias * sigma2 + x*x` (IQ2_S). `group` writes a
/// group's grid indices and signs (given the super-block's state `S`, fresh for each); `finish`
/// the groups' 4-bit scales once the super-scale is written (not for a super-block of zeros).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn grid_row<
    const B: usize,
    const N: usize,
    const G: usize,
    const NG: usize,
    S: Default,
>(
    t: &GridType,
    grid: &Grid<N>,
    bits: u32,
    bias: Option<f32>,
    x: &[f32],
    qw: Option<&[f32]>,
    y: &mut [u8],
    bb: usize,
    mut group: impl FnMut(&mut S, &mut [u8], usize, &[usize; G], &[u8; 4]),
    mut finish: impl FnMut(&mut S, &mut [u8], &[i32; NG]),
) -> std::result::Result<(), NoAnswer> {
    let mut scales = [0f32; NG];
    let mut grp = Group::<B>::NEW;
    for (ibl, yb) in y.chunks_exact_mut(bb).enumerate() {
        let fail = || NoAnswer(256 * ibl);
        yb.fill(0);
        let mut state = S::default();
        let mut max_scale = 0f32;
        let xbl = &x[256 * ibl..256 * ibl + 256];
        let sigma2 = t.sigma_factor * sum_squares(xbl) / 256.0;
        for ib in 0..NG {
            let xb = &xbl[B * ib..B * ib + B];
            let q = qw.map(|q| &q[256 * ibl + B * ib..256 * ibl + B * ib + B]);
            let max = grp.load(xb, q, sigma2, bias.map_or(0.0, |b| b * sigma2), t.even);
            let mut big_l = [0i8; B];
            if max < t.skip_below {
                scales[ib] = 0.0;
                continue;
            }
            let scale = t
                .search
                .run(
                    grid,
                    bits,
                    &grp.xval,
                    &grp.weight,
                    &grp.waux,
                    max,
                    &mut big_l,
                )
                .ok_or_else(fail)?;
            let (scale, gi) = grp
                .grid_indices::<N, G>(grid, bits, &big_l, scale, t.keep)
                .ok_or_else(fail)?;
            group(&mut state, yb, ib, &gi, &grp.signs);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            continue;
        }
        let (d, ls) = sub_scales(max_scale, 16, &scales);
        put_u16(yb, 0, f32_to_f16(d * t.adjust));
        finish(&mut state, yb, &ls);
    }
    Ok(())
}

/// Two 4-bit values a byte, the first in the low half, from `at`.
#[inline(always)]
pub(super) fn put_nibbles(yb: &mut [u8], at: usize, ls: &[i32]) {
    for (ib, &l) in ls.iter().enumerate() {
        let l = l as u8;
        if ib % 2 == 0 {
            yb[at + ib / 2] = l;
        } else {
            yb[at + ib / 2] |= l << 4;
        }
    }
}

#[inline(always)]
pub(super) fn iq2_xs_row(x: &[f32], qw: &[f32], y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    pub(super) const T: GridType = GridType {
        search: SEARCH_IQ2,
        sigma_factor: 1.0,
        skip_below: 1e-15,
        even: true,
        keep: 127,
        adjust: 1.0,
    };
    // Block: d (2), qs (32 u16: index and signs), scales (8).
    grid_row::<16, 8, 2, 16, [u16; 32]>(
        &T,
        grids::iq2_xs(),
        2,
        None,
        x,
        Some(qw),
        y,
        74,
        |q2, _, ib, gi, signs| {
            for k in 0..2 {
                q2[2 * ib + k] = gi[k] as u16 | (u16::from(signs[k]) << 9);
            }
        },
        |q2, yb, ls| {
            put_nibbles(yb, 66, ls);
            for (i, v) in q2.iter().enumerate() {
                put_u16(yb, 2 + 2 * i, *v);
            }
        },
    )
}

#[inline(always)]
pub(super) fn iq2_s_row(
    x: &[f32],
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const T: GridType = GridType {
        search: SEARCH_IQ2,
        sigma_factor: 2.0,
        skip_below: 1e-8,
        even: false,
        keep: 0xFF,
        adjust: 0.9875,
    };
    // Block: d (2), qs (32), signs (32), qh (8), scales (8).
    grid_row::<16, 8, 2, 16, ()>(
        &T,
        grids::iq2_s(),
        2,
        Some(0.25),
        x,
        qw,
        y,
        82,
        |_, yb, ib, gi, signs| {
            for k in 0..2 {
                let i8 = 2 * ib + k;
                yb[2 + i8] = (gi[k] & 255) as u8;
                yb[66 + i8 / 4] |= ((gi[k] >> 8) << (2 * (i8 % 4))) as u8;
                yb[2 + 32 + i8] = signs[k];
            }
        },
        |_, yb, ls| put_nibbles(yb, 74, ls),
    )
}

#[inline(always)]
pub(super) fn iq3_xxs_row(
    x: &[f32],
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const T: GridType = GridType {
        search: Search {
            kmaxq: 8,
            range: 15,
            step: 0.2,
            init_on_grid: true,
            refine_all: false,
        },
        sigma_factor: 2.0,
        skip_below: 1e-8,
        even: true,
        keep: 127,
        adjust: 1.0125,
    };
    // Block: d (2), qs (64), scales and signs (8 u32).
    grid_row::<32, 4, 8, 8, ([[u8; 8]; 8], [u32; 8])>(
        &T,
        grids::iq3_xxs(),
        3,
        None,
        x,
        qw,
        y,
        98,
        |(q3, sas), _, ib, gi, s| {
            for k in 0..8 {
                q3[ib][k] = gi[k] as u8;
            }
            sas[ib] = u32::from(s[0])
                | (u32::from(s[1]) << 7)
                | (u32::from(s[2]) << 14)
                | (u32::from(s[3]) << 21);
        },
        |(q3, sas), yb, ls| {
            for ib in 0..8 {
                sas[ib] |= (ls[ib] as u32) << 28;
            }
            for (ib, q) in q3.iter().enumerate() {
                yb[2 + 8 * ib..10 + 8 * ib].copy_from_slice(q);
            }
            for (i, v) in sas.iter().enumerate() {
                yb[66 + 4 * i..70 + 4 * i].copy_from_slice(&v.to_le_bytes());
            }
        },
    )
}

#[inline(always)]
pub(super) fn iq3_s_row(
    x: &[f32],
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    pub(super) const T: GridType = GridType {
        search: Search {
            kmaxq: 8,
            range: 9,
            step: 0.2,
            init_on_grid: false,
            refine_all: true,
        },
        sigma_factor: 2.0,
        // Only a group of zeros is skipped: magnitudes are never below the smallest
        // subnormal (2^-126 * 2^-23 = 2^-149) but at 0.
        skip_below: f32::MIN_POSITIVE * f32::EPSILON,
        even: false,
        keep: 0xFF,
        adjust: 1.033,
    };
    // Block: d (2), qs (64), qh (8), signs (32), scales (4). As in ggml, the grid indices and
    // the signs of a group go after those of the last group written (the state counts them): a
    // group of zeros (skipped) leaves no gap, its place taken by the next.
    grid_row::<32, 4, 8, 8, usize>(
        &T,
        grids::iq3_s(),
        3,
        None,
        x,
        qw,
        y,
        110,
        |written, yb, ib, gi, signs| {
            let (qs_at, signs_at) = (2 + 8 * *written, 74 + 4 * *written);
            for k in 0..8 {
                yb[qs_at + k] = (gi[k] & 255) as u8;
                yb[66 + ib] |= ((gi[k] >> 8) << k) as u8;
            }
            yb[signs_at..signs_at + 4].copy_from_slice(signs);
            *written += 1;
        },
        |_, yb, ls| {
            for ib in (0..8).step_by(2) {
                yb[106 + ib / 2] = (ls[ib] | (ls[ib + 1] << 4)) as u8;
            }
        },
    )
}
