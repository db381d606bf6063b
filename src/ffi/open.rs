//! Opening and closing handles, and the file-level facts: version, alignment, layout, size.

use super::boundary::{c_str, free_box, guard, known_flags, to_boxed_mut_ptr, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
use crate::error::Result;
use crate::file::GgufFile;
use crate::model::Model;
use crate::platform::path_from_bytes;
use crate::source::{OpenOptions, Source};
use std::ffi::{c_char, c_void};

/// The handle C gets for an opened model.
pub(crate) fn into_handle(model: Model<Source>, name: String) -> GGUFFile {
    to_boxed_mut_ptr(GGUFFileImpl::new(model, name))
}

/// Flags for `gguf_open_ex`, combined with `|`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFlag {
    /// Fault every page of the file in while mapping it (`MAP_POPULATE`).
    Populate = 1,
    /// Lock the file's pages in memory (`mlock`); fails, naming the limit, when `ulimit -l`
    /// forbids it.
    Lock = 2,
    /// Read the file into private page-aligned memory instead of mapping it: the handle is then
    /// immune to the file being truncated or rewritten while it is open.
    Read = 4,
    /// Open only this file even if it is one shard of a split model.
    SingleShard = 8,
    /// Do not map the file: read its header by positioned reads and its tensor data only through
    /// `gguf_read_tensor` and `gguf_read_tensors` (`gguf_tensor_data` returns NULL). For files
    /// larger than the address space; `gguf_is_mapped` tells which a handle is.
    NoMap = 16,
}

pub(crate) fn open_options(flags: u32) -> Result<OpenOptions> {
    let known = OpenFlag::Populate as u32
        | OpenFlag::Lock as u32
        | OpenFlag::Read as u32
        | OpenFlag::SingleShard as u32
        | OpenFlag::NoMap as u32;
    known_flags(flags, known, "open flags")?;
    let has = |flag: OpenFlag| flags & flag as u32 != 0;
    Ok(OpenOptions {
        populate: has(OpenFlag::Populate),
        lock: has(OpenFlag::Lock),
        read: has(OpenFlag::Read),
        single_shard: has(OpenFlag::SingleShard),
        no_map: has(OpenFlag::NoMap),
    })
}

/// Opens the GGUF file at `path` (NUL-terminated): maps it read-only, checks every rule of the
/// format, and indexes its metadata and tensors. Tensor data is neither read nor copied. If the
/// file is one shard of a split model (`name-00002-of-00005.gguf`), every shard is opened and
/// the handle presents the whole model (see `gguf_shard_count`). Returns NULL on failure,
/// recording why (see `gguf_last_error`); never prints. Close the handle with `gguf_close`.
///
/// `path` is used as exact bytes (it need not be UTF-8; sibling shards are found from its bytes).
/// Only regular files are opened: a directory, FIFO, socket or device fails at once with
/// GGUF_ERROR_CODE_IO saying what it is (a FIFO nobody writes to never blocks the call), and so
/// does a file that reports size 0 but has contents (files in /proc and /sys); an empty file is
/// GGUF_ERROR_CODE_TRUNCATED.
///
/// The file stays mapped until `gguf_close`, and its pages are read when first touched, by the
/// caller (tensor data, `array_data`) or by the library (array getters decode the mapping on
/// first use). If another process truncates or rewrites the file in place meanwhile, touching a
/// page past its new end raises SIGBUS, inside a library call too, and rewritten pages show the
/// new bytes. Open with GGUF_OPEN_FLAG_READ to hold a private copy instead, or replace model files
/// atomically (write a new file and rename it over the old one, as the writer does): an open
/// handle keeps the old file alive.
///
/// Opening starts no thread: the header is read on the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open(path: *const c_char) -> GGUFFile {
    // SAFETY: the same contract as ours.
    unsafe { gguf_open_ex(path, 0) }
}

