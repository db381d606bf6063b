//! Handles over sources read by position (a file descriptor at an offset, a caller's read
//! callback), and copying tensor data into the caller's memory for every kind of handle.

use super::boundary::{disjoint, guard, known_flags, null, outside, slice_mut, to_usize, try_from};
use super::handle::GGUFFile;
use super::open::{into_handle, open_options, OpenFlag};
use super::records::GGUFTensorInfo;
use super::tensors::own_index;
use crate::error::{Error, ErrorCode, Result};
use crate::load::{self, LoadOptions};
use crate::model::Model;
use crate::read_at::{lying, ReadAt};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Fills `dst` with up to `size` bytes at `offset` of the caller's source; returns the count
/// read (fewer than `size` is allowed: the library asks again for the rest; 0 only at the
/// source's end) or -1 on error.
pub type GGUFReadFn = Option<
    unsafe extern "C" fn(user: *mut c_void, offset: u64, dst: *mut c_void, size: u64) -> i64,
>;

/// Told the bytes done and the total as `gguf_read_tensors` progresses; returns false to stop.
pub type GGUFProgressFn =
    Option<unsafe extern "C" fn(user: *mut c_void, done_bytes: u64, total_bytes: u64) -> bool>;

/// Flags for `gguf_read_tensors`, combined with `|`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFlag {
    /// Bypass the page cache (`O_DIRECT` on Linux and Android, `F_NOCACHE` on macOS and iOS;
    /// buffered reads elsewhere and for sources that are not files).
    Direct = 1,
}

/// A caller's read callback. It is called under a lock, so never from two threads at once,
/// and only from threads that call the library with its handle (`parallel` is false:
/// `gguf_read_tensors` reads such a source on the calling thread). A callback that calls the
/// library to read the handle it serves would wait forever on that lock: `serving` marks which
/// thread is inside the callback, and such a read fails at once instead.
struct CallbackSource {
    read: unsafe extern "C" fn(*mut c_void, u64, *mut c_void, u64) -> i64,
    user: *mut c_void,
    size: u64,
    lock: Mutex<()>,
    /// [`thread_mark`] of the thread running the callback, 0 when none is.
    serving: AtomicUsize,
}

thread_local! {
    /// A byte whose address tells this thread from every other live thread (no destructor, so
    /// the thread of a C caller is not registered with Rust's runtime).
    static MARK: u8 = const { 0 };
}

/// This thread's mark: an address no other live thread has, never 0.
fn thread_mark() -> usize {
    MARK.with(|m| std::ptr::from_ref(m) as usize)
}

/// Clears `serving` when the callback returns (or a panic unwinds past it).
struct Serving<'a>(&'a AtomicUsize);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

// SAFETY: the callback and its `user` pointer are only used under `lock`, from threads that
// call the library; the caller promises (the header's contract) that this is allowed.
unsafe impl Send for CallbackSource {}
// SAFETY: as above.
unsafe impl Sync for CallbackSource {}

impl ReadAt for CallbackSource {
    fn len(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<usize> {
        let want = (dst.len() as u64).min(self.size.saturating_sub(offset));
        if want == 0 {
            return Ok(0);
        }
        // Only this thread stores its own mark, and it clears it before leaving the callback:
        // finding it here means this thread is inside the callback, which holds the lock.
        let me = thread_mark();
        if self.serving.load(Ordering::Acquire) == me {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "the read callback of <reader> called the library to read the handle it \
                     serves ({want} bytes at offset {offset}): a read callback must not read its \
                     own handle (it would wait for itself)"
                ),
            ));
        }
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.serving.store(me, Ordering::Release);
        let _serving = Serving(&self.serving);
        // SAFETY: `dst` is valid for writes of `want <= dst.len()` bytes; the callback and
        // `user` are the caller's, valid until gguf_close (the header's contract).
        let n = unsafe { (self.read)(self.user, offset, dst.as_mut_ptr().cast(), want) };
        match u64::try_from(n) {
            Err(_) => Err(lying(
                self,
                offset,
                format!("failed (returned {n}) reading {want} bytes"),
            )),
            Ok(n) if n > want => Err(lying(
                self,
                offset,
                format!("returned {n} bytes when asked for {want}"),
            )),
            // At most `want`, which is at most `dst.len()`.
            Ok(n) => Ok(usize::try_from(n).expect("at most dst.len()")),
        }
    }

    fn describe(&self) -> String {
        "<reader>".to_string()
    }
}

