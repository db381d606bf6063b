//! Metadata values: how each is encoded, how arrays are walked (iteratively, with every count
//! checked against the bytes left before any loop), and the zero-copy views handed to callers.

use crate::error::{Error, ErrorKind, Result};
use crate::format::{ByteOrder, Layout, MAX_ARRAY_DEPTH};
use crate::reader::{ByteReader, Span};
use crate::types::ValueType;

/// A value as the parser records it: scalars decoded, strings and arrays as spans of the file.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RawValue {
    /// A fixed-size scalar; `bits` holds its value in host order, zero-extended.
    Scalar {
        ty: ValueType,
        bits: u64,
    },
    String(Span),
    /// `data` covers every element's bytes.
    Array {
        elem: ValueType,
        len: u64,
        data: Span,
    },
}

impl RawValue {
    pub fn value_type(&self) -> ValueType {
        match self {
            RawValue::Scalar { ty, .. } => *ty,
            RawValue::String(_) => ValueType::String,
            RawValue::Array { .. } => ValueType::Array,
        }
    }

    pub fn view<'a>(&self, bytes: &'a [u8], layout: Layout) -> Value<'a> {
        match *self {
            RawValue::Scalar { ty, bits } => scalar_value(ty, bits),
            RawValue::String(span) => Value::String(span.of(bytes)),
            RawValue::Array { elem, len, data } => Value::Array(Array {
                elem,
                len,
                data: data.of(bytes),
                layout,
            }),
        }
    }
}

fn scalar_value(ty: ValueType, bits: u64) -> Value<'static> {
    // A value narrower than 8 bytes is in the low bytes of `bits` (little-endian order here is
    // the order of significance, on any host).
    let b = bits.to_le_bytes();
    let (b2, b4) = ([b[0], b[1]], [b[0], b[1], b[2], b[3]]);
    match ty {
        ValueType::Uint8 => Value::U8(b[0]),
        ValueType::Int8 => Value::I8(i8::from_le_bytes([b[0]])),
        ValueType::Uint16 => Value::U16(u16::from_le_bytes(b2)),
        ValueType::Int16 => Value::I16(i16::from_le_bytes(b2)),
        ValueType::Uint32 => Value::U32(u32::from_le_bytes(b4)),
        ValueType::Int32 => Value::I32(i32::from_le_bytes(b4)),
        ValueType::Float32 => Value::F32(f32::from_bits(u32::from_le_bytes(b4))),
        ValueType::Bool => Value::Bool(bits != 0),
        ValueType::Uint64 => Value::U64(bits),
        ValueType::Int64 => Value::I64(bits as i64),
        ValueType::Float64 => Value::F64(f64::from_bits(bits)),
        // Not scalars: never recorded as `RawValue::Scalar`.
        ValueType::String | ValueType::Array => Value::U64(bits),
    }
}

/// Reads a fixed-size scalar of type `ty` (a type with [`ValueType::fixed_size`]).
fn read_scalar(r: &mut ByteReader<'_>, ty: ValueType, what: &str) -> Result<u64> {
    let at = r.pos();
    let bits = match ty.fixed_size() {
        Some(1) => u64::from(r.u8(what)?),
        Some(2) => u64::from(r.u16(what)?),
        Some(4) => u64::from(r.u32(what)?),
        _ => r.u64(what)?,
    };
    if ty == ValueType::Bool && bits > 1 {
        return Err(bad_bool(at, bits.to_le_bytes()[0], what));
    }
    Ok(bits)
}

#[cold]
#[inline(never)]
fn bad_bool(at: usize, found: u8, what: &str) -> Error {
    Error::at(
        at as u64,
        ErrorKind::BadBool {
            found,
            element: None,
        },
    )
    .with_context(what)
}

/// Reads a value type id.
pub(crate) fn read_value_type(r: &mut ByteReader<'_>, what: &str) -> Result<ValueType> {
    let at = r.pos();
    let id = r.u32(what)?;
    ValueType::from_id(id).ok_or_else(|| {
        Error::at_with(at as u64, || ErrorKind::BadValueType { found: id }).with_context(what)
    })
}

