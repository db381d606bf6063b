//! Digests of tensor data (`src/digest.rs`) for C: one tensor of an open file, any bytes at
//! once, or bytes fed in pieces (a whole model's digest).
//!
//! Threading: `gguf_digest`, `gguf_tensor_digest`, `gguf_digest_size` and `gguf_digest_name`
//! may be called from many threads at once (on one file handle too). A `GGUFDigester` is used by
//! one thread at a time; separate digesters may run on separate threads.

use super::boundary::{guard, null};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::tensors::{own_index, GGUFTensorInfo};
use crate::digest::{Digest, DigestAlgorithm, Digester};
use crate::error::{Error, ErrorCode, Result};
use std::ffi::{c_char, c_void};

/// The opaque state behind a `GGUFDigester`.
pub struct GGUFDigesterImpl(Digester);

/// A digest being computed over bytes fed in pieces (`gguf_digester_new`). NULL is never a valid
/// digester.
pub type GGUFDigester = *mut GGUFDigesterImpl;

fn algorithm(id: u32) -> Result<DigestAlgorithm> {
    DigestAlgorithm::from_id(id).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("unknown digest algorithm {id}"),
        )
    })
}

/// Checks that `out` has room for a digest of `a`.
fn check_room(a: DigestAlgorithm, out: *mut u8, out_len: usize) -> Result<()> {
    if out.is_null() {
        return Err(null("out"));
    }
    if out_len < a.size() {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "out_len is {out_len}: a {} digest needs {} bytes",
                a.name(),
                a.size()
            ),
        ));
    }
    Ok(())
}

/// Copies `d` to `out`, checked by [`check_room`].
///
/// # Safety
/// `out` is valid for writes of `d.as_bytes().len()` bytes.
unsafe fn write_digest(d: &Digest, out: *mut u8) -> bool {
    let bytes = d.as_bytes();
    // SAFETY: `out` has room (the caller checked), and cannot overlap `bytes`, a local.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    true
}

/// The bytes at `data` as a slice (empty when `size` is 0, whatever `data` is).
///
/// # Safety
/// `data` is NULL or valid for reads of `size` bytes for `'a`.
unsafe fn bytes<'a>(data: *const c_void, size: usize) -> Result<&'a [u8]> {
    if size == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(null("data"));
    }
    // SAFETY: non-NULL and valid for `size` bytes (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) })
}

/// The size in bytes of `algorithm`'s digests (a `GGUFDigestAlgorithm`): 20 for SHA1, 32 for
/// SHA256, 8 for XXH64 and XXH3, 16 for UUID; 0 for an unknown algorithm
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub extern "C" fn gguf_digest_size(algorithm_id: u32) -> usize {
    guard(0, || Ok(algorithm(algorithm_id)?.size()))
}

/// The name manifests give `algorithm`: "sha1", "sha256", "xxh64", "xxh3" or "uuid" (a static
/// string); NULL for an unknown algorithm (GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub extern "C" fn gguf_digest_name(algorithm_id: u32) -> *const c_char {
    guard(std::ptr::null(), || {
        Ok(match algorithm(algorithm_id)? {
            DigestAlgorithm::Sha1 => c"sha1",
            DigestAlgorithm::Sha256 => c"sha256",
            DigestAlgorithm::Xxh64 => c"xxh64",
            DigestAlgorithm::Xxh3 => c"xxh3",
            DigestAlgorithm::Uuid => c"uuid",
        }
        .as_ptr())
    })
}

/// Writes the `algorithm` digest (a `GGUFDigestAlgorithm`) of the `size` bytes at `data` to
/// `out` (`out_len` bytes of room, at least `gguf_digest_size(algorithm)`; the digest's bytes
/// are written, nothing more). `data` may be NULL when `size` is 0. Returns false, writing
/// nothing, for an unknown algorithm or a short `out_len` (GGUF_ERROR_CODE_INVALID_ARGUMENT) or
/// a NULL pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_digest(
    algorithm_id: u32,
    data: *const c_void,
    size: usize,
    out: *mut u8,
    out_len: usize,
) -> bool {
    guard(false, || {
        let a = algorithm(algorithm_id)?;
        // SAFETY: `data` is valid for `size` bytes (the header's contract).
        let data = unsafe { bytes(data, size)? };
        check_room(a, out, out_len)?;
        let d = crate::digest::digest(a, data);
        // SAFETY: checked above; `out` is valid for `out_len` bytes (the header's contract).
        Ok(unsafe { write_digest(&d, out) })
    })
}

