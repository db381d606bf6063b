//! The writer: builds GGUF files with any metadata (all 13 value types, nested arrays) and
//! tensors of any data type, in any supported version and byte order. It refuses what the reader
//! would refuse, so everything it writes opens.

use crate::atomic_file::AtomicFile;
use crate::error::{AlignmentFound, Error, ErrorCode, ErrorKind, FirstSeen, Result};
use crate::file::GgufFile;
use crate::format::{self, ByteOrder, Layout, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_DIMS};
use crate::reader::ByteReader;
use crate::types::{DataType, ValueType};
use crate::value::{read_value, Value};
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::io::Write;
use std::path::Path;

/// An owned metadata value, for writing.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataValue {
    /// UINT8.
    U8(u8),
    /// INT8.
    I8(i8),
    /// UINT16.
    U16(u16),
    /// INT16.
    I16(i16),
    /// UINT32.
    U32(u32),
    /// INT32.
    I32(i32),
    /// FLOAT32.
    F32(f32),
    /// BOOL.
    Bool(bool),
    /// STRING (any bytes).
    String(Vec<u8>),
    /// ARRAY: the element type and the elements, each of that type.
    Array(ValueType, Vec<MetadataValue>),
    /// UINT64.
    U64(u64),
    /// INT64.
    I64(i64),
    /// FLOAT64.
    F64(f64),
}

impl MetadataValue {
    /// A string value.
    pub fn string(s: impl AsRef<[u8]>) -> MetadataValue {
        MetadataValue::String(s.as_ref().to_vec())
    }

    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        use MetadataValue::*;
        match self {
            U8(_) => ValueType::Uint8,
            I8(_) => ValueType::Int8,
            U16(_) => ValueType::Uint16,
            I16(_) => ValueType::Int16,
            U32(_) => ValueType::Uint32,
            I32(_) => ValueType::Int32,
            F32(_) => ValueType::Float32,
            Bool(_) => ValueType::Bool,
            String(_) => ValueType::String,
            Array(..) => ValueType::Array,
            U64(_) => ValueType::Uint64,
            I64(_) => ValueType::Int64,
            F64(_) => ValueType::Float64,
        }
    }

    /// Checks that every array's elements have the array's element type and that arrays nest
    /// no deeper than the reader accepts.
    fn check(&self, depth: usize) -> Result<()> {
        if let MetadataValue::Array(elem, items) = self {
            if depth > format::MAX_ARRAY_DEPTH {
                return Err(Error::new(ErrorKind::ArrayTooDeep {
                    max: format::MAX_ARRAY_DEPTH,
                }));
            }
            for item in items {
                if item.value_type() != *elem {
                    return Err(Error::new(ErrorKind::MixedArray {
                        elem: *elem,
                        found: item.value_type(),
                    }));
                }
                item.check(depth + 1)?;
            }
        }
        Ok(())
    }
}

impl From<Value<'_>> for MetadataValue {
    fn from(value: Value<'_>) -> MetadataValue {
        match value {
            Value::U8(v) => MetadataValue::U8(v),
            Value::I8(v) => MetadataValue::I8(v),
            Value::U16(v) => MetadataValue::U16(v),
            Value::I16(v) => MetadataValue::I16(v),
            Value::U32(v) => MetadataValue::U32(v),
            Value::I32(v) => MetadataValue::I32(v),
            Value::F32(v) => MetadataValue::F32(v),
            Value::Bool(v) => MetadataValue::Bool(v),
            Value::String(s) => MetadataValue::String(s.to_vec()),
            Value::Array(a) => {
                MetadataValue::Array(a.elem_type(), a.iter().map(MetadataValue::from).collect())
            }
            Value::U64(v) => MetadataValue::U64(v),
            Value::I64(v) => MetadataValue::I64(v),
            Value::F64(v) => MetadataValue::F64(v),
        }
    }
}

/// A metadata value as the writer keeps it.
#[derive(Clone, Debug)]
enum Stored {
    /// A value the caller gave.
    Value(MetadataValue),
    /// An array copied from a file, kept as the file encodes its elements (one buffer, not one
    /// allocation per element or string), re-encoded only if the file written has another
    /// layout (version width or byte order).
    Encoded {
        elem: ValueType,
        count: u64,
        bytes: Vec<u8>,
        layout: Layout,
    },
}

