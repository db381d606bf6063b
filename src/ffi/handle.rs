//! The handle behind `GGUFFile`: the parsed model (one file, or every shard of a split model),
//! the C records handed out for its tensors, metadata and shards, one arena holding every
//! NUL-terminated name, and lazily built caches (arrays, upload plans).

use super::arrays::ArrayCaches;
use super::boundary::null;
use super::lazy::AppendList;
use super::metadata::GGUFMetadataKV;
use super::plan::PlanRecords;
use super::shards::GGUFShardInfo;
use super::tensors::GGUFTensorInfo;
use crate::error::{Error, ErrorCode, Result};
use crate::file::quote;
use crate::model::Model;
use crate::source::Source;
use crate::value::RawValue;
use std::ffi::c_char;

/// The opaque state behind a `GGUFFile`. Everything it hands out lives as long as it does.
pub struct GGUFFileImpl {
    pub(crate) model: Model<Source>,
    /// The path it was opened from (or `<memory>`), for error messages.
    pub(crate) name: String,
    /// Every key, tensor name, string value and shard path, NUL-terminated, back to back. Never
    /// resized after open, so pointers into it are stable.
    _arena: Box<[u8]>,
    pub(crate) tensors: Box<[GGUFTensorInfo]>,
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
        let shard_names = model.shard_names().iter().map(|n| n.as_bytes());

        // One exact-size, zeroed allocation for every string the C API must NUL-terminate: each
        // string is copied into its slot, whose last byte stays the NUL. The tensor names' total
        // comes from the parse, so the (many) tensors are walked once, below.
        let nul_terminated = |strings: &mut dyn Iterator<Item = &[u8]>| -> usize {
            strings.map(|s| s.len() + 1).sum()
        };
        let tensor_bytes: usize = model
            .shards()
            .iter()
            .map(|s| s.tensor_name_bytes() + s.tensor_count())
            .sum();
        let total = nul_terminated(&mut kv_strings.clone())
            + tensor_bytes
            + nul_terminated(&mut shard_names.clone());
        let mut arena = vec![0u8; total].into_boxed_slice();
        // The slots are carved off the front of what is left, so each pointer handed out comes
        // from its own slot and no later write touches it.
        let mut free: &mut [u8] = &mut arena;
        let mut put = |s: &[u8]| -> *const c_char {
            let (slot, rest) = std::mem::take(&mut free).split_at_mut(s.len() + 1);
            slot[..s.len()].copy_from_slice(s);
            free = rest;
            slot.as_ptr().cast()
        };

        let metadata: Box<[GGUFMetadataKV]> = kvs
            .iter()
            .enumerate()
            .map(|(i, kv)| {
                let key = put(kv.key.of(bytes));
                let str_ptr = match kv.value {
                    RawValue::String(s) => put(s.of(bytes)),
                    _ => std::ptr::null(),
                };
                GGUFMetadataKV::new(i, kv, key, str_ptr, bytes)
            })
            .collect();
        // One allocation, filled in one pass over every shard's tensor records.
        let mut tensors = Vec::with_capacity(model.tensor_count());
        for (shard, file) in model.shards().iter().enumerate() {
            let (bytes, data_offset) = (file.bytes(), file.data_offset());
            for t in file.tensor_records() {
                let name = put(t.name.of(bytes));
                tensors.push(GGUFTensorInfo::new(
                    tensors.len(),
                    shard,
                    t,
                    data_offset,
                    name,
                ));
            }
        }
        let tensors = tensors.into_boxed_slice();
        let shards: Box<[GGUFShardInfo]> = model
            .shards()
            .iter()
            .zip(model.shard_names())
            .zip(model.shard_starts())
            .map(|((file, name), &first_tensor)| {
                GGUFShardInfo::new(file, put(name.as_bytes()), first_tensor)
            })
            .collect();
        let arrays = (0..kvs.len()).map(|_| ArrayCaches::default()).collect();
        GGUFFileImpl {
            _arena: arena,
            tensors,
            metadata,
            shards,
            arrays,
            plans: AppendList::default(),
            name,
            model,
        }
    }

    /// The handle behind a `GGUFFile` argument.
    ///
    /// # Safety
    /// `ptr` is NULL or a handle returned by `gguf_open*` that has not been closed.
    pub(crate) unsafe fn from_ptr<'a>(ptr: GGUFFile) -> Result<&'a GGUFFileImpl> {
        // SAFETY: the caller passes NULL or a live handle; a live handle is a valid Box.
        unsafe { ptr.as_ref() }.ok_or_else(|| null("file"))
    }

    /// An error about this file, naming it.
    pub(crate) fn error(&self, code: ErrorCode, message: String) -> Error {
        Error::new(code, message).in_file(self.name.clone())
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
