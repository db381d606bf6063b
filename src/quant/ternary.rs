//! The ternary types TQ1_0 and TQ2_0: values in {-1, 0, 1} times one f16 scale, computed as
//! `(q - 1) * d`.

use super::arith::{by_scales, fixed, Arith};
use super::blocks::{f16_at, tq1_0, tq2_0};

/// Digit `n` (0 = most significant) of a byte holding base-3 digits as a fixed-point fraction:
/// multiplying by 3^n drops the first n digits, and the top of `x * 3` is the next one.
#[inline(always)]
fn trit(byte: u8, n: usize) -> u8 {
    const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];
    let q = byte.wrapping_mul(POW3[n]);
    ((u16::from(q) * 3) >> 8) as u8
}

/// TQ1_0: 5 digits per byte of `qs` (32 then 16 bytes, digit-major), 4 per byte of `qh`.
pub fn tq1_0(src: &[u8], dst: &mut [f32]) {
    /// Digits `0..digits` of each of `bytes` (digit-major) into `y`, from `at`; returns the end.
    #[inline(always)]
    fn emit<A: Arith>(d: f32, bytes: &[u8], digits: usize, y: &mut [f32; 256], at: usize) -> usize {
        let mut at = at;
        for n in 0..digits {
            for (y, &q) in y[at..at + bytes.len()].iter_mut().zip(bytes) {
                *y = A::mul(f32::from(trit(q, n) as i8 - 1), d);
            }
            at += bytes.len();
        }
        at
    }
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 54], y: &mut [f32; 256]) {
        let at = emit::<A>(d, &b[tq1_0::QS..tq1_0::QS + 32], 5, y, 0);
        let at = emit::<A>(d, &b[tq1_0::QS + 32..tq1_0::QS + 48], 5, y, at);
        emit::<A>(d, &b[tq1_0::QH..tq1_0::QH + 4], 4, y, at);
    }
    for (b, y) in src.chunks_exact(54).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, tq1_0::D);
        by_scales!([d], block(d, b, y));
    }
}

/// TQ2_0: 2-bit codes, four per byte, 32-byte groups read four times.
pub fn tq2_0(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 66], y: &mut [f32; 256]) {
        for half in 0..2 {
            let qs: &[u8; 32] = b[tq2_0::QS + 32 * half..][..32].try_into().expect("32");
            for l in 0..4 {
                let out = &mut y[128 * half + 32 * l..][..32];
                for (y, &q) in out.iter_mut().zip(qs) {
                    let code = (q >> (2 * l)) & 3;
                    *y = A::mul(f32::from(code as i8 - 1), d);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(66).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, tq2_0::D);
        by_scales!([d], block(d, b, y));
    }
}