/// The flags a handle over a source takes: SINGLE_SHARD (a source is always opened alone) and
/// NO_MAP; the others concern mapping a path.
fn source_flags(flags: u32, what: &str) -> Result<bool> {
    let options = open_options(flags)?;
    if options.populate || options.lock || options.read {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{what} takes only GGUF_OPEN_FLAG_NO_MAP and GGUF_OPEN_FLAG_SINGLE_SHARD (flags \
                 {flags:#x})"
            ),
        ));
    }
    Ok(flags & OpenFlag::NoMap as u32 != 0)
}

/// Opens a GGUF file stored inside another file: `length` bytes from `offset` of the open file
/// descriptor `fd` (0 = to the end of the file), such as an Android APK asset, a llamafile or a
/// tar member. The handle reads through a descriptor of its own: the caller may close `fd` after
/// the call, or while other threads use the handle; the handle never changes `fd`'s flags or
/// position. `fd` must be open for reading (O_RDONLY or O_RDWR; O_APPEND and O_NONBLOCK change
/// nothing) on a regular file: a write-only descriptor (and Linux's O_PATH), a pipe, FIFO,
/// socket, device or directory is refused (GGUF_ERROR_CODE_IO, saying which). A descriptor
/// opened with O_DIRECT (Linux, Android), whose reads need aligned buffers, is opened again
/// without it through `/proc/self/fd` (the caller's keeps its flag): every read works as for any
/// descriptor, and GGUF_READ_FLAG_DIRECT still bypasses the page cache; where `/proc` is not
/// mounted, such a descriptor is refused, saying so. The bytes are mapped (from the page
/// boundary at or before `offset`), so tensor pointers and plan views work as for `gguf_open`;
/// file offsets reported (`file_offset`, `gguf_data_offset`, `gguf_file_size`, error offsets)
/// are relative to the embedded file. With GGUF_OPEN_FLAG_NO_MAP nothing is mapped: the header
/// is read by positioned reads and tensor data only through `gguf_read_tensor(s)`
/// (`gguf_tensor_data` then returns NULL). A file too large for the address space is opened
/// that way without the flag (`gguf_is_mapped` says false). A split model's shards are not
/// looked for: the file is opened alone. On Windows `fd` is a C runtime descriptor (`_open`,
/// `_fileno`). Returns NULL on failure, recording why: errors name `file descriptor FD`, and
/// `at offset OFFSET` when `offset` is not 0 (a system call's failure names the offset in the
/// descriptor's file it was given). An offset or length past the file's end is
/// GGUF_ERROR_CODE_INVALID_ARGUMENT. Close the handle with `gguf_close`, once no other thread
/// uses it.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_open_fd(fd: i32, offset: u64, length: u64, flags: u32) -> GGUFFile {
    guard(std::ptr::null_mut(), || {
        // The handle's name: the descriptor, and where the GGUF file starts in it.
        let descriptor = format!("file descriptor {fd}");
        let name = match offset {
            0 => descriptor.clone(),
            _ => format!("{descriptor} at offset {offset}"),
        };
        let no_map = source_flags(flags, "gguf_open_fd")?;
        // Errors before parsing name the descriptor in their message, not as the file.
        let file = crate::platform::dup_for_reading(fd, &descriptor)?;
        let model = Model::open_embedded(file, offset, length, &name, &descriptor, no_map)?;
        Ok(into_handle(model, name))
    })
}

