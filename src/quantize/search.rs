//! The arithmetic the quantizers share, in ggml's order of operations: rounding
//! (`nearest_int`'s magic-number trick, C's float-to-integer conversions as x86 makes them),
//! ggml's float-to-half conversion, and the scale searches (`make_qx_quants`,
//! `make_q3_quants`, `make_qkx2_quants`, `make_qkx3_quants`, `make_qp_quants`).
//!
//! Every sum runs in ggml's order and every product is a separate rounding (no fused
//! multiply-add); C's `MAX`/`MIN` macros and comparisons keep their NaN behaviour.
#![allow(clippy::cast_possible_truncation)]
// C's conversions to narrower integers are the bytes
// Index loops as ggml writes them (and plain lane loops, which the vectorizer takes).
#![allow(clippy::needless_range_loop, clippy::manual_clamp)]

/// ggml's bound below which a group counts as all zeros.
pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

/// The NaN x86's SSE makes where arithmetic has no answer (infinity minus infinity, zero times
/// infinity, zero over zero, infinity over infinity): the negative quiet NaN, as bits. (x86 makes
/// it itself: only other targets and the tests name it.)
#[cfg_attr(
    all(any(target_arch = "x86_64", target_arch = "x86"), not(test)),
    allow(dead_code)
)]
pub(crate) const X86_DEFAULT_NAN: u32 = 0xFFC0_0000;

/// `r`, the result of `a op b`, made what x86 gives (ggml's pinned build is x86-64 SSE code, and
/// its bytes are the reference on every platform). The rule, from Intel's SDM (SSE: "QNaN
/// operands"): a NaN operand is the result (the first operand's where both are NaN, quieted); a
/// NaN from two non-NaN operands is [`X86_DEFAULT_NAN`]. Arm, s390x and wasm generate a positive
/// NaN instead (and wasm may pick either operand's), so outside x86 the rule is applied here:
/// a NaN result is replaced by the first NaN operand, or by x86's default NaN when neither is
/// one. Only the sign of a NaN is ever observable (ggml's half conversion keeps it, the
/// rounding tricks and comparisons ignore it), and only where a NaN can reach a stored scale is
/// the rule applied (the importance searches' weighted sums and their quotients). On x86 this is
/// `r` itself: the hardware already does it, so x86's code is unchanged.
#[inline(always)]
pub(crate) fn x86_nan(r: f32, a: f32, b: f32) -> f32 {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        let _ = (a, b);
        r
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        // Quieting a NaN sets bit 22; the payloads here are always the default one.
        let quiet = |v: f32| f32::from_bits(v.to_bits() | 0x0040_0000);
        if !r.is_nan() {
            r
        } else if a.is_nan() {
            quiet(a)
        } else if b.is_nan() {
            quiet(b)
        } else {
            f32::from_bits(X86_DEFAULT_NAN)
        }
    }
}

/// `a * b` as x86 gives it ([`x86_nan`]).
#[inline(always)]
pub(crate) fn mul_x86(a: f32, b: f32) -> f32 {
    x86_nan(a * b, a, b)
}

/// `a + b` as x86 gives it ([`x86_nan`]).
#[inline(always)]
pub(crate) fn add_x86(a: f32, b: f32) -> f32 {
    x86_nan(a + b, a, b)
}

/// `a - b` as x86 gives it ([`x86_nan`]).
#[inline(always)]
pub(crate) fn sub_x86(a: f32, b: f32) -> f32 {
    x86_nan(a - b, a, b)
}

/// `a / b` as x86 gives it ([`x86_nan`]).
#[inline(always)]
pub(crate) fn div_x86(a: f32, b: f32) -> f32 {
    x86_nan(a / b, a, b)
}

/// C's `MAX(a, b)` macro on floats: `a > b ? a : b` (a NaN `b` wins, a NaN `a` loses).
#[inline(always)]
pub(crate) fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `MAX(amax, fabsf(v))` over `x` in order from 0, as ggml's Q8_0 and ternary quantizers
/// take a block's absolute maximum. A NaN makes the running value NaN until the next
/// comparison replaces it, so the order matters only when there is one: without NaN, lanes.
#[inline(always)]
pub(crate) fn abs_max_c(x: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut nan = [false; 8];
    for c in x.chunks_exact(8) {
        for k in 0..8 {
            lanes[k] = c_max(lanes[k], c[k].abs());
            nan[k] |= c[k].is_nan();
        }
    }
    if nan.iter().any(|&n| n) || x.len() % 8 != 0 {
        let mut amax = 0f32;
        for &v in x {
            amax = c_max(amax, v.abs());
        }
        return amax;
    }
    let mut amax = 0f32;
    for a in lanes {
        amax = c_max(amax, a);
    }
    amax
}

