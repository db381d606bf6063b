//! The tokenizer of a file's vocabulary (`src/tokenizer/`) for C.
//!
//! Ownership: `gguf_tokenizer_open` copies what it needs from the file; the tokenizer is the
//! caller's (free it with `gguf_tokenizer_close`) and stays valid after the file is closed.
//! Threading: a tokenizer is immutable once built, so every function here may be called on one
//! tokenizer from many threads at once.
//!
//! Sizing rule of `gguf_tokenize`, `gguf_detokenize` and `gguf_token_to_piece`: they return the
//! full count (tokens or bytes) the result has. When it is more than the room given, nothing is
//! written and the caller calls again with that much room; NULL with room 0 asks for the count
//! alone. -1 is a failure (the reason in `gguf_last_error`).

use super::boundary::{
    aligned, free_box, guard, known_flags, memory_count, null, slice, slice_mut, to_boxed_mut_ptr,
    try_from, Castable, Element,
};
use super::handle::GGUFFile;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;
use std::ffi::c_char;

/// `gguf_tokenize` flag: add the model's BOS/EOS (or CLS/SEP) as llama.cpp's `add_special`.
pub const GGUF_TOKENIZE_ADD_SPECIAL: u32 = 1;
/// `gguf_tokenize` flag: read special-token text (`<|im_start|>`) as those tokens, as
/// llama.cpp's `parse_special`.
pub const GGUF_TOKENIZE_PARSE_SPECIAL: u32 = 2;
/// `gguf_detokenize` flag: drop a leading BOS and trailing EOS the model adds, as llama.cpp's
/// `remove_special`.
pub const GGUF_DETOKENIZE_REMOVE_SPECIAL: u32 = 1;
/// `gguf_detokenize` and `gguf_token_to_piece` flag: write control tokens' text, as llama.cpp's
/// `unparse_special` (`special`); without it they give nothing.
pub const GGUF_DETOKENIZE_UNPARSE_SPECIAL: u32 = 2;

/// The opaque state behind a `GGUFTokenizer`.
pub struct GGUFTokenizerImpl(Tokenizer);

impl Castable for GGUFTokenizerImpl {
    const ARG: &'static str = "tok";
}

/// A file's vocabulary made into a tokenizer (`gguf_tokenizer_open`). Owned by the caller,
/// independent of the file handle once made, and usable from many threads at once. NULL is
/// never a valid tokenizer.
pub type GGUFTokenizer = *mut GGUFTokenizerImpl;

/// The special tokens of a vocabulary, each -1 where it has none, and whether `add_special`
/// adds BOS and EOS.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GGUFSpecialTokens {
    /// Beginning of sequence (BERT's CLS).
    pub bos: i32,
    /// End of sequence.
    pub eos: i32,
    /// End of turn.
    pub eot: i32,
    /// End of message.
    pub eom: i32,
    /// Unknown.
    pub unk: i32,
    /// Separator.
    pub sep: i32,
    /// Padding.
    pub pad: i32,
    /// Mask.
    pub mask: i32,
    /// Newline.
    pub nl: i32,
    /// Fill-in-the-middle: prefix.
    pub fim_pre: i32,
    /// Fill-in-the-middle: suffix.
    pub fim_suf: i32,
    /// Fill-in-the-middle: middle.
    pub fim_mid: i32,
    /// Fill-in-the-middle: padding.
    pub fim_pad: i32,
    /// Fill-in-the-middle: repository.
    pub fim_rep: i32,
    /// Fill-in-the-middle: file separator.
    pub fim_sep: i32,
    /// Whether GGUF_TOKENIZE_ADD_SPECIAL adds BOS.
    pub add_bos: bool,
    /// Whether GGUF_TOKENIZE_ADD_SPECIAL adds EOS.
    pub add_eos: bool,
}

/// # Safety
/// `tok` is NULL or a live tokenizer.
unsafe fn tokenizer<'a>(tok: GGUFTokenizer) -> Result<&'a Tokenizer> {
    // SAFETY: NULL or live (the caller's contract); shared use only.
    Ok(&unsafe { try_from(tok)? }.0)
}