/// Reads one value of type `ty`; arrays are walked to find their end but not decoded.
pub(crate) fn read_value(r: &mut ByteReader<'_>, ty: ValueType, what: &str) -> Result<RawValue> {
    match ty {
        ValueType::String => Ok(RawValue::String(r.string(what)?)),
        ValueType::Array => {
            let (elem, len, data) = read_array(r, 1, what)?;
            Ok(RawValue::Array { elem, len, data })
        }
        _ => Ok(RawValue::Scalar {
            ty,
            bits: read_scalar(r, ty, what)?,
        }),
    }
}

/// Fewest bytes one element of type `elem` can take.
fn min_encoded_size(elem: ValueType, layout: Layout) -> u64 {
    match elem.fixed_size() {
        Some(size) => size as u64,
        None if elem == ValueType::String => layout.len_size() as u64,
        None => 4 + layout.len_size() as u64,
    }
}

#[cold]
#[inline(never)]
fn array_too_long(
    r: &ByteReader<'_>,
    at: usize,
    what: &str,
    elem: ValueType,
    count: u64,
    min: u64,
) -> Error {
    let kind = ErrorKind::ArrayTooLong {
        reading: what.to_string(),
        elem,
        count,
        shortfall: r.shortfall(min),
    };
    Error::at(at as u64, kind)
}

/// Reads an array header (element type and count) at nesting `depth` and checks, in O(1), that
/// the count could fit in the bytes left.
fn read_array_header(r: &mut ByteReader<'_>, depth: usize, what: &str) -> Result<(ValueType, u64)> {
    if depth > MAX_ARRAY_DEPTH {
        let kind = || ErrorKind::ArrayTooDeep {
            max: MAX_ARRAY_DEPTH,
        };
        return Err(Error::at_with(r.pos() as u64, kind).with_context(what));
    }
    let elem = read_value_type(r, what)?;
    let len_at = r.pos();
    let len = r.len(what)?;
    let min = min_encoded_size(elem, r.layout());
    if !r.fits(len, min) {
        return Err(array_too_long(r, len_at, what, elem, len, min));
    }
    Ok((elem, len))
}

/// Reads an array (header and elements) starting at nesting `depth`; returns its element type,
/// count and the span of its elements. Nested arrays are walked with an explicit, bounded stack.
fn read_array(r: &mut ByteReader<'_>, depth: usize, what: &str) -> Result<(ValueType, u64, Span)> {
    let (elem, len) = read_array_header(r, depth, what)?;
    let start = r.pos();
    // Each level: element type and elements still to skip.
    let mut stack = [(ValueType::Uint8, 0u64); MAX_ARRAY_DEPTH + 1];
    let mut top = 0;
    stack[0] = (elem, len);
    loop {
        let (ty, left) = stack[top];
        if left == 0 {
            if top == 0 {
                break;
            }
            top -= 1;
            continue;
        }
        match ty {
            ValueType::String => {
                r.skip_strings(left, what)?;
                stack[top].1 = 0;
            }
            ValueType::Array => {
                stack[top].1 -= 1;
                let nested = read_array_header(r, depth + top + 1, what)?;
                top += 1;
                stack[top] = nested;
            }
            _ => {
                // The header check bounded `left * size` by the bytes left.
                let size = ty.fixed_size().unwrap_or(1);
                let at = r.pos();
                let bytes = r.take(crate::size::in_memory(left) * size, what)?;
                if ty == ValueType::Bool {
                    if let Some(i) = bytes.iter().position(|&b| b > 1) {
                        return Err(bad_bool(at + i, bytes[i], what));
                    }
                }
                stack[top].1 = 0;
            }
        }
    }
    Ok((
        elem,
        len,
        Span {
            start,
            len: r.pos() - start,
        },
    ))
}

/// A metadata value, borrowed from the file's bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
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
    /// STRING: the raw bytes (UTF-8 by convention; not checked, and may contain NUL).
    String(&'a [u8]),
    /// ARRAY: decoded lazily.
    Array(Array<'a>),
    /// UINT64.
    U64(u64),
    /// INT64.
    I64(i64),
    /// FLOAT64.
    F64(f64),
}

impl<'a> Value<'a> {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::Uint8,
            Value::I8(_) => ValueType::Int8,
            Value::U16(_) => ValueType::Uint16,
            Value::I16(_) => ValueType::Int16,
            Value::U32(_) => ValueType::Uint32,
            Value::I32(_) => ValueType::Int32,
            Value::F32(_) => ValueType::Float32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::Uint64,
            Value::I64(_) => ValueType::Int64,
            Value::F64(_) => ValueType::Float64,
        }
    }

    /// The string's bytes, if the value is a string.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The array, if the value is an array.
    pub fn as_array(&self) -> Option<Array<'a>> {
        match self {
            Value::Array(a) => Some(*a),
            _ => None,
        }
    }

    /// The value as an unsigned integer, if it is an unsigned integer type.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a signed integer, if it is a signed integer type.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v.into()),
            Value::I16(v) => Some(v.into()),
            Value::I32(v) => Some(v.into()),
            Value::I64(v) => Some(v),
            _ => None,
        }
    }
}

