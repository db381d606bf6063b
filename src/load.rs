//! Loading tensor data into the caller's memory: one tensor (`read_tensor`) or many at once on
//! several threads, merged and optionally with direct I/O (`read_tensors`), from any source
//! (mapped, or read by position: a descriptor, a callback, a URL); and tensor data converted to
//! floats (`tensor_to_float`, and on several threads `tensor_to_float_parallel`).

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::model::Model;
use crate::parallel;
use crate::platform;
use crate::read_at::{lying, read_exact_at, FileAt, ReadAt};
use crate::source::{too_large, Source};
use std::fs::File;
use std::sync::Arc;

/// Where one tensor's data is, and the shard's source to read it from.
struct Located<'m> {
    file: &'m GgufFile<Source>,
    at: u64,
    size: u64,
}

fn locate(model: &Model<Source>, index: usize) -> Result<Located<'_>> {
    let t = locate_tensor(model, index)?;
    Ok(Located {
        file: &model.shards()[t.shard],
        at: t.info.file_offset,
        size: t.info.size,
    })
}

/// Checks that `len` bytes from `offset` bytes into tensor `index`'s data lie inside it and fit
/// in one buffer in memory; returns `len` as a buffer length. (The C API checks a caller's size
/// with this before it makes a slice of the caller's buffer.)
pub fn check_read(model: &Model<Source>, index: usize, offset: u64, len: u64) -> Result<usize> {
    let t = locate(model, index)?;
    if offset.checked_add(len).is_none_or(|end| end > t.size) {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "cannot read {len} bytes from offset {offset} of a tensor of {} bytes",
                t.size
            ),
        ));
    }
    crate::size::buffer_len(len).ok_or_else(|| too_large_buffer(len))
}

#[cold]
fn too_large_buffer(len: u64) -> Error {
    Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "{len} bytes do not fit in one buffer in this process's memory (at most {})",
            crate::size::MAX_BUFFER
        ),
    )
}

/// Copies `dst.len()` bytes of tensor `index`'s data, from `offset` bytes into it: from memory
/// for a mapped or lent file, by a positioned read otherwise.
pub fn read_tensor(model: &Model<Source>, index: usize, offset: u64, dst: &mut [u8]) -> Result<()> {
    check_read(model, index, offset, dst.len() as u64)?;
    let t = locate(model, index)?;
    let at = t.at + offset;
    match t.file.source().positioned() {
        Some(source) if !t.file.source().in_memory() => read_exact_at(&**source, at, dst),
        _ => {
            // In bounds: the tensor lies inside the file's bytes (checked at open).
            let start = usize::try_from(at).map_err(|_| too_large(at))?;
            dst.copy_from_slice(&t.file.bytes()[start..start + dst.len()]);
            Ok(())
        }
    }
}

/// Where tensor `index`'s bytes are when its file is read by position (not in memory): the
/// source and the data's offset in it. `None` for a tensor in memory (mapped or read whole).
pub fn positioned_tensor(
    model: &Model<Source>,
    index: usize,
) -> Option<(std::sync::Arc<dyn crate::read_at::ReadAt>, u64)> {
    let t = locate(model, index).ok()?;
    match t.file.source().positioned() {
        Some(source) if !t.file.source().in_memory() => Some((source.clone(), t.at)),
        _ => None,
    }
}

/// How [`read_tensors`] reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Threads to read on; 0 lets the library choose (one per core, at most 8), and at most
    /// [`parallel::MAX_THREADS`] are started, nor more than there are reads. A source that
    /// cannot be read from several threads (a caller's callback) is read on the calling thread
    /// alone.
    pub threads: u32,
    /// Bypass the page cache where the platform allows it (`O_DIRECT` on Linux and Android,
    /// `F_NOCACHE` on macOS and iOS); elsewhere, and for sources that are not files, read
    /// buffered.
    pub direct: bool,
}

/// Threads [`read_tensors`] reads on when the caller lets it choose: at most one per core, and
/// no more than this, which is enough to reach a device's bandwidth.
const DEFAULT_THREADS: usize = 8;

/// Most bytes one read asks for: large enough to reach a device's bandwidth, small enough to
/// spread a tensor over threads.
const CHUNK: u64 = 8 << 20;
/// Tensors at most this far apart are read together (the padding between tensors is at most the
/// alignment, 32 bytes by default).
const MERGE_GAP: u64 = 64 << 10;

