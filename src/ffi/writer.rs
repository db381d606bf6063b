//! The writer from C: build a GGUF file (metadata of every type, tensors whose data is given by
//! pointer or streamed in order), or start from an opened file and change it (a metadata
//! editor), then write it. Large models never need their data in memory at once.

use super::boundary::{
    c_path, c_str, free_box, guard, null, slice, slice_mut, to_boxed_mut_ptr, to_usize, try_from,
    try_from_mut, Castable,
};
use super::handle::GGUFFile;
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::format::ByteOrder;
use crate::text::quote;
use crate::types::{DataType, ValueType};
use crate::value::Element;
use crate::writer::{
    check_dim_count, Api, MetadataValue, OwnedRange, TensorData, TensorStream, Writer,
};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// The opaque state behind a `GGUFWriter`.
pub struct GGUFWriterImpl {
    writer: Writer,
    /// The file being streamed, or the failure of the last one (which sticks, as `ferror`
    /// does, until `gguf_writer_begin_file` starts another file). `None` when no file is begun
    /// or the last one finished.
    stream: Option<TensorStream>,
}

/// Bytes lent by the C caller, who keeps them valid until the file is written (the header's
/// contract for `gguf_writer_add_tensor`'s data and `gguf_writer_from_file`'s source).
struct Lent {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the bytes are only read, and the caller keeps them valid and unchanged while the
// writer may read them, from whichever thread uses the writer.
unsafe impl Send for Lent {}
// SAFETY: as above; reading from several threads at once is reading shared memory.
unsafe impl Sync for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: non-NULL (checked when lent) and `len` readable bytes while the writer uses
        // them (the header's contract).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// `size` bytes given by the caller, as a length in memory.
fn byte_count(size: u64) -> Result<usize> {
    to_usize(size).ok_or_else(|| Error::size_overflow(format!("{size} bytes")))
}

/// Lent bytes as a writer's tensor data source.
fn lent(ptr: *const u8, len: usize) -> OwnedRange {
    (Arc::new(Lent { ptr, len }), 0..len)
}

/// A handle to a GGUF file being built. Not for use from several threads at once.
pub type GGUFWriter = *mut GGUFWriterImpl;

impl Castable for GGUFWriterImpl {
    const ARG: &'static str = "writer";
}

impl GGUFWriterImpl {
    /// Fails once the header is written: metadata and tensor infos are then frozen.
    fn editable(&self) -> Result<&GGUFWriterImpl> {
        match self.stream.as_ref().filter(|s| s.is_open()) {
            Some(s) => Err(Error::msg(
                ErrorCode::InvalidArgument,
                "the header is already written: metadata and tensors can no longer change",
            )
            .in_file(s.shown())),
            None => Ok(self),
        }
    }
}

/// Runs `body` on the writer behind `w` (NULL-checked), recording failures.
fn with_writer<T>(
    w: GGUFWriter,
    fail: T,
    body: impl FnOnce(&mut GGUFWriterImpl) -> Result<T>,
) -> T {
    guard(fail, || {
        // SAFETY: `w` is NULL or a live writer used by one thread (the header's contract).
        let w = unsafe { try_from_mut(w)? };
        body(w)
    })
}

/// Sets `key` (a NUL-terminated string) to `value`.
fn set(w: GGUFWriter, key: *const c_char, value: impl FnOnce() -> Result<MetadataValue>) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        // SAFETY: `key` is NULL or NUL-terminated (the header's contract).
        let key = unsafe { c_str(key, "key")? };
        w.writer.set_metadata(key, value()?)?;
        Ok(true)
    })
}

/// A new, empty writer: format version 3, little-endian, alignment 32. Free it with
/// `gguf_writer_free`. NULL only if memory runs out.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_writer_new() -> GGUFWriter {
    guard(std::ptr::null_mut(), || {
        Ok(to_boxed_mut_ptr(GGUFWriterImpl {
            writer: Writer::new(),
            stream: None,
        }))
    })
}

