//! Floats to tensor types (`crate::quantize`): byte for byte as ggml's `ggml_quantize_chunk`
//! writes them, on one thread or many.

use super::boundary::{aligned, disjoint, guard, null, slice, slice_mut, to_usize};
use crate::error::{Error, ErrorCode, Result};
use crate::quant;
use crate::quantize;
use crate::size::buffer_len;
use crate::types::DataType;
use std::ffi::c_void;

/// The checked caller buffers of one quantization: `src` (`n_rows * n_per_row` floats),
/// `importance` (`n_per_row` floats, optional) and `dst` (`dst_size` bytes).
struct Buffers<'a> {
    dtype: DataType,
    src: &'a [f32],
    n_per_row: usize,
    importance: Option<&'a [f32]>,
    dst: &'a mut [u8],
}

fn too_big(what: &str) -> Error {
    Error::msg(
        ErrorCode::InvalidArgument,
        format!("{what} does not fit in this process's memory"),
    )
}

/// The data type with id `id` for a quantization: an id that is no type, unknown or removed from
/// the format (4, 5, 31-33, 36-38: the message names it), is an invalid argument.
fn quantizable_type(id: u32) -> Result<DataType> {
    quant::data_type(id).map_err(|e| Error::msg(ErrorCode::InvalidArgument, e.message()))
}

/// Checks every argument before any memory is read.
///
/// # Safety
/// As `gguf_quantize`'s contract: the pointers hold what its arguments say.
unsafe fn buffers<'a>(
    dtype: u32,
    src: *const f32,
    n_rows: u64,
    n_per_row: u64,
    importance: *const f32,
    dst: *mut c_void,
    dst_size: u64,
) -> Result<Buffers<'a>> {
    let dtype = quantizable_type(dtype)?;
    let needed = quantize::output_bytes(dtype, n_rows, n_per_row)?;
    let n = n_rows
        .checked_mul(n_per_row)
        .and_then(|n| n.checked_mul(4))
        .and_then(buffer_len)
        .ok_or_else(|| too_big("src"))?
        / 4;
    let n_per_row = to_usize(n_per_row).ok_or_else(|| too_big("a row"))?;
    let dst_len = buffer_len(dst_size).ok_or_else(|| too_big("dst"))?;
    if dst_size < needed {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "dst holds {dst_size} bytes; {n_rows} rows of {n_per_row} values as {} take {needed}",
                dtype.name()
            ),
        ));
    }
    if n > 0 && src.is_null() {
        return Err(null("src"));
    }
    if n > 0 && dst.is_null() {
        return Err(null("dst"));
    }
    aligned(src, "src")?;
    if !importance.is_null() {
        aligned(importance, "importance")?;
    }
    let spans = |p: *const f32, len: usize| [(p as usize, len), (dst as usize, dst_len)];
    disjoint(spans(src, n * 4).into_iter(), "src and dst")?;
    if !importance.is_null() {
        disjoint(
            spans(importance, n_per_row * 4).into_iter(),
            "importance and dst",
        )?;
    }
    if n == 0 {
        return Ok(Buffers {
            dtype,
            src: &[],
            n_per_row,
            importance: None,
            dst: &mut [],
        });
    }
    // SAFETY: holding what the caller's contract says (`n` floats, `n_per_row` weights,
    // `dst_size` bytes); `dst` shares no byte with the others (checked).
    unsafe {
        Ok(Buffers {
            dtype,
            src: slice(src, n, "src")?,
            n_per_row,
            importance: if importance.is_null() {
                None
            } else {
                Some(slice(importance, n_per_row, "importance")?)
            },
            dst: slice_mut(dst.cast::<u8>(), dst_len, "dst")?,
        })
    }
}

