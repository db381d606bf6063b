//! The canonical JSON view of a GGUF file that the tests compare with the reference reader: the
//! form of the sidecars `tests/conformance/generate.py` writes (`generate.py dump`), where keys
//! and names are hex, strings are hex, floats are their bits, and arrays list their element type,
//! length and items (nested arrays likewise).
//!
//! Also the JSON plumbing around it: reading a sidecar, dropping its human-only fields, and
//! finding where two views first differ.

use gguf::{ByteOrder, GgufFile, MetadataValue, Value};
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};
use std::path::Path;

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of the hex string `h`; panics unless it is an even number of hex digits.
pub fn unhex(h: &str) -> Vec<u8> {
    assert!(h.len() % 2 == 0, "odd hex {h:?}");
    (0..h.len())
        .step_by(2)
        .map(|i| {
            h.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .unwrap_or_else(|| panic!("not hex: {h:?}"))
        })
        .collect()
}

/// The sha256 of `bytes`, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sidecar's name of a byte order.
pub fn order_name(order: ByteOrder) -> &'static str {
    match order {
        ByteOrder::Little => "little",
        ByteOrder::Big => "big",
    }
}

/// A value read from a file.
pub fn value(v: &Value<'_>) -> Json {
    let ty = v.value_type().name();
    match *v {
        Value::U8(x) => json!({"type": ty, "value": x}),
        Value::I8(x) => json!({"type": ty, "value": x}),
        Value::U16(x) => json!({"type": ty, "value": x}),
        Value::I16(x) => json!({"type": ty, "value": x}),
        Value::U32(x) => json!({"type": ty, "value": x}),
        Value::I32(x) => json!({"type": ty, "value": x}),
        Value::U64(x) => json!({"type": ty, "value": x}),
        Value::I64(x) => json!({"type": ty, "value": x}),
        Value::Bool(x) => json!({"type": ty, "value": x}),
        Value::F32(x) => json!({"type": ty, "bits": x.to_bits()}),
        Value::F64(x) => json!({"type": ty, "bits": x.to_bits()}),
        Value::String(s) => json!({"type": ty, "hex": hex(s)}),
        Value::Array(a) => json!({
            "type": ty,
            "elem": a.elem_type().name(),
            "len": a.len(),
            "items": a.iter().map(|x| value(&x)).collect::<Vec<_>>(),
        }),
    }
}

/// A value as given to the writer.
pub fn written(v: &MetadataValue) -> Json {
    let ty = v.value_type().name();
    match v {
        MetadataValue::U8(x) => json!({"type": ty, "value": x}),
        MetadataValue::I8(x) => json!({"type": ty, "value": x}),
        MetadataValue::U16(x) => json!({"type": ty, "value": x}),
        MetadataValue::I16(x) => json!({"type": ty, "value": x}),
        MetadataValue::U32(x) => json!({"type": ty, "value": x}),
        MetadataValue::I32(x) => json!({"type": ty, "value": x}),
        MetadataValue::U64(x) => json!({"type": ty, "value": x}),
        MetadataValue::I64(x) => json!({"type": ty, "value": x}),
        MetadataValue::Bool(x) => json!({"type": ty, "value": x}),
        MetadataValue::F32(x) => json!({"type": ty, "bits": x.to_bits()}),
        MetadataValue::F64(x) => json!({"type": ty, "bits": x.to_bits()}),
        MetadataValue::String(s) => json!({"type": ty, "hex": hex(s)}),
        MetadataValue::Array(elem, items) => json!({
            "type": ty,
            "elem": elem.name(),
            "len": items.len(),
            "items": items.iter().map(written).collect::<Vec<_>>(),
        }),
    }
}

/// One metadata entry: its key and its value, already canonical.
pub fn entry(key: &[u8], value: Json) -> Json {
    json!({"key_hex": hex(key), "value": value})
}