/// ggml's `nearest_int`: the float rounded to the nearest integer (ties to even) by adding
/// 1.5 * 2^23 and reading the low mantissa bits. Outside +-2^22 (and for NaN) the result is
/// what those bits say, as in ggml's release builds.
#[inline(always)]
pub(crate) fn nearest_int(f: f32) -> i32 {
    let val = f + 12_582_912.0;
    (val.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// C's float-to-`int` conversion as x86 makes it (`cvttss2si`): truncation toward zero, and
/// `INT_MIN` for NaN and values out of range.
#[inline(always)]
pub(crate) fn trunc_i32(f: f32) -> i32 {
    // `as` saturates (and gives 0 for NaN); only NaN and the top of the range differ.
    let t = f as i32;
    if f.is_nan() || f >= 2_147_483_648.0 {
        i32::MIN
    } else {
        t
    }
}

/// [`trunc_i32`] on eight floats.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code, unused_unsafe)]
pub(crate) fn trunc_i32x8(v: [f32; 8]) -> [i32; 8] {
    use core::arch::x86_64::{_mm_cvttps_epi32, _mm_loadu_ps, _mm_storeu_si128};
    let mut out = [0i32; 8];
    // SAFETY: SSE2 is part of x86-64; each load reads 4 floats of `v` and each store writes 4
    // ints of `out` (unaligned forms).
    unsafe {
        let lo = _mm_cvttps_epi32(_mm_loadu_ps(v.as_ptr()));
        let hi = _mm_cvttps_epi32(_mm_loadu_ps(v.as_ptr().add(4)));
        _mm_storeu_si128(out.as_mut_ptr().cast(), lo);
        _mm_storeu_si128(out.as_mut_ptr().add(4).cast(), hi);
    }
    out
}

/// [`trunc_i32`] on eight floats.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn trunc_i32x8(v: [f32; 8]) -> [i32; 8] {
    v.map(trunc_i32)
}

/// C's `(int)roundf(v)` on eight floats (halves away from zero; `INT_MIN` for NaN and values
/// out of range), without a call to the C library: the truncation, plus one where the dropped
/// fraction is at least a half, minus one where it is at most minus a half (below 2^23 the
/// fraction is exact; above, every float is an integer and the fraction 0).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code, unused_unsafe)]
pub(crate) fn round_i32x8(v: [f32; 8]) -> [i32; 8] {
    use core::arch::x86_64::{
        __m128, _mm_add_epi32, _mm_and_si128, _mm_andnot_si128, _mm_castps_si128, _mm_cmpeq_epi32,
        _mm_cmpge_ps, _mm_cmple_ps, _mm_cvtepi32_ps, _mm_cvttps_epi32, _mm_loadu_ps, _mm_or_si128,
        _mm_set1_epi32, _mm_set1_ps, _mm_storeu_si128, _mm_sub_epi32, _mm_sub_ps,
    };
    let mut out = [0i32; 8];
    // SAFETY: SSE2 is part of x86-64; each load reads 4 floats of `v` and each store writes 4
    // ints of `out` (unaligned forms).
    unsafe {
        let half = _mm_set1_ps(0.5);
        let minus_half = _mm_set1_ps(-0.5);
        let int_min = _mm_set1_epi32(i32::MIN);
        for h in 0..2 {
            let x: __m128 = _mm_loadu_ps(v.as_ptr().add(4 * h));
            let t = _mm_cvttps_epi32(x);
            let d = _mm_sub_ps(x, _mm_cvtepi32_ps(t));
            // Comparison masks are -1 where true: subtracting adds one.
            let up = _mm_castps_si128(_mm_cmpge_ps(d, half));
            let down = _mm_castps_si128(_mm_cmple_ps(d, minus_half));
            let r = _mm_add_epi32(_mm_sub_epi32(t, up), down);
            // Where the truncation already said INT_MIN (NaN, out of range), that stays.
            let keep = _mm_cmpeq_epi32(t, int_min);
            let r = _mm_or_si128(_mm_and_si128(keep, int_min), _mm_andnot_si128(keep, r));
            _mm_storeu_si128(out.as_mut_ptr().add(4 * h).cast(), r);
        }
    }
    out
}

/// C's `(int)roundf(v)` on eight floats (see the x86-64 form).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn round_i32x8(v: [f32; 8]) -> [i32; 8] {
    let t = trunc_i32x8(v);
    let mut out = [0i32; 8];
    for k in 0..8 {
        let d = v[k] - t[k] as f32;
        let up = i32::from(d >= 0.5) - i32::from(d <= -0.5);
        out[k] = if t[k] == i32::MIN {
            i32::MIN
        } else {
            t[k] + up
        };
    }
    out
}

