//! libgguf as the npm package's WebAssembly modules: the functions `js/src/` calls, and nothing
//! else, so the linker keeps only what they reach.
//!
//! Every function marshals: it takes the caller's pointers and lengths (into this module's
//! memory, allocated with [`lg_alloc`]), calls the library, and hands back a handle, a
//! [`Blob`] or 0 (the reason then in [`lg_error_code`] and [`lg_error_ptr`]). A header is
//! parsed from a prefix of its file: when it goes on past the prefix, [`lg_need`] says how long
//! a prefix to give next (`gguf::source::next_header_len`, the rule the library's own sources
//! follow).

// The exports take pointers only from js/src, which passes what this module handed out (each
// function's SAFETY comment says which); they stay safe `extern "C"` functions, as wasm exports.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::cell::RefCell;

use gguf::error::ErrorCode;
use gguf::{Error, GgufFile};

mod describe;
#[cfg(feature = "open")]
mod values;

/// An opened header: the prefix of the file that holds it, parsed.
pub struct Handle {
    file: GgufFile<Vec<u8>>,
    #[cfg(feature = "open")]
    tokenizer: Option<gguf::tokenizer::Tokenizer>,
}

/// Bytes handed back to JavaScript, read there through [`lg_blob_ptr`] and [`lg_blob_len`] and
/// freed with [`lg_blob_free`].
pub type Blob = Vec<u8>;

struct LastError {
    code: u32,
    text: Vec<u8>,
    need: f64,
}

thread_local! {
    static LAST: RefCell<LastError> = const {
        RefCell::new(LastError { code: 0, text: Vec::new(), need: 0.0 })
    };
}

fn fail(e: &Error, need: f64) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        l.code = e.code() as u32;
        l.text = e.to_string().into_bytes();
        l.need = need;
    });
}

#[cfg(feature = "open")]
fn blob(bytes: Vec<u8>) -> *mut Blob {
    Box::into_raw(Box::new(bytes))
}

/// A caller's bytes as a slice (empty for a zero length, whatever the pointer).
fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: the caller wrote `len` bytes at `ptr`, inside this module's memory (lg_alloc),
    // and keeps them until the call returns.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// A handle made by [`lg_open`], or `None` for 0.
fn handle<'a>(h: *mut Handle) -> Option<&'a mut Handle> {
    // SAFETY: the caller passes 0 or a handle lg_open returned and lg_close has not freed.
    unsafe { h.as_mut() }
}

/// `len` bytes for the caller to fill (a vector's storage, of exactly that capacity).
#[no_mangle]
pub extern "C" fn lg_alloc(len: usize) -> *mut u8 {
    let mut v: Vec<u8> = Vec::with_capacity(len);
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

/// Frees what [`lg_alloc`] returned for `len` bytes.
#[no_mangle]
pub extern "C" fn lg_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        // SAFETY: `ptr` came from lg_alloc(len): a Vec<u8> of capacity `len`, not yet freed.
        drop(unsafe { Vec::from_raw_parts(ptr, 0, len) });
    }
}

/// The code of the last failure (`GGUF_ERROR_CODE_*`), 0 if none.
#[no_mangle]
pub extern "C" fn lg_error_code() -> u32 {
    LAST.with(|l| l.borrow().code)
}

/// The last failure's message (UTF-8, [`lg_error_len`] bytes).
#[no_mangle]
pub extern "C" fn lg_error_ptr() -> *const u8 {
    LAST.with(|l| l.borrow().text.as_ptr())
}

/// The length of [`lg_error_ptr`]'s message.
#[no_mangle]
pub extern "C" fn lg_error_len() -> usize {
    LAST.with(|l| l.borrow().text.len())
}

/// After [`lg_open`] failed: the length of the prefix to give next, or 0 when the failure is
/// final.
#[no_mangle]
pub extern "C" fn lg_need() -> f64 {
    LAST.with(|l| l.borrow().need)
}

