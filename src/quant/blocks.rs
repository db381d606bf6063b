//! Each data type's block layout, defined once: the byte offset of every field of a block, for
//! the scalar kernels, the vector kernels and the validator alike. Element and byte counts per
//! block are [`DataType::block_elems`] and [`DataType::block_bytes`]; the field tables below are
//! checked against them by a test.
//!
//! Multi-byte fields are little-endian in a little-endian file. `f16` fields are IEEE half
//! floats, `e8m0` an exponent byte, `ue4m3` an unsigned E4M3 byte.

use crate::types::DataType;

/// One field of a block: where it starts, how many bytes it takes, what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Name, as in the format's block definitions (`d`, `dmin`, `qs`, ...).
    pub name: &'static str,
    /// Byte offset in the block.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
    /// What the bytes are.
    pub kind: FieldKind,
}

/// What a block field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// One IEEE half-precision scale (or min).
    F16,
    /// One IEEE single-precision scale (Q8_K).
    F32,
    /// One E8M0 exponent byte (MXFP4's scale).
    E8M0,
    /// Unsigned E4M3 scale bytes (NVFP4: one per 16 elements).
    UE4M3,
    /// Packed quants, sub-block scales or high bits: plain bytes.
    Bytes,
}

const fn f(name: &'static str, offset: usize, len: usize, kind: FieldKind) -> Field {
    Field {
        name,
        offset,
        len,
        kind,
    }
}

use FieldKind::{Bytes, E8M0, F16, F32, UE4M3};