/// `f(x[j])` for each of 32 values, eight at a time, into C-truncated integers.
#[inline(always)]
pub(crate) fn map_trunc32(x: &[f32], f: impl Fn(f32) -> f32) -> [i32; 32] {
    let mut out = [0i32; 32];
    for (o, c) in out.chunks_exact_mut(8).zip(x.chunks_exact(8)) {
        let mut v = [0f32; 8];
        for k in 0..8 {
            v[k] = f(c[k]);
        }
        o.copy_from_slice(&trunc_i32x8(v));
    }
    out
}

/// ggml's `ggml_compute_fp32_to_fp16`: round to nearest even, every NaN to a quiet NaN that keeps
/// only the sign.
#[inline(always)]
pub(crate) fn f32_to_f16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    let h = (sign >> 16)
        | if shl1_w > 0xFF00_0000 {
            0x7E00
        } else {
            nonsign
        };
    (h & 0xFFFF) as u16
}

/// A float through ggml's half and back (what a block's stored scale reads as).
#[inline(always)]
pub(crate) fn via_f16(f: f32) -> f32 {
    crate::quant::f16_to_f32(f32_to_f16(f))
}

/// ggml's `ggml_compute_fp32_to_bf16`: round to nearest even, NaN forced quiet.
#[inline(always)]
pub(crate) fn f32_to_bf16(f: f32) -> u16 {
    let i = f.to_bits();
    let h = if i & 0x7fff_ffff > 0x7f80_0000 {
        (i >> 16) | 64
    } else {
        i.wrapping_add(0x7fff + ((i >> 16) & 1)) >> 16
    };
    (h & 0xFFFF) as u16
}

/// Writes a half at `at`, little-endian as GGUF stores it.
#[inline(always)]
pub(crate) fn put_f16(dst: &mut [u8], at: usize, f: f32) {
    dst[at..at + 2].copy_from_slice(&f32_to_f16(f).to_le_bytes());
}

/// `sum(x^2)`, in order.
#[inline(always)]
pub(crate) fn sum_squares(x: &[f32]) -> f32 {
    let mut s = 0f32;
    for &v in x {
        s += v * v;
    }
    s
}

/// The value of largest magnitude in `x` (the first of equals; 0 for none) and that magnitude.
#[inline(always)]
pub(crate) fn signed_abs_max(x: &[f32]) -> (f32, f32) {
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    (max, amax)
}

