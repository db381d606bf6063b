//! Conformance with the reference implementation: the PyPI package `gguf` (gguf-py from
//! llama.cpp), pinned in `tests/conformance/requirements.txt` and installed by `make venv`.
//!
//! * Reference -> libgguf: `tests/conformance/generate.py` writes random files with
//!   `gguf.GGUFWriter` and, beside each, a JSON sidecar of what `gguf.GGUFReader` sees. Every
//!   file is then opened with the Rust API (`GgufFile::open`) and with the C API (`gguf_open` and
//!   its getters), and every fact is compared exactly: version, byte order, alignment, data
//!   offset, every key in order with its value type and value (float bits, string bytes, array
//!   element types and elements, nested arrays), every tensor's name, shape, type, offsets, size
//!   and the sha256 of its data.
//! * libgguf -> reference: files written with `gguf::Writer` (both byte orders, versions 2 and 3,
//!   empty arrays, deep nested arrays, non-UTF-8 strings, every data type the reference knows)
//!   are described by `GGUFReader` and compared with what was written, and with libgguf's view.
//!
//! The interpreter is `$GGUF_PYTHON`, else `<repo>/.venv/bin/python`; without one the tests fail
//! (run `make venv`). `GGUF_CONFORMANCE_SEED` adds a second corpus with that seed and
//! `GGUF_CONFORMANCE_COUNT` changes the number of files per corpus (default 40).
//!
//! On other targets (`tools/cross.sh`) the reference cannot run: the host generates the default
//! corpus once, `$GGUF_CONFORMANCE_CORPUS` names it, and every target (big-endian s390x, i686,
//! Windows, aarch64) must read each file as the reference's sidecar says. The libgguf ->
//! reference direction stays on the host.

mod common;

use common::canon::{self, hex, order_name, prefix, read_json, sha256, strip, unhex};
use common::{last_error, run_reference};
use gguf::ffi::{self, GGUFFile, GGUFMetadataKV};
use gguf::{ByteOrder, DataType, GgufFile, MetadataValue, ValueType, Writer};
use serde_json::{json, Value as Json};
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

/// Seed of the corpus every run checks.
const SEED: u64 = 1;
/// Files per corpus.
const COUNT: usize = 40;
/// Data types this library knows and the pinned reference does not (newer in ggml than it).
/// The forward test fails if this list goes stale.
const NOT_IN_REFERENCE: &[DataType] = &[DataType::Q2_0];
/// Data types whose size the pinned reference gets wrong, with the reference's (block elements,
/// block bytes). Q8_1: gguf-py 0.19.0's `GGML_QUANT_SIZES` says 32 elements in 4 + 4 + 32 = 40
/// bytes (an old layout with two f32 scales); ggml's `block_q8_1` is two `ggml_half` plus 32
/// `int8_t` = 36 bytes (static_assert in ggml-common.h; tests/data/ggml-types.tsv), which is what
/// libgguf uses. Such tensors are left out of both directions (generate.py's
/// `KNOWN_WRONG_SIZES`); the forward test fails if this list goes stale.
const REFERENCE_WRONG_SIZES: &[(DataType, (u64, u64))] = &[(DataType::Q8_1, (32, 40))];
/// Mismatches listed in a failure message (all are counted).
const SHOWN: usize = 40;

/// A fresh directory under target/ for one test's files.
fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("conformance")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the work directory");
    dir
}

/// Keys and names for messages: the text when UTF-8, else the hex.
fn shown(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.len() > 60 => format!("'{}...'", prefix(s, 60)),
        Ok(s) => format!("'{s}'"),
        Err(_) => format!("0x{}", hex(bytes)),
    }
}

/// Where the reference (`a`) and libgguf (`b`) first differ, and both values there.
fn first_diff(a: &Json, b: &Json, path: &str) -> Option<String> {
    canon::first_diff(a, b, path, ("reference", "libgguf"))
}

// ------------------------------------------------------------------------------------------
// libgguf's view, in the sidecar's canonical form: through the Rust API and through the C API.
// ------------------------------------------------------------------------------------------

/// The file through the Rust API. Inconsistencies inside the API (a lookup by name disagreeing
/// with the walk in file order) are pushed to `errors`.
fn describe_rust(path: &Path, errors: &mut Vec<String>) -> Result<Json, String> {
    let f = GgufFile::open(path).map_err(|e| e.to_string())?;
    for (i, entry) in f.metadata().enumerate() {
        if f.metadata_index(entry.key) != Some(i) {
            errors.push(format!(
                "metadata_index({}) is {:?}, expected {i}",
                shown(entry.key),
                f.metadata_index(entry.key)
            ));
        }
        // Compared in canonical form: NaN != NaN for `Value`'s PartialEq.
        if f.get(entry.key).map(|v| canon::value(&v)) != Some(canon::value(&entry.value)) {
            errors.push(format!(
                "get({}) differs from metadata_at({i})",
                shown(entry.key)
            ));
        }
    }
    for (i, t) in f.tensors().enumerate() {
        if f.tensor(t.name) != Some(t) || f.tensor_index(t.name) != Some(i) {
            errors.push(format!(
                "tensor({}) differs from tensor_at({i})",
                shown(t.name)
            ));
        }
        if t.dims[t.n_dims as usize..].iter().any(|&d| d != 1) {
            errors.push(format!(
                "tensor {}: dims past n_dims are {:?}, expected 1",
                shown(t.name),
                t.dims
            ));
        }
        if t.size != t.data.len() as u64 || t.file_offset != f.data_offset() + t.offset {
            errors.push(format!(
                "tensor {}: size/offsets inconsistent",
                shown(t.name)
            ));
        }
    }
    Ok(canon::file(&f))
}