/// Parses a file through `read` without mapping it; `size` is the source's total size. Only the
/// header is read, in growing chunks (256 KiB, then doubling), never much past its end; every
/// rule of the format is checked as for a mapped file, against `size`. Tensor data stays in the
/// source: `gguf_tensor_data` returns NULL (with a clear error) and `gguf_read_tensor` and
/// `gguf_read_tensors` read it. `read` is called under a lock (never from two threads at once),
/// and only from threads that call the library with this handle (`gguf_read_tensors` reads on
/// the calling thread); `read` and `user` must stay valid until `gguf_close`, which must not run
/// while another thread uses the handle. `read` may return fewer bytes than asked, as `pread`
/// does: it is then asked again for the rest, at the offset that follows, until the request is
/// filled. A callback that returns a negative count, more than asked, or 0 before the end of
/// `size` fails the call with an error naming `<reader>` and the offset. `read` must not call the
/// library on the handle it serves: a read of it from inside the callback, on the callback's
/// thread, fails at once with GGUF_ERROR_CODE_INVALID_ARGUMENT (instead of waiting for itself);
/// one on another thread that the callback waits for would wait forever, and `gguf_close` of it
/// there is undefined behaviour. Other handles may be used. `flags` may be 0,
/// GGUF_OPEN_FLAG_NO_MAP or GGUF_OPEN_FLAG_SINGLE_SHARD (a split model's shard is opened alone
/// either way). Returns NULL on failure, recording why.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_open_reader(
    read: GGUFReadFn,
    user: *mut c_void,
    size: u64,
    flags: u32,
) -> GGUFFile {
    guard(std::ptr::null_mut(), || {
        let read = read.ok_or_else(|| null("read"))?;
        source_flags(flags, "gguf_open_reader")?;
        let source = Arc::new(CallbackSource {
            read,
            user,
            size,
            lock: Mutex::new(()),
            serving: AtomicUsize::new(0),
        });
        let name = "<reader>".to_string();
        let model = Model::open_source(&name, source)?;
        Ok(into_handle(model, name))
    })
}

/// Whether the handle's tensor data is in memory (mapped, read into memory, or lent), so that
/// `gguf_tensor_data` returns pointers; false for handles over positioned reads
/// (`gguf_open_reader`, GGUF_OPEN_FLAG_NO_MAP, a file too large to map), whose data only
/// `gguf_read_tensor(s)` reads. False if `file` is NULL (recording the error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_is_mapped(file: GGUFFile) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(f.model.shards().iter().all(|s| s.source().in_memory()))
    })
}

/// Copies `size` bytes of a tensor's data, starting `offset` bytes into the tensor, to `dst`
/// (which the caller owns). Works for every kind of handle: mapped or in memory (a copy), file
/// descriptor, reader or URL (a positioned read), split. Returns false, recording why, if an
/// argument is NULL, `info` was not returned by this `file`, `offset + size` passes the tensor's
/// end or `size` is more than one buffer in memory can hold (2^48 bytes on 64-bit targets:
/// GGUF_ERROR_CODE_INVALID_ARGUMENT, checked before `dst` is touched), or the read fails (`dst`
/// may then be partly written). Safe to call from several threads at once (a reader's callback
/// is serialised).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_read_tensor(
    file: GGUFFile,
    info: *const GGUFTensorInfo,
    offset: u64,
    dst: *mut c_void,
    size: u64,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let i = own_index(f, info)?;
        if dst.is_null() {
            return Err(null("dst"));
        }
        // The range lies in the tensor and fits in memory before any slice is made of `dst`.
        let len =
            load::check_read(&f.model, i, offset, size).map_err(|e| e.in_file(f.name.clone()))?;
        // SAFETY: the caller provides `size` writable bytes at `dst` (the header's contract),
        // and `size` was just checked to fit in one buffer.
        let dst = unsafe { slice_mut(dst.cast::<u8>(), len, "dst")? };
        load::read_tensor(&f.model, i, offset, dst).map_err(|e| e.in_file(f.name.clone()))?;
        Ok(true)
    })
}

