//! Opening a model on an HTTP(S) server by its URL (`src/http.rs` reads it by range requests).

use super::boundary::{c_str, guard};
use super::handle::GGUFFile;
use crate::error::{Error, ErrorCode, Result};
use std::ffi::c_char;

/// How `gguf_open_url_ex` fetches a URL. Zero-initialise it (`GGUFUrlOptions o = {0};`) and set
/// what you need: a zero field takes its default.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFUrlOptions {
    /// NUL-terminated token sent as `Authorization: Bearer <token>` (gated models need one), or
    /// NULL. It goes to the URL's own host only (and to redirects to that host over HTTPS),
    /// never to another host a redirect leads to. Copied during the call.
    pub bearer_token: *const c_char,
    /// The longest wait, in milliseconds, for a connection or for any byte of a response
    /// while one is awaited or read; a server silent for longer fails the call that reads
    /// (`gguf_open_url*`, `gguf_read_tensor`, `gguf_read_tensors`). 0: 30000.
    pub timeout_ms: u32,
    /// The most redirects one request follows. 0: 10.
    pub max_redirects: u32,
}

/// Opens the model at `url` (`http://` or `https://`, NUL-terminated) without downloading it:
/// reads its header by range requests in growing chunks (at most about the header's size plus
/// one chunk is transferred) and checks every rule of the format as `gguf_open` does. Tensor
/// data stays on the server: `gguf_tensor_data` returns NULL for this handle, and
/// `gguf_read_tensor` / `gguf_read_tensors` fetch it by ranges. A URL of one shard of a split
/// model (`...-00002-of-00005.gguf`, with or without a query) opens every shard by its URL,
/// named by the same rule as files; `GGUF_OPEN_FLAG_SINGLE_SHARD` opens that one alone.
///
/// `bearer_token` (NUL-terminated, or NULL) is sent as `Authorization: Bearer <token>` to the
/// URL's host only. Redirects are followed (at most 10; a loop fails at once, naming it), with a
/// 30 s timeout on every wait: `gguf_open_url_ex` sets both. HTTPS checks the server's
/// certificate against the system's trusted roots (`SSL_CERT_FILE` or `SSL_CERT_DIR` name
/// others, as for OpenSSL).
///
/// `flags`: 0 or `GGUF_OPEN_FLAG_SINGLE_SHARD` (`GGUF_OPEN_FLAG_NO_MAP` is accepted: a URL is
/// never mapped); the flags about mapping fail with GGUF_ERROR_CODE_INVALID_ARGUMENT.
///
/// Returns NULL on failure, recording why (see `gguf_last_error`): GGUF_ERROR_CODE_IO naming the
/// URL and the byte range for a server that answers with an error status, ignores range
/// requests (answering 200 with the whole file: refused before its body is read), redirects in
/// a loop, cuts the connection, sends more bytes than asked, or stalls past the timeout;
/// GGUF_ERROR_CODE_INVALID_ARGUMENT for a URL that is not http(s); GGUF_ERROR_CODE_UNSUPPORTED
/// in a library built without network support (cargo feature `net`); otherwise the format's
/// codes, as `gguf_open`. Close the handle with `gguf_close`. The handle's reads may be made from
/// any thread, several at once (each is its own request).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_url(
    url: *const c_char,
    bearer_token: *const c_char,
    flags: u32,
) -> GGUFFile {
    let options = GGUFUrlOptions {
        bearer_token,
        timeout_ms: 0,
        max_redirects: 0,
    };
    // SAFETY: the same contract as ours; `options` lives through the call.
    unsafe { gguf_open_url_ex(url, &options, flags) }
}

/// `gguf_open_url` with options (see `GGUFUrlOptions`): a bearer token, the timeout, the redirect
/// limit. `options` may be NULL (no token, the defaults); it is read during the call only.
/// Returns NULL on failure, recording why, as `gguf_open_url` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_url_ex(
    url: *const c_char,
    options: *const GGUFUrlOptions,
    flags: u32,
) -> GGUFFile {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `url` is NULL or a NUL-terminated string (the header's contract).
        let url = unsafe { c_str(url, "url")? };
        let url = std::str::from_utf8(url).map_err(|_| {
            Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "the URL {} is not UTF-8 (percent-encode its other bytes)",
                    crate::text::quote(url)
                ),
            )
        })?;
        let options = if options.is_null() {
            GGUFUrlOptions {
                bearer_token: std::ptr::null(),
                timeout_ms: 0,
                max_redirects: 0,
            }
        } else {
            // SAFETY: non-NULL `options` points to a GGUFUrlOptions (the header's contract).
            unsafe { *options }
        };
        let token = if options.bearer_token.is_null() {
            None
        } else {
            // SAFETY: non-NULL, NUL-terminated (the header's contract).
            let bytes = unsafe { c_str(options.bearer_token, "bearer_token")? };
            Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
                Error::msg(ErrorCode::InvalidArgument, "the bearer token is not UTF-8")
            })?)
        };
        let single_shard = url_flags(flags)?;
        open(url, token, options, single_shard)
    })
}

/// The one flag that applies to a URL: whether to open one shard alone.
fn url_flags(flags: u32) -> Result<bool> {
    use super::open::OpenFlag;
    let options = super::open::open_options(flags)?;
    for (set, flag) in [
        (options.populate, "GGUF_OPEN_FLAG_POPULATE"),
        (options.lock, "GGUF_OPEN_FLAG_LOCK"),
        (options.read, "GGUF_OPEN_FLAG_READ"),
    ] {
        if set {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("{flag} does not apply to a URL, which is never mapped"),
            ));
        }
    }
    Ok(flags & OpenFlag::SingleShard as u32 != 0)
}

#[cfg(all(feature = "net", not(target_family = "wasm")))]
fn open(
    url: &str,
    bearer_token: Option<String>,
    options: GGUFUrlOptions,
    single_shard: bool,
) -> Result<GGUFFile> {
    use crate::http::{HttpOptions, DEFAULT_MAX_REDIRECTS, DEFAULT_TIMEOUT};
    let http = HttpOptions {
        bearer_token,
        timeout: match options.timeout_ms {
            0 => DEFAULT_TIMEOUT,
            ms => std::time::Duration::from_millis(ms.into()),
        },
        max_redirects: match options.max_redirects {
            0 => DEFAULT_MAX_REDIRECTS,
            n => n,
        },
    };
    let model = crate::http::open_model(url, &http, single_shard)?;
    Ok(Box::into_raw(Box::new(super::handle::GGUFFileImpl::new(
        model,
        url.to_string(),
    ))))
}

#[cfg(not(all(feature = "net", not(target_family = "wasm"))))]
fn open(
    url: &str,
    _bearer_token: Option<String>,
    _options: GGUFUrlOptions,
    _single_shard: bool,
) -> Result<GGUFFile> {
    Err(Error::msg(
        ErrorCode::Unsupported,
        format!(
            "cannot open {url}: libgguf was built without network support (cargo feature `net`)"
        ),
    ))
}
