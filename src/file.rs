//! The parsed file: one walk over the header that checks every rule of the format and records
//! where each key, value and tensor lies, then zero-copy accessors over those positions.

use crate::error::{Error, ErrorCode, Result};
use crate::format::{self, ByteOrder, Layout, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_DIMS};
use crate::index::NameIndex;
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

/// One tensor info, checked.
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
    /// The data, exactly `size` bytes, as stored (file byte order).
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
    kvs: Vec<KvRecord>,
    tensors: Vec<TensorRecord>,
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
    /// Parses `source`, checking every rule of the format.
    pub fn from_bytes(source: S) -> Result<GgufFile<S>> {
        let parsed = parse(source.as_ref())?;
        Ok(GgufFile { source, parsed })
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
        self.bytes().len() as u64
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

    /// The `index`-th tensor in file order.
    pub fn tensor_at(&self, index: usize) -> Option<TensorInfo<'_>> {
        let t = self.parsed.tensors.get(index)?;
        let file_offset = self.parsed.data_offset + t.offset;
        // In bounds: checked when the file was parsed.
        let start = file_offset as usize;
        let data = self.bytes().get(start..start + t.size as usize)?;
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
        let bytes = self.bytes();
        let tensors = &self.parsed.tensors;
        self.parsed
            .tensor_index
            .find(name.as_ref(), |i| tensors[i].name.of(bytes))
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: impl AsRef<[u8]>) -> Option<TensorInfo<'_>> {
        self.tensor_index(name).and_then(|i| self.tensor_at(i))
    }

    pub(crate) fn kv_records(&self) -> &[KvRecord] {
        &self.parsed.kvs
    }

    pub(crate) fn layout(&self) -> Layout {
        self.parsed.layout
    }
}

/// Names from the file are quoted for messages by one function, which escapes them.
pub(crate) use crate::error::quote;

/// Reads the magic and version; returns the version and byte order.
fn read_preamble(bytes: &[u8]) -> Result<(u32, ByteOrder)> {
    let probe = Layout::new(3, ByteOrder::Little);
    let mut r = ByteReader::new(bytes, 0, probe);
    let magic = r.take(4, "the magic")?;
    if magic != format::MAGIC {
        return Err(Error::at(
            ErrorCode::BadMagic,
            0,
            format!(
                "expected magic 'GGUF' (47 47 55 46), found {:02x} {:02x} {:02x} {:02x}",
                magic[0], magic[1], magic[2], magic[3]
            ),
        ));
    }
    let raw = r.u32("the version")?;
    let supported = format::MIN_VERSION..=format::MAX_VERSION;
    if supported.contains(&raw) {
        Ok((raw, ByteOrder::Little))
    } else if supported.contains(&raw.swap_bytes()) {
        Ok((raw.swap_bytes(), ByteOrder::Big))
    } else {
        Err(Error::at(
            ErrorCode::UnsupportedVersion,
            4,
            format!("expected version 1, 2 or 3, found {raw}"),
        ))
    }
}

/// Reads a count from the header and checks that `count` entries of at least `min_size` bytes
/// each could fit in the rest of the file, before anything is allocated for them.
fn read_count(r: &mut ByteReader<'_>, what: &str, min_size: u64, code: ErrorCode) -> Result<usize> {
    let at = r.pos();
    let count = r.len(what).map_err(header)?;
    if !r.fits(count, min_size) {
        let e = r.too_many(code, at, format_args!("{what} is {count}"), count, min_size);
        return Err(header(e));
    }
    // Positions are kept as u32 in places; a file this large would need over 100 GB of header.
    if count > u64::from(u32::MAX) {
        return Err(Error::at(
            code,
            at as u64,
            format!(
                "{what} is {count}, more than the {} this library reads",
                u32::MAX
            ),
        ));
    }
    Ok(count as usize)
}

/// How a message starts when the bytes run out before what the file declares.
const EARLY_END: &str = "the file ends early (truncated?)";

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

