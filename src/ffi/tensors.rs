//! Tensors: counts, lookup by name and index, and zero-copy access to their data.

use super::boundary::{c_str, guard, null, to_usize, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
pub use super::records::GGUFTensorInfo;
use crate::error::{ErrorCode, Result};
use crate::text::quote;
use std::ffi::{c_char, c_void};

/// Number of tensors in the file; 0 if `file` is NULL (recording the error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tensor_count(file: GGUFFile) -> u64 {
    guard(0, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(f.model.tensor_count() as u64)
    })
}

/// The tensor named `name` (a hash lookup), or NULL if there is none (GGUF_ERROR_CODE_NOT_FOUND)
/// or an argument is NULL. The same tensor always returns the same pointer, owned by the handle
/// and valid until `gguf_close`. The records of every tensor are made by the first call that
/// needs one (this, `gguf_get_tensor_by_index`, ...), not by `gguf_open`: that first call costs
/// about 30 ns a tensor, the later ones a lookup.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_tensor(
    file: GGUFFile,
    name: *const c_char,
) -> *const GGUFTensorInfo {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        // SAFETY: `name` is NULL or a NUL-terminated string (the header's contract).
        let name = unsafe { c_str(name, "name")? };
        let i = f.model.tensor_index(name).ok_or_else(|| {
            f.error(
                ErrorCode::NotFound,
                format!("no tensor named {}", quote(name)),
            )
        })?;
        Ok(&f.tensors()[i] as *const GGUFTensorInfo)
    })
}

/// The `index`-th tensor in file order, or NULL if `index >= gguf_tensor_count(file)`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or `file` is NULL. Owned by the handle, valid until
/// `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_tensor_by_index(
    file: GGUFFile,
    index: u64,
) -> *const GGUFTensorInfo {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let info = to_usize(index)
            .and_then(|i| f.tensors().get(i))
            .ok_or_else(|| {
                f.error(
                    ErrorCode::InvalidArgument,
                    format!(
                        "tensor index {index} is past the end ({} tensors)",
                        f.model.tensor_count()
                    ),
                )
            })?;
        Ok(info as *const GGUFTensorInfo)
    })
}

/// The position of `info` in `f`'s tensor table, if it is one of `f`'s records.
pub(crate) fn own_index(f: &GGUFFileImpl, info: *const GGUFTensorInfo) -> Result<usize> {
    if info.is_null() {
        return Err(null("info"));
    }
    let tensors = f.tensors();
    let base = tensors.as_ptr() as usize;
    let size = std::mem::size_of::<GGUFTensorInfo>();
    let delta = (info as usize).wrapping_sub(base);
    if delta % size == 0 && delta / size < tensors.len() {
        Ok(delta / size)
    } else {
        Err(f.error(
            ErrorCode::InvalidArgument,
            "the tensor info does not belong to this file".into(),
        ))
    }
}

/// Pointer to the tensor's data inside the file's mapping (zero-copy): data section start +
/// `info->offset`, `info->size_bytes` bytes, as stored in the file (file byte order, aligned to
/// `gguf_alignment` relative to the file start). NULL if `info` was not returned by this `file`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT), an argument is NULL, or the handle reads by position and
/// holds no data in memory (`gguf_is_mapped` false: GGUF_ERROR_CODE_UNSUPPORTED; use
/// `gguf_read_tensor`). Valid until `gguf_close`; read-only.
/// The bytes are read from the file when first touched: if another process truncates the file
/// while it is mapped, touching a page past the new end raises SIGBUS (see `gguf_open`; a handle
/// opened with GGUF_OPEN_FLAG_READ holds a private copy instead).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tensor_data(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
) -> *const c_void {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let i = own_index(f, info)?;
        let t = f.model.tensor_at(i).ok_or_else(|| null("info"))?;
        if !f.model.shards()[t.shard].source().in_memory() {
            return Err(f.error(
                ErrorCode::Unsupported,
                "the tensor data is not in memory: this handle reads by position (a reader, a \
                 URL, GGUF_OPEN_FLAG_NO_MAP or a file too large to map); copy the data with \
                 gguf_read_tensor or gguf_read_tensors"
                    .into(),
            ));
        }
        Ok(t.info.data.as_ptr().cast())
    })
}