/// The record `getter` returned for index `i`, or an error naming the call when it is NULL.
///
/// # Safety
/// `p` is NULL or a record valid while the result is used.
unsafe fn non_null<'a, T>(p: *const T, getter: &str, i: u64) -> Result<&'a T, String> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| format!("{getter}({i}): {}", last_error()))
}

/// The name of a record (a key's or a tensor's) the C API gives at index `i`, `len` bytes at
/// `ptr`, checked: NUL-terminated, the record's `index` is `i`, and for a name without a NUL
/// inside, looking it up by name (`lookup`; `same`: whether that gives this record) finds it.
///
/// # Safety
/// `ptr` is valid for `len + 1` bytes while the result is used.
unsafe fn checked_name<'a>(
    (what, lookup): (&str, &str),
    (ptr, len): (*const c_char, u64),
    (index, i): (u64, u64),
    same: impl FnOnce() -> bool,
    errors: &mut Vec<String>,
) -> &'a [u8] {
    // SAFETY: the caller's contract.
    let (name, terminated) = unsafe {
        let name = bytes_at(ptr.cast(), len);
        (name, *ptr.add(name.len()) == 0)
    };
    if !terminated || index != i {
        errors.push(format!(
            "{what} {}: not NUL-terminated or wrong index",
            shown(name)
        ));
    }
    if !name.contains(&0) && !same() {
        errors.push(format!(
            "{lookup}({}) is not the record at index {i}",
            shown(name)
        ));
    }
    name
}

/// `len` bytes at `ptr` (a NULL pointer is allowed for an empty range).
///
/// # Safety
/// `ptr` is valid for `len` bytes while the result is used.
unsafe fn bytes_at<'a>(ptr: *const u8, len: u64) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    assert!(!ptr.is_null(), "NULL pointer for {len} bytes");
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }
}

/// Reads elements from the raw bytes of an array (`array_data`, in the file's byte order): an
/// independent decoder, checking that the C API hands out exactly the array's bytes.
struct RawCursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    order: ByteOrder,
    wide: bool,
}

impl RawCursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let chunk = self
            .bytes
            .get(self.pos..self.pos + N)
            .ok_or_else(|| format!("array_data ends at {} reading {N} bytes", self.pos))?;
        self.pos += N;
        let mut out = [0u8; N];
        out.copy_from_slice(chunk);
        if self.order == ByteOrder::Big {
            out.reverse();
        }
        Ok(out)
    }

    fn len(&mut self) -> Result<u64, String> {
        Ok(if self.wide {
            u64::from_le_bytes(self.take()?)
        } else {
            u32::from_le_bytes(self.take()?).into()
        })
    }

    fn value(&mut self, ty: ValueType) -> Result<Json, String> {
        let name = ty.name();
        Ok(match ty {
            ValueType::Uint8 => json!({"type": name, "value": u8::from_le_bytes(self.take()?)}),
            ValueType::Int8 => json!({"type": name, "value": i8::from_le_bytes(self.take()?)}),
            ValueType::Uint16 => json!({"type": name, "value": u16::from_le_bytes(self.take()?)}),
            ValueType::Int16 => json!({"type": name, "value": i16::from_le_bytes(self.take()?)}),
            ValueType::Uint32 => json!({"type": name, "value": u32::from_le_bytes(self.take()?)}),
            ValueType::Int32 => json!({"type": name, "value": i32::from_le_bytes(self.take()?)}),
            ValueType::Uint64 => json!({"type": name, "value": u64::from_le_bytes(self.take()?)}),
            ValueType::Int64 => json!({"type": name, "value": i64::from_le_bytes(self.take()?)}),
            ValueType::Float32 => json!({"type": name, "bits": u32::from_le_bytes(self.take()?)}),
            ValueType::Float64 => json!({"type": name, "bits": u64::from_le_bytes(self.take()?)}),
            ValueType::Bool => json!({"type": name, "value": self.take::<1>()?[0] != 0}),
            ValueType::String => {
                let n = self.len()? as usize;
                let s = self
                    .bytes
                    .get(self.pos..self.pos + n)
                    .ok_or("array_data ends inside a string")?;
                self.pos += n;
                json!({"type": name, "hex": hex(s)})
            }
            ValueType::Array => {
                let elem = u32::from_le_bytes(self.take()?);
                let elem = ValueType::from_id(elem).ok_or("bad nested element type")?;
                let n = self.len()?;
                let items = (0..n)
                    .map(|_| self.value(elem))
                    .collect::<Result<Vec<_>, _>>()?;
                json!({"type": name, "elem": elem.name(), "len": n, "items": items})
            }
        })
    }
}