fn parse(bytes: &[u8]) -> Result<Parsed> {
    let (version, order) = read_preamble(bytes).map_err(header)?;
    let layout = Layout::new(version, order);
    let len = layout.len_size() as u64;
    let mut r = ByteReader::new(bytes, 8, layout);

    // Smallest encodings: a tensor info with an empty name and no dimensions; a key of one byte
    // with a one-byte value.
    let min_tensor = len + 4 + 4 + 8;
    let min_kv = len + 1 + 4 + 1;
    let tensor_count = read_count(
        &mut r,
        "the tensor count",
        min_tensor,
        ErrorCode::TensorCountTooLarge,
    )?;
    let kv_count = read_count(
        &mut r,
        "the key-value count",
        min_kv,
        ErrorCode::KeyCountTooLarge,
    )?;

    let kvs = read_metadata(&mut r, kv_count)?;
    let key_index = NameIndex::build(kvs.len(), |i| kvs[i].key.of(bytes)).map_err(|(a, b)| {
        Error::at(
            ErrorCode::DuplicateKey,
            kvs[b].at as u64,
            format!(
                "key {} appears twice (first at offset {})",
                quote(kvs[b].key.of(bytes)),
                kvs[a].at
            ),
        )
    })?;
    let alignment = match key_index.find(ALIGNMENT_KEY, |i| kvs[i].key.of(bytes)) {
        Some(i) => check_alignment(&kvs[i])?,
        None => DEFAULT_ALIGNMENT,
    };

    let n = tensor_count as u64;
    if !r.fits(n, min_tensor) {
        let e = r.too_many(
            ErrorCode::TensorCountTooLarge,
            r.pos(),
            format_args!("the tensor count is {n}"),
            n,
            min_tensor,
        );
        return Err(reading(e, format_args!("the tensor infos")));
    }
    let mut tensors = Vec::with_capacity(tensor_count);
    for i in 0..tensor_count {
        let at = r.pos();
        let t = read_tensor_info(&mut r, alignment)
            .map_err(|e| entry_error(e, bytes, layout, Entry::Tensor, (at, i, tensor_count)))?;
        tensors.push(t);
    }
    let tensor_index =
        NameIndex::build(tensors.len(), |i| tensors[i].name.of(bytes)).map_err(|(a, b)| {
            Error::at(
                ErrorCode::DuplicateTensor,
                tensors[b].at as u64,
                format!(
                    "tensor {} appears twice (first at offset {})",
                    quote(tensors[b].name.of(bytes)),
                    tensors[a].at
                ),
            )
        })?;

    let data_offset = format::align_up(r.pos() as u64, alignment).ok_or_else(|| {
        Error::at(
            ErrorCode::SizeOverflow,
            r.pos() as u64,
            "data section offset overflows",
        )
    })?;
    check_tensor_ranges(bytes, &tensors, data_offset)?;

    Ok(Parsed {
        version,
        layout,
        alignment,
        data_offset,
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
            return Err(entry(Error::at(
                ErrorCode::EmptyKey,
                at as u64,
                "expected a non-empty key, found length 0",
            )));
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
                e.context(format_args!("key {}, {entry}", quote(key.of(bytes))))
            }
            (Entry::Metadata, None) => e.context(entry),
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
        e.context(format_args!("{EARLY_END} while reading {what}"))
    } else {
        e.context(what)
    }
}

fn check_alignment(kv: &KvRecord) -> Result<u64> {
    let found = match kv.value {
        RawValue::Scalar {
            ty: ValueType::Uint32,
            bits,
        } => bits,
        other => {
            return Err(Error::at(
                ErrorCode::BadAlignment,
                kv.at as u64,
                format!(
                    "general.alignment: expected a UINT32, found a {}",
                    other.value_type().name()
                ),
            ))
        }
    };
    if !found.is_power_of_two() || found > format::MAX_ALIGNMENT {
        return Err(Error::at(
            ErrorCode::BadAlignment,
            kv.at as u64,
            format!(
                "general.alignment: expected a power of two from 1 to {}, found {found}",
                format::MAX_ALIGNMENT
            ),
        ));
    }
    Ok(found)
}

