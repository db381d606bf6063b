//! x86-64 kernels: AVX2 (with F16C) and AVX-512 (F, BW, VL), each bit-identical to the scalar
//! kernel of its type: the same integer values, converted to float exactly, then the scalar
//! code's multiplies and adds in its order (never fused: ggml multiplies, then adds).
//!
//! Each kernel takes whole blocks (`blocks.len()` a multiple of the block's bytes, `dst` the
//! matching number of floats; extra bytes or floats are left alone) and is `unsafe` only because
//! of its `target_feature`: [`kernel`] hands out the safe wrappers of an instruction set only
//! after detecting it.

// The AVX-512 intrinsics are stable from Rust 1.89: build.rs sets `gguf_avx512` only then.
#![allow(clippy::incompatible_msrv)]

use super::isa::{Isa, Kernel};
use crate::types::DataType;
use core::arch::x86_64::*;

/// Whether this CPU runs the kernels of `isa`.
pub(super) fn has(isa: Isa) -> bool {
    match isa {
        Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c"),
        #[cfg(gguf_avx512)]
        Isa::Avx512 => {
            has(Isa::Avx2)
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
        }
        _ => false,
    }
}

/// Converts one block `b` of `dtype` into `y` with the scalar kernel: for the blocks of Q4_1 and
/// Q5_1 whose scales are not both finite. Only there do two NaNs meet in one operation (`q * d`
/// and `m` in their sum), and x86 then keeps the first operand's; the kernels add in ggml's
/// order, but LLVM may swap an add's operands, and in release builds it did.
#[cold]
#[inline(never)]
fn scalar_block(dtype: DataType, b: &[u8], y: &mut [f32]) {
    crate::quant::scalar::scalar_kernel(dtype)(b, y);
}

/// Little-endian `u16` at `at` (callers have checked the block's length).
#[inline(always)]
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The f16 at `at` as f32, by F16C (which gives what ggml gives, quieting signalling NaNs).
///
/// # Safety
/// The CPU has F16C.
#[inline]
#[target_feature(enable = "f16c")]
unsafe fn half(b: &[u8], at: usize) -> f32 {
    // SAFETY: the caller's.
    unsafe { half_bits(le16(b, at)) }
}

/// The f16 with bits `h` as f32 (F16C).
///
/// # Safety
/// The CPU has F16C.
#[inline]
#[target_feature(enable = "f16c")]
unsafe fn half_bits(h: u16) -> f32 {
    // A broadcast, not `_mm_cvtsi32_si128`: LLVM turns that into a `vpinsrw` merging into
    // whatever register it picks, which chained each block's scale to the previous block's
    // floats (Q8_0 ran at a third of its speed).
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(h as i16)))
}

/// Helpers for 8-lane (AVX2) stores of 16 values.
mod h256 {
    use core::arch::x86_64::*;
    pub type V = __m256;

    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn splat(x: f32) -> V {
        _mm256_set1_ps(x)
    }
    /// The f16 at p (little-endian) as f32 in every lane: F16C, like `half`, but converting an
    /// already broadcast half (no scalar float to broadcast, no merge into a stale register).
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn splat_half(p: *const u8) -> V {
        // SAFETY: the caller gives 2 readable bytes at p.
        let h = i16::from_le_bytes(unsafe { p.cast::<[u8; 2]>().read_unaligned() });
        _mm256_cvtph_ps(_mm_set1_epi16(h))
    }
    /// y[0..16] = float(v as i8) * d.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn i8_mul(y: *mut f32, v: __m128i, d: V) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_mul_ps(a, d));
            _mm256_storeu_ps(y.add(8), _mm256_mul_ps(b, d));
        }
    }
    /// y[0..16] = d * float(v as i8), the scale first (the K-quants' order).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_i8(y: *mut f32, d: V, v: __m128i) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_mul_ps(d, a));
            _mm256_storeu_ps(y.add(8), _mm256_mul_ps(d, b));
        }
    }
    /// y[0..16] = d * (float(v as i8) + delta) (IQ1_S's order).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_i8_plus(y: *mut f32, d: V, v: __m128i, delta: V) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_mul_ps(d, _mm256_add_ps(a, delta)));
            _mm256_storeu_ps(y.add(8), _mm256_mul_ps(d, _mm256_add_ps(b, delta)));
        }
    }
    /// y[0..16] = d0 * float(v as u8) for lanes 0..8 and d1 * ... for 8..16, negated where bit
    /// k of `signs` is set (the IQ2 and IQ3 grids' order: scale times magnitude, then the sign).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_u8_signed(y: *mut f32, d0: f32, d1: f32, v: __m128i, signs: u16) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
        let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let sign = _mm256_set1_epi32(i32::MIN);
        let flip = |s: u16| {
            let m = _mm256_and_si256(_mm256_set1_epi32(i32::from(s)), bits);
            _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpeq_epi32(m, bits), sign))
        };
        let a = _mm256_xor_ps(_mm256_mul_ps(_mm256_set1_ps(d0), a), flip(signs & 0xff));
        let b = _mm256_xor_ps(_mm256_mul_ps(_mm256_set1_ps(d1), b), flip(signs >> 8));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, a);
            _mm256_storeu_ps(y.add(8), b);
        }
    }
    /// y[0..16] = d * (float(v as i8) + delta0) for lanes 0..8, with delta1 for 8..16 (IQ1_M).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_i8_plus2(y: *mut f32, d: f32, v: __m128i, delta0: f32, delta1: f32) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
        let d = _mm256_set1_ps(d);
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(
                y,
                _mm256_mul_ps(d, _mm256_add_ps(a, _mm256_set1_ps(delta0))),
            );
            _mm256_storeu_ps(
                y.add(8),
                _mm256_mul_ps(d, _mm256_add_ps(b, _mm256_set1_ps(delta1))),
            );
        }
    }
    /// y[0..16] = float(v as u8) * d + m.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn u8_mul_add(y: *mut f32, v: __m128i, d: V, m: V) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(a, d), m));
            _mm256_storeu_ps(y.add(8), _mm256_add_ps(_mm256_mul_ps(b, d), m));
        }
    }
    /// y[0..16] = d * float(v as u8) - m.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn mul_u8_sub(y: *mut f32, d: V, v: __m128i, m: V) {
        let a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
        let b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, a), m));
            _mm256_storeu_ps(y.add(8), _mm256_sub_ps(_mm256_mul_ps(d, b), m));
        }
    }
    /// y_lo[0..16] = dl * float(q & 15) - ml and y_hi[0..16] = dh * float(q >> 4) - mh, q the
    /// 16 bytes at p (Q4_K's sub-block pairs: one widening per 16 bytes for both nibbles).
    #[inline]
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn nibbles_mul_sub(
        y_lo: *mut f32,
        y_hi: *mut f32,
        p: *const u8,
        dl: V,
        ml: V,
        dh: V,
        mh: V,
    ) {
        let m4 = _mm256_set1_epi32(15);
        for h in 0..2 {
            // SAFETY: the caller gives 16 readable bytes at p and 16 writable floats at y_lo
            // and at y_hi.
            unsafe {
                let v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.add(8 * h).cast()));
                let lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, m4));
                let hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
                _mm256_storeu_ps(y_lo.add(8 * h), _mm256_sub_ps(_mm256_mul_ps(dl, lo), ml));
                _mm256_storeu_ps(y_hi.add(8 * h), _mm256_sub_ps(_mm256_mul_ps(dh, hi), mh));
            }
        }
    }
    /// y_lo[0..32] = dl * float(q & 15) - ml and y_hi[0..32] = dh * float(q >> 4) - mh, q the
    /// 32 bytes at p (a Q4_K group), as `nibbles_mul_sub` twice, but with the stores in address
    /// order, all of y_lo then all of y_hi, each 64-byte line written whole before the next:
    /// where the output overflows L2, an Intel Xeon wrote 10% slower with the lines of y_lo and
    /// y_hi interleaved.
    #[inline]
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn nibbles_mul_sub_in_order(
        y_lo: *mut f32,
        y_hi: *mut f32,
        p: *const u8,
        dl: V,
        ml: V,
        dh: V,
        mh: V,
    ) {
        let m4 = _mm256_set1_epi32(15);
        let mut lo = [_mm256_setzero_ps(); 4];
        let mut hi = [_mm256_setzero_ps(); 4];
        for h in 0..4 {
            // SAFETY: the caller gives 32 readable bytes at p.
            let v = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(p.add(8 * h).cast()) });
            lo[h] = _mm256_sub_ps(
                _mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_and_si256(v, m4))),
                ml,
            );
            hi[h] = _mm256_sub_ps(
                _mm256_mul_ps(dh, _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4))),
                mh,
            );
        }
        for (h, v) in lo.into_iter().enumerate() {
            // SAFETY: the caller gives 32 writable floats at y_lo.
            unsafe { _mm256_storeu_ps(y_lo.add(8 * h), v) };
        }
        for (h, v) in hi.into_iter().enumerate() {
            // SAFETY: the caller gives 32 writable floats at y_hi.
            unsafe { _mm256_storeu_ps(y_hi.add(8 * h), v) };
        }
    }
    /// y[0..16] = the 16 f16 at x as f32.
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn f16x16(y: *mut f32, x: *const u8) {
        // SAFETY: the caller gives 32 readable bytes at x and 16 writable floats at y.
        unsafe {
            _mm256_storeu_ps(y, _mm256_cvtph_ps(_mm_loadu_si128(x.cast())));
            _mm256_storeu_ps(y.add(8), _mm256_cvtph_ps(_mm_loadu_si128(x.add(16).cast())));
        }
    }
    /// y[0..16] = the 16 bf16 at x as f32 (their bits shifted up).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn bf16x16(y: *mut f32, x: *const u8) {
        // SAFETY: the caller gives 32 readable bytes at x and 16 writable floats at y.
        unsafe {
            let a = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(x.cast())), 16);
            let b = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(x.add(16).cast())), 16);
            _mm256_storeu_ps(y, _mm256_castsi256_ps(a));
            _mm256_storeu_ps(y.add(8), _mm256_castsi256_ps(b));
        }
    }
}