/// Offsets of each block type's fields, as constants for the kernels.
pub mod q4_0 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 16 bytes: element j in the low nibble of byte j, element j + 16 in its high nibble.
    pub const QS: usize = 2;
}
/// Q4_1.
pub mod q4_1 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// Min (f16).
    pub const M: usize = 2;
    /// 16 bytes of nibbles, as Q4_0.
    pub const QS: usize = 4;
}
/// Q5_0.
pub mod q5_0 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 32 fifth bits (u32, little-endian), bit j for element j.
    pub const QH: usize = 2;
    /// 16 bytes of low nibbles, as Q4_0.
    pub const QS: usize = 6;
}
/// Q5_1.
pub mod q5_1 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// Min (f16).
    pub const M: usize = 2;
    /// 32 fifth bits (u32).
    pub const QH: usize = 4;
    /// 16 bytes of low nibbles.
    pub const QS: usize = 8;
}
/// Q8_0.
pub mod q8_0 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 32 signed bytes.
    pub const QS: usize = 2;
}
/// Q8_1.
pub mod q8_1 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// Scale times the sum of the quants (f16); not needed to convert.
    pub const S: usize = 2;
    /// 32 signed bytes.
    pub const QS: usize = 4;
}
/// Q2_K.
pub mod q2_k {
    /// 16 bytes: sub-block scale (low nibble) and min (high nibble).
    pub const SCALES: usize = 0;
    /// 64 bytes of 2-bit quants.
    pub const QS: usize = 16;
    /// Super-block scale (f16).
    pub const D: usize = 80;
    /// Super-block min scale (f16).
    pub const DMIN: usize = 82;
}
/// Q3_K.
pub mod q3_k {
    /// 32 bytes of high bits.
    pub const HMASK: usize = 0;
    /// 64 bytes of low 2 bits.
    pub const QS: usize = 32;
    /// 12 bytes: 16 scales of 6 bits.
    pub const SCALES: usize = 96;
    /// Super-block scale (f16).
    pub const D: usize = 108;
}
/// Q4_K.
pub mod q4_k {
    /// Super-block scale (f16).
    pub const D: usize = 0;
    /// Super-block min scale (f16).
    pub const DMIN: usize = 2;
    /// 12 bytes: 8 scales and 8 mins of 6 bits.
    pub const SCALES: usize = 4;
    /// 128 bytes of nibbles.
    pub const QS: usize = 16;
}
/// Q5_K.
pub mod q5_k {
    /// Super-block scale (f16).
    pub const D: usize = 0;
    /// Super-block min scale (f16).
    pub const DMIN: usize = 2;
    /// 12 bytes: 8 scales and 8 mins of 6 bits.
    pub const SCALES: usize = 4;
    /// 32 bytes of fifth bits.
    pub const QH: usize = 16;
    /// 128 bytes of low nibbles.
    pub const QS: usize = 48;
}
/// Q6_K.
pub mod q6_k {
    /// 128 bytes of low nibbles.
    pub const QL: usize = 0;
    /// 64 bytes of high 2 bits.
    pub const QH: usize = 128;
    /// 16 signed sub-block scales.
    pub const SCALES: usize = 192;
    /// Super-block scale (f16).
    pub const D: usize = 208;
}
/// Q8_K.
pub mod q8_k {
    /// Scale (f32).
    pub const D: usize = 0;
    /// 256 signed bytes.
    pub const QS: usize = 4;
    /// 16 sums of 16 quants (i16); not needed to convert.
    pub const BSUMS: usize = 260;
}
/// IQ2_XXS.
pub mod iq2_xxs {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 8 groups of 8 bytes: 4 grid indices, then a u32 of 4 x 7 sign bits and a 4-bit scale.
    pub const QS: usize = 2;
}
/// IQ2_XS.
pub mod iq2_xs {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 32 u16: 9-bit grid index, 7-bit sign pattern.
    pub const QS: usize = 2;
    /// 8 bytes: two 4-bit scales each.
    pub const SCALES: usize = 66;
}
/// IQ2_S.
pub mod iq2_s {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 32 bytes of grid index low bits.
    pub const QS: usize = 2;
    /// 32 bytes of sign bits.
    pub const SIGNS: usize = 34;
    /// 8 bytes of grid index high bits.
    pub const QH: usize = 66;
    /// 8 bytes: two 4-bit scales each.
    pub const SCALES: usize = 74;
}
/// IQ3_XXS.
pub mod iq3_xxs {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 64 grid indices.
    pub const QS: usize = 2;
    /// 8 u32: 4 x 7 sign bits and a 4-bit scale.
    pub const SCALES_AND_SIGNS: usize = 66;
}
/// IQ3_S.
pub mod iq3_s {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 64 bytes of grid index low bits.
    pub const QS: usize = 2;
    /// 8 bytes of grid index ninth bits.
    pub const QH: usize = 66;
    /// 32 bytes of sign bits.
    pub const SIGNS: usize = 74;
    /// 4 bytes: two 4-bit scales each.
    pub const SCALES: usize = 106;
}
/// IQ1_S.
pub mod iq1_s {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 32 bytes of grid index low bits.
    pub const QS: usize = 2;
    /// 8 u16: 4 x 3 grid index high bits, a 3-bit scale, the delta's sign.
    pub const QH: usize = 34;
}
/// IQ1_M (its f16 scale is spread over the top nibbles of the four `scales` u16).
pub mod iq1_m {
    /// 32 bytes of grid index low bits.
    pub const QS: usize = 0;
    /// 16 bytes: 2 x 3 grid index high bits and 2 delta signs each.
    pub const QH: usize = 32;
    /// 4 u16: 3-bit sub-block scales, and one nibble of the f16 scale each.
    pub const SCALES: usize = 48;
}
/// IQ4_NL.
pub mod iq4_nl {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 16 bytes of nibbles indexing the non-linear values.
    pub const QS: usize = 2;
}
/// IQ4_XS.
pub mod iq4_xs {
    /// Scale (f16).
    pub const D: usize = 0;
    /// u16: the high 2 bits of the 8 sub-block scales.
    pub const SCALES_H: usize = 2;
    /// 4 bytes: the low 4 bits of the 8 sub-block scales.
    pub const SCALES_L: usize = 4;
    /// 128 bytes of nibbles.
    pub const QS: usize = 8;
}
/// TQ1_0.
pub mod tq1_0 {
    /// 48 bytes of 5 base-3 digits each.
    pub const QS: usize = 0;
    /// 4 bytes of 4 base-3 digits each.
    pub const QH: usize = 48;
    /// Scale (f16).
    pub const D: usize = 52;
}
/// TQ2_0.
pub mod tq2_0 {
    /// 64 bytes of 2-bit quants.
    pub const QS: usize = 0;
    /// Scale (f16).
    pub const D: usize = 64;
}
/// MXFP4.
pub mod mxfp4 {
    /// Scale exponent (E8M0).
    pub const E: usize = 0;
    /// 16 bytes of E2M1 nibbles.
    pub const QS: usize = 1;
}
/// NVFP4.
pub mod nvfp4 {
    /// 4 scales (UE4M3), one per 16 elements.
    pub const D: usize = 0;
    /// 32 bytes of E2M1 nibbles, 8 per sub-block.
    pub const QS: usize = 4;
}
/// Q1_0.
pub mod q1_0 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 16 bytes: bit j for element j (1 is +d, 0 is -d).
    pub const QS: usize = 2;
}
/// Q2_0.
pub mod q2_0 {
    /// Scale (f16).
    pub const D: usize = 0;
    /// 16 bytes of 2-bit codes c, value (c - 1) * d.
    pub const QS: usize = 2;
}