/// A writer holding everything `src` holds: its metadata (minus the `split.*` keys of a split
/// model, whose tensors are all gathered into one file), version, byte order, and every tensor
/// with its data read from `src` when the file is written (copied inside the kernel from a
/// mapped file, else from its memory, or read from its source for a handle that does not map
/// its file, such as `GGUF_OPEN_FLAG_NO_MAP`). Change what you like, then write it: `src` must
/// stay open until then. Writing over `src`'s own path is safe (the file is replaced
/// atomically, and `src` keeps reading the old contents until closed). NULL if `src` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_from_file(src: GGUFFile) -> GGUFWriter {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `src` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(src)? };
        let writer = Writer::copy_of(&f.model, &mut |_, data| Ok(lent(data.as_ptr(), data.len())))?;
        Ok(to_boxed_mut_ptr(GGUFWriterImpl {
            writer,
            stream: None,
        }))
    })
}

/// Frees a writer. A file it was streaming and had not finished is abandoned: its temporary
/// file is removed and the destination is left as it was. NULL is a no-op.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_free(w: GGUFWriter) {
    guard((), || {
        // SAFETY: NULL or a writer from `gguf_writer_new*` that, by the header's contract, is
        // freed once.
        unsafe { free_box(w) };
        Ok(())
    })
}

/// Sets the format version (2 or 3; 1 for 32-bit counts and lengths). Default 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_version(w: GGUFWriter, version: u32) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        w.writer.set_version(version)?;
        Ok(true)
    })
}

/// Sets the byte order of every number written (a `GGUFByteOrder`). Tensor data is written as
/// given. Default little-endian.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_byte_order(w: GGUFWriter, order: u32) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        let order = match order {
            0 => ByteOrder::Little,
            1 => ByteOrder::Big,
            other => {
                return Err(Error::msg(
                    ErrorCode::InvalidArgument,
                    format!("{other} is not a GGUFByteOrder"),
                ))
            }
        };
        w.writer.set_byte_order(order);
        Ok(true)
    })
}

/// Sets the alignment of tensor data (a power of two up to 2^24), stored as `general.alignment`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_alignment(w: GGUFWriter, alignment: u32) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        w.writer.set_alignment(alignment)?;
        Ok(true)
    })
}

/// Sets `key` to a UINT8 (replacing its value if the key is set). False, recording why, if an
/// argument is NULL, the key is empty, or the header is already written; likewise below.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_uint8(
    w: GGUFWriter,
    key: *const c_char,
    value: u8,
) -> bool {
    set(w, key, || Ok(MetadataValue::U8(value)))
}

/// Sets `key` to an INT8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_int8(
    w: GGUFWriter,
    key: *const c_char,
    value: i8,
) -> bool {
    set(w, key, || Ok(MetadataValue::I8(value)))
}

/// Sets `key` to a UINT16.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_uint16(
    w: GGUFWriter,
    key: *const c_char,
    value: u16,
) -> bool {
    set(w, key, || Ok(MetadataValue::U16(value)))
}

/// Sets `key` to an INT16.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_int16(
    w: GGUFWriter,
    key: *const c_char,
    value: i16,
) -> bool {
    set(w, key, || Ok(MetadataValue::I16(value)))
}

/// Sets `key` to a UINT32.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_uint32(
    w: GGUFWriter,
    key: *const c_char,
    value: u32,
) -> bool {
    set(w, key, || Ok(MetadataValue::U32(value)))
}

/// Sets `key` to an INT32.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_int32(
    w: GGUFWriter,
    key: *const c_char,
    value: i32,
) -> bool {
    set(w, key, || Ok(MetadataValue::I32(value)))
}

/// Sets `key` to a FLOAT32.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_float32(
    w: GGUFWriter,
    key: *const c_char,
    value: f32,
) -> bool {
    set(w, key, || Ok(MetadataValue::F32(value)))
}

/// Sets `key` to a BOOL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_bool(
    w: GGUFWriter,
    key: *const c_char,
    value: bool,
) -> bool {
    set(w, key, || Ok(MetadataValue::Bool(value)))
}

/// Sets `key` to a UINT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_uint64(
    w: GGUFWriter,
    key: *const c_char,
    value: u64,
) -> bool {
    set(w, key, || Ok(MetadataValue::U64(value)))
}

/// Sets `key` to an INT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_int64(
    w: GGUFWriter,
    key: *const c_char,
    value: i64,
) -> bool {
    set(w, key, || Ok(MetadataValue::I64(value)))
}

/// Sets `key` to a FLOAT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_float64(
    w: GGUFWriter,
    key: *const c_char,
    value: f64,
) -> bool {
    set(w, key, || Ok(MetadataValue::F64(value)))
}