fn read_tensor_info(r: &mut ByteReader<'_>, alignment: u64) -> Result<TensorRecord> {
    let at = r.pos();
    let name = r.string("the tensor name")?;
    let bytes = r.bytes();
    let named = |code, at: usize, msg: String| {
        Error::at(
            code,
            at as u64,
            format!("tensor {}: {msg}", quote(name.of(bytes))),
        )
    };
    let dims_at = r.pos();
    let n_dims = r.u32("the dimension count")?;
    if n_dims as usize > MAX_DIMS {
        return Err(named(
            ErrorCode::TooManyDims,
            dims_at,
            format!("expected at most {MAX_DIMS} dimensions, found {n_dims}"),
        ));
    }
    let mut dims = [1u64; MAX_DIMS];
    for d in dims.iter_mut().take(n_dims as usize) {
        *d = r.len("a dimension")?;
    }
    let n_elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let type_at = r.pos();
    let type_id = r.u32("the tensor type")?;
    let offset_at = r.pos();
    let offset = r.u64("the tensor offset")?;

    let Some(n_elements) = n_elements else {
        return Err(named(
            ErrorCode::SizeOverflow,
            dims_at,
            format!("element count of dimensions {dims:?} overflows 64 bits"),
        ));
    };
    let Some(dtype) = DataType::from_id(type_id) else {
        return Err(named(
            ErrorCode::BadDataType,
            type_at,
            format!("expected a ggml data type, found unknown or removed type {type_id}"),
        ));
    };
    if dims[0] % dtype.block_elems() != 0 {
        return Err(named(
            ErrorCode::BadBlockMultiple,
            dims_at,
            format!(
                "first dimension {} is not a multiple of {}'s block size {}",
                dims[0],
                dtype.name(),
                dtype.block_elems()
            ),
        ));
    }
    let Some(size) = dtype.tensor_bytes(&dims) else {
        return Err(named(
            ErrorCode::SizeOverflow,
            dims_at,
            format!("byte size of {} {dims:?} overflows 64 bits", dtype.name()),
        ));
    };
    if offset % alignment != 0 {
        return Err(named(
            ErrorCode::MisalignedOffset,
            offset_at,
            format!("expected an offset that is a multiple of {alignment}, found {offset}"),
        ));
    }
    Ok(TensorRecord {
        at,
        name,
        n_dims,
        dims,
        dtype,
        n_elements,
        offset,
        size,
    })
}

/// Checks that every tensor's data lies inside the file and that no two tensors' data overlap.
/// Tensors may be listed in any order and have gaps between them (the spec allows both).
fn check_tensor_ranges(bytes: &[u8], tensors: &[TensorRecord], data_offset: u64) -> Result<()> {
    let file_size = bytes.len() as u64;
    for t in tensors {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|start| start.checked_add(t.size));
        if end.is_none_or(|end| end > file_size) {
            let (shown, early) = match end {
                // Most often a download cut short: the header is whole, the data is not.
                Some(end) => (end.to_string(), format!("{EARLY_END}: ")),
                None => ("beyond 2^64".to_string(), String::new()),
            };
            return Err(Error::at(
                ErrorCode::DataOutOfBounds,
                t.at as u64,
                format!(
                    "{early}tensor {} data ends at {shown}, past the end of the file \
                     ({file_size} bytes)",
                    quote(t.name.of(bytes))
                ),
            ));
        }
    }
    let mut by_offset: Vec<u32> = (0..tensors.len() as u32)
        .filter(|&i| tensors[i as usize].size > 0)
        .collect();
    by_offset.sort_unstable_by_key(|&i| tensors[i as usize].offset);
    for pair in by_offset.windows(2) {
        let (a, b) = (&tensors[pair[0] as usize], &tensors[pair[1] as usize]);
        if a.offset + a.size > b.offset {
            return Err(Error::at(
                ErrorCode::DataOverlap,
                b.at as u64,
                format!(
                    "tensor {} data [{}, {}) overlaps tensor {} data [{}, {})",
                    quote(b.name.of(bytes)),
                    b.offset,
                    b.offset + b.size,
                    quote(a.name.of(bytes)),
                    a.offset,
                    a.offset + a.size
                ),
            ));
        }
    }
    Ok(())
}
