//! Metadata: counts, lookup by key and index, and the records describing each value.

use super::boundary::{c_str, guard};
use super::handle::{GGUFFile, GGUFFileImpl};
use crate::error::ErrorCode;
use crate::file::KvRecord;
use crate::format::Layout;
use crate::value::{RawValue, Value};
use std::ffi::{c_char, c_void};

/// A metadata value. Read the member matching the entry's `type`. Unsigned integers of up to 32
/// bits are stored widened in `u32` and signed ones in `i32`, so those members read them on any
/// host; the narrower members (`u8`, `i16`, ...) read the same value on little-endian hosts
/// only. For arrays, `u32` holds the element type.
#[repr(C)]
#[derive(Clone, Copy)]
pub union GGUFValue {
    /// UINT8.
    pub u8: u8,
    /// INT8.
    pub i8: i8,
    /// UINT16.
    pub u16: u16,
    /// INT16.
    pub i16: i16,
    /// UINT32 (and UINT8/UINT16 widened; the element type of an ARRAY).
    pub u32: u32,
    /// INT32 (and INT8/INT16 widened).
    pub i32: i32,
    /// FLOAT32.
    pub f32: f32,
    /// UINT64.
    pub u64: u64,
    /// INT64.
    pub i64: i64,
    /// FLOAT64.
    pub f64: f64,
    /// BOOL.
    pub b: bool,
    /// STRING: NUL-terminated, owned by the handle (see `str_len` for strings containing NUL).
    pub str: *const c_char,
}

/// A metadata entry. Owned by the handle; valid until `gguf_close`. Numbers in `value` are in
/// host byte order; `array_data` is raw, in the file's byte order.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GGUFMetadataKV {
    /// Key, NUL-terminated (see `key_len`).
    pub key: *const c_char,
    /// Value type: a `GGUFValueType` value.
    pub r#type: u32,
    /// The value (see `GGUFValue`).
    pub value: GGUFValue,
    /// For ARRAY: the number of elements; otherwise 0.
    pub array_len: u64,
    /// For ARRAY: the first element's bytes inside the mapping (raw, file byte order, unaligned);
    /// otherwise NULL.
    pub array_data: *const c_void,
    /// Length of the key in bytes, excluding the terminating NUL.
    pub key_len: u64,
    /// For STRING: length in bytes, excluding the terminating NUL; otherwise 0.
    pub str_len: u64,
    /// For ARRAY: the element type (a `GGUFValueType`, also in `value.u32`); otherwise 0.
    pub array_type: u32,
    /// For ARRAY: the number of bytes the elements take in the file; otherwise 0.
    pub array_bytes: u64,
    /// Position of the entry in file order (what `gguf_get_metadata_by_index` takes).
    pub index: u64,
}

impl GGUFMetadataKV {
    pub(crate) fn new(
        index: usize,
        kv: &KvRecord,
        key: *const c_char,
        str_ptr: *const c_char,
        bytes: &[u8],
    ) -> GGUFMetadataKV {
        let mut record = GGUFMetadataKV {
            key,
            r#type: kv.value.value_type().id(),
            value: GGUFValue { u64: 0 },
            array_len: 0,
            array_data: std::ptr::null(),
            key_len: kv.key.len as u64,
            str_len: 0,
            array_type: 0,
            array_bytes: 0,
            index: index as u64,
        };
        match kv.value {
            RawValue::String(s) => {
                record.value.str = str_ptr;
                record.str_len = s.len as u64;
            }
            RawValue::Array { elem, len, data } => {
                record.value.u32 = elem.id();
                record.array_type = elem.id();
                record.array_len = len;
                record.array_data = data.of(bytes).as_ptr().cast();
                record.array_bytes = data.len as u64;
            }
            RawValue::Scalar { .. } => {
                // Scalars need neither the bytes nor the layout to be viewed.
                let layout = Layout::new(3, crate::format::ByteOrder::Little);
                record.value = scalar(kv.value.view(&[], layout));
            }
        }
        record
    }
}

fn scalar(value: Value<'_>) -> GGUFValue {
    let mut v = GGUFValue { u64: 0 };
    match value {
        Value::U8(x) => v.u32 = x.into(),
        Value::U16(x) => v.u32 = x.into(),
        Value::U32(x) => v.u32 = x,
        Value::I8(x) => v.i32 = x.into(),
        Value::I16(x) => v.i32 = x.into(),
        Value::I32(x) => v.i32 = x,
        Value::F32(x) => v.f32 = x,
        Value::Bool(x) => v.b = x,
        Value::U64(x) => v.u64 = x,
        Value::I64(x) => v.i64 = x,
        Value::F64(x) => v.f64 = x,
        Value::String(_) | Value::Array(_) => {}
    }
    v
}

/// Number of metadata entries; 0 if `file` is NULL (recording the error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_metadata_count(file: GGUFFile) -> u64 {
    guard(0, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        Ok(f.metadata.len() as u64)
    })
}

/// The entry with this key (a hash lookup), or NULL if there is none (GGUF_ERROR_CODE_NOT_FOUND)
/// or an argument is NULL. The same entry always returns the same pointer, owned by the handle
/// and valid until `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata(
    file: GGUFFile,
    key: *const c_char,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        // SAFETY: `key` is NULL or a NUL-terminated string (the header's contract).
        let key = unsafe { c_str(key, "key")? };
        Ok(&f.metadata[f.kv_index(key)?] as *const GGUFMetadataKV)
    })
}

/// The entry whose key is the `key_len` bytes at `key` (which may hold NUL bytes, as GGUF keys
/// are length-prefixed; `key` need not be NUL-terminated), or NULL if there is none
/// (GGUF_ERROR_CODE_NOT_FOUND) or an argument is NULL. `gguf_get_metadata` finds only keys
/// without NUL bytes; this finds every key. Same ownership as `gguf_get_metadata`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata_n(
    file: GGUFFile,
    key: *const c_char,
    key_len: usize,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        if key.is_null() {
            return Err(super::boundary::null("key"));
        }
        // SAFETY: non-NULL and valid for reads of `key_len` bytes (the header's contract).
        let key = unsafe { super::boundary::slice(key.cast::<u8>(), key_len, "key")? };
        Ok(&f.metadata[f.kv_index(key)?] as *const GGUFMetadataKV)
    })
}

/// The `index`-th entry in file order, or NULL if `index >= gguf_metadata_count(file)`
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT) or `file` is NULL. Owned by the handle, valid until
/// `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_metadata_by_index(
    file: GGUFFile,
    index: u64,
) -> *const GGUFMetadataKV {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let kv = usize::try_from(index)
            .ok()
            .and_then(|i| f.metadata.get(i))
            .ok_or_else(|| {
                f.error(
                    ErrorCode::InvalidArgument,
                    format!(
                        "metadata index {index} is past the end ({} entries)",
                        f.metadata.len()
                    ),
                )
            })?;
        Ok(kv as *const GGUFMetadataKV)
    })
}
