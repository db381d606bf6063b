//! The file every writer output goes through, so that it appears whole or not at all.
//!
//! The bytes go to a temporary file created exclusively in the destination's directory, named
//! `.<name>.gguf-tmp-<pid>-<random>` so that a stray one (left by `kill -9`) is recognisable.
//! It gets the permissions an existing destination had (else 0666 less the umask), and its
//! owner where the process may set it. Its storage is reserved at once where the writer knows
//! its size. On commit it is flushed to stable storage (fdatasync, its writeback started while
//! it is written), renamed over the destination and the directory is synced; syncing can be
//! turned off for scratch outputs. On any failure, or when dropped
//! uncommitted, the temporary file is removed and the destination is exactly what it was. A
//! destination that is a symbolic link is resolved, so the link stays and its target is
//! replaced. Handles that mapped the old file keep reading it: rename never touches its inode.
//!
//! Small writes are gathered in a buffer; large ones go straight from the caller's memory, and
//! ranges of another file can be copied inside the kernel (`copy_file_range`, which reflinks
//! where the file system can), falling back to plain reads and writes.

use crate::error::{Error, ErrorCode, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Writes smaller than this are gathered in the buffer; larger ones bypass it.
const DIRECT: usize = 64 * 1024;
/// The buffer's capacity.
const BUFFER: usize = 256 * 1024;
/// When the file is flushed on commit, its writeback is started each time this many more bytes
/// are written, so that the flush itself waits for little more than the last of them.
const WRITEBACK_STEP: u64 = 8 << 20;

/// The file at `path` opened again (its own file offset, so that its bytes can be copied inside
/// the kernel), if it is still the very file `mapped` that a handle maps; `None` where that
/// cannot be proven (the path now names another file, the platform cannot tell), and the bytes
/// are then written from the mapping instead.
pub(crate) fn reopen_mapped(path: &Path, mapped: &File) -> Option<File> {
    crate::platform::reopen_mapped(path, mapped)
}

/// A file being written; it replaces the destination only when committed.
pub(crate) struct AtomicFile {
    file: File,
    temp: PathBuf,
    dest: PathBuf,
    /// The destination as the caller named it, for messages.
    shown: String,
    sync: bool,
    buf: Vec<u8>,
    /// The bytes handed to the file so far (the buffer's not counted).
    written: u64,
    /// The bytes whose writeback was started (`written` at the last start).
    pushed: u64,
    /// Set once committed: the temporary file no longer exists under its name.
    done: bool,
}

impl AtomicFile {
    /// Creates the temporary file for `dest`. `sync`: flush to stable storage on commit.
    pub fn create(dest: &Path, sync: bool) -> Result<AtomicFile> {
        let shown = crate::text::path_text(dest);
        let fail = |what: &str, e: std::io::Error| {
            crate::platform::io_error(&format!("cannot write{what}"), e).in_file(shown.clone())
        };
        // A symbolic link stays a link: its target is what gets replaced.
        let dest = match std::fs::symlink_metadata(dest) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(dest) {
                Ok(target) => target,
                // A dangling link: the file it names is created.
                Err(_) => std::fs::read_link(dest)
                    .map(|t| dest.parent().unwrap_or(Path::new("")).join(t))
                    .map_err(|e| fail("", e))?,
            },
            _ => dest.to_path_buf(),
        };
        let existing = match std::fs::metadata(&dest) {
            Ok(m) if m.is_dir() => {
                return Err(
                    Error::msg(ErrorCode::Io, "cannot write: it is a directory").in_file(shown)
                )
            }
            Ok(m) => Some(m),
            Err(_) => None,
        };
        let name = dest.file_name().ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                "cannot write: the path names no file",
            )
            .in_file(shown.clone())
        })?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut attempts = 0;
        let (file, temp) = loop {
            let temp = dir.join(crate::platform::temp_name(name));
            match crate::platform::create_exclusive(&temp) {
                Ok(file) => break (file, temp),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(e) => return Err(fail("", e)),
            }
        };
        let out = AtomicFile {
            file,
            temp,
            dest,
            shown: shown.clone(),
            sync,
            buf: Vec::new(),
            written: 0,
            pushed: 0,
            done: false,
        };
        if let Some(meta) = existing {
            // Dropping `out` on failure removes the temporary file.
            crate::platform::copy_permissions(&out.file, &meta)
                .map_err(|e| fail(": cannot give it the old file's permissions", e))?;
        }
        Ok(out)
    }

    /// The destination as the caller named it (escaped), for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn error(&self, e: std::io::Error) -> Error {
        Error::io("cannot write", e).in_file(self.shown.clone())
    }

    /// Reserves storage for the file's `len` bytes at once (where the platform can; advice,
    /// which changes neither the file's size nor its bytes): its blocks are then allocated in
    /// one go rather than as each page is written.
    pub fn reserve(&mut self, len: u64) {
        crate::platform::preallocate(&self.file, len);
    }

    /// Counts `n` more bytes handed to the file and, when it is flushed on commit, starts the
    /// writeback of each [`WRITEBACK_STEP`] of them.
    fn wrote(&mut self, n: u64) {
        self.written += n;
        if self.sync && self.written - self.pushed >= WRITEBACK_STEP {
            crate::platform::start_writeback(&self.file, self.pushed, self.written - self.pushed);
            self.pushed = self.written;
        }
    }

    /// Writes all of `bytes`.
    pub fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes).map_err(|e| self.error(e))
    }

    /// Copies `len` bytes of `src` from `offset` on, inside the kernel where it can (std's
    /// `io::copy` between files uses `copy_file_range` on Linux, and falls back to reads and
    /// writes where the file systems or the platform cannot). Fails if `src` ends early.
    pub fn copy_range(&mut self, mut src: &File, offset: u64, len: u64) -> Result<()> {
        self.flush_buf()?;
        src.seek(SeekFrom::Start(offset))
            .map_err(|e| self.error(e))?;
        let copied =
            std::io::copy(&mut src.take(len), &mut &self.file).map_err(|e| self.error(e))?;
        self.wrote(copied);
        if copied != len {
            return Err(Error::msg(
                ErrorCode::Io,
                format!(
                    "cannot write: the source file ended after {copied} of {len} bytes at offset \
                     {offset} (was it truncated?)"
                ),
            )
            .in_file(self.shown.clone()));
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.flush().map_err(|e| self.error(e))
    }

    /// Flushes, syncs (unless turned off), renames over the destination and syncs the
    /// directory. On failure the destination is untouched and the temporary file removed.
    pub fn commit(mut self) -> Result<()> {
        self.prepare()?;
        let sync = self.sync;
        let dest = self.publish()?;
        if sync {
            // The file is in place; the rename itself is made durable here.
            sync_dir(&dest)?;
        }
        Ok(())
    }

    /// The first half of [`AtomicFile::commit`]: flushes the file and syncs it (unless turned
    /// off), so that only the rename is left. The sync is of the data and of what reading it
    /// back needs (`fdatasync`: its size and blocks, not its times); the rename and the
    /// directory's sync then make its name durable.
    pub fn prepare(&mut self) -> Result<()> {
        self.flush_buf()?;
        if self.sync {
            self.file.sync_data().map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// The second half of [`AtomicFile::commit`] (after [`AtomicFile::prepare`]): renames the
    /// file over its destination, and returns the destination's path (whose directory the
    /// caller syncs). On failure the destination is untouched and the temporary file removed.
    pub fn publish(mut self) -> Result<PathBuf> {
        std::fs::rename(&self.temp, &self.dest).map_err(
            |e| match crate::platform::replace_advice(&e) {
                Some(why) => Error::new(crate::error::ErrorKind::Io {
                    context: "cannot replace it".to_string(),
                    source: std::sync::Arc::new(e),
                    advice: format!(": {why}"),
                })
                .in_file(self.shown.clone()),
                None => self.error(e),
            },
        )?;
        self.done = true;
        Ok(self.dest.clone())
    }

    /// Whether the file is flushed to stable storage on commit.
    pub fn syncs(&self) -> bool {
        self.sync
    }
}

/// Syncs the directory holding `dest` (a rename into it made durable).
pub(crate) fn sync_dir(dest: &Path) -> Result<()> {
    crate::platform::sync_dir(dest)
        .map_err(|e| Error::io("cannot write", e).in_file(crate::text::path_text(dest)))
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.len() < DIRECT && self.buf.len() + bytes.len() <= BUFFER {
            if self.buf.capacity() == 0 {
                self.buf.reserve_exact(BUFFER);
            }
            self.buf.extend_from_slice(bytes);
            return Ok(bytes.len());
        }
        self.flush()?;
        if bytes.len() < DIRECT {
            self.buf.extend_from_slice(bytes);
            return Ok(bytes.len());
        }
        let n = (&self.file).write(bytes)?;
        self.wrote(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let r = (&self.file).write_all(&self.buf);
            let n = self.buf.len() as u64;
            self.buf.clear();
            r?;
            self.wrote(n);
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.done {
            // Nothing else can be done about a failure here; the name is recognisable.
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn temp_names_fit_and_are_recognisable() {
        use std::os::unix::ffi::OsStrExt;
        let long = "x".repeat(255);
        let name = crate::platform::temp_name(std::ffi::OsStr::new(&long));
        assert_eq!(name.len(), 255);
        let short = crate::platform::temp_name(std::ffi::OsStr::new("m.gguf"));
        let text = String::from_utf8(short.as_bytes().to_vec()).unwrap();
        let prefix = format!(".m.gguf.gguf-tmp-{}-", std::process::id());
        assert!(text.starts_with(&prefix), "{text}");
        assert_eq!(text.len(), prefix.len() + 16);
    }

    /// The kernel copy is used only for the very file mapped.
    #[test]
    fn only_the_very_file_mapped_is_opened_again() {
        let dir = std::env::temp_dir().join(format!("gguf-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, vec![1u8; 8192]).unwrap();
        std::fs::write(&b, vec![2u8; 8192]).unwrap();
        let source = crate::source::open_source(&a, Default::default()).unwrap();
        let crate::source::Source::Mapped(_, mapped) = &source else {
            panic!("a default open maps the file");
        };
        assert!(reopen_mapped(&a, mapped).is_some());
        assert!(reopen_mapped(&b, mapped).is_none());
        // Replaced under its name: the path now names another file.
        std::fs::rename(&b, &a).unwrap();
        assert!(reopen_mapped(&a, mapped).is_none());
        drop(source);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_are_shown_escaped() {
        let p = crate::platform::path_from_bytes(b"dir/caf\xe9.gguf").unwrap();
        assert_eq!(crate::text::path_text(&p), "dir/caf\\xe9.gguf");
    }
}
