//! The handle behind `GGUFFile`: the parsed file, the C records handed out for its tensors and
//! metadata, one arena holding every NUL-terminated name, and lazily built array caches.

use super::arrays::ArrayCaches;
use super::boundary::null;
use super::metadata::GGUFMetadataKV;
use super::tensors::GGUFTensorInfo;
use crate::error::{Error, ErrorCode, Result};
use crate::file::{quote, GgufFile};
use crate::source::Source;
use crate::value::RawValue;

/// The opaque state behind a `GGUFFile`. Everything it hands out lives as long as it does.
pub struct GGUFFileImpl {
    pub(crate) file: GgufFile<Source>,
    /// The path it was opened from (or `<memory>`), for error messages.
    pub(crate) name: String,
    /// Every key, tensor name and string value, NUL-terminated, back to back. Never resized
    /// after open, so pointers into it are stable.
    _arena: Box<[u8]>,
    pub(crate) tensors: Box<[GGUFTensorInfo]>,
    pub(crate) metadata: Box<[GGUFMetadataKV]>,
    /// One slot per metadata entry, filled on first use by the array helpers.
    pub(crate) arrays: Box<[ArrayCaches]>,
}

// SAFETY: the raw pointers inside the handle's records point into memory the handle owns (the
// map, the arena, the caches), which is never written after open except through `OnceBox`,
// whose publication is synchronised. Sharing the handle across threads is therefore sound,
// and moving it only moves owners of heap memory and mappings.
unsafe impl Send for GGUFFileImpl {}
// SAFETY: as above.
unsafe impl Sync for GGUFFileImpl {}

/// A handle to an open GGUF file. NULL is never a valid open handle.
pub type GGUFFile = *mut GGUFFileImpl;

impl GGUFFileImpl {
    /// Builds the handle's C records over a parsed file.
    pub(crate) fn new(file: GgufFile<Source>, name: String) -> GGUFFileImpl {
        let bytes = file.bytes();
        let kvs = file.kv_records();
        let records = file.tensor_records();

        // One exact-size allocation for every string the C API must NUL-terminate.
        let strings = kvs
            .iter()
            .flat_map(|kv| {
                let value = match kv.value {
                    RawValue::String(s) => Some(s),
                    _ => None,
                };
                std::iter::once(kv.key).chain(value)
            })
            .chain(records.iter().map(|t| t.name));
        let total: usize = strings.clone().map(|s| s.len + 1).sum();
        let mut arena = Vec::with_capacity(total);
        for span in strings {
            arena.extend_from_slice(span.of(bytes));
            arena.push(0);
        }
        let arena = arena.into_boxed_slice();

        // Hand out pointers in the order the strings were laid down.
        let mut next = 0usize;
        let mut take = |len: usize| {
            let ptr = arena[next..].as_ptr().cast();
            next += len + 1;
            ptr
        };
        let metadata: Box<[GGUFMetadataKV]> = kvs
            .iter()
            .enumerate()
            .map(|(i, kv)| {
                let key = take(kv.key.len);
                let str_ptr = match kv.value {
                    RawValue::String(s) => take(s.len),
                    _ => std::ptr::null(),
                };
                GGUFMetadataKV::new(i, kv, key, str_ptr, bytes)
            })
            .collect();
        let tensors: Box<[GGUFTensorInfo]> = (0..records.len())
            .filter_map(|i| {
                let info = file.tensor_at(i)?;
                Some(GGUFTensorInfo::new(i, &info, take(info.name.len())))
            })
            .collect();
        let arrays = (0..kvs.len()).map(|_| ArrayCaches::default()).collect();
        GGUFFileImpl {
            _arena: arena,
            tensors,
            metadata,
            arrays,
            name,
            file,
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
        self.file.metadata_index(key).ok_or_else(|| {
            self.error(
                ErrorCode::NotFound,
                format!("no metadata key {}", quote(key)),
            )
        })
    }
}