impl Stored {
    fn value_type(&self) -> ValueType {
        match self {
            Stored::Value(v) => v.value_type(),
            Stored::Encoded { .. } => ValueType::Array,
        }
    }
}

struct PendingTensor {
    name: Vec<u8>,
    dims: Vec<u64>,
    dtype: DataType,
    size: u64,
    /// `None` for a tensor whose data the caller streams after the header.
    data: Option<Vec<u8>>,
}

/// Builds a GGUF file in memory and writes it out.
pub struct Writer {
    version: u32,
    order: ByteOrder,
    kvs: Vec<(Vec<u8>, Stored)>,
    tensors: Vec<PendingTensor>,
    /// Positions in `tensors`, by name: adding a tensor checks for a duplicate in constant time.
    names: TensorNames,
    /// Whether files written are flushed to stable storage before they replace the destination.
    sync: bool,
}

/// Tensor positions found by name; the names stay in the tensors.
#[derive(Default)]
struct TensorNames {
    table: HashTable<usize>,
    hasher: RandomState,
}

impl TensorNames {
    fn find(&self, tensors: &[PendingTensor], name: &[u8]) -> Option<usize> {
        self.table
            .find(self.hasher.hash_one(name), |&i| tensors[i].name == name)
            .copied()
    }

    /// Records that the last of `tensors` is at its position (its name is not yet recorded).
    fn push(&mut self, tensors: &[PendingTensor]) {
        let i = tensors.len() - 1;
        let hasher = &self.hasher;
        self.table
            .insert_unique(hasher.hash_one(&tensors[i].name[..]), i, |&j| {
                hasher.hash_one(&tensors[j].name[..])
            });
    }

