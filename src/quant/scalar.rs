//! The portable (scalar) kernel of each type.

use super::{float, fp4, iquant, kquant, legacy, ternary};
use crate::types::DataType;

/// A per-type kernel: converts `blocks` (exactly n whole blocks) into `dst` (exactly n times the
/// block's element count). The dispatch checks both lengths, so kernels only index within them.
pub type Kernel = fn(blocks: &[u8], dst: &mut [f32]);

/// The portable (scalar) kernel of each type.
pub fn scalar_kernel(dtype: DataType) -> Kernel {
    use DataType::*;
    match dtype {
        F32 => float::f32_le,
        F16 => float::f16_le,
        BF16 => float::bf16_le,
        F64 => float::f64_le,
        I8 => float::i8,
        I16 => float::i16_le,
        I32 => float::i32_le,
        I64 => float::i64_le,
        Q4_0 => legacy::q4_0,
        Q4_1 => legacy::q4_1,
        Q5_0 => legacy::q5_0,
        Q5_1 => legacy::q5_1,
        Q8_0 => legacy::q8_0,
        Q8_1 => legacy::q8_1,
        Q1_0 => legacy::q1_0,
        Q2_0 => legacy::q2_0,
        Q2_K => kquant::q2_k,
        Q3_K => kquant::q3_k,
        Q4_K => kquant::q4_k,
        Q5_K => kquant::q5_k,
        Q6_K => kquant::q6_k,
        Q8_K => kquant::q8_k,
        IQ2_XXS => iquant::iq2_xxs,
        IQ2_XS => iquant::iq2_xs,
        IQ2_S => iquant::iq2_s,
        IQ3_XXS => iquant::iq3_xxs,
        IQ3_S => iquant::iq3_s,
        IQ1_S => iquant::iq1_s,
        IQ1_M => iquant::iq1_m,
        IQ4_NL => iquant::iq4_nl,
        IQ4_XS => iquant::iq4_xs,
        TQ1_0 => ternary::tq1_0,
        TQ2_0 => ternary::tq2_0,
        MXFP4 => fp4::mxfp4,
        NVFP4 => fp4::nvfp4,
    }
}
