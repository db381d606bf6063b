//! `Writer`: the metadata and tensors of a file to write, each checked as it is added; the
//! tensors' offsets, the header's encoding and the split of a model into shards. Writing it out
//! is `output`'s and `stream`'s.

use super::encode::Encoder;
use super::metadata::{MetadataValue, Stored};
use super::tensor::{check_tensor, PendingTensor, TensorData, TensorNames};
use crate::error::{AlignmentFound, Error, ErrorCode, ErrorKind, FirstSeen, Result};
use crate::file::GgufFile;
use crate::format::{self, ByteOrder, Layout, ALIGNMENT_KEY, DEFAULT_ALIGNMENT};
use crate::reader::ByteReader;
use crate::types::{DataType, ValueType};
use crate::value::{read_value, Value};

/// Builds a GGUF file in memory and writes it out.
pub struct Writer {
    pub(super) version: u32,
    pub(super) order: ByteOrder,
    pub(super) kvs: Vec<(Vec<u8>, Stored)>,
    pub(super) tensors: Vec<PendingTensor>,
    /// Positions in `tensors`, by name: adding a tensor checks for a duplicate in constant time.
    pub(super) names: TensorNames,
    /// Whether files written are flushed to stable storage before they replace the destination.
    pub(super) sync: bool,
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

    /// Sets `key` to an array of `count` elements of the type whose id is `elem_type`, given
    /// as a little-endian version-3 file encodes them: `elements` holds exactly the elements
    /// (a string as a u64 length and its bytes; a nested array as its element type, u64 count
    /// and elements). They are checked with the reader's rules (a refusal's offset counts from
    /// the start of `elements`), kept as given (one buffer) and written in this writer's version
    /// and byte order. Replaces the value of an existing key where it stands. This is how an
    /// array's raw bytes from a little-endian file are copied.
    pub fn set_array_encoded(
        &mut self,
        key: impl AsRef<[u8]>,
        elem_type: u32,
        count: u64,
        elements: &[u8],
    ) -> Result<&mut Writer> {
        let size = elements.len();
        let mut encoded = Vec::with_capacity(12 + size);
        encoded.extend_from_slice(&elem_type.to_le_bytes());
        encoded.extend_from_slice(&count.to_le_bytes());
        encoded.extend_from_slice(elements);
        let layout = Layout::new(3, ByteOrder::Little);
        let mut reader = ByteReader::new(&encoded, 0, layout);
        // The 12 bytes parsed before the elements are `elem_type` and `count`: errors about
        // them concern no byte of `elements`.
        read_value(&mut reader, ValueType::Array, "the encoded array").map_err(|e| {
            match e.offset() {
                Some(at) if at >= 12 => e.with_offset(Some(at - 12)),
                _ => e.with_offset(None),
            }
        })?;
        if reader.remaining() != 0 {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{count} elements end after {} of the {size} bytes given",
                    reader.pos() - 12
                ),
            ));
        }
        let elem = ValueType::from_id(elem_type).ok_or_else(|| {
            Error::msg(
                ErrorCode::Internal,
                format!("element type {elem_type} passed the reader's check"),
            )
        })?;
        encoded.drain(..12);
        self.set_encoded_array(key.as_ref(), elem, count, encoded, layout)
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
        self.add_tensor_data(name, dims, dtype, TensorData::bytes(data))
    }

    /// Adds a tensor whose data is not in memory: stream it after the header
    /// ([`Writer::begin_file`]), or write the file yourself with [`Writer::header_bytes`], then
    /// each tensor's data at [`Writer::tensor_offsets`] (relative to the end of the header),
    /// each padded to the alignment. For files larger than memory.
    pub fn add_tensor_info(
        &mut self,
        name: impl AsRef<[u8]>,
        dims: &[u64],
        dtype: DataType,
    ) -> Result<&mut Writer> {
        self.add_tensor_data(name, dims, dtype, TensorData::streamed())
    }

    /// Adds a tensor whose bytes come from `data`: memory (owned or shared), a range of an open
    /// file, or streamed. The same checks as [`Writer::add_tensor`]; bytes in memory must be
    /// exactly the tensor's size.
    pub fn add_tensor_data(
        &mut self,
        name: impl AsRef<[u8]>,
        dims: &[u64],
        dtype: DataType,
        data: TensorData,
    ) -> Result<&mut Writer> {
        let name = name.as_ref();
        let taken = self.names.find(&self.tensors, name).is_some();
        let size = check_tensor(taken, name, dims, dtype, &data)?;
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

    /// Splits the model into shards of at most `max_tensors` tensors each, as llama.cpp's
    /// `gguf-split` does: the first shard keeps every metadata entry, every shard gets
    /// `split.no` (0-based, UINT16), `split.count` (UINT16) and `split.tensors.count` (INT32).
    /// Write shard `i` of `n` to `<prefix>-<i+1:05>-of-<n:05>.gguf` (see [`Writer::shard_path`]).
    pub fn into_shards(self, max_tensors: usize) -> Result<Vec<Writer>> {
        use crate::format::{SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
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
        crate::format::shard_file_name(prefix, no, count)
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

fn pad_to(pos: u64, alignment: u64) -> u64 {
    format::align_up(pos, alignment).unwrap_or(pos)
}
