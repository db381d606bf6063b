//! The parsed file: one walk over the header that checks every rule of the format and records
//! where each key, value and tensor lies, then zero-copy accessors over those positions.

use crate::error::{AlignmentFound, Error, ErrorKind, FirstSeen, Result, Shortfall};
use crate::format::{self, ByteOrder, Layout, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_DIMS};
use crate::index::{NameHasher, NameIndex};
use crate::reader::{ByteReader, Span};
use crate::types::{DataType, ValueType};
use crate::value::{self, RawValue, Value};
use std::path::Path;

/// Where one metadata entry lies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KvRecord {
    /// Offset of the entry (its key's length field).
    pub at: usize,
    pub key: Span,
    pub value: RawValue,
}

/// One tensor info, checked. Not stored: the parse keeps only where each info lies (a file may
/// hold hundreds of thousands), and this is read again from there when asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TensorRecord {
    /// Offset of the tensor info (its name's length field).
    pub at: usize,
    pub name: Span,
    pub n_dims: u32,
    pub dims: [u64; MAX_DIMS],
    pub dtype: DataType,
    pub n_elements: u64,
    /// Offset from the start of the data section, as stored.
    pub offset: u64,
    pub size: u64,
}

/// A tensor's description and data, borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorInfo<'a> {
    /// Name as stored (not necessarily UTF-8).
    pub name: &'a [u8],
    /// Number of dimensions (0 to 4).
    pub n_dims: u32,
    /// Dimensions, innermost first; 1 past `n_dims`.
    pub dims: [u64; MAX_DIMS],
    /// Data type.
    pub dtype: DataType,
    /// Number of elements (product of the dimensions).
    pub n_elements: u64,
    /// Offset of the data from the start of the data section, as stored in the file.
    pub offset: u64,
    /// Absolute offset of the data in the file.
    pub file_offset: u64,
    /// Size of the data in bytes.
    pub size: u64,
    /// The data, exactly `size` bytes, as stored (file byte order); empty when only the header
    /// is in memory ([`GgufFile::from_prefix`]: read the data with `crate::load::read_tensor`).
    pub data: &'a [u8],
}

/// A metadata entry, borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetadataEntry<'a> {
    /// Key as stored (not necessarily UTF-8).
    pub key: &'a [u8],
    /// The value.
    pub value: Value<'a>,
}

/// Everything the walk over the header learns, as positions into the file's bytes.
struct Parsed {
    version: u32,
    layout: Layout,
    alignment: u64,
    data_offset: u64,
    /// The file's size: the length of its bytes, or the size declared for the source of which
    /// they are the header ([`GgufFile::from_prefix`]).
    size: u64,
    kvs: Vec<KvRecord>,
    /// Where each tensor info lies (its name's length field).
    tensors: Vec<usize>,
    key_index: NameIndex,
    tensor_index: NameIndex,
}

/// A parsed GGUF file over bytes it owns or borrows (`S` is a memory map, a `Vec<u8>`, a
/// `&[u8]`, ...). Every rule of the format is checked when it is made; afterwards every accessor
/// is infallible and returns slices of those bytes.
pub struct GgufFile<S: AsRef<[u8]>> {
    source: S,
    parsed: Parsed,
}

/// A GGUF file mapped into memory.
pub type MappedFile = GgufFile<memmap2::Mmap>;

impl MappedFile {
    /// Maps and parses the file at `path`. Errors name the path.
    pub fn open(path: impl AsRef<Path>) -> Result<MappedFile> {
        let path = path.as_ref();
        let map = crate::source::map_file(path).map_err(|e| e.in_path(path))?;
        GgufFile::from_bytes(map).map_err(|e| e.in_path(path))
    }
}

impl<S: AsRef<[u8]>> GgufFile<S> {
    /// Parses `source`, checking every rule of the format (on the calling thread).
    pub fn from_bytes(source: S) -> Result<GgufFile<S>> {
        let size = source.as_ref().len() as u64;
        let parsed = parse(source.as_ref(), size)?;
        Ok(GgufFile { source, parsed })
    }

    /// Parses `source`, the first bytes of a file of `size` bytes whose tensor data is read
    /// elsewhere (a file descriptor, a callback, a server). Every rule is checked as for the
    /// whole file, against `size`. When the header runs past `source`, the error is
    /// [`ErrorCode::Truncated`](crate::ErrorCode), which means "read more": parse a
    /// longer prefix (the one parser, run again; see `crate::load::parse_source`).
    pub fn from_prefix(source: S, size: u64) -> Result<GgufFile<S>> {
        let size = size.max(source.as_ref().len() as u64);
        let parsed = parse(source.as_ref(), size)?;
        Ok(GgufFile { source, parsed })
    }

    /// [`GgufFile::from_prefix`], handing `source` back on failure (to be extended and parsed
    /// again).
    pub(crate) fn try_prefix(source: S, size: u64) -> std::result::Result<GgufFile<S>, (S, Error)> {
        let size = size.max(source.as_ref().len() as u64);
        match parse(source.as_ref(), size) {
            Ok(parsed) => Ok(GgufFile { source, parsed }),
            Err(e) => Err((source, e)),
        }
    }

    /// The bytes of the whole file.
    pub fn bytes(&self) -> &[u8] {
        self.source.as_ref()
    }

    /// The storage the file was parsed from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Format version (1, 2 or 3).
    pub fn version(&self) -> u32 {
        self.parsed.version
    }

    /// Byte order of the file's numbers.
    pub fn byte_order(&self) -> ByteOrder {
        self.parsed.layout.order
    }

    /// Alignment of tensor data (`general.alignment`, or 32).
    pub fn alignment(&self) -> u64 {
        self.parsed.alignment
    }

    /// Absolute offset where the data section starts. It may equal or exceed the file size when
    /// the file has no tensor data.
    pub fn data_offset(&self) -> u64 {
        self.parsed.data_offset
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.parsed.size
    }

    /// Whether the tensor data is in [`GgufFile::bytes`] (a whole file), not only the header.
    pub fn has_data(&self) -> bool {
        self.bytes().len() as u64 == self.parsed.size
    }

