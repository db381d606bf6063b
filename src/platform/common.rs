//! What the per-OS files and the rest of the crate share: the paging advice a caller may give,
//! and an I/O failure made an error (with what to add where the platform has no files). The
//! per-OS files use these; nothing here uses them.

use crate::error::{Error, ErrorCode};

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

/// What to add to an "unsupported" failure of a file operation: nothing where files exist (the
/// OS's reason says it all).
#[cfg(any(unix, windows))]
fn unsupported_advice() -> &'static str {
    ""
}

/// std's own "operation not supported on this platform" (from `std::fs`) does not say what
/// works instead.
#[cfg(not(any(unix, windows)))]
fn unsupported_advice() -> &'static str {
    " (this platform has no file system: open a file held in memory with gguf_open_memory, \
     write one with gguf_writer_write_memory)"
}
