//! What differs per operating system, one module per family: how a file is opened without
//! blocking, what kind of special file it is, the page size, the process's memory limits (for
//! messages), paging advice, pre-faulting and locking of mapped bytes. The rest of the crate is
//! the same everywhere; `crate::source` calls these.
//!
//! - `unix`: Linux, macOS, iOS, Android (`libc`: `fcntl`, `sysconf`, `getrlimit`, `madvise`,
//!   `mlock`).
//! - `windows`: Win32 (`GetSystemInfo`, `PrefetchVirtualMemory`, `VirtualLock`); advice other
//!   than WILLNEED is reported unsupported.
//! - `other` (wasm32): no files; memory lent by the caller and the writer to memory work.

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

#[cfg(not(any(unix, windows)))]
mod other;
#[cfg(not(any(unix, windows)))]
pub use other::*;
