//! Tensor values as floats: any data type converted bit for bit as ggml converts it
//! (`crate::quant`), from caller memory or from a tensor of any handle.

use super::boundary::{guard, null};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::tensors::{own_index, GGUFTensorInfo};
use crate::error::{ErrorCode, Result};
use crate::quant;
use crate::text::quote;
use std::borrow::Cow;
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
        float_aligned(dst)?;
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
                std::slice::from_raw_parts(src.cast::<u8>(), bytes),
                std::slice::from_raw_parts_mut(dst, n),
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
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let i = own_index(f, info)?;
        if dst.is_null() {
            return Err(null("dst"));
        }
        float_aligned(dst)?;
        let t = f
            .model
            .tensor_at(i)
            .ok_or_else(|| f.error(ErrorCode::Internal, format!("tensor {i} has no record")))?;
        let name = quote(t.info.name);
        let dtype = t.info.dtype;
        let row = t.info.dims[0];
        let total_rows = t.info.n_elements.checked_div(row).unwrap_or(0);
        if first_row > total_rows || n_rows > total_rows - first_row {
            return Err(f.error(
                ErrorCode::InvalidArgument,
                format!(
                    "rows {first_row} to {} are past the end of tensor {name} ({total_rows} rows \
                     of {row} elements)",
                    u128::from(first_row) + u128::from(n_rows)
                ),
            ));
        }
        // A valid tensor's rows are whole blocks and its size fits in 64 bits (checked when it
        // was opened); the bytes read and the floats written must fit in memory.
        let row_bytes = dtype.row_bytes(row).unwrap_or(0);
        let (n_bytes, n_out) = rows_buffers(f, i, n_rows)?;
        let bytes = tensor_bytes(f, i, first_row * row_bytes, n_bytes as u64)?;
        // SAFETY: `dst` is non-NULL and the caller guarantees room for `n_rows * dims[0]` floats
        // (the header's contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dst, n_out) };
        let order = f.model.shards()[t.shard].byte_order();
        quant::dequantize_in_order(dtype, order, &bytes, dst)
            .map_err(|e| f.about(e.with_context(format!("tensor {name}"))))?;
        Ok(true)
    })
}

/// Refuses a `dst` that is not aligned for floats (no slice of floats may start there).
fn float_aligned(dst: *mut f32) -> Result<()> {
    if dst.is_aligned() {
        return Ok(());
    }
    Err(crate::error::Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "dst ({dst:p}) is not aligned for floats (a multiple of {} bytes)",
            std::mem::align_of::<f32>()
        ),
    ))
}

/// The bytes and the floats `n_rows` rows of tensor `i` take (rows already checked to lie in
/// the tensor), refused where either would pass what one buffer in memory holds.
pub(crate) fn rows_buffers(f: &GGUFFileImpl, i: usize, n_rows: u64) -> Result<(usize, usize)> {
    let t = f
        .model
        .tensor_at(i)
        .ok_or_else(|| f.error(ErrorCode::Internal, format!("tensor {i} has no record")))?;
    // At most the tensor's element count: no overflow.
    let elements = n_rows.saturating_mul(t.info.dims[0]);
    quant::buffer_lengths(t.info.dtype, elements).map_err(|e| {
        f.about(e.with_context(format!("{n_rows} rows of tensor {}", quote(t.info.name))))
    })
}

/// `len` bytes of tensor `i`'s data from byte `start` of it: the one place tensor values are
/// read from a handle. Mapped and memory handles lend their bytes in place; a handle without the
/// data in memory will read them here.
pub(crate) fn tensor_bytes(
    f: &GGUFFileImpl,
    i: usize,
    start: u64,
    len: u64,
) -> Result<Cow<'_, [u8]>> {
    let t = f
        .model
        .tensor_at(i)
        .ok_or_else(|| f.error(ErrorCode::Internal, format!("tensor {i} has no record")))?;
    if !f.model.shards()[t.shard].source().in_memory() {
        // Data left in the source (a reader, a URL, a file opened without mapping): read the
        // range asked for, and only that.
        let n = usize::try_from(len).map_err(|_| too_large_to_read(len))?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(n)
            .map_err(|_| too_large_to_read(len))?;
        buf.resize(n, 0);
        crate::load::read_tensor(&f.model, i, start, &mut buf)?;
        return Ok(Cow::Owned(buf));
    }
    let data = t.info.data;
    let range = usize::try_from(start)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(s, l)| Some(s..s.checked_add(l)?))
        .filter(|r| r.end <= data.len());
    match range {
        Some(r) => Ok(Cow::Borrowed(&data[r])),
        None => Err(f.error(
            ErrorCode::InvalidArgument,
            format!(
                "bytes {start} to {} of tensor {} are not in its data ({} bytes)",
                u128::from(start) + u128::from(len),
                quote(t.info.name),
                data.len()
            ),
        )),
    }
}

#[cold]
fn too_large_to_read(len: u64) -> crate::error::Error {
    crate::error::Error::msg(
        ErrorCode::OutOfMemory,
        format!("{len} bytes of tensor data cannot be read into memory at once"),
    )
}
