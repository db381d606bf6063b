//! Streaming a file: the header is written when the stream begins, then the caller gives each
//! tensor's data in order, then the file replaces its destination. Files larger than memory
//! never need their data in memory at once.

use super::builder::Writer;
use super::output::{put_tensor, Chunk};
use crate::atomic_file::AtomicFile;
use crate::error::{Error, ErrorCode, Result};
use std::path::Path;

/// A file being written one tensor at a time (see [`Writer::begin_file`]). Dropped before
/// [`TensorStream::finish`] succeeds, the file is abandoned: its temporary file is removed and
/// the destination is left as it was.
pub struct TensorStream {
    state: State,
    /// Each tensor's size in bytes, in order.
    sizes: Vec<u64>,
    alignment: u64,
    /// The destination as the caller named it (escaped), for messages.
    shown: String,
}

enum State {
    /// The header is written, and the data of tensors before `next`.
    Open { out: AtomicFile, next: usize },
    /// Writing failed: the temporary file is removed, and the failure sticks.
    Failed(Error),
    /// The file replaced its destination.
    Finished,
}

impl std::fmt::Debug for TensorStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorStream")
            .field("path", &self.shown)
            .field("written", &self.written())
            .field("tensors", &self.sizes.len())
            .finish()
    }
}

impl Writer {
    /// Creates a temporary file beside `path` and writes the header (metadata and tensor
    /// infos) into it. Then give each tensor's data, in the order the tensors were added (all
    /// of them, those added with data too), with [`TensorStream::write_tensor_data`], and end
    /// with [`TensorStream::finish`], which renames the file over `path` (synced as
    /// [`Writer::set_sync`] says). Until then `path` is untouched, and it stays so if anything
    /// fails. The stream keeps what it needs: later changes to the writer concern later files.
    pub fn begin_file(&self, path: impl AsRef<Path>) -> Result<TensorStream> {
        let header = self.header_bytes()?;
        let mut out = AtomicFile::create(path.as_ref(), self.sync)?;
        if let Some(len) = self.file_len(&header) {
            out.reserve(len);
        }
        out.put(&header)?;
        Ok(TensorStream {
            shown: out.shown().to_string(),
            state: State::Open { out, next: 0 },
            sizes: self.tensors.iter().map(|t| t.size).collect(),
            alignment: self.alignment(),
        })
    }
}

