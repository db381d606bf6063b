//! Array helpers: whole arrays decoded into host-order, aligned buffers (built on first call,
//! then the same pointer every time), zero-copy access to one string of a string array, and any
//! array of an entry, nested ones included, by the entry's index and a path of indexes.

use super::array_cache::{
    string_views, ArrayCaches, HostArray, HostElement, InnerArray, StringArray,
};
use super::boundary::{c_str, guard, memory_count, slice, to_usize, try_from, write_out};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::records::GGUFArray;
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
        let elements = numbers(&f.arrays[i], &array).and_then(T::unwrap);
        let elements = elements.unwrap_or_default();
        // SAFETY: `out_count` is NULL or valid for writes (the header's contract).
        unsafe { write_out(out_count, elements.len() as u64) };
        Ok(elements.as_ptr())
    })
}

/// The numbers (or BOOLs) of `array`, whose views `caches` keeps, in host byte order: decoded on
/// the first call, the same buffer after. `None` for arrays of STRING or ARRAY.
fn numbers<'c>(caches: &'c ArrayCaches, array: &Array<'_>) -> Option<&'c HostArray> {
    if matches!(array.elem_type(), ValueType::String | ValueType::Array) {
        return None;
    }
    let host = caches
        .numbers
        .get_or_init(|| Box::new(HostArray::decode(array).expect("a number type")));
    Some(host)
}

/// `[1][0]`: a path of indexes as messages show it.
fn shown(path: &[u64]) -> String {
    path.iter().map(|i| format!("[{i}]")).collect()
}

/// The array at `path` inside metadata entry `i`, with the views the handle keeps of it.
fn nested<'f>(
    f: &'f GGUFFileImpl,
    kv_index: u64,
    path: &[u64],
) -> Result<(Array<'f>, &'f ArrayCaches)> {
    let file = f.model.first();
    let layout = file.layout();
    let found = to_usize(kv_index).and_then(|i| Some((i, file.metadata_at(i)?)));
    let (i, entry) = found.ok_or_else(|| {
        f.error(
            ErrorCode::InvalidArgument,
            format!(
                "metadata index {kv_index} is past the end ({} entries)",
                f.metadata.len()
            ),
        )
    })?;
    let key = quote(entry.key);
    let Value::Array(mut array) = entry.value else {
        return Err(f.error(
            ErrorCode::WrongType,
            format!(
                "key {key} holds a {}, not an ARRAY",
                entry.value.value_type().name()
            ),
        ));
    };
    let mut caches = &f.arrays[i];
    for (depth, &index) in path.iter().enumerate() {
        if array.elem_type() != ValueType::Array {
            return Err(f.error(
                ErrorCode::WrongType,
                format!(
                    "key {key}{} is an array of {}, not of ARRAY: it has no array {}",
                    shown(&path[..depth]),
                    array.elem_type().name(),
                    shown(&path[..=depth])
                ),
            ));
        }
        let inner = caches
            .inner
            .get_or_init(|| Box::new(InnerArray::build(&array, layout)));
        let found = to_usize(index)
            .and_then(|k| inner.get(k))
            .and_then(|slot| Some((slot.view(&array, layout)?, slot)));
        let Some((element, slot)) = found else {
            return Err(f.error(
                ErrorCode::InvalidArgument,
                format!(
                    "array index {index} of key {key}{} is past the end ({} arrays)",
                    shown(&path[..depth]),
                    inner.len()
                ),
            ));
        };
        array = element;
        caches = slot.caches.get_or_init(|| Box::new(ArrayCaches::default()));
    }
    Ok((array, caches))
}