/// `gguf_open` with `flags`, a combination of `GGUFOpenFlag` values: `GGUF_OPEN_FLAG_POPULATE`
/// faults the whole file in up front (`PrefetchVirtualMemory` on Windows), `GGUF_OPEN_FLAG_LOCK`
/// locks it in memory (failing, naming `ulimit -l`, when the limit forbids; `VirtualLock` on
/// Windows, within the process's working set), `GGUF_OPEN_FLAG_READ` reads it into private memory
/// instead of mapping it (immune to the file being truncated or rewritten afterwards), and
/// `GGUF_OPEN_FLAG_SINGLE_SHARD` opens one shard of a split model alone, and
/// `GGUF_OPEN_FLAG_NO_MAP` maps nothing: the header is read by positioned reads and tensor data
/// only by `gguf_read_tensor(s)` (`gguf_is_mapped` is then false, and `gguf_tensor_data` NULL). A
/// file larger than the address space (over 4 GiB in a 32-bit process) is opened that way
/// without the flag, unless GGUF_OPEN_FLAG_READ asks for a copy. 0 behaves as `gguf_open`. Unknown flags fail with GGUF_ERROR_CODE_INVALID_ARGUMENT. A map that fails for
/// want of memory mappings or address space fails with GGUF_ERROR_CODE_IO naming
/// `vm.max_map_count` (with the mappings in use) and `ulimit -v`, and recommending
/// GGUF_OPEN_FLAG_NO_MAP.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_ex(path: *const c_char, flags: u32) -> GGUFFile {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `path` is NULL or a NUL-terminated string (the header's contract).
        let bytes = unsafe { c_str(path, "path")? };
        let path = path_from_bytes(bytes)?;
        let model = Model::open(&path, open_options(flags)?)?;
        // A single file's name is already escaped by the model: copied, not escaped again.
        let name = match model.shard_names() {
            [one] => one.clone(),
            _ => crate::text::path_text(&path),
        };
        Ok(into_handle(model, name))
    })
}

/// Opens a GGUF file held in memory, with the same checks as `gguf_open`. Nothing is copied: the
/// caller keeps the `len` bytes at `data` alive and unchanged until `gguf_close`, and tensor
/// data pointers point into them. Returns NULL on failure, recording why (errors name the file
/// `<memory>`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_memory(data: *const c_void, len: usize) -> GGUFFile {
    guard(std::ptr::null_mut(), || {
        if data.is_null() {
            return Err(super::boundary::null("data"));
        }
        // SAFETY: `data` is non-NULL and the caller guarantees `len` readable bytes there that
        // stay alive and unchanged until the handle is closed (the header's contract); the
        // 'static slice never escapes the handle.
        let bytes: &'static [u8] = unsafe { super::boundary::slice(data.cast(), len, "data")? };
        let name = "<memory>".to_string();
        let file = GgufFile::from_bytes(Source::Lent(bytes)).map_err(|e| e.in_file(&name))?;
        Ok(into_handle(Model::single(file, name.clone())?, name))
    })
}

/// Closes a handle: unmaps the file and frees everything the handle handed out. NULL is a no-op.
/// Closing a handle twice, or using it or any pointer it returned afterwards, is undefined.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_close(file: GGUFFile) {
    guard((), || {
        // SAFETY: NULL or a handle from `gguf_open*` that, by the header's contract, has not
        // been closed before and that no other call uses.
        unsafe { free_box(file) };
        Ok(())
    })
}

fn file_fact<T: Default>(file: GGUFFile, fact: impl FnOnce(&GGUFFileImpl) -> T) -> T {
    guard(T::default(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(fact(f))
    })
}

/// The format version of the file (1, 2 or 3); 0 if `file` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_version(file: GGUFFile) -> u32 {
    file_fact(file, |f| f.model.first().version())
}

/// The alignment of tensor data (`general.alignment`, or 32 when absent); 0 if `file` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_alignment(file: GGUFFile) -> u64 {
    file_fact(file, |f| f.model.first().alignment())
}

/// The absolute file offset where the data section starts (tensor offsets are relative to it);
/// 0 if `file` is NULL. For a file without tensor data it may equal or exceed the file size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_data_offset(file: GGUFFile) -> u64 {
    file_fact(file, |f| f.model.first().data_offset())
}

/// The size of the file in bytes; 0 if `file` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_file_size(file: GGUFFile) -> u64 {
    file_fact(file, |f| f.model.first().file_size())
}

/// The byte order of the file's numbers (a `GGUFByteOrder`): big-endian files are detected by
/// their byte-swapped version field. Metadata values are returned in host order; tensor data and
/// `array_data` as stored. GGUF_BYTE_ORDER_LITTLE if `file` is NULL (recording the error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_byte_order(file: GGUFFile) -> u32 {
    file_fact(file, |f| f.model.first().byte_order() as u32)
}
