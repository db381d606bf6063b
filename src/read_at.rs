//! Sources read by position rather than mapped: a file descriptor (at an offset), a caller's read
//! callback, an HTTP server answering range requests. The parser never sees them: a handle over
//! such a source parses the header bytes read from it (the same parser as for mapped files), and
//! tensor data is copied out of it on request (`gguf_read_tensor`, `gguf_read_tensors`).

use crate::error::Result;

/// Bytes read by position from a source of known length.
///
/// Implementations are shared between threads: a source that cannot be read from two threads at
/// once serialises its reads itself (a caller's callback, for example, is called under a lock).
pub trait ReadAt: Send + Sync {
    /// The source's length in bytes.
    fn len(&self) -> u64;

    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads up to `dst.len()` bytes at `offset` into `dst`; returns how many were read, fewer
    /// only at the source's end. An error says what failed (the source's own words: an `io`
    /// error, an HTTP status, a callback that returned -1).
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<usize>;

    /// What the source is, for messages: a path, a URL, `file descriptor 7 at offset 4096`.
    fn describe(&self) -> String;

    /// Whether reads may run on several threads at once to gain speed (a file descriptor: yes;
    /// a callback that must be called from the caller's thread: no).
    fn parallel(&self) -> bool {
        false
    }
}