/// Sets `key` to a STRING of the `len` bytes at `str` (any bytes, NUL included; `str` may be
/// NULL when `len` is 0). The bytes are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_string(
    w: GGUFWriter,
    key: *const c_char,
    str: *const c_char,
    len: usize,
) -> bool {
    set(w, key, || {
        // SAFETY: `str` points to `len` readable bytes, or is NULL with `len` 0.
        Ok(MetadataValue::String(
            unsafe { slice(str.cast::<u8>(), len, "str")? }.to_vec(),
        ))
    })
}

/// Decodes `count` host-order elements of type `T` from `data`.
fn elements<T: Element>(data: &[u8], wrap: fn(T) -> MetadataValue) -> Vec<MetadataValue> {
    let order = if cfg!(target_endian = "big") {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    data.chunks_exact(std::mem::size_of::<T>())
        .map(|c| wrap(T::decode(c, order)))
        .collect()
}

/// Sets `key` to an ARRAY of `count` elements of the fixed-size type `elem_type` (a
/// `GGUFValueType` other than STRING and ARRAY), read from `data` as host-order C values
/// (`uint8_t`, ..., `double`; `bool` bytes must be 0 or 1). `data` may be NULL when `count` is
/// 0. The elements are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_array(
    w: GGUFWriter,
    key: *const c_char,
    elem_type: u32,
    data: *const c_void,
    count: u64,
) -> bool {
    set(w, key, || {
        let elem = ValueType::from_id(elem_type)
            .filter(|t| t.fixed_size().is_some())
            .ok_or_else(|| {
                Error::msg(
                    ErrorCode::InvalidArgument,
                    format!(
                        "element type {elem_type} is not a fixed-size value type (for strings use \
                         gguf_writer_set_string_array, for nested arrays gguf_writer_set_array_encoded)"
                    ),
                )
            })?;
        let size = elem.fixed_size().unwrap_or(1) as u64;
        let len = count
            .checked_mul(size)
            .and_then(to_usize)
            .ok_or_else(|| Error::size_overflow(format!("{count} elements")))?;
        // SAFETY: `data` points to `count` elements of `elem_type` (the header's contract).
        let raw = unsafe { slice(data.cast::<u8>(), len, "data")? };
        use MetadataValue as V;
        let items = match elem {
            ValueType::Uint8 => elements::<u8>(raw, V::U8),
            ValueType::Int8 => elements::<i8>(raw, V::I8),
            ValueType::Uint16 => elements::<u16>(raw, V::U16),
            ValueType::Int16 => elements::<i16>(raw, V::I16),
            ValueType::Uint32 => elements::<u32>(raw, V::U32),
            ValueType::Int32 => elements::<i32>(raw, V::I32),
            ValueType::Float32 => elements::<f32>(raw, V::F32),
            ValueType::Uint64 => elements::<u64>(raw, V::U64),
            ValueType::Int64 => elements::<i64>(raw, V::I64),
            ValueType::Float64 => elements::<f64>(raw, V::F64),
            _ => {
                if let Some(i) = raw.iter().position(|&b| b > 1) {
                    return Err(Error::new(ErrorKind::BadBool {
                        found: raw[i],
                        element: Some(i as u64),
                    }));
                }
                raw.iter().map(|&b| V::Bool(b == 1)).collect()
            }
        };
        Ok(V::Array(elem, items))
    })
}

/// Sets `key` to an ARRAY of `count` STRINGs: `strs[i]` holds `lens[i]` bytes, or, when `lens`
/// is NULL, is NUL-terminated. The strings are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_string_array(
    w: GGUFWriter,
    key: *const c_char,
    strs: *const *const c_char,
    lens: *const usize,
    count: u64,
) -> bool {
    set(w, key, || {
        let overflow = || Error::size_overflow(format!("{count} strings"));
        let n = to_usize(count).ok_or_else(overflow)?;
        let len = n
            .checked_mul(std::mem::size_of::<usize>())
            .ok_or_else(overflow)?;
        // SAFETY: `strs` points to `count` pointers (the header's contract).
        let strs = unsafe { slice(strs.cast::<u8>(), len, "strs")? };
        let ptrs: Vec<*const c_char> = strs
            .chunks_exact(std::mem::size_of::<usize>())
            .map(|c| usize::from_ne_bytes(c.try_into().unwrap_or_default()) as *const c_char)
            .collect();
        let lens: Option<&[usize]> = if lens.is_null() {
            None
        } else {
            // SAFETY: non-NULL `lens` points to `count` lengths (the header's contract).
            Some(unsafe { slice(lens, n, "lens")? })
        };
        let mut items = Vec::with_capacity(n);
        for (i, &p) in ptrs.iter().enumerate() {
            let s = match lens {
                // SAFETY: `strs[i]` holds `lens[i]` bytes (the header's contract).
                Some(lens) => unsafe { slice(p.cast::<u8>(), lens[i], "strs[i]")? },
                // SAFETY: `strs[i]` is NULL or NUL-terminated (the header's contract).
                None => unsafe { c_str(p, "strs[i]")? },
            };
            items.push(MetadataValue::String(s.to_vec()));
        }
        Ok(MetadataValue::Array(ValueType::String, items))
    })
}

