//! Paging control (`madvise`) and pointer checks: what an engine does with the mapping between
//! opening a model and uploading it.

use super::boundary::{guard, null, slice, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::records::GGUFTensorInfo;
use super::tensors::own_index;
use crate::error::{Error, ErrorCode, Result};
use crate::size::in_memory;
use crate::source::memory_len;
use crate::source::Paging;
use std::ffi::c_void;

fn advice(id: u32) -> Result<Paging> {
    Paging::from_id(id).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{id} is not a GGUFPaging value (0 to 4)"),
        )
    })
}

/// Advises the tensor at position `i` of the model's tensor table.
fn advise_tensor(f: &GGUFFileImpl, i: usize, paging: Paging) -> Result<()> {
    let t = f.model.tensor_at(i).ok_or_else(|| null("info"))?;
    // The tensor lies within its shard's bytes (checked at open).
    let start = in_memory(t.info.file_offset);
    f.model.shards()[t.shard]
        .source()
        .advise(start..start + in_memory(t.info.size), paging)
        .map_err(|e| f.about(e))
}

/// Advises the kernel how the tensor's data will be used (`madvise` on its pages, widened to
/// whole pages): `advice` is a `GGUFPaging` value. Returns false, recording why, if an argument
/// is NULL or `info` is not this file's (GGUF_ERROR_CODE_INVALID_ARGUMENT), the advice is
/// unknown, the handle holds memory lent to `gguf_open_memory` or (for DONTNEED) a file read
/// into memory (GGUF_ERROR_CODE_UNSUPPORTED), or the kernel refuses (GGUF_ERROR_CODE_IO). On
/// Windows WILLNEED is `PrefetchVirtualMemory` and the other advice reports
/// GGUF_ERROR_CODE_UNSUPPORTED; on wasm32 all advice does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_advise_tensor(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    advice: u32,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        advise_tensor(f, own_index(f, info)?, self::advice(advice)?)?;
        Ok(true)
    })
}

/// `gguf_advise_tensor` for `count` tensors at once (`infos` holds `count` pointers returned by
/// this `file`). Every pointer is checked before any advice is given.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_advise_tensors(
    file: GGUFFile,
    infos: *const *const GGUFTensorInfo,
    count: usize,
    advice: u32,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let paging = self::advice(advice)?;
        // SAFETY: `infos` points to `count` pointers (the header's contract).
        let infos = unsafe { slice(infos, count, "infos")? };
        let indices = infos
            .iter()
            .map(|&info| own_index(f, info))
            .collect::<Result<Vec<_>>>()?;
        for i in indices {
            advise_tensor(f, i, paging)?;
        }
        Ok(true)
    })
}

/// `gguf_advise_tensor` for the whole data section of every shard.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_advise_data(file: GGUFFile, advice: u32) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let paging = self::advice(advice)?;
        for shard in f.model.shards() {
            let start = in_memory(shard.data_offset().min(shard.file_size()));
            shard
                .source()
                .advise(start..shard.bytes().len(), paging)
                .map_err(|e| f.about(e))?;
        }
        Ok(true)
    })
}

/// Whether the `len` bytes at `ptr` lie wholly inside the memory of one of the handle's shards
/// (its mapping, whole pages, as every view of `gguf_plan_upload` does; or the buffer lent to
/// `gguf_open_memory`). False for NULL arguments (recording
/// GGUF_ERROR_CODE_NULL_ARGUMENT) and for ranges outside (recording
/// GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_contains(file: GGUFFile, ptr: *const c_void, len: u64) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        if ptr.is_null() {
            return Err(null("ptr"));
        }
        let start = ptr as u64;
        let inside = f.model.shards().iter().any(|s| {
            let base = s.bytes().as_ptr() as u64;
            start >= base
                && start
                    .checked_add(len)
                    .is_some_and(|end| end <= base + memory_len(s))
        });
        if inside {
            Ok(true)
        } else {
            Err(f.error(
                ErrorCode::InvalidArgument,
                format!("{len} bytes at {ptr:p} are not inside the file's memory"),
            ))
        }
    })
}
