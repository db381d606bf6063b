//! Chat templates (`src/chat/`) for C: a conversation rendered into the prompt as transformers'
//! `apply_chat_template(..., tokenize=False)` renders it.
//!
//! Sizing rule of the render functions: they return the prompt's full length in bytes. When it
//! is more than `out_size`, nothing is written and the caller calls again with that much room;
//! NULL with `out_size` 0 asks for the length alone. No NUL is added. -1 is a failure (the
//! reason in `gguf_last_error`: GGUF_ERROR_CODE_TEMPLATE_SYNTAX with the line and column,
//! TEMPLATE_RENDER with the template's own message where it raised, TEMPLATE_LIMIT, BAD_REQUEST
//! with the request's byte offset in `gguf_last_error_offset`).
//! Threading: a compiled template is immutable; it may render on many threads at once.

use super::boundary::{
    free_box, guard, memory_count, null, slice, to_boxed_mut_ptr, to_usize, try_from, Castable,
};
use super::handle::GGUFFile;
use crate::chat::{self, ChatTemplate};
use crate::error::{Error, ErrorCode, Result};
use std::ffi::c_char;

/// `gguf_chat_render*` flag: render as llama-server does (llama.cpp v0.5.0's
/// `common_chat_templates_apply`): its fixes to the messages (developer role to system, a system
/// message merged into the next where the template has no system role, tool-call arguments
/// parsed, content parts joined, unknown message keys dropped) and its variables
/// (`enable_thinking` true, `datetime`, `date_string`, `add_generation_prompt` true unless the
/// request says false; `bos_token`/`eos_token` from the file's vocabulary, or empty, with their
/// text dropped from the prompt's ends where the vocabulary adds the token itself), rendered by
/// this library's engine (jinja2's semantics, not llama.cpp's own Jinja engine).
/// `continue_final_message` renders the conversation without the last message, then the
/// generation prompt and that message's content (llama.cpp's reasoning markers around the
/// continued message are not repeated). Messages llama.cpp refuses (no role, content neither a
/// string, a list of text parts nor null, ...) are GGUF_ERROR_CODE_BAD_REQUEST.
pub const GGUF_CHAT_LLAMA_CPP: u32 = 1;

/// The opaque state behind a `GGUFChatTemplate`.
pub struct GGUFChatTemplateImpl(ChatTemplate);

impl Castable for GGUFChatTemplateImpl {
    const ARG: &'static str = "tmpl";
}

/// A compiled chat template (`gguf_chat_template_compile`): owned by the caller, usable from
/// many threads at once. NULL is never a valid template.
pub type GGUFChatTemplate = *mut GGUFChatTemplateImpl;

/// Whether the flags ask for llama-server's rendering.
fn check_flags(flags: u32) -> Result<bool> {
    if flags & !GGUF_CHAT_LLAMA_CPP != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!("unknown flags {flags:#x}"),
        ));
    }
    Ok(flags & GGUF_CHAT_LLAMA_CPP != 0)
}

/// The caller's `len` bytes at `ptr`, as text for a template.
///
/// # Safety
/// `ptr` is valid for `len` bytes (or `len` is 0).
unsafe fn text<'a>(ptr: *const c_char, len: u64, what: &str) -> Result<&'a [u8]> {
    let n = memory_count(len, what)?;
    // SAFETY: the caller's contract.
    unsafe { slice(ptr.cast::<u8>(), n, what) }
}

/// Writes `text` to `out` when it fits in `out_size` bytes; returns its length.
///
/// # Safety
/// `out` is NULL or valid for writes of `out_size` bytes.
unsafe fn write_text(text: &str, out: *mut c_char, out_size: u64) -> Result<i64> {
    let n = i64::try_from(text.len()).map_err(|_| Error::size_overflow("the prompt"))?;
    if (text.len() as u64) <= out_size && !text.is_empty() {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: `out` has room for `out_size >= text.len()` bytes (the caller's contract)
        // and cannot overlap `text`, which the library owns.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), text.len()) };
    }
    Ok(n)
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{what} is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// Renders the chat template `tmpl` (`tmpl_len` bytes of UTF-8) over `request` (`request_len`
/// bytes of JSON: `{"messages": [...], "tools": [...]?, "documents": [...]?,
/// "add_generation_prompt": bool?, "continue_final_message": bool?, ...}`, every other key a
/// template variable such as `bos_token`), as transformers' `apply_chat_template(...,
/// tokenize=False)` renders it. Writes the prompt to `out` when it fits in `out_size` bytes and
/// returns its length (see the sizing rule in the header's chat section); -1 on failure.
/// `flags`: 0 (transformers) or GGUF_CHAT_LLAMA_CPP. `strftime_now()` reads the clock, or SOURCE_DATE_EPOCH (seconds,
/// UTC) when that environment variable is set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_render_template(
    tmpl: *const c_char,
    tmpl_len: u64,
    request: *const c_char,
    request_len: u64,
    out: *mut c_char,
    out_size: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        let llama = check_flags(flags)?;
        // SAFETY: each pointer is valid for its length (the header's contract).
        let (t, r) = unsafe {
            (
                text(tmpl, tmpl_len, "tmpl")?,
                text(request, request_len, "request")?,
            )
        };
        let prompt = if llama {
            ChatTemplate::new(utf8(t, "tmpl")?)?.render_llama_cpp(r, "", "", false, false)?
        } else {
            chat::render_template(utf8(t, "tmpl")?, r)?
        };
        // SAFETY: `out` has room for `out_size` bytes (the header's contract).
        unsafe { write_text(&prompt, out, out_size) }
    })
}