    fn of(tensors: &[PendingTensor]) -> TensorNames {
        let mut names = TensorNames::default();
        for i in 1..=tensors.len() {
            names.push(&tensors[..i]);
        }
        names
    }
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("version", &self.version)
            .field("order", &self.order)
            .field("metadata", &self.kvs.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

impl Writer {
    /// A writer for a little-endian version 3 file with the default alignment.
    pub fn new() -> Writer {
        Writer {
            version: format::MAX_VERSION,
            order: ByteOrder::Little,
            kvs: Vec::new(),
            tensors: Vec::new(),
            names: TensorNames::default(),
            sync: true,
        }
    }

    /// Whether [`Writer::write_file`] flushes the file to stable storage (fsync of the file,
    /// then of its directory after the rename). On by default; turn it off for scratch outputs,
    /// where speed matters more than surviving a power cut. The replace stays atomic either way.
    pub fn set_sync(&mut self, sync: bool) -> &mut Writer {
        self.sync = sync;
        self
    }

    /// Whether files are synced (see [`Writer::set_sync`]).
    pub fn sync(&self) -> bool {
        self.sync
    }

    /// Sets the format version (1, 2 or 3).
    pub fn set_version(&mut self, version: u32) -> Result<&mut Writer> {
        if !(format::MIN_VERSION..=format::MAX_VERSION).contains(&version) {
            return Err(Error::new(ErrorKind::UnsupportedVersion { found: version }));
        }
        self.version = version;
        Ok(self)
    }

    /// Sets the byte order of every number written. Tensor data is written as given.
    pub fn set_byte_order(&mut self, order: ByteOrder) -> &mut Writer {
        self.order = order;
        self
    }

    /// Sets the alignment by adding (or replacing) `general.alignment`.
    pub fn set_alignment(&mut self, alignment: u32) -> Result<&mut Writer> {
        let a = u64::from(alignment);
        if !a.is_power_of_two() || a > format::MAX_ALIGNMENT {
            let found = AlignmentFound::Value(a);
            return Err(Error::new(ErrorKind::BadAlignment { found }));
        }
        let value = Stored::Value(MetadataValue::U32(alignment));
        match self.kvs.iter_mut().find(|(k, _)| k == ALIGNMENT_KEY) {
            Some(entry) => entry.1 = value,
            None => self.kvs.push((ALIGNMENT_KEY.to_vec(), value)),
        }
        Ok(self)
    }

    /// The alignment tensor data will have.
    pub fn alignment(&self) -> u64 {
        self.kvs
            .iter()
            .find_map(|(k, v)| match v {
                Stored::Value(MetadataValue::U32(a)) if k == ALIGNMENT_KEY => Some(u64::from(*a)),
                _ => None,
            })
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Adds a metadata entry. Keys must be non-empty and unique; array elements must have the
    /// array's element type; `general.alignment` must be a valid alignment.
    pub fn add_metadata(
        &mut self,
        key: impl AsRef<[u8]>,
        value: MetadataValue,
    ) -> Result<&mut Writer> {
        let key = key.as_ref();
        if key.is_empty() {
            return Err(Error::new(ErrorKind::EmptyKey { refused: true }));
        }
        if self.kvs.iter().any(|(k, _)| k == key) {
            return Err(Error::new(ErrorKind::DuplicateKey {
                key: crate::text::quote(key),
                first: FirstSeen::Given,
            }));
        }
        value.check(1)?;
        if key == ALIGNMENT_KEY {
            return self.set_alignment(alignment_value(value)?);
        }
        self.kvs.push((key.to_vec(), Stored::Value(value)));
        Ok(self)
    }

    /// Sets a metadata entry: replaces the value of an existing key where it stands, or adds the
    /// key at the end. The same checks as [`Writer::add_metadata`].
    pub fn set_metadata(
        &mut self,
        key: impl AsRef<[u8]>,
        value: MetadataValue,
    ) -> Result<&mut Writer> {
        let key = key.as_ref();
        if key == ALIGNMENT_KEY {
            return self.set_alignment(alignment_value(value)?);
        }
        match self.kvs.iter().position(|(k, _)| k == key) {
            Some(i) => {
                value.check(1)?;
                self.kvs[i].1 = Stored::Value(value);
                Ok(self)
            }
            None => self.add_metadata(key, value),
        }
    }

    /// Sets `key` to an array given as a file of `layout` encodes its `count` elements of type
    /// `elem` (`bytes`, already checked by the reader's rules), replacing the value of an
    /// existing key where it stands.
    pub(crate) fn set_encoded_array(
        &mut self,
        key: &[u8],
        elem: ValueType,
        count: u64,
        bytes: Vec<u8>,
        layout: Layout,
    ) -> Result<&mut Writer> {
        if key.is_empty() {
            return Err(Error::new(ErrorKind::EmptyKey { refused: true }));
        }
        if key == ALIGNMENT_KEY {
            let found = AlignmentFound::Type(ValueType::Array);
            let e = Error::new(ErrorKind::BadAlignment { found });
            return Err(e.with_context("general.alignment"));
        }
        let value = Stored::Encoded {
            elem,
            count,
            bytes,
            layout,
        };
        match self.kvs.iter().position(|(k, _)| k == key) {
            Some(i) => self.kvs[i].1 = value,
            None => self.kvs.push((key.to_vec(), value)),
        }
        Ok(self)
    }

    /// Removes a metadata entry; returns whether the key was set.
    pub fn remove_metadata(&mut self, key: impl AsRef<[u8]>) -> bool {
        let before = self.kvs.len();
        self.kvs.retain(|(k, _)| k != key.as_ref());
        self.kvs.len() != before
    }

    /// Copies every metadata entry of `file`, in its order, replacing keys already set. Arrays
    /// are kept as the file encodes them (one buffer each, however many strings they hold) and
    /// re-encoded only if this writer's version or byte order differs.
    pub fn copy_metadata_from<S: AsRef<[u8]>>(
        &mut self,
        file: &GgufFile<S>,
    ) -> Result<&mut Writer> {
        let layout = Layout::new(file.version(), file.byte_order());
        for entry in file.metadata() {
            match entry.value {
                Value::Array(a) if entry.key != ALIGNMENT_KEY => self.set_encoded_array(
                    entry.key,
                    a.elem_type(),
                    a.len(),
                    a.raw_bytes().to_vec(),
                    layout,
                )?,
                value => self.set_metadata(entry.key, MetadataValue::from(value))?,
            };
        }
        Ok(self)
    }

    /// The number of tensors added so far.
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
    }

    /// The byte size of the tensor at position `i`.
    pub fn tensor_size(&self, i: usize) -> Option<u64> {
        self.tensors.get(i).map(|t| t.size)
    }

    /// The position of the tensor named `name`.
    pub fn tensor_position(&self, name: impl AsRef<[u8]>) -> Option<usize> {
        self.names.find(&self.tensors, name.as_ref())
    }

    /// Adds a tensor with its data. Names must be unique, at most 4 dimensions, the first a
    /// multiple of the type's block size, and `data` exactly the tensor's size.
    pub fn add_tensor(
        &mut self,
        name: impl AsRef<[u8]>,
        dims: &[u64],
        dtype: DataType,
        data: Vec<u8>,
    ) -> Result<&mut Writer> {
        self.push_tensor(name.as_ref(), dims, dtype, Some(data))
    }

    /// Adds a tensor whose data is not in memory: write the file with
    /// [`Writer::header_bytes`], then each tensor's data at [`Writer::tensor_offsets`] (relative
    /// to the end of the header), each padded to the alignment. For files larger than memory.
    pub fn add_tensor_info(
        &mut self,
        name: impl AsRef<[u8]>,
        dims: &[u64],
        dtype: DataType,
    ) -> Result<&mut Writer> {
        self.push_tensor(name.as_ref(), dims, dtype, None)
    }

    fn push_tensor(
        &mut self,
        name: &[u8],
        dims: &[u64],
        dtype: DataType,
        data: Option<Vec<u8>>,
    ) -> Result<&mut Writer> {
        let quoted = crate::text::quote(name);
        if self.names.find(&self.tensors, name).is_some() {
            return Err(Error::new(ErrorKind::DuplicateTensor {
                tensor: quoted,
                first: FirstSeen::Given,
            }));
        }
        if dims.len() > MAX_DIMS {
            return Err(Error::new(ErrorKind::TooManyDims {
                tensor: quoted,
                found: dims.len() as u64,
                max: MAX_DIMS,
                refused: true,
            }));
        }
        let first = dims.first().copied().unwrap_or(1);
        if first % dtype.block_elems() != 0 {
            return Err(Error::new(ErrorKind::BadBlockMultiple {
                tensor: quoted,
                first,
                data_type: dtype,
            }));
        }
        let size = dtype.tensor_bytes(dims).ok_or_else(|| {
            Error::new(ErrorKind::SizeOverflow {
                tensor: Some(quoted.clone()),
                what: "size overflows".to_string(),
            })
        })?;
        if let Some(data) = &data {
            if size != data.len() as u64 {
                return Err(Error::msg(
                    ErrorCode::InvalidArgument,
                    format!(
                        "tensor {quoted}: expected {size} bytes of data, found {}",
                        data.len()
                    ),
                ));
            }
        }
        self.tensors.push(PendingTensor {
            name: name.to_vec(),
            dims: dims.to_vec(),
            dtype,
            size,
            data,
        });
        self.names.push(&self.tensors);
        Ok(self)
    }

    /// Each tensor's offset from the start of the data section: in order, each padded to the
    /// alignment. Fails if the data section would pass 2^64 bytes.
    pub fn tensor_offsets(&self) -> Result<Vec<u64>> {
        let alignment = self.alignment();
        let mut next = 0u64;
        self.tensors
            .iter()
            .map(|t| {
                let offset = next;
                next = offset
                    .checked_add(t.size)
                    .and_then(|end| format::align_up(end, alignment))
                    .ok_or_else(|| {
                        Error::new(ErrorKind::SizeOverflow {
                            tensor: None,
                            what: "the data section passes 2^64 bytes".to_string(),
                        })
                    })?;
                Ok(offset)
            })
            .collect()
    }

    /// The whole file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file to `path`, atomically: the bytes go to a temporary file in the same
    /// directory (`.<name>.gguf-tmp-<pid>-<random>`, with the permissions an existing file at
    /// `path` had), which is synced (see [`Writer::set_sync`]) and renamed over `path`. On any
    /// failure `path` is exactly what it was and the temporary file is removed. `path` may be
    /// the file the tensor data was read from: handles that mapped it keep the old file.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut out = AtomicFile::create(path.as_ref(), self.sync)?;
        let shown = out.shown().to_string();
        self.write_to(&mut out).map_err(|e| match e.path() {
            Some(_) => e,
            None => e.in_file(shown),
        })?;
        out.commit()
    }

    /// Splits the model into shards of at most `max_tensors` tensors each, as llama.cpp's
    /// `gguf-split` does: the first shard keeps every metadata entry, every shard gets
    /// `split.no` (0-based, UINT16), `split.count` (UINT16) and `split.tensors.count` (INT32).
    /// Write shard `i` of `n` to `<prefix>-<i+1:05>-of-<n:05>.gguf` (see [`Writer::shard_path`]).
    pub fn into_shards(self, max_tensors: usize) -> Result<Vec<Writer>> {
        use crate::model::{SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
        if max_tensors == 0 {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                "a shard must hold at least one tensor",
            ));
        }
        let count = self.tensors.len().div_ceil(max_tensors).max(1);
        let (Ok(count16), Ok(total)) = (u16::try_from(count), i32::try_from(self.tensors.len()))
        else {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{count} shards of {} tensors are more than the split keys hold",
                    self.tensors.len()
                ),
            ));
        };
        let alignment = self.alignment();
        let mut tensors = self.tensors.into_iter();
        let mut shards = Vec::with_capacity(count);
        for no in 0..count {
            let mut shard = Writer {
                version: self.version,
                order: self.order,
                kvs: if no == 0 {
                    self.kvs.clone()
                } else {
                    Vec::new()
                },
                tensors: tensors.by_ref().take(max_tensors).collect(),
                names: TensorNames::default(),
                sync: self.sync,
            };
            shard.names = TensorNames::of(&shard.tensors);
            if no > 0 && alignment != DEFAULT_ALIGNMENT {
                let alignment = u32::try_from(alignment).expect("the alignment is a UINT32");
                shard.set_alignment(alignment)?;
            }
            let no = u16::try_from(no).expect("no < count, which fits u16 (checked above)");
            shard.add_metadata(SPLIT_NO, MetadataValue::U16(no))?;
            shard.add_metadata(SPLIT_COUNT, MetadataValue::U16(count16))?;
            shard.add_metadata(SPLIT_TENSORS_COUNT, MetadataValue::I32(total))?;
            shards.push(shard);
        }
        Ok(shards)
    }

    /// The file name of shard `no` (0-based) of `count`: `<prefix>-<no+1:05>-of-<count:05>.gguf`.
    pub fn shard_path(prefix: &str, no: usize, count: usize) -> String {
        format!("{prefix}-{:05}-of-{count:05}.gguf", no + 1)
    }

    /// The header: magic, counts, metadata and tensor infos, padded to the alignment. The data
    /// section starts right after it.
    pub fn header_bytes(&self) -> Result<Vec<u8>> {
        let mut enc = Encoder {
            buf: Vec::new(),
            layout: Layout::new(self.version, self.order),
        };
        enc.buf.extend_from_slice(&format::MAGIC);
        enc.u32(self.version);
        enc.len(self.tensors.len() as u64)?;
        enc.len(self.kvs.len() as u64)?;
        for (key, value) in &self.kvs {
            enc.string(key)?;
            enc.u32(value.value_type().id());
            enc.stored(value)?;
        }
        for (t, offset) in self.tensors.iter().zip(self.tensor_offsets()?) {
            enc.string(&t.name)?;
            // At most MAX_DIMS (checked when the tensor was added).
            enc.u32(u32::try_from(t.dims.len()).expect("at most MAX_DIMS dimensions"));
            for &d in &t.dims {
                enc.len(d)?;
            }
            enc.u32(t.dtype.id());
            enc.u64(offset);
        }
        let header_end = enc.buf.len() as u64;
        enc.buf.resize(
            crate::size::in_memory(pad_to(header_end, self.alignment())),
            0,
        );
        Ok(enc.buf)
    }

    /// Writes the file to `out`. Every tensor must have been given its data.
    pub fn write_to(&self, out: &mut impl Write) -> Result<()> {
        let io = |e: std::io::Error| Error::io("cannot write", e);
        out.write_all(&self.header_bytes()?).map_err(io)?;
        let alignment = self.alignment();
        for t in &self.tensors {
            let Some(data) = &t.data else {
                return Err(Error::msg(
                    ErrorCode::InvalidArgument,
                    format!(
                        "tensor {} has no data: write the header, then stream it",
                        crate::text::quote(&t.name)
                    ),
                ));
            };
            out.write_all(data).map_err(io)?;
            write_zeros(out, pad_to(t.size, alignment) - t.size).map_err(io)?;
        }
        out.flush().map_err(io)
    }
}