/// Parses the header in the first `len` bytes of a file of `size` bytes, taking the bytes
/// (`ptr` from lg_alloc(len), written by the caller; freed here whatever the outcome). `name`
/// (`name_len` bytes of UTF-8) names the file in messages. 0 on failure; when the header only
/// goes on past the prefix, [`lg_need`] says how long a prefix to give next.
#[no_mangle]
pub extern "C" fn lg_open(
    ptr: *mut u8,
    len: usize,
    size: f64,
    name: *const u8,
    name_len: usize,
) -> *mut Handle {
    let prefix = if ptr.is_null() {
        Vec::new()
    } else {
        // SAFETY: `ptr` came from lg_alloc(len) and the caller wrote all `len` bytes.
        unsafe { Vec::from_raw_parts(ptr, len, len) }
    };
    let name = String::from_utf8_lossy(bytes(name, name_len)).into_owned();
    let have = prefix.len() as u64;
    // A file size JavaScript gives as a number: a whole number of bytes, at least the prefix.
    let size = if (0.0..=9_007_199_254_740_992.0).contains(&size) {
        size as u64
    } else {
        0
    }
    .max(have);
    #[cfg(feature = "open")]
    gguf::set_clock(clock);
    match GgufFile::from_prefix(prefix, size) {
        Ok(file) => Box::into_raw(Box::new(Handle {
            file,
            #[cfg(feature = "open")]
            tokenizer: None,
        })),
        Err(e) => {
            match gguf::source::next_header_len(e, have, size) {
                Ok(next) => LAST.with(|l| {
                    let mut l = l.borrow_mut();
                    l.code = ErrorCode::Truncated as u32;
                    l.text = b"the header goes on past the prefix".to_vec();
                    l.need = next as f64;
                }),
                Err(e) => fail(&e.in_file(name), 0.0),
            }
            std::ptr::null_mut()
        }
    }
}

#[cfg(feature = "open")]
#[link(wasm_import_module = "libgguf")]
extern "C" {
    /// JavaScript's clock: seconds since 1970 (`Date.now() / 1000`).
    fn lg_now() -> f64;
}

/// The clock chat templates read (`strftime_now`, llama-server's `datetime`): JavaScript's.
#[cfg(feature = "open")]
fn clock() -> Option<i64> {
    // SAFETY: an imported function of no arguments that returns a number.
    let t = unsafe { lg_now() };
    (t.is_finite() && t.abs() < 9.0e15).then(|| t.floor() as i64)
}

/// Frees a handle.
#[no_mangle]
pub extern "C" fn lg_close(h: *mut Handle) {
    if !h.is_null() {
        // SAFETY: `h` came from lg_open and is freed once (the caller forgets it).
        drop(unsafe { Box::from_raw(h) });
    }
}

/// The header described for JavaScript (`describe` documents the layout), its four parts read
/// with [`lg_part_ptr`] and [`lg_part_len`]; 0 for no handle.
#[no_mangle]
pub extern "C" fn lg_describe(h: *mut Handle) -> *mut describe::Description {
    match handle(h) {
        Some(h) => Box::into_raw(Box::new(describe::describe(&h.file))),
        None => std::ptr::null_mut(),
    }
}

/// Part `i` (0 words, 1 numbers, 2 text, 3 raw strings) of a description: its address.
#[no_mangle]
pub extern "C" fn lg_part_ptr(d: *const describe::Description, i: u32) -> *const u8 {
    // SAFETY: `d` is 0 or came from lg_describe and is not yet freed.
    match unsafe { d.as_ref() } {
        Some(d) => d.part(i).as_ptr(),
        None => std::ptr::null(),
    }
}

/// Part `i`'s length in bytes.
#[no_mangle]
pub extern "C" fn lg_part_len(d: *const describe::Description, i: u32) -> usize {
    // SAFETY: as lg_part_ptr.
    match unsafe { d.as_ref() } {
        Some(d) => d.part(i).len(),
        None => 0,
    }
}

/// Frees a description.
#[no_mangle]
pub extern "C" fn lg_describe_free(d: *mut describe::Description) {
    if !d.is_null() {
        // SAFETY: `d` came from lg_describe and is freed once.
        drop(unsafe { Box::from_raw(d) });
    }
}

/// A blob's bytes.
#[no_mangle]
pub extern "C" fn lg_blob_ptr(b: *const Blob) -> *const u8 {
    // SAFETY: `b` is 0 or a blob this module returned, not yet freed.
    unsafe { b.as_ref() }.map_or(std::ptr::null(), |b| b.as_ptr())
}

/// A blob's length in bytes.
#[no_mangle]
pub extern "C" fn lg_blob_len(b: *const Blob) -> usize {
    // SAFETY: as lg_blob_ptr.
    unsafe { b.as_ref() }.map_or(0, |b| b.len())
}

/// Frees a blob.
#[no_mangle]
pub extern "C" fn lg_blob_free(b: *mut Blob) {
    if !b.is_null() {
        // SAFETY: `b` is a blob this module returned, freed once.
        drop(unsafe { Box::from_raw(b) });
    }
}

/// Tensor `index`'s data in the file: its first byte (`which` 0) or its length in bytes
/// (`which` 1); -1 for no such tensor.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_tensor_span(h: *mut Handle, index: u32, which: u32) -> f64 {
    let Some(t) = handle(h).and_then(|h| {
        let i = usize::try_from(index).ok()?;
        let t = h.file.tensor_at(i)?;
        let start = h.file.data_offset().checked_add(t.offset)?;
        Some((start, t.size))
    }) else {
        return -1.0;
    };
    if which == 0 {
        t.0 as f64
    } else {
        t.1 as f64
    }
}

