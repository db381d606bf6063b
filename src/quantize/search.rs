//! The arithmetic the quantizers share, in ggml's order of operations: rounding
//! (`nearest_int`'s magic-number trick, C's float-to-integer conversions as x86 makes them),
//! ggml's float-to-half conversion, and the scale searches (`make_qx_quants`,
//! `make_q3_quants`, `make_qkx2_quants`, `make_qkx3_quants`, `make_qp_quants`).
//!
//! Every sum runs in ggml's order and every product is a separate rounding (no fused
//! multiply-add); C's `MAX`/`MIN` macros and comparisons keep their NaN behaviour.

/// ggml's bound below which a group counts as all zeros.
pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

/// C's `MAX(a, b)` macro on floats: `a > b ? a : b` (a NaN `b` wins, a NaN `a` loses).
#[inline(always)]
pub(crate) fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
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
    if f.is_nan() || f >= 2_147_483_648.0 || f < -2_147_483_648.0 {
        i32::MIN
    } else {
        f as i32
    }
}

/// glibc's `lroundf` on x86-64: halves away from zero, `LONG_MIN` for NaN and values out of
/// range.
#[inline(always)]
pub(crate) fn lround(f: f32) -> i64 {
    if f.is_nan() || f >= 9.223_372e18 || f < -9.223_372e18 {
        i64::MIN
    } else {
        f.round() as i64
    }
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

/// `make_qx_quants` with `rmse_type` 1 (the only one the quantizers use): `L` gets values in
/// `0..2*nmax`; the weights are `qw`, or each value's square. Returns the scale.
pub(crate) fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8], qw: Option<&[f32]>) -> f32 {
    let n = x.len();
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
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

/// `make_q3_quants` with `do_rmse` (as Q3_K calls it): `L` gets values in `0..2*nmax`.
pub(crate) fn make_q3_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let n = x.len();
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
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

/// `make_qkx2_quants` / `make_qkx3_quants` (with weights): `L` gets values in `0..=nmax`.
/// Returns the scale and the minimum (`the_min`, as ggml stores it: the negated offset).
pub(crate) fn make_qkx_quants(p: &Qkx, x: &[f32], weights: &[f32], l_out: &mut [u8]) -> (f32, f32) {
    let n = x.len();
    let mut laux = [0u8; 32];
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    let empty = if p.x3 { max <= min } else { max == min };
    if empty {
        l_out[..n].fill(0);
        return (0.0, -min);
    }
    let nmax = p.nmax;
    let nmaxf = nmax as f32;
    let mut iscale = nmaxf / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min)).min(nmax).max(0);
        l_out[i] = l as u8;
        let mut diff = scale * (l as f32) + min - x[i];
        diff = if p.use_mad { diff.abs() } else { diff * diff };
        best_error += weights[i] * diff;
    }
    if p.nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=p.nstep {
        iscale = (p.rmin + p.rdelta * is as f32 + nmaxf) / (max - min);
        let mut sum_l = 0f32;
        let mut sum_l2 = 0f32;
        let mut sum_xl = 0f32;
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).min(nmax).max(0);
            laux[i] = l as u8;
            let w = weights[i];
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for i in 0..n {
                let mut diff = this_scale * f32::from(laux[i]) + this_min - x[i];
                diff = if p.use_mad { diff.abs() } else { diff * diff };
                cur_error += weights[i] * diff;
            }
            if cur_error < best_error {
                l_out[..n].copy_from_slice(&laux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
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
