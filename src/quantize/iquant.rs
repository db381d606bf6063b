//! The IQ types' quantizers (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
//! IQ1_M), in ggml's order of operations.
//!
//! Each search runs its arithmetic exactly as ggml's C does it (f32 throughout, no fused
//! multiply-add, the same comparisons, including how they treat NaN), so the bytes are ggml's.
//! Where ggml has no answer (its `GGML_ASSERT`s on a grid point or on a scale, which abort the
//! process, or a read outside its tables or its input), this returns an error naming the row and
//! the element instead.
//!
//! The grid maps and neighbour lists ggml builds in `ggml_quantize_init` are built here once per
//! grid on first use ([`grids`]), from the dequantizers' grids, with the same neighbours in the
//! same order.

// The casts here are C's conversions that ggml's code makes (to `uint8_t`, `uint16_t`, `int8_t`,
// from `int` to `float`), of values the block layout bounds (levels below 16, grid indices below
// 2048, positions in a 256-value block); the index loops keep ggml's loops side by side with
// its C; `!(scale >= 0.0)` is ggml's assert, which NaN fails.
#![allow(
    clippy::cast_possible_truncation,
    clippy::needless_range_loop,
    clippy::neg_cmp_op_on_partial_ord
)]

mod grids;

use super::search::{c_max, f32_to_f16, make_qp_quants, nearest_int, sum_squares};
use crate::error::{Error, ErrorCode, Result};
use crate::quant::tables::KVALUES_IQ4NL;
use crate::types::DataType;
use grids::{Grid, Neighbours, LANES};

/// Quantizes `src` (whole rows of `n_per_row` floats; `dst` holds exactly their blocks) into the
/// IQ type `data_type`; returns the bytes written. `first_row` is the index of `src`'s first row
/// in the caller's rows (for a message). A row ggml has no answer for fails the call with `dst`
/// unchanged from that row on (each row is quantized aside, then copied).
pub(crate) fn quantize_rows(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
    first_row: usize,
) -> Result<usize> {
    let name = data_type.name();
    let invalid = |m: String| Err(Error::msg(ErrorCode::InvalidArgument, m));
    let (block_elems, block_bytes) = match data_type {
        DataType::IQ4_NL => (32, 18),
        DataType::IQ4_XS => (256, 136),
        DataType::IQ3_XXS => (256, 98),
        DataType::IQ3_S => (256, 110),
        DataType::IQ2_XXS => (256, 66),
        DataType::IQ2_XS => (256, 74),
        DataType::IQ2_S => (256, 82),
        DataType::IQ1_S => (256, 50),
        DataType::IQ1_M => (256, 56),
        _ => {
            return Err(Error::msg(
                ErrorCode::Unsupported,
                format!("{name} is not an IQ type"),
            ))
        }
    };
    if n_per_row == 0 || n_per_row % block_elems != 0 {
        return invalid(format!(
            "{name}: a row of {n_per_row} values is not a whole number of {block_elems}-value blocks"
        ));
    }
    if src.len() % n_per_row != 0 {
        return invalid(format!(
            "{name}: {} values are not whole rows of {n_per_row}",
            src.len()
        ));
    }
    let rows = src.len() / n_per_row;
    let row_bytes = n_per_row / block_elems * block_bytes;
    let need = rows.checked_mul(row_bytes);
    if need != Some(dst.len()) {
        return invalid(format!(
            "{name}: {rows} rows of {n_per_row} values need {} bytes, the output holds {}",
            need.map_or_else(|| "more than addressable".to_owned(), |n| n.to_string()),
            dst.len()
        ));
    }
    if let Some(w) = importance {
        if w.len() != n_per_row {
            return invalid(format!(
                "{name}: the importance holds {} weights, a row has {n_per_row} values",
                w.len()
            ));
        }
    } else if matches!(
        data_type,
        DataType::IQ2_XXS | DataType::IQ2_XS | DataType::IQ1_S
    ) {
        return invalid(format!("{name} needs an importance matrix (as ggml does)"));
    }
    let job = Job {
        data_type,
        src,
        n_per_row,
        importance,
        row_bytes,
        first_row,
    };
    quantize_all(job, dst)?;
    Ok(dst.len())
}

