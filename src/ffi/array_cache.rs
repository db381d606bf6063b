//! The views the handle keeps of one metadata entry's array, built on first use: the strings as
//! NUL-terminated copies, where each string starts, the strings as zero-copy records, the
//! numbers in host byte order, and for an array of arrays, each element array with views of its
//! own.

use super::lazy::OnceBox;
use super::records::GGUFString;
use crate::format::Layout;
use crate::reader::ByteReader;
use crate::types::ValueType;
use crate::value::{read_value, Array, Element, RawValue};
use std::ffi::{c_char, c_void};

/// Lazily built views of one metadata entry's array.
#[derive(Default)]
pub(crate) struct ArrayCaches {
    pub(super) strings: OnceBox<StringArray>,
    /// For string arrays: where each element's bytes (after its length) start within the
    /// array's bytes, then the array's length.
    pub(super) string_starts: OnceBox<Box<[usize]>>,
    pub(super) numbers: OnceBox<HostArray>,
    /// For string arrays: every string as a pointer into the file's bytes and its length.
    pub(super) string_views: OnceBox<Box<[GGUFString]>>,
    /// For arrays of arrays: every element array (about 40 bytes each, made when the array is
    /// first reached).
    pub(super) inner: OnceBox<Box<[InnerArray]>>,
}

/// One element of an array of arrays: where it lies in its parent's bytes, and the views kept
/// of it (made when it is first reached).
pub(super) struct InnerArray {
    /// A `RawValue::Array` whose span is within the parent array's bytes.
    raw: RawValue,
    pub(super) caches: OnceBox<ArrayCaches>,
}

impl InnerArray {
    /// Every element of `array`, an array of arrays (none for another element type).
    pub(super) fn build(array: &Array<'_>, layout: Layout) -> Box<[InnerArray]> {
        if array.elem_type() != ValueType::Array {
            return Box::default();
        }
        let mut reader = ByteReader::new(array.raw_bytes(), 0, layout);
        // The array was checked when the file was opened: every element reads; a failure
        // would end the list short (and the lookup report the index past its end).
        std::iter::from_fn(|| read_value(&mut reader, ValueType::Array, "array element").ok())
            .take(crate::size::in_memory(array.len()))
            .map(|raw| InnerArray {
                raw,
                caches: OnceBox::new(),
            })
            .collect()
    }

    /// The element array itself, within `parent`'s bytes.
    pub(super) fn view<'a>(&self, parent: &Array<'a>, layout: Layout) -> Option<Array<'a>> {
        self.raw.view(parent.raw_bytes(), layout).as_array()
    }
}

/// Every string of `array` as a zero-copy record (none for another element type).
pub(super) fn string_views(array: &Array<'_>) -> Box<[GGUFString]> {
    let Some(strings) = array.strings() else {
        return Box::default();
    };
    strings
        .map(|s| GGUFString {
            data: s.as_ptr().cast(),
            len: s.len() as u64,
        })
        .collect()
}

/// NUL-terminated copies of every string of an array: one allocation for the bytes, one for the
/// pointers.
pub(super) struct StringArray {
    pub(super) ptrs: Box<[*const c_char]>,
    _bytes: Box<[u8]>,
}

impl StringArray {
    pub(super) fn build(array: &Array<'_>, len_size: usize) -> StringArray {
        let Some(strings) = array.strings() else {
            return StringArray {
                ptrs: Box::default(),
                _bytes: Box::default(),
            };
        };
        let count = crate::size::in_memory(array.len());
        // Exact without a pass: every element is its length field and its bytes, and each copy
        // trades the length field for one NUL.
        let total = array.raw_bytes().len() - count * len_size + count;
        let mut bytes: Vec<u8> = Vec::with_capacity(total);
        let mut ptrs = Vec::with_capacity(count);
        // `bytes` never grows past its capacity, so its buffer does not move while it fills.
        let base = bytes.as_ptr();
        for s in strings {
            ptrs.push(base.wrapping_add(bytes.len()).cast::<c_char>());
            bytes.extend_from_slice(s);
            bytes.push(0);
        }
        // Had the exact size been wrong, the buffer would have moved and the pointers dangle:
        // refuse to hand them out (a panic becomes an internal error at the C boundary).
        assert_eq!(
            bytes.as_ptr(),
            base,
            "string array buffer moved while filling"
        );
        StringArray {
            ptrs: ptrs.into_boxed_slice(),
            _bytes: bytes.into_boxed_slice(),
        }
    }
}

/// An array decoded into host byte order.
pub(super) enum HostArray {
    U8(Box<[u8]>),
    I8(Box<[i8]>),
    U16(Box<[u16]>),
    I16(Box<[i16]>),
    U32(Box<[u32]>),
    I32(Box<[i32]>),
    F32(Box<[f32]>),
    Bool(Box<[bool]>),
    U64(Box<[u64]>),
    I64(Box<[i64]>),
    F64(Box<[f64]>),
}

impl HostArray {
    /// The elements of `array` in host byte order; `None` for arrays of STRING or ARRAY.
    pub(super) fn decode(array: &Array<'_>) -> Option<HostArray> {
        fn all<T: HostElement>(array: &Array<'_>) -> HostArray {
            T::wrap(array.to_vec::<T>().unwrap_or_default().into_boxed_slice())
        }
        Some(match array.elem_type() {
            ValueType::Uint8 => all::<u8>(array),
            ValueType::Int8 => all::<i8>(array),
            ValueType::Uint16 => all::<u16>(array),
            ValueType::Int16 => all::<i16>(array),
            ValueType::Uint32 => all::<u32>(array),
            ValueType::Int32 => all::<i32>(array),
            ValueType::Float32 => all::<f32>(array),
            ValueType::Bool => all::<bool>(array),
            ValueType::Uint64 => all::<u64>(array),
            ValueType::Int64 => all::<i64>(array),
            ValueType::Float64 => all::<f64>(array),
            ValueType::String | ValueType::Array => return None,
        })
    }

    /// The first element (aligned and non-NULL, for no elements too).
    pub(super) fn as_ptr(&self) -> *const c_void {
        match self {
            HostArray::U8(e) => e.as_ptr().cast(),
            HostArray::I8(e) => e.as_ptr().cast(),
            HostArray::U16(e) => e.as_ptr().cast(),
            HostArray::I16(e) => e.as_ptr().cast(),
            HostArray::U32(e) => e.as_ptr().cast(),
            HostArray::I32(e) => e.as_ptr().cast(),
            HostArray::F32(e) => e.as_ptr().cast(),
            HostArray::Bool(e) => e.as_ptr().cast(),
            HostArray::U64(e) => e.as_ptr().cast(),
            HostArray::I64(e) => e.as_ptr().cast(),
            HostArray::F64(e) => e.as_ptr().cast(),
        }
    }
}

/// The element types the typed helpers return, each tied to its [`HostArray`] variant.
pub(super) trait HostElement: Element {
    fn wrap(elements: Box<[Self]>) -> HostArray;
    fn unwrap(host: &HostArray) -> Option<&[Self]>;
}

macro_rules! host_element {
    ($($t:ty => $variant:ident),*) => {$(
        impl HostElement for $t {
            fn wrap(elements: Box<[$t]>) -> HostArray {
                HostArray::$variant(elements)
            }
            fn unwrap(host: &HostArray) -> Option<&[$t]> {
                match host {
                    HostArray::$variant(elements) => Some(elements),
                    _ => None,
                }
            }
        }
    )*};
}

host_element!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, f32 => F32,
              bool => Bool, u64 => U64, i64 => I64, f64 => F64);