/// Floats handed back to JavaScript (a tensor's values, read in place as a `Float32Array`:
/// wasm32 is little-endian), through [`lg_floats_ptr`] and [`lg_floats_len`], freed with
/// [`lg_floats_free`].
#[cfg(feature = "open")]
pub type Floats = Vec<f32>;

/// The floats' address.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_floats_ptr(f: *const Floats) -> *const f32 {
    // SAFETY: `f` is 0 or floats this module returned, not yet freed.
    unsafe { f.as_ref() }.map_or(std::ptr::null(), |f| f.as_ptr())
}

/// How many floats.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_floats_len(f: *const Floats) -> usize {
    // SAFETY: as lg_floats_ptr.
    unsafe { f.as_ref() }.map_or(0, |f| f.len())
}

/// Frees floats.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_floats_free(f: *mut Floats) {
    if !f.is_null() {
        // SAFETY: `f` is floats this module returned, freed once.
        drop(unsafe { Box::from_raw(f) });
    }
}

/// Tensor `index`'s values as floats, from its data (`len` bytes at `ptr`, as
/// stored in the file, which the caller read: the range [`lg_tensor_span`] gives). 0 on failure.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_tensor_values(
    h: *mut Handle,
    index: u32,
    ptr: *const u8,
    len: usize,
) -> *mut Floats {
    let Some(h) = handle(h) else {
        return std::ptr::null_mut();
    };
    match values::tensor_values(&h.file, index, bytes(ptr, len)) {
        Ok(v) => Box::into_raw(Box::new(v)),
        Err(e) => {
            fail(&e, 0.0);
            std::ptr::null_mut()
        }
    }
}

/// Makes the handle's tokenizer (once); false on failure.
#[cfg(feature = "open")]
fn tokenizer(h: &mut Handle) -> Option<&gguf::tokenizer::Tokenizer> {
    if h.tokenizer.is_none() {
        match gguf::tokenizer::Tokenizer::from_file(&h.file) {
            Ok(t) => h.tokenizer = Some(t),
            Err(e) => {
                fail(&e, 0.0);
                return None;
            }
        }
    }
    h.tokenizer.as_ref()
}

/// Text (`len` bytes at `ptr`) to tokens (little-endian i32s), as `gguf_tokenize`.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_tokenize(
    h: *mut Handle,
    ptr: *const u8,
    len: usize,
    add_special: u32,
    parse_special: u32,
) -> *mut Blob {
    let Some(t) = handle(h).and_then(tokenizer) else {
        return std::ptr::null_mut();
    };
    let tokens = t.tokenize(bytes(ptr, len), add_special != 0, parse_special != 0);
    blob(tokens.iter().flat_map(|t| t.to_le_bytes()).collect())
}

/// Tokens (`n` little-endian i32s at `ptr`) to text, as `gguf_detokenize`.
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_detokenize(
    h: *mut Handle,
    ptr: *const u8,
    n: usize,
    remove_special: u32,
    unparse_special: u32,
) -> *mut Blob {
    let Some(t) = handle(h).and_then(tokenizer) else {
        return std::ptr::null_mut();
    };
    let Some(len) = n.checked_mul(4) else {
        return std::ptr::null_mut();
    };
    let tokens: Vec<i32> = bytes(ptr, len)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    match t.detokenize(&tokens, remove_special != 0, unparse_special != 0) {
        Ok(text) => blob(text),
        Err(e) => {
            fail(&e, 0.0);
            std::ptr::null_mut()
        }
    }
}

/// The conversation (a JSON request, `len` bytes at `ptr`, as `gguf_chat_render` takes it)
/// rendered with the file's chat template (`name`, `name_len` bytes; none for the default), as
/// `gguf_chat_render`: as transformers renders it, or as llama-server does when `llama_cpp` is
/// not 0 (`GGUF_CHAT_LLAMA_CPP`).
#[cfg(feature = "open")]
#[no_mangle]
pub extern "C" fn lg_render_chat(
    h: *mut Handle,
    ptr: *const u8,
    len: usize,
    name: *const u8,
    name_len: usize,
    llama_cpp: u32,
) -> *mut Blob {
    let Some(h) = handle(h) else {
        return std::ptr::null_mut();
    };
    let name =
        (!name.is_null()).then(|| String::from_utf8_lossy(bytes(name, name_len)).into_owned());
    let rendered = if llama_cpp != 0 {
        gguf::chat::render_file_llama_cpp(&h.file, name.as_deref(), bytes(ptr, len))
    } else {
        gguf::chat::render_file(&h.file, name.as_deref(), bytes(ptr, len))
    };
    match rendered {
        Ok(text) => blob(text.into_bytes()),
        Err(e) => {
            fail(&e, 0.0);
            std::ptr::null_mut()
        }
    }
}
