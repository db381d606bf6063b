//! Where a file's bytes come from: a read-only memory map of a path (optionally pre-faulted or
//! locked), a private copy read into page-aligned memory, or memory the caller lends; and paging
//! advice for mapped bytes. This is one of the two places with `unsafe` (the other is the C API).

use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::platform;
use crate::platform::io_error;
pub use crate::platform::Paging;
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::file::needs_more;
use crate::file::GgufFile;
use crate::read_at::{read_exact_at, ReadAt};

/// How to bring a file into memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Fault every page in while mapping (`MAP_POPULATE`), instead of on first touch.
    pub populate: bool,
    /// Lock the pages in memory (`mlock`): fails clearly when `ulimit -l` forbids it.
    pub lock: bool,
    /// Read the file into private, page-aligned memory instead of mapping it (for file systems
    /// where mapping is slow or unsafe, or to be immune to the file changing underneath).
    pub read: bool,
    /// Open only the named file of a split model, not its sibling shards.
    pub single_shard: bool,
    /// Do not map the file: read its header by positioned reads, and its tensor data only when
    /// asked (`gguf_read_tensor`, `gguf_read_tensors`). For files larger than the address space.
    pub no_map: bool,
}

/// What a file that is not a regular file is, for a message.
pub(crate) fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    if let Some(kind) = platform::special_kind(meta) {
        return kind;
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

fn refuse_irregular(meta: &std::fs::Metadata) -> Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(Error::msg(
        ErrorCode::Io,
        format!(
            "cannot open {}: only regular files are read (a model must be mapped or read at a \
             known size)",
            kind_of(meta)
        ),
    ))
}

/// Opens `path` and returns its size, refusing what is not a non-empty regular file. Nothing
/// here blocks: the type is checked before opening (so that no device is even opened), the open
/// does not wait, and the type is checked again on the open file (it may have been replaced in
/// between).
fn open_regular(path: &Path) -> Result<(File, u64)> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("cannot open the file", e))?;
    refuse_irregular(&meta)?;
    let file = platform::open_nonblocking(path).map_err(|e| io_error("cannot open the file", e))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error("cannot read the file size", e))?;
    refuse_irregular(&meta)?;
    if meta.len() == 0 {
        return Err(size_zero(&file));
    }
    Ok((file, meta.len()))
}

/// The error for a regular file of size 0: empty, or one that reports size 0 but has contents,
/// as files in `/proc` and `/sys` do (reading one byte tells them apart).
fn size_zero(mut file: &File) -> Error {
    let mut byte = [0u8; 1];
    if matches!(file.read(&mut byte), Ok(1)) {
        return Error::msg(
            ErrorCode::Io,
            "the file reports size 0 but has contents (like files in /proc and /sys): its size \
             is needed to map or read it; copy it to a regular file first",
        );
    }
    let kind = ErrorKind::Truncated {
        reading: "the magic".to_string(),
        needed: 4,
        remaining: 0,
        empty_file: true,
    };
    Error::at(0, kind)
}

/// The error for a failed memory map (or allocation) of `size` bytes. A map that runs out of
/// memory may have hit a limit of the process rather than a lack of memory: the message names
/// the platform's limits (`platform::map_limits`; on Linux the number of mappings and
/// `ulimit -v`, with their values).
pub(crate) fn map_error(what: &str, size: u64, e: std::io::Error) -> Error {
    if !platform::is_out_of_memory(&e) {
        return io_error(what, e);
    }
    let why = platform::map_limits();
    Error::new(ErrorKind::Io {
        context: what.to_string(),
        source: std::sync::Arc::new(e),
        advice: format!(": {size} bytes could not be mapped: {why}"),
    })
}

impl crate::file::MappedFile {
    /// Maps and parses the file at `path`. Errors name the path. (Mapping is the sources'
    /// concern, so this constructor of the parser's type lives with them.)
    pub fn open(path: impl AsRef<Path>) -> Result<crate::file::MappedFile> {
        let path = path.as_ref();
        let map = map_file(path).map_err(|e| e.in_path(path))?;
        GgufFile::from_bytes(map).map_err(|e| e.in_path(path))
    }
}

/// Maps the file at `path` read-only.
pub fn map_file(path: &Path) -> Result<Mmap> {
    match open_source(path, OpenOptions::default())? {
        Source::Mapped(map, _) | Source::Copied(map) => Ok(map),
        _ => unreachable!("open_source maps or reads, never lends"),
    }
}

/// Brings the file at `path` into memory as `options` say.
pub fn open_source(path: &Path, options: OpenOptions) -> Result<Source> {
    let (file, size) = open_regular(path)?;
    source_of(file, size, options)
}

