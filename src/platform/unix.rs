//! Unix (Linux, macOS, iOS, Android): `libc` and memmap2's advice and lock.

use super::common::{io_error, Paging};
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use memmap2::{Advice, Mmap, UncheckedAdvice};
use std::fs::File;
use std::path::Path;

/// Opens `path` for reading without blocking: a FIFO without a writer (or a device that waits
/// for a carrier) would otherwise block `open` forever. The flag means nothing to a map of a
/// regular file; it is cleared before the file is read (`clear_nonblocking`).
pub fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

pub fn clear_nonblocking(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl F_GETFL/F_SETFL on a descriptor this function's caller owns reads and sets
    // its status flags; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What a special file is, for a message (None for the kinds every platform has).
pub fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let ty = meta.file_type();
    if ty.is_fifo() {
        return Some("a FIFO (named pipe)");
    }
    if ty.is_char_device() {
        return Some("a character device");
    }
    if ty.is_block_device() {
        return Some("a block device");
    }
    if ty.is_socket() {
        return Some("a socket");
    }
    None
}

/// Whether a failed map or allocation ran out of memory or address space.
pub fn is_out_of_memory(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOMEM)
}

/// A process limit, in bytes (`getrlimit`): None when unlimited or unknown.
fn rlimit(resource: libc::c_int) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let known = unsafe { libc::getrlimit(resource as _, &mut limit) } == 0;
    // rlim_t is an unsigned integer of 32 (i686, armv7) or 64 bits: widening is exact (the cast
    // is to u64 itself on 64-bit targets).
    #[allow(clippy::unnecessary_cast)]
    (known && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as u64)
}

/// Why a map may fail with ENOMEM besides a lack of memory, with the limits' values, for its
/// message: the process's number of mappings (`vm.max_map_count`: each open file is one; a
/// model of many shards, opened many times, reaches the default 65530) and its address space
/// limit (`ulimit -v`). "Cannot allocate memory" alone suggests neither.
pub fn map_limits() -> String {
    let max_maps = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let maps = std::fs::read("/proc/self/maps")
        .ok()
        .map(|m| m.iter().filter(|&&b| b == b'\n').count());
    let maps = match (maps, max_maps) {
        (Some(n), Some(max)) => format!("{n} in use; vm.max_map_count is {max}"),
        (None, Some(max)) => format!("vm.max_map_count is {max}"),
        _ => "see vm.max_map_count".to_string(),
    };
    let space = match rlimit(libc::RLIMIT_AS as libc::c_int) {
        Some(bytes) => format!("ulimit -v is {bytes} bytes"),
        None => "ulimit -v is unlimited".to_string(),
    };
    format!(
        "the process may have reached its limit on memory mappings ({maps}: raise it with \
         sysctl, or close other handles) or on address space ({space})"
    )
}

/// Locks the mapped bytes in memory (`mlock`); `size` is the file's, for the message.
pub fn lock(map: &Mmap, size: u64) -> Result<()> {
    map.lock().map_err(|e| lock_error(size, e))
}

fn lock_error(size: u64, e: std::io::Error) -> Error {
    let context = format!("cannot lock the file's {size} bytes in memory");
    match rlimit(libc::RLIMIT_MEMLOCK as libc::c_int) {
        Some(limit) if limit < size => Error::msg(
            ErrorCode::Io,
            format!("{context}: the limit on locked memory (ulimit -l) is {limit} bytes"),
        ),
        _ => Error::io(context, e),
    }
}

/// Pre-faulting is asked of the map itself (`MAP_POPULATE`, Linux), so nothing is left to do.
pub fn populate(_map: &Mmap) -> Result<()> {
    Ok(())
}

/// Renaming over a file open or mapped elsewhere succeeds here: nothing to add to the OS's
/// reason for a failure.
pub fn replace_advice(_e: &std::io::Error) -> Option<&'static str> {
    None
}

/// This process's id (for temporary file names).
pub fn process_id() -> u32 {
    std::process::id()
}

/// The system's page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .unwrap_or(4096)
}