/// Renders the file's own chat template: `name` NULL for `tokenizer.chat_template`, else
/// `tokenizer.chat_template.<name>` (GGUF_ERROR_CODE_NOT_FOUND when the file has none).
/// `bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token` and
/// `mask_token` are the text of the tokens the vocabulary names, unless the request sets them.
/// Otherwise as `gguf_chat_render_template`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_render(
    file: GGUFFile,
    name: *const c_char,
    request: *const c_char,
    request_len: u64,
    out: *mut c_char,
    out_size: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { try_from(file)? };
        let llama = check_flags(flags)?;
        let name = if name.is_null() {
            None
        } else {
            // SAFETY: a NUL-terminated string (the header's contract).
            Some(utf8(
                unsafe { super::boundary::c_str(name, "name")? },
                "name",
            )?)
        };
        // SAFETY: `request` is valid for `request_len` bytes (the header's contract).
        let r = unsafe { text(request, request_len, "request")? };
        let prompt = if llama {
            chat::render_file_llama_cpp(f.model.first(), name, r)
        } else {
            chat::render_file(f.model.first(), name, r)
        }
        .map_err(|e| f.about(e))?;
        // SAFETY: `out` has room for `out_size` bytes (the header's contract).
        unsafe { write_text(&prompt, out, out_size) }
    })
}

/// The number of chat templates the file has (`tokenizer.chat_template` and each
/// `tokenizer.chat_template.<name>`); 0 if `file` is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_template_count(file: GGUFFile) -> u64 {
    guard(0, || {
        // SAFETY: NULL or live (the header's contract).
        let f = unsafe { try_from(file)? };
        Ok(chat::template_names(f.model.first()).len() as u64)
    })
}

/// The name of the file's template `index` (0 to `gguf_chat_template_count` - 1): "" for
/// `tokenizer.chat_template`, else the `<name>` of `tokenizer.chat_template.<name>`, as
/// `gguf_chat_render` takes it. NULL past the count. The string is owned by the handle and
/// valid until `gguf_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_template_name(file: GGUFFile, index: u64) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: NULL or live (the header's contract).
        let f = unsafe { try_from(file)? };
        let names = chat::template_names(f.model.first());
        let Some(name) = to_usize(index).and_then(|i| names.get(i)) else {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "template index {index} is past the {} templates",
                    names.len()
                ),
            ));
        };
        let key = match name {
            None => chat::TEMPLATE_KEY.to_string(),
            Some(n) => format!("{}.{n}", chat::TEMPLATE_KEY),
        };
        let kv = f.kv_index(key.as_bytes())?;
        // The key is NUL-terminated in the handle's arena: its part after
        // "tokenizer.chat_template." (or its NUL, for the default template) is the name.
        let skip = if name.is_some() {
            chat::TEMPLATE_KEY.len() + 1
        } else {
            chat::TEMPLATE_KEY.len()
        };
        // SAFETY: the key is `key.len() >= skip` bytes followed by a NUL, in the arena.
        Ok(unsafe { f.metadata[kv].key.add(skip) })
    })
}

/// Compiles a chat template (`tmpl_len` bytes of UTF-8) for many renders: NULL on failure
/// (GGUF_ERROR_CODE_TEMPLATE_SYNTAX with the line and column). Free it with
/// `gguf_chat_template_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_template_compile(
    tmpl: *const c_char,
    tmpl_len: u64,
) -> GGUFChatTemplate {
    guard(std::ptr::null_mut(), || {
        // SAFETY: valid for `tmpl_len` bytes (the header's contract).
        let t = unsafe { text(tmpl, tmpl_len, "tmpl")? };
        let compiled = ChatTemplate::new(utf8(t, "tmpl")?)?;
        Ok(to_boxed_mut_ptr(GGUFChatTemplateImpl(compiled)))
    })
}

/// Renders a compiled template over `request`, as `gguf_chat_render_template`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_template_render(
    tmpl: GGUFChatTemplate,
    request: *const c_char,
    request_len: u64,
    out: *mut c_char,
    out_size: u64,
    flags: u32,
) -> i64 {
    guard(-1, || {
        // SAFETY: NULL or a live template (the header's contract); shared use only.
        let t = unsafe { try_from(tmpl)? };
        let llama = check_flags(flags)?;
        // SAFETY: valid for `request_len` bytes (the header's contract).
        let r = unsafe { text(request, request_len, "request")? };
        let prompt = if llama {
            t.0.render_llama_cpp(r, "", "", false, false)?
        } else {
            t.0.render(r)?
        };
        // SAFETY: `out` has room for `out_size` bytes (the header's contract).
        unsafe { write_text(&prompt, out, out_size) }
    })
}

/// Frees a template from `gguf_chat_template_compile`; NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_chat_template_free(tmpl: GGUFChatTemplate) {
    guard((), || {
        // SAFETY: NULL or a template from `gguf_chat_template_compile`, freed once, when no
        // other call uses it (the header's contract).
        unsafe { free_box(tmpl) };
        Ok(())
    })
}
