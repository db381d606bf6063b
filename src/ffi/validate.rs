//! Tensor value validation: `gguf_validate_tensor`.

use super::boundary::{guard, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::records::GGUFTensorInfo;
use super::tensors::own_index;
use crate::error::Result;

/// Validates tensor `i` of `f`; errors name the shard's file (or the handle).
pub(crate) fn validate_tensor(f: &GGUFFileImpl, i: usize) -> Result<()> {
    crate::check::validate_tensor(&f.model, i).map_err(|e| {
        let shard = f.model.tensor_at(i).map_or(0, |t| t.shard);
        match f.model.shard_names().get(shard) {
            Some(name) => e.in_file(name.clone()),
            None => e.in_file(f.name.clone()),
        }
    })
}

/// Checks a tensor's values as ggml's `ggml_validate_row_data` does: no NaN or infinity among
/// the values of a float tensor (F32, F16, BF16, F64) nor in any quantized block's scales (`d`,
/// and `m`, `dmin` or `s` where the type has them; IQ1_M's packed scale; MXFP4's exponent 0xFF).
/// Types with no float field (the integer types, NVFP4) always pass. Reads the whole tensor
/// (about memory speed); allocates nothing; thread-safe.
///
/// Returns true if the values are valid. Returns false if a value is bad
/// (GGUF_ERROR_CODE_BAD_VALUE: the message names the tensor, the first bad element or block
/// with its index, the field, NaN or infinity, and the byte offset in the tensor's data; the
/// error's offset is the position in the file), if `info` was not returned by this `file`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or if an argument is NULL.
///
/// Unlike ggml, which refuses every Q8_1 row as an unknown type, a Q8_1 tensor is checked: its
/// `d` and `s` fields.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_validate_tensor(file: GGUFFile, info: *const GGUFTensorInfo) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let i = own_index(f, info)?;
        validate_tensor(f, i)?;
        Ok(true)
    })
}
