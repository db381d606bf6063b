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

use FieldKind::{Bytes, F16, F32};

/// Each block type's layout, stated once: its fields in order (constant, name, length, kind).
/// Each becomes a module of offset constants for the kernels (each field starts where the one
/// before it ends) and the field table [`fields`] returns.
macro_rules! layouts {
    ($($(#[$mm:meta])* $module:ident { $($(#[$cm:meta])* $c:ident = $name:literal, $len:literal, $kind:ident;)* })*) => {
        $(
            $(#[$mm])*
            pub mod $module {
                offsets!(0; $($(#[$cm])* $c $len;)*);
                use crate::quant::blocks::{f, Field, FieldKind};
                /// The fields in order.
                pub(super) const FIELDS: &[Field] = &[$(f($name, $c, $len, FieldKind::$kind),)*];
            }
        )*
    };
}

/// One offset constant per field, each the previous one's offset plus its length.
macro_rules! offsets {
    ($at:expr;) => {};
    ($at:expr; $(#[$cm:meta])* $c:ident $len:literal; $($rest:tt)*) => {
        $(#[$cm])*
        pub const $c: usize = $at;
        offsets!($c + $len; $($rest)*);
    };
}

layouts! {
    /// Q4_0.
    q4_0 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 16 bytes: element j in the low nibble of byte j, element j + 16 in its high nibble.
        QS = "qs", 16, Bytes;
    }

    /// Q4_1.
    q4_1 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// Min (f16).
        M = "m", 2, F16;
        /// 16 bytes of nibbles, as Q4_0.
        QS = "qs", 16, Bytes;
    }

    /// Q5_0.
    q5_0 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 32 fifth bits (u32, little-endian), bit j for element j.
        QH = "qh", 4, Bytes;
        /// 16 bytes of low nibbles, as Q4_0.
        QS = "qs", 16, Bytes;
    }

    /// Q5_1.
    q5_1 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// Min (f16).
        M = "m", 2, F16;
        /// 32 fifth bits (u32).
        QH = "qh", 4, Bytes;
        /// 16 bytes of low nibbles.
        QS = "qs", 16, Bytes;
    }

    /// Q8_0.
    q8_0 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 32 signed bytes.
        QS = "qs", 32, Bytes;
    }

    /// Q8_1.
    q8_1 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// Scale times the sum of the quants (f16); not needed to convert.
        S = "s", 2, F16;
        /// 32 signed bytes.
        QS = "qs", 32, Bytes;
    }

    /// Q2_K.
    q2_k {
        /// 16 bytes: sub-block scale (low nibble) and min (high nibble).
        SCALES = "scales", 16, Bytes;
        /// 64 bytes of 2-bit quants.
        QS = "qs", 64, Bytes;
        /// Super-block scale (f16).
        D = "d", 2, F16;
        /// Super-block min scale (f16).
        DMIN = "dmin", 2, F16;
    }

    /// Q3_K.
    q3_k {
        /// 32 bytes of high bits.
        HMASK = "hmask", 32, Bytes;
        /// 64 bytes of low 2 bits.
        QS = "qs", 64, Bytes;
        /// 12 bytes: 16 scales of 6 bits.
        SCALES = "scales", 12, Bytes;
        /// Super-block scale (f16).
        D = "d", 2, F16;
    }

    /// Q4_K.
    q4_k {
        /// Super-block scale (f16).
        D = "d", 2, F16;
        /// Super-block min scale (f16).
        DMIN = "dmin", 2, F16;
        /// 12 bytes: 8 scales and 8 mins of 6 bits.
        SCALES = "scales", 12, Bytes;
        /// 128 bytes of nibbles.
        QS = "qs", 128, Bytes;
    }

    /// Q5_K.
    q5_k {
        /// Super-block scale (f16).
        D = "d", 2, F16;
        /// Super-block min scale (f16).
        DMIN = "dmin", 2, F16;
        /// 12 bytes: 8 scales and 8 mins of 6 bits.
        SCALES = "scales", 12, Bytes;
        /// 32 bytes of fifth bits.
        QH = "qh", 32, Bytes;
        /// 128 bytes of low nibbles.
        QS = "qs", 128, Bytes;
    }

    /// Q6_K.
    q6_k {
        /// 128 bytes of low nibbles.
        QL = "ql", 128, Bytes;
        /// 64 bytes of high 2 bits.
        QH = "qh", 64, Bytes;
        /// 16 signed sub-block scales.
        SCALES = "scales", 16, Bytes;
        /// Super-block scale (f16).
        D = "d", 2, F16;
    }

    /// Q8_K.
    q8_k {
        /// Scale (f32).
        D = "d", 4, F32;
        /// 256 signed bytes.
        QS = "qs", 256, Bytes;
        /// 16 sums of 16 quants (i16); not needed to convert.
        BSUMS = "bsums", 32, Bytes;
    }

    /// IQ2_XXS.
    iq2_xxs {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 8 groups of 8 bytes: 4 grid indices, then a u32 of 4 x 7 sign bits and a 4-bit scale.
        QS = "qs", 64, Bytes;
    }

    /// IQ2_XS.
    iq2_xs {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 32 u16: 9-bit grid index, 7-bit sign pattern.
        QS = "qs", 64, Bytes;
        /// 8 bytes: two 4-bit scales each.
        SCALES = "scales", 8, Bytes;
    }

    /// IQ2_S.
    iq2_s {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 32 bytes of grid index low bits.
        QS = "qs", 32, Bytes;
        /// 32 bytes of sign bits.
        SIGNS = "signs", 32, Bytes;
        /// 8 bytes of grid index high bits.
        QH = "qh", 8, Bytes;
        /// 8 bytes: two 4-bit scales each.
        SCALES = "scales", 8, Bytes;
    }

    /// IQ3_XXS.
    iq3_xxs {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 64 grid indices.
        QS = "qs", 64, Bytes;
        /// 8 u32: 4 x 7 sign bits and a 4-bit scale.
        SCALES_AND_SIGNS = "scales_and_signs", 32, Bytes;
    }

    /// IQ3_S.
    iq3_s {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 64 bytes of grid index low bits.
        QS = "qs", 64, Bytes;
        /// 8 bytes of grid index ninth bits.
        QH = "qh", 8, Bytes;
        /// 32 bytes of sign bits.
        SIGNS = "signs", 32, Bytes;
        /// 4 bytes: two 4-bit scales each.
        SCALES = "scales", 4, Bytes;
    }

    /// IQ1_S.
    iq1_s {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 32 bytes of grid index low bits.
        QS = "qs", 32, Bytes;
        /// 8 u16: 4 x 3 grid index high bits, a 3-bit scale, the delta's sign.
        QH = "qh", 16, Bytes;
    }

    /// IQ1_M (its f16 scale is spread over the top nibbles of the four `scales` u16).
    iq1_m {
        /// 32 bytes of grid index low bits.
        QS = "qs", 32, Bytes;
        /// 16 bytes: 2 x 3 grid index high bits and 2 delta signs each.
        QH = "qh", 16, Bytes;
        /// 4 u16: 3-bit sub-block scales, and one nibble of the f16 scale each.
        SCALES = "scales", 8, Bytes;
    }

    /// IQ4_NL.
    iq4_nl {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 16 bytes of nibbles indexing the non-linear values.
        QS = "qs", 16, Bytes;
    }

    /// IQ4_XS.
    iq4_xs {
        /// Scale (f16).
        D = "d", 2, F16;
        /// u16: the high 2 bits of the 8 sub-block scales.
        SCALES_H = "scales_h", 2, Bytes;
        /// 4 bytes: the low 4 bits of the 8 sub-block scales.
        SCALES_L = "scales_l", 4, Bytes;
        /// 128 bytes of nibbles.
        QS = "qs", 128, Bytes;
    }

    /// TQ1_0.
    tq1_0 {
        /// 48 bytes of 5 base-3 digits each.
        QS = "qs", 48, Bytes;
        /// 4 bytes of 4 base-3 digits each.
        QH = "qh", 4, Bytes;
        /// Scale (f16).
        D = "d", 2, F16;
    }

    /// TQ2_0.
    tq2_0 {
        /// 64 bytes of 2-bit quants.
        QS = "qs", 64, Bytes;
        /// Scale (f16).
        D = "d", 2, F16;
    }

    /// MXFP4.
    mxfp4 {
        /// Scale exponent (E8M0).
        E = "e", 1, E8M0;
        /// 16 bytes of E2M1 nibbles.
        QS = "qs", 16, Bytes;
    }

    /// NVFP4.
    nvfp4 {
        /// 4 scales (UE4M3), one per 16 elements.
        D = "d", 4, UE4M3;
        /// 32 bytes of E2M1 nibbles, 8 per sub-block.
        QS = "qs", 32, Bytes;
    }

    /// Q1_0.
    q1_0 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 16 bytes: bit j for element j (1 is +d, 0 is -d).
        QS = "qs", 16, Bytes;
    }

    /// Q2_0.
    q2_0 {
        /// Scale (f16).
        D = "d", 2, F16;
        /// 16 bytes of 2-bit codes c, value (c - 1) * d.
        QS = "qs", 16, Bytes;
    }
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
        D::Q4_0 => q4_0::FIELDS,
        D::Q4_1 => q4_1::FIELDS,
        D::Q5_0 => q5_0::FIELDS,
        D::Q5_1 => q5_1::FIELDS,
        D::Q8_0 => q8_0::FIELDS,
        D::Q8_1 => q8_1::FIELDS,
        D::Q2_K => q2_k::FIELDS,
        D::Q3_K => q3_k::FIELDS,
        D::Q4_K => q4_k::FIELDS,
        D::Q5_K => q5_k::FIELDS,
        D::Q6_K => q6_k::FIELDS,
        D::Q8_K => q8_k::FIELDS,
        D::IQ2_XXS => iq2_xxs::FIELDS,
        D::IQ2_XS => iq2_xs::FIELDS,
        D::IQ2_S => iq2_s::FIELDS,
        D::IQ3_XXS => iq3_xxs::FIELDS,
        D::IQ3_S => iq3_s::FIELDS,
        D::IQ1_S => iq1_s::FIELDS,
        D::IQ1_M => iq1_m::FIELDS,
        D::IQ4_NL => iq4_nl::FIELDS,
        D::IQ4_XS => iq4_xs::FIELDS,
        D::TQ1_0 => tq1_0::FIELDS,
        D::TQ2_0 => tq2_0::FIELDS,
        D::MXFP4 => mxfp4::FIELDS,
        D::NVFP4 => nvfp4::FIELDS,
        D::Q1_0 => q1_0::FIELDS,
        D::Q2_0 => q2_0::FIELDS,
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

/// The little-endian half float at `at`, as f32 (see [`super::half::f16_to_f32`]).
#[inline(always)]
pub fn f16_at(b: &[u8], at: usize) -> f32 {
    super::half::f16_to_f32(u16_at(b, at))
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
