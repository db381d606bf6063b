//! What differs per operating system, one module per family: how a file is opened without
//! blocking, what kind of special file it is, the page size, the process's memory limits (for
//! messages), paging advice, pre-faulting and locking of mapped bytes, a path's bytes, and for
//! the file an output goes through its temporary name, exclusive creation, permissions, storage
//! reserved and early writeback, and the sync of its directory. The rest of the crate is the
//! same everywhere; the sources, the model and the writer call these. What the per-OS files
//! share is in `common`, which uses none of them.
//!
//! - `unix`: Linux, macOS, iOS, Android (`libc`: `fcntl`, `sysconf`, `getrlimit`, `madvise`,
//!   `mlock`; on Linux and Android `fallocate` and `sync_file_range`).
//! - `windows`: Win32 (`GetSystemInfo`, `PrefetchVirtualMemory`, `VirtualLock`); advice other
//!   than WILLNEED is reported unsupported.
//! - `other` (wasm32): no files; memory lent by the caller and the writer to memory work; the
//!   clock the host sets (`set_clock`).

mod common;
#[cfg(not(unix))]
mod std_files;
pub(crate) use common::io_error;
pub use common::Paging;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// Seconds since 1970 (UTC) by the system clock (before 1970: 0), or `None` where the platform
/// has no clock (wasm32 without WASI, where std's clock panics).
#[cfg(any(unix, windows))]
pub fn unix_time() -> Option<i64> {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Some(i64::try_from(since).unwrap_or(i64::MAX))
}

#[cfg(not(any(unix, windows)))]
mod other;
#[cfg(not(any(unix, windows)))]
pub use other::*;

use crate::error::Result;
use std::cell::Cell;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A path from the bytes a C caller gave, exactly: any bytes on Unix.
#[cfg(unix)]
pub fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// A path from the bytes a C caller gave: paths here are Unicode, so bytes that are not UTF-8
/// are refused rather than altered.
#[cfg(not(unix))]
pub fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf> {
    use crate::error::{Error, ErrorCode};
    std::str::from_utf8(bytes).map(PathBuf::from).map_err(|_| {
        Error::msg(
            ErrorCode::InvalidArgument,
            "the path is not valid UTF-8 (paths on this platform are Unicode)",
        )
    })
}

/// `path` without `suffix` (ASCII), working on the path's bytes: a directory or file name that
/// is not UTF-8 is kept exactly.
#[cfg(unix)]
pub fn strip_path_suffix<'a>(path: &'a Path, suffix: &str) -> Option<&'a OsStr> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    bytes.strip_suffix(suffix.as_bytes()).map(OsStr::from_bytes)
}

/// `path` without `suffix`, working on the path as text: one that is not Unicode is `None`.
#[cfg(not(unix))]
pub fn strip_path_suffix<'a>(path: &'a Path, suffix: &str) -> Option<&'a OsStr> {
    path.to_str()?.strip_suffix(suffix).map(OsStr::new)
}

thread_local! {
    /// How many boundary calls (or library threads started by one) this thread is inside.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is inside a call of the C API (or is a thread one started): the C
/// layer's panic hook prints nothing for a panic there.
pub(crate) fn inside() -> bool {
    INSIDE.try_with(|n| n.get() > 0).unwrap_or(false)
}

/// Runs `body` counted as inside the C API when `quiet` is true (a thread the library starts
/// for a boundary call passes the caller's [`inside`]): a panic there prints nothing.
pub(crate) fn quietly<R>(quiet: bool, body: impl FnOnce() -> R) -> R {
    /// Counts the thread out again when dropped, also when `body` unwinds.
    struct Leave<'a>(&'a Cell<u32>);
    impl Drop for Leave<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }
    if !quiet {
        return body();
    }
    // One access to the thread-local for the whole call: in a shared library each access is a
    // call into the dynamic loader, and getters are called millions of times. (`with` cannot
    // fail here: a constant `Cell` has no destructor, so it is never torn down.)
    INSIDE.with(|n| {
        n.set(n.get() + 1);
        let _leave = Leave(n);
        body()
    })
}

/// Runs `body` (a caller's callback, called from inside the C API) counted as outside it: a
/// panic of the caller's own there goes to the caller's hook.
pub(crate) fn outside<R>(body: impl FnOnce() -> R) -> R {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = INSIDE.try_with(|n| n.set(self.0));
        }
    }
    let _restore = Restore(INSIDE.try_with(|n| n.replace(0)).unwrap_or(0));
    body()
}

/// Runs `work` on `n` new threads while `main` runs on the calling thread; returns `main`'s
/// result once every thread has finished. Like `std::thread::scope`, but without registering
/// the calling thread with Rust's runtime (a C caller's thread would keep that registration
/// until it exits, which leak checkers report). If no thread can be started, `work` runs on the
/// calling thread first. The threads started inside a C API call count as inside it (a panic
/// there prints nothing). The library's work on threads goes through the `parallel` module,
/// which sizes `n` and shares the work out; this only starts and joins the threads.
pub fn with_workers<R>(n: usize, work: &(dyn Fn() + Sync), main: impl FnOnce() -> R) -> R {
    /// Joins the threads when dropped, so that none outlives the borrows it was given, even if
    /// `main` panics.
    struct Joined(Vec<std::thread::JoinHandle<()>>);
    impl Drop for Joined {
        fn drop(&mut self) {
            for handle in self.0.drain(..) {
                let _ = handle.join();
            }
        }
    }
    let mut joined = Joined(Vec::with_capacity(n));
    // Threads started inside a C API call are inside it too: a panic there prints nothing.
    let quiet = inside();
    let work = move || quietly(quiet, work);
    for _ in 0..n {
        // SAFETY: the thread borrows `work`, which outlives this function's body, and `joined`
        // joins every thread before the function returns or unwinds (its `Drop`).
        let spawned = unsafe { std::thread::Builder::new().spawn_unchecked(work) };
        match spawned {
            Ok(handle) => joined.0.push(handle),
            Err(_) => break,
        }
    }
    if joined.0.is_empty() {
        work();
    }
    let r = main();
    drop(joined);
    r
}
