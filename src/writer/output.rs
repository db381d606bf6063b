//! Writing a file: the one loop (the header, then each tensor's data and its padding) and the
//! outputs it writes to: a file replaced atomically, any `Write`, a caller's buffer.

use super::builder::Writer;
use super::tensor::{Bytes, Origin};
use crate::atomic_file::AtomicFile;
use crate::error::{quote, Error, ErrorCode, Result};
use crate::format;
use crate::read_at::{read_exact_at, ReadAt};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Tensors smaller than this are written from memory even when they could be copied inside the
/// kernel: a copy call costs more than the bytes.
const KERNEL_COPY_MIN: u64 = 64 * 1024;
/// The most bytes read at once from a source read by position.
const READ_PIECE: u64 = 1 << 20;

/// Whose words a refusal uses to say what to call instead: the Rust API's or the C API's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// `Writer`'s methods.
    Rust,
    /// The `gguf_writer_*` functions.
    C,
}

/// Where the bytes of a file go.
pub(super) trait Sink {
    /// Writes all of `bytes`.
    fn put(&mut self, bytes: &[u8]) -> Result<()>;
    /// Writes `n` zero bytes.
    fn zeros(&mut self, n: u64) -> Result<()>;
    /// Copies `len` bytes of `file` from `offset` on.
    fn copy_range(&mut self, file: &File, offset: u64, len: u64) -> Result<()>;
    /// Copies `len` bytes of `source` from `offset` on, a piece at a time.
    fn copy_read_at(&mut self, source: &dyn ReadAt, offset: u64, len: u64) -> Result<()>
    where
        Self: Sized,
    {
        copy_pieces(self, source, offset, len)
    }
    /// Whether `len` bytes of a file are better copied from the file than from memory.
    fn prefers_copy(&self, _len: u64) -> bool {
        false
    }
}

impl Sink for AtomicFile {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        AtomicFile::put(self, bytes)
    }

    fn zeros(&mut self, n: u64) -> Result<()> {
        write_zeros(self, n).map_err(|e| Error::io("cannot write", e).in_file(self.shown()))
    }

    fn copy_range(&mut self, file: &File, offset: u64, len: u64) -> Result<()> {
        AtomicFile::copy_range(self, file, offset, len)
    }

    fn prefers_copy(&self, len: u64) -> bool {
        len >= KERNEL_COPY_MIN
    }
}

/// `len` bytes of `source` from `offset` on, read a piece at a time and put into `sink`.
fn copy_pieces(sink: &mut impl Sink, source: &dyn ReadAt, offset: u64, len: u64) -> Result<()> {
    let mut buf = vec![0u8; crate::size::in_memory(len.min(READ_PIECE))];
    let mut done = 0u64;
    while done < len {
        let piece = &mut buf[..crate::size::in_memory((len - done).min(READ_PIECE))];
        read_exact_at(source, offset + done, piece)?;
        sink.put(piece)?;
        done += piece.len() as u64;
    }
    Ok(())
}

/// Any `Write`; `context` says what failed in its messages.
struct WriteSink<'a, W: Write> {
    out: &'a mut W,
    context: &'static str,
}

impl<W: Write> WriteSink<'_, W> {
    fn error(&self, e: std::io::Error) -> Error {
        Error::io(self.context, e)
    }
}

impl<W: Write> Sink for WriteSink<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| self.error(e))
    }

    fn zeros(&mut self, n: u64) -> Result<()> {
        write_zeros(self.out, n).map_err(|e| self.error(e))
    }

    fn copy_range(&mut self, mut file: &File, offset: u64, len: u64) -> Result<()> {
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| self.error(e))?;
        let copied = std::io::copy(&mut file.take(len), self.out).map_err(|e| self.error(e))?;
        if copied != len {
            return Err(Error::msg(
                ErrorCode::Io,
                format!(
                    "{}: the source file ended after {copied} of {len} bytes at offset {offset} \
                     (was it truncated?)",
                    self.context
                ),
            ));
        }
        Ok(())
    }
}

/// A tensor's bytes as they are written: in memory, or a range of a file (with the same bytes
/// in memory where they are mapped).
pub(super) enum Chunk<'a> {
    Memory(&'a [u8]),
    File(&'a File, u64, Option<&'a [u8]>),
    Positioned(&'a dyn ReadAt, u64),
}

/// Writes one tensor of `size` bytes and its padding to `alignment`: the step of the write loop,
/// and of a stream.
pub(super) fn put_tensor(
    sink: &mut impl Sink,
    chunk: Chunk<'_>,
    size: u64,
    alignment: u64,
) -> Result<()> {
    let memory = match chunk {
        Chunk::File(file, offset, memory) if memory.is_none() || sink.prefers_copy(size) => {
            sink.copy_range(file, offset, size)?;
            None
        }
        Chunk::File(_, _, memory) => memory,
        Chunk::Positioned(source, offset) => {
            sink.copy_read_at(source, offset, size)?;
            None
        }
        Chunk::Memory(bytes) => Some(bytes),
    };
    if let Some(bytes) = memory {
        if bytes.len() as u64 != size {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "a tensor of {size} bytes has {} bytes of data (did its owner change?)",
                    bytes.len()
                ),
            ));
        }
        sink.put(bytes)?;
    }
    sink.zeros(format::align_up(size, alignment).unwrap_or(size) - size)
}