/// Quantizes `n_rows` rows of `n_per_row` floats at `src` into data type `dtype` (a
/// `GGUFDataType` value) at `dst` (`dst_size` bytes), byte for byte as ggml's
/// `ggml_quantize_chunk` writes them. `importance` is NULL or `n_per_row` weights (one per value
/// of a row: an importance matrix's column); the types whose ggml quantizer takes weights
/// (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to Q6_K and the IQ types) use them, the others ignore them.
/// Thread-safe; allocates nothing it keeps. Returns the bytes written (the first ones of
/// `dst`: `gguf_quantize_size`), or 0 (`gguf_last_error` says why; `dst` unchanged but for
/// rows already written when a later row fails) when the type cannot be quantized
/// (GGUF_ERROR_CODE_UNSUPPORTED; unknown ids and the ids removed from the format, 4, 5, 31-33
/// and 36-38, GGUF_ERROR_CODE_INVALID_ARGUMENT), `n_per_row` is
/// 0 or not a whole number of the type's blocks, `dst_size` is too small, the type needs
/// importance weights (`gguf_quantize_requires_importance`) and `importance` is NULL, a row
/// holds values the type cannot represent where ggml has no answer (the message names the row
/// and the element), a buffer is not aligned for floats, `dst` overlaps `src` or `importance`
/// (all GGUF_ERROR_CODE_INVALID_ARGUMENT), or a pointer needed is NULL. `n_rows` 0 writes nothing
/// and returns 0 without recording an error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_quantize(
    dtype: u32,
    src: *const f32,
    n_rows: u64,
    n_per_row: u64,
    importance: *const f32,
    dst: *mut c_void,
    dst_size: u64,
) -> u64 {
    guard(0, || {
        // SAFETY: the caller's contract (see above) is `buffers`'s.
        let b = unsafe { buffers(dtype, src, n_rows, n_per_row, importance, dst, dst_size)? };
        quantize_rows(b, None)
    })
}

/// `gguf_quantize` with the rows split among up to `n_threads` threads (0: one per core; at
/// most 1024): the bytes are those one thread writes, and a failure is the one one thread
/// meets (the lowest row without an answer, numbered as this call numbers its rows; the rows
/// that fail are left unchanged, other rows may be written). Threads are started for the call
/// and joined before it returns.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gguf_quantize_parallel(
    dtype: u32,
    src: *const f32,
    n_rows: u64,
    n_per_row: u64,
    importance: *const f32,
    dst: *mut c_void,
    dst_size: u64,
    n_threads: u32,
) -> u64 {
    guard(0, || {
        // SAFETY: the caller's contract (see `gguf_quantize`) is `buffers`'s.
        let b = unsafe { buffers(dtype, src, n_rows, n_per_row, importance, dst, dst_size)? };
        quantize_rows(b, Some(n_threads))
    })
}

/// The quantization of `gguf_quantize` (`threads` None) or `gguf_quantize_parallel` into the
/// checked buffers: the bytes written.
fn quantize_rows(b: Buffers<'_>, threads: Option<u32>) -> Result<u64> {
    if b.src.is_empty() {
        return Ok(0);
    }
    let n = match threads {
        None => quantize::quantize(b.dtype, b.src, b.n_per_row, b.importance, b.dst)?,
        Some(threads) => {
            quantize::quantize_parallel(b.dtype, b.src, b.n_per_row, b.importance, b.dst, threads)?
        }
    };
    Ok(n as u64)
}

/// The bytes `n_rows` rows of `n_per_row` values take as `dtype`, or 0 (`gguf_last_error` says
/// why) when the type cannot be quantized (GGUF_ERROR_CODE_UNSUPPORTED), is unknown or was
/// removed from the format (GGUF_ERROR_CODE_INVALID_ARGUMENT), or `n_per_row` is 0 or not whole
/// blocks.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_quantize_size(dtype: u32, n_rows: u64, n_per_row: u64) -> u64 {
    guard(0, || {
        quantize::output_bytes(quantizable_type(dtype)?, n_rows, n_per_row)
    })
}

/// Whether quantizing to `dtype` needs importance weights (IQ2_XXS, IQ2_XS and IQ1_S, as ggml's
/// `ggml_quantize_requires_imatrix` says); false for every other id.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_quantize_requires_importance(dtype: u32) -> bool {
    DataType::from_id(dtype).is_some_and(quantize::requires_importance)
}
