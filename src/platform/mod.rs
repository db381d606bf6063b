//! What differs per operating system, one module per family: how a file is opened without
//! blocking, what kind of special file it is, the page size, the process's memory limits (for
//! messages), paging advice, pre-faulting and locking of mapped bytes, storage reserved for a
//! file being written and its early writeback. The rest of the crate is the same everywhere;
//! the sources and the writer call these.
//!
//! - `unix`: Linux, macOS, iOS, Android (`libc`: `fcntl`, `sysconf`, `getrlimit`, `madvise`,
//!   `mlock`; on Linux and Android `fallocate` and `sync_file_range`).
//! - `windows`: Win32 (`GetSystemInfo`, `PrefetchVirtualMemory`, `VirtualLock`); advice other
//!   than WILLNEED is reported unsupported.
//! - `other` (wasm32): no files; memory lent by the caller and the writer to memory work; no
//!   clock.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// What to add to an "unsupported" failure of a file operation: nothing where files exist (the
/// OS's reason says it all).
#[cfg(any(unix, windows))]
pub fn unsupported_advice() -> &'static str {
    ""
}

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

use crate::error::{Error, ErrorCode, Result};
use std::cell::Cell;
use std::path::PathBuf;

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
    std::str::from_utf8(bytes).map(PathBuf::from).map_err(|_| {
        Error::msg(
            ErrorCode::InvalidArgument,
            "the path is not valid UTF-8 (paths on this platform are Unicode)",
        )
    })
}

/// Paging advice for a range of mapped bytes (`madvise`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// No special treatment.
    Normal = 0,
    /// The range will be needed soon: read it ahead.
    WillNeed = 1,
    /// The range is not needed now: its pages may be dropped (they are re-read from the file if
    /// touched again; nothing is lost, the mapping is read-only).
    DontNeed = 2,
    /// The range will be read sequentially: read ahead aggressively, drop behind.
    Sequential = 3,
    /// The range will be read randomly: do not read ahead.
    Random = 4,
}

impl Paging {
    /// The advice with this id, if there is one.
    pub fn from_id(id: u32) -> Option<Paging> {
        [
            Paging::Normal,
            Paging::WillNeed,
            Paging::DontNeed,
            Paging::Sequential,
            Paging::Random,
        ]
        .get(id as usize)
        .copied()
    }
}

/// An I/O failure as an error: `what` failed because of `e`.
pub(crate) fn io_error(what: &str, e: std::io::Error) -> Error {
    // A platform without files (wasm32) says so: that is not an I/O failure.
    if e.kind() == std::io::ErrorKind::Unsupported {
        let advice = unsupported_advice();
        return Error::msg(ErrorCode::Unsupported, format!("{what}: {e}{advice}"));
    }
    Error::io(what, e)
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
