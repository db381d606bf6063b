//! What every exported function does at the boundary: catch panics, turn errors into the
//! documented failure value plus a recorded error, and check pointer arguments.

use super::last_error::record;
use crate::error::{Error, ErrorCode, Result};
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; on an error or a panic, records why and returns `fail`.
pub(crate) fn guard<T>(fail: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            record(&error);
            fail
        }
        Err(_) => {
            record(&Error::msg(
                ErrorCode::Internal,
                "internal error (a panic was caught at the C boundary; please report it)",
            ));
            fail
        }
    }
}

/// The error for a NULL pointer argument.
pub(crate) fn null(what: &str) -> Error {
    Error::msg(ErrorCode::NullArgument, format!("{what} is NULL"))
}

/// The bytes of a NUL-terminated C string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string living for 'a.
    Ok(unsafe { CStr::from_ptr(ptr) }.to_bytes())
}

/// A path argument: the exact bytes of a NUL-terminated C string (see
/// `crate::platform::path_from_bytes`).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn c_path(ptr: *const c_char, what: &str) -> Result<std::path::PathBuf> {
    // SAFETY: the caller's contract is c_str's.
    crate::platform::path_from_bytes(unsafe { c_str(ptr, what)? })
}

/// Writes `value` through an optional out-pointer.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
        unsafe { out.write(value) };
    }
}