/// The alignment a `general.alignment` value sets: it must be a UINT32 (checked for range by
/// [`Writer::set_alignment`]).
fn alignment_value(value: MetadataValue) -> Result<u32> {
    match value {
        MetadataValue::U32(a) => Ok(a),
        other => {
            let found = AlignmentFound::Type(other.value_type());
            Err(Error::new(ErrorKind::BadAlignment { found }).with_context("general.alignment"))
        }
    }
}

/// Writes `n` zero bytes from a static buffer.
pub(crate) fn write_zeros(out: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    static ZEROS: [u8; 4096] = [0; 4096];
    while n > 0 {
        let step = usize::try_from(n).map_or(ZEROS.len(), |n| n.min(ZEROS.len()));
        out.write_all(&ZEROS[..step])?;
        n -= step as u64;
    }
    Ok(())
}

fn pad_to(pos: u64, alignment: u64) -> u64 {
    format::align_up(pos, alignment).unwrap_or(pos)
}

/// Encodes numbers in the file's byte order and lengths in the version's width.
struct Encoder {
    buf: Vec<u8>,
    layout: Layout,
}

impl Encoder {
    fn put<const N: usize>(&mut self, le: [u8; N]) {
        let mut bytes = le;
        if self.layout.order == ByteOrder::Big {
            bytes.reverse();
        }
        self.buf.extend_from_slice(&bytes);
    }

