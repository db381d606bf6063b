//! Array helpers: whole arrays decoded into host-order, aligned buffers (built on first call,
//! then the same pointer every time), and zero-copy access to one string of a string array.

use super::array_cache::{HostElement, StringArray};
use super::boundary::{c_str, guard, to_usize, try_from, write_out};
use super::handle::{GGUFFile, GGUFFileImpl};
use crate::error::{ErrorCode, Result};
use crate::text::quote;
use crate::types::ValueType;
use crate::value::{Array, Value};
use std::ffi::c_char;

/// The array stored under `key`, and its entry's position.
fn array_at<'f>(f: &'f GGUFFileImpl, key: *const c_char) -> Result<(usize, Array<'f>)> {
    // SAFETY: `key` is NULL or a NUL-terminated string (the header's contract).
    let key = unsafe { c_str(key, "key")? };
    let i = f.kv_index(key)?;
    match f.model.first().metadata_at(i).map(|e| e.value) {
        Some(Value::Array(array)) => Ok((i, array)),
        other => Err(f.error(
            ErrorCode::WrongType,
            format!(
                "key {} holds a {}, not an ARRAY",
                quote(key),
                other.map_or("nothing", |v| v.value_type().name())
            ),
        )),
    }
}

fn expect_elements(
    f: &GGUFFileImpl,
    key: *const c_char,
    array: &Array<'_>,
    want: ValueType,
) -> Result<()> {
    if array.elem_type() == want {
        return Ok(());
    }
    // SAFETY: `key` was read successfully just before; it is a NUL-terminated string.
    let key = unsafe { c_str(key, "key")? };
    Err(f.error(
        ErrorCode::WrongType,
        format!(
            "key {} is an array of {}, not of {}",
            quote(key),
            array.elem_type().name(),
            want.name()
        ),
    ))
}

fn typed_array<T: HostElement>(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const T {
    // SAFETY: `out_count` is NULL or valid for writes (the header's contract).
    unsafe { write_out(out_count, 0) };
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let (i, array) = array_at(f, key)?;
        expect_elements(f, key, &array, T::TYPE)?;
        let host = f.arrays[i].numbers.get_or_init(|| {
            Box::new(T::wrap(
                array.to_vec::<T>().unwrap_or_default().into_boxed_slice(),
            ))
        });
        let elements = T::unwrap(host).unwrap_or_default();
        // SAFETY: `out_count` is NULL or valid for writes (the header's contract).
        unsafe { write_out(out_count, elements.len() as u64) };
        Ok(elements.as_ptr())
    })
}

/// The array under `key` as NUL-terminated strings, and its length in `*out_count` (when
/// `out_count` is not NULL; set to 0 on failure). Built on the first call, in one allocation for
/// the bytes and one for the pointers: the bytes are the strings in order, each followed by one
/// NUL, from the first pointer on; later calls return the same pointer. Owned by the handle,
/// valid until `gguf_close`. NULL if the key is missing (GGUF_ERROR_CODE_NOT_FOUND), is not an
/// array of STRING (GGUF_ERROR_CODE_WRONG_TYPE), or an argument is NULL. Strings containing NUL
/// bytes appear cut at the first one: use `gguf_get_array_string` for their full bytes. Never
/// NULL on success, even for an empty array. The array is read-only despite its `const char **`
/// type (kept for compatibility with akunu's API).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_string_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *mut *const c_char {
    // SAFETY: `out_count` is NULL or valid for writes (the header's contract).
    unsafe { write_out(out_count, 0) };
    guard(std::ptr::null_mut(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let (i, array) = array_at(f, key)?;
        expect_elements(f, key, &array, ValueType::String)?;
        let strings = f.arrays[i].strings.get_or_init(|| {
            Box::new(StringArray::build(
                &array,
                f.model.first().layout().len_size(),
            ))
        });
        // SAFETY: `out_count` is NULL or valid for writes (the header's contract).
        unsafe { write_out(out_count, strings.ptrs.len() as u64) };
        // Mutable only to keep akunu's `const char **` signature; callers must not write.
        Ok(strings.ptrs.as_ptr().cast_mut())
    })
}

/// String `index` of the string array under `key`, zero-copy: a pointer into the file's mapping
/// (NOT NUL-terminated) with its length in bytes in `*out_len` (when not NULL; 0 on failure).
/// The first call for an array indexes it (one allocation); every call after is O(1). Valid until
/// `gguf_close`. NULL if the key is missing, is not an array of STRING, `index` is past the end
/// (GGUF_ERROR_CODE_INVALID_ARGUMENT), or an argument is NULL. An empty string yields a non-NULL
/// pointer and length 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_array_string(
    file: GGUFFile,
    key: *const c_char,
    index: u64,
    out_len: *mut u64,
) -> *const c_char {
    // SAFETY: `out_len` is NULL or valid for writes (the header's contract).
    unsafe { write_out(out_len, 0) };
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let (i, array) = array_at(f, key)?;
        expect_elements(f, key, &array, ValueType::String)?;
        let starts = f.arrays[i].string_starts.get_or_init(|| {
            let raw = array.raw_bytes();
            let base = raw.as_ptr() as usize;
            let mut starts: Vec<usize> =
                Vec::with_capacity(crate::size::in_memory(array.len()) + 1);
            for s in array.strings().into_iter().flatten() {
                starts.push(s.as_ptr() as usize - base);
            }
            starts.push(raw.len());
            Box::new(starts.into_boxed_slice())
        });
        let n = starts.len() - 1;
        let index_ok = to_usize(index).filter(|&i| i < n);
        let Some(at) = index_ok else {
            return Err(f.error(
                ErrorCode::InvalidArgument,
                format!("string index {index} is past the end ({n} strings)"),
            ));
        };
        // Element `at`'s bytes start at starts[at]; its length is what precedes element at+1
        // minus the next element's length field.
        let len_size = f.model.first().layout().len_size();
        let end = if at + 1 < n {
            starts[at + 1] - len_size
        } else {
            starts[n]
        };
        let bytes = &array.raw_bytes()[starts[at]..end];
        // SAFETY: `out_len` is NULL or valid for writes (the header's contract).
        unsafe { write_out(out_len, bytes.len() as u64) };
        Ok(bytes.as_ptr().cast())
    })
}

/// The FLOAT32 array under `key` in host byte order, aligned, with its length in `*out_count`
/// (when not NULL; 0 on failure). Built on the first call; later calls return the same pointer.
/// Owned by the handle, valid until `gguf_close`. NULL if the key is missing
/// (GGUF_ERROR_CODE_NOT_FOUND), is not an array of FLOAT32 (GGUF_ERROR_CODE_WRONG_TYPE), or an
/// argument is NULL. Never NULL on success, even for an empty array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_float_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const f32 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of FLOAT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_float64_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const f64 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of UINT8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_uint8_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const u8 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of INT8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_int8_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const i8 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of UINT16.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_uint16_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const u16 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of INT16.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_int16_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const i16 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of UINT32.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_uint32_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const u32 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of INT32 (e.g. `tokenizer.ggml.token_type`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_int32_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const i32 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of UINT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_uint64_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const u64 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of INT64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_int64_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const i64 {
    typed_array(file, key, out_count)
}

/// As `gguf_get_float_array`, for an array of BOOL (each 0 or 1: other bytes are refused at open).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_bool_array(
    file: GGUFFile,
    key: *const c_char,
    out_count: *mut u64,
) -> *const bool {
    typed_array(file, key, out_count)
}