    /// Number of metadata entries.
    pub fn metadata_count(&self) -> usize {
        self.parsed.kvs.len()
    }

    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.parsed.tensors.len()
    }

    /// The `index`-th metadata entry in file order.
    pub fn metadata_at(&self, index: usize) -> Option<MetadataEntry<'_>> {
        let kv = self.parsed.kvs.get(index)?;
        Some(MetadataEntry {
            key: kv.key.of(self.bytes()),
            value: kv.value.view(self.bytes(), self.parsed.layout),
        })
    }

    /// Every metadata entry in file order.
    pub fn metadata(&self) -> impl Iterator<Item = MetadataEntry<'_>> + '_ {
        (0..self.metadata_count()).filter_map(move |i| self.metadata_at(i))
    }

    /// Position of the metadata entry with this key (hash lookup).
    pub fn metadata_index(&self, key: impl AsRef<[u8]>) -> Option<usize> {
        let bytes = self.bytes();
        let kvs = &self.parsed.kvs;
        self.parsed
            .key_index
            .find(key.as_ref(), |i| kvs[i].key.of(bytes))
    }

    /// The value of the metadata entry with this key.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<Value<'_>> {
        self.metadata_index(key)
            .and_then(|i| self.metadata_at(i))
            .map(|e| e.value)
    }

    /// The `index`-th tensor info, read again from where the parse found it.
    fn tensor_record(&self, index: usize) -> Option<TensorRecord> {
        let at = *self.parsed.tensors.get(index)?;
        let p = &self.parsed;
        // Checked when the file was parsed, so this never fails.
        read_tensor_info(self.bytes(), at, p.layout, p.alignment)
            .ok()
            .map(|(t, _)| t)
    }

    /// The `index`-th tensor in file order.
    pub fn tensor_at(&self, index: usize) -> Option<TensorInfo<'_>> {
        let t = self.tensor_record(index)?;
        let file_offset = self.parsed.data_offset + t.offset;
        // In bounds, so within `usize`: checked when the file was parsed.
        // Empty when only the header is at hand (`from_prefix`).
        let data = usize::try_from(file_offset)
            .ok()
            .zip(usize::try_from(t.size).ok())
            .and_then(|(start, len)| self.bytes().get(start..start.checked_add(len)?))
            .unwrap_or_default();
        Some(TensorInfo {
            name: t.name.of(self.bytes()),
            n_dims: t.n_dims,
            dims: t.dims,
            dtype: t.dtype,
            n_elements: t.n_elements,
            offset: t.offset,
            file_offset,
            size: t.size,
            data,
        })
    }

    /// Every tensor in file order.
    pub fn tensors(&self) -> impl Iterator<Item = TensorInfo<'_>> + '_ {
        (0..self.tensor_count()).filter_map(move |i| self.tensor_at(i))
    }

    /// Position of the tensor with this name (hash lookup).
    pub fn tensor_index(&self, name: impl AsRef<[u8]>) -> Option<usize> {
        let (bytes, p) = (self.bytes(), &self.parsed);
        p.tensor_index.find(name.as_ref(), |i| {
            tensor_name(bytes, p.tensors[i], p.layout)
        })
    }

    /// The name of the `index`-th tensor (what [`GgufFile::tensor_at`] gives, read alone).
    pub(crate) fn tensor_name_at(&self, index: usize) -> Option<&[u8]> {
        let at = *self.parsed.tensors.get(index)?;
        Some(tensor_name(self.bytes(), at, self.parsed.layout))
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: impl AsRef<[u8]>) -> Option<TensorInfo<'_>> {
        self.tensor_index(name).and_then(|i| self.tensor_at(i))
    }

    pub(crate) fn kv_records(&self) -> &[KvRecord] {
        &self.parsed.kvs
    }

    /// Sum of the lengths of every tensor name: a pass over the names, made when asked (the C
    /// handle sizes its string arena with it) rather than on the open path.
    pub(crate) fn tensor_name_bytes(&self) -> usize {
        let (bytes, p) = (self.bytes(), &self.parsed);
        p.tensors
            .iter()
            .map(|&at| tensor_name(bytes, at, p.layout).len())
            .sum()
    }

    pub(crate) fn layout(&self) -> Layout {
        self.parsed.layout
    }
}

/// Names from the file are quoted for messages by one function, which escapes them.
pub(crate) use crate::error::quote;

/// Reads the magic and version; returns the version and byte order.
fn read_preamble(bytes: &[u8], size: u64) -> Result<(u32, ByteOrder)> {
    let probe = Layout::new(3, ByteOrder::Little);
    let mut r = ByteReader::sized(bytes, 0, probe, size);
    let magic = r.take(4, "the magic")?;
    if magic != format::MAGIC {
        return Err(Error::at_with(0, || ErrorKind::BadMagic {
            found: [magic[0], magic[1], magic[2], magic[3]],
        }));
    }
    let raw = r.u32("the version")?;
    let supported = format::MIN_VERSION..=format::MAX_VERSION;
    if supported.contains(&raw) {
        Ok((raw, ByteOrder::Little))
    } else if supported.contains(&raw.swap_bytes()) {
        Ok((raw.swap_bytes(), ByteOrder::Big))
    } else {
        Err(Error::at_with(4, || ErrorKind::UnsupportedVersion {
            found: raw,
        }))
    }
}

/// Reads a count from the header and checks that `count` entries of at least `min_size` bytes
/// each could fit in the rest of the file, before anything is allocated for them.
fn read_count(r: &mut ByteReader<'_>, what: &str, min_size: u64, kind: Count) -> Result<usize> {
    let at = r.pos();
    let count = r.len(what).map_err(header)?;
    if !r.fits(count, min_size) {
        let e = Error::at_with(at as u64, || kind.error(count, r.shortfall(min_size)));
        return Err(header(e));
    }
    // Over the first bytes of a file read by position, nothing is allocated for entries that
    // the bytes at hand cannot hold yet: the loader reads more first (up to its limit).
    let at_hand = (r.bytes().len() - r.pos()) as u64;
    let need = count.saturating_mul(min_size);
    if need > at_hand && r.left() > at_hand {
        return Err(Error::at_with(r.pos() as u64, || ErrorKind::Truncated {
            reading: format!("the entries {what} announces"),
            needed: need,
            remaining: at_hand,
            empty_file: false,
        }));
    }
    // Positions are kept as u32 in places; a file this large would need over 100 GB of header.
    if let Some(count) = u32::try_from(count)
        .ok()
        .and_then(|c| usize::try_from(c).ok())
    {
        return Ok(count);
    }
    let max = u64::from(u32::MAX);
    Err(Error::at_with(at as u64, || {
        kind.error(count, Shortfall::Limit { max })
    }))
}

/// Which count of the header [`read_count`] reads.
#[derive(Clone, Copy)]
enum Count {
    Tensors,
    Keys,
}

impl Count {
    #[cold]
    fn error(self, count: u64, shortfall: Shortfall) -> ErrorKind {
        match self {
            Count::Tensors => ErrorKind::TensorCountTooLarge { count, shortfall },
            Count::Keys => ErrorKind::KeyCountTooLarge { count, shortfall },
        }
    }
}

use crate::error::EARLY_END;

/// An error in the header (magic, version, counts), saying that the file ends early when the
/// bytes ran out; other errors there are clear as they are.
#[cold]
#[inline(never)]
fn header(e: Error) -> Error {
    if e.is_early_end() {
        reading(e, format_args!("the header"))
    } else {
        e
    }
}

/// Whether `e`, from parsing the first `have` bytes of a file of `size` bytes, only says that
/// the header goes on past them: parse a longer prefix.
pub(crate) fn needs_more(e: &Error, have: u64, size: u64) -> bool {
    have < size && e.code() == crate::error::ErrorCode::Truncated
}

