//! The K-quants (Q2_K to Q6_K, Q8_K): 256-element super-blocks of 16 or 32-element sub-blocks,
//! each with its own small integer scale (and min) applied to the f16 super-block scale. Each
//! value is computed as ggml does: `(d * scale) * quant - (dmin * min)`, left to right.

use super::arith::{by_scales, fixed, Arith};
use super::blocks::{f16_at, q2_k, q3_k, q4_k, q5_k, q6_k, q8_k, u32_at};

/// Q2_K: 16 sub-blocks of 16; scale in the low nibble, min in the high nibble of `scales`.
pub fn q2_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, dmin: f32, b: &[u8; 84], y: &mut [f32; 256]) {
        // Two halves of 128 elements, each reading 32 bytes of quants four times (2 bits each).
        for half in 0..2 {
            let qs: &[u8; 32] = b[q2_k::QS + 32 * half..][..32].try_into().expect("32");
            for shift in 0..4 {
                for part in 0..2 {
                    let sc = b[q2_k::SCALES + half * 8 + shift * 2 + part];
                    let dl = A::mul(d, f32::from(sc & 0x0F));
                    let ml = A::mul(dmin, f32::from(sc >> 4));
                    let out = &mut y[half * 128 + shift * 32 + part * 16..][..16];
                    for (y, &q) in out.iter_mut().zip(&qs[part * 16..part * 16 + 16]) {
                        let q = (q >> (2 * shift)) & 3;
                        *y = A::sub(A::mul(dl, f32::from(q)), ml);
                    }
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(84).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let (d, dmin) = (f16_at(b, q2_k::D), f16_at(b, q2_k::DMIN));
        by_scales!([d, dmin], block(d, dmin, b, y));
    }
}

/// The 16 six-bit scales of Q3_K, minus 32: low 4 bits from the first 8 bytes (low nibbles,
/// then high nibbles), high 2 bits from the last 4.
#[inline(always)]
pub fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (j, o) in out.iter_mut().enumerate() {
        let low = if j < 8 { s[j] & 0x0F } else { s[j - 8] >> 4 };
        let high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        *o = (low | (high << 4)) as i8 - 32;
    }
    out
}

/// Q3_K: 16 sub-blocks of 16; 2 low bits in `qs`, the third in `hmask` (set means no -4).
pub fn q3_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 110], y: &mut [f32; 256]) {
        let scales = q3_k_scales(&b[q3_k::SCALES..q3_k::SCALES + 12]);
        let hmask: &[u8; 32] = b[q3_k::HMASK..][..32].try_into().expect("32");
        for half in 0..2 {
            let qs: &[u8; 32] = b[q3_k::QS + 32 * half..][..32].try_into().expect("32");
            for shift in 0..4 {
                let bit = 1u8 << (half * 4 + shift);
                for part in 0..2 {
                    let dl = A::mul(d, f32::from(scales[half * 8 + shift * 2 + part]));
                    let out = &mut y[half * 128 + shift * 32 + part * 16..][..16];
                    for (l, y) in out.iter_mut().enumerate() {
                        let i = part * 16 + l;
                        let low = ((qs[i] >> (2 * shift)) & 3) as i8;
                        let q = low - if hmask[i] & bit != 0 { 0 } else { 4 };
                        *y = A::mul(dl, f32::from(q));
                    }
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(110).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, q3_k::D);
        by_scales!([d], block(d, b, y));
    }
}

/// Scale and min of sub-block `j` (0 to 7) of Q4_K and Q5_K: 6 bits each, packed in 12 bytes.
#[inline(always)]
pub fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// Q4_K: 8 sub-blocks of 32; each 64 elements read 32 bytes, low nibbles then high nibbles.
pub fn q4_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, dmin: f32, b: &[u8; 144], y: &mut [f32; 256]) {
        let scales = &b[q4_k::SCALES..q4_k::SCALES + 12];
        for pair in 0..4 {
            let qs: &[u8; 32] = b[q4_k::QS + 32 * pair..][..32].try_into().expect("32");
            for nib in 0..2 {
                let (sc, m) = scale_min_k4(2 * pair + nib, scales);
                let dl = A::mul(d, f32::from(sc));
                let ml = A::mul(dmin, f32::from(m));
                let out = &mut y[pair * 64 + nib * 32..][..32];
                for (y, &q) in out.iter_mut().zip(qs) {
                    let q = (q >> (4 * nib)) & 0x0F;
                    *y = A::sub(A::mul(dl, f32::from(q)), ml);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(144).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let (d, dmin) = (f16_at(b, q4_k::D), f16_at(b, q4_k::DMIN));
        by_scales!([d, dmin], block(d, dmin, b, y));
    }
}

/// Q5_K: Q4_K with a fifth bit per element in `qh` (bit 2 * pair + nibble half).
pub fn q5_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, dmin: f32, b: &[u8; 176], y: &mut [f32; 256]) {
        let scales = &b[q5_k::SCALES..q5_k::SCALES + 12];
        let qh: &[u8; 32] = b[q5_k::QH..][..32].try_into().expect("32");
        for pair in 0..4 {
            let qs: &[u8; 32] = b[q5_k::QS + 32 * pair..][..32].try_into().expect("32");
            for nib in 0..2 {
                let (sc, m) = scale_min_k4(2 * pair + nib, scales);
                let dl = A::mul(d, f32::from(sc));
                let ml = A::mul(dmin, f32::from(m));
                let bit = 1u8 << (2 * pair + nib);
                let out = &mut y[pair * 64 + nib * 32..][..32];
                for (l, y) in out.iter_mut().enumerate() {
                    let low = (qs[l] >> (4 * nib)) & 0x0F;
                    let q = low + if qh[l] & bit != 0 { 16 } else { 0 };
                    *y = A::sub(A::mul(dl, f32::from(q)), ml);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(176).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let (d, dmin) = (f16_at(b, q5_k::D), f16_at(b, q5_k::DMIN));
        by_scales!([d, dmin], block(d, dmin, b, y));
    }
}

/// Q6_K: 16 sub-blocks of 16 with signed 8-bit scales; low 4 bits in `ql`, high 2 in `qh`.
pub fn q6_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 210], y: &mut [f32; 256]) {
        // The 16 sub-block scales applied to d (ggml computes d * scale for each value: the
        // same product).
        let mut dl = [0f32; 16];
        for (k, dl) in dl.iter_mut().enumerate() {
            *dl = A::mul(d, f32::from(b[q6_k::SCALES + k] as i8));
        }
        for half in 0..2 {
            let ql: &[u8; 64] = b[q6_k::QL + 64 * half..][..64].try_into().expect("64");
            let qh: &[u8; 32] = b[q6_k::QH + 32 * half..][..32].try_into().expect("32");
            let dl = &dl[8 * half..8 * half + 8];
            let y = &mut y[128 * half..128 * half + 128];
            for l in 0..32 {
                let is = l / 16;
                let h = qh[l];
                let q1 = ((ql[l] & 0x0F) | ((h & 3) << 4)) as i8 - 32;
                let q2 = ((ql[l + 32] & 0x0F) | (((h >> 2) & 3) << 4)) as i8 - 32;
                let q3 = ((ql[l] >> 4) | (((h >> 4) & 3) << 4)) as i8 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) as i8 - 32;
                y[l] = A::mul(dl[is], f32::from(q1));
                y[l + 32] = A::mul(dl[is + 2], f32::from(q2));
                y[l + 64] = A::mul(dl[is + 4], f32::from(q3));
                y[l + 96] = A::mul(dl[is + 6], f32::from(q4));
            }
        }
    }
    for (b, y) in src.chunks_exact(210).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, q6_k::D);
        by_scales!([d], block(d, b, y));
    }
}

/// Q8_K: `d * quant` with an f32 scale.
pub fn q8_k(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 292], y: &mut [f32; 256]) {
        let qs: &[u8; 256] = b[q8_k::QS..][..256].try_into().expect("256");
        for (y, &q) in y.iter_mut().zip(qs) {
            *y = A::mul(d, f32::from(q as i8));
        }
    }
    for (b, y) in src.chunks_exact(292).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f32::from_bits(u32_at(b, q8_k::D));
        by_scales!([d], block(d, b, y));
    }
}
