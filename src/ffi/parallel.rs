//! A tensor converted to floats on many threads: `gguf_tensor_to_float_parallel`, over
//! `load::tensor_to_float_parallel`.

use super::boundary::guard;
use super::handle::GGUFFile;
use super::records::GGUFTensorInfo;
use super::values::float_destination;
use crate::load;

/// `gguf_tensor_to_float` on up to `n_threads` threads (0: one per core; at most 1024, and a
/// larger `n_threads` runs on 1024): rows `[first_row, first_row + n_rows)` are split into
/// consecutive ranges of whole rows, each converted into its part of `dst` (room for
/// `n_rows * info->dims[0]` floats), on threads started for this call and on the calling
/// thread, and every thread is joined before it returns (a thread is given at least 65536
/// elements, so small tensors use fewer threads, or only the calling one). The floats are those
/// of `gguf_tensor_to_float`.
///
/// Returns true, or false for anything `gguf_tensor_to_float` refuses (checked for the whole
/// range before any thread starts: NULL arguments, an `info` not from this `file`, rows past the
/// end, rows whose bytes or floats would take more than one buffer in memory can, a type that
/// cannot be converted; `first_row + n_rows` overflowing is GGUF_ERROR_CODE_INVALID_ARGUMENT), or
/// when a range fails to convert (the first failure is the one recorded; `dst` may be partly
/// written).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tensor_to_float_parallel(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    first_row: u64,
    n_rows: u64,
    dst: *mut f32,
    n_threads: u32,
) -> bool {
    guard(false, || {
        let check = load::float_rows_parallel;
        // SAFETY: the header's contract (as `float_destination` asks). Every check, for the
        // whole range, before any slice is made of `dst`.
        let (f, i, dst) = unsafe { float_destination(file, info, first_row, n_rows, dst, check)? };
        let name = Some(f.name.as_str());
        load::rows_to_float_parallel(&f.model, name, i, first_row, n_rows, dst, n_threads)?;
        Ok(true)
    })
}
