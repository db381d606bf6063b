//! The records the C API hands out by pointer (metadata entries and their values, tensor
//! infos, shard infos, upload plans, arrays and their strings): their `#[repr(C)]` layouts and how each is made from the
//! parsed file. The handle owns them; the accessor files return pointers to them.

use crate::file::{GgufFile, KvRecord, TensorInfo};
use crate::format::Layout;
use crate::source::Source;
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

/// One string of a string array, as `gguf_get_nested_array` gives it: zero-copy, in the handle's
/// memory of the file (NOT NUL-terminated; it may hold NUL bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFString {
    /// The string's bytes; never NULL (an empty string's points at where it would be).
    pub data: *const c_char,
    /// Their number.
    pub len: u64,
}

/// An array inside the metadata: an entry's own array, or an element of an array of arrays
/// (`gguf_get_nested_array`). What `data` points to is owned by the handle and valid until
/// `gguf_close`; the same path gives the same pointer on every call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFArray {
    /// The type of every element: a `GGUFValueType`.
    pub elem_type: u32,
    /// The number of elements.
    pub count: u64,
    /// The elements, decoded: for the number types and BOOL, `count` values in host byte order,
    /// aligned for their type (a UINT32 array is `const uint32_t *`, a BOOL array `const bool
    /// *`); for STRING, `count` `GGUFString`s; for ARRAY, NULL (element `i` is the array at the
    /// path one index longer, ending in `i`). Never NULL for the other types, even when `count`
    /// is 0.
    pub data: *const c_void,
}

impl GGUFArray {
    /// What a failed call leaves in the caller's record.
    pub(crate) const NONE: GGUFArray = GGUFArray {
        elem_type: 0,
        count: 0,
        data: std::ptr::null(),
    };
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

/// `GGUFPlacement::view` of a tensor too large for any view under the plan's limit.
pub const GGUF_NO_VIEW: u64 = 0xFFFF_FFFF_FFFF_FFFF;

/// A page-aligned range of one shard's mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFView {
    /// First byte of the view: a multiple of the plan's `page_size`, except where that page
    /// would start before the shard's memory; the view then starts with it, at the shard's
    /// `base`. That happens for memory lent to `gguf_open_memory`, and for a mapping (which
    /// starts on a system page) when `page_size` is larger than the system's page.
    pub data: *const c_void,
    /// Length in bytes: at most the plan's `max_view_size`. The view ends on a multiple of the
    /// page size or where the shard's memory ends (the mapping's last page, or the lent
    /// buffer's end), so its length is a multiple of the page size unless it starts or ends
    /// at the edge of the shard's memory.
    pub size: u64,
    /// Absolute offset of `data` in the shard's file (for `pread`, `O_DIRECT`, cuFile).
    pub file_offset: u64,
    /// The shard whose mapping holds the view.
    pub shard: u32,
}

/// Where a tensor lies in an upload plan.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFPlacement {
    /// Index of the view holding the whole tensor, or `GGUF_NO_VIEW` if the tensor (rounded out
    /// to whole pages) is larger than the limit: it is reported, never split.
    pub view: u64,
    /// Offset of the tensor's first byte inside that view.
    pub offset: u64,
}

/// An upload plan. Owned by the handle; valid until `gguf_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFUploadPlan {
    /// The page size the views are aligned to.
    pub page_size: u64,
    /// The largest view allowed (the requested maximum rounded down to whole pages).
    pub max_view_size: u64,
    /// Number of views.
    pub n_views: u64,
    /// The views, shard by shard, in file order. Views may overlap where a tensor straddles the
    /// page on which one view ends and the next begins.
    pub views: *const GGUFView,
    /// Number of placements: `gguf_tensor_count(file)`.
    pub n_tensors: u64,
    /// One placement per tensor, indexed like `gguf_get_tensor_by_index`.
    pub placements: *const GGUFPlacement,
    /// Number of tensors placed in no view (`view == GGUF_NO_VIEW`).
    pub n_oversized: u64,
}

/// A plan and the arrays its pointers point into.
pub(crate) struct PlanRecords {
    pub(super) plan: GGUFUploadPlan,
    pub(super) _views: Box<[GGUFView]>,
    pub(super) _placements: Box<[GGUFPlacement]>,
}

/// One file of a model: the only one for an unsplit model, or one shard of a split model.
/// Owned by the handle; valid until `gguf_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFShardInfo {
    /// The path the shard was opened from, NUL-terminated, with its exact bytes (not
    /// necessarily UTF-8; `<memory>` for `gguf_open_memory`).
    pub path: *const c_char,
    /// Size of the shard's file in bytes.
    pub file_size: u64,
    /// Absolute offset of the shard's data section.
    pub data_offset: u64,
    /// Alignment of the shard's tensor data.
    pub alignment: u64,
    /// Format version of the shard.
    pub version: u32,
    /// Number of tensors in the shard.
    pub tensor_count: u64,
    /// Model-wide index of the shard's first tensor (for `gguf_get_tensor_by_index`).
    pub first_tensor: u64,
    /// Start of the shard's bytes in memory (its mapping): tensor data of this shard lies at
    /// `base + info->file_offset`. NULL when the data is not in memory (`gguf_is_mapped` false).
    pub base: *const u8,
}

impl GGUFShardInfo {
    pub(crate) fn new(file: &GgufFile<Source>, path: *const c_char, first_tensor: usize) -> Self {
        GGUFShardInfo {
            path,
            file_size: file.file_size(),
            data_offset: file.data_offset(),
            alignment: file.alignment(),
            version: file.version(),
            tensor_count: file.tensor_count() as u64,
            first_tensor: first_tensor as u64,
            // NULL where the data is not in memory (a handle reading by position).
            base: if file.source().in_memory() {
                file.bytes().as_ptr()
            } else {
                std::ptr::null()
            },
        }
    }
}

/// A tensor's description. Owned by the handle; valid until `gguf_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFTensorInfo {
    /// Name, NUL-terminated (see `name_len` for names that contain NUL bytes).
    pub name: *const c_char,
    /// Number of elements: the product of the dimensions.
    pub n_elements: u64,
    /// Number of dimensions, 0 to 4.
    pub n_dims: u32,
    /// Dimensions, innermost first; 1 for every `d >= n_dims`.
    pub dims: [u64; 4],
    /// Offset of the data from the start of the data section, as stored in the file.
    pub offset: u64,
    /// Data type: a `GGUFDataType` value.
    pub dtype: u32,
    /// Size of the data in bytes.
    pub size_bytes: u64,
    /// Absolute offset of the data in the file (data section offset + `offset`).
    pub file_offset: u64,
    /// Length of the name in bytes, excluding the terminating NUL.
    pub name_len: u64,
    /// Position of the tensor in the model's tensor list (what `gguf_get_tensor_by_index`
    /// takes).
    pub index: u64,
    /// The shard holding the tensor (0 unless the model is split; see `gguf_get_shard`).
    /// `offset` and `file_offset` are positions in that shard's file.
    pub shard: u32,
}

impl GGUFTensorInfo {
    pub(crate) fn new(
        index: usize,
        shard: usize,
        info: &TensorInfo<'_>,
        name: *const c_char,
    ) -> GGUFTensorInfo {
        GGUFTensorInfo {
            name,
            n_elements: info.n_elements,
            n_dims: info.n_dims,
            dims: info.dims,
            offset: info.offset,
            dtype: info.dtype.id(),
            size_bytes: info.size,
            file_offset: info.file_offset,
            name_len: info.name.len() as u64,
            index: index as u64,
            shard: crate::size::shard_no(shard),
        }
    }
}