/// Parses `bytes`, the whole file or (when `size` is larger) its first bytes.
fn parse(bytes: &[u8], size: u64) -> Result<Parsed> {
    let (version, order) = read_preamble(bytes, size).map_err(header)?;
    let layout = Layout::new(version, order);
    let len = layout.len_size() as u64;
    let mut r = ByteReader::sized(bytes, 8, layout, size);

    // Smallest encodings: a tensor info with an empty name and no dimensions; a key of one byte
    // with a one-byte value.
    let min_tensor = len + 4 + 4 + 8;
    let min_kv = len + 1 + 4 + 1;
    let tensor_count = read_count(&mut r, "the tensor count", min_tensor, Count::Tensors)?;
    let kv_count = read_count(&mut r, "the key-value count", min_kv, Count::Keys)?;

    let kvs = read_metadata(&mut r, kv_count)?;
    let key_index = NameIndex::build(kvs.len(), |i| kvs[i].key.of(bytes)).map_err(|(a, b)| {
        Error::at_with(kvs[b].at as u64, || ErrorKind::DuplicateKey {
            key: quote(kvs[b].key.of(bytes)),
            first: FirstSeen::AtOffset(kvs[a].at as u64),
        })
    })?;
    let alignment = match key_index.find(ALIGNMENT_KEY, |i| kvs[i].key.of(bytes)) {
        Some(i) => check_alignment(&kvs[i])?,
        None => DEFAULT_ALIGNMENT,
    };

    let n = tensor_count as u64;
    if !r.fits(n, min_tensor) {
        let e = Error::at_with(r.pos() as u64, || {
            Count::Tensors.error(n, r.shortfall(min_tensor))
        });
        return Err(reading(e, format_args!("the tensor infos")));
    }
    let tensors_at = r.pos();
    let infos = read_tensor_infos(bytes, size, tensors_at, tensor_count, layout, alignment)?;
    let TensorInfos {
        tensors,
        end,
        tensor_index,
        in_order,
        max_end,
    } = infos;

    let data_offset = format::align_up(end as u64, alignment).ok_or_else(|| {
        Error::at_with(end as u64, || ErrorKind::SizeOverflow {
            tensor: None,
            what: "data section offset overflows".to_string(),
        })
    })?;
    // The common case, decided without another pass: every tensor ends inside the file, and the
    // data lie in file order without overlapping. Anything else gets the full check, which
    // finds the first offender.
    let all_inside = data_offset
        .checked_add(max_end)
        .is_some_and(|end| end <= size);
    if !(all_inside && in_order) {
        check_tensor_ranges(bytes, size, &tensors, layout, alignment, data_offset)?;
    }

    Ok(Parsed {
        version,
        layout,
        alignment,
        data_offset,
        size,
        kvs,
        tensors,
        key_index,
        tensor_index,
    })
}

fn read_metadata(r: &mut ByteReader<'_>, kv_count: usize) -> Result<Vec<KvRecord>> {
    let mut kvs = Vec::with_capacity(kv_count);
    let (bytes, layout) = (r.bytes(), r.layout());
    for i in 0..kv_count {
        let at = r.pos();
        let entry = |e| entry_error(e, bytes, layout, Entry::Metadata, (at, i, kv_count));
        let key = r.string("the key").map_err(entry)?;
        if key.len == 0 {
            let e = Error::at_with(at as u64, || ErrorKind::EmptyKey { refused: false });
            return Err(entry(e));
        }
        let ty = value::read_value_type(r, "the value type").map_err(entry)?;
        let value = value::read_value(r, ty, "the value").map_err(entry)?;
        kvs.push(KvRecord { at, key, value });
    }
    Ok(kvs)
}

/// What [`entry_error`] names.
#[derive(Clone, Copy)]
enum Entry {
    Metadata,
    Tensor,
}

/// `e`, met while reading metadata entry or tensor info `i` of `n` that starts at `at`, saying
/// which: by its key or name when that much was read, and, when the bytes ran out, that the
/// file ends early. Kept out of the readers (and re-reading the name) so that the loops over
/// thousands of entries carry no extra state.
#[cold]
#[inline(never)]
fn entry_error(
    e: Error,
    bytes: &[u8],
    layout: Layout,
    kind: Entry,
    (at, i, n): (usize, usize, usize),
) -> Error {
    let (what, named, field) = match kind {
        Entry::Metadata => ("metadata entry", "key", "key"),
        Entry::Tensor => ("tensor info", "tensor", "name"),
    };
    let entry = format!("{what} {} of {n} (at offset {at})", i + 1);
    let name = ByteReader::new(bytes, at, layout).string("").ok();
    if !e.is_early_end() {
        // Tensor rules already name the tensor.
        return match (kind, name) {
            (Entry::Metadata, Some(key)) => {
                e.with_context(format_args!("key {}, {entry}", quote(key.of(bytes))))
            }
            (Entry::Metadata, None) => e.with_context(entry),
            (Entry::Tensor, _) => e,
        };
    }
    match name {
        Some(name) => reading(
            e,
            format_args!("{named} {}, {entry}", quote(name.of(bytes))),
        ),
        None => reading(e, format_args!("the {field} of {entry}")),
    }
}

/// `e`, an error met while reading `what`, saying so; and, when the bytes ran out, that the
/// file ends early.
#[cold]
#[inline(never)]
fn reading(e: Error, what: std::fmt::Arguments<'_>) -> Error {
    if e.is_early_end() {
        e.with_context(format_args!("{EARLY_END} while reading {what}"))
    } else {
        e.with_context(what)
    }
}

fn check_alignment(kv: &KvRecord) -> Result<u64> {
    let found = match kv.value {
        RawValue::Scalar {
            ty: ValueType::Uint32,
            bits,
        } => bits,
        other => {
            let found = AlignmentFound::Type(other.value_type());
            let e = Error::at_with(kv.at as u64, || ErrorKind::BadAlignment { found });
            return Err(e.with_context("general.alignment"));
        }
    };
    if !found.is_power_of_two() || found > format::MAX_ALIGNMENT {
        let found = AlignmentFound::Value(found);
        let e = Error::at_with(kv.at as u64, || ErrorKind::BadAlignment { found });
        return Err(e.with_context("general.alignment"));
    }
    Ok(found)
}

/// What the walk over the tensor infos learns.
struct TensorInfos {
    /// Where each tensor info lies.
    tensors: Vec<usize>,
    /// Offset just past the last tensor info.
    end: usize,
    tensor_index: NameIndex,
    /// Whether the tensors with data lie in file order without overlapping.
    in_order: bool,
    /// The largest end of a tensor's data, from the start of the data section (`u64::MAX` if one
    /// overflows).
    max_end: u64,
}