/// Reads `n` tensors, whole, into the caller's buffers: `dsts[k]` receives `infos[k]->size_bytes`
/// bytes of `infos[k]`'s data (a tensor may be listed more than once, each time with its own
/// buffer, and every one is filled; buffers that share a byte are refused:
/// GGUF_ERROR_CODE_INVALID_ARGUMENT). Reads run in parallel on `n_threads` threads (0 = the library
/// decides: one per core, at most 8; never more than 1024, nor more than there are reads) for
/// files; a reader's callback is read on the calling thread alone. Adjacent tensors are read
/// together (gaps up to 64 KiB), large ones in 8 MiB reads. With GGUF_READ_FLAG_DIRECT in `flags`,
/// files are read bypassing the page cache (`O_DIRECT` on Linux and Android, `F_NOCACHE` on macOS
/// and iOS; buffered on Windows and for readers): a buffer whose address has the same remainder
/// modulo 4096 as its tensor's absolute file offset is read into directly in 4096-byte blocks,
/// anything else (unaligned heads, tails and buffers) through the library's aligned buffer and
/// copied. `progress` (may be NULL) is called on the calling thread with the bytes done and the
/// total, first with 0; returning false stops the load, which fails with
/// GGUF_ERROR_CODE_CANCELLED. Entries are checked one at a time, before anything is read and
/// without allocating for entries not yet checked; an `n` too large for arrays of `n` pointers
/// to be in memory is refused at once (GGUF_ERROR_CODE_INVALID_ARGUMENT). Returns false,
/// recording why, on a NULL argument (`infos[k]` and `dsts[k]` included), an info not of this
/// `file`, an unknown flag (GGUF_ERROR_CODE_INVALID_ARGUMENT), or a failed read; buffers may
/// then be partly written.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gguf_read_tensors(
    file: GGUFFile,
    infos: *const *const GGUFTensorInfo,
    dsts: *const *mut c_void,
    n: u64,
    n_threads: u32,
    flags: u32,
    progress: GGUFProgressFn,
    user: *mut c_void,
) -> bool {
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        known_flags(flags, ReadFlag::Direct as u32, "read flags")?;
        // Arrays of `n` pointers must be in memory: a larger `n` is refused before anything
        // is read from them or allocated for them.
        let count = crate::size::buffer_len(n.saturating_mul(size_of::<*const c_void>() as u64))
            .and_then(|_| to_usize(n))
            .ok_or_else(|| {
                Error::msg(
                    ErrorCode::InvalidArgument,
                    format!("{n} tensors: arrays of that many pointers do not fit in memory"),
                )
            })?;
        if count > 0 && infos.is_null() {
            return Err(null("infos"));
        }
        if count > 0 && dsts.is_null() {
            return Err(null("dsts"));
        }
        // Grown entry by entry as each is checked: nothing is allocated for entries not seen.
        let mut checked = Vec::new();
        for k in 0..count {
            // SAFETY: `infos` and `dsts` hold `n` elements (the header's contract).
            let (info, dst) = unsafe { (*infos.add(k), *dsts.add(k)) };
            if info.is_null() {
                return Err(null(&format!("infos[{k}]")));
            }
            let i = own_index(f, info)?;
            if dst.is_null() {
                return Err(null(&format!("dsts[{k}]")));
            }
            let size = f.tensors()[i].size_bytes;
            let len =
                load::check_read(&f.model, i, 0, size).map_err(|e| e.in_file(f.name.clone()))?;
            checked.push((i, dst.cast::<u8>(), len));
        }
        // No two buffers share a byte (the same buffer given twice included): checked before
        // any slice is made of them.
        disjoint(
            checked.iter().map(|&(_, dst, len)| (dst as usize, len)),
            "dsts",
        )?;
        let requests = checked
            .into_iter()
            .map(|(i, dst, len)| {
                // SAFETY: the caller provides `size_bytes` writable bytes at each `dsts[k]`
                // (the header's contract); they were just checked not to overlap.
                Ok((i, unsafe { slice_mut(dst, len, "dsts")? }))
            })
            .collect::<Result<_>>()?;
        let options = LoadOptions {
            threads: n_threads,
            direct: flags & ReadFlag::Direct as u32 != 0,
        };
        let mut report = |done: u64, total: u64| match progress {
            // SAFETY: the caller's callback with its own `user` (the header's contract).
            Some(p) => outside(|| unsafe { p(user, done, total) }),
            None => true,
        };
        load::read_tensors(&f.model, requests, options, &mut report)
            .map_err(|e| e.in_file(f.name.clone()))?;
        Ok(true)
    })
}