/// Fills `*out` with the array at `path` inside the value of metadata entry `kv_index` (its
/// position, as `gguf_get_metadata_by_index` takes it, so that a key holding NUL bytes is
/// reachable too): with `path_len` 0 the entry's own array; with `path = {i}` element `i` of an
/// array of arrays; with `{i, j}` element `j` of that, and so on. `out->data` holds the elements
/// decoded (see `GGUFArray`): numbers and BOOLs in host byte order and aligned (at path length
/// 0, the buffer the typed getter of the key returns), strings as zero-copy `GGUFString`s into
/// the file's bytes, and NULL for arrays of arrays, whose elements are reached by a longer path.
/// Each array's elements are decoded on the first call that reaches it; every later call for the
/// same path gives the same pointer, valid until `gguf_close`. Returns false, setting `*out` to
/// all zeros (when `out` is not NULL), if `kv_index` is past the entries or an index of `path` is
/// past its array's end (GGUF_ERROR_CODE_INVALID_ARGUMENT), the entry is not an ARRAY or `path`
/// goes into an array whose elements are not arrays (GGUF_ERROR_CODE_WRONG_TYPE), or `file`,
/// `out` or (with `path_len` above 0) `path` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_get_nested_array(
    file: GGUFFile,
    kv_index: u64,
    path: *const u64,
    path_len: u64,
    out: *mut GGUFArray,
) -> bool {
    // SAFETY: `out` is NULL or valid for writes (the header's contract).
    unsafe { write_out(out, GGUFArray::NONE) };
    guard(false, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        if out.is_null() {
            return Err(super::boundary::null("out"));
        }
        let n = memory_count(path_len, "path_len")?;
        // SAFETY: `path` holds `path_len` indexes (the header's contract).
        let path = unsafe { slice(path, n, "path")? };
        let (array, caches) = nested(f, kv_index, path)?;
        let data = match array.elem_type() {
            ValueType::Array => std::ptr::null(),
            ValueType::String => caches
                .string_views
                .get_or_init(|| Box::new(string_views(&array)))
                .as_ptr()
                .cast(),
            _ => numbers(caches, &array).map_or(std::ptr::null(), HostArray::as_ptr),
        };
        let record = GGUFArray {
            elem_type: array.elem_type().id(),
            count: array.len(),
            data,
        };
        // SAFETY: non-NULL (checked) and valid for writes (the header's contract).
        unsafe { write_out(out, record) };
        Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::ffi::records::GGUFString;
    use crate::ffi::{gguf_close, gguf_last_error, gguf_last_error_code, gguf_open_memory};
    use crate::format::ByteOrder;
    use crate::writer::{MetadataValue as V, Writer};
    use std::ffi::c_void;
    use std::ffi::CStr;

    /// `[[[1, 2], []], [[3]], []]` of UINT32 under a key holding a NUL byte, then
    /// `[["a", "", "b\0c"], [true, false]]`, then a scalar.
    fn model(version: u32, order: ByteOrder) -> Vec<u8> {
        let u32s = |v: &[u32]| V::Array(ValueType::Uint32, v.iter().map(|&x| V::U32(x)).collect());
        let arrays = |v: Vec<V>| V::Array(ValueType::Array, v);
        let mut w = Writer::new();
        w.set_version(version).unwrap().set_byte_order(order);
        let deep = arrays(vec![
            arrays(vec![u32s(&[1, 2]), u32s(&[])]),
            arrays(vec![u32s(&[3])]),
            arrays(vec![]),
        ]);
        w.add_metadata(b"deep\0key", deep).unwrap();
        let strings = V::Array(
            ValueType::String,
            vec![V::string("a"), V::string(""), V::string(b"b\0c")],
        );
        let bools = V::Array(ValueType::Bool, vec![V::Bool(true), V::Bool(false)]);
        w.add_metadata(b"mixed", arrays(vec![strings, bools]))
            .unwrap();
        w.add_metadata(b"scalar", V::U8(9)).unwrap();
        w.to_bytes().unwrap()
    }

    /// The array at `path` in entry `kv`, or the error's code and message.
    fn get(f: GGUFFile, kv: u64, path: &[u64]) -> std::result::Result<GGUFArray, (u32, String)> {
        let mut out = GGUFArray {
            elem_type: 77,
            count: 77,
            data: 1 as *const c_void,
        };
        // SAFETY: a live handle, `path.len()` indexes and a writable record.
        let ok =
            unsafe { gguf_get_nested_array(f, kv, path.as_ptr(), path.len() as u64, &mut out) };
        if ok {
            return Ok(out);
        }
        assert!(out.data.is_null() && out.count == 0 && out.elem_type == 0);
        // SAFETY: the thread's last error, a NUL-terminated string.
        let message = unsafe { CStr::from_ptr(gguf_last_error()) };
        Err((
            gguf_last_error_code(),
            message.to_string_lossy().into_owned(),
        ))
    }

    /// The UINT32s of a decoded array.
    fn numbers(a: &GGUFArray) -> Vec<u32> {
        assert_eq!(a.elem_type, ValueType::Uint32.id());
        assert!(!a.data.is_null() && a.data.cast::<u32>().is_aligned());
        // SAFETY: `count` aligned UINT32s owned by the open handle.
        unsafe { std::slice::from_raw_parts(a.data.cast::<u32>(), crate::size::in_memory(a.count)) }
            .to_vec()
    }

    #[test]
    fn nested_arrays_are_decoded_at_every_depth() {
        for (version, order) in [
            (3, ByteOrder::Little),
            (3, ByteOrder::Big),
            (1, ByteOrder::Big),
        ] {
            let bytes = model(version, order);
            // SAFETY: `bytes` outlives the handle.
            let f = unsafe { gguf_open_memory(bytes.as_ptr().cast(), bytes.len()) };
            assert!(!f.is_null());
            let top = get(f, 0, &[]).unwrap();
            assert_eq!((top.elem_type, top.count), (ValueType::Array.id(), 3));
            assert!(top.data.is_null());
            let a0 = get(f, 0, &[0]).unwrap();
            assert_eq!((a0.elem_type, a0.count), (ValueType::Array.id(), 2));
            let a00 = get(f, 0, &[0, 0]).unwrap();
            assert_eq!(numbers(&a00), [1, 2]);
            assert_eq!(
                get(f, 0, &[0, 0]).unwrap().data,
                a00.data,
                "the same buffer"
            );
            assert_eq!(numbers(&get(f, 0, &[0, 1]).unwrap()), [] as [u32; 0]);
            assert_eq!(numbers(&get(f, 0, &[1, 0]).unwrap()), [3]);
            assert_eq!(get(f, 0, &[2]).unwrap().count, 0);

            let strings = get(f, 1, &[0]).unwrap();
            assert_eq!(
                (strings.elem_type, strings.count),
                (ValueType::String.id(), 3)
            );
            // SAFETY: `count` records owned by the open handle, each naming bytes in `bytes`.
            let got: Vec<&[u8]> = unsafe {
                std::slice::from_raw_parts(strings.data.cast::<GGUFString>(), 3)
                    .iter()
                    .map(|s| {
                        std::slice::from_raw_parts(
                            s.data.cast::<u8>(),
                            crate::size::in_memory(s.len),
                        )
                    })
                    .collect()
            };
            assert_eq!(got, [&b"a"[..], b"", b"b\0c"]);
            let bools = get(f, 1, &[1]).unwrap();
            assert_eq!((bools.elem_type, bools.count), (ValueType::Bool.id(), 2));
            // SAFETY: two BOOLs owned by the open handle.
            let b = unsafe { std::slice::from_raw_parts(bools.data.cast::<bool>(), 2) };
            assert_eq!(b, [true, false]);

            // Hostile paths and entries: refused, naming what is wrong.
            let invalid = ErrorCode::InvalidArgument as u32;
            let wrong = ErrorCode::WrongType as u32;
            let e = get(f, 0, &[3]).unwrap_err();
            assert_eq!(e.0, invalid);
            assert!(
                e.1.contains("array index 3 of key 'deep\\x00key' is past the end (3 arrays)"),
                "{}",
                e.1
            );
            let e = get(f, 0, &[1, 1]).unwrap_err();
            assert!(
                e.1.contains("array index 1 of key 'deep\\x00key'[1] is past"),
                "{}",
                e.1
            );
            assert_eq!(get(f, 0, &[u64::MAX]).unwrap_err().0, invalid);
            let e = get(f, 0, &[0, 0, 0]).unwrap_err();
            assert_eq!(e.0, wrong);
            assert!(
                e.1.contains("key 'deep\\x00key'[0][0] is an array of UINT32, not of ARRAY"),
                "{}",
                e.1
            );
            let e = get(f, 2, &[]).unwrap_err();
            assert_eq!(e.0, wrong);
            assert!(
                e.1.contains("key 'scalar' holds a UINT8, not an ARRAY"),
                "{}",
                e.1
            );
            let e = get(f, 3, &[]).unwrap_err();
            assert_eq!(e.0, invalid);
            assert!(
                e.1.contains("metadata index 3 is past the end (3 entries)"),
                "{}",
                e.1
            );
            assert_eq!(get(f, u64::MAX, &[]).unwrap_err().0, invalid);

            let mut out = GGUFArray::NONE;
            let null = ErrorCode::NullArgument as u32;
            // SAFETY: NULL and misaligned pointers are refused before they are read.
            unsafe {
                assert!(!gguf_get_nested_array(f, 0, std::ptr::null(), 1, &mut out));
                assert_eq!(gguf_last_error_code(), null);
                let odd = [0u64; 2]
                    .as_ptr()
                    .cast::<u8>()
                    .wrapping_add(1)
                    .cast::<u64>();
                assert!(!gguf_get_nested_array(f, 0, odd, 1, &mut out));
                assert_eq!(gguf_last_error_code(), invalid);
                assert!(!gguf_get_nested_array(
                    f,
                    0,
                    std::ptr::null(),
                    0,
                    std::ptr::null_mut()
                ));
                assert_eq!(gguf_last_error_code(), null);
                let none: GGUFFile = std::ptr::null_mut();
                assert!(!gguf_get_nested_array(
                    none,
                    0,
                    std::ptr::null(),
                    0,
                    &mut out
                ));
                assert_eq!(gguf_last_error_code(), null);
                gguf_close(f);
            }
        }
    }
}