/// Reads and checks `count` tensor infos starting at `at`, hashing their names as it goes, then
/// indexes the names.
/// Errors come in the order a reader meets them: a malformed info first (the first in file
/// order), then a name given twice; ranges are checked by the caller.
fn read_tensor_infos(
    bytes: &[u8],
    size: u64,
    at: usize,
    count: usize,
    layout: Layout,
    alignment: u64,
) -> Result<TensorInfos> {
    let fast = layout.wide && layout.order == ByteOrder::Little;
    #[cfg(test)]
    let fast = fast && !tests::GENERAL_ONLY.get();
    // Positions and hashes are written by place (`count` is bounded by the bytes: `read_count`).
    // The positions are allocated before the index table, the hashes after: in that order the
    // allocator reuses the same memory when files are opened one after another.
    let tensors = vec![0; count];
    let mut index = NameIndex::with_capacity(count);
    let hasher = index.hasher();
    let mut walk = Walk::new(
        bytes,
        size,
        layout,
        alignment,
        hasher,
        tensors,
        vec![0; count],
    );
    let mut pos = at;
    while walk.accepted < count {
        if fast {
            pos = walk.run_le64(pos);
            if walk.accepted == count {
                break;
            }
        }
        let i = walk.accepted;
        // The info the fast walk stopped at (or any, in other layouts): read, checked and its
        // error worded by the general path.
        pos = walk
            .accept_general(pos)
            .map_err(|e| entry_error(e, bytes, layout, Entry::Tensor, (pos, i, count)))?;
    }
    let Walk {
        tensors,
        hashes,
        in_order,
        max_end,
        ..
    } = walk;
    // Names are indexed in file order, so the first duplicate is the one a reader meets.
    let name_of = |k: usize| tensor_name(bytes, tensors[k], layout);
    if let Some((a, b)) = index.insert_all(0, &hashes, |j, k| name_of(j) == name_of(k)) {
        return Err(Error::at_with(tensors[b] as u64, || {
            ErrorKind::DuplicateTensor {
                tensor: quote(tensor_name(bytes, tensors[b], layout)),
                first: FirstSeen::AtOffset(tensors[a] as u64),
            }
        }));
    }
    Ok(TensorInfos {
        tensors,
        end: pos,
        tensor_index: index,
        in_order,
        max_end,
    })
}

/// The state of the walk over the tensor infos.
struct Walk<'a> {
    bytes: &'a [u8],
    /// The file's size (`bytes` may be its first bytes only).
    size: u64,
    layout: Layout,
    alignment: u64,
    /// Each accepted info's position, by its place in the file (`count` entries, the first
    /// `accepted` written).
    tensors: Vec<usize>,
    hasher: NameHasher,
    /// Each accepted name's hash, indexed after the walk (as `tensors`).
    hashes: Vec<u64>,
    accepted: usize,
    in_order: bool,
    prev_end: u64,
    max_end: u64,
}

impl<'a> Walk<'a> {
    /// A walk that writes each info's position and name hash into `tensors` and `hashes` by
    /// its place (their length bounds the infos it accepts).
    fn new(
        bytes: &'a [u8],
        size: u64,
        layout: Layout,
        alignment: u64,
        hasher: NameHasher,
        tensors: Vec<usize>,
        hashes: Vec<u64>,
    ) -> Self {
        Walk {
            bytes,
            size,
            layout,
            alignment,
            tensors,
            hasher,
            hashes,
            accepted: 0,
            in_order: true,
            prev_end: 0,
            max_end: 0,
        }
    }
}

impl Walk<'_> {
    /// Checks one info, hashes its name and notes its data range; returns where it ends.
    #[inline(always)]
    fn accept(&mut self, raw: &RawTensorInfo) -> Result<usize> {
        let (bytes, layout) = (self.bytes, self.layout);
        let size = check_tensor_info(raw, bytes, layout, self.alignment)?.size;
        let i = self.accepted;
        self.hashes[i] = self.hasher.hash(raw.name.of(bytes));
        let end = raw.offset.saturating_add(size);
        if size > 0 {
            self.in_order &= raw.offset >= self.prev_end;
            self.prev_end = end;
        }
        self.max_end = self.max_end.max(end);
        self.tensors[i] = raw.at;
        self.accepted = i + 1;
        Ok(raw.end)
    }
}

/// What the fast walk needs of a tensor type: elements per block minus one (a mask, the count
/// being a power of two), that count as a shift, and bytes per block.
#[derive(Clone, Copy)]
struct FastType {
    block_mask: u64,
    shift: u32,
    bytes: u32,
}

/// [`FastType`] by type id, and one more entry for every id past the table. Ids that the fast
/// walk leaves to the general path (unknown or removed ids, a type whose block is not a power of
/// two elements) have a mask of all ones: no first dimension but 0 passes it, and a tensor with
/// no elements goes to the general path anyway.
#[allow(clippy::cast_possible_truncation)] // `bytes` is checked to fit.
const FAST_TYPES: [FastType; 65] = {
    let other = FastType {
        block_mask: u64::MAX,
        shift: 0,
        bytes: 0,
    };
    let mut table = [other; 65];
    let mut i = 0;
    while i < DataType::ALL.len() {
        let t = DataType::ALL[i];
        let (elems, bytes) = (t.block_elems(), t.block_bytes());
        // At most 8 bytes an element (true of every type ggml defines): the fast walk's bound on
        // the element count then keeps the size below 2^64.
        if elems.is_power_of_two() && bytes <= 8 * elems && (t as usize) < 64 {
            table[t as usize] = FastType {
                block_mask: elems - 1,
                shift: elems.trailing_zeros(),
                bytes: bytes as u32,
            };
        }
        i += 1;
    }
    table
};

/// [`MAX_DIMS`] as a stored dimension count.
#[allow(clippy::cast_possible_truncation)] // 4
const MAX_DIMS_U32: u32 = MAX_DIMS as u32;

/// Per dimension count (0 to 4): for each of the four dimension slots, a mask that keeps the
/// stored word: all ones if the info has that dimension, else 0 (and then the mask + 1, which is
/// 1, takes the word's place).
const KEEP_DIMS: [[u64; MAX_DIMS]; MAX_DIMS + 1] = {
    let mut table = [[0u64; MAX_DIMS]; MAX_DIMS + 1];
    let mut n = 0;
    while n <= MAX_DIMS {
        let mut k = 0;
        while k < n {
            table[n][k] = u64::MAX;
            k += 1;
        }
        n += 1;
    }
    table
};

/// The bits that dimensions 0 to 3 may use in the fast walk: 22 + 22 + 12 + 5 = 61, so the
/// element count is below 2^61 and, at most 8 bytes an element ([`FAST_TYPES`]), the size below
/// 2^64: neither product can overflow, and no product's high half is needed. Any larger
/// dimension (a first or second one of 2^22 and more, over 4095 experts, a fourth over 31) goes
/// to the general path, which checks overflow exactly.
const FAST_DIM_BITS: [u32; MAX_DIMS] = [22, 22, 12, 5];

/// What the fast walk reads of one info from its window: non-zero `broken` if the info breaks a
/// rule (or is left to the general path), its data's size and offset, and how many bytes of the
/// window it uses.
struct FastInfo {
    broken: u64,
    size: u64,
    offset: u64,
    used: usize,
}