/// Opens and parses the file at `path` as `options` say: mapped (or read into memory), or, with
/// `options.no_map` or when the file is larger than the address space, by positioned reads
/// (its header read and parsed, its data left in the file). Errors do not name the path.
pub fn open_file(path: &Path, options: OpenOptions) -> Result<GgufFile<Source>> {
    let (file, size) = open_regular(path)?;
    if options.no_map || (usize::try_from(size).is_err() && !options.read) {
        platform::clear_nonblocking(&file).map_err(|e| io_error("cannot read the file", e))?;
        let at = crate::read_at::FileAt::new(file, 0, size, crate::text::path_text(path));
        return parse_prefixes(Arc::new(at), FIRST_CHUNK);
    }
    GgufFile::from_bytes(source_of(file, size, options)?)
}

fn source_of(mut file: File, size: u64, options: OpenOptions) -> Result<Source> {
    let source = if options.read {
        let len = usize::try_from(size)
            .map_err(|_| Error::msg(ErrorCode::OutOfMemory, "the file is larger than memory"))?;
        platform::clear_nonblocking(&file).map_err(|e| io_error("cannot read the file", e))?;
        let mut copy = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| map_error("cannot allocate memory to read the file into", size, e))?;
        file.read_exact(&mut copy)
            .map_err(|e| io_error("cannot read the file", e))?;
        Source::Copied(
            copy.make_read_only()
                .map_err(|e| io_error("cannot protect the copy", e))?,
        )
    } else {
        let Ok(len) = usize::try_from(size) else {
            return Err(too_large_to_map(size));
        };
        // The size read from the open file (memmap2 would ask the system for it again).
        let mut map_options = MmapOptions::new();
        map_options.len(len);
        if options.populate {
            map_options.populate();
        }
        // SAFETY: the map is read-only and private to this process, and every byte of it is
        // read through bounds-checked slices. What a map cannot guard against is another
        // process truncating the file while it is mapped (reads past the new end raise SIGBUS);
        // that is the documented contract of every mmap-based model loader, ggml's included
        // (`OpenOptions::read` avoids it).
        let map = unsafe { map_options.map(&file) }
            .map_err(|e| no_map_advice(map_error("cannot map the file", size, e)))?;
        if options.populate {
            platform::populate(&map)?;
        }
        Source::Mapped(map, file)
    };
    if options.lock {
        if let Source::Mapped(map, _) | Source::Copied(map) = &source {
            platform::lock(map, size)?;
        }
    }
    Ok(source)
}

/// The error for a file larger than the address space (a 32-bit process maps at most 4 GiB, and
/// in practice less).
fn too_large_to_map(size: u64) -> Error {
    Error::msg(
        ErrorCode::OutOfMemory,
        format!(
            "the file is {size} bytes, more than a {}-bit address space can map: open it with \
             GGUF_OPEN_FLAG_NO_MAP (header by positioned reads, tensor data with \
             gguf_read_tensor and gguf_read_tensors)",
            usize::BITS
        ),
    )
}

/// `e`, a failed map, recommending to open without mapping when the address space ran out.
fn no_map_advice(e: Error) -> Error {
    match e.kind() {
        ErrorKind::Io { .. } if e.message().contains("could not be mapped") => e.with_context(
            "open it with GGUF_OPEN_FLAG_NO_MAP to read the header by positioned reads and tensor \
             data with gguf_read_tensor(s)",
        ),
        _ => e,
    }
}

/// Maps `len` bytes from `offset` of `file` (a file stored inside another): the map starts at
/// the page boundary at or before `offset` (the system requires it) and the bytes are sliced
/// from there.
pub fn map_range(file: &File, offset: u64, len: u64, source: Arc<dyn ReadAt>) -> Result<Source> {
    let page = page_size();
    let start = offset / page * page;
    let skip = usize::try_from(offset - start).expect("less than a page");
    let total = len + (offset - start);
    let (Ok(len), Ok(map_len)) = (usize::try_from(len), usize::try_from(total)) else {
        return Err(too_large_to_map(total));
    };
    // SAFETY: as in `source_of`: a private read-only map read through bounds-checked slices; a
    // file truncated by another process while mapped raises SIGBUS, the documented contract of
    // mapping.
    let map = unsafe { MmapOptions::new().offset(start).len(map_len).map(file) }
        .map_err(|e| no_map_advice(map_error("cannot map the file", total, e)))?;
    Ok(Source::Embedded {
        map,
        skip,
        len,
        source,
    })
}

