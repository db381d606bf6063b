//! The AVX-512 (F, BW, VL, with AVX2 and F16C) kernels: the lane helpers (16 lanes, 16 values
//! a call) and the block kernels of `generic.rs` over them. Q8_0 and Q4_K take the 256-bit
//! kernels of `avx2.rs` under AVX-512 too (the kernel list in `mod.rs`).

/// Helpers for 16-lane (AVX-512) stores of 16 values.
mod lanes {
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

/// The block kernels (`generic.rs`) over 16-lane vectors.
pub(super) mod kernels {
    use crate::quant::simd::x86::avx512::lanes::*;
    crate::quant::simd::x86::generic::block_kernels!("avx2,f16c,avx512f,avx512bw,avx512vl");
}
