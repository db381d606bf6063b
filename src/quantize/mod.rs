//! Floats to ggml's tensor types, byte for byte as `ggml_quantize_chunk` writes them.

pub(crate) mod iquant;

use crate::error::{Error, ErrorCode, Result};
use crate::types::DataType;

/// Quantizes `src` (whole rows of `n_per_row` floats) into `data_type`'s blocks at `dst`, as
/// `ggml_quantize_chunk` does; `importance`, when given, holds `n_per_row` weights. Returns the
/// bytes written.
pub fn quantize(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
) -> Result<usize> {
    match data_type {
        DataType::IQ2_XXS
        | DataType::IQ2_XS
        | DataType::IQ2_S
        | DataType::IQ3_XXS
        | DataType::IQ3_S
        | DataType::IQ1_S
        | DataType::IQ1_M
        | DataType::IQ4_NL
        | DataType::IQ4_XS => iquant::quantize_rows(data_type, src, n_per_row, importance, dst),
        _ => Err(Error::msg(
            ErrorCode::Unsupported,
            format!("{} cannot be quantized yet", data_type.name()),
        )),
    }
}
