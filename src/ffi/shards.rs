//! Split models: how many shards a handle holds, and what each one is.

use super::boundary::guard;
use super::handle::{GGUFFile, GGUFFileImpl};
use crate::error::ErrorCode;
use crate::file::GgufFile;
use crate::source::Source;
use std::ffi::c_char;

/// One file of a model: the only one for an unsplit model, or one shard of a split model.
/// Owned by the handle; valid until `gguf_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFShardInfo {
    /// The path the shard was opened from, NUL-terminated, with its exact bytes (not
    /// necessarily UTF-8; `<memory>` for `gguf_open_memory`).
    pub path: *const c_char,
    /// Size of the shard's file in bytes.
    pub file_size: u64,
    /// Absolute offset of the shard's data section.
    pub data_offset: u64,
    /// Alignment of the shard's tensor data.
    pub alignment: u64,
    /// Format version of the shard.
    pub version: u32,
    /// Number of tensors in the shard.
    pub tensor_count: u64,
    /// Model-wide index of the shard's first tensor (for `gguf_get_tensor_by_index`).
    pub first_tensor: u64,
    /// Start of the shard's bytes in memory (its mapping): tensor data of this shard lies at
    /// `base + info->file_offset`. NULL when the data is not in memory (`gguf_is_mapped` false).
    pub base: *const u8,
}

impl GGUFShardInfo {
    pub(crate) fn new(file: &GgufFile<Source>, path: *const c_char, first_tensor: usize) -> Self {
        GGUFShardInfo {
            path,
            file_size: file.file_size(),
            data_offset: file.data_offset(),
            alignment: file.alignment(),
            version: file.version(),
            tensor_count: file.tensor_count() as u64,
            first_tensor: first_tensor as u64,
            // NULL where the data is not in memory (a handle reading by position).
            base: if file.source().in_memory() {
                file.bytes().as_ptr()
            } else {
                std::ptr::null()
            },
        }
    }
}

/// Number of shards the handle holds: 1 for an unsplit file (or one opened with
/// `GGUF_OPEN_FLAG_SINGLE_SHARD`), N for a split model opened from any of its N shards; 0 if
/// `file` is NULL. The model's metadata is the first shard's; `gguf_version`, `gguf_alignment`,
/// `gguf_data_offset` and `gguf_file_size` describe the first shard too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_shard_count(file: GGUFFile) -> u32 {
    guard(0, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
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
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
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