/// Helpers for 16-lane (AVX-512) stores of 16 values.
#[cfg(gguf_avx512)]
mod h512 {
    use core::arch::x86_64::*;
    pub type V = __m512;

    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn splat(x: f32) -> V {
        _mm512_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn i8_mul(y: *mut f32, v: __m128i, d: V) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_mul_ps(a, d)) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn mul_i8(y: *mut f32, d: V, v: __m128i) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_mul_ps(d, a)) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn mul_i8_plus(y: *mut f32, d: V, v: __m128i, delta: V) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_mul_ps(d, _mm512_add_ps(a, delta))) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn mul_u8_signed(y: *mut f32, d0: f32, d1: f32, v: __m128i, signs: u16) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
        let d = _mm512_castps256_ps512(_mm256_set1_ps(d0));
        let hi = _mm256_castps_pd(_mm256_set1_ps(d1));
        let d = _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(d), hi));
        let p = _mm512_castps_si512(_mm512_mul_ps(d, a));
        let p = _mm512_mask_xor_epi32(p, signs, p, _mm512_set1_epi32(i32::MIN));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_castsi512_ps(p)) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn mul_i8_plus2(y: *mut f32, d: f32, v: __m128i, delta0: f32, delta1: f32) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
        let lo = _mm512_castps256_ps512(_mm256_set1_ps(delta0));
        let hi = _mm256_castps_pd(_mm256_set1_ps(delta1));
        let delta = _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(lo), hi));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(d), _mm512_add_ps(a, delta))) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn u8_mul_add(y: *mut f32, v: __m128i, d: V, m: V) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(a, d), m)) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn mul_u8_sub(y: *mut f32, d: V, v: __m128i, m: V) {
        let a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
        // SAFETY: the caller gives 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_sub_ps(_mm512_mul_ps(d, a), m)) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f16x16(y: *mut f32, x: *const u8) {
        // SAFETY: the caller gives 32 readable bytes at x and 16 writable floats at y.
        unsafe { _mm512_storeu_ps(y, _mm512_cvtph_ps(_mm256_loadu_si256(x.cast()))) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn bf16x16(y: *mut f32, x: *const u8) {
        // SAFETY: the caller gives 32 readable bytes at x and 16 writable floats at y.
        unsafe {
            let a = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(x.cast())), 16);
            _mm512_storeu_ps(y, _mm512_castsi512_ps(a));
        }
    }
}

/// The 32 bits of Q5's `qh` (little-endian at `at`) as 32 bytes, byte k = 0x10 where bit k is
/// set: the fifth bit of element k.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn q5_high_bits(b: &[u8], at: usize) -> (__m128i, __m128i) {
    let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let v = _mm256_set1_epi32(qh as i32);
    // Byte k takes byte k/8 of qh (the shuffle works per 128-bit lane; both lanes hold qh).
    let pick = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    );
    let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    let set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick), bits), bits);
    let h = _mm256_and_si256(set, _mm256_set1_epi8(0x10));
    (_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1))
}

/// Q4_K's 8 sub-block scales and 8 mins (Q5_K lays them out alike), times `d` and `dmin`:
/// `[d * sc0, .., d * sc7, dmin * m0, .., dmin * m7]`, each product the scalar kernel's
/// (`scale_min_k4`'s 6-bit fields, worked out for all 8 at once on 32-bit words).
///
/// # Safety
/// The CPU has AVX2 and F16C; `d` and `dmin` point at 2 readable bytes, `scales` at 12.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn k4_scales(d: *const u8, dmin: *const u8, scales: *const u8) -> [f32; 16] {
    // SAFETY: the caller's.
    let (w, d, dmin) = unsafe {
        (
            scales.cast::<[[u8; 4]; 3]>().read_unaligned(),
            d.cast::<[u8; 2]>().read_unaligned(),
            dmin.cast::<[u8; 2]>().read_unaligned(),
        )
    };
    let [u0, u1, u2] = w.map(u32::from_le_bytes);
    // Fields 0..4: the low 6 bits of bytes 0..4 (scales) and 4..8 (mins); fields 4..8: the
    // nibbles of bytes 8..12 below the top 2 bits of bytes 0..4 (scales) and 4..8 (mins).
    let sc_lo = u0 & 0x3f3f_3f3f;
    let m_lo = u1 & 0x3f3f_3f3f;
    let sc_hi = (u2 & 0x0f0f_0f0f) | (((u0 >> 6) & 0x0303_0303) << 4);
    let m_hi = ((u2 >> 4) & 0x0f0f_0f0f) | (((u1 >> 6) & 0x0303_0303) << 4);
    let sc = u64::from(sc_lo) | (u64::from(sc_hi) << 32);
    let m = u64::from(m_lo) | (u64::from(m_hi) << 32);
    let f = |bits: u64, h: [u8; 2]| {
        let q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bits as i64)));
        _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(i16::from_le_bytes(h))), q)
    };
    let mut out = [0f32; 16];
    // SAFETY: out holds 16 floats.
    unsafe {
        _mm256_storeu_ps(out.as_mut_ptr(), f(sc, d));
        _mm256_storeu_ps(out.as_mut_ptr().add(8), f(m, dmin));
    }
    out
}

