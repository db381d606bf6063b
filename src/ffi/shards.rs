//! Split models: how many shards a handle holds, and what each one is.

use super::boundary::{guard, try_from};
use super::handle::GGUFFile;
pub use super::records::GGUFShardInfo;
use crate::error::ErrorCode;

/// Number of shards the handle holds: 1 for an unsplit file (or one opened with
/// `GGUF_OPEN_FLAG_SINGLE_SHARD`), N for a split model opened from any of its N shards; 0 if
/// `file` is NULL. The model's metadata is the first shard's; `gguf_version`, `gguf_alignment`,
/// `gguf_data_offset` and `gguf_file_size` describe the first shard too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_shard_count(file: GGUFFile) -> u32 {
    guard(0, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(crate::size::shard_no(f.shards.len()))
    })
}

/// Shard `index` (0-based) of the model, or NULL if `index >= gguf_shard_count(file)`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or `file` is NULL. Owned by the handle, valid until
/// `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_shard(file: GGUFFile, index: u32) -> *const GGUFShardInfo {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let shard = f.shards.get(index as usize).ok_or_else(|| {
            f.error(
                ErrorCode::InvalidArgument,
                format!(
                    "shard index {index} is past the end ({} shards)",
                    f.shards.len()
                ),
            )
        })?;
        Ok(shard as *const GGUFShardInfo)
    })
}
