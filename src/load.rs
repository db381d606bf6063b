//! Loading tensor data into the caller's memory: one tensor (`read_tensor`) or many at once on
//! several threads, merged and optionally with direct I/O (`read_tensors`), from any source
//! (mapped, or read by position: a descriptor, a callback, a URL).

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::model::Model;
use crate::platform;
use crate::read_at::{lying, read_exact_at, FileAt, ReadAt};
use crate::source::{too_large, Source};
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Where one tensor's data is, and the shard's source to read it from.
struct Located<'m> {
    file: &'m GgufFile<Source>,
    at: u64,
    size: u64,
}

fn locate(model: &Model<Source>, index: usize) -> Result<Located<'_>> {
    let t = model.tensor_at(index).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "tensor index {index} is past the end ({} tensors)",
                model.tensor_count()
            ),
        )
    })?;
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

/// How [`read_tensors`] reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Threads to read on; 0 lets the library choose. A source that cannot be read from several
    /// threads (a caller's callback) is read on the calling thread alone.
    pub threads: u32,
    /// Bypass the page cache where the platform allows it (`O_DIRECT` on Linux and Android,
    /// `F_NOCACHE` on macOS and iOS); elsewhere, and for sources that are not files, read
    /// buffered.
    pub direct: bool,
}

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
    let parallel = readers.iter().all(Reader::parallel);
    let threads = match options.threads {
        _ if !parallel => 1,
        0 => std::thread::available_parallelism()
            .map_or(4, |n| n.get())
            .clamp(1, 8),
        n => n as usize,
    }
    .min(units.len().max(1));
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
    if threads <= 1 {
        let mut bounce = Bounce { buf: Vec::new() };
        for mut unit in units {
            let reader = &readers[unit.shard];
            done += read_unit(&mut unit, reader, &mut bounce)?;
            if !progress(done, total) {
                return Err(cancelled());
            }
        }
        return Ok(());
    }
    let units_len = units.len();
    let slots: Vec<Mutex<Option<Unit<'_>>>> =
        units.into_iter().map(|u| Mutex::new(Some(u))).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // What the threads report: units read, bytes read, the first failure. (A mutex and a
    // condition variable rather than a channel: a channel's blocking receive registers the
    // calling thread with Rust's runtime, which a C caller's leak checker reports.)
    let reports = Mutex::new(Reports::default());
    let changed = Condvar::new();
    let report = |r: Result<u64>| {
        let mut g = reports.lock().unwrap_or_else(|p| p.into_inner());
        match r {
            Ok(n) => {
                g.units += 1;
                g.bytes += n;
            }
            Err(e) => {
                g.error.get_or_insert(e);
            }
        }
        changed.notify_one();
    };
    let work = || {
        let mut bounce = Bounce { buf: Vec::new() };
        while !stop.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let unit = slot.lock().map(|mut u| u.take()).unwrap_or(None);
            let Some(mut unit) = unit else { continue };
            let reader = &readers[unit.shard];
            // A panic (a bug) is reported rather than leaving the calling thread waiting.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read_unit(&mut unit, reader, &mut bounce)
            }))
            .unwrap_or_else(|_| Err(Error::msg(ErrorCode::Internal, "a read thread panicked")));
            let failed = r.is_err();
            report(r);
            if failed {
                break;
            }
        }
    };
    // The calling thread reports progress as reads complete, until all are done or one fails.
    platform::with_workers(threads, &work, || {
        let mut seen = 0;
        let outcome = loop {
            let (units, bytes) = {
                let mut g = reports.lock().unwrap_or_else(|p| p.into_inner());
                while g.units == seen && g.error.is_none() {
                    g = changed.wait(g).unwrap_or_else(|p| p.into_inner());
                }
                if let Some(e) = g.error.take() {
                    break Err(e);
                }
                (g.units, g.bytes)
            };
            seen = units;
            if !progress(bytes, total) {
                break Err(cancelled());
            }
            if seen == units_len {
                break Ok(());
            }
        };
        stop.store(true, Ordering::Relaxed);
        outcome
    })
}

/// What [`run_units`]'s threads have done.
#[derive(Default)]
struct Reports {
    units: usize,
    bytes: u64,
    error: Option<Error>,
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
