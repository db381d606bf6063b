//! Digests of tensor data (`src/digest.rs`) for C: one tensor of an open file, any bytes at
//! once, or bytes fed in pieces (a whole model's digest).
//!
//! Threading: `gguf_digest`, `gguf_tensor_digest`, `gguf_digest_size` and `gguf_digest_name`
//! may be called from many threads at once (on one file handle too). A `GGUFDigester` is used by
//! one thread at a time; separate digesters may run on separate threads.

use super::boundary::{
    free_box, guard, null, slice, to_boxed_mut_ptr, try_from, try_from_mut, Castable,
};
use super::handle::GGUFFile;
use super::records::GGUFTensorInfo;
use super::tensors::own_index;
use crate::digest::{Digest, DigestAlgorithm, Digester};
use crate::error::{Error, ErrorCode, Result};
use std::ffi::{c_char, c_void};

/// The opaque state behind a `GGUFDigester`.
pub struct GGUFDigesterImpl(Digester);

impl Castable for GGUFDigesterImpl {
    const ARG: &'static str = "digester";
}

/// A digest being computed over bytes fed in pieces (`gguf_digester_new`), e.g. a whole model's
/// over its tensors in order. NULL is never a valid digester. One thread at a time uses a
/// digester; separate digesters may run on separate threads at once. (`gguf_digest`,
/// `gguf_tensor_digest`, `gguf_digest_size` and `gguf_digest_name` may be called from many threads
/// at once, on one file handle too.)
pub type GGUFDigester = *mut GGUFDigesterImpl;

