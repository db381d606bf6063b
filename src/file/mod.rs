//! The parsed file: one walk over the header that checks every rule of the format and records
//! where each key and value lies and what each tensor info holds, then zero-copy accessors over
//! those records.
//!
//! The parse is in two parts: [`header`] reads the preamble, the counts and the metadata and
//! puts the file together; [`walk`] reads and checks the tensor infos, once each, and keeps what
//! it read of each in a [`record`].

use crate::error::{Error, Result};
use crate::format::{ByteOrder, Layout, MAX_DIMS};
use crate::types::DataType;
use crate::value::Value;

mod entry_error;
mod header;
mod parsed;
mod record;
mod walk;

pub(crate) use header::needs_more;
use header::parse;
pub(crate) use parsed::KvRecord;
use parsed::Parsed;

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
    /// is in memory ([`GgufFile::from_prefix`]: the model layer reads the data by position).
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

/// A parsed GGUF file over bytes it owns or borrows (`S` is a memory map, a `Vec<u8>`, a
/// `&[u8]`, ...). Every rule of the format is checked when it is made; afterwards every accessor
/// is infallible and returns slices of those bytes.
pub struct GgufFile<S: AsRef<[u8]>> {
    source: S,
    parsed: Parsed,
}

/// A GGUF file mapped into memory.
pub type MappedFile = GgufFile<memmap2::Mmap>;

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
    /// longer prefix (the one parser, run again; as the sources do).
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

    /// Where the tensor infos lie in the file: from the end of the metadata to just past the last
    /// tensor info (the padding up to [`GgufFile::data_offset`] excluded); empty when there are
    /// no tensors.
    pub fn tensor_info_range(&self) -> std::ops::Range<u64> {
        self.parsed.tensor_infos.0..self.parsed.tensor_infos.1
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

    /// The `index`-th tensor in file order (from what the parse recorded; nothing is read
    /// again).
    pub fn tensor_at(&self, index: usize) -> Option<TensorInfo<'_>> {
        let t = self.parsed.tensors.get(index)?;
        let size = t.size();
        let file_offset = self.parsed.data_offset + t.offset;
        // In bounds, so within `usize`: checked when the file was parsed.
        // Empty when only the header is at hand (`from_prefix`).
        let data = usize::try_from(file_offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(start, len)| self.bytes().get(start..start.checked_add(len)?))
            .unwrap_or_default();
        Some(TensorInfo {
            name: t.name(self.bytes()),
            n_dims: t.n_dims,
            dims: t.dims,
            dtype: t.dtype,
            n_elements: t.n_elements(),
            offset: t.offset,
            file_offset,
            size,
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
        p.tensor_index
            .find(name.as_ref(), |i| p.tensors.name(i, bytes))
    }

    /// The name of the `index`-th tensor (what [`GgufFile::tensor_at`] gives, read alone).
    pub(crate) fn tensor_name_at(&self, index: usize) -> Option<&[u8]> {
        (index < self.tensor_count()).then(|| self.parsed.tensors.name(index, self.bytes()))
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: impl AsRef<[u8]>) -> Option<TensorInfo<'_>> {
        self.tensor_index(name).and_then(|i| self.tensor_at(i))
    }

    pub(crate) fn kv_records(&self) -> &[KvRecord] {
        &self.parsed.kvs
    }

    /// Sum of the lengths of every tensor name (the C handle sizes its string arena with it).
    pub(crate) fn tensor_name_bytes(&self) -> usize {
        self.parsed.tensors.name_bytes(self.bytes())
    }

    pub(crate) fn layout(&self) -> Layout {
        self.parsed.layout
    }
}