/// The elements of the array under `key` through the typed C getter for `elem` (for STRING
/// arrays, both `gguf_get_string_array` and `gguf_get_array_string`, checked against each
/// other); `None` for arrays of arrays, which have no typed getter.
///
/// # Safety
/// `h` is an open handle and `key` a NUL-terminated key of it.
unsafe fn typed_items(
    h: GGUFFile,
    key: *const c_char,
    elem: ValueType,
    errors: &mut Vec<String>,
) -> Option<Result<Vec<Json>, String>> {
    use ffi::arrays::*;
    let name = elem.name();
    let mut n = u64::MAX;
    macro_rules! typed {
        ($getter:ident, $t:ty, $conv:expr) => {{
            // SAFETY: the caller's contract; `n` is writable.
            let p = unsafe { $getter(h, key, &mut n) };
            if p.is_null() {
                return Some(Err(format!("{} returned NULL", stringify!($getter))));
            }
            // SAFETY: the getter returned `n` elements at `p`, valid until gguf_close.
            let items: &[$t] = unsafe { std::slice::from_raw_parts(p, n as usize) };
            let conv = $conv;
            Some(Ok(items.iter().map(|&x| conv(x)).collect()))
        }};
        // Integers and booleans compare by value.
        ($getter:ident, $t:ty) => {
            typed!($getter, $t, |x: $t| json!({"type": name, "value": x}))
        };
    }
    match elem {
        ValueType::Uint8 => typed!(gguf_get_uint8_array, u8),
        ValueType::Int8 => typed!(gguf_get_int8_array, i8),
        ValueType::Uint16 => typed!(gguf_get_uint16_array, u16),
        ValueType::Int16 => typed!(gguf_get_int16_array, i16),
        ValueType::Uint32 => typed!(gguf_get_uint32_array, u32),
        ValueType::Int32 => typed!(gguf_get_int32_array, i32),
        ValueType::Uint64 => typed!(gguf_get_uint64_array, u64),
        ValueType::Int64 => typed!(gguf_get_int64_array, i64),
        ValueType::Float32 => typed!(
            gguf_get_float_array,
            f32,
            |x: f32| json!({"type": name, "bits": x.to_bits()})
        ),
        ValueType::Float64 => typed!(
            gguf_get_float64_array,
            f64,
            |x: f64| json!({"type": name, "bits": x.to_bits()})
        ),
        ValueType::Bool => typed!(gguf_get_bool_array, bool),
        ValueType::String => {
            // SAFETY: the caller's contract; `n` is writable.
            let ptrs = unsafe { gguf_get_string_array(h, key, &mut n) };
            if ptrs.is_null() {
                return Some(Err("gguf_get_string_array returned NULL".into()));
            }
            let mut items = Vec::new();
            for i in 0..n {
                let mut len = u64::MAX;
                // SAFETY: the caller's contract; `len` is writable.
                let s = unsafe { gguf_get_array_string(h, key, i, &mut len) };
                if s.is_null() {
                    return Some(Err(format!("gguf_get_array_string({i}) returned NULL")));
                }
                // SAFETY: `len` bytes at `s`, valid until gguf_close.
                let full = unsafe { bytes_at(s.cast(), len) };
                // SAFETY: `n` pointers to NUL-terminated strings, valid until gguf_close.
                let cut = unsafe { CStr::from_ptr(*ptrs.add(i as usize)) }.to_bytes();
                let until_nul = full.split(|&b| b == 0).next().unwrap_or_default();
                if cut != until_nul {
                    errors.push(format!(
                        "gguf_get_string_array[{i}] is {}, gguf_get_array_string is {} (cut at \
                         NUL: {})",
                        shown(cut),
                        shown(full),
                        shown(until_nul)
                    ));
                }
                items.push(json!({"type": name, "hex": hex(full)}));
            }
            Some(Ok(items))
        }
        ValueType::Array => None,
    }
}

