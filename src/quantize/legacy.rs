//! The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and the sign/ternary-free small
//! types Q1_0 and Q2_0: ggml's reference quantizers, and with importance weights its searches
//! (`quantize_row_q4_0_impl` and its siblings). One row per call.
#![allow(clippy::cast_possible_truncation)] // C's conversions to narrower integers are the bytes

use super::search::{make_qkx_quants, make_qx_quants, put_f16, trunc_i32, Qkx};

/// The importance path's weights of one block: `qw[j] * sqrt(sigma2 + x[j]^2)`.
fn weights(xb: &[f32], qw: &[f32], sigma2: f32, out: &mut [f32; 32]) {
    for j in 0..32 {
        out[j] = qw[j] * (sigma2 + xb[j] * xb[j]).sqrt();
    }
}

/// `sum(x^2) / n` over the whole row, in order.
fn row_sigma2(x: &[f32]) -> f32 {
    let mut sum_x2 = 0f32;
    for &v in x {
        sum_x2 += v * v;
    }
    sum_x2 / x.len() as f32
}

/// The absolute maximum and the value that has it (the first one), as Q4_0 and Q5_0 find them.
fn signed_max(xb: &[f32]) -> f32 {
    let mut amax = 0f32;
    let mut max = 0f32;
    for &v in xb {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

fn min_max(xb: &[f32]) -> (f32, f32) {
    let mut min = f32::MAX;
    let mut max = -f32::MAX;
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

pub(crate) fn q1_0(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
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

pub(crate) fn q2_0(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (xb, yb) in x.chunks_exact(64).zip(y.chunks_exact_mut(18)) {
        let mut amax = 0f32;
        for &v in xb {
            let a = v.abs();
            if a > amax {
                amax = a;
            }
        }
        let d = amax;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        put_f16(yb, 0, d);
        yb[2..].fill(0);
        for (j, &w) in xb.iter().enumerate() {
            let q = trunc_i32((w * id).round()).wrapping_add(1).clamp(0, 3);
            yb[2 + j / 4] |= (q as u8) << ((j % 4) * 2);
        }
    }
}

fn q4_0_ref(xb: &[f32], yb: &mut [u8]) {
    let max = signed_max(xb);
    let d = max / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    for j in 0..16 {
        let x0 = xb[j] * id;
        let x1 = xb[16 + j] * id;
        let xi0 = i32::from(trunc_i32(x0 + 8.5) as i8).min(15) as u8;
        let xi1 = i32::from(trunc_i32(x1 + 8.5) as i8).min(15) as u8;
        yb[2 + j] = xi0 | (xi1 << 4);
    }
}

pub(crate) fn q4_0(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    let Some(qw) = imp else {
        for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(18)) {
            q4_0_ref(xb, yb);
        }
        return;
    };
    let sigma2 = row_sigma2(x);
    let mut weight = [0f32; 32];
    let mut l = [0i8; 32];
    for ((xb, yb), qw) in x
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(18))
        .zip(qw.chunks_exact(32))
    {
        weights(xb, qw, sigma2, &mut weight);
        let d = make_qx_quants(8, xb, &mut l, Some(&weight));
        put_f16(yb, 0, d);
        for j in 0..16 {
            yb[2 + j] = (l[j] | (l[j + 16] << 4)) as u8;
        }
    }
}

fn q4_1_ref(xb: &[f32], yb: &mut [u8]) {
    let (min, max) = min_max(xb);
    let d = (max - min) / 15.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    put_f16(yb, 2, min);
    for j in 0..16 {
        let x0 = (xb[j] - min) * id;
        let x1 = (xb[16 + j] - min) * id;
        let xi0 = i32::from(trunc_i32(x0 + 0.5) as i8).min(15) as u8;
        let xi1 = i32::from(trunc_i32(x1 + 0.5) as i8).min(15) as u8;
        yb[4 + j] = xi0 | (xi1 << 4);
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

pub(crate) fn q4_1(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    let Some(qw) = imp else {
        for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(20)) {
            q4_1_ref(xb, yb);
        }
        return;
    };
    let sigma2 = row_sigma2(x);
    let mut weight = [0f32; 32];
    let mut l = [0u8; 32];
    for ((xb, yb), qw) in x
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(20))
        .zip(qw.chunks_exact(32))
    {
        weights(xb, qw, sigma2, &mut weight);
        let (d, min) = make_qkx_quants(&QKX3_LEGACY, xb, &weight, &mut l);
        put_f16(yb, 0, d);
        put_f16(yb, 2, -min);
        for j in 0..16 {
            yb[4 + j] = l[j] | (l[j + 16] << 4);
        }
    }
}

/// Q5_0's and Q5_1's 5-bit values `l` into their low nibbles at `qs` and fifth bits at `qh`.
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

fn q5_0_ref(xb: &[f32], yb: &mut [u8]) {
    let max = signed_max(xb);
    let d = max / -16.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    let mut l = [0u8; 32];
    for j in 0..32 {
        l[j] = i32::from(trunc_i32(xb[j] * id + 16.5) as i8).min(31) as u8;
    }
    let (qh, qs) = yb[2..].split_at_mut(4);
    pack5(&l, qh, qs);
}

pub(crate) fn q5_0(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    let Some(qw) = imp else {
        for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(22)) {
            q5_0_ref(xb, yb);
        }
        return;
    };
    let sigma2 = row_sigma2(x);
    let mut weight = [0f32; 32];
    let mut l = [0i8; 32];
    for ((xb, yb), qw) in x
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(22))
        .zip(qw.chunks_exact(32))
    {
        weights(xb, qw, sigma2, &mut weight);
        let d = make_qx_quants(16, xb, &mut l, Some(&weight));
        put_f16(yb, 0, d);
        let lu = l.map(|v| v as u8);
        let (qh, qs) = yb[2..].split_at_mut(4);
        pack5(&lu, qh, qs);
    }
}

fn q5_1_ref(xb: &[f32], yb: &mut [u8]) {
    let (min, max) = min_max(xb);
    let d = (max - min) / 31.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(yb, 0, d);
    put_f16(yb, 2, min);
    let mut l = [0u8; 32];
    for j in 0..32 {
        l[j] = trunc_i32((xb[j] - min) * id + 0.5) as u8;
    }
    let (qh, qs) = yb[4..].split_at_mut(4);
    pack5(&l, qh, qs);
}

pub(crate) fn q5_1(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
    let Some(qw) = imp else {
        for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(24)) {
            q5_1_ref(xb, yb);
        }
        return;
    };
    let sigma2 = row_sigma2(x);
    let mut weight = [0f32; 32];
    let mut l = [0u8; 32];
    let p = Qkx {
        nmax: 31,
        ..QKX3_LEGACY
    };
    for ((xb, yb), qw) in x
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(24))
        .zip(qw.chunks_exact(32))
    {
        weights(xb, qw, sigma2, &mut weight);
        let (d, min) = make_qkx_quants(&p, xb, &weight, &mut l);
        put_f16(yb, 0, d);
        put_f16(yb, 2, -min);
        let (qh, qs) = yb[4..].split_at_mut(4);
        pack5(&l, qh, qs);
    }
}

pub(crate) fn q8_0(x: &[f32], _imp: Option<&[f32]>, y: &mut [u8]) {
    for (xb, yb) in x.chunks_exact(32).zip(y.chunks_exact_mut(34)) {
        let mut amax = 0f32;
        for &v in xb {
            amax = super::search::c_max(amax, v.abs());
        }
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        put_f16(yb, 0, d);
        for j in 0..32 {
            yb[2 + j] = trunc_i32((xb[j] * id).round()) as u8;
        }
    }
}