/// The fast walk's reading and checks of one info, from `w`, the 48 bytes after its name;
/// `n_dims` is its stored dimension count and `nd` that count, at most [`MAX_DIMS`]. Every rule of
/// [`check_tensor_info`] is folded into one word, with no branch per rule.
///
/// The walk inlines it once for each common dimension count with `nd` a constant, so that each
/// copy loads only its own dimensions, finds the type and offset at fixed places and multiplies
/// no ones: about a fifth fewer instructions a tensor than one copy for every count.
#[inline(always)]
fn read_window(w: &[u8; 48], n_dims: u32, nd: usize, align_mask: u64) -> FastInfo {
    // Dimensions past the count are 1: each is loaded, then kept or replaced through a mask from
    // a table (a table, not a comparison, so that where `nd` is not a constant the compiler makes
    // no branch of it and the loads stay unconditional).
    let keep = &KEEP_DIMS[nd];
    let dim = |k: usize| (window_u64(w, 4 + 8 * k) & keep[k]) | keep[k].wrapping_add(1);
    let type_at = 4 + 8 * nd;
    let type_id = window_u64(w, type_at) & 0xFFFF_FFFF;
    let offset = window_u64(w, type_at + 4);
    let (d0, d1, d2, d3) = (dim(0), dim(1), dim(2), dim(3));
    let t = FAST_TYPES[usize::try_from(type_id.min(64)).unwrap_or(64)];
    let [b0, b1, b2, b3] = FAST_DIM_BITS;
    let too_wide = ((d0 >> b0) | (d1 >> b1)) | ((d2 >> b2) | (d3 >> b3));
    // Exact below the bounds `too_wide` checks. With no dimension 0 the size is the element
    // count over the block, times the block's bytes, exact (the first dimension is a whole number
    // of blocks). Tensors with no elements go to the general path.
    let n_elements = d0.wrapping_mul(d1).wrapping_mul(d2.wrapping_mul(d3));
    let size = (n_elements >> t.shift).wrapping_mul(u64::from(t.bytes));
    // Every rule in one word, non-zero when one is broken: one branch, not one a rule. The first
    // terms are shifts rather than comparisons, and over-strict: they also send the general path
    // dimensions past `FAST_DIM_BITS`.
    let broken = ((u64::from(n_dims) + 3) >> 3) // more than 4 dimensions
        | (n_elements.wrapping_sub(1) >> 63) // no elements
        | too_wide
        | (d0 & t.block_mask)
        | (offset & align_mask);
    FastInfo {
        broken,
        size,
        offset,
        used: type_at + 12,
    }
}

/// The little-endian `u64` at `at` in an info's 48-byte window (`at` is at most 40).
#[inline(always)]
fn window_u64(w: &[u8; 48], at: usize) -> u64 {
    w.get(at..at + 8)
        .and_then(|b| b.first_chunk::<8>())
        .map_or(0, |b| u64::from_le_bytes(*b))
}

impl Walk<'_> {
    /// The walk over tensor infos in the common layout (little-endian, 64-bit lengths), from the
    /// info at `pos` (the one after the `accepted` ones) until every one is accepted: each info
    /// is read from its name and one bounds-checked 48-byte window after it ([`read_window`]),
    /// with one branch for all of [`check_tensor_info`]'s rules; its position and its name's hash
    /// are written in place (no push, no capacity check). Stops, returning
    /// where, at the first info it cannot accept (one that breaks a rule, has no elements, an
    /// unusual type, or lies too near the end of the bytes): the general path then reads that
    /// one, and words its error exactly as for any layout.
    #[inline(never)]
    fn run_le64(&mut self, mut pos: usize) -> usize {
        let bytes = self.bytes;
        let align_mask = self.alignment - 1;
        let hasher = self.hasher;
        let mut prev_end = self.prev_end;
        let done = self.accepted;
        let (tensors, hashes) = (&mut self.tensors[done..], &mut self.hashes[done..]);
        let mut accepted = 0;
        for (at, hash_of) in tensors.iter_mut().zip(hashes.iter_mut()) {
            let Some((len, rest)) = bytes.get(pos..).and_then(|r| r.split_first_chunk::<8>())
            else {
                break;
            };
            let Ok(len) = usize::try_from(u64::from_le_bytes(*len)) else {
                break;
            };
            let Some((name, w)) = rest
                .split_at_checked(len)
                .and_then(|(name, tail)| Some((name, tail.first_chunk::<48>()?)))
            else {
                break;
            };
            let n_dims = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let nd = n_dims.min(MAX_DIMS_U32) as usize;
            // The reading and checks specialized by dimension count ([`read_window`]). Which
            // copy runs follows the file's pattern of shapes, which repeats with each layer; even
            // a random mix of 1 to 3 dimensions opened faster than one copy for all counts.
            let FastInfo {
                broken,
                size,
                offset,
                used,
            } = match n_dims {
                1 => read_window(w, 1, 1, align_mask),
                2 => read_window(w, 2, 2, align_mask),
                3 => read_window(w, 3, 3, align_mask),
                _ => read_window(w, n_dims, nd, align_mask),
            };
            if broken != 0 {
                break;
            }
            let hash = hasher.hash(name);
            // Ends only grow while the data lie in order, so the largest is the last. Data out of
            // order make it `u64::MAX` (and so every later comparison fails too): the largest
            // end then says that the tensors may not lie inside the file, and the full check
            // runs (as it does for an end that overflows).
            prev_end = if offset >= prev_end {
                offset.saturating_add(size)
            } else {
                u64::MAX
            };
            (*at, *hash_of) = (pos, hash);
            accepted += 1;
            pos += 8 + len + used;
        }
        self.accepted = done + accepted;
        (self.prev_end, self.max_end) = (prev_end, self.max_end.max(prev_end));
        pos
    }

    /// [`Walk::accept`] of the info at `at`, read by the general reader (any layout).
    #[inline(never)]
    fn accept_general(&mut self, at: usize) -> Result<usize> {
        let mut r = ByteReader::sized(self.bytes, at, self.layout, self.size);
        let raw = decode_tensor_info(&mut r)?;
        self.accept(&raw)
    }
}

/// Reads and checks the tensor info at `at`; returns it and where it ends.
#[inline(always)]
fn read_tensor_info(
    bytes: &[u8],
    at: usize,
    layout: Layout,
    alignment: u64,
) -> Result<(TensorRecord, usize)> {
    let fast = layout.wide && layout.order == ByteOrder::Little;
    let raw = match fast.then(|| decode_tensor_info_le64(bytes, at)).flatten() {
        Some(raw) => raw,
        None => decode_tensor_info(&mut ByteReader::new(bytes, at, layout))?,
    };
    let c = check_tensor_info(&raw, bytes, layout, alignment)?;
    let t = TensorRecord {
        at: raw.at,
        name: raw.name,
        n_dims: raw.n_dims,
        dims: raw.dims,
        dtype: c.dtype,
        n_elements: c.n_elements,
        offset: raw.offset,
        size: c.size,
    };
    Ok((t, raw.end))
}