/// Every field of a block of `dtype`, in order, covering the block exactly (a test checks).
/// Plain types (F32, I8, ...) have one field: the element.
pub fn fields(dtype: DataType) -> &'static [Field] {
    use DataType as D;
    match dtype {
        D::F32 => const { &[f("value", 0, 4, F32)] },
        D::F16 => const { &[f("value", 0, 2, F16)] },
        D::BF16 => const { &[f("value", 0, 2, Bytes)] },
        D::F64 | D::I64 => const { &[f("value", 0, 8, Bytes)] },
        D::I32 => const { &[f("value", 0, 4, Bytes)] },
        D::I16 => const { &[f("value", 0, 2, Bytes)] },
        D::I8 => const { &[f("value", 0, 1, Bytes)] },
        D::Q4_0 => const { &[f("d", q4_0::D, 2, F16), f("qs", q4_0::QS, 16, Bytes)] },
        D::Q4_1 => {
            const {
                &[
                    f("d", q4_1::D, 2, F16),
                    f("m", q4_1::M, 2, F16),
                    f("qs", q4_1::QS, 16, Bytes),
                ]
            }
        }
        D::Q5_0 => {
            const {
                &[
                    f("d", q5_0::D, 2, F16),
                    f("qh", q5_0::QH, 4, Bytes),
                    f("qs", q5_0::QS, 16, Bytes),
                ]
            }
        }
        D::Q5_1 => {
            const {
                &[
                    f("d", q5_1::D, 2, F16),
                    f("m", q5_1::M, 2, F16),
                    f("qh", q5_1::QH, 4, Bytes),
                    f("qs", q5_1::QS, 16, Bytes),
                ]
            }
        }
        D::Q8_0 => const { &[f("d", q8_0::D, 2, F16), f("qs", q8_0::QS, 32, Bytes)] },
        D::Q8_1 => {
            const {
                &[
                    f("d", q8_1::D, 2, F16),
                    f("s", q8_1::S, 2, F16),
                    f("qs", q8_1::QS, 32, Bytes),
                ]
            }
        }
        D::Q2_K => {
            const {
                &[
                    f("scales", q2_k::SCALES, 16, Bytes),
                    f("qs", q2_k::QS, 64, Bytes),
                    f("d", q2_k::D, 2, F16),
                    f("dmin", q2_k::DMIN, 2, F16),
                ]
            }
        }
        D::Q3_K => {
            const {
                &[
                    f("hmask", q3_k::HMASK, 32, Bytes),
                    f("qs", q3_k::QS, 64, Bytes),
                    f("scales", q3_k::SCALES, 12, Bytes),
                    f("d", q3_k::D, 2, F16),
                ]
            }
        }
        D::Q4_K => {
            const {
                &[
                    f("d", q4_k::D, 2, F16),
                    f("dmin", q4_k::DMIN, 2, F16),
                    f("scales", q4_k::SCALES, 12, Bytes),
                    f("qs", q4_k::QS, 128, Bytes),
                ]
            }
        }
        D::Q5_K => {
            const {
                &[
                    f("d", q5_k::D, 2, F16),
                    f("dmin", q5_k::DMIN, 2, F16),
                    f("scales", q5_k::SCALES, 12, Bytes),
                    f("qh", q5_k::QH, 32, Bytes),
                    f("qs", q5_k::QS, 128, Bytes),
                ]
            }
        }
        D::Q6_K => {
            const {
                &[
                    f("ql", q6_k::QL, 128, Bytes),
                    f("qh", q6_k::QH, 64, Bytes),
                    f("scales", q6_k::SCALES, 16, Bytes),
                    f("d", q6_k::D, 2, F16),
                ]
            }
        }
        D::Q8_K => {
            const {
                &[
                    f("d", q8_k::D, 4, F32),
                    f("qs", q8_k::QS, 256, Bytes),
                    f("bsums", q8_k::BSUMS, 32, Bytes),
                ]
            }
        }
        D::IQ2_XXS => const { &[f("d", iq2_xxs::D, 2, F16), f("qs", iq2_xxs::QS, 64, Bytes)] },
        D::IQ2_XS => {
            const {
                &[
                    f("d", iq2_xs::D, 2, F16),
                    f("qs", iq2_xs::QS, 64, Bytes),
                    f("scales", iq2_xs::SCALES, 8, Bytes),
                ]
            }
        }
        D::IQ2_S => {
            const {
                &[
                    f("d", iq2_s::D, 2, F16),
                    f("qs", iq2_s::QS, 32, Bytes),
                    f("signs", iq2_s::SIGNS, 32, Bytes),
                    f("qh", iq2_s::QH, 8, Bytes),
                    f("scales", iq2_s::SCALES, 8, Bytes),
                ]
            }
        }
        D::IQ3_XXS => {
            const {
                &[
                    f("d", iq3_xxs::D, 2, F16),
                    f("qs", iq3_xxs::QS, 64, Bytes),
                    f("scales_and_signs", iq3_xxs::SCALES_AND_SIGNS, 32, Bytes),
                ]
            }
        }
        D::IQ3_S => {
            const {
                &[
                    f("d", iq3_s::D, 2, F16),
                    f("qs", iq3_s::QS, 64, Bytes),
                    f("qh", iq3_s::QH, 8, Bytes),
                    f("signs", iq3_s::SIGNS, 32, Bytes),
                    f("scales", iq3_s::SCALES, 4, Bytes),
                ]
            }
        }
        D::IQ1_S => {
            const {
                &[
                    f("d", iq1_s::D, 2, F16),
                    f("qs", iq1_s::QS, 32, Bytes),
                    f("qh", iq1_s::QH, 16, Bytes),
                ]
            }
        }
        D::IQ1_M => {
            const {
                &[
                    f("qs", iq1_m::QS, 32, Bytes),
                    f("qh", iq1_m::QH, 16, Bytes),
                    f("scales", iq1_m::SCALES, 8, Bytes),
                ]
            }
        }
        D::IQ4_NL => const { &[f("d", iq4_nl::D, 2, F16), f("qs", iq4_nl::QS, 16, Bytes)] },
        D::IQ4_XS => {
            const {
                &[
                    f("d", iq4_xs::D, 2, F16),
                    f("scales_h", iq4_xs::SCALES_H, 2, Bytes),
                    f("scales_l", iq4_xs::SCALES_L, 4, Bytes),
                    f("qs", iq4_xs::QS, 128, Bytes),
                ]
            }
        }
        D::TQ1_0 => {
            const {
                &[
                    f("qs", tq1_0::QS, 48, Bytes),
                    f("qh", tq1_0::QH, 4, Bytes),
                    f("d", tq1_0::D, 2, F16),
                ]
            }
        }
        D::TQ2_0 => const { &[f("qs", tq2_0::QS, 64, Bytes), f("d", tq2_0::D, 2, F16)] },
        D::MXFP4 => const { &[f("e", mxfp4::E, 1, E8M0), f("qs", mxfp4::QS, 16, Bytes)] },
        D::NVFP4 => const { &[f("d", nvfp4::D, 4, UE4M3), f("qs", nvfp4::QS, 32, Bytes)] },
        D::Q1_0 => const { &[f("d", q1_0::D, 2, F16), f("qs", q1_0::QS, 16, Bytes)] },
        D::Q2_0 => const { &[f("d", q2_0::D, 2, F16), f("qs", q2_0::QS, 16, Bytes)] },
    }
}

/// Little-endian u16 at `at`.
#[inline(always)]
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Little-endian u32 at `at`.
#[inline(always)]
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The little-endian half float at `at`, as f32 (see [`super::f16_to_f32`]).
#[inline(always)]
pub fn f16_at(b: &[u8], at: usize) -> f32 {
    super::f16_to_f32(u16_at(b, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_cover_each_block_exactly() {
        for t in DataType::ALL {
            let mut at = 0;
            for field in fields(t) {
                assert_eq!(field.offset, at, "{t:?}.{}", field.name);
                at += field.len;
            }
            assert_eq!(at as u64, t.block_bytes(), "{t:?}");
        }
    }
}