/// An array value: element type, count and the elements' raw bytes, decoded only on request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Array<'a> {
    elem: ValueType,
    len: u64,
    data: &'a [u8],
    layout: Layout,
}

impl<'a> Array<'a> {
    /// The type of every element.
    pub fn elem_type(&self) -> ValueType {
        self.elem
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' bytes as stored in the file (file byte order, unaligned).
    pub fn raw_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The byte order of the elements.
    pub fn byte_order(&self) -> ByteOrder {
        self.layout.order
    }

    /// Iterates over the elements.
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter {
            reader: ByteReader::new(self.data, 0, self.layout),
            elem: self.elem,
            left: self.len,
        }
    }

    /// Iterates over the elements of a string array, or `None` if the elements are not strings.
    pub fn strings(&self) -> Option<impl Iterator<Item = &'a [u8]> + 'a> {
        (self.elem == ValueType::String).then(|| {
            let data = self.data;
            let mut reader = ByteReader::new(data, 0, self.layout);
            let mut left = self.len;
            std::iter::from_fn(move || {
                if left == 0 {
                    return None;
                }
                left -= 1;
                reader.string("string element").ok().map(|s| s.of(data))
            })
        })
    }

    /// The elements decoded into host byte order, or `None` if they are not of type `T`.
    pub fn to_vec<T: Element>(&self) -> Option<Vec<T>> {
        if self.elem != T::TYPE {
            return None;
        }
        let chunks = self.data.chunks_exact(std::mem::size_of::<T>());
        // One branch on the byte order, outside the loop: with the order constant inside it,
        // the loop compiles to plain loads (a copy, on a host of the file's byte order).
        Some(match self.layout.order {
            ByteOrder::Little => chunks.map(|c| T::decode(c, ByteOrder::Little)).collect(),
            ByteOrder::Big => chunks.map(|c| T::decode(c, ByteOrder::Big)).collect(),
        })
    }
}

/// Iterator over an [`Array`]'s elements.
pub struct ArrayIter<'a> {
    reader: ByteReader<'a>,
    elem: ValueType,
    left: u64,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let layout = self.reader.layout();
        let bytes = self.reader.bytes();
        // The array was validated when the file was opened, so this read succeeds; a failure
        // ends the iteration rather than panicking.
        let raw = read_value(&mut self.reader, self.elem, "array element").ok()?;
        Some(raw.view(bytes, layout))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

/// A fixed-size element type that arrays can be decoded into.
pub trait Element: Copy + sealed::Sealed {
    /// The value type this Rust type reads.
    const TYPE: ValueType;
    /// Decodes one element from exactly `size_of::<Self>()` bytes in `order`.
    fn decode(bytes: &[u8], order: ByteOrder) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($($t:ty => $vt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ValueType = ValueType::$vt;
            #[inline]
            fn decode(bytes: &[u8], order: ByteOrder) -> $t {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                match order {
                    ByteOrder::Little => <$t>::from_le_bytes(raw),
                    ByteOrder::Big => <$t>::from_be_bytes(raw),
                }
            }
        }
    )*};
}

element!(u8 => Uint8, i8 => Int8, u16 => Uint16, i16 => Int16, u32 => Uint32, i32 => Int32,
         f32 => Float32, u64 => Uint64, i64 => Int64, f64 => Float64);

impl sealed::Sealed for bool {}
impl Element for bool {
    const TYPE: ValueType = ValueType::Bool;
    #[inline]
    fn decode(bytes: &[u8], _order: ByteOrder) -> bool {
        // Bytes other than 0 and 1 are refused when the file is opened.
        bytes.first().is_some_and(|&b| b != 0)
    }
}