/// One call's rows: the type, whole rows of `n_per_row` floats, the importance (a weight for
/// each value of a row) and the bytes of a row's blocks.
#[derive(Clone, Copy)]
struct Job<'a> {
    data_type: DataType,
    src: &'a [f32],
    n_per_row: usize,
    importance: Option<&'a [f32]>,
    row_bytes: usize,
    first_row: usize,
}

/// The row loop, compiled three times: for AVX-512, for AVX2 (the searches' lanes widen) and
/// portable; the dispatch picks one (the same bytes from each).
#[allow(unsafe_code)]
fn quantize_all(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::quant::simd::{active, Isa};
        match active() {
            // SAFETY: the dispatch chose AVX-512 (F, BW, VL) only where the CPU has it. The
            // grid searches run faster compiled for AVX2 (measured on an Intel Xeon with
            // AVX-512: their lanes are 8 wide), so only IQ4_NL and IQ4_XS take this instance.
            Isa::Avx512 if matches!(job.data_type, DataType::IQ4_NL | DataType::IQ4_XS) => {
                return unsafe { rows_avx512(job, dst) }
            }
            // SAFETY: the dispatch chose AVX2 (or AVX-512, which comes with it) only where the
            // CPU has it.
            Isa::Avx2 | Isa::Avx512 => return unsafe { rows_avx2(job, dst) },
            _ => {}
        }
    }
    rows_body(job, dst)
}

/// [`rows_body`] compiled with the target features `$features`.
macro_rules! rows_with {
    ($name:ident, $features:tt) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(unsafe_code)]
        /// # Safety
        /// The CPU must have the enabled features.
        unsafe fn $name(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
            rows_body(job, dst)
        }
    };
}
rows_with!(rows_avx512, "avx512f,avx512bw,avx512vl,avx2");
rows_with!(rows_avx2, "avx2");

#[inline(always)]
fn rows_body(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
    let Job {
        data_type,
        src,
        n_per_row,
        importance,
        row_bytes,
        first_row,
    } = job;
    let name = data_type.name();
    // The types whose search can fail write a row aside first, so that a failing row leaves
    // the caller's bytes as they were.
    let fallible = !matches!(data_type, DataType::IQ4_NL | DataType::IQ4_XS);
    let mut aside = if fallible {
        vec![0u8; row_bytes]
    } else {
        Vec::new()
    };
    for (r, (x, out)) in src
        .chunks_exact(n_per_row)
        .zip(dst.chunks_exact_mut(row_bytes))
        .enumerate()
    {
        let y: &mut [u8] = if fallible { &mut aside } else { out };
        let res = match data_type {
            DataType::IQ4_NL => {
                for (b, (xb, yb)) in x.chunks_exact(32).zip(y.chunks_exact_mut(18)).enumerate() {
                    iq4_nl_block(xb, importance.map(|w| &w[32 * b..32 * b + 32]), yb);
                }
                Ok(())
            }
            DataType::IQ4_XS => {
                for (b, (xb, yb)) in x.chunks_exact(256).zip(y.chunks_exact_mut(136)).enumerate() {
                    iq4_xs_block(xb, importance.map(|w| &w[256 * b..256 * b + 256]), yb);
                }
                Ok(())
            }
            DataType::IQ2_XXS => iq2_xxs_row(x, importance.unwrap_or(&[]), y),
            DataType::IQ2_XS => iq2_xs_row(x, importance.unwrap_or(&[]), y),
            DataType::IQ2_S => iq2_s_row(x, importance, y),
            DataType::IQ3_XXS => iq3_xxs_row(x, importance, y),
            DataType::IQ3_S => iq3_s_row(x, importance, y),
            DataType::IQ1_S => iq1_s_row(src, r * n_per_row, n_per_row, importance, y),
            _ => iq1_m_row(src, r * n_per_row, n_per_row, importance, y),
        };
        if let Err(at) = res {
            return Err(no_answer(name, first_row + r, at, x));
        }
        if fallible {
            out.copy_from_slice(&aside);
        }
    }
    Ok(())
}

/// Where a search has no answer: the block (its first element, relative to the row).
struct NoAnswer(usize);

