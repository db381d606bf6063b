//! Windows: Win32 through `windows-sys`. Paths reach the wide (UTF-16) API through std, which
//! converts the UTF-8 paths the C API takes.

use super::common::Paging;
use super::std_files;
use crate::error::{Error, ErrorCode, Result};
use memmap2::Mmap;
use std::fs::File;
use std::path::Path;
use windows_sys::Win32::System::Memory::{
    PrefetchVirtualMemory, VirtualLock, WIN32_MEMORY_RANGE_ENTRY,
};
use windows_sys::Win32::System::SystemInformation::{GetSystemInfo, SYSTEM_INFO};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

/// Opening a file on Windows does not wait for a writer, so a plain open is non-blocking.
pub fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

pub fn clear_nonblocking(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// Windows has no FIFOs, devices or sockets in the file system that `metadata` reports.
pub fn special_kind(_meta: &std::fs::Metadata) -> Option<&'static str> {
    None
}

/// ERROR_NOT_ENOUGH_MEMORY, ERROR_OUTOFMEMORY, ERROR_COMMITMENT_LIMIT.
pub fn is_out_of_memory(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(8 | 14 | 1455))
}

/// Why a map may fail besides a lack of memory, for its message.
pub fn map_limits() -> String {
    "the process's address space or the system's commit limit (physical memory plus the page \
     file) may be exhausted: close other handles"
        .to_string()
}

/// Why renaming a new file over an existing one failed, when Windows' reason needs saying:
/// ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION or ERROR_USER_MAPPED_FILE, given when another
/// handle holds the file open or mapped (a Unix rename would succeed) or when it is read-only.
pub fn replace_advice(e: &std::io::Error) -> Option<&'static str> {
    matches!(e.raw_os_error(), Some(5 | 32 | 1224)).then_some(
        "the file is open or mapped by another handle (Windows cannot replace a mapped file: \
         close every handle on it, gguf_close or drop, and write again), or it is read-only",
    )
}

fn system_info() -> SYSTEM_INFO {
    let mut info = SYSTEM_INFO::default();
    // SAFETY: GetSystemInfo fills the struct it is given and cannot fail.
    unsafe { GetSystemInfo(&mut info) };
    info
}

/// This process's id (for temporary file names).
pub fn process_id() -> u32 {
    std::process::id()
}

/// The system's page size (4 KiB on x86-64). A view's offset into a file mapping must be a
/// multiple of the allocation granularity (64 KiB), but views inside this library's one
/// mapping of the whole file need only page alignment.
pub fn page_size() -> u64 {
    let size = u64::from(system_info().dwPageSize);
    if size.is_power_of_two() {
        size
    } else {
        4096
    }
}

/// Faults `len` bytes from `start` in ahead of use (`PrefetchVirtualMemory`).
fn prefetch(map: &Mmap, start: usize, len: usize) -> std::io::Result<()> {
    let entry = WIN32_MEMORY_RANGE_ENTRY {
        // The caller keeps `start + len` within the map.
        VirtualAddress: map[start..].as_ptr() as *mut _,
        NumberOfBytes: len,
    };
    // SAFETY: the entry describes bytes of a live mapping; the call only reads it and asks the
    // system to page them in.
    let ok = unsafe { PrefetchVirtualMemory(GetCurrentProcess(), 1, &entry, 0) };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Locks the mapped bytes in memory (`VirtualLock`, limited by the process's working set).
pub fn lock(map: &Mmap, size: u64) -> Result<()> {
    if map.is_empty() {
        return Ok(());
    }
    // SAFETY: the range is the whole of a live mapping.
    let ok = unsafe { VirtualLock(map.as_ptr().cast(), map.len()) };
    if ok == 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::msg(
            ErrorCode::Io,
            format!(
                "cannot lock the file's {size} bytes in memory: {e} (VirtualLock is limited by \
                 the process's minimum working set size)"
            ),
        ));
    }
    Ok(())
}

/// Faults every page of the map in (the MAP_POPULATE of the Unix build).
pub fn populate(map: &Mmap) -> Result<()> {
    if map.is_empty() {
        return Ok(());
    }
    prefetch(map, 0, map.len()).map_err(|e| {
        Error::msg(
            ErrorCode::Io,
            format!("cannot populate the mapping: PrefetchVirtualMemory failed: {e}"),
        )
    })
}

/// WILLNEED is `PrefetchVirtualMemory`; Windows has no counterpart of the other advice for a
/// file mapping, which is reported unsupported.
pub fn advise(map: &Mmap, advice: Paging, start: usize, len: usize) -> Result<()> {
    match advice {
        Paging::WillNeed => prefetch(map, start, len)
            .map_err(|e| Error::msg(ErrorCode::Io, format!("PrefetchVirtualMemory failed: {e}"))),
        other => Err(Error::msg(
            ErrorCode::Unsupported,
            format!(
                "paging advice {other:?} has no Windows counterpart (only WILLNEED, which \
                 prefetches, is supported there)"
            ),
        )),
    }
}

/// Reads up to `buf.len()` bytes at `offset` (`ReadFile` with an offset: positioned, though it
/// also moves the file pointer, which nothing here uses).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::windows::fs::FileExt;
    match file.seek_read(buf, offset) {
        // Reading at or past the end fails with ERROR_HANDLE_EOF rather than returning 0.
        Err(e) if e.raw_os_error() == Some(38) => Ok(0),
        r => r,
    }
}

/// A handle of its own for positioned reads of the C runtime's file descriptor `fd` (see the
/// Unix version; Windows has no flag that changes how a handle is read).
pub fn dup_for_reading(fd: i32, name: &str) -> Result<File> {
    dup_fd(fd).map_err(|e| Error::io(format!("cannot use {name}"), e))
}

/// A new handle for the C runtime's file descriptor `fd` (`_get_osfhandle`, then
/// `DuplicateHandle`): the caller may close `fd`.
pub fn dup_fd(fd: i32) -> std::io::Result<File> {
    use std::os::windows::io::{BorrowedHandle, RawHandle};
    extern "C" {
        fn _get_osfhandle(fd: i32) -> isize;
    }
    // SAFETY: `_get_osfhandle` only looks `fd` up in the C runtime's table; an invalid one
    // returns -1 (INVALID_HANDLE_VALUE).
    let handle = unsafe { _get_osfhandle(fd) };
    if handle == -1 || handle == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{fd} is not an open C runtime file descriptor"),
        ));
    }
    // SAFETY: the handle is open (the C runtime holds it) for the duration of this call, and is
    // only borrowed to duplicate it.
    let borrowed = unsafe { BorrowedHandle::borrow_raw(handle as RawHandle) };
    Ok(File::from(borrowed.try_clone_to_owned()?))
}

/// Windows has no per-read cache bypass for an already open file (FILE_FLAG_NO_BUFFERING is
/// chosen at open): direct reads fall back to buffered ones.
pub fn open_direct(_file: &File) -> Option<File> {
    None
}

/// See the Unix version; unused here, as `open_direct` gives `None`.
pub fn direct_alignment() -> usize {
    4096
}

/// No read-ahead advice for a file on Windows.
pub fn will_need(_file: &File, _offset: u64, _len: u64) {}

/// No storage reservation here: the file grows as it is written.
pub fn preallocate(_file: &File, _len: u64) {}

/// No early writeback here: the flush on commit writes everything.
pub fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

/// The temporary file's name: `.<name>.gguf-tmp-<pid>-<random>` (`std_files`).
pub fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    std_files::temp_name(name, process_id())
}

pub use super::std_files::{copy_permissions, create_exclusive, reopen_mapped, sync_dir};
