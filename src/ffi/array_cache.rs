//! The views the handle keeps of one metadata entry's array, built on first use: the strings as
//! NUL-terminated copies, where each string starts, and the numbers in host byte order.

use super::lazy::OnceBox;
use crate::value::{Array, Element};
use std::ffi::c_char;

/// Lazily built views of one metadata entry's array.
#[derive(Default)]
pub(crate) struct ArrayCaches {
    pub(super) strings: OnceBox<StringArray>,
    /// For string arrays: where each element's bytes (after its length) start within the
    /// array's bytes, then the array's length.
    pub(super) string_starts: OnceBox<Box<[usize]>>,
    pub(super) numbers: OnceBox<HostArray>,
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
