//! Opening a model on an HTTP(S) server by its URL (`src/http.rs` reads it by range requests).

use super::boundary::{c_str, guard};
use super::handle::GGUFFile;
use crate::error::{Error, ErrorCode, Result};
use std::ffi::c_char;

/// How `gguf_open_url_with` (all fields) and `gguf_open_url_ex` (the fields before
/// `deadline_ms`) fetch a URL. Zero-initialise it (`GGUFUrlOptions o = {0};`) and set what you
/// need: a zero field takes its default. Fields are only ever appended: `gguf_open_url_with`
/// takes `sizeof(GGUFUrlOptions)` and reads that many bytes, so a program built against an older
/// header keeps working with a newer library, and one built against a newer header is told when
/// it sets a field the library does not know.
///
/// The two timeouts bound different things: `timeout_ms` each wait (a server silent that long),
/// `deadline_ms` the whole open, then each range request of a read (a server that keeps
/// answering, slowly).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFUrlOptions {
    /// NUL-terminated token sent as `Authorization: Bearer <token>` (gated models need one), or
    /// NULL. It goes to the URL's own host only (and to redirects to that host over HTTPS),
    /// never to another host a redirect leads to. Copied during the call.
    pub bearer_token: *const c_char,
    /// The longest wait, in milliseconds, for a connection or for any byte of a response
    /// while one is awaited or read; a server silent for longer fails the call that reads
    /// (`gguf_open_url*`, `gguf_read_tensor`, `gguf_read_tensors`). It bounds each wait, not a
    /// whole response: a server sending a byte now and then never trips it (see
    /// `deadline_ms`). 0: 30000.
    pub timeout_ms: u32,
    /// The most redirects one request follows. 0: 10.
    pub max_redirects: u32,
    /// The longest, in milliseconds, that `gguf_open_url_with` may take, all its requests
    /// together (the header's chunks, redirects, every shard of a split model); after the open,
    /// the longest each range request of a read may take (`gguf_read_tensor` makes one;
    /// `gguf_read_tensors` one per piece of at most about 8 MiB), its redirects and body
    /// included. A server that keeps a response going by sending a little at a time, which
    /// `timeout_ms` never catches, fails the call with GGUF_ERROR_CODE_IO once it passes.
    /// 0: no deadline. Read by `gguf_open_url_with` only (`gguf_open_url_ex` predates it).
    pub deadline_ms: u32,
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
/// URL's host only. Redirects are followed (at most 10; a loop fails at once, naming it), each
/// `Location` resolved against the URL it came from as RFC 3986 says (`/p?q`, `p`, `../p`,
/// `?q`, `//host/p`, absolute); one to a scheme other than http and https (`javascript:`,
/// `file:`, `ftp:`) fails the call. Every wait times out after 30 s, and the call has no
/// deadline: `gguf_open_url_with` sets these. HTTPS checks the server's certificate against the
/// system's trusted roots (`SSL_CERT_FILE` or `SSL_CERT_DIR` name others, as for OpenSSL).
/// Ranges are asked for as the file's own bytes (`Accept-Encoding: identity`): a range in any
/// other content coding (`Content-Encoding: gzip`) or transfer coding than chunked fails the
/// read. Every response after the first must carry the same file size and, if the first had
/// one, the same `ETag`: a file replaced on the server fails the read rather than mixing two
/// files' bytes.
///
/// `flags`: 0 or `GGUF_OPEN_FLAG_SINGLE_SHARD` (`GGUF_OPEN_FLAG_NO_MAP` is accepted: a URL is
/// never mapped); the flags about mapping fail with GGUF_ERROR_CODE_INVALID_ARGUMENT.
///
/// Returns NULL on failure, recording why (see `gguf_last_error`): GGUF_ERROR_CODE_IO naming the
/// URL and the byte range for a server that answers with an error status, ignores range
/// requests (answering 200 with the whole file: refused before its body is read), redirects in
/// a loop or to another scheme, cuts the connection, sends more bytes than asked or a range
/// other than asked, encodes the range, changes the file, stalls past the timeout or runs past
/// the deadline;
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
        deadline_ms: 0,
    };
    // SAFETY: the same contract as ours; `options` lives through the call, whole.
    unsafe { gguf_open_url_with(url, &options, std::mem::size_of::<GGUFUrlOptions>(), flags) }
}

