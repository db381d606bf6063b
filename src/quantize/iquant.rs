//! The IQ types' quantizers (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
//! IQ1_M), in ggml's order of operations.

use crate::error::{Error, ErrorCode, Result};
use crate::types::DataType;

/// Quantizes `src` (whole rows of `n_per_row` floats; `dst` holds exactly their blocks) into the
/// IQ type `data_type`; returns the bytes written.
pub(crate) fn quantize_rows(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
) -> Result<usize> {
    let _ = (src, n_per_row, importance, dst);
    Err(Error::msg(
        ErrorCode::Unsupported,
        format!("{} cannot be quantized yet", data_type.name()),
    ))
}
