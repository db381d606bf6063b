//! Sources read by position rather than mapped: a file descriptor (at an offset), a caller's read
//! callback, an HTTP server answering range requests. The parser never sees them: a handle over
//! such a source parses the header bytes read from it (the same parser as for mapped files), and
//! tensor data is copied out of it on request (`gguf_read_tensor`, `gguf_read_tensors`).

use crate::error::{Error, ErrorKind, Result};
use crate::platform;
use std::fs::File;

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

    /// The open file behind the source, when it is one (for direct I/O and mapping).
    fn file(&self) -> Option<&FileAt> {
        None
    }
}

/// Fills `dst` from `offset` of `source`, which must hold those bytes: a source that returns
/// fewer than asked is asked again for the rest; one that returns nothing before the end it
/// declared (or more than asked) gives an error naming it and the offset (the error's offset,
/// said once).
pub fn read_exact_at(source: &dyn ReadAt, offset: u64, dst: &mut [u8]) -> Result<()> {
    let mut done = 0usize;
    while done < dst.len() {
        let at = offset + done as u64;
        let n = source.read_at(at, &mut dst[done..])?;
        if n > dst.len() - done {
            return Err(lying(
                source,
                at,
                format!("returned {n} bytes when asked for {}", dst.len() - done),
            ));
        }
        if n == 0 {
            return Err(lying(
                source,
                at,
                format!(
                    "ended early: it declared {} bytes, and {} more were needed",
                    source.len(),
                    dst.len() - done
                ),
            ));
        }
        done += n;
    }
    Ok(())
}

/// The error for a source that broke its contract at `offset`.
#[cold]
pub(crate) fn lying(source: &dyn ReadAt, offset: u64, what: String) -> Error {
    Error::at(
        offset,
        ErrorKind::FileUnusable {
            message: format!("the source {} {what}", source.describe()),
        },
    )
}

/// `len` bytes from `offset` of an open file: a whole file, or one stored inside another (a
/// tar member, an Android asset, a llamafile). Positioned reads (`pread`, `ReadFile` with an
/// offset) from any number of threads at once.
pub struct FileAt {
    file: File,
    offset: u64,
    len: u64,
    /// What the source is (`describe`): the file it holds.
    name: String,
    /// The open file itself, for a failed read: `name` unless set by [`FileAt::file_named`].
    file_name: String,
}

impl FileAt {
    /// `len` bytes from `offset` of `file`, described as `name` in messages.
    pub fn new(file: File, offset: u64, len: u64, name: String) -> FileAt {
        FileAt {
            file,
            offset,
            len,
            file_name: name.clone(),
            name,
        }
    }

    /// The same source, whose open file is called `file_name` where a read of it fails (`name`
    /// says what the source holds, such as `file descriptor 7 at offset 4096`; `file_name` the
    /// descriptor, `file descriptor 7`, whose offsets a failed read names).
    pub fn file_named(mut self, file_name: String) -> FileAt {
        self.file_name = file_name;
        self
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Where the source starts in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads `dst.len()` bytes at `offset` of the source from `file` (the same file opened
    /// another way, such as for direct I/O).
    pub(crate) fn read_with(&self, file: &File, offset: u64, dst: &mut [u8]) -> Result<usize> {
        let want = (self.len.saturating_sub(offset)).min(dst.len() as u64);
        // At most `dst.len()`, so within usize.
        let want = usize::try_from(want).unwrap_or(dst.len());
        let mut done = 0;
        while done < want {
            let at = self.offset + offset + done as u64;
            let n = platform::read_at(file, &mut dst[done..want], at)
                .map_err(|e| Error::io(self.cannot_read(at), e))?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }
}

impl FileAt {
    /// What failed, for a read at offset `at` of the open file: the file and the offset its
    /// system call was given (the error's file names the source, and so where it starts). For
    /// every read of the open file, direct ones included.
    #[cold]
    pub(crate) fn cannot_read(&self, at: u64) -> String {
        format!("cannot read {} at offset {at}", self.file_name)
    }
}

impl ReadAt for FileAt {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<usize> {
        self.read_with(&self.file, offset, dst)
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn parallel(&self) -> bool {
        true
    }

    fn file(&self) -> Option<&FileAt> {
        Some(self)
    }
}