/// Sets `key` to an ARRAY of `count` elements of any `elem_type` (nested arrays included)
/// given as they are encoded in a little-endian version-3 GGUF file: the `size` bytes at
/// `data` are exactly the elements (strings as a u64 length and bytes; a nested array as its
/// element type, u64 count and elements). They are parsed with the reader's checks (a refusal's
/// offset counts from `data`); the array is then written in the writer's own version and byte
/// order. This is how a `GGUFMetadataKV`'s `array_data`/`array_bytes` from a little-endian file
/// are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_array_encoded(
    w: GGUFWriter,
    key: *const c_char,
    elem_type: u32,
    count: u64,
    data: *const c_void,
    size: usize,
) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        // SAFETY: `key` is NULL or NUL-terminated (the header's contract).
        let key = unsafe { c_str(key, "key")? };
        // SAFETY: `data` points to `size` readable bytes (the header's contract).
        let elements = unsafe { slice(data.cast::<u8>(), size, "data")? };
        w.writer
            .set_array_encoded(key, elem_type, count, elements)?;
        Ok(true)
    })
}

/// Removes `key`. False, recording GGUF_ERROR_CODE_NOT_FOUND, if it is not set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_remove_key(w: GGUFWriter, key: *const c_char) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        // SAFETY: `key` is NULL or NUL-terminated (the header's contract).
        let key = unsafe { c_str(key, "key")? };
        if w.writer.remove_metadata(key) {
            Ok(true)
        } else {
            Err(Error::msg(
                ErrorCode::NotFound,
                format!("no metadata key {}", quote(key)),
            ))
        }
    })
}

/// Adds a tensor: `name` (NUL-terminated, unique), `n_dims` (0 to 4) dimensions at `dims`
/// (innermost first), data type `dtype` (a `GGUFDataType`), and its data: `size` bytes at
/// `data`, which must equal the size the type and dimensions give. `data` is not copied: it
/// must stay valid until the file is written. Pass NULL `data` to stream the tensor's data
/// later (`gguf_writer_begin_file`, `gguf_writer_write_tensor_data`). Refused like the reader
/// refuses (duplicate name, more than 4 dimensions, a first dimension that is not a whole
/// number of blocks, a size that overflows or differs), recording why.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_add_tensor(
    w: GGUFWriter,
    name: *const c_char,
    n_dims: u32,
    dims: *const u64,
    dtype: u32,
    data: *const c_void,
    size: u64,
) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        // SAFETY: `name` is NULL or NUL-terminated (the header's contract).
        let name = unsafe { c_str(name, "name")? };
        // Refused before `dims` is read: it holds `n_dims` values.
        check_dim_count(name, n_dims.into())?;
        // SAFETY: `dims` points to `n_dims` values (the header's contract).
        let dims_bytes = unsafe { slice(dims.cast::<u8>(), n_dims as usize * 8, "dims")? };
        let dims: Vec<u64> = dims_bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let dtype = DataType::from_id(dtype).ok_or_else(|| {
            Error::new(ErrorKind::BadDataType {
                tensor: quote(name),
                found: dtype,
                refused: true,
            })
        })?;
        let data = if data.is_null() {
            TensorData::streamed()
        } else {
            let len = byte_count(size)?;
            let (owner, range) = lent(data.cast(), len);
            TensorData::shared(owner, range)?
        };
        w.writer.add_tensor_data(name, &dims, dtype, data)?;
        Ok(true)
    })
}

