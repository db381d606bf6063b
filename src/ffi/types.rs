//! The format's types as seen from C: names and block geometry of tensor data types, names of
//! value types. Unknown ids return the documented failure value and record
//! GGUF_ERROR_CODE_INVALID_ARGUMENT.

use super::boundary::guard;
use crate::error::{Error, ErrorCode, Result};
use crate::types::{DataType, ValueType};
use std::ffi::c_char;

fn data_type(id: u32) -> Result<DataType> {
    DataType::from_id(id).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{id} is not a ggml data type id (unknown or removed)"),
        )
    })
}

/// ggml's name of the tensor data type `dtype` (e.g. "Q4_K"), a static string; NULL for ids
/// that are unknown or were removed from ggml.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_dtype_name(dtype: u32) -> *const c_char {
    guard(std::ptr::null(), || Ok(data_type(dtype)?.c_name().as_ptr()))
}

/// Number of elements in one block of `dtype` (1 for F32, 32 for Q4_0, 256 for the K-quants);
/// 0 for unknown ids.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_dtype_block_size(dtype: u32) -> u64 {
    guard(0, || Ok(data_type(dtype)?.block_elems()))
}

/// Number of bytes one block of `dtype` takes (4 for F32, 18 for Q4_0); 0 for unknown ids.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_dtype_block_bytes(dtype: u32) -> u64 {
    guard(0, || Ok(data_type(dtype)?.block_bytes()))
}

/// The specification's name of the value type `type` (e.g. "UINT32"), a static string; NULL for
/// ids above 12.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_value_type_name(r#type: u32) -> *const c_char {
    guard(std::ptr::null(), || {
        let t = ValueType::from_id(r#type).ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                format!("{} is not a value type id (0 to 12)", r#type),
            )
        })?;
        Ok(t.c_name().as_ptr())
    })
}