/// Advises the kernel about `len` mapped bytes from `start` (`madvise`).
pub fn advise(map: &Mmap, advice: Paging, start: usize, len: usize) -> Result<()> {
    let result = match advice {
        Paging::Normal => map.advise_range(Advice::Normal, start, len),
        Paging::WillNeed => map.advise_range(Advice::WillNeed, start, len),
        Paging::Sequential => map.advise_range(Advice::Sequential, start, len),
        Paging::Random => map.advise_range(Advice::Random, start, len),
        // SAFETY: MADV_DONTNEED on a private file mapping discards modified pages; this
        // mapping is read-only and never written, so dropped pages are re-read unchanged
        // from the file. (Copies, whose pages would come back zeroed, are refused by the
        // caller.)
        Paging::DontNeed => unsafe {
            map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, len)
        },
    };
    result.map_err(|e| match (advice, e.raw_os_error()) {
        // Linux never drops locked pages: MADV_DONTNEED over them is EINVAL, which alone would
        // not tell the caller that the handle (or the whole process) locked them.
        (Paging::DontNeed, Some(libc::EINVAL))
            if cfg!(any(target_os = "linux", target_os = "android")) =>
        {
            Error::new(ErrorKind::Io {
                context: "paging advice DONT_NEED (madvise MADV_DONTNEED) failed".to_string(),
                source: std::sync::Arc::new(e),
                advice: ": the pages are locked in memory (the file was opened with \
                         GGUF_OPEN_FLAG_LOCK, or the process called mlockall), and locked pages \
                         cannot be dropped"
                    .to_string(),
            })
        }
        _ => io_error("madvise failed", e),
    })
}

/// Reads up to `buf.len()` bytes at `offset` (`pread`), retrying when interrupted.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    loop {
        match file.read_at(buf, offset) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// A new descriptor for the open file `fd` (close-on-exec): the caller may close `fd`.