/// Writes the `algorithm` digest (a `GGUFDigestAlgorithm`) of a tensor's data, as stored in the
/// file (`info->size_bytes` bytes at `gguf_tensor_data`), to `out` (`out_len` bytes of room, at
/// least `gguf_digest_size(algorithm)`). This is the digest `gguf_hash.py` and `llama-gguf-hash`
/// print for the tensor, so an engine can check a tensor it loaded against a manifest. Reads the
/// tensor's bytes through the mapping: a file truncated by someone else while open raises
/// SIGBUS (open with GGUF_OPEN_FLAG_READ to avoid it). Returns false, writing nothing, if `info`
/// was not returned by this `file` or the algorithm is unknown or `out_len` short
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT), or a pointer is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tensor_digest(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    algorithm_id: u32,
    out: *mut u8,
    out_len: usize,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let i = own_index(f, info)?;
        let a = algorithm(algorithm_id)?;
        check_room(a, out, out_len)?;
        let data = f
            .model
            .tensor_at(i)
            .map(|t| t.info.data)
            .unwrap_or_default();
        let d = crate::digest::digest(a, data);
        // SAFETY: checked above; `out` is valid for `out_len` bytes (the header's contract).
        Ok(unsafe { write_digest(&d, out) })
    })
}

/// A new digester for `algorithm` (a `GGUFDigestAlgorithm`), to feed with
/// `gguf_digester_update` and read with `gguf_digester_finish`; the caller owns it and frees it
/// with `gguf_digester_free`. NULL for an unknown algorithm (GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub extern "C" fn gguf_digester_new(algorithm_id: u32) -> GGUFDigester {
    guard(std::ptr::null_mut(), || {
        let a = algorithm(algorithm_id)?;
        Ok(Box::into_raw(Box::new(GGUFDigesterImpl(Digester::new(a)))))
    })
}

/// Frees a digester from `gguf_digester_new`; NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_digester_free(digester: GGUFDigester) {
    guard((), || {
        if !digester.is_null() {
            // SAFETY: a non-NULL digester came from `gguf_digester_new` (Box::into_raw) and is
            // freed once (the header's contract).
            drop(unsafe { Box::from_raw(digester) });
        }
        Ok(())
    })
}

/// Feeds the `size` bytes at `data` (which may be NULL when `size` is 0) to the digester.
/// Returns false if a pointer is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_digester_update(
    digester: GGUFDigester,
    data: *const c_void,
    size: usize,
) -> bool {
    guard(false, || {
        // SAFETY: NULL or a live digester used by this thread only (the header's contract).
        let d = unsafe { digester.as_mut() }.ok_or_else(|| null("digester"))?;
        // SAFETY: `data` is valid for `size` bytes (the header's contract).
        d.0.update(unsafe { bytes(data, size)? });
        Ok(true)
    })
}

/// Writes the digest of everything fed since the digester was made or last finished to `out`
/// (`out_len` bytes of room, at least `gguf_digest_size` of its algorithm), then starts it
/// afresh. Returns false, writing nothing and keeping what was fed, if `out_len` is short
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or a pointer is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_digester_finish(
    digester: GGUFDigester,
    out: *mut u8,
    out_len: usize,
) -> bool {
    guard(false, || {
        // SAFETY: NULL or a live digester used by this thread only (the header's contract).
        let d = unsafe { digester.as_mut() }.ok_or_else(|| null("digester"))?;
        check_room(d.0.algorithm(), out, out_len)?;
        // SAFETY: checked above; `out` is valid for `out_len` bytes (the header's contract).
        Ok(unsafe { write_digest(&d.0.finish(), out) })
    })
}