/// Part of a destination, and where its bytes are in the file (absolute: for a file inside a
/// bigger one, from the bigger file's start).
struct Piece<'d> {
    at: u64,
    dst: &'d mut [u8],
}

/// One read: `start..end` of a shard's file (absolute), and the pieces it fills.
struct Unit<'d> {
    shard: usize,
    start: u64,
    end: u64,
    pieces: Vec<Piece<'d>>,
}

/// How a shard's data is read.
enum Reader<'m> {
    /// From memory (a file read into memory or lent): copied.
    Memory(&'m [u8]),
    /// By position through a source; `base` is where the source starts in its file, and
    /// `direct` the same file opened for direct I/O.
    Positioned {
        source: Arc<dyn ReadAt>,
        base: u64,
        direct: Option<File>,
    },
}

impl Reader<'_> {
    fn parallel(&self) -> bool {
        match self {
            Reader::Memory(_) => true,
            Reader::Positioned { source, .. } => source.parallel(),
        }
    }
}

fn reader_of<'m>(file: &'m GgufFile<Source>, name: &str, direct: bool) -> Result<Reader<'m>> {
    let source: Arc<dyn ReadAt> = match file.source() {
        Source::Mapped(_, f) => {
            let copy = f
                .try_clone()
                .map_err(|e| Error::io("cannot reopen the file", e))?;
            Arc::new(FileAt::new(copy, 0, file.file_size(), name.to_string()))
        }
        Source::Embedded { source, .. } | Source::Positioned { source, .. } => source.clone(),
        Source::Copied(_) | Source::Lent(_) => return Ok(Reader::Memory(file.bytes())),
    };
    let (base, direct) = match source.file() {
        Some(f) => (
            f.offset(),
            direct.then(|| platform::open_direct(f.file())).flatten(),
        ),
        None => (0, None),
    };
    Ok(Reader::Positioned {
        source,
        base,
        direct,
    })
}

/// Reads whole tensors into the caller's buffers: `requests` pairs a tensor's index with a
/// buffer of exactly its size. Reads run on several threads (`options.threads`) for sources
/// that allow it, adjacent tensors are read together, and `progress` (called on the calling
/// thread with the bytes done and the total) may stop the load by returning false, which fails
/// with [`ErrorCode::Cancelled`].
///
/// With `options.direct`, reads bypass the page cache: whole aligned blocks are read straight
/// into a buffer when its address has the same offset from a 4096-byte boundary as the data in
/// the file, and otherwise into an aligned buffer of the library's and copied from there.
pub fn read_tensors(
    model: &Model<Source>,
    requests: Vec<(usize, &mut [u8])>,
    options: LoadOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<()> {
    let shards = model.shards();
    let names = model.shard_names();
    let mut readers = Vec::with_capacity(shards.len());
    for (file, name) in shards.iter().zip(names) {
        readers.push(reader_of(file, name, options.direct)?);
    }
    // The pieces of each shard, by position in its file.
    let mut by_shard: Vec<Vec<Piece<'_>>> = (0..shards.len()).map(|_| Vec::new()).collect();
    let mut total = 0u64;
    for (index, dst) in requests {
        let t = model.tensor_at(index).ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "tensor index {index} is past the end ({} tensors)",
                    model.tensor_count()
                ),
            )
        })?;
        if dst.len() as u64 != t.info.size {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "the buffer for tensor {} holds {} bytes, but the tensor has {}",
                    crate::text::quote(t.info.name),
                    dst.len(),
                    t.info.size
                ),
            ));
        }
        // Buffers in memory: their sizes add up within the address space (a tensor listed
        // twice has two buffers).
        total = total
            .checked_add(t.info.size)
            .filter(|&n| n <= crate::size::MAX_BUFFER)
            .ok_or_else(|| too_large_buffer(total.saturating_add(t.info.size)))?;
        let base = match &readers[t.shard] {
            Reader::Positioned { base, .. } => *base,
            Reader::Memory(_) => 0,
        };
        // Within the file holding the source (checked when it was opened).
        let at = base.checked_add(t.info.file_offset).ok_or_else(|| {
            Error::msg(
                ErrorCode::Internal,
                "a tensor lies past 2^64 bytes".to_string(),
            )
        })?;
        by_shard[t.shard].push(Piece { at, dst });
    }
    let mut units = Vec::new();
    for (shard, mut pieces) in by_shard.into_iter().enumerate() {
        pieces.sort_unstable_by_key(|p| p.at);
        let align = match &readers[shard] {
            Reader::Positioned {
                direct: Some(_), ..
            } => platform::direct_alignment() as u64,
            _ => 1,
        };
        plan_units(shard, pieces, align, &mut units);
    }
    let shareable = readers.iter().all(Reader::parallel);
    // At most one thread per read (`parallel::run` stops there).
    let threads = match options.threads {
        _ if !shareable => 1,
        0 => parallel::thread_count(0).min(DEFAULT_THREADS),
        n => parallel::thread_count(n),
    };
    run_units(units, &readers, threads, total, progress)
}

