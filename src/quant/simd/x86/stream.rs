//! Non-temporal output for conversions larger than the last-level cache: the floats go to memory
//! by streaming stores (`vmovntps`), not through the caches. An ordinary store first reads the
//! line it writes (read for ownership): beyond the caches that read is as much traffic as the
//! write, and the floats written would not stay cached anyway.
//!
//! [`convert`] runs a type's ordinary kernel on a few KiB of blocks at a time into a buffer that
//! stays in L1, then streams that buffer out in 32-byte stores, aligned: the floats before the
//! output's first 32-byte boundary, and the last few, go by ordinary stores (whatever the
//! output's alignment, and whatever a block's length). The floats are the kernel's, bit for bit.
//!
//! The kernel list in `mod.rs` says which types take this path (`nt`) and which never do
//! (`plain`).

use crate::quant::simd::isa::Kernel;
use core::arch::x86_64::*;

/// The output, in floats, from which a conversion streams: 32 MiB, as large as the last-level
/// cache of the CPUs measured (an AMD EPYC of the Zen 4 generation has 32 MiB of L3 per 8-core
/// die, which one core's conversion fills). A call converting less writes through the caches:
/// a caller may read its floats right away, and below the cache's size that is faster.
pub(super) const FROM: usize = 32 << 20 >> 2;

/// Whether a conversion of `floats` outputs streams (the types listed `nt`).
#[inline(always)]
pub(super) const fn nt(floats: usize) -> bool {
    floats >= FROM
}

/// Never (the types listed `plain`).
#[inline(always)]
pub(super) const fn plain(_floats: usize) -> bool {
    false
}

/// The floats each call of the kernel writes into the buffer, at most (whole blocks; a block
/// larger than this is written alone).
const CHUNK: usize = 1024;

/// The buffer: the kernel writes from index `AT` (64-byte aligned), and up to 7 floats not yet
/// written out wait just below it.
const AT: usize = 16;

#[repr(C, align(64))]
struct Stage([f32; AT + CHUNK]);

