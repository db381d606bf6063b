//! Metadata values and parse outcomes as the tests and the fuzz targets compare them.
//! Standalone (no other helper): `fuzz/harness.rs` includes this file by path as well.

#![allow(dead_code)]

use gguf::{GgufFile, MetadataValue, ValueType};

/// Bit-exact equality (floats by their bits, so NaNs compare equal to themselves).
pub fn same(a: &MetadataValue, b: &MetadataValue) -> bool {
    use MetadataValue::*;
    match (a, b) {
        (F32(x), F32(y)) => x.to_bits() == y.to_bits(),
        (F64(x), F64(y)) => x.to_bits() == y.to_bits(),
        (Array(ta, xs), Array(tb, ys)) => {
            ta == tb && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        _ => a == b,
    }
}

/// The scalar of type `ty` made from the 64 bits `x` (truncated, or reinterpreted for floats;
/// a bool from the low bit); `None` for strings and arrays.
pub fn scalar(ty: ValueType, x: u64) -> Option<MetadataValue> {
    use MetadataValue as V;
    Some(match ty {
        ValueType::Uint8 => V::U8(x as u8),
        ValueType::Int8 => V::I8(x as i8),
        ValueType::Uint16 => V::U16(x as u16),
        ValueType::Int16 => V::I16(x as i16),
        ValueType::Uint32 => V::U32(x as u32),
        ValueType::Int32 => V::I32(x as i32),
        ValueType::Float32 => V::F32(f32::from_bits(x as u32)),
        ValueType::Bool => V::Bool(x & 1 == 1),
        ValueType::Uint64 => V::U64(x),
        ValueType::Int64 => V::I64(x as i64),
        ValueType::Float64 => V::F64(f64::from_bits(x)),
        ValueType::String | ValueType::Array => return None,
    })
}

/// What a parse gives, comparable across sources: the facts of an accepted file, or the code,
/// offset and message of a refusal.
pub fn outcome<S: AsRef<[u8]>>(r: &gguf::Result<GgufFile<S>>) -> String {
    match r {
        Ok(f) => format!(
            "ok v{} {} keys {} tensors data at {} size {}",
            f.version(),
            f.metadata_count(),
            f.tensor_count(),
            f.data_offset(),
            f.file_size()
        ),
        Err(e) => format!("{:?} at {:?}: {}", e.code(), e.offset(), e.message()),
    }
}
