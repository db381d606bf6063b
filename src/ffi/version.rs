//! The library's version, as the header's `LIBGGUF_VERSION*` macros also state it.

use std::ffi::c_char;

/// The version of the library actually linked, e.g. "0.1.0": a static string. Compare it with
/// `LIBGGUF_VERSION` (the header compiled against) to detect a mismatched install.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_library_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