/// Cuts `pieces` (sorted by position) into reads of at most about [`CHUNK`] bytes, merging
/// neighbours, each read widened to `align`-byte boundaries (1: buffered). A tensor listed more
/// than once gives pieces at the same position: each read only takes pieces that start inside
/// or after it, so every piece lies within its read.
///
/// Positions come from the source (up to 2^64 - 1 for a callback or a server declaring so):
/// every rounding is checked. A piece ends within the source, so `at + len` cannot overflow.
fn plan_units<'d>(shard: usize, pieces: Vec<Piece<'d>>, align: u64, units: &mut Vec<Unit<'d>>) {
    let down = |x: u64| x / align * align;
    // Only direct reads widen (align > 1), and only files are read directly, which end far
    // below 2^64; past the last multiple the read stops at the end anyway.
    let up = |x: u64| x.div_ceil(align).saturating_mul(align);
    let mut current: Option<Unit<'d>> = None;
    for piece in pieces {
        let mut at = piece.at;
        let mut rest = piece.dst;
        while !rest.is_empty() {
            // A segment ends at a CHUNK boundary of the file, so that big tensors are read in
            // aligned, equal reads (none after the last boundary below 2^64).
            let room = (at / CHUNK + 1)
                .checked_mul(CHUNK)
                .map_or(u64::MAX, |boundary| boundary - at);
            let len = rest.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            let (seg, tail) = std::mem::take(&mut rest).split_at_mut(len);
            let len = len as u64;
            rest = tail;
            let (start, end) = (down(at), up(at + len));
            let joins = current.as_ref().is_some_and(|u| {
                start >= u.start
                    && start <= u.end.saturating_add(MERGE_GAP)
                    && end - u.start <= CHUNK + align
            });
            if !joins {
                units.extend(current.take());
                current = Some(Unit {
                    shard,
                    start,
                    end,
                    pieces: Vec::new(),
                });
            }
            let u = current.as_mut().expect("set above");
            u.end = u.end.max(end);
            u.pieces.push(Piece { at, dst: seg });
            at += len;
        }
    }
    units.extend(current);
}

/// A buffer whose usable part starts at a multiple of `align`.
struct Bounce {
    buf: Vec<u8>,
}

impl Bounce {
    fn slice(&mut self, len: usize, align: usize) -> Result<&mut [u8]> {
        if self.buf.len() < len + align {
            self.buf = Vec::new();
            self.buf
                .try_reserve_exact(len + align)
                .map_err(|_| too_large(len as u64))?;
            self.buf.resize(len + align, 0);
        }
        let skip = self.buf.as_ptr().align_offset(align);
        Ok(&mut self.buf[skip..skip + len])
    }
}