/// Writes `data` to `out` when it fits in `room` elements; returns `data.len()`. A room that
/// is not NULL must be aligned for `T`, whether or not `data` fits in it.
///
/// # Safety
/// `out` is NULL or valid for writes of `room` elements.
unsafe fn write_out<T: Copy + Element>(
    data: &[T],
    out: *mut T,
    room: u64,
    what: &str,
) -> Result<i64> {
    let n = i64::try_from(data.len()).map_err(|_| Error::size_overflow(what))?;
    if room > 0 && !out.is_null() {
        aligned(out.cast_const(), what)?;
    }
    if (data.len() as u64) <= room && !data.is_empty() {
        // SAFETY: `out` has room for `room >= data.len()` elements (the caller's contract);
        // slice_mut refuses NULL and a pointer not aligned for `T`.
        let dst = unsafe { slice_mut(out, data.len(), what)? };
        // `dst` is the caller's memory, `data` the library's: they cannot overlap.
        dst.copy_from_slice(data);
    }
    Ok(n)
}

/// The tokenizer of `file`'s vocabulary (`tokenizer.ggml.*`), checked: NULL, with the reason,
/// when the file has none or it is unusable (an unknown model or pre-tokenizer name, duplicate
/// tokens, merges naming no token, token types out of range, NaN scores, special-token ids past
/// the vocabulary, byte-level BPE tokens whose pieces would take more than 8 bytes per byte of
/// token text or 64 MiB, whichever is more), and where the refusal is of a value in the file,
/// its byte offset (`gguf_last_error_offset`: the array element or the key's value, in the
/// shard that holds the vocabulary). The caller owns the tokenizer (`gguf_tokenizer_close`);
/// it does not need the file to stay open.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tokenizer_open(file: GGUFFile) -> GGUFTokenizer {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        // A refusal keeps the offset of what it refuses, in the first shard (which holds the
        // vocabulary), and names that shard.
        let t = Tokenizer::from_file(f.model.first()).map_err(|e| {
            let shard = f.model.shard_names().first().unwrap_or(&f.name);
            e.in_file(shard.clone())
        })?;
        Ok(to_boxed_mut_ptr(GGUFTokenizerImpl(t)))
    })
}

/// Frees a tokenizer from `gguf_tokenizer_open`; NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tokenizer_close(tok: GGUFTokenizer) {
    guard((), || {
        // SAFETY: NULL or a tokenizer from `gguf_tokenizer_open`, freed once, when no other
        // call uses it (the header's contract).
        unsafe { free_box(tok) };
        Ok(())
    })
}

/// The number of tokens in the vocabulary; 0 if `tok` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tokenizer_n_tokens(tok: GGUFTokenizer) -> i32 {
    guard(0, || {
        // SAFETY: NULL or live (the header's contract).
        let t = unsafe { tokenizer(tok)? };
        Ok(i32::try_from(t.n_tokens()).unwrap_or(i32::MAX))
    })
}

/// Fills `out` with the vocabulary's special tokens. False if a pointer is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tokenizer_special_tokens(
    tok: GGUFTokenizer,
    out: *mut GGUFSpecialTokens,
) -> bool {
    guard(false, || {
        // SAFETY: NULL or live (the header's contract).
        let t = unsafe { tokenizer(tok)? };
        if out.is_null() {
            return Err(null("out"));
        }
        let s = t.special_tokens();
        let id = |v: Option<i32>| v.unwrap_or(-1);
        let value = GGUFSpecialTokens {
            bos: id(s.bos),
            eos: id(s.eos),
            eot: id(s.eot),
            eom: id(s.eom),
            unk: id(s.unk),
            sep: id(s.sep),
            pad: id(s.pad),
            mask: id(s.mask),
            nl: id(s.nl),
            fim_pre: id(s.fim_pre),
            fim_suf: id(s.fim_suf),
            fim_mid: id(s.fim_mid),
            fim_pad: id(s.fim_pad),
            fim_rep: id(s.fim_rep),
            fim_sep: id(s.fim_sep),
            add_bos: t.add_bos(),
            add_eos: t.add_eos(),
        };
        // SAFETY: non-NULL and writable (the header's contract).
        unsafe { out.write(value) };
        Ok(true)
    })
}

/// Whether `token` ends generation (EOS, EOT, EOM and the tokens llama.cpp counts so); false if
/// `tok` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_token_is_eog(tok: GGUFTokenizer, token: i32) -> bool {
    guard(false, || {
        // SAFETY: NULL or live (the header's contract).
        Ok(unsafe { tokenizer(tok)? }.is_eog(token))
    })
}

