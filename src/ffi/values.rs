//! Tensor values as floats: any data type converted bit for bit as ggml converts it
//! (`crate::quant`), from caller memory or from a tensor of any handle.

use super::boundary::{aligned, guard, null, slice, slice_mut, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::records::GGUFTensorInfo;
use super::tensors::own_index;
use crate::error::{ErrorCode, Result};
use crate::load;
use crate::model::Model;
use crate::quant;
use crate::source::Source;
use std::ffi::c_void;

/// Converts `n_elements` elements of data type `dtype` (a `GGUFDataType` value), laid out as in a
/// little-endian GGUF file at `src`, to floats at `dst`, bit for bit as ggml's own dequantizers
/// give them (F64, the integer types and Q8_1, which ggml does not convert, by their plain
/// definition: each value rounded to the nearest float, Q8_1 its scale times each quant).
/// `n_elements` must be a whole number of the type's blocks (`gguf_dtype_block_size`); `src`
/// holds `n_elements / block size * block bytes` bytes, `dst` room for `n_elements` floats, and
/// the two must not overlap. Thread-safe; allocates nothing (a failure only records its message)
/// and reads nothing else. Returns true,
/// or false (nothing written or only part of `dst`; `gguf_last_error` says why) when the type is
/// unknown (GGUF_ERROR_CODE_INVALID_ARGUMENT) or was removed from the format
/// (GGUF_ERROR_CODE_UNSUPPORTED: the message names it), `n_elements` is not whole blocks
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT), the bytes at `src` or the floats at `dst` would take more
/// than one buffer in memory can (2^48 bytes on 64-bit targets, 2^31 - 1 on 32-bit ones:
/// GGUF_ERROR_CODE_INVALID_ARGUMENT, checked before `src` or `dst` is touched), `dst` is not
/// aligned for floats or overlaps `src` (GGUF_ERROR_CODE_INVALID_ARGUMENT), or `src` or `dst` is
/// NULL while `n_elements` is not 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_dequantize(
    dtype: u32,
    src: *const c_void,
    n_elements: u64,
    dst: *mut f32,
) -> bool {
    guard(false, || {
        let dtype = quant::data_type(dtype)?;
        // Whole blocks, and both buffers within what memory can hold: checked before any
        // pointer is looked at or any slice made.
        let (bytes, n) = quant::buffer_lengths(dtype, n_elements)?;
        if n_elements == 0 {
            return Ok(true);
        }
        if src.is_null() {
            return Err(null("src"));
        }
        if dst.is_null() {
            return Err(null("dst"));
        }
        aligned(dst.cast_const(), "dst")?;
        // No slice is made of memory that the two share.
        let (from, to) = (src as usize, dst as usize);
        let (from_end, to_end) = (from.checked_add(bytes), to.checked_add(n * 4));
        let apart = match (from_end, to_end) {
            (Some(from_end), Some(to_end)) => from_end <= to || to_end <= from,
            _ => false,
        };
        if !apart {
            return Err(crate::error::Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "src ({bytes} bytes at {src:p}) and dst ({n} floats at {dst:p}) overlap: the \
                     floats need memory of their own"
                ),
            ));
        }
        // SAFETY: the caller guarantees `src` holds the type's bytes for `n_elements` elements
        // (`bytes`, computed from the type's block size) and `dst` room for `n_elements` floats,
        // not overlapping (the header's contract); both are non-NULL.
        let (src, dst) = unsafe {
            (
                slice(src.cast::<u8>(), bytes, "src")?,
                slice_mut(dst, n, "dst")?,
            )
        };
        quant::dequantize(dtype, src, dst)?;
        Ok(true)
    })
}

/// Converts rows `[first_row, first_row + n_rows)` of a tensor to floats at `dst` (room for
/// `n_rows * info->dims[0]` floats), as `gguf_dequantize` does, reading the data in the file's
/// byte order: from a big-endian file, the types whose big-endian layout is defined (F32, F16,
/// BF16, Q4_0, Q8_0, Q4_K, Q6_K, MXFP4, NVFP4) are converted and the others refused
/// (GGUF_ERROR_CODE_UNSUPPORTED). A row is `dims[0]` elements; a tensor has `n_elements /
/// dims[0]` rows. Works on any handle; on a mapped handle the bytes are read in place, nothing
/// is allocated. Thread-safe (many threads may convert different rows of one handle at once).
/// Returns true, or false (`gguf_last_error` says why) when an argument is NULL, or
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) `dst` is not aligned for floats, `info` was not returned by
/// this `file`, the rows run past the tensor's end, or their bytes or floats would take more
/// than one buffer in memory can (as for `gguf_dequantize`; refused before anything is read),
/// or when the type cannot be converted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tensor_to_float(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    first_row: u64,
    n_rows: u64,
    dst: *mut f32,
) -> bool {
    guard(false, || {
        // SAFETY: the header's contract (as `float_destination` asks).
        let (f, i, dst) =
            unsafe { float_destination(file, info, first_row, n_rows, dst, load::float_rows)? };
        load::rows_to_float(&f.model, Some(&f.name), i, first_row, n_rows, dst)?;
        Ok(true)
    })
}

/// How a conversion checks its rows: the number of floats they give, or why not (see
/// `load::float_rows`).
pub(super) type RowCheck = fn(&Model<Source>, Option<&str>, usize, u64, u64) -> Result<usize>;

/// The handle, the tensor's index and `dst` as a slice of the floats of rows
/// `[first_row, first_row + n_rows)` of `info`, for a conversion into `dst`: `check` checks the
/// rows (that they lie in the tensor, that their floats fit in memory) before any slice is made
/// of `dst`.
///
/// # Safety
/// `file` is NULL or a live handle, and `dst`, when not NULL, has room for
/// `n_rows * info->dims[0]` floats and is not otherwise used while the slice lives.
pub(super) unsafe fn float_destination<'a>(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    first_row: u64,
    n_rows: u64,
    dst: *mut f32,
    check: RowCheck,
) -> Result<(&'a GGUFFileImpl, usize, &'a mut [f32])> {
    // SAFETY: `file` is NULL or a live handle (this function's contract).
    let f = unsafe { try_from(file)? };
    let i = own_index(f, info)?;
    if dst.is_null() {
        return Err(null("dst"));
    }
    aligned(dst.cast_const(), "dst")?;
    let n = check(&f.model, Some(&f.name), i, first_row, n_rows)?;
    // SAFETY: `dst` is non-NULL and aligned, with room for `n_rows * dims[0]` floats (this
    // function's contract), `n` of them.
    let dst = unsafe { slice_mut(dst, n, "dst")? };
    Ok((f, i, dst))
}
