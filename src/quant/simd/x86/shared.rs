//! What the x86-64 kernels of every instruction set share: the scalar kernel for the blocks
//! they hand back, reading a block's halves (by F16C, as ggml), Q5's high bits, Q4_K's scales, and
//! the write prefetch.

use crate::types::DataType;
use core::arch::x86_64::*;

/// Converts one block `b` of `dtype` into `y` with the scalar kernel: for the blocks of Q4_1 and
/// Q5_1 whose scales are not both finite. Only there do two NaNs meet in one operation (`q * d`
/// and `m` in their sum), and x86 then keeps the first operand's; the kernels add in ggml's
/// order, but LLVM may swap an add's operands, and in release builds it did.
#[cold]
#[inline(never)]
pub(super) fn scalar_block(dtype: DataType, b: &[u8], y: &mut [f32]) {
    crate::quant::scalar::scalar_kernel(dtype)(b, y);
}

/// Little-endian `u16` at `at` (callers have checked the block's length).
#[inline(always)]
pub(super) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The f16 at `at` as f32, by F16C (which gives what ggml gives, quieting signalling NaNs).
///
/// # Safety
/// The CPU has F16C.
#[inline]
#[target_feature(enable = "f16c")]
pub(super) unsafe fn half(b: &[u8], at: usize) -> f32 {
    // SAFETY: the caller's.
    unsafe { half_bits(le16(b, at)) }
}

/// The f16 with bits `h` as f32 (F16C).
///
/// # Safety
/// The CPU has F16C.
#[inline]
#[target_feature(enable = "f16c")]
pub(super) unsafe fn half_bits(h: u16) -> f32 {
    // A broadcast, not `_mm_cvtsi32_si128`: LLVM turns that into a `vpinsrw` merging into
    // whatever register it picks, which chained each block's scale to the previous block's
    // floats (Q8_0 ran at a third of its speed).
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(h as i16)))
}

/// The 32 bits of Q5's `qh` (little-endian at `at`) as 32 bytes, byte k = 0x10 where bit k is
/// set: the fifth bit of element k.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn q5_high_bits(b: &[u8], at: usize) -> (__m128i, __m128i) {
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
pub(super) unsafe fn k4_scales(d: *const u8, dmin: *const u8, scales: *const u8) -> [f32; 16] {
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

/// Asks for the 64-byte line holding `p` in a writable state (`prefetchw`), ahead of stores to
/// it. A hint: it reads and writes nothing, and never faults.
///
/// # Safety
/// The CPU has PRFCHW (every x86-64 CPU with AVX-512 does; older ones run it as a no-op).
#[inline(always)]
pub(super) unsafe fn prefetch_write(p: *const f32) {
    // SAFETY: the caller's; the instruction touches no register or flag but its address.
    unsafe {
        core::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, preserves_flags, readonly))
    }
}