/// One metadata record of the C API in canonical form.
///
/// # Safety
/// `h` is an open handle and `kv` one of its records.
unsafe fn c_value(
    h: GGUFFile,
    kv: &GGUFMetadataKV,
    layout: (ByteOrder, bool),
    errors: &mut Vec<String>,
) -> Result<Json, String> {
    let ty = ValueType::from_id(kv.r#type).ok_or(format!("bad type {}", kv.r#type))?;
    let name = ty.name();
    let v = kv.value;
    let widened = |ok: bool, what: &str| {
        if ok {
            None
        } else {
            Some(format!("value.{what} disagrees with the narrow member"))
        }
    };
    // Small integers are read from the widened members, which the header says hold them on
    // every host; the narrow members hold them too on little-endian hosts only (on a big-endian
    // one they alias the widened value's high bytes), and are checked there.
    let le = cfg!(target_endian = "little");
    // SAFETY (every union read below): the member documented for `type`.
    let (json, issue) = unsafe {
        match ty {
            ValueType::Uint8 => (
                json!({"type": name, "value": v.u32}),
                widened(!le || v.u32 == u32::from(v.u8), "u32"),
            ),
            ValueType::Int8 => (
                json!({"type": name, "value": v.i32}),
                widened(!le || v.i32 == i32::from(v.i8), "i32"),
            ),
            ValueType::Uint16 => (
                json!({"type": name, "value": v.u32}),
                widened(!le || v.u32 == u32::from(v.u16), "u32"),
            ),
            ValueType::Int16 => (
                json!({"type": name, "value": v.i32}),
                widened(!le || v.i32 == i32::from(v.i16), "i32"),
            ),
            ValueType::Uint32 => (json!({"type": name, "value": v.u32}), None),
            ValueType::Int32 => (json!({"type": name, "value": v.i32}), None),
            ValueType::Uint64 => (json!({"type": name, "value": v.u64}), None),
            ValueType::Int64 => (json!({"type": name, "value": v.i64}), None),
            ValueType::Float32 => (json!({"type": name, "bits": v.f32.to_bits()}), None),
            ValueType::Float64 => (json!({"type": name, "bits": v.f64.to_bits()}), None),
            ValueType::Bool => (json!({"type": name, "value": v.b}), None),
            ValueType::String => {
                let s = bytes_at(v.str.cast(), kv.str_len);
                let nul = *v.str.add(kv.str_len as usize);
                (
                    json!({"type": name, "hex": hex(s)}),
                    (nul != 0).then(|| "string value is not NUL-terminated at str_len".into()),
                )
            }
            ValueType::Array => {
                let elem = ValueType::from_id(kv.array_type)
                    .ok_or(format!("bad element type {}", kv.array_type))?;
                if v.u32 != kv.array_type {
                    errors.push("value.u32 of an ARRAY is not its element type".into());
                }
                let raw = bytes_at(kv.array_data.cast(), kv.array_bytes);
                let mut cursor = RawCursor {
                    bytes: raw,
                    pos: 0,
                    order: layout.0,
                    wide: layout.1,
                };
                let from_raw = (0..kv.array_len)
                    .map(|_| cursor.value(elem))
                    .collect::<Result<Vec<_>, _>>()?;
                if cursor.pos != raw.len() {
                    errors.push(format!(
                        "array_bytes is {} but the elements take {}",
                        raw.len(),
                        cursor.pos
                    ));
                }
                let items = match typed_items(h, kv.key, elem, errors) {
                    Some(typed) => {
                        let typed = typed?;
                        if typed != from_raw {
                            errors.push(format!(
                                "typed getter disagrees with array_data: {}",
                                canon::first_diff(
                                    &Json::from(from_raw.clone()),
                                    &Json::from(typed.clone()),
                                    "items",
                                    ("array_data", "typed getter")
                                )
                                .unwrap_or_default()
                            ));
                        }
                        typed
                    }
                    None => from_raw,
                };
                (
                    json!({"type": name, "elem": elem.name(), "len": kv.array_len, "items": items}),
                    None,
                )
            }
        }
    };
    errors.extend(issue);
    Ok(json)
}

/// The file through the C API.
fn describe_c(path: &Path, errors: &mut Vec<String>) -> Result<Json, String> {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    #[cfg(not(unix))]
    let bytes = path.to_str().ok_or("path is not UTF-8")?.as_bytes();
    let c_path = CString::new(bytes).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path.
    let h = unsafe { ffi::open::gguf_open(c_path.as_ptr()) };
    if h.is_null() {
        return Err(format!("gguf_open failed: {}", last_error()));
    }
    // SAFETY: `h` is open until the gguf_close below; every pointer read is one it returned.
    let result = unsafe { describe_open(h, errors) };
    // SAFETY: `h` is open and closed once.
    unsafe { ffi::open::gguf_close(h) };
    result
}

/// # Safety
/// `h` is an open handle.
unsafe fn describe_open(h: GGUFFile, errors: &mut Vec<String>) -> Result<Json, String> {
    use ffi::metadata::*;
    use ffi::open::*;
    use ffi::tensors::*;
    use ffi::types::*;
    // SAFETY: the caller's contract, for every call and pointer below.
    unsafe {
        let version = gguf_version(h);
        let order = match gguf_byte_order(h) {
            0 => ByteOrder::Little,
            1 => ByteOrder::Big,
            other => return Err(format!("gguf_byte_order returned {other}")),
        };
        let layout = (order, version >= 2);
        let mut metadata = Vec::new();
        for i in 0..gguf_metadata_count(h) {
            let kv: *const GGUFMetadataKV = gguf_get_metadata_by_index(h, i);
            let kv = non_null(kv, "gguf_get_metadata_by_index", i)?;
            let key = checked_name(
                ("key", "gguf_get_metadata"),
                (kv.key, kv.key_len),
                (kv.index, i),
                || std::ptr::eq(gguf_get_metadata(h, kv.key), kv),
                errors,
            );
            let value =
                c_value(h, kv, layout, errors).map_err(|e| format!("key {}: {e}", shown(key)))?;
            metadata.push(canon::entry(key, value));
        }
        let mut tensors = Vec::new();
        for i in 0..gguf_tensor_count(h) {
            let info: *const GGUFTensorInfo = gguf_get_tensor_by_index(h, i);
            let t = non_null(info, "gguf_get_tensor_by_index", i)?;
            let name = checked_name(
                ("tensor", "gguf_get_tensor"),
                (t.name, t.name_len),
                (t.index, i),
                || std::ptr::eq(gguf_get_tensor(h, t.name), info),
                errors,
            );
            let n_dims = t.n_dims as usize;
            if n_dims > 4 || t.dims[n_dims.min(4)..].iter().any(|&d| d != 1) {
                errors.push(format!(
                    "tensor {}: dims {:?}, n_dims {n_dims}",
                    shown(name),
                    t.dims
                ));
            }
            let data = gguf_tensor_data(h, info);
            if data.is_null() {
                return Err(format!(
                    "gguf_tensor_data({}): {}",
                    shown(name),
                    last_error()
                ));
            }
            let data = bytes_at(data.cast(), t.size_bytes);
            let type_name = gguf_dtype_name(t.dtype);
            if type_name.is_null() {
                return Err(format!("gguf_dtype_name({}) is NULL", t.dtype));
            }
            tensors.push(canon::tensor(
                name,
                &t.dims[..n_dims.min(4)],
                t.dtype,
                &CStr::from_ptr(type_name).to_string_lossy(),
                (
                    gguf_dtype_block_size(t.dtype),
                    gguf_dtype_block_bytes(t.dtype),
                ),
                t.n_elements,
                t.offset,
                t.file_offset,
                data,
            ));
        }
        Ok(json!({
            "version": version,
            "byte_order": order_name(order),
            "alignment": gguf_alignment(h),
            "data_offset": gguf_data_offset(h),
            "file_size": gguf_file_size(h),
            "kv_count": gguf_metadata_count(h),
            "tensor_count": gguf_tensor_count(h),
            "metadata": metadata,
            "tensors": tensors,
        }))
    }
}

/// Every difference between the reference's view and ours, each naming what differs.
fn compare(reference: &Json, ours: &Json) -> Vec<String> {
    let mut out = Vec::new();
    for field in canon::HEADER_FIELDS {
        if reference[field] != ours[field] {
            out.push(format!(
                "{field}: reference {} vs libgguf {}",
                reference[field], ours[field]
            ));
        }
    }
    let key_of = |m: &Json| {
        let h = m["key_hex"].as_str().unwrap_or_default();
        shown(&unhex(h))
    };
    let (rm, om) = (
        as_array(&reference["metadata"]),
        as_array(&ours["metadata"]),
    );
    if rm.len() != om.len() {
        out.push(format!(
            "{} metadata entries in the reference, {} in libgguf",
            rm.len(),
            om.len()
        ));
    }
    for (i, (r, o)) in rm.iter().zip(om).enumerate() {
        if let Some(d) = first_diff(r, o, "") {
            out.push(format!("metadata entry {i} (key {}): {d}", key_of(r)));
        }
    }
    let (rt, ot) = (as_array(&reference["tensors"]), as_array(&ours["tensors"]));
    if rt.len() != ot.len() {
        out.push(format!(
            "{} tensors in the reference, {} in libgguf",
            rt.len(),
            ot.len()
        ));
    }
    for (i, (r, o)) in rt.iter().zip(ot).enumerate() {
        if let Some(d) = first_diff(r, o, "") {
            let name = shown(&unhex(r["name_hex"].as_str().unwrap_or_default()));
            out.push(format!("tensor {i} ({name}): {d}"));
        }
    }
    out
}

fn as_array(j: &Json) -> &[Json] {
    j.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Compares the reference's sidecar for `path` with libgguf's Rust and C views; returns the
/// mismatches, each prefixed with the file and the API.
fn check_file(path: &Path, sidecar: &Json) -> Vec<String> {
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    let reference = strip(sidecar);
    let mut out = Vec::new();
    for (api, describe) in [
        (
            "Rust API",
            describe_rust as fn(&Path, &mut Vec<String>) -> Result<Json, String>,
        ),
        ("C API", describe_c),
    ] {
        let mut internal = Vec::new();
        match describe(path, &mut internal) {
            Ok(ours) => out.extend(
                compare(&reference, &ours)
                    .into_iter()
                    .map(|m| format!("{file} ({api}): {m}")),
            ),
            Err(e) => out.push(format!(
                "{file} ({api}): libgguf refuses a file the reference reads: {e}"
            )),
        }
        out.extend(
            internal
                .into_iter()
                .map(|m| format!("{file} ({api}, internal): {m}")),
        );
    }
    out
}

fn report(what: &str, checked: usize, mismatches: &[String]) {
    assert!(
        mismatches.is_empty(),
        "{what}: {} mismatches over {checked} files; first {}:\n  {}",
        mismatches.len(),
        mismatches.len().min(SHOWN),
        mismatches[..mismatches.len().min(SHOWN)].join("\n  ")
    );
    eprintln!("{what}: {checked} files identical");
}

// ------------------------------------------------------------------------------------------
// Reference -> libgguf.
// ------------------------------------------------------------------------------------------

/// The reference's type tables agree with ours, except for types newer than the reference.
fn check_type_tables(tables: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let value_types = tables["value_types"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for t in ValueType::ALL {
        let theirs = value_types.get(&t.id().to_string()).and_then(Json::as_str);
        if theirs != Some(t.name()) {
            out.push(format!(
                "value type {}: reference {theirs:?} vs libgguf {}",
                t.id(),
                t.name()
            ));
        }
    }
    if value_types.len() != ValueType::ALL.len() {
        out.push(format!("reference has {} value types", value_types.len()));
    }
    let data_types = tables["data_types"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (id, row) in &data_types {
        let t = id.parse().ok().and_then(DataType::from_id);
        let ours = t.map(|t| json!([t.name(), t.block_elems(), t.block_bytes()]));
        let known_wrong = REFERENCE_WRONG_SIZES.iter().find(|(w, _)| Some(*w) == t);
        if let Some((t, (elems, bytes))) = known_wrong {
            if row != &json!([t.name(), elems, bytes]) {
                out.push(format!(
                    "data type {id}: REFERENCE_WRONG_SIZES is stale: the reference now says {row}"
                ));
            }
        } else if ours.as_ref() != Some(row) {
            out.push(format!(
                "data type {id}: reference {row} vs libgguf {}",
                ours.map_or("(unknown)".into(), |o| o.to_string())
            ));
        }
    }
    for t in DataType::ALL {
        let known = data_types.contains_key(&t.id().to_string());
        if known == NOT_IN_REFERENCE.contains(&t) {
            out.push(format!(
                "data type {} ({}): NOT_IN_REFERENCE is stale (reference knows it: {known})",
                t.id(),
                t.name()
            ));
        }
    }
    out
}

/// The corpus covers what it is meant to: fails if the generator regresses.
fn check_coverage(sidecars: &[Json], tables: &Json) {
    let mut seen = std::collections::BTreeSet::new();
    for s in sidecars {
        seen.insert(format!("order:{}", s["byte_order"].as_str().unwrap_or("")));
        if s["alignment"] != 32 {
            seen.insert("custom alignment".to_string());
        }
        for m in as_array(&s["metadata"]) {
            let v = &m["value"];
            let ty = v["type"].as_str().unwrap_or_default();
            seen.insert(format!("scalar:{ty}"));
            if ty == "ARRAY" {
                seen.insert(format!("array:{}", v["elem"].as_str().unwrap_or_default()));
            }
            if ty == "STRING" {
                let hex = v["hex"].as_str().unwrap_or_default();
                let bytes = unhex(hex);
                if hex.is_empty() {
                    seen.insert("empty string".into());
                } else if std::str::from_utf8(&bytes).is_err() {
                    seen.insert("non-UTF-8 string".into());
                } else if !bytes.is_ascii() {
                    seen.insert("non-ASCII string".into());
                }
            }
        }
        for t in as_array(&s["tensors"]) {
            seen.insert(format!(
                "dtype:{}",
                t["type_name"].as_str().unwrap_or_default()
            ));
            seen.insert(format!("dims:{}", t["n_dims"]));
        }
    }
    let mut want: Vec<String> = ValueType::ALL
        .iter()
        .map(|t| format!("scalar:{}", t.name()))
        .chain(ValueType::ALL.iter().map(|t| format!("array:{}", t.name())))
        .chain((1..=4).map(|d| format!("dims:{d}")))
        .chain(
            [
                "order:little",
                "order:big",
                "custom alignment",
                "empty string",
            ]
            .map(String::from),
        )
        .chain(["non-UTF-8 string", "non-ASCII string"].map(String::from))
        .collect();
    if let Some(types) = tables["data_types"].as_object() {
        want.extend(
            types
                .values()
                .map(|r| r[0].as_str().unwrap_or_default())
                .filter(|n| !REFERENCE_WRONG_SIZES.iter().any(|(t, _)| t.name() == *n))
                .map(|n| format!("dtype:{n}")),
        );
    }
    let missing: Vec<&String> = want.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(
        missing.is_empty(),
        "the generated corpus misses {missing:?}"
    );
}

/// The corpus of `seed`, `count` files: generated here by the reference, or, for the default
/// seed and count, the one `$GGUF_CONFORMANCE_CORPUS` names (`tools/cross.sh` generates it once
/// on the host, where the reference runs, and every target reads those same files and sidecars).
fn corpus_dir(seed: u64, count: usize) -> PathBuf {
    if let Some(dir) = std::env::var_os("GGUF_CONFORMANCE_CORPUS").filter(|d| !d.is_empty()) {
        if seed == SEED && count == COUNT {
            return PathBuf::from(dir);
        }
    }
    let dir = work_dir(&format!("reference-seed-{seed}"));
    let count_arg = count.to_string();
    let seed_arg = seed.to_string();
    run_reference([
        "generate".as_ref(),
        dir.as_os_str(),
        count_arg.as_ref(),
        seed_arg.as_ref(),
    ]);
    dir
}

fn check_corpus(seed: u64, count: usize) {
    let dir = corpus_dir(seed, count);
    let tables = read_json(&dir.join("reference-types.json"));
    let mut mismatches = check_type_tables(&tables);
    let mut sidecars = Vec::new();
    for i in 0..count {
        let path = dir.join(format!("s{seed}-{i:03}.gguf"));
        let sidecar = read_json(&path.with_extension("json"));
        mismatches.extend(check_file(&path, &sidecar));
        sidecars.push(sidecar);
    }
    report(
        &format!("reference corpus (seed {seed})"),
        count,
        &mismatches,
    );
    if count >= COUNT {
        check_coverage(&sidecars, &tables);
    }
}

#[test]
fn files_written_by_the_reference_read_identically() {
    let count = std::env::var("GGUF_CONFORMANCE_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(COUNT);
    check_corpus(SEED, count);
    if let Some(seed) = std::env::var("GGUF_CONFORMANCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        check_corpus(seed, count);
    }
}

// ------------------------------------------------------------------------------------------
// libgguf -> reference.
// ------------------------------------------------------------------------------------------

/// A small deterministic generator (splitmix64) for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Metadata covering every value type, edge values, empty and non-UTF-8 strings, empty arrays of
/// every element type and deeply nested arrays.
fn written_metadata(rng: &mut Rng) -> Vec<(String, MetadataValue)> {
    use MetadataValue::{Array, Bool, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8};
    fn s(bytes: impl AsRef<[u8]>) -> MetadataValue {
        MetadataValue::string(bytes)
    }
    let mut kv: Vec<(String, MetadataValue)> = vec![
        ("general.architecture".into(), s("llama")),
        ("u8.min".into(), U8(0)),
        ("u8.max".into(), U8(u8::MAX)),
        ("i8.min".into(), I8(i8::MIN)),
        ("i8.max".into(), I8(i8::MAX)),
        ("u16.max".into(), U16(u16::MAX)),
        ("i16.min".into(), I16(i16::MIN)),
        ("u32.max".into(), U32(u32::MAX)),
        ("i32.min".into(), I32(i32::MIN)),
        ("u64.max".into(), U64(u64::MAX)),
        ("i64.min".into(), I64(i64::MIN)),
        ("i64.max".into(), I64(i64::MAX)),
        ("f32.nan_payload".into(), F32(f32::from_bits(0x7fc0_1234))),
        ("f32.neg_zero".into(), F32(-0.0)),
        ("f32.subnormal".into(), F32(f32::from_bits(1))),
        ("f32.inf".into(), F32(f32::NEG_INFINITY)),
        (
            "f64.nan_payload".into(),
            F64(f64::from_bits(0xfff8_0000_dead_beef)),
        ),
        ("f64.max".into(), F64(f64::MAX)),
        ("f64.tenth".into(), F64(0.1)),
        ("bool.true".into(), Bool(true)),
        ("bool.false".into(), Bool(false)),
        ("str.empty".into(), s("")),
        ("str.utf8".into(), s("héllo 日本 🦙")),
        ("str.nul".into(), s(b"a\0b\0")),
        ("str.non_utf8".into(), s(b"\xff\xfe\x80abc")),
        ("ключ.юникод".into(), s("значение")),
        (
            "tokenizer.ggml.tokens".into(),
            Array(
                ValueType::String,
                vec![
                    s("<s>"),
                    s(""),
                    s("▁the"),
                    s(b"\xc3("),
                    s("nul\0in"),
                    s("🙂"),
                ],
            ),
        ),
        (
            "nested.deep".into(),
            (0..7).fold(
                Array(ValueType::Int16, vec![I16(-1), I16(2)]),
                |inner, _| Array(ValueType::Array, vec![inner]),
            ),
        ),
        (
            "nested.mixed".into(),
            Array(
                ValueType::Array,
                vec![
                    Array(ValueType::Uint64, vec![U64(1), U64(u64::MAX)]),
                    Array(ValueType::String, vec![s("x"), s("")]),
                    Array(ValueType::Bool, vec![]),
                    Array(
                        ValueType::Array,
                        vec![Array(ValueType::Float64, vec![F64(-0.5)])],
                    ),
                    Array(ValueType::Array, vec![]),
                ],
            ),
        ),
        ("nested.empty".into(), Array(ValueType::Array, vec![])),
    ];
    // Every element type, empty and not.
    for elem in ValueType::ALL {
        if elem == ValueType::Array {
            continue;
        }
        let n = 1 + (rng.next() % 40) as usize;
        let items: Vec<MetadataValue> = (0..n)
            .map(|_| {
                let r = rng.next();
                match elem {
                    ValueType::Uint8 => U8(r as u8),
                    ValueType::Int8 => I8(r as i8),
                    ValueType::Uint16 => U16(r as u16),
                    ValueType::Int16 => I16(r as i16),
                    ValueType::Uint32 => U32(r as u32),
                    ValueType::Int32 => I32(r as i32),
                    ValueType::Uint64 => U64(r),
                    ValueType::Int64 => I64(r as i64),
                    ValueType::Float32 => F32(f32::from_bits(r as u32)),
                    ValueType::Float64 => F64(f64::from_bits(r)),
                    ValueType::Bool => Bool(r & 1 == 1),
                    _ => s(rng.bytes((r % 12) as usize)),
                }
            })
            .collect();
        kv.push((format!("array.{}", elem.name()), Array(elem, items)));
        kv.push((format!("array.{}.empty", elem.name()), Array(elem, vec![])));
    }
    kv
}

/// Tensors of every data type the reference knows, 0 to 4 dimensions, some empty.
/// A tensor as written: name, dimensions, type, data.
type WrittenTensor = (String, Vec<u64>, DataType, Vec<u8>);

/// One file of the libgguf -> reference test.
struct Plan {
    name: &'static str,
    version: u32,
    order: ByteOrder,
    alignment: Option<u32>,
    with_kv: bool,
    with_tensors: bool,
}

impl Plan {
    fn new(
        name: &'static str,
        version: u32,
        order: ByteOrder,
        alignment: Option<u32>,
        with_kv: bool,
        with_tensors: bool,
    ) -> Plan {
        Plan {
            name,
            version,
            order,
            alignment,
            with_kv,
            with_tensors,
        }
    }
}

fn written_tensors(rng: &mut Rng) -> Vec<WrittenTensor> {
    use DataType::{F16, F32, F64, I16, I32, I64, I8};
    let mut out = Vec::new();
    for (i, &dtype) in DataType::ALL
        .iter()
        .filter(|t| !NOT_IN_REFERENCE.contains(t))
        .filter(|t| !REFERENCE_WRONG_SIZES.iter().any(|(w, _)| w == *t))
        .enumerate()
    {
        let block = dtype.block_elems();
        // 0 dimensions only where GGUFReader maps the type to a numpy dtype: for the others
        // (BF16 included) it fails with IndexError on a 0-dimensional tensor.
        let plain = [F32, F16, F64, I8, I16, I32, I64].contains(&dtype);
        let n_dims = if plain { i % 5 } else { 1 + i % 4 };
        let mut dims: Vec<u64> = (0..n_dims)
            .map(|d| 1 + (rng.next() % 3) + d as u64)
            .collect();
        if let Some(first) = dims.first_mut() {
            *first = if block == 1 {
                1 + rng.next() % 20
            } else {
                block * (1 + rng.next() % 2)
            };
        }
        if i % 9 == 8 && n_dims >= 2 {
            dims[1] = 0;
        }
        let size = dtype.tensor_bytes(&dims).expect("small tensor") as usize;
        out.push((
            format!("blk.{i}.{}", dtype.name()),
            dims,
            dtype,
            rng.bytes(size),
        ));
    }
    out.push((
        "тензор.ünïcode".into(),
        vec![3],
        DataType::F32,
        rng.bytes(12),
    ));
    out
}

#[test]
fn files_written_by_libgguf_read_identically_in_the_reference() {
    let dir = work_dir("libgguf-written");
    let mut rng = Rng(0x6767_7566);
    let plans = [
        Plan::new("v3-le", 3, ByteOrder::Little, None, true, true),
        Plan::new("v3-be", 3, ByteOrder::Big, Some(64), true, true),
        Plan::new("v2-le", 2, ByteOrder::Little, Some(1), true, true),
        Plan::new("v2-be", 2, ByteOrder::Big, Some(4096), true, true),
        Plan::new("v3-le-align8", 3, ByteOrder::Little, Some(8), false, true),
        Plan::new("v3-le-metadata", 3, ByteOrder::Little, None, true, false),
        Plan::new("v3-be-empty", 3, ByteOrder::Big, None, false, false),
    ];
    let mut written = Vec::new();
    for Plan {
        name,
        version,
        order,
        alignment,
        with_kv,
        with_tensors,
    } in plans
    {
        let kv = if with_kv {
            written_metadata(&mut rng)
        } else {
            vec![]
        };
        let tensors = if with_tensors {
            written_tensors(&mut rng)
        } else {
            vec![]
        };
        let mut w = Writer::new();
        w.set_version(version).unwrap().set_byte_order(order);
        for (k, v) in &kv {
            w.add_metadata(k, v.clone()).unwrap();
        }
        if let Some(a) = alignment {
            w.set_alignment(a).unwrap();
        }
        for (n, dims, dtype, data) in &tensors {
            w.add_tensor(n, dims, *dtype, data.clone()).unwrap();
        }
        let path = dir.join(format!("{name}.gguf"));
        w.write_file(&path).unwrap();
        let mut kv: Vec<(Vec<u8>, MetadataValue)> =
            kv.into_iter().map(|(k, v)| (k.into_bytes(), v)).collect();
        if let Some(a) = alignment {
            kv.push((b"general.alignment".to_vec(), MetadataValue::U32(a)));
        }
        written.push((path, version, order, alignment, kv, tensors));
    }

    let mut args: Vec<&std::ffi::OsStr> = vec!["dump".as_ref()];
    args.extend(written.iter().map(|w| w.0.as_os_str()));
    run_reference(&args);

    let mut mismatches = Vec::new();
    for (path, version, order, alignment, kv, tensors) in &written {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        let sidecar = read_json(&PathBuf::from(format!("{}.json", path.display())));
        let reference = strip(&sidecar);
        // The reference against what was written.
        let expected_top = json!({
            "version": version,
            "byte_order": order_name(*order),
            "alignment": alignment.unwrap_or(32),
            "kv_count": kv.len(),
            "tensor_count": tensors.len(),
        });
        for (field, want) in expected_top.as_object().into_iter().flatten() {
            if &reference[field] != want {
                mismatches.push(format!(
                    "{file} (written): {field}: the reference reads {} but libgguf wrote {want}",
                    reference[field]
                ));
            }
        }
        // Counts are compared above; entries pairwise.
        const WRITTEN: (&str, &str) = ("the reference reads", "libgguf wrote");
        let written_kv: Vec<Json> = kv
            .iter()
            .map(|(k, v)| canon::entry(k, canon::written(v)))
            .collect();
        let rm = as_array(&reference["metadata"]);
        for (i, (want, got)) in written_kv.iter().zip(rm).enumerate() {
            if let Some(d) = canon::first_diff(got, want, "", WRITTEN) {
                let key = shown(&kv[i].0);
                mismatches.push(format!("{file} (written): key {key}: {d}"));
            }
        }
        let rt = as_array(&reference["tensors"]);
        for ((name, dims, dtype, data), got) in tensors.iter().zip(rt) {
            let want = json!({
                "name_hex": hex(name.as_bytes()),
                "shape": dims,
                "type": dtype.id(),
                "n_bytes": data.len(),
                "sha256": sha256(data),
            });
            let got_subset: serde_json::Map<String, Json> = want
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| (k.clone(), got[k].clone()))
                .collect();
            if let Some(d) = canon::first_diff(&Json::Object(got_subset), &want, "", WRITTEN) {
                mismatches.push(format!("{file} (written): tensor '{name}': {d}"));
            }
        }
        // libgguf against the reference.
        mismatches.extend(check_file(path, &sidecar));
    }
    report("libgguf-written files", written.len(), &mismatches);
}