    fn u32(&mut self, v: u32) {
        self.put(v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.put(v.to_le_bytes());
    }

    fn len(&mut self, v: u64) -> Result<()> {
        if self.layout.wide {
            self.u64(v);
        } else {
            let narrow = u32::try_from(v).map_err(|_| {
                Error::msg(
                    ErrorCode::InvalidArgument,
                    format!("version 1 cannot store the count or length {v}"),
                )
            })?;
            self.u32(narrow);
        }
        Ok(())
    }

    fn string(&mut self, s: &[u8]) -> Result<()> {
        self.len(s.len() as u64)?;
        self.buf.extend_from_slice(s);
        Ok(())
    }

    fn stored(&mut self, v: &Stored) -> Result<()> {
        match v {
            Stored::Value(v) => self.value(v),
            Stored::Encoded {
                elem,
                count,
                bytes,
                layout,
            } if *layout == self.layout => {
                self.u32(elem.id());
                self.len(*count)?;
                self.buf.extend_from_slice(bytes);
                Ok(())
            }
            Stored::Encoded {
                elem,
                count,
                bytes,
                layout,
            } => {
                // Decoded with the reader's rules from the layout it was stored in, then
                // written in this file's.
                let mut source = Encoder {
                    buf: Vec::with_capacity(12 + bytes.len()),
                    layout: *layout,
                };
                source.u32(elem.id());
                source.len(*count)?;
                source.buf.extend_from_slice(bytes);
                let mut r = ByteReader::new(&source.buf, 0, *layout);
                let raw = read_value(&mut r, ValueType::Array, "a copied array")?;
                self.value(&MetadataValue::from(raw.view(&source.buf, *layout)))
            }
        }
    }

    fn value(&mut self, v: &MetadataValue) -> Result<()> {
        use MetadataValue::*;
        match v {
            U8(x) => self.put(x.to_le_bytes()),
            I8(x) => self.put(x.to_le_bytes()),
            U16(x) => self.put(x.to_le_bytes()),
            I16(x) => self.put(x.to_le_bytes()),
            U32(x) => self.put(x.to_le_bytes()),
            I32(x) => self.put(x.to_le_bytes()),
            F32(x) => self.put(x.to_le_bytes()),
            Bool(x) => self.put([u8::from(*x)]),
            String(s) => self.string(s)?,
            Array(elem, items) => {
                self.u32(elem.id());
                self.len(items.len() as u64)?;
                for item in items {
                    self.value(item)?;
                }
            }
            U64(x) => self.put(x.to_le_bytes()),
            I64(x) => self.put(x.to_le_bytes()),
            F64(x) => self.put(x.to_le_bytes()),
        }
        Ok(())
    }
}