/// Creates a temporary file beside `path` and writes the header (metadata and tensor infos)
/// into it: from then on metadata and tensors are frozen. Then give each tensor's data, in the
/// order the tensors were added, with `gguf_writer_write_tensor_data`, and end with
/// `gguf_writer_finish`, which renames the file over `path`. Until then `path` is untouched, and
/// it stays so if anything fails. `path` is taken byte for byte (no change of encoding).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_begin_file(w: GGUFWriter, path: *const c_char) -> bool {
    with_writer(w, false, |w| {
        // SAFETY: `path` is NULL or NUL-terminated (the header's contract).
        let path = unsafe { c_path(path, "path")? };
        w.editable()?;
        w.stream = Some(w.writer.begin_file(&path)?);
        Ok(true)
    })
}

/// Writes the data of the next tensor (in the order tensors were added): exactly its size in
/// bytes, then the padding to the alignment. False, recording why, if no file is begun, every
/// tensor is already written, or `size` differs from the tensor's (such a refusal changes
/// nothing). If writing fails (disk full, file size limit, I/O error) the file is abandoned:
/// its temporary file is removed, the destination is untouched, and this call and every later
/// `gguf_writer_write_tensor_data` and `gguf_writer_finish` fail with the same error, until
/// `gguf_writer_begin_file` starts another file.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_write_tensor_data(
    w: GGUFWriter,
    data: *const c_void,
    size: u64,
) -> bool {
    with_writer(w, false, |w| {
        let len = byte_count(size)?;
        // SAFETY: `data` points to `size` readable bytes (the header's contract).
        let data = unsafe { slice(data.cast::<u8>(), len, "data")? };
        let stream = w.stream.as_mut().ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                "no file is being written: call gguf_writer_begin_file first",
            )
        })?;
        stream.write_tensor_data(data)?;
        Ok(true)
    })
}

/// Finishes the file begun with `gguf_writer_begin_file`: checks every tensor's data was
/// written (if not, refuses and the file stays open), flushes it, syncs it to stable storage
/// (unless `gguf_writer_set_sync` turned that off), renames it over the destination and syncs
/// the directory. The writer is then editable again and can begin another file. False,
/// recording why, on failure; a failure to write sticks (see `gguf_writer_write_tensor_data`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_finish(w: GGUFWriter) -> bool {
    with_writer(w, false, |w| {
        let stream = w
            .stream
            .as_mut()
            .ok_or_else(|| Error::msg(ErrorCode::InvalidArgument, "no file is being written"))?;
        stream.finish()?;
        w.stream = None;
        Ok(true)
    })
}

/// Writes the whole file to `path`: the header, then every tensor's data from the pointer
/// given to `gguf_writer_add_tensor` (or `gguf_writer_from_file`). Every tensor must have data.
/// The write is atomic: the bytes go to a temporary file in `path`'s directory, named
/// `.<name>.gguf-tmp-<pid>-<random>` and created with the permissions an existing file at
/// `path` had, which is synced (unless `gguf_writer_set_sync` turned that off) and renamed over
/// `path`. On failure, `path` is exactly what it was, the temporary file is removed, and the
/// writer is unchanged: it can be written again, to `path` or elsewhere. `path` may be the file
/// the writer's source handle was opened from (an in-place edit): the handle keeps reading the
/// old contents until closed. `path` is taken byte for byte (no change of encoding).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_write_file(w: GGUFWriter, path: *const c_char) -> bool {
    with_writer(w, false, |w| {
        // SAFETY: `path` is NULL or NUL-terminated (the header's contract).
        let path = unsafe { c_path(path, "path")? };
        w.editable()?;
        w.writer.write_file_for(&path, Api::C)?;
        Ok(true)
    })
}

/// The size in bytes of the file `gguf_writer_write_memory` would write now (what its buffer
/// must hold). 0, recording why, if `w` is NULL, a file is being streamed or the size passes
/// 2^64 bytes (a GGUF file is never empty).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_memory_size(w: GGUFWriter) -> u64 {
    with_writer(w, 0, |w| {
        w.editable()?;
        w.writer.file_size()
    })
}

