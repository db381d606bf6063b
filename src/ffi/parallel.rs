//! A tensor converted to floats on many threads: `gguf_tensor_to_float_parallel`.

use super::boundary::guard;
use super::handle::{GGUFFile, GGUFFileImpl};
use super::tensors::{own_index, GGUFTensorInfo};
use super::values::{gguf_tensor_to_float, rows_buffers};
use crate::error::{Error, ErrorCode};

/// Fewest elements a thread is given: below this, starting a thread costs more than it saves.
const MIN_ELEMENTS_PER_THREAD: u64 = 1 << 16;
/// Most threads one call starts, whatever it is allowed: a bound on the resources a call takes.
const MAX_THREADS: u64 = 1024;

/// `gguf_tensor_to_float` on up to `n_threads` threads (0: as many as the machine has): rows
/// `[first_row, first_row + n_rows)` are split into consecutive ranges, one per thread, each
/// converted in place into its part of `dst` (room for `n_rows * info->dims[0]` floats). The
/// calling thread converts the first range; the others run on threads started for this call and
/// joined before it returns (a thread is given at least 65536 elements, so small tensors use
/// fewer threads, or only the calling one; at most 1024 threads). The floats are those of
/// `gguf_tensor_to_float`.
///
/// Returns true, or false for anything `gguf_tensor_to_float` refuses (checked for the whole
/// range before any thread starts: NULL arguments, an `info` not from this `file`, rows past the
/// end, rows whose bytes or floats would take more than one buffer in memory can, a type that
/// cannot be converted; `first_row + n_rows` overflowing is GGUF_ERROR_CODE_INVALID_ARGUMENT), or
/// when a range fails to convert (it is retried on the calling thread, whose error is then the
/// one recorded; `dst` may be partly written).
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
        let end = first_row.checked_add(n_rows).ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                format!("rows {first_row} plus {n_rows} overflow"),
            )
        })?;
        // Every check, for the whole range, with no row converted.
        // SAFETY: the caller's contract is gguf_tensor_to_float's.
        if !unsafe { gguf_tensor_to_float(file, info, end, 0, dst) } {
            return Ok(false);
        }
        if n_rows == 0 {
            return Ok(true);
        }
        // SAFETY: `file` and `info` were just accepted (a live handle and one of its records).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let i = own_index(f, info)?;
        // The whole range's buffers fit in memory (each range alone might).
        rows_buffers(f, i, n_rows)?;
        let row = f.tensors()[i].dims[0];
        let wanted = match n_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
            n => u64::from(n),
        };
        let by_size = n_rows.saturating_mul(row).div_ceil(MIN_ELEMENTS_PER_THREAD);
        let threads = wanted.min(by_size).min(n_rows).clamp(1, MAX_THREADS);
        // Range k: rows [first_row + starts[k], first_row + starts[k + 1]).
        let starts: Vec<u64> = (0..=threads)
            .map(|k| {
                let start = u128::from(n_rows) * u128::from(k) / u128::from(threads);
                u64::try_from(start).unwrap_or(n_rows) // never above n_rows
            })
            .collect();
        // Raw pointers are not `Send`: each thread gets the addresses and rebuilds them.
        let (file_addr, info_addr, dst_addr) = (file as usize, info as usize, dst as usize);
        let ranges = starts.len() - 1;
        let convert = move |starts: &[u64], k: usize| -> bool {
            let (s, e) = (starts[k], starts[k + 1]);
            // `s * row` floats precede range k in `dst`; it fits in usize (the whole output is
            // addressable memory, as gguf_tensor_to_float checked).
            let skip = usize::try_from(s * row).unwrap_or(usize::MAX);
            let out = (dst_addr as *mut f32).wrapping_add(skip);
            // SAFETY: the caller's contract: a live handle, its record, room for every row;
            // the ranges are disjoint, so each thread writes its own part of `dst`.
            unsafe {
                gguf_tensor_to_float(
                    file_addr as GGUFFile,
                    info_addr as *const GGUFTensorInfo,
                    first_row + s,
                    e - s,
                    out,
                )
            }
        };
        // Plain threads joined below rather than `std::thread::scope`, which would give the
        // calling (C) thread a Rust thread handle that is never freed.
        let starts = std::sync::Arc::new(starts);
        // Each thread is inside this call: a panic there prints nothing either.
        let quiet = super::boundary::inside();
        let workers: Vec<_> = (1..ranges)
            .map(|k| {
                let starts = std::sync::Arc::clone(&starts);
                let spawned = std::thread::Builder::new()
                    .spawn(move || super::boundary::quietly(quiet, || convert(&starts, k)));
                (k, spawned)
            })
            .collect();
        let mut failed = Vec::new();
        if !convert(&starts, 0) {
            failed.push(0);
        }
        // Every thread started is joined before this returns: none outlives the call.
        for (k, worker) in workers {
            let ok = match worker {
                Ok(handle) => handle.join().unwrap_or(false),
                Err(_) => false,
            };
            if !ok {
                failed.push(k);
            }
        }
        // Redone here so that the error, if it recurs, is recorded for the caller's thread.
        Ok(failed.into_iter().all(|k| convert(&starts, k)))
    })
}