fn read_unit(unit: &mut Unit<'_>, reader: &Reader<'_>, bounce: &mut Bounce) -> Result<u64> {
    let bytes: u64 = unit.pieces.iter().map(|p| p.dst.len() as u64).sum();
    match reader {
        Reader::Memory(mem) => {
            for p in &mut unit.pieces {
                // In bounds: tensors lie inside the file (checked at open).
                let start = usize::try_from(p.at).map_err(|_| too_large(p.at))?;
                p.dst.copy_from_slice(&mem[start..start + p.dst.len()]);
            }
        }
        Reader::Positioned {
            source,
            base,
            direct,
        } => {
            let align = if direct.is_some() {
                platform::direct_alignment()
            } else {
                1
            };
            // One piece whose buffer lies like the file modulo the alignment: its whole blocks
            // are read straight into it, only a partial first and last block through `bounce`.
            if let [p] = &mut unit.pieces[..] {
                let direct = direct.as_ref();
                if read_in_place(p, source, *base, direct, align, bounce)? {
                    return Ok(bytes);
                }
            }
            let len = usize::try_from(unit.end - unit.start).map_err(|_| too_large(unit.end))?;
            let buf = bounce.slice(len, align)?;
            let got = read_block(source, *base, direct.as_ref(), unit.start, buf)?;
            for p in &mut unit.pieces {
                let from = usize::try_from(p.at - unit.start).expect("inside the read");
                if from + p.dst.len() > got {
                    let at = p.at + got as u64 - from as u64;
                    return Err(lying(
                        &**source,
                        at.saturating_sub(*base),
                        "ended early".into(),
                    ));
                }
                p.dst.copy_from_slice(&buf[from..from + p.dst.len()]);
            }
        }
    }
    Ok(bytes)
}

/// Reads `p` in place when its buffer has the same remainder modulo `align` as its position in
/// the file and it spans at least one whole block: the whole blocks straight into the buffer,
/// the partial blocks at either end through `bounce`. Returns whether it did.
fn read_in_place(
    p: &mut Piece<'_>,
    source: &Arc<dyn ReadAt>,
    base: u64,
    direct: Option<&File>,
    align: usize,
    bounce: &mut Bounce,
) -> Result<bool> {
    let a = align as u64;
    let len = p.dst.len() as u64;
    // `p.at + len` is the piece's end, within the source; the first whole block may lie past
    // 2^64 only for a piece inside the last partial block, which is not read in place.
    let Some(start) = p.at.div_ceil(a).checked_mul(a) else {
        return Ok(false);
    };
    let end = (p.at + len) / a * a;
    if (p.dst.as_ptr() as u64) % a != p.at % a || end <= start {
        return Ok(false);
    }
    // Within `len`, so within usize.
    let head = usize::try_from(start - p.at).expect("within the buffer");
    let body = usize::try_from(end - start).expect("within the buffer");
    let got = read_block(source, base, direct, start, &mut p.dst[head..head + body])?;
    if got < body {
        return Err(lying(
            &**source,
            (start + got as u64).saturating_sub(base),
            "ended early".into(),
        ));
    }
    let mut partial = |from: u64, dst: &mut [u8]| -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let block = from / a * a;
        let buf = bounce.slice(align, align)?;
        let got = read_block(source, base, direct, block, buf)?;
        let skip = usize::try_from(from - block).expect("within a block");
        if got < skip + dst.len() {
            return Err(lying(
                &**source,
                from.saturating_sub(base),
                "ended early".into(),
            ));
        }
        dst.copy_from_slice(&buf[skip..skip + dst.len()]);
        Ok(())
    };
    let (head_dst, rest) = p.dst.split_at_mut(head);
    partial(p.at, head_dst)?;
    partial(end, &mut rest[body..])?;
    Ok(true)
}

/// Reads at absolute position `at` into `dst`; returns how many bytes were read (fewer only
/// when `dst` runs past the file's end, which only a widened direct read does). `at` may lie
/// before the source's start (a direct read widened to a block boundary inside a bigger file).
fn read_block(
    source: &Arc<dyn ReadAt>,
    base: u64,
    direct: Option<&File>,
    at: u64,
    dst: &mut [u8],
) -> Result<usize> {
    let Some(file) = direct else {
        if let Some(f) = source.file() {
            platform::will_need(f.file(), at, dst.len() as u64);
        }
        read_exact_at(&**source, at - base, dst)?;
        return Ok(dst.len());
    };
    let mut done = 0;
    while done < dst.len() {
        let pos = at + done as u64;
        let n = platform::read_at(file, &mut dst[done..], pos).map_err(|e| {
            Error::io(
                format!("cannot read {} at offset {pos}", source.describe()),
                e,
            )
        })?;
        done += n;
        // A direct read stops short only at the end of the file.
        if n == 0 || n % platform::direct_alignment() != 0 {
            break;
        }
    }
    Ok(done)
}