impl Writer {
    /// The size of the file written with `header`: the header, then each tensor's data padded
    /// to the alignment (`None` past 2^64 bytes).
    pub(super) fn file_len(&self, header: &[u8]) -> Option<u64> {
        let alignment = self.alignment();
        self.tensors.iter().try_fold(header.len() as u64, |n, t| {
            n.checked_add(format::align_up(t.size, alignment)?)
        })
    }

    /// The first tensor whose data the caller streams, as a refusal to write the whole file.
    fn missing_data(&self, api: Api) -> Result<()> {
        let Some(i) = self.tensors.iter().position(|t| t.data.is_streamed()) else {
            return Ok(());
        };
        Err(Error::msg(
            ErrorCode::InvalidArgument,
            match api {
                Api::Rust => format!(
                    "tensor {} has no data: write the header, then stream it",
                    quote(&self.tensors[i].name)
                ),
                Api::C => format!("tensor {i} has no data: stream it with gguf_writer_begin_file"),
            },
        ))
    }

    /// The write loop: the header, then each tensor's data and its padding. Every tensor must
    /// have its data.
    fn write_all_to(&self, sink: &mut impl Sink, header: &[u8]) -> Result<()> {
        sink.put(header)?;
        let alignment = self.alignment();
        for t in &self.tensors {
            let chunk = match &t.data.0 {
                Origin::Memory(bytes) => Chunk::Memory(bytes.get()),
                Origin::File {
                    file,
                    offset,
                    memory,
                } => Chunk::File(file, *offset, memory.as_ref().map(Bytes::get)),
                Origin::Positioned { source, offset } => Chunk::Positioned(&**source, *offset),
                Origin::Streamed => return self.missing_data(Api::Rust),
            };
            put_tensor(sink, chunk, t.size, alignment)?;
        }
        Ok(())
    }

    /// The size in bytes of the whole file: the header, then every tensor's data padded to the
    /// alignment (what [`Writer::write_to_slice`] needs). Fails if it passes 2^64 bytes.
    pub fn file_size(&self) -> Result<u64> {
        let header = self.header_bytes()?.len() as u64;
        let alignment = self.alignment();
        let offsets = self.tensor_offsets()?;
        let data = match (offsets.last(), self.tensors.last()) {
            (Some(&offset), Some(t)) => offset
                .checked_add(t.size)
                .and_then(|end| format::align_up(end, alignment)),
            _ => Some(0),
        };
        data.and_then(|d| d.checked_add(header))
            .ok_or_else(|| Error::size_overflow("the file passes 2^64 bytes"))
    }

    /// The whole file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file to `out`. Every tensor must have its data (none streamed).
    pub fn write_to(&self, out: &mut impl Write) -> Result<()> {
        let header = self.header_bytes()?;
        let mut sink = WriteSink {
            out,
            context: "cannot write",
        };
        self.write_all_to(&mut sink, &header)?;
        sink.out.flush().map_err(|e| sink.error(e))
    }

    /// Writes the whole file into the start of `buffer` and returns its size in bytes
    /// ([`Writer::file_size`]); the rest of `buffer` is untouched. Every tensor must have its
    /// data. Fails, leaving `buffer` untouched, if it is too small. For platforms without a
    /// file system (wasm32), and to open the result from memory.
    pub fn write_to_slice(&self, buffer: &mut [u8]) -> Result<u64> {
        self.write_to_slice_for(buffer, Api::Rust)
    }

    pub(crate) fn write_to_slice_for(&self, buffer: &mut [u8], api: Api) -> Result<u64> {
        self.missing_data(api)?;
        let size = self.file_size()?;
        let capacity = buffer.len();
        if size > capacity as u64 {
            let ask = match api {
                Api::Rust => "Writer::file_size",
                Api::C => "gguf_writer_memory_size",
            };
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("the buffer holds {capacity} bytes; the file takes {size} ({ask})"),
            ));
        }
        let mut out = buffer;
        let mut sink = WriteSink {
            out: &mut out,
            context: "cannot write to the buffer",
        };
        self.write_all_to(&mut sink, &self.header_bytes()?)?;
        Ok(size)
    }

    /// Writes the file to `path`, atomically: the bytes go to a temporary file in the same
    /// directory (`.<name>.gguf-tmp-<pid>-<random>`, with the permissions an existing file at
    /// `path` had), which is synced (see [`Writer::set_sync`]) and renamed over `path`. On any
    /// failure `path` is exactly what it was and the temporary file is removed. `path` may be
    /// the file the tensor data was read from (see [`Writer::from_model`]): handles that mapped
    /// it keep the old file. Tensors given as a range of a file are copied inside the kernel
    /// where the platform can.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        self.write_file_for(path.as_ref(), Api::Rust)
    }

    pub(crate) fn write_file_for(&self, path: &Path, api: Api) -> Result<()> {
        if api == Api::C {
            self.missing_data(api)?;
        }
        let in_file = |e: Error| match api {
            Api::Rust if e.path().is_none() => e.in_path(path),
            _ => e,
        };
        let header = self.header_bytes().map_err(in_file)?;
        let mut out = AtomicFile::create(path, self.sync)?;
        if let Some(len) = self.file_len(&header) {
            out.reserve(len);
        }
        self.write_all_to(&mut out, &header).map_err(in_file)?;
        out.commit()
    }
}

/// Writes `n` zero bytes from a static buffer.
fn write_zeros(out: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    static ZEROS: [u8; 4096] = [0; 4096];
    while n > 0 {
        let step = usize::try_from(n).map_or(ZEROS.len(), |n| n.min(ZEROS.len()));
        out.write_all(&ZEROS[..step])?;
        n -= step as u64;
    }
    Ok(())
}