pub fn dup_fd(fd: i32) -> std::io::Result<File> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd` (an invalid one fails with EBADF) and returns a
    // new descriptor that nothing else owns.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor owned by no one else.
    Ok(unsafe { File::from_raw_fd(new) })
}

/// A descriptor of its own for positioned, buffered reads of the open file `fd`, leaving the
/// caller's descriptor as it was (the caller may close it): a duplicate (close-on-exec). A
/// descriptor not open for reading (`O_WRONLY`, Linux's `O_PATH`) is refused. One opened with
/// `O_DIRECT` (whose reads need aligned buffers, offsets and sizes, and fail with EINVAL
/// otherwise) is replaced by the same file opened again read-only through `/proc/self/fd`: a new
/// open file description, as clearing the flag on a duplicate would clear it on the caller's
/// descriptor too; where that reopening fails, the descriptor is refused, saying so. `name` names
/// the descriptor in messages.
pub fn dup_for_reading(fd: i32, name: &str) -> Result<File> {
    use std::os::fd::AsRawFd;
    let file = dup_fd(fd).map_err(|e| Error::io(format!("cannot use {name}"), e))?;
    // SAFETY: F_GETFL reads the status flags of a descriptor this function owns.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::io(format!("cannot read the flags of {name}"), e));
    }
    let refuse = |why: &str| {
        Err(Error::msg(
            ErrorCode::Io,
            format!("{name} {why}: a model is read from a descriptor open for reading"),
        ))
    };
    if flags & libc::O_ACCMODE == libc::O_WRONLY {
        return refuse("is open for writing only (O_WRONLY)");
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        if flags & libc::O_PATH != 0 {
            return refuse("is an O_PATH descriptor, which cannot be read");
        }
        if flags & libc::O_DIRECT != 0 {
            let path = format!("/proc/self/fd/{}", file.as_raw_fd());
            // O_NONBLOCK: whatever the descriptor is, the open must not wait (on a regular
            // file the flag changes nothing).
            return std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| {
                    Error::io(
                        format!(
                            "{name} was opened with O_DIRECT, whose reads need aligned buffers, \
                             and it could not be opened again without it (through {path}); open \
                             the file without O_DIRECT"
                        ),
                        e,
                    )
                });
        }
    }
    Ok(file)
}

/// The same file opened again for reads that bypass the page cache, or `None` where the
/// platform cannot: Linux and Android reopen it with `O_DIRECT` (through `/proc/self/fd`, so
/// that the new open file description does not change the caller's), macOS and iOS set
/// `F_NOCACHE` on a duplicate. `O_DIRECT` reads need buffers, offsets and sizes aligned to
/// [`direct_alignment`]; `F_NOCACHE` reads need nothing.
pub fn open_direct(file: &File) -> Option<File> {
    use std::os::fd::AsRawFd;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()
    }
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    {
        let copy = dup_fd(file.as_raw_fd()).ok()?;
        // SAFETY: F_NOCACHE sets a flag of a descriptor this function owns.
        let ok = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_NOCACHE, 1) } == 0;
        ok.then_some(copy)
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios"
    )))]
    {
        let _ = file.as_raw_fd();
        None
    }
}

/// What a direct read's buffer address, file offset and size must be multiples of: 4096 covers
/// the logical block size of every common device (512 or 4096 bytes) under `O_DIRECT`; 1 where
/// direct reads take anything (`F_NOCACHE`).
pub fn direct_alignment() -> usize {
    if cfg!(any(target_os = "macos", target_os = "ios")) {
        1
    } else {
        4096
    }
}

/// Asks the kernel to start reading `len` bytes at `offset` of `file` into the page cache now
/// (`POSIX_FADV_WILLNEED`): a buffered read of a large range then waits for reads already in
/// flight rather than for readahead window after window. Advice only: failures are ignored,
/// and platforms without it do nothing.
pub fn will_need(file: &File, offset: u64, len: u64) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: posix_fadvise only reads its integer arguments; an invalid descriptor or range
        // fails with an error code, which is ignored (it is advice).
        let _ =
            unsafe { libc::posix_fadvise(file.as_raw_fd(), off, len, libc::POSIX_FADV_WILLNEED) };
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (file, offset, len);
}

/// Reserves storage for the first `len` bytes of `file` without changing its size
/// (`fallocate` with `FALLOC_FL_KEEP_SIZE`, Linux and Android): the file's blocks are allocated
/// at once, in one extent where the file system can, rather than page by page as it is written,
/// and a file system that delays allocation (ext4) then has no allocation to force when the
/// file is renamed over another. Advice only: failures (a file system without it, too little
/// space, which the writes then report) are ignored, and platforms without it do nothing.
pub fn preallocate(file: &File, len: u64) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let Ok(len) = libc::off_t::try_from(len) else {
            return;
        };
        if len == 0 {
            return;
        }
        // SAFETY: fallocate only reads its integer arguments; an invalid descriptor or range
        // fails with an error code, which is ignored (it is advice).
        let _ = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (file, len);
}

/// Starts writing `len` bytes of `file` at `offset` back to storage without waiting for them
/// (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`, Linux only: the libc crate does not bind it
/// for Android), so that a later flush of the whole file has less to wait for. It makes nothing
/// durable (the flush does that). Advice only: failures are ignored (the flush reports any),
/// and platforms without it do nothing.
pub fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(len)) = (
            libc::off64_t::try_from(offset),
            libc::off64_t::try_from(len),
        ) else {
            return;
        };
        // SAFETY: sync_file_range only reads its integer arguments; an invalid descriptor or
        // range fails with an error code, which is ignored (it is advice).
        let _ = unsafe {
            libc::sync_file_range(file.as_raw_fd(), off, len, libc::SYNC_FILE_RANGE_WRITE)
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// The name of the temporary file an output is written to before it replaces `name`:
/// `.<name>.gguf-tmp-<pid>-<random>`, `name` cut so the whole fits in 255 bytes.
pub fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let suffix = format!(".gguf-tmp-{}-{random:016x}", process_id());
    let keep = 255usize.saturating_sub(1 + suffix.len());
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(255);
    out.push(b'.');
    out.extend_from_slice(&bytes[..bytes.len().min(keep)]);
    out.extend_from_slice(suffix.as_bytes());
    std::ffi::OsString::from_vec(out)
}

/// Creates the file at `path` for writing, failing if it exists (mode 0666 less the umask).
pub fn create_exclusive(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
}

/// Gives `file` the owner (where the process may) and permissions of the file `old` describes.
pub fn copy_permissions(file: &File, old: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // The owner first (only a privileged process may give a file away; otherwise the
    // writer owns the new file, as with any editor that saves by renaming): chown clears
    // set-id bits, which the mode below restores.
    let new = file.metadata()?;
    if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
        let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
    }
    let mode = old.permissions().mode() & 0o7777;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// The file at `path` opened again, if it is the very file `mapped` (same device and inode).
pub fn reopen_mapped(path: &Path, mapped: &File) -> Option<File> {
    use std::os::unix::fs::MetadataExt;
    let file = File::open(path).ok()?;
    let (now, then) = (file.metadata().ok()?, mapped.metadata().ok()?);
    (now.dev() == then.dev() && now.ino() == then.ino()).then_some(file)
}

/// Syncs the directory holding `dest`, so that a rename into it is durable.
pub fn sync_dir(dest: &Path) -> std::io::Result<()> {
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match File::open(dir)?.sync_all() {
        // Some file systems cannot sync a directory; the rename is then as durable as
        // they make it.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}