/// `kernel` (blocks of `bytes` bytes giving `elems` floats each, `elems` at most [`CHUNK`]) over
/// `x` into `y`, as `kernel(x, y)` writes them, by streaming stores; then a store fence, so the
/// floats are ordered before any later store of this thread (another thread told of them by a
/// flag sees them).
///
/// # Safety
/// The CPU has AVX.
#[target_feature(enable = "avx")]
pub(super) unsafe fn convert(bytes: usize, elems: usize, kernel: Kernel, x: &[u8], y: &mut [f32]) {
    debug_assert!(elems > 0 && elems <= CHUNK);
    let per = CHUNK / elems;
    let n = (x.len() / bytes).min(y.len() / elems);
    let len = n * elems;
    // The floats before y's first 32-byte boundary.
    let head = y.as_ptr().align_offset(32).min(len);
    let mut stage = Stage([0.0; AT + CHUNK]);
    let buf = &mut stage.0;
    // y[..done] is written; buf[AT - carry..AT] holds y[done..done + carry].
    let (mut done, mut carry) = (0, 0);
    let mut b = 0;
    while b < n {
        let k = per.min(n - b);
        let l = k * elems;
        kernel(&x[b * bytes..(b + k) * bytes], &mut buf[AT..AT + l]);
        let (start, avail) = (AT - carry, carry + l);
        let mut i = 0;
        if done < head {
            i = (head - done).min(avail);
            y[done..done + i].copy_from_slice(&buf[start..start + i]);
        }
        if done + i >= head {
            // From here y[done + i] is 32-byte aligned (at head, then 8 floats on each time).
            while i + 8 <= avail {
                // SAFETY: done + i + 8 <= done + avail <= len <= y.len(), and y[done + i] is
                // 32-byte aligned; start + i + 8 <= AT + l is inside buf; the CPU has AVX.
                unsafe {
                    let v = _mm256_loadu_ps(buf.as_ptr().add(start + i));
                    _mm256_stream_ps(y.as_mut_ptr().add(done + i), v);
                }
                i += 8;
            }
        }
        // Fewer than 8 floats are left: below AT for the next round.
        carry = avail - i;
        buf.copy_within(start + i..start + avail, AT - carry);
        done += i;
        b += k;
    }
    y[done..done + carry].copy_from_slice(&buf[AT - carry..AT]);
    // SAFETY: SSE, part of x86-64 (compilers before 1.87 call the intrinsic unsafe).
    #[allow(unused_unsafe)]
    unsafe {
        _mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::scalar_kernel;
    use crate::types::DataType;

    /// Blocks of `dtype` whose scales are finite: random bytes with every f16 scale of the
    /// layouts below set to 1.0 where one lies (Q8_0's and Q4_K's `d`, Q4_K's `dmin`).
    fn blocks(dtype: DataType, n: usize) -> Vec<u8> {
        let bytes = usize::try_from(dtype.block_bytes()).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut x: Vec<u8> = (0..n * bytes)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[3]
            })
            .collect();
        let scales: &[usize] = match dtype {
            DataType::Q8_0 => &[0],
            DataType::Q4_K => &[0, 2],
            _ => &[],
        };
        for b in x.chunks_exact_mut(bytes) {
            for &at in scales {
                b[at..at + 2].copy_from_slice(&0x3c00u16.to_le_bytes());
            }
        }
        x
    }

    /// Every output alignment (0 to 15 floats past a 64-byte boundary) and lengths around the
    /// buffer's: the streamed floats are the kernel's, and nothing past them is written.
    #[test]
    fn streamed_output_equals_the_kernels_at_every_alignment() {
        if !is_x86_feature_detected!("avx") {
            return;
        }
        for dtype in [DataType::Q8_0, DataType::Q4_K, DataType::BF16] {
            let bytes = usize::try_from(dtype.block_bytes()).unwrap();
            let elems = usize::try_from(dtype.block_elems()).unwrap();
            let kernel = scalar_kernel(dtype);
            for n_floats in [elems, 1000, 1024, 1056, 4096, 5 * 1024 + 512, 9 * 1024] {
                let n = n_floats.div_ceil(elems);
                let x = blocks(dtype, n);
                let mut want = vec![0f32; n * elems];
                kernel(&x, &mut want);
                for off in 0..16 {
                    let mut out = vec![-7f32; n * elems + 32];
                    let start = off + out.as_ptr().align_offset(64);
                    let y = &mut out[start..start + n * elems];
                    // SAFETY: the CPU has AVX (checked above).
                    unsafe { convert(bytes, elems, kernel, &x, y) };
                    let same = y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{} {n_floats} floats, {off} off", dtype.name());
                    assert!(out[..start].iter().all(|v| *v == -7.0));
                    assert!(out[start + n * elems..].iter().all(|v| *v == -7.0));
                }
            }
        }
    }

    /// Through the dispatch: an output of more than 32 MiB streams, with the scalar kernel's
    /// floats.
    #[test]
    fn the_dispatch_streams_a_large_output_with_the_same_floats() {
        for isa in [
            crate::quant::simd::Isa::Avx2,
            crate::quant::simd::Isa::Avx512,
        ] {
            for dtype in [DataType::Q8_0, DataType::Q4_K, DataType::BF16] {
                let Some(k) = crate::quant::simd::chosen(isa, dtype) else {
                    continue;
                };
                let elems = usize::try_from(dtype.block_elems()).unwrap();
                let n = (FROM + 1000).div_ceil(elems);
                let x = blocks(dtype, n);
                let mut want = vec![0f32; n * elems];
                scalar_kernel(dtype)(&x, &mut want);
                let mut out = vec![0f32; n * elems + 16];
                // Off a 32-byte boundary by 4 bytes.
                let start = out.as_ptr().align_offset(32) + 1;
                let y = &mut out[start..start + n * elems];
                k(&x, y);
                let same = y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{:?} {}", isa, dtype.name());
            }
        }
    }
}
