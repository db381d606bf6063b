//! Hand-built GGUF bytes, for files the writer refuses to make (every malformed one).

/// `v` as 8 little-endian bytes.
pub fn le_u64(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// A version-3 little-endian header with the given counts, followed by `body`.
pub fn file(tensors: u64, kvs: u64, body: &[u8]) -> Vec<u8> {
    let mut f = b"GGUF".to_vec();
    f.extend_from_slice(&3u32.to_le_bytes());
    f.extend_from_slice(&le_u64(tensors));
    f.extend_from_slice(&le_u64(kvs));
    f.extend_from_slice(body);
    f
}

/// One metadata entry: key, value type id and the value's encoded bytes.
pub fn kv(key: &str, ty: u32, value: &[u8]) -> Vec<u8> {
    let mut b = le_u64(key.len() as u64).to_vec();
    b.extend_from_slice(key.as_bytes());
    b.extend_from_slice(&ty.to_le_bytes());
    b.extend_from_slice(value);
    b
}

/// One tensor info: name, dimensions, data type id and offset.
pub fn tensor_info(name: &str, dims: &[u64], dtype: u32, offset: u64) -> Vec<u8> {
    let mut b = le_u64(name.len() as u64).to_vec();
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend_from_slice(&le_u64(*d));
    }
    b.extend_from_slice(&dtype.to_le_bytes());
    b.extend_from_slice(&le_u64(offset));
    b
}

/// Pads `f` to the default alignment (32), then appends `data_len` zero bytes of tensor data.
pub fn with_data(mut f: Vec<u8>, data_len: usize) -> Vec<u8> {
    f.resize(f.len().div_ceil(32) * 32 + data_len, 0);
    f
}
