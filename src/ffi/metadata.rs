//! Metadata: counts, lookup by key and index, and the records describing each value.

use super::boundary::{c_str, guard, to_usize, try_from};
use super::handle::GGUFFile;
pub use super::records::{GGUFMetadataKV, GGUFValue};
use crate::error::ErrorCode;
use std::ffi::c_char;

/// Number of metadata entries; 0 if `file` is NULL (recording the error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_metadata_count(file: GGUFFile) -> u64 {
    guard(0, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(f.metadata.len() as u64)
    })
}

/// The entry with this key (a hash lookup), or NULL if there is none (GGUF_ERROR_CODE_NOT_FOUND)
/// or an argument is NULL. The same entry always returns the same pointer, owned by the handle
/// and valid until `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata(
    file: GGUFFile,
    key: *const c_char,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        // SAFETY: `key` is NULL or a NUL-terminated string (the header's contract).
        let key = unsafe { c_str(key, "key")? };
        Ok(&f.metadata[f.kv_index(key)?] as *const GGUFMetadataKV)
    })
}

/// The entry whose key is the `key_len` bytes at `key` (which may hold NUL bytes, as GGUF keys
/// are length-prefixed; `key` need not be NUL-terminated), or NULL if there is none
/// (GGUF_ERROR_CODE_NOT_FOUND) or an argument is NULL. `gguf_get_metadata` finds only keys
/// without NUL bytes; this finds every key. Same ownership as `gguf_get_metadata`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata_n(
    file: GGUFFile,
    key: *const c_char,
    key_len: usize,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        if key.is_null() {
            return Err(super::boundary::null("key"));
        }
        // SAFETY: non-NULL and valid for reads of `key_len` bytes (the header's contract).
        let key = unsafe { super::boundary::slice(key.cast::<u8>(), key_len, "key")? };
        Ok(&f.metadata[f.kv_index(key)?] as *const GGUFMetadataKV)
    })
}

/// The `index`-th entry in file order, or NULL if `index >= gguf_metadata_count(file)`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or `file` is NULL. Owned by the handle, valid until
/// `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata_by_index(
    file: GGUFFile,
    index: u64,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let kv = to_usize(index)
            .and_then(|i| f.metadata.get(i))
            .ok_or_else(|| {
                f.error(
                    ErrorCode::InvalidArgument,
                    format!(
                        "metadata index {index} is past the end ({} entries)",
                        f.metadata.len()
                    ),
                )
            })?;
        Ok(kv as *const GGUFMetadataKV)
    })
}