/// One tensor: `dims` are its first `n_dims` dimensions, `block` its type's (elements, bytes)
/// and `data` its bytes.
#[allow(clippy::too_many_arguments)]
pub fn tensor(
    name: &[u8],
    dims: &[u64],
    dtype_id: u32,
    type_name: &str,
    block: (u64, u64),
    n_elements: u64,
    offset: u64,
    file_offset: u64,
    data: &[u8],
) -> Json {
    json!({
        "name_hex": hex(name),
        "n_dims": dims.len(),
        "shape": dims,
        "type": dtype_id,
        "type_name": type_name,
        "block": [block.0, block.1],
        "n_elements": n_elements,
        "offset": offset,
        "file_offset": file_offset,
        "n_bytes": data.len(),
        "sha256": sha256(data),
    })
}

/// The file-level fields of the canonical view ([`file`]), besides its metadata and tensors.
pub const HEADER_FIELDS: [&str; 7] = [
    "version",
    "byte_order",
    "alignment",
    "data_offset",
    "file_size",
    "kv_count",
    "tensor_count",
];

/// The whole file as libgguf's Rust API reads it (`gguf::GgufFile`): what the reference's
/// sidecar holds once [`strip`]ped.
pub fn file<S: AsRef<[u8]>>(f: &GgufFile<S>) -> Json {
    let metadata: Vec<Json> = f
        .metadata()
        .map(|e| entry(e.key, value(&e.value)))
        .collect();
    let tensors: Vec<Json> = f
        .tensors()
        .map(|t| {
            tensor(
                t.name,
                &t.dims[..t.n_dims as usize],
                t.dtype.id(),
                t.dtype.name(),
                (t.dtype.block_elems(), t.dtype.block_bytes()),
                t.n_elements,
                t.offset,
                t.file_offset,
                t.data,
            )
        })
        .collect();
    json!({
        "version": f.version(),
        "byte_order": order_name(f.byte_order()),
        "alignment": f.alignment(),
        "data_offset": f.data_offset(),
        "file_size": f.file_size(),
        "kv_count": f.metadata_count(),
        "tensor_count": f.tensor_count(),
        "metadata": metadata,
        "tensors": tensors,
    })
}

/// The JSON document at `path`; panics naming the file when it cannot be read or parsed.
pub fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// A sidecar without its human-only fields (keys starting with `_`, at every level) and the
/// file's name (the top-level `file`).
pub fn strip(sidecar: &Json) -> Json {
    fn without_human(j: &Json) -> Json {
        match j {
            Json::Object(m) => Json::Object(
                m.iter()
                    .filter(|(k, _)| !k.starts_with('_'))
                    .map(|(k, v)| (k.clone(), without_human(v)))
                    .collect(),
            ),
            Json::Array(a) => Json::Array(a.iter().map(without_human).collect()),
            other => other.clone(),
        }
    }
    let mut j = without_human(sidecar);
    if let Some(m) = j.as_object_mut() {
        m.remove("file");
    }
    j
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
pub fn prefix(s: &str, n: usize) -> &str {
    let end = (0..=n.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    &s[..end]
}

/// `j` for a message, cut after 300 bytes.
pub fn short(j: &Json) -> String {
    let s = j.to_string();
    if s.len() > 300 {
        format!("{}... ({} chars)", prefix(&s, 300), s.len())
    } else {
        s
    }
}

/// Where `a` and `b` first differ (objects key by key, a key absent on one side included;
/// arrays element by element; anything else by equality), with both values there; `path` names
/// where `a` and `b` lie and `names` the two sides. `None` when they are equal.
pub fn first_diff(a: &Json, b: &Json, path: &str, names: (&str, &str)) -> Option<String> {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(u), Some(v)) => first_diff(u, v, &format!("{path}.{k}"), names),
                (u, v) => Some(format!(
                    "{path}.{k}: {} {} vs {} {}",
                    names.0,
                    u.map_or("(absent)".into(), short),
                    names.1,
                    v.map_or("(absent)".into(), short)
                )),
            })
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_diff(u, v, &format!("{path}[{i}]"), names)),
        _ if a == b => None,
        _ => Some(format!(
            "{path}: {} {} vs {} {}",
            names.0,
            short(a),
            names.1,
            short(b)
        )),
    }
}

/// Panics with `what` and [`first_diff`] unless `a` and `b` are equal.
#[track_caller]
pub fn assert_same(what: &str, a: &Json, b: &Json, names: (&str, &str)) {
    if let Some(diff) = first_diff(a, b, "", names) {
        panic!("{what}: first difference at {diff}");
    }
}