fn algorithm(id: u32) -> Result<DigestAlgorithm> {
    DigestAlgorithm::from_id(id).ok_or_else(|| {
        Error::msg(
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
        return Err(Error::msg(
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
        let data = unsafe { slice(data.cast::<u8>(), size, "data")? };
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
        let f = unsafe { try_from(file)? };
        let i = own_index(f, info)?;
        let a = algorithm(algorithm_id)?;
        check_room(a, out, out_len)?;
        // Read by position for a handle whose data is not in memory.
        let d =
            crate::load::digest_tensor(&f.model, i, a).map_err(|e| e.in_file(f.name.clone()))?;
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
        Ok(to_boxed_mut_ptr(GGUFDigesterImpl(Digester::new(a))))
    })
}

/// Frees a digester from `gguf_digester_new`; NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_digester_free(digester: GGUFDigester) {
    guard((), || {
        // SAFETY: NULL or a digester from `gguf_digester_new`, freed once (the header's
        // contract).
        unsafe { free_box(digester) };
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
        let d = unsafe { try_from_mut(digester)? };
        // SAFETY: `data` is valid for `size` bytes (the header's contract).
        d.0.update(unsafe { slice(data.cast::<u8>(), size, "data")? });
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
        let d = unsafe { try_from_mut(digester)? };
        check_room(d.0.algorithm(), out, out_len)?;
        // SAFETY: checked above; `out` is valid for `out_len` bytes (the header's contract).
        Ok(unsafe { write_digest(&d.0.finish(), out) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{gguf_close, gguf_get_tensor_by_index, gguf_open, gguf_tensor_count};
    use crate::ffi::{gguf_last_error_code, gguf_tensor_data};

    fn sample() -> GGUFFile {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.gguf\0");
        // SAFETY: a NUL-terminated path.
        let f = unsafe { gguf_open(path.as_ptr().cast()) };
        assert!(!f.is_null());
        f
    }

    #[test]
    fn sizes_and_names() {
        for a in DigestAlgorithm::ALL {
            assert_eq!(gguf_digest_size(a.id()), a.size());
            // SAFETY: a static NUL-terminated string.
            let name = unsafe { std::ffi::CStr::from_ptr(gguf_digest_name(a.id())) };
            assert_eq!(name.to_str().unwrap(), a.name());
        }
        assert_eq!(gguf_digest_size(0), 0);
        assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
        assert!(gguf_digest_name(6).is_null());
    }

    #[test]
    fn one_shot_streamed_and_tensor_digests_agree() {
        let f = sample();
        let mut out = [0u8; 32];
        let mut streamed = [0u8; 32];
        // SAFETY: a live handle; every buffer is as long as the length passed with it.
        unsafe {
            for a in DigestAlgorithm::ALL {
                let d = gguf_digester_new(a.id());
                for i in 0..gguf_tensor_count(f) {
                    let t = gguf_get_tensor_by_index(f, i);
                    let data = gguf_tensor_data(f, t);
                    let size = usize::try_from((*t).size_bytes).unwrap();
                    assert!(gguf_tensor_digest(f, t, a.id(), out.as_mut_ptr(), a.size()));
                    let slice = std::slice::from_raw_parts(data.cast::<u8>(), size);
                    assert_eq!(&out[..a.size()], crate::digest::digest(a, slice).as_bytes());
                    assert!(gguf_digest(a.id(), data, size, streamed.as_mut_ptr(), 32));
                    assert_eq!(out[..a.size()], streamed[..a.size()]);
                    assert!(gguf_digester_update(d, data, size));
                }
                assert!(gguf_digester_finish(d, out.as_mut_ptr(), 32));
                gguf_digester_free(d);
            }
        }
        // SAFETY: closing the live handle once.
        unsafe { gguf_close(f) };
    }

    #[test]
    fn bad_arguments_fail_and_write_nothing() {
        let f = sample();
        let mut out = [0xaau8; 32];
        // SAFETY: a live handle; `out` has 32 bytes; the other pointers are NULL or foreign.
        unsafe {
            let t = gguf_get_tensor_by_index(f, 0);
            assert!(!gguf_tensor_digest(f, t, 2, out.as_mut_ptr(), 31));
            assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
            assert!(!gguf_tensor_digest(f, t, 9, out.as_mut_ptr(), 32));
            assert!(!gguf_tensor_digest(f, t, 1, std::ptr::null_mut(), 32));
            assert_eq!(gguf_last_error_code(), ErrorCode::NullArgument as u32);
            let copy = *t;
            assert!(!gguf_tensor_digest(f, &copy, 1, out.as_mut_ptr(), 32));
            assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
            assert!(!gguf_tensor_digest(
                std::ptr::null_mut(),
                t,
                1,
                out.as_mut_ptr(),
                32
            ));
            assert!(!gguf_digest(1, std::ptr::null(), 4, out.as_mut_ptr(), 32));
            assert!(gguf_digest(1, std::ptr::null(), 0, out.as_mut_ptr(), 20));
            assert_eq!(&out[20..], &[0xaa; 12]);
            assert!(gguf_digester_new(0).is_null());
            assert!(!gguf_digester_update(
                std::ptr::null_mut(),
                out.as_ptr().cast(),
                1
            ));
            let d = gguf_digester_new(2);
            assert!(gguf_digester_update(d, b"abc".as_ptr().cast(), 3));
            assert!(!gguf_digester_finish(d, out.as_mut_ptr(), 8));
            // What was fed is kept after a refused finish.
            assert!(gguf_digester_finish(d, out.as_mut_ptr(), 32));
            assert_eq!(
                &out[..],
                crate::digest::digest(DigestAlgorithm::Sha256, b"abc").as_bytes()
            );
            gguf_digester_free(d);
            gguf_digester_free(std::ptr::null_mut());
            gguf_close(f);
        }
    }

    #[test]
    fn many_threads_digest_one_handle() {
        struct Handle(GGUFFile);
        // SAFETY: the handle's getters may be called from many threads (the header's contract).
        unsafe impl Sync for Handle {}
        impl Handle {
            fn get(&self) -> GGUFFile {
                self.0
            }
        }
        let h = Handle(sample());
        // SAFETY: a live handle.
        let n = unsafe { gguf_tensor_count(h.0) };
        let results: Vec<Vec<[u8; 32]>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..n)
                            .map(|i| {
                                let mut out = [0u8; 32];
                                // SAFETY: a live handle, its own tensor, 32 bytes of room.
                                unsafe {
                                    let t = gguf_get_tensor_by_index(h.get(), i);
                                    let f = h.get();
                                    assert!(gguf_tensor_digest(f, t, 2, out.as_mut_ptr(), 32));
                                }
                                out
                            })
                            .collect()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(results.windows(2).all(|w| w[0] == w[1]));
        // SAFETY: closing the live handle once.
        unsafe { gguf_close(h.0) };
    }
}