/// The error for a row ggml has no answer for: it names the row and the element that makes it
/// so (the first NaN or infinity in the block, else the block's largest magnitude).
fn no_answer(name: &str, row: usize, at: NoAnswer, x: &[f32]) -> Error {
    let start = at.0.min(x.len().saturating_sub(1)) / 256 * 256;
    let block = &x[start..(start + 256).min(x.len())];
    let pick = block
        .iter()
        .position(|v| !v.is_finite())
        .unwrap_or_else(|| {
            let mut best = 0;
            for (i, v) in block.iter().enumerate() {
                if v.abs() > block[best].abs() {
                    best = i;
                }
            }
            best
        });
    let e = start + pick;
    Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "{name}: row {row}, element {e} ({}): ggml finds no grid point or scale for this block (it aborts)",
            x[e]
        ),
    )
}

// ------------------------------------------------------------------------------------------
// Helpers with ggml's exact semantics.

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// ggml's `best_index_int8` over the 16 IQ4 values.
#[inline(always)]
fn best_index_int8(val: &[i8; 16], x: f32) -> usize {
    if x <= f32::from(val[0]) {
        return 0;
    }
    if x >= f32::from(val[15]) {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < f32::from(val[mav]) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - f32::from(val[mu - 1]) < f32::from(val[mu]) - x {
        mu - 1
    } else {
        mu
    }
}

// ------------------------------------------------------------------------------------------
// IQ4_NL and IQ4_XS: ggml's `quantize_row_iq4_nl_impl` (ntry 7).

/// One super-block of `x.len()` values (32: IQ4_NL, 256: IQ4_XS) in blocks of 32. Returns the
/// f16 super-scale; fills `q4` (packed nibbles), and for IQ4_XS `scales_h` / `scales_l`.
#[inline(always)]
fn iq4_impl(
    x: &[f32],
    qw: Option<&[f32]>,
    q4: &mut [u8],
    scales_h: &mut u16,
    scales_l: &mut [u8],
) -> u16 {
    const NTRY: i32 = 7;
    let values = &KVALUES_IQ4NL;
    let sbs = x.len();
    let nb = sbs / 32;
    let mut sigma2 = 0f32;
    for &v in x {
        sigma2 += v * v;
    }
    sigma2 *= 2.0 / sbs as f32;
    let dh;
    let mut big_l = [0u8; 256];
    let mut scales = [0f32; 8];
    let mut weight = [0f32; 32];
    let (mut max_scale, mut amax_scale) = (0f32, 0f32);
    let v0 = f32::from(values[0]);
    for ib in 0..nb {
        let xb = &x[32 * ib..32 * ib + 32];
        match qw {
            Some(q) => {
                let q = &q[32 * ib..32 * ib + 32];
                for j in 0..32 {
                    weight[j] = q[j] * (sigma2 + xb[j] * xb[j]).sqrt();
                }
            }
            None => {
                for j in 0..32 {
                    weight[j] = xb[j] * xb[j];
                }
            }
        }
        let (mut amax, mut max) = (0f32, 0f32);
        for &v in xb {
            let ax = v.abs();
            if ax > amax {
                amax = ax;
                max = v;
            }
        }
        if amax < 1e-15 {
            scales[ib] = 0.0;
            continue;
        }
        // The first try (at -max/values[0]) and the 15 around it, side by side in lanes; then
        // ggml's choice among them, in its order.
        let mut ids = [0f32; 16];
        ids[0] = 1.0 / (-max / v0);
        for (k, id) in ids[1..].iter_mut().enumerate() {
            *id = (k as i32 - NTRY + i32::from(values[0])) as f32 / max;
        }
        let xb: &[f32; 32] = xb.try_into().expect("32 values");
        let (sx, s2) = iq4_tries(xb, &weight, &ids);
        let mut d = if s2[0] > 0.0 { sx[0] / s2[0] } else { 0.0 };
        let mut best = d * sx[0];
        for t in 1..16 {
            if s2[t] > 0.0 && sx[t] * sx[t] > best * s2[t] {
                d = sx[t] / s2[t];
                best = d * sx[t];
            }
        }
        scales[ib] = d;
        let abs_d = d.abs();
        if abs_d > amax_scale {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if nb > 1 {
        *scales_h = 0;
        let d = -max_scale / 32.0;
        dh = f32_to_f16(d);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for ib in 0..nb {
            let mut l = nearest_int(id * scales[ib]);
            l = l.clamp(-32, 31);
            let dl = d * l as f32;
            let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
            let xb = &x[32 * ib..32 * ib + 32];
            for (lj, &v) in big_l[32 * ib..32 * ib + 32].iter_mut().zip(xb) {
                *lj = best_index_int8(values, idl * v) as u8;
            }
            l += 32;
            let l_l = (l & 0xf) as u8;
            let l_h = (l >> 4) as u16;
            if ib % 2 == 0 {
                scales_l[ib / 2] = l_l;
            } else {
                scales_l[ib / 2] |= l_l << 4;
            }
            *scales_h |= l_h << (2 * (ib % 8));
        }
    } else {
        dh = f32_to_f16(scales[0]);
        let id = if scales[0] != 0.0 {
            1.0 / scales[0]
        } else {
            0.0
        };
        for (lj, &v) in big_l.iter_mut().zip(x) {
            *lj = best_index_int8(values, id * v) as u8;
        }
    }
    for i in 0..sbs / 32 {
        for j in 0..16 {
            q4[16 * i + j] = big_l[32 * i + j] | (big_l[32 * i + 16 + j] << 4);
        }
    }
    dh
}

/// The sums of 16 tries of one IQ4 block: for each try's inverse scale `ids[t]`, each value's
/// nearest of the 16 levels (as `best_index_int8` picks it) and `sumqx += w*q*x`,
/// `sumq2 += w*q*q` in ggml's order. The tries are independent, so they run side by side in
/// vector lanes (each lane doing ggml's operations in ggml's order: the same bits).
#[inline(always)]
fn iq4_tries_body(xb: &[f32; 32], w: &[f32; 32], ids: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
    let v: [f32; 16] = KVALUES_IQ4NL.map(f32::from);
    let mut sx = [0f32; 16];
    let mut s2 = [0f32; 16];
    for j in 0..32 {
        let x = xb[j];
        let wj = w[j];
        let mut q = [0f32; 16];
        for t in 0..16 {
            q[t] = nearest_level(&v, ids[t] * x);
        }
        for t in 0..16 {
            sx[t] += wj * q[t] * x;
            s2[t] += wj * q[t] * q[t];
        }
    }
    (sx, s2)
}

/// `best_index_int8`'s level without branches: the last level `lo` not above `x` (counting
/// every level for NaN, as its search does) and the next `hi`, then the nearer one, ties and
/// NaN to `hi` as in ggml.
#[inline(always)]
fn nearest_level(v: &[f32; 16], x: f32) -> f32 {
    let mut lo = v[0];
    let mut hi = v[1];
    for i in 1..15 {
        let c = !(x < v[i]);
        lo = if c { v[i] } else { lo };
        hi = if c { v[i + 1] } else { hi };
    }
    if x - lo < hi - x {
        lo
    } else {
        hi
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[allow(unsafe_code)]
/// # Safety
/// The CPU must have the enabled features.
unsafe fn iq4_tries_avx512(
    xb: &[f32; 32],
    w: &[f32; 32],
    ids: &[f32; 16],
) -> ([f32; 16], [f32; 16]) {
    iq4_tries_body(xb, w, ids)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
/// # Safety
/// The CPU must have the enabled features.
unsafe fn iq4_tries_avx2(xb: &[f32; 32], w: &[f32; 32], ids: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
    iq4_tries_body(xb, w, ids)
}

#[allow(unsafe_code)]
fn iq4_tries(xb: &[f32; 32], w: &[f32; 32], ids: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::quant::simd::{active, Isa};
        match active() {
            // SAFETY: the dispatch chose AVX-512 (F, BW, VL) only where the CPU has it.
            Isa::Avx512 => return unsafe { iq4_tries_avx512(xb, w, ids) },
            // SAFETY: the dispatch chose AVX2 only where the CPU has it.
            Isa::Avx2 => return unsafe { iq4_tries_avx2(xb, w, ids) },
            _ => {}
        }
    }
    iq4_tries_body(xb, w, ids)
}

#[inline(always)]
fn iq4_nl_block(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) {
    let mut h = 0u16;
    let (d, qs) = y.split_at_mut(2);
    let dh = iq4_impl(x, qw, qs, &mut h, &mut []);
    d.copy_from_slice(&dh.to_le_bytes());
}

#[inline(always)]
fn iq4_xs_block(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) {
    let mut h = 0u16;
    let mut sl = [0u8; 4];
    let mut qs = [0u8; 128];
    let dh = iq4_impl(x, qw, &mut qs, &mut h, &mut sl);
    put_u16(y, 0, dh);
    put_u16(y, 2, h);
    y[4..8].copy_from_slice(&sl);
    y[8..136].copy_from_slice(&qs);
}

// ------------------------------------------------------------------------------------------
// Shared pieces of the grid searches.

/// Whether the dispatch allows the AVX2 neighbour search (asked once per row or block, not
/// per search).
#[inline(always)]
fn use_avx2() -> bool {
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
fn find_best_neighbour<const N: usize>(
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
fn nearest_neighbour<const N: usize>(
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
unsafe fn nearest_neighbour_avx2<const N: usize>(
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
unsafe fn nearest_by_terms_avx2<const N: usize>(
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
fn point_index(l: &[i8], bits: u32) -> usize {
    let mut u = 0u16;
    for (i, &v) in l.iter().enumerate() {
        u |= (i32::from(v) << (bits * i as u32)) as u16;
    }
    usize::from(u)
}

/// The grid index of a point, or where it is off the grid, its neighbour list.
enum Lookup<'a> {
    On(usize),
    Off(Neighbours<'a>),
}

/// The search shared by IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S: scales around `max`, each group of
/// `N` values rounded to the grid (or its best neighbour), the best scale kept, then off-grid
/// groups refined. Returns the scale; `l` holds the chosen levels.
struct Search {
    kmaxq: i32,
    range: i32,
    step: f32,
    /// Whether groups count as on the grid before any scale is taken (IQ3_S: not).
    init_on_grid: bool,
    /// Whether the refinement redoes every group (IQ3_S) or only those off the grid.
    refine_all: bool,
}

impl Search {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run<const N: usize>(
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
fn round_levels(id: f32, kmaxq: i32, xval: &[f32], l: &mut [i8]) {
    for (o, &v) in l.iter_mut().zip(xval) {
        *o = nearest_int(0.5 * (id * v - 1.0)).clamp(0, kmaxq - 1) as i8;
    }
}

/// What a search rounds to: the grid, the bits of a level in its map, the levels (`0..kmaxq`),
/// and whether the neighbour search may use AVX2.
struct ToGrid<'g, const N: usize> {
    grid: &'g Grid<N>,
    bits: u32,
    kmaxq: i32,
    avx2: bool,
}

impl<const N: usize> ToGrid<'_, N> {
    /// Group `k` (values `N*k..N*k+N` of `xval`, weights `waux`) to the grid: its levels at the
    /// inverse scale `id` into `l`, and where that point is off the grid, its best neighbour at
    /// `scale` instead. Returns the grid index and whether the rounded point was on the grid;
    /// `None` where ggml asserts.
    #[inline(always)]
    fn round(
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
fn fit(weight: &[f32], xval: &[f32], l: &[i8]) -> (f32, f32) {
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
fn weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32, bias: f32, weight: &mut [f32]) {
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
fn signs(xb: &[f32], weight: &[f32], xval: &mut [f32], block_signs: &mut [u8], even: bool) {
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
struct Group<const B: usize> {
    weight: [f32; B],
    waux: [f32; B],
    xval: [f32; B],
    signs: [u8; 4],
}

impl<const B: usize> Group<B> {
    const NEW: Self = Self {
        weight: [0.0; B],
        waux: [0.0; B],
        xval: [0.0; B],
        signs: [0; 4],
    };

    /// The group `xb`: its weights (see [`weights`]), their square roots, its magnitudes and
    /// signs (see [`signs`]). Returns the largest magnitude (C's `MAX` from the first).
    #[inline(always)]
    fn load(&mut self, xb: &[f32], qw: Option<&[f32]>, sigma2: f32, bias: f32, even: bool) -> f32 {
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
    fn grid_indices<const N: usize, const G: usize>(
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
fn sub_scales<const G: usize>(max_scale: f32, levels: i32, scales: &[f32; G]) -> (f32, [i32; G]) {
    let d = max_scale / (2 * levels - 1) as f32;
    let id = 1.0 / d;
    let mut l = [0i32; G];
    for ib in 0..G {
        l[ib] = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, levels - 1);
    }
    (d, l)
}

// ------------------------------------------------------------------------------------------
// IQ2_XXS: ggml's `quantize_row_iq2_xxs_impl`.

#[inline(always)]
fn iq2_xxs_row(x: &[f32], qw: &[f32], y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    const KMAXQ: i32 = 3;
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
const SEARCH_IQ2: Search = Search {
    kmaxq: 3,
    range: 9,
    step: 0.1,
    init_on_grid: true,
    refine_all: false,
};

/// What IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S set around the search they share.
struct GridType {
    search: Search,
    /// `sigma2` is `sigma_factor * sum(x^2) / 256` over the super-block.
    sigma_factor: f32,
    /// A group whose largest magnitude is below this takes scale 0 and no search.
    skip_below: f32,
    /// Whether each 8 signs are made even (see [`signs`]).
    even: bool,
    /// The sign bits kept when a negative scale flips them.
    keep: u8,
    /// The factor on the super-block scale `max_scale / 31` as stored.
    adjust: f32,
}

/// The rows of the four types of [`GridType`]: super-blocks of `bb` bytes, each `256 / B`
/// groups of `B` values (`G` grid points of `N` values, `bits` a level). Without an importance,
/// the weights are `x*x`, or given `bias`, `bias * sigma2 + x*x` (IQ2_S). `group` writes a
/// group's grid indices and signs (given the super-block's state `S`, fresh for each); `finish`
/// the groups' 4-bit scales once the super-scale is written (not for a super-block of zeros).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn grid_row<const B: usize, const N: usize, const G: usize, const NG: usize, S: Default>(
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
fn put_nibbles(yb: &mut [u8], at: usize, ls: &[i32]) {
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
fn iq2_xs_row(x: &[f32], qw: &[f32], y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    const T: GridType = GridType {
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
fn iq2_s_row(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    const T: GridType = GridType {
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
fn iq3_xxs_row(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    const T: GridType = GridType {
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
fn iq3_s_row(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) -> std::result::Result<(), NoAnswer> {
    const T: GridType = GridType {
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

// ------------------------------------------------------------------------------------------
// IQ1_S and IQ1_M: ggml's `quantize_row_iq1_s_impl` and `quantize_row_iq1_m_impl`.

/// glibc's `qsort` (a stable top-down merge sort, `msort_with_tmp`) of (value, index) pairs
/// with ggml's comparator `*l < *r ? -1 : *l > *r ? 1 : 0`: the left element is taken unless
/// it compares greater, so NaNs land exactly where ggml's land on the reference's platform.
fn msort(b: &mut [(f32, u8)], tmp: &mut [(f32, u8)]) {
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
fn iq1_find_best_neighbour2(
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
unsafe fn iq1_nearest_avx2(
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
const IQ1_XP: [f32; 3] = [-1.0 + 0.125, 0.125, 1.0 + 0.125];
const IQ1_XM: [f32; 3] = [-1.0 - 0.125, -0.125, 1.0 - 0.125];

/// An IQ1 block's weights (see [`weights`]; without an importance, each value's square) and
/// its largest magnitude (C's `MAX` from the first).
#[inline(always)]
fn iq1_group(xb: &[f32], qw: Option<&[f32]>, sigma2: f32, weight: &mut [f32]) -> f32 {
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
fn split_levels(pairs: &[(f32, u8)], i1: usize, i2: usize, negative: bool, l: &mut [i8]) {
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
fn iq1_to_grid<const G: usize>(
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
fn sorted_pairs<const B: usize>(xb: &[f32]) -> [(f32, u8); B] {
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
fn iq1_s_row(
    src: &[f32],
    row_at: usize,
    n_per_row: usize,
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    const BS: usize = 32;
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
fn iq1_m_row(
    src: &[f32],
    row_at: usize,
    n_per_row: usize,
    qw: Option<&[f32]>,
    y: &mut [u8],
) -> std::result::Result<(), NoAnswer> {
    const BS: usize = 16;
    let x = &src[row_at..row_at + n_per_row];
    let grid = grids::iq1();
    let avx2 = use_avx2();
    let (x_p, x_m) = (IQ1_XP, IQ1_XM);
    const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        assert_eq!(nearest_int(0.5), 0);
        assert_eq!(nearest_int(1.5), 2);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-0.5), 0);
    }

    #[test]
    fn fp16_matches_known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3C00);
        assert_eq!(f32_to_f16(-2.0), 0xC000);
        assert_eq!(f32_to_f16(65504.0), 0x7BFF);
        assert_eq!(f32_to_f16(1e6), 0x7C00);
        assert_eq!(f32_to_f16(f32::NAN) & 0x7FFF, 0x7E00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
    }

    /// The AVX2 neighbour search against the portable one, over every list of two grids: on
    /// random values and on values halfway between levels (many equal distances, where the
    /// first of the smallest must win), including lists whose last chunk is padding.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[allow(unsafe_code)]
    fn avx2_neighbour_search_matches_portable() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        fn check<const N: usize>(grid: &Grid<N>, bits: u32) {
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let (mut lists, mut ties) = (0, 0);
            for u in 0..1usize << (bits * N as u32) {
                let Some(Lookup::Off(nb)) = grid.lookup(u) else {
                    continue;
                };
                if nb.ids.is_empty() {
                    continue;
                }
                lists += 1;
                for round in 0..4 {
                    let mut xval = [0f32; N];
                    let mut w = [0f32; N];
                    for i in 0..N {
                        let r = next();
                        if round < 2 {
                            xval[i] = (2 * (r % 8)) as f32;
                            w[i] = 1.0;
                        } else {
                            xval[i] = (r >> 40) as f32 / (1u64 << 21) as f32;
                            w[i] = ((r >> 8) & 0xffff) as f32 / 4096.0;
                        }
                    }
                    let scale = if round < 2 {
                        1.0
                    } else {
                        0.5 + (next() % 64) as f32 / 32.0
                    };
                    let a = nearest_neighbour::<N>(&nb, &xval, &w, scale);
                    // SAFETY: the CPU has AVX2 (checked above).
                    let b = unsafe { nearest_neighbour_avx2::<N>(&nb, &xval, &w, scale) };
                    assert_eq!(a, b, "point {u}, round {round}");
                    ties += usize::from(round < 2 && nb.ids.len() % LANES != 0);
                }
            }
            assert!(lists > 100 && ties > 0);
        }
        check(grids::iq3_xxs(), 3);
        check(grids::iq3_s(), 3);
        check(grids::iq2_s(), 2);
    }

    /// Without NaN the sort before the split search takes a shortcut; it must leave glibc's
    /// merge sort's order, ties (and both zeros) included.
    #[test]
    fn sorted_pairs_match_glibc_order() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for round in 0..2000 {
            let mut xb = [0f32; 32];
            for v in &mut xb {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *v = match round % 3 {
                    0 => (s % 7) as f32 - 3.0,
                    1 => [0.0, -0.0, 1.5, -1.5][(s % 4) as usize],
                    _ => (s >> 40) as f32 / 1e6 - 8.0,
                };
            }
            let mut want = [(0f32, 0u8); 32];
            for j in 0..32 {
                want[j] = (xb[j], j as u8);
            }
            let mut tmp = [(0f32, 0u8); 32];
            msort(&mut want, &mut tmp);
            let got = sorted_pairs::<32>(&xb);
            let ids = |p: &[(f32, u8)]| p.iter().map(|q| q.1).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&want), "round {round}");
            let got16 = sorted_pairs::<16>(&xb[..16]);
            let mut want16 = [(0f32, 0u8); 16];
            for j in 0..16 {
                want16[j] = (xb[j], j as u8);
            }
            msort(&mut want16, &mut tmp);
            assert_eq!(ids(&got16), ids(&want16), "round {round}");
        }
    }

    #[test]
    fn msort_is_stable_and_keeps_nan_where_glibc_does() {
        let mut b = [(2.0, 0u8), (1.0, 1), (2.0, 2), (f32::NAN, 3), (0.0, 4)];
        let mut t = [(0f32, 0u8); 5];
        msort(&mut b, &mut t);
        let order: Vec<u8> = b.iter().map(|p| p.1).collect();
        // [2,1] -> [1,2]; [2,NaN,0] -> [2] + [NaN,0] -> (NaN vs 0: NaN kept) [NaN,0] ->
        // 2 vs NaN: take 2; then NaN, 0 -> [2,NaN,0]; merge [1,2] with [2,NaN,0].
        assert_eq!(order, vec![1, 0, 2, 3, 4]);
    }
}
