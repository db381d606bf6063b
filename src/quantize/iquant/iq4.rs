//! IQ4_NL and IQ4_XS: ggml's `quantize_row_iq4_nl_impl` (ntry 7).

use super::shared::{best_index_int8, put_u16};
use crate::quant::tables::KVALUES_IQ4NL;
use crate::quantize::search::{f32_to_f16, nearest_int};

/// One super-block of `x.len()` values (32: IQ4_NL, 256: IQ4_XS) in blocks of 32. Returns the
/// f16 super-scale; fills `q4` (packed nibbles), and for IQ4_XS `scales_h` / `scales_l`.
#[inline(always)]
pub(super) fn iq4_impl(
    x: &[f32],
    qw: Option<&[f32]>,
    q4: &mut [u8],
    scales_h: &mut u16,
    scales_l: &mut [u8],
) -> u16 {
    pub(super) const NTRY: i32 = 7;
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
pub(super) fn iq4_tries_body(
    xb: &[f32; 32],
    w: &[f32; 32],
    ids: &[f32; 16],
) -> ([f32; 16], [f32; 16]) {
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
pub(super) fn nearest_level(v: &[f32; 16], x: f32) -> f32 {
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
pub(super) unsafe fn iq4_tries_avx512(
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
pub(super) unsafe fn iq4_tries_avx2(
    xb: &[f32; 32],
    w: &[f32; 32],
    ids: &[f32; 16],
) -> ([f32; 16], [f32; 16]) {
    iq4_tries_body(xb, w, ids)
}

#[allow(unsafe_code)]
pub(super) fn iq4_tries(xb: &[f32; 32], w: &[f32; 32], ids: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
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
pub(super) fn iq4_nl_block(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) {
    let mut h = 0u16;
    let (d, qs) = y.split_at_mut(2);
    let dh = iq4_impl(x, qw, qs, &mut h, &mut []);
    d.copy_from_slice(&dh.to_le_bytes());
}

#[inline(always)]
pub(super) fn iq4_xs_block(x: &[f32], qw: Option<&[f32]>, y: &mut [u8]) {
    let mut h = 0u16;
    let mut sl = [0u8; 4];
    let mut qs = [0u8; 128];
    let dh = iq4_impl(x, qw, &mut qs, &mut h, &mut sl);
    put_u16(y, 0, dh);
    put_u16(y, 2, h);
    y[4..8].copy_from_slice(&sl);
    y[8..136].copy_from_slice(&qs);
}