/// How many bytes from the start of a shard's memory the handle may hand out: the whole
/// system pages of a mapping (the kernel maps the last page whole, zero past the end of the
/// file), or exactly the bytes lent to `gguf_open_memory`.
pub fn memory_len(file: &GgufFile<Source>) -> u64 {
    let len = file.file_size();
    match file.source() {
        Source::Lent(_) | Source::Embedded { .. } | Source::Positioned { .. } => len,
        Source::Mapped(..) | Source::Copied(_) => {
            crate::format::align_up(len, page_size()).unwrap_or(len)
        }
    }
}

/// The system's page size.
pub fn page_size() -> u64 {
    platform::page_size()
}

/// The bytes behind an open handle.
pub enum Source {
    /// A file mapped by this library, and the open file it maps (kept so that the writer can
    /// tell whether a path still names this very file, and copy from it inside the kernel).
    Mapped(Mmap, File),
    /// A file read into page-aligned private memory by this library.
    Copied(Mmap),
    /// Memory lent by the caller, who keeps it alive and unchanged while the handle lives.
    Lent(&'static [u8]),
    /// A file embedded in a bigger one (`gguf_open_fd` at an offset), mapped: the map starts
    /// `skip` bytes before the file (maps start on a page boundary) and holds `len` bytes after
    /// them; `source` reads the same bytes by position.
    Embedded {
        /// The mapping, from the page boundary at or before the file's start.
        map: Mmap,
        /// Bytes of the map before the file's start.
        skip: usize,
        /// The file's length.
        len: usize,
        /// The same bytes, read by position.
        source: Arc<dyn ReadAt>,
    },
    /// A file read by position and not mapped (a file descriptor, a read callback, a server):
    /// its header's bytes, read by [`parse_source`], and the source its tensor data
    /// is read from when asked.
    Positioned {
        /// The first bytes of the file: at least its whole header.
        header: Box<[u8]>,
        /// The whole file.
        source: Arc<dyn ReadAt>,
    },
}

impl Source {
    /// The source that reads the file by position, for handles not opened from a path or
    /// memory.
    pub fn positioned(&self) -> Option<&Arc<dyn ReadAt>> {
        match self {
            Source::Embedded { source, .. } | Source::Positioned { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether the file's bytes are all in memory (mapped, copied or lent), so that tensor data
    /// has an address.
    pub fn in_memory(&self) -> bool {
        !matches!(self, Source::Positioned { .. })
    }

    /// Advises the kernel about `range` (byte offsets, widened to whole pages). Only mapped
    /// bytes take advice; lent memory is the caller's to manage.
    pub fn advise(&self, range: Range<usize>, advice: Paging) -> Result<()> {
        let map =
            match self {
                Source::Mapped(map, _) => map,
                Source::Embedded { .. } | Source::Positioned { .. } => {
                    return Err(Error::msg(
                        ErrorCode::Unsupported,
                        "paging advice applies to files this library mapped whole, not to files \
                     opened by position (gguf_open_fd, gguf_open_reader)",
                    ))
                }
                // Dropped anonymous pages would come back as zeros.
                Source::Copied(_) if advice == Paging::DontNeed => {
                    return Err(Error::msg(
                        ErrorCode::Unsupported,
                        "DONTNEED would discard a file read into memory: only mapped files take it",
                    ))
                }
                Source::Copied(map) => map,
                Source::Lent(_) => return Err(Error::msg(
                    ErrorCode::Unsupported,
                    "paging advice applies to files this library opened, not to memory lent to \
                     gguf_open_memory",
                )),
            };
        let end = range.end.min(map.len());
        let start = range.start.min(end);
        if start == end {
            return Ok(());
        }
        platform::advise(map, advice, start, end - start)
    }
}

impl AsRef<[u8]> for Source {
    fn as_ref(&self) -> &[u8] {
        match self {
            Source::Mapped(map, _) | Source::Copied(map) => map,
            Source::Lent(bytes) => bytes,
            Source::Embedded { map, skip, len, .. } => &map[*skip..*skip + *len],
            Source::Positioned { header, .. } => header,
        }
    }
}

// The message names Linux's limits (`/proc/sys/vm/max_map_count`, `ulimit -v`).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_map_failing_with_enomem_names_the_mapping_and_address_space_limits() {
        let e = map_error(
            "cannot map the file",
            1 << 40,
            std::io::Error::from_raw_os_error(libc::ENOMEM),
        );
        assert_eq!(e.code(), ErrorCode::Io);
        let msg = e.message();
        assert!(msg.starts_with("cannot map the file: "), "{msg}");
        assert!(
            msg.contains("1099511627776 bytes could not be mapped"),
            "{msg}"
        );
        let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap();
        assert!(
            msg.contains(&format!("in use; vm.max_map_count is {}:", max.trim())),
            "{msg}"
        );
        assert!(msg.contains("address space (ulimit -v is "), "{msg}");

        // Other failures are passed on as they are.
        let e = map_error(
            "cannot map the file",
            1,
            std::io::Error::from_raw_os_error(libc::ENODEV),
        );
        assert!(!e.message().contains("vm.max_map_count"), "{}", e.message());
    }
}

// A source's header, read in growing chunks and parsed by the one parser.

/// The first read of a header: most headers fit (a 262144-token vocabulary takes about 4 MiB,
/// reached in five doublings).
pub const FIRST_CHUNK: u64 = 256 * 1024;

/// The most header bytes read from a source read by position: a real model's header takes a few
/// MiB (a 262144-token vocabulary about 4 MiB); a header that claims more is refused rather than
/// downloaded or held in memory.
pub const MAX_HEADER: u64 = 256 << 20;

/// Reads and parses the header of the file `source` holds: the first [`FIRST_CHUNK`] bytes,
/// then twice as many each time the header goes on past them (so the parses are logarithmic in
/// the header's size, and at most the header plus the last chunk is read). Every rule is
/// checked as for a mapped file, against the size the source declares. Errors name the source.
pub fn parse_source(source: Arc<dyn ReadAt>) -> Result<GgufFile<Source>> {
    parse_source_from(source, FIRST_CHUNK)
}

/// [`parse_source`] with a first read of `first_chunk` bytes (at least 1; tests use small ones
/// to make the header run past many prefixes).
pub fn parse_source_from(source: Arc<dyn ReadAt>, first_chunk: u64) -> Result<GgufFile<Source>> {
    let name = source.describe();
    parse_prefixes(source, first_chunk.max(1)).map_err(|e| e.in_file(name))
}

/// [`parse_source_from`] without naming the source in its errors.
pub(crate) fn parse_prefixes(
    source: Arc<dyn ReadAt>,
    first_chunk: u64,
) -> Result<GgufFile<Source>> {
    let size = source.len();
    let mut header: Vec<u8> = Vec::new();
    let mut want = first_chunk.min(size);
    loop {
        let have = header.len();
        let grow = usize::try_from(want).map_err(|_| too_large(want))? - have;
        header
            .try_reserve_exact(grow)
            .map_err(|_| too_large(want))?;
        header.resize(have + grow, 0);
        read_exact_at(&*source, have as u64, &mut header[have..])?;
        let bytes = Source::Positioned {
            header: std::mem::take(&mut header).into_boxed_slice(),
            source: source.clone(),
        };
        match GgufFile::try_prefix(bytes, size) {
            Ok(file) => return Ok(file),
            Err((bytes, e)) => {
                want = next_header_len(e, want, size)?;
                let Source::Positioned { header: h, .. } = bytes else {
                    unreachable!("made above")
                };
                header = h.into_vec();
            }
        }
    }
}

/// What to read after parsing the first `have` bytes of a source of `size` bytes failed with
/// `e` (for a caller that reads the source itself, as JavaScript's range reads do): `Ok(n)`, the
/// length of the longer prefix to parse next (at least what the parser stopped for, at least
/// twice `have`, at most `size` and [`MAX_HEADER`]), or `Err`, the error to report (the header
/// is broken, or needs more than [`MAX_HEADER`] bytes).
pub fn next_header_len(e: Error, have: u64, size: u64) -> Result<u64> {
    if !needs_more(&e, have, size) {
        return Err(e);
    }
    // At least what the parser stopped for, and at least twice what was read.
    let needed = match (e.offset(), e.kind()) {
        (Some(at), ErrorKind::Truncated { needed, .. }) => at.saturating_add(*needed),
        _ => 0,
    };
    let needed = needed.max(have.saturating_add(1));
    // (A source within the limit is read to its end, where the parser says what is missing.)
    if needed > MAX_HEADER && size > MAX_HEADER {
        return Err(header_too_large(needed));
    }
    // Never past the limit: the last read stops at it.
    Ok(have.saturating_mul(2).max(needed).min(size).min(MAX_HEADER))
}

#[cold]
fn header_too_large(needed: u64) -> Error {
    Error::msg(
        ErrorCode::OutOfMemory,
        format!(
            "the header needs at least {needed} bytes, more than the {MAX_HEADER} bytes a file \
             read by position may have (a model's header takes a few MiB)"
        ),
    )
}

pub(crate) fn too_large(bytes: u64) -> Error {
    Error::msg(
        ErrorCode::OutOfMemory,
        format!("the header needs more than {bytes} bytes of memory, more than can be allocated"),
    )
}