/// The name of the tensor info at `at` (one the parse has read).
#[inline]
fn tensor_name(bytes: &[u8], at: usize, layout: Layout) -> &[u8] {
    ByteReader::new(bytes, at, layout)
        .string("a tensor name")
        .map_or(&[][..], |name| name.of(bytes))
}

/// One tensor info's fields as stored, before any check.
#[derive(Debug, PartialEq)]
struct RawTensorInfo {
    /// Offset of the info (its name's length field) and just past it.
    at: usize,
    end: usize,
    name: Span,
    n_dims: u32,
    dims: [u64; MAX_DIMS],
    type_id: u32,
    offset: u64,
}

/// Reads one tensor info in any layout; fails on a truncated info or too many dimensions (past
/// which the info cannot be read).
fn decode_tensor_info(r: &mut ByteReader<'_>) -> Result<RawTensorInfo> {
    let at = r.pos();
    let name = r.string("the tensor name")?;
    let dims_at = r.pos();
    let n_dims = r.u32("the dimension count")?;
    if n_dims as usize > MAX_DIMS {
        return Err(Error::at_with(dims_at as u64, || ErrorKind::TooManyDims {
            tensor: quote(name.of(r.bytes())),
            found: n_dims.into(),
            max: MAX_DIMS,
            refused: false,
        }));
    }
    let mut dims = [1u64; MAX_DIMS];
    for d in dims.iter_mut().take(n_dims as usize) {
        *d = r.len("a dimension")?;
    }
    let type_id = r.u32("the tensor type")?;
    let offset = r.u64("the tensor offset")?;
    Ok(RawTensorInfo {
        at,
        end: r.pos(),
        name,
        n_dims,
        dims,
        type_id,
        offset,
    })
}

/// [`decode_tensor_info`] for the common layout (little-endian, 64-bit lengths): after the name,
/// the rest of an info (dimension count, up to four dimensions, type, offset) is read out of one
/// bounds-checked 48-byte window. `None` sends the info to the general reader, which also words
/// the error when it is truncated or has too many dimensions (and reads the last info of a file
/// that ends less than 48 bytes after its name).
#[inline(always)]
fn decode_tensor_info_le64(bytes: &[u8], at: usize) -> Option<RawTensorInfo> {
    const WINDOW: usize = 4 + 8 * MAX_DIMS + 4 + 8;
    let rest = bytes.get(at..)?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len))
        .ok()
        .filter(|&len| len <= rest.len())?;
    let name = Span { start: at + 8, len };
    let w: &[u8; WINDOW] = rest.get(name.len..)?.first_chunk()?;
    let u64_at = |i: usize| u64::from_le_bytes(w[i..i + 8].try_into().unwrap_or_default());
    let n_dims = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    let n = usize::try_from(n_dims).ok().filter(|&n| n <= MAX_DIMS)?;
    let mut dims = [1u64; MAX_DIMS];
    for (k, d) in dims.iter_mut().enumerate() {
        if k < n {
            *d = u64_at(4 + 8 * k);
        }
    }
    let type_at = 4 + 8 * n;
    Some(RawTensorInfo {
        at,
        end: name.start + name.len + type_at + 4 + 8,
        name,
        n_dims,
        dims,
        type_id: u32::from_le_bytes(w[type_at..type_at + 4].try_into().unwrap_or_default()),
        offset: u64_at(type_at + 4),
    })
}

/// What checking a tensor info finds.
struct Checked {
    dtype: DataType,
    n_elements: u64,
    size: u64,
}

/// Checks one tensor info's rules (element count, type, block multiple, byte size, alignment).
#[inline(always)]
fn check_tensor_info(
    raw: &RawTensorInfo,
    bytes: &[u8],
    layout: Layout,
    alignment: u64,
) -> Result<Checked> {
    let dims = raw.dims;
    let n_elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let dtype = DataType::from_id(raw.type_id);
    let size = dtype.and_then(|t| t.tensor_bytes(&dims));
    // `alignment` is a power of two (checked when it was read).
    let aligned = raw.offset & (alignment - 1) == 0;
    match (n_elements, dtype, size) {
        (Some(n_elements), Some(dtype), Some(size)) if aligned => Ok(Checked {
            dtype,
            n_elements,
            size,
        }),
        _ => Err(tensor_info_error(raw, bytes, layout, alignment)),
    }
}

/// The error for a tensor info that [`check_tensor_info`] refuses: the first rule it breaks, at
/// the offset of the field that breaks it.
#[cold]
#[inline(never)]
fn tensor_info_error(raw: &RawTensorInfo, bytes: &[u8], layout: Layout, alignment: u64) -> Error {
    let tensor = quote(raw.name.of(bytes));
    let dims = raw.dims;
    let dims_at = raw.name.start + raw.name.len;
    let type_at = dims_at + 4 + raw.n_dims as usize * layout.len_size();
    let offset_at = type_at + 4;
    let (at, kind) = if dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_none()
    {
        let what = format!("element count of dimensions {dims:?} overflows 64 bits");
        let tensor = Some(tensor);
        (dims_at, ErrorKind::SizeOverflow { tensor, what })
    } else if let Some(data_type) = DataType::from_id(raw.type_id) {
        if dims[0] % data_type.block_elems() != 0 {
            let first = dims[0];
            let kind = ErrorKind::BadBlockMultiple {
                tensor,
                first,
                data_type,
            };
            (dims_at, kind)
        } else if data_type.tensor_bytes(&dims).is_none() {
            let what = format!(
                "byte size of {} {dims:?} overflows 64 bits",
                data_type.name()
            );
            let tensor = Some(tensor);
            (dims_at, ErrorKind::SizeOverflow { tensor, what })
        } else {
            let kind = ErrorKind::MisalignedOffset {
                tensor,
                alignment,
                found: raw.offset,
            };
            (offset_at, kind)
        }
    } else {
        let kind = ErrorKind::BadDataType {
            tensor,
            found: raw.type_id,
            refused: false,
        };
        (type_at, kind)
    };
    Error::at(at as u64, kind)
}