/// `make_qx_quants` with `rmse_type` 1 (the only one the quantizers use): `L` gets values in
/// `0..2*nmax`; the weights are `qw`, or each value's square. Returns the scale.
pub(crate) fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8], qw: Option<&[f32]>) -> f32 {
    let n = x.len();
    let (max, amax) = signed_abs_max(x);
    if amax < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let w_at = |i: usize| match qw {
        Some(q) => q[i],
        None => x[i] * x[i],
    };
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let nmaxf = nmax as f32;
    let mut iscale = -nmaxf / max;
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for i in 0..n {
        let l = clamp(nearest_int(iscale * x[i]));
        l_out[i] = (l + nmax) as i8;
        let w = w_at(i);
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9i32..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmaxf + 0.1f32 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for i in 0..n {
            let l = clamp(nearest_int(iscale * x[i]));
            let w = w_at(i);
            let lf = l as f32;
            sumlx += w * x[i] * lf;
            suml2 += w * lf * lf;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for i in 0..n {
                let l = clamp(nearest_int(iscale * x[i]));
                l_out[i] = (nmax + l) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// `make_q3_quants` with `do_rmse` (as Q3_K calls it) on one group: `L` gets values in
/// `0..2*nmax`. (The quantizer runs [`make_q3_split`] or [`make_q3_lanes`]; the tests hold
/// them to this.)
#[cfg(test)] // the reference the lane forms are tested against
#[inline(always)]
pub(crate) fn make_q3_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let n = x.len();
    let (max, amax) = signed_abs_max(x);
    if amax < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let iscale = -(nmax as f32) / max;
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for i in 0..n {
        let l = clamp(nearest_int(iscale * x[i]));
        l_out[i] = l as i8;
        let w = x[i] * x[i];
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    for _ in 0..5 {
        let mut n_changed = 0;
        for i in 0..n {
            let w = x[i] * x[i];
            let li = l_out[i] as f32;
            let mut slx = sumlx - w * x[i] * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = clamp(nearest_int(x[i] * sl2 / slx));
                if new_l != i32::from(l_out[i]) {
                    let nf = new_l as f32;
                    slx += w * x[i] * nf;
                    sl2 += w * nf * nf;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l_out[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    for l in &mut l_out[..n] {
        *l += nmax as i8;
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// The parameters of a `make_qkx2_quants` / `make_qkx3_quants` search.
pub(crate) struct Qkx {
    pub nmax: i32,
    pub rmin: f32,
    pub rdelta: f32,
    pub nstep: i32,
    pub use_mad: bool,
    /// `make_qkx3_quants` (an empty range when `max <= min`) rather than `make_qkx2_quants`
    /// (only when `max == min`).
    pub x3: bool,
}

/// `make_qp_quants`: `L` gets values up to `nmax` (as `uint8_t`, so a negative one wraps, as in
/// ggml). Returns the scale.
pub(crate) fn make_qp_quants(nmax: i32, x: &[f32], l_out: &mut [u8], qw: &[f32]) -> f32 {
    let n = x.len();
    let mut max = 0f32;
    for &v in x {
        max = c_max(max, v);
    }
    if max < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let mut iscale = nmaxf / max;
    for i in 0..n {
        l_out[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0f32;
    for i in 0..n {
        let diff = x[i] - scale * f32::from(l_out[i]);
        best_mse += qw[i] * diff * diff;
    }
    for is in -4i32..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1f32 * is as f32 + nmaxf) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0f32;
        for i in 0..n {
            let l = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * l as f32;
            mse += qw[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for i in 0..n {
        let l = nearest_int(iscale * x[i]).min(nmax);
        l_out[i] = l as u8;
        let w = qw[i];
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    for _ in 0..5 {
        let mut n_changed = 0;
        for i in 0..n {
            let w = qw[i];
            let li = f32::from(l_out[i]);
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != i32::from(l_out[i]) {
                    let nf = new_l as f32;
                    slx += w * x[i] * nf;
                    sl2 += w * nf * nf;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l_out[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------
// The same searches on `L` groups side by side (value `i` of group `k` at `x[i][k]`): each lane
// does exactly the scalar search's arithmetic, in its order, so the compiler can put the lanes
// in vector registers (independent sums) without changing a bit. Branches become per-lane
// selections.
// ---------------------------------------------------------------------------------------------

/// Value `i` of group `k` of `x` (groups of `N` consecutive values) at `[i][k]`.
#[cfg(test)]
fn transpose<const L: usize, const N: usize>(x: &[f32]) -> [[f32; L]; N] {
    let mut out = [[0f32; L]; N];
    for (k, g) in x.chunks_exact(N).take(L).enumerate() {
        for (i, &v) in g.iter().enumerate() {
            out[i][k] = v;
        }
    }
    out
}

/// ggml's `make_qkx2_quants` / `make_qkx3_quants` (with weights) on `L` groups of `N` values
/// at once: quants in `0..=nmax`. Returns each group's scale and
/// minimum.
#[inline(always)]
pub(crate) fn make_qkx_lanes<const L: usize, const N: usize>(
    p: &Qkx,
    x: &[[f32; L]; N],
    w: &[[f32; L]; N],
    l_out: &mut [[u8; L]; N],
) -> ([f32; L], [f32; L]) {
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = w[0];
    let mut sum_x = [0f32; L];
    for k in 0..L {
        sum_x[k] = sum_w[k] * x[0][k];
    }
    for i in 1..N {
        for k in 0..L {
            let v = x[i][k];
            if v < min[k] {
                min[k] = v;
            }
            if v > max[k] {
                max[k] = v;
            }
            sum_w[k] += w[i][k];
            sum_x[k] += w[i][k] * v;
        }
    }
    let mut empty = [false; L];
    for k in 0..L {
        if min[k] > 0.0 {
            min[k] = 0.0;
        }
        empty[k] = if p.x3 {
            max[k] <= min[k]
        } else {
            max[k] == min[k]
        };
    }
    let min0 = min;
    let nmax = p.nmax;
    let nmaxf = nmax as f32;
    let mut scale = [0f32; L];
    let mut iscale = [0f32; L];
    for k in 0..L {
        iscale[k] = div_x86(nmaxf, sub_x86(max[k], min[k]));
        scale[k] = div_x86(1.0, iscale[k]);
    }
    let mut best_error = [0f32; L];
    for i in 0..N {
        for k in 0..L {
            let l = nearest_int(iscale[k] * (x[i][k] - min[k])).min(nmax).max(0);
            l_out[i][k] = l as u8;
            let mut diff = scale[k] * (l as f32) + min[k] - x[i][k];
            diff = if p.use_mad { diff.abs() } else { diff * diff };
            best_error[k] += w[i][k] * diff;
        }
    }
    if p.nstep >= 1 {
        let mut laux = [[0u8; L]; N];
        for is in 0..=p.nstep {
            let c = p.rmin + p.rdelta * is as f32 + nmaxf;
            for k in 0..L {
                iscale[k] = c / (max[k] - min[k]);
            }
            let mut sum_l = [0f32; L];
            let mut sum_l2 = [0f32; L];
            let mut sum_xl = [0f32; L];
            for i in 0..N {
                for k in 0..L {
                    let l = nearest_int(iscale[k] * (x[i][k] - min[k])).min(nmax).max(0);
                    laux[i][k] = l as u8;
                    let lf = l as f32;
                    let wl = w[i][k] * lf;
                    sum_l[k] += wl;
                    sum_l2[k] += wl * lf;
                    sum_xl[k] += wl * x[i][k];
                }
            }
            let mut this_scale = [0f32; L];
            let mut this_min = [0f32; L];
            let mut ok = [false; L];
            for k in 0..L {
                let d = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
                ok[k] = d > 0.0;
                this_scale[k] = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / d;
                this_min[k] = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / d;
                if this_min[k] > 0.0 {
                    this_min[k] = 0.0;
                    this_scale[k] = sum_xl[k] / sum_l2[k];
                }
            }
            let mut cur_error = [0f32; L];
            for i in 0..N {
                for k in 0..L {
                    let mut diff = this_scale[k] * f32::from(laux[i][k]) + this_min[k] - x[i][k];
                    diff = if p.use_mad { diff.abs() } else { diff * diff };
                    cur_error[k] += w[i][k] * diff;
                }
            }
            let mut take = [false; L];
            for k in 0..L {
                take[k] = ok[k] && cur_error[k] < best_error[k];
                if take[k] {
                    best_error[k] = cur_error[k];
                    scale[k] = this_scale[k];
                    min[k] = this_min[k];
                }
            }
            if take.iter().any(|&t| t) {
                let mask: [u8; L] = take.map(|t| 0u8.wrapping_sub(u8::from(t)));
                for i in 0..N {
                    for k in 0..L {
                        l_out[i][k] = (laux[i][k] & mask[k]) | (l_out[i][k] & !mask[k]);
                    }
                }
            }
        }
    }
    let mut the_min = [0f32; L];
    for k in 0..L {
        if empty[k] {
            scale[k] = 0.0;
            min[k] = min0[k];
        }
        the_min[k] = -min[k];
    }
    if empty.iter().any(|&e| e) {
        for row in l_out.iter_mut() {
            for k in 0..L {
                if empty[k] {
                    row[k] = 0;
                }
            }
        }
    }
    (scale, the_min)
}

/// [`make_qx_quants`] on `L` groups of `N` values at once (`L` gets values in `0..2*nmax`);
/// the weights are `w`, or each value's square. Returns each group's scale.
#[inline(always)]
pub(crate) fn make_qx_lanes<const L: usize, const N: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    w: Option<&[[f32; L]; N]>,
    l_out: &mut [[i8; L]; N],
) -> [f32; L] {
    let (max, amax) = lanes_abs_max(x);
    let mut ww = [[0f32; L]; N];
    for i in 0..N {
        for k in 0..L {
            ww[i][k] = match w {
                Some(w) => w[i][k],
                None => x[i][k] * x[i][k],
            };
        }
    }
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let nmaxf = nmax as f32;
    let mut iscale = [0f32; L];
    for k in 0..L {
        iscale[k] = -nmaxf / max[k];
    }
    let mut sumlx = [0f32; L];
    let mut suml2 = [0f32; L];
    for i in 0..N {
        for k in 0..L {
            let l = clamp(nearest_int(iscale[k] * x[i][k]));
            l_out[i][k] = (l + nmax) as i8;
            let lf = l as f32;
            let t = mul_x86(mul_x86(ww[i][k], x[i][k]), lf);
            sumlx[k] = add_x86(sumlx[k], t);
            let t = mul_x86(mul_x86(ww[i][k], lf), lf);
            suml2[k] = add_x86(suml2[k], t);
        }
    }
    let mut scale = [0f32; L];
    let mut best = [0f32; L];
    for k in 0..L {
        scale[k] = if suml2[k] != 0.0 {
            div_x86(sumlx[k], suml2[k])
        } else {
            0.0
        };
        best[k] = scale[k] * sumlx[k];
    }
    for is in -9i32..=9 {
        if is == 0 {
            continue;
        }
        let c = -(nmaxf + 0.1f32 * is as f32);
        for k in 0..L {
            iscale[k] = c / max[k];
        }
        let mut sumlx = [0f32; L];
        let mut suml2 = [0f32; L];
        let mut lt = [[0i8; L]; N];
        for i in 0..N {
            for k in 0..L {
                let l = clamp(nearest_int(iscale[k] * x[i][k]));
                lt[i][k] = (l + nmax) as i8;
                let lf = l as f32;
                let t = mul_x86(mul_x86(ww[i][k], x[i][k]), lf);
                sumlx[k] = add_x86(sumlx[k], t);
                let t = mul_x86(mul_x86(ww[i][k], lf), lf);
                suml2[k] = add_x86(suml2[k], t);
            }
        }
        let mut take = [false; L];
        for k in 0..L {
            take[k] = suml2[k] > 0.0 && sumlx[k] * sumlx[k] > best[k] * suml2[k];
            if take[k] {
                scale[k] = div_x86(sumlx[k], suml2[k]);
                best[k] = scale[k] * sumlx[k];
            }
        }
        if take.iter().any(|&t| t) {
            let mask: [i8; L] = take.map(|t| -i8::from(t));
            for i in 0..N {
                for k in 0..L {
                    l_out[i][k] = (lt[i][k] & mask[k]) | (l_out[i][k] & !mask[k]);
                }
            }
        }
    }
    let mut zero = [false; L];
    for k in 0..L {
        zero[k] = amax[k] < GROUP_MAX_EPS;
        if zero[k] {
            scale[k] = 0.0;
        }
    }
    if zero.iter().any(|&z| z) {
        for row in l_out.iter_mut() {
            for k in 0..L {
                if zero[k] {
                    row[k] = 0;
                }
            }
        }
    }
    scale
}

/// Each lane's value of largest magnitude (the first of equals) and that magnitude.
#[inline(always)]
fn lanes_abs_max<const L: usize, const N: usize>(x: &[[f32; L]; N]) -> ([f32; L], [f32; L]) {
    let mut max = [0f32; L];
    let mut amax = [0f32; L];
    for row in x {
        for k in 0..L {
            let ax = row[k].abs();
            let take = ax > amax[k];
            amax[k] = if take { ax } else { amax[k] };
            max[k] = if take { row[k] } else { max[k] };
        }
    }
    (max, amax)
}

/// `make_q3_quants`' first pass on `L` groups (no branch): the quants at scale `-nmax / max`
/// (signed, in `-nmax..nmax`) into `l_out`; returns the weights (each value's square), the
/// weights times the values, and each group's sums of `w * x * l` and `w * l * l`.
#[allow(clippy::type_complexity)]
#[inline(always)]
fn q3_first_pass<const L: usize, const N: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    max: &[f32; L],
    l_out: &mut [[i8; L]; N],
) -> ([[f32; L]; N], [[f32; L]; N], [f32; L], [f32; L]) {
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let mut iscale = [0f32; L];
    for k in 0..L {
        iscale[k] = -(nmax as f32) / max[k];
    }
    let mut sumlx = [0f32; L];
    let mut suml2 = [0f32; L];
    let mut ww = [[0f32; L]; N];
    let mut wx = [[0f32; L]; N];
    for i in 0..N {
        for k in 0..L {
            let l = clamp(nearest_int(iscale[k] * x[i][k]));
            l_out[i][k] = l as i8;
            let w = x[i][k] * x[i][k];
            ww[i][k] = w;
            wx[i][k] = w * x[i][k];
            let lf = l as f32;
            sumlx[k] += wx[i][k] * lf;
            suml2[k] += w * lf * lf;
        }
    }
    (ww, wx, sumlx, suml2)
}

/// [`make_q3_lanes`] where vectors are narrower than AVX-512: the first pass (each group's
/// maximum, quants and sums: no branch) in lanes, then each group's refinement on its own as
/// [`make_q3_quants`] runs it (skipping the values that do not change).
#[inline(always)]
pub(crate) fn make_q3_split<const L: usize, const N: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    l_out: &mut [[i8; L]; N],
) -> [f32; L] {
    let (max, amax) = lanes_abs_max(x);
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let (ww, wx, sumlx, suml2) = q3_first_pass(nmax, x, &max, l_out);
    let mut scale = [0f32; L];
    for k in 0..L {
        if amax[k] < GROUP_MAX_EPS {
            for row in l_out.iter_mut() {
                row[k] = 0;
            }
            continue;
        }
        let (mut slx_k, mut sl2_k) = (sumlx[k], suml2[k]);
        for _ in 0..5 {
            let mut n_changed = 0;
            for i in 0..N {
                let w = ww[i][k];
                let li = f32::from(l_out[i][k]);
                let mut slx = slx_k - wx[i][k] * li;
                if slx > 0.0 {
                    let mut sl2 = sl2_k - w * li * li;
                    let new_l = clamp(nearest_int(x[i][k] * sl2 / slx));
                    if new_l != i32::from(l_out[i][k]) {
                        let nf = new_l as f32;
                        slx += wx[i][k] * nf;
                        sl2 += w * nf * nf;
                        if sl2 > 0.0 && slx * slx * sl2_k > slx_k * slx_k * sl2 {
                            l_out[i][k] = new_l as i8;
                            slx_k = slx;
                            sl2_k = sl2;
                            n_changed += 1;
                        }
                    }
                }
            }
            if n_changed == 0 {
                break;
            }
        }
        for row in l_out.iter_mut() {
            row[k] += nmax as i8;
        }
        scale[k] = if sl2_k > 0.0 { slx_k / sl2_k } else { 0.0 };
    }
    scale
}

/// ggml's `make_q3_quants` (with `do_rmse`, as Q3_K calls it) on `L` groups of `N` values at once.
#[inline(always)]
pub(crate) fn make_q3_lanes<const L: usize, const N: usize>(
    nmax: i32,
    x: &[[f32; L]; N],
    l_out: &mut [[i8; L]; N],
) -> [f32; L] {
    let (max, amax) = lanes_abs_max(x);
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let (ww, _, mut sumlx, mut suml2) = q3_first_pass(nmax, x, &max, l_out);
    // The refinement visits values one at a time and each change feeds the next: lanes run
    // it each on their own values, stopping where the scalar search stops.
    let mut active = [true; L];
    for _ in 0..5 {
        let mut changed = [false; L];
        for i in 0..N {
            for k in 0..L {
                let w = ww[i][k];
                let li = f32::from(l_out[i][k]);
                let mut slx = sumlx[k] - w * x[i][k] * li;
                let mut sl2 = suml2[k] - w * li * li;
                let new_l = clamp(nearest_int(x[i][k] * sl2 / slx));
                let nf = new_l as f32;
                slx += w * x[i][k] * nf;
                sl2 += w * nf * nf;
                let take = active[k]
                    && sumlx[k] - w * x[i][k] * li > 0.0
                    && new_l != i32::from(l_out[i][k])
                    && sl2 > 0.0
                    && slx * slx * suml2[k] > sumlx[k] * sumlx[k] * sl2;
                if take {
                    l_out[i][k] = new_l as i8;
                    sumlx[k] = slx;
                    suml2[k] = sl2;
                    changed[k] = true;
                }
            }
        }
        for k in 0..L {
            active[k] = active[k] && changed[k];
        }
        if !active.iter().any(|&a| a) {
            break;
        }
    }
    let mut scale = [0f32; L];
    for k in 0..L {
        scale[k] = if suml2[k] > 0.0 {
            sumlx[k] / suml2[k]
        } else {
            0.0
        };
    }
    for row in l_out.iter_mut() {
        for k in 0..L {
            row[k] = if amax[k] < GROUP_MAX_EPS {
                0
            } else {
                row[k] + nmax as i8
            };
        }
    }
    for k in 0..L {
        if amax[k] < GROUP_MAX_EPS {
            scale[k] = 0.0;
        }
    }
    scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::f16_to_f32;

    #[test]
    fn half_rounding_is_ieee_and_ggmls() {
        // Every half comes back to itself; NaN keeps only its sign.
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            let want = if f.is_nan() { (h & 0x8000) | 0x7E00 } else { h };
            assert_eq!(f32_to_f16(f), want, "{h:#06x}");
        }
        // Halfway cases round to even; overflow to infinity; below the smallest subnormal's
        // half, to zero.
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3C00);
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3C02);
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(65519.996), 0x7BFF);
        assert_eq!(f32_to_f16(-2.9e-8), 0x8000);
        assert_eq!(f32_to_f16(3.0e-8), 0x0001);
    }

    #[test]
    fn bfloat16_rounds_to_even_and_quiets_nan() {
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F80_8000)), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F81_8000)), 0x3F82);
        assert_eq!(f32_to_bf16(f32::from_bits(0x7F80_0001)), 0x7FC0);
        assert_eq!(f32_to_bf16(f32::from_bits(0xFF81_0000)), 0xFFC1);
        assert_eq!(f32_to_bf16(f32::INFINITY), 0x7F80);
    }

    /// x86's NaN rule, on every platform: a NaN from two numbers is the negative default NaN,
    /// a NaN operand is the result (the first where both are).
    #[test]
    fn arithmetic_nans_are_x86s() {
        use std::hint::black_box as b;
        let (inf, pos, neg) = (f32::INFINITY, f32::NAN, -f32::NAN);
        let bits = |v: f32| v.to_bits();
        assert_eq!(bits(sub_x86(b(inf), b(inf))), X86_DEFAULT_NAN);
        assert_eq!(bits(add_x86(b(inf), b(-inf))), X86_DEFAULT_NAN);
        assert_eq!(bits(mul_x86(b(0.0), b(inf))), X86_DEFAULT_NAN);
        assert_eq!(bits(div_x86(b(0.0), b(0.0))), X86_DEFAULT_NAN);
        assert_eq!(bits(div_x86(b(inf), b(-inf))), X86_DEFAULT_NAN);
        assert_eq!(bits(add_x86(b(pos), b(1.0))), bits(pos));
        assert_eq!(bits(mul_x86(b(2.0), b(neg))), bits(neg));
        assert_eq!(bits(div_x86(b(1.0), b(pos))), bits(pos));
        assert_eq!(bits(sub_x86(b(neg), b(inf))), bits(neg));
        // Numbers stay what IEEE makes them.
        assert_eq!(add_x86(b(1.5), b(2.25)), 3.75);
        assert_eq!(div_x86(b(1.0), b(0.0)), inf);
    }

    #[test]
    fn c_conversions() {
        assert_eq!(nearest_int(2.5), 2);
        assert_eq!(nearest_int(3.5), 4);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-0.7), -1);
        let v = [0.5, -0.5, 1.5, -2.5, 2.49, f32::NAN, 3e9, -3e9];
        assert_eq!(trunc_i32x8(v), v.map(trunc_i32));
        assert_eq!(
            trunc_i32x8(v),
            [0, 0, 1, -2, 2, i32::MIN, i32::MIN, i32::MIN]
        );
        assert_eq!(
            round_i32x8(v),
            [1, -1, 2, -3, 2, i32::MIN, i32::MIN, i32::MIN]
        );
        let big = [
            8388609.0,
            -8388609.0,
            16777216.0,
            0.49999997,
            -0.49999997,
            0.0,
            -0.0,
            1e-45,
        ];
        assert_eq!(
            round_i32x8(big),
            [8388609, -8388609, 16777216, 0, 0, 0, 0, 0]
        );
    }

    /// The lane searches give what one group alone gives (each lane is independent).
    #[test]
    fn lanes_are_independent() {
        let mut s = 1u32;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / 16_777_216.0 - 0.5
        };
        let x: Vec<f32> = (0..16 * 16).map(|_| next()).collect();
        let xt: [[f32; 16]; 16] = transpose(&x);
        let mut lt = [[0i8; 16]; 16];
        let all = make_qx_lanes(32, &xt, None, &mut lt);
        for g in 0..16 {
            let mut one = [0f32; 16];
            one.copy_from_slice(&x[16 * g..16 * g + 16]);
            let alone: [[f32; 1]; 16] = one.map(|v| [v]);
            let mut l1 = [[0i8; 1]; 16];
            let s1 = make_qx_lanes(32, &alone, None, &mut l1);
            assert_eq!(s1[0].to_bits(), all[g].to_bits());
            for i in 0..16 {
                assert_eq!(l1[i][0], lt[i][g]);
            }
            let mut scalar = [0i8; 16];
            assert_eq!(
                make_qx_quants(32, &one, &mut scalar, None).to_bits(),
                all[g].to_bits()
            );
            for i in 0..16 {
                assert_eq!(scalar[i], lt[i][g]);
            }
        }
    }

    /// Q3_K's two lane forms give each group what ggml's one-group search gives (groups of
    /// random values, one of zeros, one below ggml's bound).
    #[test]
    fn q3_lane_forms_are_the_group_search() {
        let mut s = 7u32;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / 16_777_216.0 - 0.5
        };
        let mut x: Vec<f32> = (0..16 * 16).map(|_| next()).collect();
        x[16..32].fill(0.0);
        x[32..48].fill(1e-16);
        let xt: [[f32; 16]; 16] = transpose(&x);
        let (mut la, mut lb) = ([[0i8; 16]; 16], [[0i8; 16]; 16]);
        let a = make_q3_lanes(4, &xt, &mut la);
        let b = make_q3_split(4, &xt, &mut lb);
        for g in 0..16 {
            let mut l = [0i8; 16];
            let want = make_q3_quants(4, &x[16 * g..16 * g + 16], &mut l);
            assert_eq!(a[g].to_bits(), want.to_bits(), "group {g}");
            assert_eq!(b[g].to_bits(), want.to_bits(), "group {g}");
            for i in 0..16 {
                assert_eq!((la[i][g], lb[i][g]), (l[i], l[i]), "group {g} value {i}");
            }
        }
    }
}