/// The block kernels, written once over a helper module (`h256` or `h512`) and its features.
macro_rules! block_kernels {
    ($name:ident, $h:ident, $feat:literal) => {
        mod $name {
            use super::$h::*;
            use super::{half, half_bits, le16, q5_high_bits, scalar_block};
            use crate::quant::blocks::{
                iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl, iq4_xs, mxfp4, q2_0,
                q2_k, q3_k, q4_0, q4_1, q5_0, q5_1, q5_k, q6_k, tq1_0, tq2_0,
            };
            use crate::quant::fp4::e8m0_to_f32_half;
            use crate::quant::iquant::IQ1S_DELTA;
            use crate::quant::kquant::{q3_k_scales, scale_min_k4};
            use crate::quant::tables::{
                IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
                KSIGNS_IQ2XS, KVALUES_IQ4NL, KVALUES_MXFP4,
            };
            use crate::types::DataType;
            use core::arch::x86_64::*;

            #[target_feature(enable = $feat)]
            pub unsafe fn f16(x: &[u8], y: &mut [f32]) {
                let n = (x.len() / 2).min(y.len());
                // One by one up to a 64-byte boundary of y, so that no vector store splits a
                // line (a caller's buffer may lie anywhere).
                let head = y.as_ptr().align_offset(64).min(n);
                for j in 0..head {
                    // SAFETY: the kernel's features include F16C.
                    y[j] = unsafe { half(x, 2 * j) };
                }
                let mut i = head;
                while i + 16 <= n {
                    // SAFETY: i + 16 <= n: 32 bytes of x and 16 floats of y are in bounds.
                    unsafe { f16x16(y.as_mut_ptr().add(i), x.as_ptr().add(2 * i)) };
                    i += 16;
                }
                for j in i..n {
                    // SAFETY: the kernel's features include F16C.
                    y[j] = unsafe { half(x, 2 * j) };
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn bf16(x: &[u8], y: &mut [f32]) {
                let n = (x.len() / 2).min(y.len());
                // As `f16`: one by one up to a 64-byte boundary of y (with the output 16 bytes
                // off one, ggml's 16-byte stores ran 20% faster than split 32-byte ones in L2
                // on an Intel Xeon).
                let head = y.as_ptr().align_offset(64).min(n);
                for j in 0..head {
                    y[j] = f32::from_bits(u32::from(le16(x, 2 * j)) << 16);
                }
                let mut i = head;
                while i + 16 <= n {
                    // SAFETY: i + 16 <= n: 32 bytes of x and 16 floats of y are in bounds.
                    unsafe { bf16x16(y.as_mut_ptr().add(i), x.as_ptr().add(2 * i)) };
                    i += 16;
                }
                for j in i..n {
                    y[j] = f32::from_bits(u32::from(le16(x, 2 * j)) << 16);
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q4_0(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                let eight = _mm_set1_epi8(8);
                for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: a block is 18 bytes (2 + 16 quants) and y is 32 floats; the kernel's
                    // features are the helpers'.
                    unsafe {
                        let d = splat(half(b, q4_0::D));
                        let qs = _mm_loadu_si128(b.as_ptr().add(q4_0::QS).cast());
                        let lo = _mm_sub_epi8(_mm_and_si128(qs, m4), eight);
                        let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), eight);
                        i8_mul(y.as_mut_ptr(), lo, d);
                        i8_mul(y.as_mut_ptr().add(16), hi, d);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q4_1(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                for (b, y) in x.chunks_exact(20).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: the kernel's features include F16C.
                    let (d, m) = unsafe { (half(b, q4_1::D), half(b, q4_1::M)) };
                    if !(d.is_finite() && m.is_finite()) {
                        scalar_block(DataType::Q4_1, b, y);
                        continue;
                    }
                    // SAFETY: a block is 20 bytes (4 + 16 quants) and y is 32 floats; the kernel's
                    // features are the helpers'.
                    unsafe {
                        let (d, m) = (splat(d), splat(m));
                        let qs = _mm_loadu_si128(b.as_ptr().add(q4_1::QS).cast());
                        let lo = _mm_and_si128(qs, m4);
                        let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m4);
                        u8_mul_add(y.as_mut_ptr(), lo, d, m);
                        u8_mul_add(y.as_mut_ptr().add(16), hi, d, m);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q5_0(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                let sixteen = _mm_set1_epi8(16);
                for (b, y) in x.chunks_exact(22).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: a block is 22 bytes (2 + 4 + 16 quants) and y is 32 floats; the kernel's
                    // features are the helpers'.
                    unsafe {
                        let d = splat(half(b, q5_0::D));
                        let (h0, h1) = q5_high_bits(b, q5_0::QH);
                        let qs = _mm_loadu_si128(b.as_ptr().add(q5_0::QS).cast());
                        let lo = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(qs, m4), h0), sixteen);
                        let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m4);
                        let hi = _mm_sub_epi8(_mm_or_si128(hi, h1), sixteen);
                        i8_mul(y.as_mut_ptr(), lo, d);
                        i8_mul(y.as_mut_ptr().add(16), hi, d);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q5_1(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                for (b, y) in x.chunks_exact(24).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: the kernel's features include F16C.
                    let (d, m) = unsafe { (half(b, q5_1::D), half(b, q5_1::M)) };
                    if !(d.is_finite() && m.is_finite()) {
                        scalar_block(DataType::Q5_1, b, y);
                        continue;
                    }
                    // SAFETY: a block is 24 bytes (4 + 4 + 16 quants) and y is 32 floats; the kernel's
                    // features are the helpers'.
                    unsafe {
                        let (d, m) = (splat(d), splat(m));
                        let (h0, h1) = q5_high_bits(b, q5_1::QH);
                        let qs = _mm_loadu_si128(b.as_ptr().add(q5_1::QS).cast());
                        let lo = _mm_or_si128(_mm_and_si128(qs, m4), h0);
                        let hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), h1);
                        u8_mul_add(y.as_mut_ptr(), lo, d, m);
                        u8_mul_add(y.as_mut_ptr().add(16), hi, d, m);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q5_k(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                let sixteen = _mm_set1_epi8(16);
                for (b, y) in x.chunks_exact(176).zip(y.chunks_exact_mut(256)) {
                    let scales = &b[q5_k::SCALES..q5_k::SCALES + 12];
                    // SAFETY: the kernel's features are the helpers'; qh is the 32 bytes at
                    // 16, the quants of group g the 32 at 48 + 32g, inside the 176-byte block;
                    // its 64 floats (at 64g) are in y's 256.
                    unsafe {
                        let d = half(b, q5_k::D);
                        let min = half(b, q5_k::DMIN);
                        for g in 0..4 {
                            let (sc1, m1) = scale_min_k4(2 * g, scales);
                            let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
                            let d1 = splat(d * f32::from(sc1));
                            let m1 = splat(min * f32::from(m1));
                            let d2 = splat(d * f32::from(sc2));
                            let m2 = splat(min * f32::from(m2));
                            let u1 = _mm_set1_epi8((1u8 << (2 * g)) as i8);
                            let u2 = _mm_set1_epi8((2u8 << (2 * g)) as i8);
                            let q = b.as_ptr().add(q5_k::QS + 32 * g);
                            let out = y.as_mut_ptr().add(64 * g);
                            let mut lo = [_mm_setzero_si128(); 2];
                            let mut hi = [_mm_setzero_si128(); 2];
                            for k in 0..2 {
                                let qh = _mm_loadu_si128(b.as_ptr().add(q5_k::QH + 16 * k).cast());
                                let qs = _mm_loadu_si128(q.add(16 * k).cast());
                                let h1 = _mm_and_si128(
                                    _mm_cmpeq_epi8(_mm_and_si128(qh, u1), u1),
                                    sixteen,
                                );
                                let h2 = _mm_and_si128(
                                    _mm_cmpeq_epi8(_mm_and_si128(qh, u2), u2),
                                    sixteen,
                                );
                                lo[k] = _mm_add_epi8(_mm_and_si128(qs, m4), h1);
                                hi[k] = _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), h2);
                            }
                            // In address order (as Q4_K's `nibbles_mul_sub`).
                            mul_u8_sub(out, d1, lo[0], m1);
                            mul_u8_sub(out.add(16), d1, lo[1], m1);
                            mul_u8_sub(out.add(32), d2, hi[0], m2);
                            mul_u8_sub(out.add(48), d2, hi[1], m2);
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q6_k(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                let m3 = _mm_set1_epi8(0x30);
                let k32 = _mm_set1_epi8(32);
                for (b, y) in x.chunks_exact(210).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; for half n, ql is the 64
                    // bytes at 64n (in 0..128), qh the 32 at 128 + 32n (in 128..192), its 128
                    // floats at 128n in y's 256.
                    unsafe {
                        let d = half(b, q6_k::D);
                        for n in 0..2 {
                            // The scale of each group of 16: d times the signed byte, as ggml.
                            let sc =
                                |k: usize| splat(d * f32::from(b[q6_k::SCALES + 8 * n + k] as i8));
                            let ql = b.as_ptr().add(q6_k::QL + 64 * n);
                            let qh = b.as_ptr().add(q6_k::QH + 32 * n);
                            let out = y.as_mut_ptr().add(128 * n);
                            for l in 0..2 {
                                let a = _mm_loadu_si128(ql.add(16 * l).cast());
                                let c = _mm_loadu_si128(ql.add(32 + 16 * l).cast());
                                let h = _mm_loadu_si128(qh.add(16 * l).cast());
                                let h0 = _mm_and_si128(_mm_slli_epi16(h, 4), m3);
                                let h2 = _mm_and_si128(_mm_slli_epi16(h, 2), m3);
                                let h4 = _mm_and_si128(h, m3);
                                let h6 = _mm_and_si128(_mm_srli_epi16(h, 2), m3);
                                let a4 = _mm_and_si128(_mm_srli_epi16(a, 4), m4);
                                let c4 = _mm_and_si128(_mm_srli_epi16(c, 4), m4);
                                let q1 = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(a, m4), h0), k32);
                                let q2 = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(c, m4), h2), k32);
                                let q3 = _mm_sub_epi8(_mm_or_si128(a4, h4), k32);
                                let q4 = _mm_sub_epi8(_mm_or_si128(c4, h6), k32);
                                mul_i8(out.add(16 * l), sc(l), q1);
                                mul_i8(out.add(32 + 16 * l), sc(2 + l), q2);
                                mul_i8(out.add(64 + 16 * l), sc(4 + l), q3);
                                mul_i8(out.add(96 + 16 * l), sc(6 + l), q4);
                            }
                        }
                    }
                }
            }
            #[target_feature(enable = $feat)]
            pub unsafe fn iq4_nl(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: the kernel's features are the helpers'; 16 quants at QS in the
                    // 18-byte block, 16 table bytes, 32 floats of y.
                    unsafe {
                        let table = _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast());
                        let d = splat(half(b, iq4_nl::D));
                        let qs = _mm_loadu_si128(b.as_ptr().add(iq4_nl::QS).cast());
                        let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                        let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                        mul_i8(y.as_mut_ptr(), d, lo);
                        mul_i8(y.as_mut_ptr().add(16), d, hi);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq4_xs(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                for (b, y) in x.chunks_exact(136).zip(y.chunks_exact_mut(256)) {
                    let scales_h = le16(b, iq4_xs::SCALES_H);
                    // SAFETY: the kernel's features are the helpers'; sub-block ib's 16 quants
                    // (at QS + 16ib, in the 136-byte block), its 32 floats at 32ib in y's 256.
                    unsafe {
                        let table = _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast());
                        let d = half(b, iq4_xs::D);
                        for ib in 0..8 {
                            let low = (b[iq4_xs::SCALES_L + ib / 2] >> (4 * (ib % 2))) & 0x0f;
                            let high = ((scales_h >> (2 * ib)) & 3) as u8;
                            let ls = i16::from(low | (high << 4)) - 32;
                            let dl = splat(d * f32::from(ls));
                            let qs = _mm_loadu_si128(b.as_ptr().add(iq4_xs::QS + 16 * ib).cast());
                            let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                            let hi =
                                _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                            mul_i8(y.as_mut_ptr().add(32 * ib), dl, lo);
                            mul_i8(y.as_mut_ptr().add(32 * ib + 16), dl, hi);
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn mxfp4(x: &[u8], y: &mut [f32]) {
                let m4 = _mm_set1_epi8(0x0f);
                for (b, y) in x.chunks_exact(17).zip(y.chunks_exact_mut(32)) {
                    // SAFETY: the kernel's features are the helpers'; 16 quants at QS in the
                    // 17-byte block, 16 table bytes, 32 floats of y.
                    unsafe {
                        let table = _mm_loadu_si128(KVALUES_MXFP4.as_ptr().cast());
                        let d = splat(e8m0_to_f32_half(b[mxfp4::E]));
                        let qs = _mm_loadu_si128(b.as_ptr().add(mxfp4::QS).cast());
                        let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                        let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                        i8_mul(y.as_mut_ptr(), lo, d);
                        i8_mul(y.as_mut_ptr().add(16), hi, d);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn tq2_0(x: &[u8], y: &mut [f32]) {
                let m2 = _mm_set1_epi8(3);
                let one = _mm_set1_epi8(1);
                for (b, y) in x.chunks_exact(66).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 32 quant bytes at
                    // QS + 32h (in the 66-byte block), floats 128h + 32l.. +32 of y's 256.
                    unsafe {
                        let d = splat(half(b, tq2_0::D));
                        for h in 0..2 {
                            for k in 0..2 {
                                let qs = _mm_loadu_si128(
                                    b.as_ptr().add(tq2_0::QS + 32 * h + 16 * k).cast(),
                                );
                                let out = y.as_mut_ptr().add(128 * h + 16 * k);
                                let code = |v: __m128i| _mm_sub_epi8(_mm_and_si128(v, m2), one);
                                i8_mul(out, code(qs), d);
                                i8_mul(out.add(32), code(_mm_srli_epi16(qs, 2)), d);
                                i8_mul(out.add(64), code(_mm_srli_epi16(qs, 4)), d);
                                i8_mul(out.add(96), code(_mm_srli_epi16(qs, 6)), d);
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q2_k(x: &[u8], y: &mut [f32]) {
                let m2 = _mm_set1_epi8(3);
                for (b, y) in x.chunks_exact(84).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 quant bytes at
                    // QS + 32h + 16p (in the 84-byte block), 16 floats at 128h + 32s + 16p.
                    unsafe {
                        let d = half(b, q2_k::D);
                        let dmin = half(b, q2_k::DMIN);
                        for h in 0..2 {
                            for p in 0..2 {
                                let qs = _mm_loadu_si128(
                                    b.as_ptr().add(q2_k::QS + 32 * h + 16 * p).cast(),
                                );
                                for sh in 0..4 {
                                    let sc = b[q2_k::SCALES + h * 8 + sh * 2 + p];
                                    let dl = splat(d * f32::from(sc & 0x0f));
                                    let ml = splat(dmin * f32::from(sc >> 4));
                                    let q = match sh {
                                        0 => qs,
                                        1 => _mm_srli_epi16(qs, 2),
                                        2 => _mm_srli_epi16(qs, 4),
                                        _ => _mm_srli_epi16(qs, 6),
                                    };
                                    let out = y.as_mut_ptr().add(128 * h + 32 * sh + 16 * p);
                                    mul_u8_sub(out, dl, _mm_and_si128(q, m2), ml);
                                }
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn q3_k(x: &[u8], y: &mut [f32]) {
                let m2 = _mm_set1_epi8(3);
                let four = _mm_set1_epi8(4);
                for (b, y) in x.chunks_exact(110).zip(y.chunks_exact_mut(256)) {
                    let scales = q3_k_scales(&b[q3_k::SCALES..q3_k::SCALES + 12]);
                    // SAFETY: the kernel's features are the helpers'; 16 bytes of hmask at
                    // HMASK + 16p and of quants at QS + 32h + 16p (in the 110-byte block), 16
                    // floats at 128h + 32s + 16p.
                    unsafe {
                        let d = half(b, q3_k::D);
                        for p in 0..2 {
                            let hm = _mm_loadu_si128(b.as_ptr().add(q3_k::HMASK + 16 * p).cast());
                            for h in 0..2 {
                                let qs = _mm_loadu_si128(
                                    b.as_ptr().add(q3_k::QS + 32 * h + 16 * p).cast(),
                                );
                                for sh in 0..4 {
                                    let bit = _mm_set1_epi8((1u8 << (h * 4 + sh)) as i8);
                                    let set = _mm_cmpeq_epi8(_mm_and_si128(hm, bit), bit);
                                    let q = match sh {
                                        0 => qs,
                                        1 => _mm_srli_epi16(qs, 2),
                                        2 => _mm_srli_epi16(qs, 4),
                                        _ => _mm_srli_epi16(qs, 6),
                                    };
                                    // The low two bits, minus 4 where the hmask bit is clear.
                                    let q = _mm_sub_epi8(
                                        _mm_and_si128(q, m2),
                                        _mm_andnot_si128(set, four),
                                    );
                                    let dl = splat(d * f32::from(scales[h * 8 + sh * 2 + p]));
                                    mul_i8(y.as_mut_ptr().add(128 * h + 32 * sh + 16 * p), dl, q);
                                }
                            }
                        }
                    }
                }
            }
            #[target_feature(enable = $feat)]
            pub unsafe fn q2_0(x: &[u8], y: &mut [f32]) {
                let m2 = _mm_set1_epi8(3);
                let one = _mm_set1_epi8(1);
                for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(64)) {
                    // SAFETY: the kernel's features are the helpers'; 16 quant bytes at QS in
                    // the 18-byte block, 64 floats of y.
                    unsafe {
                        let d = splat(half(b, q2_0::D));
                        let qs = _mm_loadu_si128(b.as_ptr().add(q2_0::QS).cast());
                        // Code s of byte i is element 4i + s: interleave the four shifts.
                        let c0 = _mm_sub_epi8(_mm_and_si128(qs, m2), one);
                        let c1 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 2), m2), one);
                        let c2 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m2), one);
                        let c3 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 6), m2), one);
                        let (a0, a1) = (_mm_unpacklo_epi8(c0, c1), _mm_unpackhi_epi8(c0, c1));
                        let (b0, b1) = (_mm_unpacklo_epi8(c2, c3), _mm_unpackhi_epi8(c2, c3));
                        let out = y.as_mut_ptr();
                        i8_mul(out, _mm_unpacklo_epi16(a0, b0), d);
                        i8_mul(out.add(16), _mm_unpackhi_epi16(a0, b0), d);
                        i8_mul(out.add(32), _mm_unpacklo_epi16(a1, b1), d);
                        i8_mul(out.add(48), _mm_unpackhi_epi16(a1, b1), d);
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn tq1_0(x: &[u8], y: &mut [f32]) {
                const POW3: [i16; 5] = [1, 3, 9, 27, 81];
                let ff = _mm256_set1_epi16(0xff);
                let three = _mm256_set1_epi16(3);
                let one = _mm_set1_epi8(1);
                for (b, y) in x.chunks_exact(54).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16-byte loads at QS,
                    // QS + 16 and QS + 32 (inside the 54-byte block), 16 floats per store at
                    // offsets below 240 of y's 256; the last 16 are written by index.
                    unsafe {
                        let dv = half(b, tq1_0::D);
                        let d = splat(dv);
                        // Digit n of 16 bytes: ((byte * 3^n mod 256) * 3) >> 8, minus 1.
                        let digits = |v: __m128i, n: usize| {
                            let w = _mm256_cvtepu8_epi16(v);
                            let q = _mm256_and_si256(
                                _mm256_mullo_epi16(w, _mm256_set1_epi16(POW3[n])),
                                ff,
                            );
                            let t = _mm256_srli_epi16(_mm256_mullo_epi16(q, three), 8);
                            let t = _mm_packus_epi16(
                                _mm256_castsi256_si128(t),
                                _mm256_extracti128_si256(t, 1),
                            );
                            _mm_sub_epi8(t, one)
                        };
                        let out = y.as_mut_ptr();
                        for half16 in 0..2 {
                            let v = _mm_loadu_si128(b.as_ptr().add(tq1_0::QS + 16 * half16).cast());
                            for n in 0..5 {
                                i8_mul(out.add(32 * n + 16 * half16), digits(v, n), d);
                            }
                        }
                        let v = _mm_loadu_si128(b.as_ptr().add(tq1_0::QS + 32).cast());
                        for n in 0..5 {
                            i8_mul(out.add(160 + 16 * n), digits(v, n), d);
                        }
                    }
                    // The 16 digits of qh's 4 bytes, 4 each, digit-major.
                    for n in 0..4 {
                        for m in 0..4 {
                            let q = b[tq1_0::QH + m].wrapping_mul([1u8, 3, 9, 27][n]);
                            let t = ((u16::from(q) * 3) >> 8) as i8 - 1;
                            // SAFETY: the kernel's features include F16C.
                            y[240 + 4 * n + m] = f32::from(t) * unsafe { half(b, tq1_0::D) };
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq1_s(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(50).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; grid rows are 8 bytes of
                    // IQ1S_GRID (indices below 2048 by construction); 16 floats per store at
                    // 32ib + 16k of y's 256.
                    unsafe {
                        let d = half(b, iq1_s::D);
                        for ib in 0..8 {
                            let qh = le16(b, iq1_s::QH + 2 * ib);
                            let dl = splat(d * f32::from(2 * ((qh >> 12) & 7) + 1));
                            let delta = splat(if qh & 0x8000 != 0 {
                                -IQ1S_DELTA
                            } else {
                                IQ1S_DELTA
                            });
                            for k in 0..2 {
                                let row = |l: usize| {
                                    let index = usize::from(b[iq1_s::QS + 4 * ib + l])
                                        | (usize::from((qh >> (3 * l)) & 7) << 8);
                                    i64::from_le_bytes(IQ1S_GRID[index].map(|g| g as u8))
                                };
                                let v = _mm_set_epi64x(row(2 * k + 1), row(2 * k));
                                mul_i8_plus(y.as_mut_ptr().add(32 * ib + 16 * k), dl, v, delta);
                            }
                        }
                    }
                }
            }
            /// Two grid rows of 8 magnitudes as one vector.
            #[inline(always)]
            fn rows8(a: &[u8; 8], b: &[u8; 8]) -> __m128i {
                let lo = i64::from_le_bytes(*a);
                let hi = i64::from_le_bytes(*b);
                // SAFETY: register-only (SSE2, part of x86-64).
                unsafe { _mm_set_epi64x(hi, lo) }
            }
            /// Four grid rows of 4 magnitudes as one vector.
            #[inline(always)]
            fn rows4(r: [&[u8; 4]; 4]) -> __m128i {
                let w = r.map(|r| i32::from_le_bytes(*r));
                // SAFETY: register-only (SSE2, part of x86-64).
                unsafe { _mm_setr_epi32(w[0], w[1], w[2], w[3]) }
            }
            #[inline(always)]
            fn u32_at(b: &[u8], at: usize) -> u32 {
                u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq2_xxs(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(66).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                    // 32ib + 16p of y's 256; grid indices are bytes (the grid has 256 rows).
                    unsafe {
                        let d = half(b, iq2_xxs::D);
                        for ib in 0..8 {
                            let g = &b[iq2_xxs::QS + 8 * ib..iq2_xxs::QS + 8 * ib + 8];
                            let aux = u32_at(g, 4);
                            let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
                            for p in 0..2 {
                                let (l0, l1) = (2 * p, 2 * p + 1);
                                let s0 = KSIGNS_IQ2XS[((aux >> (7 * l0)) & 127) as usize];
                                let s1 = KSIGNS_IQ2XS[((aux >> (7 * l1)) & 127) as usize];
                                let v = rows8(
                                    &IQ2XXS_GRID[usize::from(g[l0])],
                                    &IQ2XXS_GRID[usize::from(g[l1])],
                                );
                                let signs = u16::from(s0) | (u16::from(s1) << 8);
                                mul_u8_signed(
                                    y.as_mut_ptr().add(32 * ib + 16 * p),
                                    db,
                                    db,
                                    v,
                                    signs,
                                );
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq2_xs(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(74).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                    // 32ib + 16p of y's 256; grid indices are 9 bits (512 rows).
                    unsafe {
                        let d = half(b, iq2_xs::D);
                        for ib in 0..8 {
                            let s = b[iq2_xs::SCALES + ib];
                            let db = [
                                d * (0.5 + f32::from(s & 0x0f)) * 0.25,
                                d * (0.5 + f32::from(s >> 4)) * 0.25,
                            ];
                            for p in 0..2 {
                                let q0 = le16(b, iq2_xs::QS + 2 * (4 * ib + 2 * p));
                                let q1 = le16(b, iq2_xs::QS + 2 * (4 * ib + 2 * p + 1));
                                let v = rows8(
                                    &IQ2XS_GRID[usize::from(q0 & 511)],
                                    &IQ2XS_GRID[usize::from(q1 & 511)],
                                );
                                let signs = u16::from(KSIGNS_IQ2XS[usize::from(q0 >> 9)])
                                    | (u16::from(KSIGNS_IQ2XS[usize::from(q1 >> 9)]) << 8);
                                let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                                mul_u8_signed(out, db[p], db[p], v, signs);
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq2_s(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(82).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                    // 32ib + 16p of y's 256; grid indices are 10 bits (1024 rows).
                    unsafe {
                        let d = half(b, iq2_s::D);
                        for ib in 0..8 {
                            let s = b[iq2_s::SCALES + ib];
                            let db = [
                                d * (0.5 + f32::from(s & 0x0f)) * 0.25,
                                d * (0.5 + f32::from(s >> 4)) * 0.25,
                            ];
                            let qh = usize::from(b[iq2_s::QH + ib]);
                            let index = |l: usize| {
                                usize::from(b[iq2_s::QS + 4 * ib + l])
                                    | ((qh << (8 - 2 * l)) & 0x300)
                            };
                            for p in 0..2 {
                                let (l0, l1) = (2 * p, 2 * p + 1);
                                let v = rows8(&IQ2S_GRID[index(l0)], &IQ2S_GRID[index(l1)]);
                                let signs = u16::from(b[iq2_s::SIGNS + 4 * ib + l0])
                                    | (u16::from(b[iq2_s::SIGNS + 4 * ib + l1]) << 8);
                                let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                                mul_u8_signed(out, db[p], db[p], v, signs);
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq3_xxs(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(98).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                    // 32ib + 16p of y's 256; grid indices are bytes (256 rows).
                    unsafe {
                        let d = half(b, iq3_xxs::D);
                        for ib in 0..8 {
                            let aux = u32_at(b, iq3_xxs::SCALES_AND_SIGNS + 4 * ib);
                            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
                            let at = iq3_xxs::QS + 8 * ib;
                            for p in 0..2 {
                                let g = |k: usize| &IQ3XXS_GRID[usize::from(b[at + 4 * p + k])];
                                let v = rows4([g(0), g(1), g(2), g(3)]);
                                let s = |l: usize| KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                                let signs = u16::from(s(2 * p)) | (u16::from(s(2 * p + 1)) << 8);
                                mul_u8_signed(
                                    y.as_mut_ptr().add(32 * ib + 16 * p),
                                    db,
                                    db,
                                    v,
                                    signs,
                                );
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feat)]
            pub unsafe fn iq3_s(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(110).zip(y.chunks_exact_mut(256)) {
                    // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                    // 32ib + 16p of y's 256; grid indices are 9 bits (512 rows).
                    unsafe {
                        let d = half(b, iq3_s::D);
                        for ib in 0..8 {
                            let s = b[iq3_s::SCALES + ib / 2] >> (4 * (ib % 2));
                            let db = d * f32::from(1 + 2 * (s & 0x0f));
                            let qh = usize::from(b[iq3_s::QH + ib]);
                            let at = iq3_s::QS + 8 * ib;
                            let g = |l: usize, k: usize| {
                                let shift = 8 - 2 * l - k;
                                &IQ3S_GRID[usize::from(b[at + 2 * l + k]) | ((qh << shift) & 256)]
                            };
                            for p in 0..2 {
                                let (l0, l1) = (2 * p, 2 * p + 1);
                                let v = rows4([g(l0, 0), g(l0, 1), g(l1, 0), g(l1, 1)]);
                                let signs = u16::from(b[iq3_s::SIGNS + 4 * ib + l0])
                                    | (u16::from(b[iq3_s::SIGNS + 4 * ib + l1]) << 8);
                                mul_u8_signed(
                                    y.as_mut_ptr().add(32 * ib + 16 * p),
                                    db,
                                    db,
                                    v,
                                    signs,
                                );
                            }
                        }
                    }
                }
            }
            #[target_feature(enable = $feat)]
            pub unsafe fn iq1_m(x: &[u8], y: &mut [f32]) {
                for (b, y) in x.chunks_exact(56).zip(y.chunks_exact_mut(256)) {
                    let sc = [0, 1, 2, 3].map(|k| le16(b, iq1_m::SCALES + 2 * k));
                    let bits = (sc[0] >> 12)
                        | ((sc[1] >> 8) & 0x00f0)
                        | ((sc[2] >> 4) & 0x0f00)
                        | (sc[3] & 0xf000);
                    // SAFETY: the kernel's features are the helpers'; grid indices are 11 bits
                    // (IQ1S_GRID has 2048 rows); 16 floats per store at 32ib + 16p of y's 256.
                    unsafe {
                        let d = half_bits(bits);
                        for ib in 0..8 {
                            let word = sc[ib / 2] >> (6 * (ib % 2));
                            let dl = [
                                d * f32::from(2 * (word & 7) + 1),
                                d * f32::from(2 * ((word >> 3) & 7) + 1),
                            ];
                            let qs = iq1_m::QS + 4 * ib;
                            for p in 0..2 {
                                let h = b[iq1_m::QH + 2 * ib + p];
                                let delta = |bit: u8| {
                                    if h & bit != 0 {
                                        -IQ1S_DELTA
                                    } else {
                                        IQ1S_DELTA
                                    }
                                };
                                let row0 = &IQ1S_GRID
                                    [usize::from(b[qs + 2 * p]) | ((usize::from(h) << 8) & 0x700)];
                                let row1 = &IQ1S_GRID[usize::from(b[qs + 2 * p + 1])
                                    | ((usize::from(h) << 4) & 0x700)];
                                let lo = i64::from_le_bytes(row0.map(|g| g as u8));
                                let hi = i64::from_le_bytes(row1.map(|g| g as u8));
                                let v = _mm_set_epi64x(hi, lo);
                                let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                                mul_i8_plus2(out, dl[p], v, delta(0x08), delta(0x80));
                            }
                        }
                    }
                }
            }
        }
    };
}

/// Asks for the 64-byte line holding `p` in a writable state (`prefetchw`), ahead of stores to
/// it. A hint: it reads and writes nothing, and never faults.
///
/// # Safety
/// The CPU has PRFCHW (every x86-64 CPU with AVX-512 does; older ones run it as a no-op).
#[inline(always)]
unsafe fn prefetch_write(p: *const f32) {
    // SAFETY: the caller's; the instruction touches no register or flag but its address.
    unsafe {
        core::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, preserves_flags, readonly))
    }
}

/// The kernels of Q8_0 and Q4_K, in 256-bit vectors for both instruction sets: on the AVX-512
/// CPU measured (AMD Zen 4, which runs a 512-bit operation as two 256-bit halves) 512-bit
/// versions of these two ran slower (Q4_K by 8%, Q8_0 by 8% in L1; BENCHMARKS.md, Tensor
/// values); the other types' kernels gain from AVX-512, or (F16, BF16) run as fast either way.
///
/// With `PW` (chosen on Intel's AVX-512 cores; BF16 there too), the kernel first asks for the
/// output lines 4 KiB ahead of its stores in a writable state (`prefetchw`), and Q4_K stores in
/// address order: where the output overflows L2, a line's fetch then overlaps the stores
/// before it (stores alone, on an Intel Xeon: 30.2 -> 31.7 GB/s at 4 MiB, 21 -> 29 at 64 MiB;
/// BF16 1.1x -> 1.46x ggml at 64 MiB). AMD keeps the kernels measured there (`PW` false).
mod v256 {
    use super::h256::*;
    use super::{k4_scales, prefetch_write};
    use crate::quant::blocks::{q4_k, q8_0};
    use core::arch::x86_64::*;

    /// How far ahead of the stores `PW` asks for output lines, in bytes of output.
    const AHEAD: usize = 4096;

    /// BF16, with `prefetchw` (`PW`) as the others, one by one up to a 64-byte boundary of y.
    #[cfg(gguf_avx512)]
    #[target_feature(enable = "avx2")]
    pub unsafe fn bf16<const PW: bool>(x: &[u8], y: &mut [f32]) {
        let n = (x.len() / 2).min(y.len());
        let head = y.as_ptr().align_offset(64).min(n);
        for j in 0..head {
            y[j] = f32::from_bits(u32::from(u16::from_le_bytes([x[2 * j], x[2 * j + 1]])) << 16);
        }
        let mut i = head;
        while i + 16 <= n {
            if PW && i + AHEAD / 4 + 16 <= n {
                // SAFETY: those 16 floats (one line) are in bounds.
                unsafe { prefetch_write(y.as_ptr().add(i + AHEAD / 4)) };
            }
            // SAFETY: i + 16 <= n: 32 bytes of x and 16 floats of y are in bounds.
            unsafe { bf16x16(y.as_mut_ptr().add(i), x.as_ptr().add(2 * i)) };
            i += 16;
        }
        for j in i..n {
            y[j] = f32::from_bits(u32::from(u16::from_le_bytes([x[2 * j], x[2 * j + 1]])) << 16);
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn q8_0<const PW: bool>(x: &[u8], y: &mut [f32]) {
        let n = (x.len() / 34).min(y.len() / 32);
        let (x, y) = (x.as_ptr(), y.as_mut_ptr());
        for i in 0..n {
            if PW && i + AHEAD / 128 < n {
                // SAFETY: that block's 32 floats (two lines) are in bounds.
                unsafe {
                    let ahead = y.add(32 * (i + AHEAD / 128));
                    prefetch_write(ahead);
                    prefetch_write(ahead.add(16));
                }
            }
            // SAFETY: i < n: block i (34 bytes: 2 + 32 quants) and its 32 floats are in
            // bounds; the kernel's features are the helpers'.
            unsafe {
                let (b, y) = (x.add(34 * i), y.add(32 * i));
                let d = splat_half(b.add(q8_0::D));
                // 8 quants a load, widened by the load itself (`vpmovsxbd ymm, m64`): `i8_mul`'s
                // 16-byte load costs LLVM an extra shuffle for its upper half.
                for k in 0..4 {
                    let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(b.add(q8_0::QS + 8 * k).cast()));
                    _mm256_storeu_ps(y.add(8 * k), _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
                }
            }
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn q4_k<const PW: bool>(x: &[u8], y: &mut [f32]) {
        let n = (x.len() / 144).min(y.len() / 256);
        let (x, y) = (x.as_ptr(), y.as_mut_ptr());
        for i in 0..n {
            if PW && i + AHEAD / 1024 < n {
                for l in 0..16 {
                    // SAFETY: that block's 256 floats (16 lines) are in bounds.
                    unsafe { prefetch_write(y.add(256 * (i + AHEAD / 1024) + 16 * l)) };
                }
            }
            // SAFETY: i < n: block i (144 bytes) and its 256 floats are in bounds; the
            // quants of group g (32 bytes at 16 + 32g) lie in the block, its 64 floats
            // (at 64g) in the 256; the kernel's features are the helpers'.
            unsafe {
                let (b, y) = (x.add(144 * i), y.add(256 * i));
                let s = k4_scales(b.add(q4_k::D), b.add(q4_k::DMIN), b.add(q4_k::SCALES));
                // Through memory: each scale is then broadcast by a load
                // (`vbroadcastss` from memory), where from a register LLVM spends one
                // or two shuffles on it, on the port the quants' widening needs
                // (Q4_K: 60 GB/s in L1, 57 from registers).
                let s = core::hint::black_box(&s);
                for g in 0..4 {
                    let (dl, ml) = (splat(s[2 * g]), splat(s[8 + 2 * g]));
                    let (dh, mh) = (splat(s[2 * g + 1]), splat(s[9 + 2 * g]));
                    let q = b.add(q4_k::QS + 32 * g);
                    let out = y.add(64 * g);
                    if PW {
                        nibbles_mul_sub_in_order(out, out.add(32), q, dl, ml, dh, mh);
                    } else {
                        // The order measured on AMD's Zen 4 (BENCHMARKS.md), kept there.
                        for k in 0..2 {
                            let (lo, hi) = (out.add(16 * k), out.add(32 + 16 * k));
                            nibbles_mul_sub(lo, hi, q.add(16 * k), dl, ml, dh, mh);
                        }
                    }
                }
            }
        }
    }
}

block_kernels!(avx2, h256, "avx2,f16c");
#[cfg(gguf_avx512)]
block_kernels!(avx512, h512, "avx2,f16c,avx512f,avx512bw,avx512vl");

/// The AVX2 kernels chosen on Intel's AVX-512 cores, with `prefetchw` as `v256`'s `PW`
/// kernels where the output is larger than L2 (2 MiB a core on those CPUs): each runs on about
/// 1 KiB of output at a time (one block of 256 floats, or as many smaller blocks), after asking
/// for the lines of the output 4 KiB ahead of that piece (64 MiB of output on an Intel Xeon:
/// Q4_0 1.9x -> 2.7x ggml, IQ4_NL 2.6x -> 3.5x). A smaller output is converted in one call:
/// there the pieces cost 5 to 10%.
#[cfg(gguf_avx512)]
mod pw256 {
    use super::prefetch_write;

    /// The output, in floats, from which the kernels prefetch: 2 MiB.
    pub const FROM: usize = 1 << 19;

    macro_rules! chunked {
        ($($f:ident: $bytes:literal, $elems:literal;)*) => {$(
            #[target_feature(enable = "avx2,f16c")]
            pub unsafe fn $f(x: &[u8], y: &mut [f32]) {
                const PER: usize = if $elems >= 256 { 1 } else { 256 / $elems };
                if y.len() < FROM {
                    // SAFETY: the caller's: the CPU has AVX2 and F16C.
                    return unsafe { super::avx2::$f(x, y) };
                }
                let n = (x.len() / $bytes).min(y.len() / $elems);
                let mut i = 0;
                while i < n {
                    let k = PER.min(n - i);
                    let ahead = i * $elems + 1024;
                    if ahead + PER * $elems <= y.len() {
                        for l in 0..PER * $elems / 16 {
                            // SAFETY: those 16 floats (one line if y is aligned) are in bounds.
                            unsafe { prefetch_write(y.as_ptr().add(ahead + 16 * l)) };
                        }
                    }
                    let (x, y) = (&x[i * $bytes..(i + k) * $bytes], &mut y[i * $elems..(i + k) * $elems]);
                    // SAFETY: the caller's: the CPU has AVX2 and F16C.
                    unsafe { super::avx2::$f(x, y) };
                    i += k;
                }
            }
        )*};
    }
    chunked! {
        q4_0: 18, 32;
        q4_1: 20, 32;
        q5_0: 22, 32;
        q5_1: 24, 32;
        q2_k: 84, 256;
        q3_k: 110, 256;
        q6_k: 210, 256;
        iq2_xs: 74, 256;
        iq1_s: 50, 256;
        iq4_nl: 18, 32;
        iq4_xs: 136, 256;
        tq1_0: 54, 256;
        tq2_0: 66, 256;
        mxfp4: 17, 32;
        q2_0: 18, 64;
    }
}

/// Wrappers named as the types they convert.
macro_rules! table {
    ($module:path) => {
        |dtype: DataType| -> Option<Kernel> {
            use safe::v256;
            use $module as m;
            use DataType::*;
            Some(match dtype {
                F16 => m::f16,
                BF16 => m::bf16,
                Q8_0 => v256::q8_0,
                Q4_K => v256::q4_k,
                Q4_0 => m::q4_0,
                Q4_1 => m::q4_1,
                Q5_0 => m::q5_0,
                Q5_1 => m::q5_1,
                Q5_K => m::q5_k,
                Q6_K => m::q6_k,
                Q2_K => m::q2_k,
                Q3_K => m::q3_k,
                IQ4_NL => m::iq4_nl,
                IQ4_XS => m::iq4_xs,
                MXFP4 => m::mxfp4,
                TQ2_0 => m::tq2_0,
                TQ1_0 => m::tq1_0,
                Q2_0 => m::q2_0,
                IQ1_S => m::iq1_s,
                IQ1_M => m::iq1_m,
                IQ2_XXS => m::iq2_xxs,
                IQ2_XS => m::iq2_xs,
                IQ2_S => m::iq2_s,
                IQ3_XXS => m::iq3_xxs,
                IQ3_S => m::iq3_s,
                // Types with no kernel: every type is named, so a new one must be placed here.
                F32 | Q8_1 | Q8_K | I8 | I16 | I32 | I64 | F64 | NVFP4 | Q1_0 => return None,
            })
        }
    };
}

mod safe {
    /// Wrappers of the 256-bit kernels both instruction sets use.
    pub mod v256 {
        macro_rules! wrap {
            ($($f:ident),*) => {$(
                pub fn $f(x: &[u8], y: &mut [f32]) {
                    // SAFETY: only `kernel` hands this function out, after `has(Isa::Avx2)`
                    // (which `has(Isa::Avx512)` implies).
                    unsafe { super::super::v256::$f::<false>(x, y) }
                }
            )*};
        }
        wrap!(q8_0, q4_k);
        /// With `prefetchw` ahead of the stores.
        #[cfg(gguf_avx512)]
        pub mod pw {
            macro_rules! wrap {
                ($($f:ident),*) => {$(
                    pub fn $f(x: &[u8], y: &mut [f32]) {
                        // SAFETY: only `chosen` hands this function out, after
                        // `has(Isa::Avx512)` (AVX2; PRFCHW, which every AVX-512 CPU has).
                        unsafe { super::super::super::v256::$f::<true>(x, y) }
                    }
                )*};
            }
            wrap!(q8_0, q4_k, bf16);
        }
        /// Wrappers of `pw256`'s kernels.
        #[cfg(gguf_avx512)]
        pub mod pw_avx2 {
            macro_rules! wrap {
                ($($f:ident),*) => {$(
                    pub fn $f(x: &[u8], y: &mut [f32]) {
                        // SAFETY: only `chosen` hands this function out, after
                        // `has(Isa::Avx512)` (AVX2, F16C; PRFCHW, which every AVX-512 CPU has).
                        unsafe { super::super::super::pw256::$f(x, y) }
                    }
                )*};
            }
            wrap!(
                q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q6_k, iq2_xs, iq1_s, iq4_nl, iq4_xs, tq1_0,
                tq2_0, mxfp4, q2_0
            );
        }
    }
    /// Wrappers of the AVX2 kernels.
    pub mod avx2 {
        macro_rules! wrap {
            ($($f:ident),*) => {$(
                pub fn $f(x: &[u8], y: &mut [f32]) {
                    // SAFETY: only `kernel` hands this function out, after `has(Isa::Avx2)`.
                    unsafe { super::super::avx2::$f(x, y) }
                }
            )*};
        }
        wrap!(
            f16, bf16, q4_0, q4_1, q5_0, q5_1, q5_k, q6_k, q2_k, q3_k, iq4_nl, iq4_xs, mxfp4,
            tq2_0, q2_0, tq1_0, iq1_s, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_m
        );
    }
    /// Wrappers of the AVX-512 kernels.
    #[cfg(gguf_avx512)]
    pub mod avx512 {
        macro_rules! wrap {
            ($($f:ident),*) => {$(
                pub fn $f(x: &[u8], y: &mut [f32]) {
                    // SAFETY: only `kernel` hands this function out, after `has(Isa::Avx512)`.
                    unsafe { super::super::avx512::$f(x, y) }
                }
            )*};
        }
        wrap!(
            f16, bf16, q4_0, q4_1, q5_0, q5_1, q5_k, q6_k, q2_k, q3_k, iq4_nl, iq4_xs, mxfp4,
            tq2_0, q2_0, tq1_0, iq1_s, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_m
        );
    }
}

/// Whether this CPU is Intel's (CPUID leaf 0 names "GenuineIntel"), asked once.
#[cfg(gguf_avx512)]
fn intel() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| {
        // SAFETY: CPUID leaf 0 exists on every x86-64 CPU (newer compilers call this safe).
        #[allow(unused_unsafe)]
        let r = unsafe { __cpuid(0) };
        [r.ebx, r.edx, r.ecx] == [0x756e_6547, 0x4965_6e69, 0x6c65_746e]
    })
}

/// The types whose 256-bit (AVX2) kernels run faster than their AVX-512 ones on Intel's cores,
/// which fuse two of their three vector ports into one for a 512-bit operation: kernels whose
/// work is widening and converting 16 bytes at a time issue as many operations at either
/// width, on fewer ports at 512 bits. Measured on an Intel Xeon with AVX-512 FP16 (output in
/// L2: 5 to 27% faster; BENCHMARKS.md, Tensor values). On AMD's Zen 4, which runs a 512-bit
/// operation as two 256-bit halves on all four ports, the AVX-512 kernels stay.
#[cfg(gguf_avx512)]
fn narrower_on_intel(dtype: DataType) -> bool {
    use DataType::*;
    matches!(
        dtype,
        F16 | BF16
            | Q4_0
            | Q4_1
            | Q5_0
            | Q5_1
            | Q2_K
            | Q3_K
            | Q6_K
            | IQ2_XS
            | IQ1_S
            | IQ4_NL
            | IQ4_XS
            | TQ1_0
            | TQ2_0
            | MXFP4
            | Q2_0
    )
}

/// The kernel the dispatch uses for `dtype` under `isa`: `isa`'s own ([`kernel`]), except that
/// on Intel's AVX-512 CPUs the types of `narrower_on_intel` take their AVX2 kernel.
pub(super) fn chosen(isa: Isa, dtype: DataType) -> Option<Kernel> {
    #[cfg(gguf_avx512)]
    if isa == Isa::Avx512 && has(isa) && intel() {
        match dtype {
            DataType::Q4_K => return Some(safe::v256::pw::q4_k),
            DataType::Q8_0 => return Some(safe::v256::pw::q8_0),
            DataType::BF16 => return Some(safe::v256::pw::bf16),
            _ if narrower_on_intel(dtype) => {
                use safe::v256::pw_avx2 as m;
                use DataType::*;
                return Some(match dtype {
                    Q4_0 => m::q4_0,
                    Q4_1 => m::q4_1,
                    Q5_0 => m::q5_0,
                    Q5_1 => m::q5_1,
                    Q2_K => m::q2_k,
                    Q3_K => m::q3_k,
                    Q6_K => m::q6_k,
                    IQ2_XS => m::iq2_xs,
                    IQ1_S => m::iq1_s,
                    IQ4_NL => m::iq4_nl,
                    IQ4_XS => m::iq4_xs,
                    TQ1_0 => m::tq1_0,
                    TQ2_0 => m::tq2_0,
                    MXFP4 => m::mxfp4,
                    Q2_0 => m::q2_0,
                    _ => return kernel(Isa::Avx2, dtype),
                });
            }
            _ => {}
        }
    }
    kernel(isa, dtype)
}

/// The kernel of `isa` for `dtype`, if this CPU has `isa` and there is one.
pub(super) fn kernel(isa: Isa, dtype: DataType) -> Option<Kernel> {
    if !has(isa) {
        return None;
    }
    match isa {
        Isa::Avx2 => table!(safe::avx2)(dtype),
        #[cfg(gguf_avx512)]
        Isa::Avx512 => table!(safe::avx512)(dtype),
        _ => None,
    }
}
