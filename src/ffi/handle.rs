//! The handle behind `GGUFFile`: the parsed model (one file, or every shard of a split model),
//! the C records handed out for its metadata and shards, one arena holding their NUL-terminated
//! strings, and lazily built caches: the tensor records (with their names), arrays, upload
//! plans.

use super::array_cache::ArrayCaches;
use super::boundary::Castable;
use super::lazy::{AppendList, OnceBox};
use super::records::{GGUFMetadataKV, GGUFShardInfo, GGUFTensorInfo, PlanRecords};
use crate::error::{Error, ErrorCode, Result};
use crate::model::Model;
use crate::source::Source;
use crate::text::quote;
use crate::value::RawValue;
use std::ffi::c_char;

/// The opaque state behind a `GGUFFile`. Everything it hands out lives as long as it does.
pub struct GGUFFileImpl {
    pub(crate) model: Model<Source>,
    /// The path it was opened from (or `<memory>`), for error messages.
    pub(crate) name: String,
    /// Every key, string value and shard path, NUL-terminated, back to back. Never resized after
    /// open, so pointers into it are stable.
    _arena: Box<[u8]>,
    /// The tensor records, built on first use (see [`GGUFFileImpl::tensors`]).
    tensor_table: OnceBox<TensorTable>,
    pub(crate) metadata: Box<[GGUFMetadataKV]>,
    pub(crate) shards: Box<[GGUFShardInfo]>,
    /// One slot per metadata entry, filled on first use by the array helpers.
    pub(crate) arrays: Box<[ArrayCaches]>,
    /// Every upload plan made on this handle, kept until it closes.
    pub(crate) plans: AppendList<PlanRecords>,
}

// SAFETY: the raw pointers inside the handle's records point into memory the handle owns (the
// maps, the arena, the caches), which is never written after open except through `OnceBox` and
// `AppendList`, whose publication is synchronised. Sharing the handle across threads is
// therefore sound, and moving it only moves owners of heap memory and mappings.
unsafe impl Send for GGUFFileImpl {}
// SAFETY: as above.
unsafe impl Sync for GGUFFileImpl {}

impl Castable for GGUFFileImpl {
    const ARG: &'static str = "file";
}

/// The C records of every tensor and their NUL-terminated names.
struct TensorTable {
    records: Box<[GGUFTensorInfo]>,
    /// The names, back to back; never resized, so the records' pointers into it are stable.
    _names: Box<[u8]>,
}

impl TensorTable {
    /// One allocation for the records and one for the names, filled in one pass over every
    /// shard's tensors.
    fn build(model: &Model<Source>) -> TensorTable {
        let name_bytes: usize = model
            .shards()
            .iter()
            .map(|s| s.tensor_name_bytes() + s.tensor_count())
            .sum();
        let mut names = vec![0u8; name_bytes].into_boxed_slice();
        let mut slots = Slots::new(&mut names);
        let mut records = Vec::with_capacity(model.tensor_count());
        for (shard, file) in model.shards().iter().enumerate() {
            for t in file.tensors() {
                let name = slots.put(t.name);
                records.push(GGUFTensorInfo::new(records.len(), shard, &t, name));
            }
        }
        TensorTable {
            records: records.into_boxed_slice(),
            _names: names,
        }
    }
}

/// Hands out NUL-terminated copies of strings from a zeroed buffer sized for them exactly. Each
/// slot is carved off the front of what is left, so a pointer handed out comes from its own
/// slot and no later write touches it.
struct Slots<'a> {
    free: &'a mut [u8],
}

impl<'a> Slots<'a> {
    fn new(buffer: &'a mut [u8]) -> Slots<'a> {
        Slots { free: buffer }
    }

    /// A copy of `s` followed by the NUL the buffer was zeroed with.
    fn put(&mut self, s: &[u8]) -> *const c_char {
        let (slot, rest) = std::mem::take(&mut self.free).split_at_mut(s.len() + 1);
        slot[..s.len()].copy_from_slice(s);
        self.free = rest;
        slot.as_ptr().cast()
    }
}

/// A handle to an open GGUF file. NULL is never a valid open handle.
pub type GGUFFile = *mut GGUFFileImpl;

impl GGUFFileImpl {
    /// Builds the handle's C records over a parsed model.
    pub(crate) fn new(model: Model<Source>, name: String) -> GGUFFileImpl {
        let first = model.first();
        let bytes = first.bytes();
        let kvs = first.kv_records();
        let kv_strings = kvs.iter().flat_map(|kv| {
            let value = match kv.value {
                RawValue::String(s) => Some(s.of(bytes)),
                _ => None,
            };
            std::iter::once(kv.key.of(bytes)).chain(value)
        });
        // Exact bytes, not the escaped names of messages: callers reopen these paths.
        let shard_paths = model
            .shard_paths()
            .iter()
            .map(|p| p.as_os_str().as_encoded_bytes());

        // One exact-size, zeroed allocation for every string the C API must NUL-terminate.
        let total: usize = kv_strings
            .chain(shard_paths.clone())
            .map(|s| s.len() + 1)
            .sum();
        let mut arena = vec![0u8; total].into_boxed_slice();
        let mut slots = Slots::new(&mut arena);
        let metadata: Box<[GGUFMetadataKV]> = kvs
            .iter()
            .enumerate()
            .map(|(i, kv)| {
                let key = slots.put(kv.key.of(bytes));
                let str_ptr = match kv.value {
                    RawValue::String(s) => slots.put(s.of(bytes)),
                    _ => std::ptr::null(),
                };
                GGUFMetadataKV::new(i, kv, key, str_ptr, bytes)
            })
            .collect();
        let shards: Box<[GGUFShardInfo]> = model
            .shards()
            .iter()
            .zip(model.shard_paths())
            .zip(model.shard_starts())
            .map(|((file, path), &first_tensor)| {
                let path = path.as_os_str().as_encoded_bytes();
                GGUFShardInfo::new(file, slots.put(path), first_tensor)
            })
            .collect();
        let arrays = (0..kvs.len()).map(|_| ArrayCaches::default()).collect();
        GGUFFileImpl {
            _arena: arena,
            tensor_table: OnceBox::default(),
            metadata,
            shards,
            arrays,
            plans: AppendList::default(),
            name,
            model,
        }
    }

    /// The C records of every tensor, in the model's order. Built on first use rather than at
    /// open: a file may hold hundreds of thousands of tensors, and a caller that reads only
    /// metadata should not pay for their records (about 140 bytes each). Every caller gets the
    /// same records, at the same addresses, until the handle is closed.
    pub(crate) fn tensors(&self) -> &[GGUFTensorInfo] {
        &self
            .tensor_table
            .get_or_init(|| Box::new(TensorTable::build(&self.model)))
            .records
    }

    /// `e`, which concerns no particular byte, naming this file.
    pub(crate) fn about(&self, e: Error) -> Error {
        e.with_offset(None).in_file(self.name.clone())
    }

    /// An error about this file, naming it.
    pub(crate) fn error(&self, code: ErrorCode, message: String) -> Error {
        Error::msg(code, message).in_file(self.name.clone())
    }

    /// The position of the metadata entry with this key, or a NotFound error.
    pub(crate) fn kv_index(&self, key: &[u8]) -> Result<usize> {
        self.model.first().metadata_index(key).ok_or_else(|| {
            self.error(
                ErrorCode::NotFound,
                format!("no metadata key {}", quote(key)),
            )
        })
    }
}