/// Writes the whole file into `buffer` (`capacity` bytes, owned by the caller) instead of a
/// file: the header, then every tensor's data from the pointer given to
/// `gguf_writer_add_tensor` (or `gguf_writer_from_file`). Every tensor must have data. The file
/// takes exactly `gguf_writer_memory_size(w)` bytes from the start of `buffer`; the rest is
/// untouched. For platforms without a file system (wasm32), and to open the result with
/// `gguf_open_memory`. False, recording why, if an argument is NULL, a file is being streamed,
/// a tensor has no data or `capacity` is too small (then `buffer` is untouched).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_write_memory(
    w: GGUFWriter,
    buffer: *mut c_void,
    capacity: usize,
) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        if buffer.is_null() {
            return Err(null("buffer"));
        }
        // SAFETY: non-NULL, and the caller lends `capacity` writable bytes at `buffer`, which
        // no other reference touches during this call.
        let buffer = unsafe { slice_mut(buffer.cast::<u8>(), capacity, "buffer")? };
        w.writer.write_to_slice_for(buffer, Api::C)?;
        Ok(true)
    })
}

/// Whether files written from now on are flushed to stable storage (fsync of the file before
/// it is renamed over the destination, and of the directory after). On by default; turn it off
/// (`false`) for scratch outputs where speed matters more than surviving a power cut: the
/// replace is still atomic for other processes, but a crash of the machine may leave an empty
/// or partial file. False, recording why, if `w` is NULL or a file is being streamed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_writer_set_sync(w: GGUFWriter, sync: bool) -> bool {
    with_writer(w, false, |w| {
        w.editable()?;
        w.writer.set_sync(sync);
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::gguf_tensor_count;
    use crate::ffi::OpenFlag;
    use crate::ffi::{gguf_close, gguf_last_error_code, gguf_open, gguf_open_ex, gguf_open_memory};

    /// The writer to memory writes what the writer to a file writes, byte for byte, and a
    /// buffer too small is refused and left untouched.
    #[test]
    fn memory_holds_what_the_file_gets() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.gguf\0");
        // SAFETY: a NUL-terminated path.
        let src = unsafe { gguf_open(path.as_ptr().cast()) };
        assert!(!src.is_null());
        // SAFETY: a live handle.
        let w = unsafe { gguf_writer_from_file(src) };
        assert!(!w.is_null());
        // SAFETY: a live writer.
        let size = unsafe { gguf_writer_memory_size(w) };
        assert!(size > 0, "{}", gguf_last_error_code());
        let size = usize::try_from(size).unwrap();

        let mut buf = vec![0xa5u8; size + 7];
        // SAFETY: a live writer and `size - 1` writable bytes.
        let ok = unsafe { gguf_writer_write_memory(w, buf.as_mut_ptr().cast(), size - 1) };
        assert!(!ok);
        assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
        assert!(buf.iter().all(|&b| b == 0xa5));
        // SAFETY: a live writer and `buf.len()` writable bytes.
        assert!(unsafe { gguf_writer_write_memory(w, buf.as_mut_ptr().cast(), buf.len()) });
        assert!(buf[size..].iter().all(|&b| b == 0xa5));

        let dir = std::env::temp_dir().join(format!("gguf-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out.gguf");
        let c_out = std::ffi::CString::new(out.to_str().unwrap()).unwrap();
        // SAFETY: a live writer and a NUL-terminated path.
        assert!(unsafe { gguf_writer_write_file(w, c_out.as_ptr()) });
        let written = std::fs::read(&out).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(written.len(), size);
        assert!(written == buf[..size], "the bytes differ from the file's");

        // SAFETY: `size` readable bytes that outlive the handle.
        let again = unsafe { gguf_open_memory(buf.as_ptr().cast(), size) };
        assert!(!again.is_null());
        // SAFETY: live handles.
        unsafe {
            assert_eq!(gguf_tensor_count(again), gguf_tensor_count(src));
            gguf_close(again);
            gguf_writer_free(w);
            gguf_close(src);
        }

        // A handle that does not map its file: the data is read from it, the same bytes.
        // SAFETY: a NUL-terminated path.
        let unmapped = unsafe { gguf_open_ex(path.as_ptr().cast(), OpenFlag::NoMap as u32) };
        assert!(!unmapped.is_null());
        // SAFETY: a live handle, and a writer freed before it is closed.
        unsafe {
            let w = gguf_writer_from_file(unmapped);
            assert!(!w.is_null(), "{}", gguf_last_error_code());
            assert_eq!(gguf_writer_memory_size(w), size as u64);
            let mut copy = vec![0u8; size];
            assert!(gguf_writer_write_memory(w, copy.as_mut_ptr().cast(), size));
            assert!(copy == buf[..size], "the unmapped copy differs");
            gguf_writer_free(w);
            gguf_close(unmapped);
        }
    }
}