/// The bytes of `GGUFUrlOptions` that `gguf_open_url_ex` reads: the fields before `deadline_ms`.
const EX_SIZE: usize = std::mem::offset_of!(GGUFUrlOptions, deadline_ms);

/// `gguf_open_url` with options: those of `GGUFUrlOptions` before `deadline_ms` (a bearer
/// token, the timeout, the redirect limit), the layout this function was made with; it never
/// reads `deadline_ms` (use `gguf_open_url_with`). `options` may be NULL (no token, the
/// defaults); it is read during the call only. Returns NULL on failure, recording why, as
/// `gguf_open_url` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_url_ex(
    url: *const c_char,
    options: *const GGUFUrlOptions,
    flags: u32,
) -> GGUFFile {
    // SAFETY: the same contract as ours; `options`, if not NULL, holds at least the fields
    // before `deadline_ms`, which is all that is read.
    unsafe { gguf_open_url_with(url, options, EX_SIZE, flags) }
}

/// `gguf_open_url` with every option of `GGUFUrlOptions`, the deadline among them: pass
/// `sizeof(GGUFUrlOptions)` as `options_size` (or `sizeof` of your own copy of it). The first
/// `options_size` bytes of `*options` are read, during the call only; fields past them take
/// their defaults, so a program built against an older header (a smaller struct) keeps working.
/// `options_size` may exceed what this library knows only if the bytes past it are zero (fields
/// of a newer header left unset); otherwise, or if it does not cover `timeout_ms` and
/// `max_redirects` whole, the call fails with GGUF_ERROR_CODE_INVALID_ARGUMENT. `options` may be
/// NULL (with any `options_size`): no token, the defaults. Returns NULL on failure, recording
/// why, as `gguf_open_url` does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_open_url_with(
    url: *const c_char,
    options: *const GGUFUrlOptions,
    options_size: usize,
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
            GGUFUrlOptions::default()
        } else if isize::try_from(options_size).is_err() {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("options_size {options_size} is larger than any object"),
            ));
        } else {
            // SAFETY: non-NULL `options` points to `options_size` readable bytes (the
            // header's contract).
            let bytes =
                unsafe { super::boundary::slice(options.cast::<u8>(), options_size, "options")? };
            url_options(bytes)?
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

impl Default for GGUFUrlOptions {
    /// No token, every other field 0 (its default).
    fn default() -> Self {
        GGUFUrlOptions {
            bearer_token: std::ptr::null(),
            timeout_ms: 0,
            max_redirects: 0,
            deadline_ms: 0,
        }
    }
}

/// The options in the caller's `bytes` (a `GGUFUrlOptions` of an older, the same or a newer
/// header): the fields they cover, the rest zero.
fn url_options(bytes: &[u8]) -> Result<GGUFUrlOptions> {
    let ours = std::mem::size_of::<GGUFUrlOptions>();
    if bytes.len() < EX_SIZE {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "options_size {} is smaller than the first GGUFUrlOptions ({EX_SIZE} bytes: \
                 bearer_token, timeout_ms, max_redirects)",
                bytes.len()
            ),
        ));
    }
    if bytes.len() > ours && bytes[ours..].iter().any(|&b| b != 0) {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "options_size {} with fields set past the {ours} bytes of GGUFUrlOptions this \
                 library knows (built for a newer header)",
                bytes.len()
            ),
        ));
    }
    let mut options = GGUFUrlOptions::default();
    let known = bytes.len().min(ours);
    // SAFETY: `options` is a plain C struct of `ours` bytes, every bit pattern of its integer
    // fields valid and its pointer field NULL or the caller's (checked where used); `known` of
    // them are overwritten from the caller's bytes, which do not overlap it. Bytes between
    // fields (padding) are copied too, and never read.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            std::ptr::addr_of_mut!(options).cast::<u8>(),
            known,
        );
    }
    Ok(options)
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
        deadline: match options.deadline_ms {
            0 => None,
            ms => Some(std::time::Duration::from_millis(ms.into())),
        },
    };
    let model = crate::model::Model::open_url(url, &http, single_shard)?;
    Ok(super::open::into_handle(model, url.to_string()))
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
