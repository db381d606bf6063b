//! Tensor value validation: `gguf_validate_tensor`.

use super::boundary::guard;
use super::handle::{GGUFFile, GGUFFileImpl};
use super::tensors::{own_index, GGUFTensorInfo};
use crate::error::{ErrorCode, Result};
use crate::model::ModelTensor;
use crate::text::quote;

/// Validates one tensor of `f`: its data holds no NaN or infinity where ggml refuses one.
pub(crate) fn validate_tensor(f: &GGUFFileImpl, i: usize, t: &ModelTensor<'_>) -> Result<()> {
    let shard = &f.model.shards()[t.shard];
    let checked = if shard.source().in_memory() {
        crate::quant::validate::validate(
            quote(t.info.name),
            t.info.dtype,
            t.info.data,
            shard.byte_order(),
            t.info.file_offset,
        )
    } else {
        validate_by_position(f, i, t)
    };
    checked.map_err(|e| match f.model.shard_names().get(t.shard) {
        Some(name) => e.in_file(name.clone()),
        None => e.in_file(f.name.clone()),
    })
}

/// [`validate_tensor`] (of tensor `i`) for a tensor whose data stays in its source: read and checked a piece
/// of whole blocks at a time (a few MiB of memory, whatever the tensor's size).
fn validate_by_position(f: &GGUFFileImpl, i: usize, t: &ModelTensor<'_>) -> Result<()> {
    const PIECE: u64 = 8 << 20;
    let (dtype, size) = (t.info.dtype, t.info.size);
    let block = dtype.block_bytes().max(1);
    let piece = (PIECE / block).max(1) * block;
    let order = f.model.shards()[t.shard].byte_order();
    let mut buf = vec![0u8; usize::try_from(piece.min(size)).unwrap_or(0)];
    let mut at = 0;
    while at < size {
        let n = piece.min(size - at);
        let chunk = &mut buf[..usize::try_from(n).unwrap_or(0)];
        crate::load::read_tensor(&f.model, i, at, chunk)?;
        if let Some(mut bad) = crate::quant::validate::find_bad_value(dtype, chunk, order) {
            // Indices and offsets in the whole tensor, not in this piece.
            bad.index += at / block;
            bad.byte += at;
            return Err(bad.error(quote(t.info.name), dtype, t.info.file_offset));
        }
        at += n;
    }
    Ok(())
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
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let i = own_index(f, info)?;
        let t = f
            .model
            .tensor_at(i)
            .ok_or_else(|| f.error(ErrorCode::Internal, format!("tensor {i} has no record")))?;
        validate_tensor(f, i, &t)?;
        Ok(true)
    })
}
