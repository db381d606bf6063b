//! The AVX2 (with F16C) kernels: the lane helpers (8 lanes, 16 values a call), the block
//! kernels of `generic.rs` over them, the 256-bit Q8_0, Q4_K and BF16 kernels both instruction
//! sets use (`v256`), and the prefetching versions Intel's AVX-512 cores take (`pw256`).

/// Helpers for 8-lane (AVX2) stores of 16 values.
mod lanes {
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

/// The block kernels (`generic.rs`) over 8-lane vectors.
pub(super) mod kernels {
    use crate::quant::simd::x86::avx2::lanes::*;
    crate::quant::simd::x86::generic::block_kernels!("avx2,f16c");
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
pub(super) mod v256 {
    use crate::quant::blocks::{q4_k, q8_0};
    use crate::quant::simd::x86::avx2::lanes::*;
    use crate::quant::simd::x86::shared::{k4_scales, prefetch_write};
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

/// The AVX2 kernels chosen on Intel's AVX-512 cores, with `prefetchw` as `v256`'s `PW`
/// kernels where the output is larger than L2 (2 MiB a core on those CPUs): each runs on about
/// 1 KiB of output at a time (one block of 256 floats, or as many smaller blocks), after asking
/// for the lines of the output 4 KiB ahead of that piece (64 MiB of output on an Intel Xeon:
/// Q4_0 1.9x -> 2.7x ggml, IQ4_NL 2.6x -> 3.5x). A smaller output is converted in one call:
/// there the pieces cost 5 to 10%.
#[cfg(gguf_avx512)]
pub(super) mod pw256 {
    use crate::quant::simd::x86::shared::prefetch_write;

    /// The output, in floats, from which the kernels prefetch: 2 MiB.
    pub const FROM: usize = 1 << 19;

    macro_rules! chunked {
        ($($f:ident: $bytes:literal, $elems:literal;)*) => {$(
            #[target_feature(enable = "avx2,f16c")]
            pub unsafe fn $f(x: &[u8], y: &mut [f32]) {
                const PER: usize = if $elems >= 256 { 1 } else { 256 / $elems };
                if y.len() < FROM {
                    // SAFETY: the caller's: the CPU has AVX2 and F16C.
                    return unsafe { crate::quant::simd::x86::avx2::kernels::$f(x, y) };
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
                    unsafe { crate::quant::simd::x86::avx2::kernels::$f(x, y) };
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