/// Checks that every tensor's data lies inside the file and that no two tensors' data overlap.
/// Tensors may be listed in any order and have gaps between them (the spec allows both).
fn check_tensor_ranges(
    bytes: &[u8],
    file_size: u64,
    positions: &[usize],
    layout: Layout,
    alignment: u64,
    data_offset: u64,
) -> Result<()> {
    let tensors = positions
        .iter()
        .map(|&at| read_tensor_info(bytes, at, layout, alignment).map(|(t, _)| t))
        .collect::<Result<Vec<TensorRecord>>>()?;
    for t in &tensors {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|start| start.checked_add(t.size));
        if end.is_none_or(|end| end > file_size) {
            // Most often a download cut short: the header is whole, the data is not (the
            // message then says the file ends early).
            return Err(Error::at_with(t.at as u64, || ErrorKind::DataOutOfBounds {
                tensor: quote(t.name.of(bytes)),
                end,
                file_size,
            }));
        }
    }
    // The tensor count fits in u32 (`read_count`).
    let mut by_offset: Vec<u32> = (0..tensors.len())
        .filter(|&i| tensors[i].size > 0)
        .map(|i| u32::try_from(i).expect("read_count keeps counts within u32"))
        .collect();
    by_offset.sort_unstable_by_key(|&i| tensors[i as usize].offset);
    for pair in by_offset.windows(2) {
        let (a, b) = (&tensors[pair[0] as usize], &tensors[pair[1] as usize]);
        if a.offset + a.size > b.offset {
            return Err(Error::at_with(b.at as u64, || ErrorKind::DataOverlap {
                tensor: quote(b.name.of(bytes)),
                range: (b.offset, b.offset + b.size),
                other: quote(a.name.of(bytes)),
                other_range: (a.offset, a.offset + a.size),
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to read every tensor info with the general path on its thread.
        pub(super) static GENERAL_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    /// What opening `bytes` gives: every tensor's fields and the file's facts, or the error.
    pub(super) fn outcome(
        bytes: &[u8],
    ) -> std::result::Result<String, (ErrorCode, Option<u64>, String)> {
        match GgufFile::from_bytes(bytes) {
            Ok(g) => {
                let mut s = format!(
                    "{} {} {}\n",
                    g.data_offset(),
                    g.tensor_count(),
                    g.tensor_name_bytes()
                );
                for (i, t) in g.tensors().enumerate() {
                    assert_eq!(g.tensor_index(t.name), Some(i));
                    s += &format!("{t:?}\n");
                }
                Ok(s)
            }
            Err(e) => Err((e.code(), e.offset(), e.message().to_string())),
        }
    }

    /// [`outcome`] with the general path only.
    pub(super) fn general_outcome(
        bytes: &[u8],
    ) -> std::result::Result<String, (ErrorCode, Option<u64>, String)> {
        GENERAL_ONLY.set(true);
        let o = outcome(bytes);
        GENERAL_ONLY.set(false);
        o
    }

    /// A version-3 little-endian file with these tensor infos (name, dims, type, offset) and
    /// `data` zero bytes after the aligned header.
    pub(super) fn file(infos: &[(&str, &[u64], u32, u64)], data: usize) -> Vec<u8> {
        let mut f = b"GGUF".to_vec();
        f.extend_from_slice(&3u32.to_le_bytes());
        f.extend_from_slice(&(infos.len() as u64).to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        for (name, dims, ty, offset) in infos {
            f.extend_from_slice(&(name.len() as u64).to_le_bytes());
            f.extend_from_slice(name.as_bytes());
            f.extend_from_slice(&u32::try_from(dims.len()).unwrap().to_le_bytes());
            for d in *dims {
                f.extend_from_slice(&d.to_le_bytes());
            }
            f.extend_from_slice(&ty.to_le_bytes());
            f.extend_from_slice(&offset.to_le_bytes());
        }
        f.resize(f.len().div_ceil(32) * 32 + data, 0);
        f
    }

    use crate::error::ErrorCode;

    fn refused(bytes: &[u8]) -> (ErrorCode, Option<u64>, String) {
        let e = parse(bytes, bytes.len() as u64).err().expect("refused");
        (e.code(), e.offset(), e.message().to_string())
    }

    #[test]
    fn the_fast_decoder_reads_what_the_general_reader_reads() {
        let base = file(
            &[
                ("token_embd.weight", &[64, 4], 8, 0),
                ("blk.0.ffn_up.7.weight", &[256], 12, 288),
                ("s", &[], 0, 448),
                ("blk.0.attn_q.weight", &[32, 2, 1, 3], 1, 480),
            ],
            1024,
        );
        let layout = Layout::new(3, ByteOrder::Little);
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut agreed = 0;
        for round in 0..4000 {
            let mut bytes = base.clone();
            if round > 0 {
                // Change one to three bytes of the tensor infos.
                for _ in 0..1 + round % 3 {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let span = (base.len() - 1024 - 24) as u64;
                    let at = 24 + usize::try_from((rng >> 8) % span).unwrap();
                    bytes[at] = (rng >> 40).to_le_bytes()[0];
                }
                bytes.truncate(bytes.len() - usize::try_from((rng >> 20) % 1100).unwrap());
            }
            let mut at = 24;
            while at < bytes.len() {
                let general = decode_tensor_info(&mut ByteReader::new(&bytes, at, layout));
                match decode_tensor_info_le64(&bytes, at) {
                    Some(fast) => {
                        assert_eq!(Some(&fast), general.as_ref().ok(), "round {round}");
                        agreed += 1;
                        at = fast.end;
                    }
                    None => break,
                }
            }
        }
        assert!(agreed > 4000, "only {agreed} infos decoded");
    }

    #[test]
    fn the_fast_walk_accepts_and_refuses_what_the_general_path_does() {
        // Infos that stress each rule the fast walk folds into one word, each at the edge.
        let edge: &[(&str, &[u64], u32, u64)] = &[
            ("zero", &[0, u64::MAX, 2], 0, 0),
            ("zero-last", &[1 << 40, 1 << 40, 0], 0, 0),
            ("rowbytes-overflow", &[1 << 62, 0], 0, 0),
            ("q4k-rows-no-overflow", &[1 << 63, 0], 12, 0),
            ("elements-overflow", &[1 << 32, 1 << 32], 0, 0),
            ("bytes-overflow", &[1 << 62, 2], 1, 0),
            ("bytes-edge", &[1 << 61, 1], 0, 0),
            ("q4k-blocks", &[256 * 3, 5], 12, 0),
            ("q4k-not-blocks", &[300], 12, 0),
            ("no-dims-q8", &[], 8, 0),
            ("no-dims-f32", &[], 0, 0),
            ("removed-type", &[8], 4, 0),
            ("type-63", &[8], 63, 0),
            ("type-64", &[8], 64, 0),
            ("type-huge", &[8], u32::MAX, 0),
            ("misaligned", &[8], 0, 16),
            ("four-dims", &[2, 3, 4, 5], 0, 0),
            // Each side of `FAST_DIM_BITS`, dimension by dimension.
            ("dim0-below-bound", &[(1 << 22) - 1, 1 << 21], 0, 0),
            ("dim0-at-bound", &[1 << 22, 3], 0, 0),
            ("dim1-at-bound", &[32, 1 << 22], 8, 0),
            ("dim2-below-bound", &[2, 3, 4095, 31], 0, 0),
            ("dim2-at-bound", &[2, 3, 4096], 0, 0),
            ("dim3-at-bound", &[2, 3, 4, 32], 0, 0),
            ("wide-f64", &[(1 << 22) - 1, (1 << 22) - 1, 4095, 31], 28, 0),
            // Products that wrap to a count or a size small enough to fit in the file: 2^64 + 2
            // elements, and 2^61 + 2 elements of 8 bytes.
            ("elements-wrap", &[26_563_938, 694_428_065_361], 0, 0),
            ("bytes-wrap", &[14_865_121, 155_117_675_074], 28, 0),
        ];
        for info in edge {
            // After an ordinary info, its data after that info's (in order, so that what the
            // fast walk accepts is not checked again), and before one (so that the walk goes on
            // after it).
            let (name, dims, ty, offset) = *info;
            for infos in [
                vec![("a", &[8][..], 0, 0), (name, dims, ty, offset + 32)],
                vec![*info, ("z", &[8][..], 0, 0)],
            ] {
                let bytes = file(&infos, 64);
                assert_eq!(outcome(&bytes), general_outcome(&bytes), "{info:?}");
            }
        }
        // Random changes to the infos of a small file, as in the decoder test above.
        let base = file(
            &[
                ("token_embd.weight", &[64, 4], 8, 0),
                ("blk.0.ffn_up.7.weight", &[256], 12, 288),
                ("s", &[], 0, 448),
                ("blk.0.attn_q.weight", &[32, 2, 1, 3], 1, 480),
                ("blk.0.attn_k.weight", &[32], 0, 896),
            ],
            1024,
        );
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let (mut opened, mut refused) = (0, 0);
        for round in 0..6000 {
            let mut bytes = base.clone();
            for _ in 0..1 + round % 3 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let span = (base.len() - 1024 - 24) as u64;
                let at = 24 + usize::try_from((rng >> 8) % span).unwrap();
                bytes[at] = (rng >> 40).to_le_bytes()[0];
            }
            if round % 5 == 0 {
                bytes.truncate(bytes.len() - usize::try_from((rng >> 20) % 1100).unwrap());
            }
            let fast = outcome(&bytes);
            assert_eq!(fast, general_outcome(&bytes), "round {round}");
            if fast.is_ok() {
                opened += 1;
            } else {
                refused += 1;
            }
        }
        assert!(
            opened > 500 && refused > 500,
            "{opened} opened, {refused} refused"
        );
    }

    #[test]
    fn names_that_all_hash_alike_are_indexed_and_told_apart() {
        let names: Vec<String> = (0..300).map(|i| format!("blk.{i}.attn_q.weight")).collect();
        let infos: Vec<(&str, &[u64], u32, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), &[8u64][..], 0, 32 * i as u64))
            .collect();
        let bytes = file(&infos, 32 * names.len());
        crate::index::tests::COLLIDE.set(true);
        let g = GgufFile::from_bytes(&bytes[..]).unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(g.tensor_index(n), Some(i));
            assert_eq!(g.tensor(n).unwrap().offset, 32 * i as u64);
        }
        assert_eq!(g.tensor_index("blk.300.attn_q.weight"), None);
        // A name given twice among them is still refused, naming both infos.
        let mut dup = infos.clone();
        dup[200].0 = names[100].as_str();
        let (code, offset, message) = refused(&file(&dup, 32 * names.len()));
        crate::index::tests::COLLIDE.set(false);
        assert_eq!(code, ErrorCode::DuplicateTensor);
        let at = |i: usize| {
            24 + (0..i)
                .map(|k| 8 + dup[k].0.len() + 4 + 8 + 4 + 8)
                .sum::<usize>()
        };
        assert_eq!(offset, Some(at(200) as u64));
        assert_eq!(
            message,
            format!(
                "tensor 'blk.100.attn_q.weight' appears twice (first at offset {})",
                at(100)
            )
        );
    }

    #[test]
    fn out_of_order_data_is_checked_in_offset_order() {
        // Accepted out of order, with gaps and empty tensors in between.
        let ok = file(
            &[
                ("c", &[8], 0, 64),
                ("empty", &[0], 0, 64),
                ("a", &[8], 0, 0),
                ("b", &[8], 0, 32),
            ],
            96,
        );
        let g = GgufFile::from_bytes(&ok[..]).unwrap();
        assert_eq!(g.tensor("b").unwrap().offset, 32);
        assert_eq!(g.tensor_index("a"), Some(2));
        // Overlaps found whatever the order: the later of the pair by offset is named.
        for infos in [
            [("a", &[16][..], 0, 0), ("b", &[8][..], 0, 32)],
            [("b", &[8][..], 0, 32), ("a", &[16][..], 0, 0)],
        ] {
            let (code, _, message) = refused(&file(&infos, 96));
            assert_eq!(code, ErrorCode::DataOverlap);
            assert!(
                message.starts_with("tensor 'b' data [32, 64) overlaps tensor 'a'"),
                "{message}"
            );
        }
        // The first tensor in file order whose data end past the file is named.
        let f = file(
            &[
                ("in", &[8], 0, 0),
                ("out1", &[8], 0, 64),
                ("out2", &[16], 0, 32),
            ],
            32,
        );
        let (code, offset, message) = refused(&f);
        assert_eq!(code, ErrorCode::DataOutOfBounds);
        assert_eq!(offset, Some(24 + 8 + 2 + 4 + 8 + 4 + 8));
        assert!(
            message.starts_with("the file ends early (truncated?): tensor 'out1' data ends at"),
            "{message}"
        );
    }

    #[test]
    fn a_malformed_info_is_reported_before_an_earlier_duplicate_name() {
        let (code, offset, _) = refused(&file(
            &[("a", &[8], 0, 0), ("a", &[8], 0, 32), ("b", &[8], 99, 64)],
            96,
        ));
        assert_eq!(code, ErrorCode::BadDataType);
        let type_at = 24 + 2 * (8 + 1 + 4 + 8 + 4 + 8) + 8 + 1 + 4 + 8;
        assert_eq!(offset, Some(type_at as u64));
        let (code, offset, message) = refused(&file(
            &[("a", &[8], 0, 0), ("b", &[8], 0, 32), ("a", &[8], 0, 64)],
            96,
        ));
        assert_eq!(code, ErrorCode::DuplicateTensor);
        assert_eq!(offset, Some(24 + 2 * (8 + 1 + 4 + 8 + 4 + 8)));
        assert_eq!(message, "tensor 'a' appears twice (first at offset 24)");
    }

    #[test]
    fn many_tensors_are_indexed_and_read_back() {
        let names: Vec<String> = (0..3000)
            .map(|i| format!("blk.{}.ffn_up.{}.weight", i / 64, i % 64))
            .collect();
        let infos: Vec<(&str, &[u64], u32, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), &[8u64][..], 0, 32 * i as u64))
            .collect();
        let bytes = file(&infos, 32 * names.len());
        let g = GgufFile::from_bytes(&bytes[..]).unwrap();
        assert_eq!(g.tensor_count(), names.len());
        for (i, n) in names.iter().enumerate() {
            let t = g.tensor(n).unwrap();
            assert_eq!(
                (t.name, t.offset, t.size),
                (n.as_bytes(), 32 * i as u64, 32)
            );
        }
        assert!(g.tensor("blk.0.ffn_up.64.weight").is_none());
    }
}
