//! Metadata values as the writer takes them (`MetadataValue`, with the reader's array rules)
//! and as it keeps them (`Stored`: given, or an array kept as a file encoded it).

use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, Layout};
use crate::types::ValueType;
use crate::value::Value;

/// An owned metadata value, for writing.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataValue {
    /// UINT8.
    U8(u8),
    /// INT8.
    I8(i8),
    /// UINT16.
    U16(u16),
    /// INT16.
    I16(i16),
    /// UINT32.
    U32(u32),
    /// INT32.
    I32(i32),
    /// FLOAT32.
    F32(f32),
    /// BOOL.
    Bool(bool),
    /// STRING (any bytes).
    String(Vec<u8>),
    /// ARRAY: the element type and the elements, each of that type.
    Array(ValueType, Vec<MetadataValue>),
    /// UINT64.
    U64(u64),
    /// INT64.
    I64(i64),
    /// FLOAT64.
    F64(f64),
}

impl MetadataValue {
    /// A string value.
    pub fn string(s: impl AsRef<[u8]>) -> MetadataValue {
        MetadataValue::String(s.as_ref().to_vec())
    }

    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        use MetadataValue::*;
        match self {
            U8(_) => ValueType::Uint8,
            I8(_) => ValueType::Int8,
            U16(_) => ValueType::Uint16,
            I16(_) => ValueType::Int16,
            U32(_) => ValueType::Uint32,
            I32(_) => ValueType::Int32,
            F32(_) => ValueType::Float32,
            Bool(_) => ValueType::Bool,
            String(_) => ValueType::String,
            Array(..) => ValueType::Array,
            U64(_) => ValueType::Uint64,
            I64(_) => ValueType::Int64,
            F64(_) => ValueType::Float64,
        }
    }

    /// Checks that every array's elements have the array's element type and that arrays nest
    /// no deeper than the reader accepts.
    pub(super) fn check(&self, depth: usize) -> Result<()> {
        if let MetadataValue::Array(elem, items) = self {
            if depth > format::MAX_ARRAY_DEPTH {
                return Err(Error::new(ErrorKind::ArrayTooDeep {
                    max: format::MAX_ARRAY_DEPTH,
                }));
            }
            for item in items {
                if item.value_type() != *elem {
                    return Err(Error::new(ErrorKind::MixedArray {
                        elem: *elem,
                        found: item.value_type(),
                    }));
                }
                item.check(depth + 1)?;
            }
        }
        Ok(())
    }
}

impl From<Value<'_>> for MetadataValue {
    fn from(value: Value<'_>) -> MetadataValue {
        match value {
            Value::U8(v) => MetadataValue::U8(v),
            Value::I8(v) => MetadataValue::I8(v),
            Value::U16(v) => MetadataValue::U16(v),
            Value::I16(v) => MetadataValue::I16(v),
            Value::U32(v) => MetadataValue::U32(v),
            Value::I32(v) => MetadataValue::I32(v),
            Value::F32(v) => MetadataValue::F32(v),
            Value::Bool(v) => MetadataValue::Bool(v),
            Value::String(s) => MetadataValue::String(s.to_vec()),
            Value::Array(a) => {
                MetadataValue::Array(a.elem_type(), a.iter().map(MetadataValue::from).collect())
            }
            Value::U64(v) => MetadataValue::U64(v),
            Value::I64(v) => MetadataValue::I64(v),
            Value::F64(v) => MetadataValue::F64(v),
        }
    }
}

/// A metadata value as the writer keeps it.
#[derive(Clone, Debug)]
pub(super) enum Stored {
    /// A value the caller gave.
    Value(MetadataValue),
    /// An array copied from a file, kept as the file encodes its elements (one buffer, not one
    /// allocation per element or string), re-encoded only if the file written has another
    /// layout (version width or byte order).
    Encoded {
        elem: ValueType,
        count: u64,
        bytes: Vec<u8>,
        layout: Layout,
    },
}

impl Stored {
    pub(super) fn value_type(&self) -> ValueType {
        match self {
            Stored::Value(v) => v.value_type(),
            Stored::Encoded { .. } => ValueType::Array,
        }
    }
}