/// Tokenizes the `len` bytes at `text` (any bytes: invalid UTF-8 and NUL are accepted; NULL when
/// `len` is 0) into `tokens` (room for `max_tokens`; NULL when `max_tokens` is 0), exactly as
/// llama.cpp's `llama_tokenize`. `flags`: GGUF_TOKENIZE_ADD_SPECIAL, GGUF_TOKENIZE_PARSE_SPECIAL.
/// Returns the number of tokens; when that is more than `max_tokens`, nothing is written (call
/// again with that much room). -1 on failure: a NULL pointer, unknown flags or a `tokens` not
/// aligned for int32_t (GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_tokenize(
    tok: GGUFTokenizer,
    text: *const c_char,
    len: u64,
    tokens: *mut i32,
    max_tokens: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        // SAFETY: NULL or live (the header's contract).
        let t = unsafe { tokenizer(tok)? };
        known_flags(
            flags,
            GGUF_TOKENIZE_ADD_SPECIAL | GGUF_TOKENIZE_PARSE_SPECIAL,
            "flags",
        )?;
        let n = memory_count(len, "len")?;
        // SAFETY: `text` is valid for `len` bytes (the header's contract).
        let bytes = unsafe { slice(text.cast::<u8>(), n, "text")? };
        let ids = t.tokenize(
            bytes,
            flags & GGUF_TOKENIZE_ADD_SPECIAL != 0,
            flags & GGUF_TOKENIZE_PARSE_SPECIAL != 0,
        );
        // SAFETY: `tokens` has room for `max_tokens` (the header's contract).
        unsafe { write_out(&ids, tokens, max_tokens, "tokens") }
    })
}

/// Writes the text of the `n` tokens at `tokens` (NULL when `n` is 0) to `text` (room for
/// `max_len` bytes, no NUL added; NULL when `max_len` is 0), exactly as llama.cpp's
/// `llama_detokenize`. `flags`: GGUF_DETOKENIZE_REMOVE_SPECIAL, GGUF_DETOKENIZE_UNPARSE_SPECIAL.
/// Returns the text's length; when that is more than `max_len`, nothing is written. -1 on
/// failure: a token id outside the vocabulary, unknown flags or a `tokens` not aligned for
/// int32_t (GGUF_ERROR_CODE_INVALID_ARGUMENT), a NULL pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_detokenize(
    tok: GGUFTokenizer,
    tokens: *const i32,
    n: u64,
    text: *mut c_char,
    max_len: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        // SAFETY: NULL or live (the header's contract).
        let t = unsafe { tokenizer(tok)? };
        known_flags(
            flags,
            GGUF_DETOKENIZE_REMOVE_SPECIAL | GGUF_DETOKENIZE_UNPARSE_SPECIAL,
            "flags",
        )?;
        let count = memory_count(n, "n")?;
        // SAFETY: `tokens` is valid for `n` ids (the header's contract).
        let ids = unsafe { slice(tokens, count, "tokens")? };
        let out = t.detokenize(
            ids,
            flags & GGUF_DETOKENIZE_REMOVE_SPECIAL != 0,
            flags & GGUF_DETOKENIZE_UNPARSE_SPECIAL != 0,
        )?;
        // SAFETY: `text` has room for `max_len` bytes (the header's contract).
        unsafe { write_out(&out, text.cast::<u8>(), max_len, "text") }
    })
}

/// Writes token `token`'s text to `buf` (room for `max_len` bytes, no NUL added; NULL when
/// `max_len` is 0), as llama.cpp's `llama_token_to_piece` with no spaces stripped: control and
/// unknown tokens give nothing unless `flags` has GGUF_DETOKENIZE_UNPARSE_SPECIAL. Returns the
/// piece's length; when that is more than `max_len`, nothing is written. -1 on failure: a token
/// id outside the vocabulary, unknown flags (GGUF_ERROR_CODE_INVALID_ARGUMENT), a NULL pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_token_to_piece(
    tok: GGUFTokenizer,
    token: i32,
    buf: *mut c_char,
    max_len: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        // SAFETY: NULL or live (the header's contract).
        let t = unsafe { tokenizer(tok)? };
        known_flags(flags, GGUF_DETOKENIZE_UNPARSE_SPECIAL, "flags")?;
        let piece = t
            .token_to_piece(token, 0, flags & GGUF_DETOKENIZE_UNPARSE_SPECIAL != 0)
            .ok_or_else(|| crate::tokenizer::bad_token(token, t.n_tokens()))?;
        // SAFETY: `buf` has room for `max_len` bytes (the header's contract).
        unsafe { write_out(piece, buf.cast::<u8>(), max_len, "buf") }
    })
}