/// Reads `units` on `threads` threads (see [`parallel::run`]), reporting progress on the calling
/// thread as reads complete: first with 0, then with the bytes done after each batch of reads.
fn run_units(
    units: Vec<Unit<'_>>,
    readers: &[Reader<'_>],
    threads: usize,
    total: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<()> {
    let cancelled = || {
        Error::msg(
            ErrorCode::Cancelled,
            "the progress callback stopped the load",
        )
    };
    if !progress(0, total) {
        return Err(cancelled());
    }
    let mut done = 0u64;
    parallel::run(
        units,
        threads,
        "read",
        || Bounce { buf: Vec::new() },
        |bounce, mut unit| {
            let reader = &readers[unit.shard];
            read_unit(&mut unit, reader, bounce)
        },
        |bytes| {
            done += bytes.iter().sum::<u64>();
            if !progress(done, total) {
                return Err(cancelled());
            }
            Ok(())
        },
    )
}

/// The digest of tensor `index`'s data, read from memory, or by positioned reads of 8 MiB for a
/// handle that reads by position.
pub fn digest_tensor(
    model: &Model<Source>,
    index: usize,
    algorithm: crate::digest::DigestAlgorithm,
) -> Result<crate::digest::Digest> {
    let t = locate(model, index)?;
    let mut d = crate::digest::Digester::new(algorithm);
    if t.file.source().in_memory() {
        let info = model.tensor_at(index).expect("located above").info;
        d.update(info.data);
        return Ok(d.finish());
    }
    let mut buf = vec![0u8; usize::try_from(t.size.min(CHUNK)).expect("at most CHUNK")];
    let mut done = 0u64;
    while done < t.size {
        let len = usize::try_from((t.size - done).min(CHUNK)).expect("at most CHUNK");
        read_tensor(model, index, done, &mut buf[..len])?;
        d.update(&buf[..len]);
        done += len as u64;
    }
    Ok(d.finish())
}

/// Fewest elements [`tensor_to_float_parallel`] gives a thread: below this, starting a thread
/// costs more than it saves.
const MIN_ELEMENTS_PER_THREAD: u64 = 1 << 16;

/// Converts rows `[first_row, first_row + n_rows)` of tensor `index` (a row is the tensor's
/// first dimension; a tensor has `n_elements / dims[0]` rows) to floats in `dst`, which holds
/// exactly `n_rows * dims[0]` of them: bit for bit as [`crate::quant::dequantize`] gives them,
/// reading the data in its file's byte order (from a big-endian file, the types whose
/// big-endian layout is defined, [`crate::quant::big_endian_defined`]; the others are refused,
/// [`ErrorCode::Unsupported`]). Data in memory is read in place, with nothing allocated; data
/// left in a source is read (the rows asked for, and only those). Many threads may convert rows
/// of one model at once.
///
/// Refused ([`ErrorCode::InvalidArgument`], before anything is read) when `index` is past the
/// last tensor, the rows run past the tensor's end, their bytes or floats would take more than
/// one buffer in memory can, or `dst` is not their length; fails when the data cannot be read
/// or its type cannot be converted. Errors about the rows name the tensor's file.
pub fn tensor_to_float(
    model: &Model<Source>,
    index: usize,
    first_row: u64,
    n_rows: u64,
    dst: &mut [f32],
) -> Result<()> {
    rows_to_float(model, None, index, first_row, n_rows, dst)
}

/// [`tensor_to_float`] on up to `threads` threads ([`parallel::thread_count`]: 0 for one per
/// core, at most [`parallel::MAX_THREADS`]): the rows are split into consecutive ranges of
/// whole rows, each converted into its part of `dst`, on threads started for this call and on
/// the calling thread, and every thread is joined before this returns. A thread is given at
/// least 65536 elements, so small tensors use fewer threads, or only the calling one. The
/// floats are those of [`tensor_to_float`].
///
/// Refused as [`tensor_to_float`] refuses, for the whole range before any thread starts, and
/// when `first_row + n_rows` overflows ([`ErrorCode::InvalidArgument`]). When a range fails to
/// convert, the first failure is returned, and `dst` may be partly written.
pub fn tensor_to_float_parallel(
    model: &Model<Source>,
    index: usize,
    first_row: u64,
    n_rows: u64,
    dst: &mut [f32],
    threads: u32,
) -> Result<()> {
    rows_to_float_parallel(model, None, index, first_row, n_rows, dst, threads)
}

/// The floats rows `[first_row, first_row + n_rows)` of tensor `index` give, checked as
/// [`tensor_to_float`] checks them; errors about the rows name `file` (by default the tensor's
/// file). (The C API checks a caller's buffer with this before it makes a slice of it.)
pub(crate) fn float_rows(
    model: &Model<Source>,
    file: Option<&str>,
    index: usize,
    first_row: u64,
    n_rows: u64,
) -> Result<usize> {
    Ok(Rows::check(model, file, index, first_row, n_rows)?.floats)
}

/// [`float_rows`] as [`tensor_to_float_parallel`] checks them: `first_row + n_rows` overflowing
/// is refused first.
pub(crate) fn float_rows_parallel(
    model: &Model<Source>,
    file: Option<&str>,
    index: usize,
    first_row: u64,
    n_rows: u64,
) -> Result<usize> {
    Ok(Rows::check_parallel(model, file, index, first_row, n_rows)?.floats)
}

/// [`tensor_to_float`], errors about the rows naming `file` (by default the tensor's file).
pub(crate) fn rows_to_float(
    model: &Model<Source>,
    file: Option<&str>,
    index: usize,
    first_row: u64,
    n_rows: u64,
    dst: &mut [f32],
) -> Result<()> {
    let rows = Rows::check(model, file, index, first_row, n_rows)?;
    rows.fits(dst)?;
    rows.convert(first_row, n_rows, dst)
}

/// [`tensor_to_float_parallel`], errors about the rows naming `file` (by default the tensor's
/// file).
pub(crate) fn rows_to_float_parallel(
    model: &Model<Source>,
    file: Option<&str>,
    index: usize,
    first_row: u64,
    n_rows: u64,
    dst: &mut [f32],
    threads: u32,
) -> Result<()> {
    let rows = Rows::check_parallel(model, file, index, first_row, n_rows)?;
    rows.fits(dst)?;
    let by_size = (dst.len() as u64).div_ceil(MIN_ELEMENTS_PER_THREAD);
    let threads =
        parallel::thread_count(threads).min(usize::try_from(by_size).unwrap_or(usize::MAX));
    // The rows' floats are in memory (`dst`), so a row's are too.
    let row = usize::try_from(rows.row).unwrap_or(usize::MAX);
    parallel::split_mut(dst, row, threads, "conversion", |first, part| {
        // Whole rows of the checked range: no overflow.
        let n = part.len().checked_div(row).unwrap_or(0) as u64;
        rows.convert(first_row + first as u64, n, part)
    })
}

/// Rows of one tensor, checked for conversion to floats: they lie in the tensor, and their
/// bytes and floats each fit in one buffer in memory. Errors about them name `file`.
struct Rows<'m> {
    model: &'m Model<Source>,
    index: usize,
    tensor: crate::model::ModelTensor<'m>,
    /// Elements and bytes of one row.
    row: u64,
    row_bytes: u64,
    first_row: u64,
    n_rows: u64,
    /// The floats the rows give.
    floats: usize,
    file: &'m str,
}

impl<'m> Rows<'m> {
    fn check(
        model: &'m Model<Source>,
        file: Option<&'m str>,
        index: usize,
        first_row: u64,
        n_rows: u64,
    ) -> Result<Rows<'m>> {
        let tensor = locate_tensor(model, index)?;
        let file = file.unwrap_or_else(|| {
            let names = model.shard_names();
            names.get(tensor.shard).map_or("", String::as_str)
        });
        let info = &tensor.info;
        let name = crate::text::quote(info.name);
        let row = info.dims[0];
        let total_rows = info.n_elements.checked_div(row).unwrap_or(0);
        if first_row > total_rows || n_rows > total_rows - first_row {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "rows {first_row} to {} are past the end of tensor {name} ({total_rows} rows \
                     of {row} elements)",
                    u128::from(first_row) + u128::from(n_rows)
                ),
            )
            .in_file(file));
        }
        // A valid tensor's rows are whole blocks and its size fits in 64 bits (checked when it
        // was opened); the bytes read and the floats written must fit in memory. At most the
        // tensor's element count: no overflow.
        let elements = n_rows.saturating_mul(row);
        let (_, floats) = crate::quant::buffer_lengths(info.dtype, elements).map_err(|e| {
            e.with_context(format!("{n_rows} rows of tensor {name}"))
                .with_offset(None)
                .in_file(file)
        })?;
        Ok(Rows {
            model,
            index,
            tensor,
            row,
            row_bytes: info.dtype.row_bytes(row).unwrap_or(0),
            first_row,
            n_rows,
            floats,
            file,
        })
    }

    /// [`Rows::check`], refusing first a range whose end overflows, and then a type that
    /// cannot be converted.
    fn check_parallel(
        model: &'m Model<Source>,
        file: Option<&'m str>,
        index: usize,
        first_row: u64,
        n_rows: u64,
    ) -> Result<Rows<'m>> {
        if first_row.checked_add(n_rows).is_none() {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("rows {first_row} plus {n_rows} overflow"),
            ));
        }
        let rows = Rows::check(model, file, index, first_row, n_rows)?;
        // A type that cannot be converted (from a big-endian file) is refused before any
        // thread starts: no row converted, no byte read.
        rows.convert(first_row, 0, &mut [])?;
        Ok(rows)
    }

    /// Refuses a `dst` that does not hold exactly the rows' floats.
    fn fits(&self, dst: &[f32]) -> Result<()> {
        if dst.len() == self.floats {
            return Ok(());
        }
        Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "the buffer for rows {} to {} of tensor {} holds {} floats, but they give {}",
                self.first_row,
                self.first_row + self.n_rows,
                crate::text::quote(self.tensor.info.name),
                dst.len(),
                self.floats
            ),
        ))
    }

    /// Converts rows `[first, first + n)`, within the checked ones, into `dst` (their floats).
    fn convert(&self, first: u64, n: u64, dst: &mut [f32]) -> Result<()> {
        let info = &self.tensor.info;
        // Within the checked rows: no overflow.
        let bytes = self.bytes(first * self.row_bytes, n * self.row_bytes)?;
        let order = self.model.shards()[self.tensor.shard].byte_order();
        crate::quant::dequantize_in_order(info.dtype, order, &bytes, dst).map_err(|e| {
            e.with_context(format!("tensor {}", crate::text::quote(info.name)))
                .with_offset(None)
                .in_file(self.file)
        })
    }

    /// `len` bytes of the tensor's data from byte `start` of it: lent in place from memory, or
    /// read from the source (that range, and only that).
    fn bytes(&self, start: u64, len: u64) -> Result<std::borrow::Cow<'m, [u8]>> {
        let t = &self.tensor;
        if !self.model.shards()[t.shard].source().in_memory() {
            let n = usize::try_from(len).map_err(|_| too_large_to_read(len))?;
            let mut buf = Vec::new();
            buf.try_reserve_exact(n)
                .map_err(|_| too_large_to_read(len))?;
            buf.resize(n, 0);
            read_tensor(self.model, self.index, start, &mut buf)?;
            return Ok(std::borrow::Cow::Owned(buf));
        }
        let data = t.info.data;
        let range = usize::try_from(start)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(s, l)| Some(s..s.checked_add(l)?))
            .filter(|r| r.end <= data.len());
        match range {
            Some(r) => Ok(std::borrow::Cow::Borrowed(&data[r])),
            None => Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "bytes {start} to {} of tensor {} are not in its data ({} bytes)",
                    u128::from(start) + u128::from(len),
                    crate::text::quote(t.info.name),
                    data.len()
                ),
            )
            .in_file(self.file)),
        }
    }
}

/// Tensor `index` of `model`, or an error saying it is past the end.
fn locate_tensor(model: &Model<Source>, index: usize) -> Result<crate::model::ModelTensor<'_>> {
    model.tensor_at(index).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "tensor index {index} is past the end ({} tensors)",
                model.tensor_count()
            ),
        )
    })
}

#[cold]
fn too_large_to_read(len: u64) -> Error {
    Error::msg(
        ErrorCode::OutOfMemory,
        format!("{len} bytes of tensor data cannot be read into memory at once"),
    )
}
