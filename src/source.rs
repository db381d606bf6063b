//! Where a file's bytes come from: a read-only memory map of a path, or memory the caller lends.
//! This is one of the two places with `unsafe` (the other is the C API).

use crate::error::{Error, ErrorCode, Result};
use memmap2::Mmap;
use std::fs::File;
use std::path::Path;

/// Maps the file at `path` read-only.
pub fn map_file(path: &Path) -> Result<Mmap> {
    let file = File::open(path)
        .map_err(|e| Error::new(ErrorCode::Io, format!("cannot open the file: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::new(ErrorCode::Io, format!("cannot read the file size: {e}")))?;
    if !meta.is_file() {
        return Err(Error::new(ErrorCode::Io, "not a regular file"));
    }
    let size = meta.len();
    if size == 0 {
        return Err(Error::at(
            ErrorCode::Truncated,
            0,
            "expected 4 bytes for the magic, found an empty file",
        ));
    }
    // SAFETY: the map is read-only and private to this process, and every byte of it is read
    // through bounds-checked slices. What a map cannot guard against is another process
    // truncating the file while it is mapped (reads past the new end raise SIGBUS); that is the
    // documented contract of every mmap-based model loader, ggml's included.
    unsafe { Mmap::map(&file) }
        .map_err(|e| Error::new(ErrorCode::Io, format!("cannot map the file: {e}")))
}

/// The bytes behind an open handle.
pub enum Source {
    /// A file mapped by this library.
    Mapped(Mmap),
    /// Memory lent by the caller, who keeps it alive and unchanged while the handle lives.
    Lent(&'static [u8]),
}

impl AsRef<[u8]> for Source {
    fn as_ref(&self) -> &[u8] {
        match self {
            Source::Mapped(map) => map,
            Source::Lent(bytes) => bytes,
        }
    }
}
