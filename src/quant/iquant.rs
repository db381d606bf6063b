//! The IQ types: grids of magnitudes (tables.rs) picked by index, with sign patterns, and
//! IQ4_NL/IQ4_XS's non-linear 4-bit values. Scales are applied as ggml applies them:
//! `d * (0.5 + s) * 0.25` for IQ2_XXS, and so on, each value `(scale * magnitude) * ±1`.

use super::arith::{by_scales, fixed, Arith};
use super::blocks::{f16_at, iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl};
use super::blocks::{iq4_xs, u16_at, u32_at};
use super::half::f16_to_f32;
use super::tables::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};
use super::tables::{KSIGNS_IQ2XS, KVALUES_IQ4NL};

/// `scale * magnitude`, negated where `signs` has bit `j` set (a negation, as ggml's build
/// gives it: a NaN's sign flips too).
#[inline(always)]
fn signed<A: Arith>(scale: f32, magnitude: u8, signs: u8, j: usize) -> f32 {
    let v = A::mul(scale, f32::from(magnitude));
    if signs & (1 << j) != 0 {
        -v
    } else {
        v
    }
}

/// IQ2_XXS: 8 groups of 32; each 8 bytes hold 4 grid indices and a u32 of 4 sign patterns (7
/// bits each) and a 4-bit scale.
pub fn iq2_xxs(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 66], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let g = &b[iq2_xxs::QS + 8 * ib..iq2_xxs::QS + 8 * ib + 8];
            let aux = u32_at(g, 4);
            let db = A::mul(A::mul(d, A::add(0.5, (aux >> 28) as f32)), 0.25);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let grid = &IQ2XXS_GRID[usize::from(g[l])];
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                for (j, y) in y.iter_mut().enumerate() {
                    *y = signed::<A>(db, grid[j], signs, j);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(66).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq2_xxs::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ2_XS: 32 u16 of a 9-bit grid index and a 7-bit sign pattern; two 4-bit scales a byte.
pub fn iq2_xs(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 74], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let s = b[iq2_xs::SCALES + ib];
            let db = [
                A::mul(A::mul(d, A::add(0.5, f32::from(s & 0x0F))), 0.25),
                A::mul(A::mul(d, A::add(0.5, f32::from(s >> 4))), 0.25),
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let q = u16_at(b, iq2_xs::QS + 2 * (4 * ib + l));
                let grid = &IQ2XS_GRID[usize::from(q & 511)];
                let signs = KSIGNS_IQ2XS[usize::from(q >> 9)];
                for (j, y) in y.iter_mut().enumerate() {
                    *y = signed::<A>(db[l / 2], grid[j], signs, j);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(74).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq2_xs::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ2_S: 10-bit grid indices (8 low bits in `qs`, 2 high in `qh`), explicit sign bytes.
pub fn iq2_s(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 82], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let s = b[iq2_s::SCALES + ib];
            let db = [
                A::mul(A::mul(d, A::add(0.5, f32::from(s & 0x0F))), 0.25),
                A::mul(A::mul(d, A::add(0.5, f32::from(s >> 4))), 0.25),
            ];
            let qh = usize::from(b[iq2_s::QH + ib]);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let index = usize::from(b[iq2_s::QS + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300);
                let grid = &IQ2S_GRID[index];
                let signs = b[iq2_s::SIGNS + 4 * ib + l];
                for (j, y) in y.iter_mut().enumerate() {
                    *y = signed::<A>(db[l / 2], grid[j], signs, j);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(82).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq2_s::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ3_XXS: 64 grid indices of 4 magnitudes, then 8 u32 of 4 sign patterns and a 4-bit scale.
pub fn iq3_xxs(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 98], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let aux = u32_at(b, iq3_xxs::SCALES_AND_SIGNS + 4 * ib);
            let db = A::mul(A::mul(d, A::add(0.5, (aux >> 28) as f32)), 0.5);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                let at = iq3_xxs::QS + 8 * ib + 2 * l;
                let g1 = &IQ3XXS_GRID[usize::from(b[at])];
                let g2 = &IQ3XXS_GRID[usize::from(b[at + 1])];
                for j in 0..4 {
                    y[j] = signed::<A>(db, g1[j], signs, j);
                    y[j + 4] = signed::<A>(db, g2[j], signs, j + 4);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(98).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq3_xxs::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ3_S: 9-bit grid indices (ninth bit in `qh`), explicit sign bytes, 4-bit odd scales.
pub fn iq3_s(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 110], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let s = b[iq3_s::SCALES + ib / 2] >> (4 * (ib % 2));
            let db = A::mul(d, f32::from(1 + 2 * (s & 0x0F)));
            let qh = usize::from(b[iq3_s::QH + ib]);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let at = iq3_s::QS + 8 * ib + 2 * l;
                let g1 = &IQ3S_GRID[usize::from(b[at]) | ((qh << (8 - 2 * l)) & 256)];
                let g2 = &IQ3S_GRID[usize::from(b[at + 1]) | ((qh << (7 - 2 * l)) & 256)];
                let signs = b[iq3_s::SIGNS + 4 * ib + l];
                for j in 0..4 {
                    y[j] = signed::<A>(db, g1[j], signs, j);
                    y[j + 4] = signed::<A>(db, g2[j], signs, j + 4);
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(110).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq3_s::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ1_S and IQ1_M: the offset added to each grid value.
pub(crate) const IQ1S_DELTA: f32 = 0.125;

/// IQ1_S: 11-bit indices into a grid of {-1, 0, 1}, plus or minus a delta, times an odd scale.
pub fn iq1_s(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 50], y: &mut [f32; 256]) {
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let qh = u16_at(b, iq1_s::QH + 2 * ib);
            let dl = A::mul(d, f32::from(2 * ((qh >> 12) & 7) + 1));
            let delta = if qh & 0x8000 != 0 {
                -IQ1S_DELTA
            } else {
                IQ1S_DELTA
            };
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let index = usize::from(b[iq1_s::QS + 4 * ib + l])
                    | (usize::from((qh >> (3 * l)) & 7) << 8);
                for (y, &g) in y.iter_mut().zip(&IQ1S_GRID[index]) {
                    *y = A::mul(dl, A::add(f32::from(g), delta));
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(50).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq1_s::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ1_M: as IQ1_S with a scale per 16 elements; the f16 super-block scale is gathered from the
/// top nibbles of the four scale words.
pub fn iq1_m(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 56], y: &mut [f32; 256]) {
        let sc = [0, 1, 2, 3].map(|k| u16_at(b, iq1_m::SCALES + 2 * k));
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let word = sc[ib / 2] >> (6 * (ib % 2));
            let dl = [
                A::mul(d, f32::from(2 * (word & 7) + 1)),
                A::mul(d, f32::from(2 * ((word >> 3) & 7) + 1)),
            ];
            let qs = &b[iq1_m::QS + 4 * ib..iq1_m::QS + 4 * ib + 4];
            let qh = [b[iq1_m::QH + 2 * ib], b[iq1_m::QH + 2 * ib + 1]];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let h = qh[l / 2];
                let (high, sign_bit) = if l % 2 == 0 {
                    ((usize::from(h) << 8) & 0x700, h & 0x08)
                } else {
                    ((usize::from(h) << 4) & 0x700, h & 0x80)
                };
                let delta = if sign_bit != 0 {
                    -IQ1S_DELTA
                } else {
                    IQ1S_DELTA
                };
                let grid = &IQ1S_GRID[usize::from(qs[l]) | high];
                for (y, &g) in y.iter_mut().zip(grid) {
                    *y = A::mul(dl[l / 2], A::add(f32::from(g), delta));
                }
            }
        }
    }
    for (b, y) in src.chunks_exact(56).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let sc = [0, 1, 2, 3].map(|k| u16_at(b, iq1_m::SCALES + 2 * k));
        let bits =
            (sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000);
        let d = f16_to_f32(bits);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ4_NL: `d * value[nibble]`; low nibbles first, as Q4_0.
pub fn iq4_nl(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 18], y: &mut [f32; 32]) {
        for (j, &q) in b[iq4_nl::QS..iq4_nl::QS + 16].iter().enumerate() {
            y[j] = A::mul(d, f32::from(KVALUES_IQ4NL[usize::from(q & 0x0F)]));
            y[j + 16] = A::mul(d, f32::from(KVALUES_IQ4NL[usize::from(q >> 4)]));
        }
    }
    for (b, y) in src.chunks_exact(18).zip(dst.chunks_exact_mut(32)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq4_nl::D);
        by_scales!([d], block(d, b, y));
    }
}

/// IQ4_XS: IQ4_NL in 8 sub-blocks of 32 with 6-bit scales (minus 32).
pub fn iq4_xs(src: &[u8], dst: &mut [f32]) {
    #[inline(always)]
    fn block<A: Arith>(d: f32, b: &[u8; 136], y: &mut [f32; 256]) {
        let scales_h = u16_at(b, iq4_xs::SCALES_H);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let low = (b[iq4_xs::SCALES_L + ib / 2] >> (4 * (ib % 2))) & 0x0F;
            let high = ((scales_h >> (2 * ib)) & 3) as u8;
            let ls = i16::from(low | (high << 4)) - 32;
            let dl = A::mul(d, f32::from(ls));
            let qs = &b[iq4_xs::QS + 16 * ib..iq4_xs::QS + 16 * ib + 16];
            for (j, &q) in qs.iter().enumerate() {
                y[j] = A::mul(dl, f32::from(KVALUES_IQ4NL[usize::from(q & 0x0F)]));
                y[j + 16] = A::mul(dl, f32::from(KVALUES_IQ4NL[usize::from(q >> 4)]));
            }
        }
    }
    for (b, y) in src.chunks_exact(136).zip(dst.chunks_exact_mut(256)) {
        let (b, y) = fixed(b, y);
        let d = f16_at(b, iq4_xs::D);
        by_scales!([d], block(d, b, y));
    }
}