impl TensorStream {
    /// Whether the header is written and the file is neither finished nor failed.
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open { .. })
    }

    /// The number of tensors whose data is written.
    pub fn written(&self) -> usize {
        match &self.state {
            State::Open { next, .. } => *next,
            State::Failed(_) | State::Finished => 0,
        }
    }

    /// The destination as the caller named it (its bytes escaped), as messages show it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn refusal(&self, message: String) -> Error {
        Error::msg(ErrorCode::InvalidArgument, message).in_file(self.shown.clone())
    }

    /// Writes the data of the next tensor: exactly its size in bytes, then the padding to the
    /// alignment. Refused, changing nothing, if every tensor is already written or `data` is
    /// not the tensor's size. If writing fails (disk full, file size limit, I/O error) the file
    /// is abandoned: its temporary file is removed, the destination is untouched, and this call
    /// and every later one (and [`TensorStream::finish`]) fail with the same error.
    pub fn write_tensor_data(&mut self, data: &[u8]) -> Result<()> {
        let next = match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Finished => return Err(self.refusal("the file is already finished".into())),
            State::Open { next, .. } => *next,
        };
        let size = self
            .sizes
            .get(next)
            .copied()
            .ok_or_else(|| self.refusal("every tensor's data is already written".into()))?;
        if data.len() as u64 != size {
            return Err(self.refusal(format!(
                "tensor {next} takes {size} bytes, {} given",
                data.len()
            )));
        }
        let State::Open { out, next } = &mut self.state else {
            unreachable!("the stream is open (matched above)");
        };
        // A refused call above changes nothing; a failed write below may have written part of
        // the data, so the file is abandoned (its temporary file removed) and the failure sticks.
        match put_tensor(out, Chunk::Memory(data), size, self.alignment) {
            Ok(()) => {
                *next += 1;
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// [`TensorStream::write_tensor_data`] with the next tensor's bytes taken from `source`,
    /// from `offset` on (its size in bytes; inside the kernel where the source is a file and the
    /// platform can): no copy of the tensor in memory. A source that ends early fails the
    /// stream as a failed write does.
    pub fn write_tensor_from(
        &mut self,
        source: &dyn crate::read_at::ReadAt,
        offset: u64,
    ) -> Result<()> {
        let next = match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Finished => return Err(self.refusal("the file is already finished".into())),
            State::Open { next, .. } => *next,
        };
        let size = self
            .sizes
            .get(next)
            .copied()
            .ok_or_else(|| self.refusal("every tensor's data is already written".into()))?;
        let State::Open { out, next } = &mut self.state else {
            return Err(self.refusal("the file is not open".into()));
        };
        // A file source's range is copied as a file's (inside the kernel where it is large).
        let file = source.file().filter(|f| {
            offset
                .checked_add(size)
                .is_some_and(|end| end <= crate::read_at::ReadAt::len(*f))
        });
        let chunk = match file {
            Some(f) => Chunk::File(f.file(), f.offset() + offset, None),
            None => Chunk::Positioned(source, offset),
        };
        match put_tensor(out, chunk, size, self.alignment) {
            Ok(()) => {
                *next += 1;
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Finishes the file: checks every tensor's data was written (if not, refuses and the file
    /// stays open), flushes it, syncs it to stable storage (unless turned off), renames it over
    /// the destination and syncs the directory. A failure to write sticks (see
    /// [`TensorStream::write_tensor_data`]).
    pub fn finish(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Failed(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
            State::Finished => Err(self.refusal("the file is already finished".into())),
            State::Open { out, next } if next != self.sizes.len() => {
                self.state = State::Open { out, next };
                Err(self.refusal(format!(
                    "only {next} of the {} tensors' data were written",
                    self.sizes.len()
                )))
            }
            State::Open { out, .. } => out.commit().inspect_err(|e| {
                self.state = State::Failed(e.clone());
            }),
        }
    }

    /// Finishes `streams` together, as one output (a split model's shards): each must have
    /// every tensor's data written (else nothing is finished and the streams stay open). Each
    /// file is flushed and synced (unless turned off) before any is renamed; then each is
    /// renamed over its destination and the directories are synced. If any step fails, no
    /// output file is left: the temporary files are removed, and the shards already renamed
    /// are removed too (their destinations do not come back), and every stream is failed.
    pub fn finish_all(streams: &mut [TensorStream]) -> Result<()> {
        for s in streams.iter() {
            match &s.state {
                State::Failed(e) => return Err(e.clone()),
                State::Finished => return Err(s.refusal("the file is already finished".into())),
                State::Open { next, .. } if *next != s.sizes.len() => {
                    return Err(s.refusal(format!(
                        "only {next} of the {} tensors' data were written",
                        s.sizes.len()
                    )))
                }
                State::Open { .. } => {}
            }
        }
        let fail_all = |streams: &mut [TensorStream], e: &Error| {
            for s in streams.iter_mut() {
                // Dropping an open file removes its temporary file.
                s.state = State::Failed(e.clone());
            }
        };
        for k in 0..streams.len() {
            if let State::Open { out, .. } = &mut streams[k].state {
                if let Err(e) = out.prepare() {
                    fail_all(streams, &e);
                    return Err(e);
                }
            }
        }
        let mut published: Vec<std::path::PathBuf> = Vec::with_capacity(streams.len());
        let mut sync = false;
        for k in 0..streams.len() {
            let State::Open { out, .. } = std::mem::replace(&mut streams[k].state, State::Finished)
            else {
                continue;
            };
            sync |= out.syncs();
            match out.publish() {
                Ok(dest) => published.push(dest),
                Err(e) => {
                    for p in &published {
                        let _ = std::fs::remove_file(p);
                    }
                    fail_all(streams, &e);
                    return Err(e);
                }
            }
        }
        if sync {
            let mut synced: Vec<Option<&Path>> = Vec::new();
            for p in &published {
                if !synced.contains(&p.parent()) {
                    synced.push(p.parent());
                    if let Err(e) = crate::atomic_file::sync_dir(p) {
                        for p in &published {
                            let _ = std::fs::remove_file(p);
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }
}
