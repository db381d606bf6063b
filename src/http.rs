//! A model on an HTTP(S) server, read by range requests (`gguf_open_url`): a [`ReadAt`] whose
//! every read is one `GET` with a `Range` header. The handle over it parses only the header
//! bytes it reads (the same parser as for files); tensor data stays on the server until
//! `gguf_read_tensor` asks for it.
//!
//! Only servers that answer ranges are used: a `200` with the whole file is refused at once,
//! before its body is read, since reading a multi-gigabyte model to get its header is never what
//! the caller wants. Redirects are followed by hand (not by the client) so that a loop is named
//! as one and the bearer token never leaves its host.

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::model::Model;
use crate::read_at::ReadAt;
use crate::size::in_memory;
use crate::source::Source;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use ureq::http::{header, StatusCode, Uri};

/// How a URL is fetched.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Sent as `Authorization: Bearer ...` to the URL's own host (and to redirects to the same
    /// host over HTTPS), never to another host a redirect leads to.
    pub bearer_token: Option<String>,
    /// The longest wait for a connection, or for any bytes while a response is awaited or
    /// read: a server that stalls that long fails the read.
    pub timeout: Duration,
    /// The most redirects one request follows.
    pub max_redirects: u32,
}

/// 30 s without a byte, as the `timeout_ms` of 0 in `GGUFUrlOptions` means.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed per request by default (a Hugging Face download takes one or two).
pub const DEFAULT_MAX_REDIRECTS: u32 = 10;

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bearer_token: None,
            timeout: DEFAULT_TIMEOUT,
            max_redirects: DEFAULT_MAX_REDIRECTS,
        }
    }
}

/// Bytes fetched by the first request (they also tell the file's size), kept to answer the
/// first read: the parser's first chunk, which it reads first, so they are never fetched twice.
const PROBE_BYTES: u64 = crate::load::FIRST_CHUNK;

/// A file on an HTTP(S) server that answers range requests.
pub struct HttpSource {
    /// The URL as given (shown in messages, the start of every request).
    url: String,
    agent: ureq::Agent,
    options: HttpOptions,
    /// The file's size, from the first response's `Content-Range`.
    len: u64,
    /// The file's first bytes, from the first response.
    head: Vec<u8>,
}

impl std::fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.url)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl HttpSource {
    /// Connects to `url` (`http://` or `https://`) and asks for its first bytes, which tells
    /// its size; fails if the server does not answer ranges, or with the server's status.
    pub fn open(url: &str, options: &HttpOptions) -> Result<HttpSource> {
        let uri = parse_url(url)?;
        let agent = agent(&uri, options).map_err(|e| e.in_file(url))?;
        let mut source = HttpSource {
            url: url.to_string(),
            agent,
            options: options.clone(),
            len: 0,
            head: Vec::new(),
        };
        let (len, head) = source.probe()?;
        source.len = len;
        source.head = head;
        Ok(source)
    }

    /// The source, shared, as handles hold it.
    pub fn open_shared(url: &str, options: &HttpOptions) -> Result<Arc<dyn ReadAt>> {
        Ok(Arc::new(HttpSource::open(url, options)?))
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::msg(ErrorCode::Io, message.to_string()).in_file(self.url.clone())
    }

    /// The first request: bytes 0 to `PROBE_BYTES - 1`, or the whole file if smaller.
    fn probe(&self) -> Result<(u64, Vec<u8>)> {
        let mut response = self.get(0, PROBE_BYTES)?;
        let status = response.status();
        let length = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
        if status == StatusCode::OK && length == Some(0) {
            // The whole file, empty: nginx answers a range of an empty file so.
            return Ok((0, Vec::new()));
        }
        if status == StatusCode::RANGE_NOT_SATISFIABLE {
            // Even byte 0 is out of range: an empty file (`Content-Range: bytes */0`).
            return match content_range_total(&response) {
                Some(0) => Ok((0, Vec::new())),
                _ => Err(self.error(format_args!(
                    "the server refused the range bytes=0-{} (HTTP 416) without saying the \
                     file's size",
                    PROBE_BYTES - 1
                ))),
            };
        }
        let range = self.check_partial(&response, 0, PROBE_BYTES)?;
        let len = range.total;
        let count = range.end - range.start;
        let mut head = vec![0; in_memory(count)];
        self.read_body(&mut response, 0, &mut head)?;
        Ok((len, head))
    }

    /// Sends `GET` for bytes `start..start + count`, following redirects; returns the final
    /// response, whatever its status.
    fn get(&self, start: u64, count: u64) -> Result<ureq::http::Response<ureq::Body>> {
        let range = format!("bytes {start}-{}", start + count - 1);
        let mut url = self.url.clone();
        let mut uri = parse_url(&url)?;
        let origin = uri.clone();
        let mut visited: Vec<String> = Vec::new();
        loop {
            let mut request = self
                .agent
                .get(&url)
                .header(header::RANGE, range.replace(' ', "="));
            if let Some(token) = &self.options.bearer_token {
                if token_may_go(&origin, &uri) {
                    request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
            }
            let response = request
                .call()
                .map_err(|e| self.error(request_failure(&url, &self.url, &range, e, self)))?;
            if !response.status().is_redirection() || response.status() == StatusCode::NOT_MODIFIED
            {
                return Ok(response);
            }
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    self.error(format_args!(
                        "HTTP {} redirect from {} without a Location header ({range})",
                        response.status().as_u16(),
                        shown(&url)
                    ))
                })?;
            let next = join(&uri, location).map_err(|why| {
                self.error(format_args!(
                    "HTTP {} redirect from {} to {location:?}: {why}",
                    response.status().as_u16(),
                    shown(&url)
                ))
            })?;
            visited.push(url);
            if visited.contains(&next) {
                let chain: Vec<String> = visited.iter().map(|u| shown(u)).collect();
                return Err(self.error(format_args!(
                    "redirect loop: {} -> {} ({range})",
                    chain.join(" -> "),
                    shown(&next)
                )));
            }
            if visited.len() > self.options.max_redirects as usize {
                return Err(self.error(format_args!(
                    "more than {} redirects (the last to {}) ({range})",
                    self.options.max_redirects,
                    shown(&next)
                )));
            }
            uri = parse_url(&next).map_err(|e| e.in_file(self.url.clone()))?;
            url = next;
        }
    }

    /// Checks that `response` is the `206` for bytes `start..start + count` (or the part of them
    /// the file holds), and returns the range it carries.
    fn check_partial(
        &self,
        response: &ureq::http::Response<ureq::Body>,
        start: u64,
        count: u64,
    ) -> Result<ContentRange> {
        let asked = format!("bytes {start}-{}", start + count - 1);
        let status = response.status();
        if status == StatusCode::OK {
            return Err(self.error(format_args!(
                "the server ignored the range request for {asked} and answered HTTP 200 with \
                 the whole file{}: models are read by ranges only (the body was not \
                 downloaded)",
                match response.body().content_length() {
                    Some(n) => format!(" ({n} bytes)"),
                    None => String::new(),
                }
            )));
        }
        if status != StatusCode::PARTIAL_CONTENT {
            return Err(self.error(format_args!(
                "HTTP {}{} for {asked}",
                status.as_u16(),
                status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default()
            )));
        }
        let text = response
            .headers()
            .get(header::CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                self.error(format_args!(
                    "HTTP 206 for {asked} without a Content-Range header"
                ))
            })?;
        let range = ContentRange::parse(text).ok_or_else(|| {
            self.error(format_args!(
                "HTTP 206 for {asked} with a Content-Range that is not \
                 'bytes FIRST-LAST/SIZE': {text:?}"
            ))
        })?;
        // The server must send the bytes asked for, cut only at the end of the file, and the
        // same size every time (a file replaced on the server mid-read is a different file).
        let want_end = (start + count).min(range.total);
        if range.start != start || range.end != want_end {
            return Err(self.error(format_args!(
                "asked for {asked}, the server sent {text:?}{}",
                if range.end > want_end {
                    " (more bytes than asked)"
                } else {
                    ""
                }
            )));
        }
        if self.len != 0 && range.total != self.len {
            return Err(self.error(format_args!(
                "the file's size changed on the server from {} to {} bytes (reading {asked})",
                self.len, range.total
            )));
        }
        if let Some(length) = response.body().content_length() {
            if length != range.end - range.start {
                return Err(self.error(format_args!(
                    "asked for {asked}, the server announced {length} bytes (Content-Length) \
                     for {} bytes of Content-Range {text:?}",
                    range.end - range.start
                )));
            }
        }
        Ok(range)
    }

    /// Reads the body of a checked `206` into `dst` (exactly its length), and checks that
    /// nothing follows.
    fn read_body(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        start: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let end = start + dst.len() as u64;
        let mut reader = response.body_mut().as_reader();
        let mut got = 0;
        while got < dst.len() {
            match reader.read(&mut dst[got..]) {
                Ok(0) => {
                    return Err(self.error(format_args!(
                        "the connection ended after {got} of the {} bytes of bytes {start}-{}",
                        dst.len(),
                        end - 1
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(self.error(format_args!(
                        "reading bytes {start}-{} failed after {got} of {} bytes: {}",
                        end - 1,
                        dst.len(),
                        io_text(&e, self)
                    )))
                }
            }
        }
        // A body without a length (chunked) could carry more than the range: refuse it.
        let mut extra = [0u8; 1];
        match reader.read(&mut extra) {
            Ok(0) => Ok(()),
            Ok(_) => Err(self.error(format_args!(
                "the server sent more bytes than the {} asked for (bytes {start}-{})",
                dst.len(),
                end - 1
            ))),
            Err(e) => Err(self.error(format_args!(
                "after bytes {start}-{}: {}",
                end - 1,
                io_text(&e, self)
            ))),
        }
    }

    /// One range request for `dst.len()` bytes at `start`, all inside the file.
    fn fetch(&self, start: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let mut response = self.get(start, dst.len() as u64)?;
        self.check_partial(&response, start, dst.len() as u64)?;
        self.read_body(&mut response, start, dst)
    }
}

/// Opens the model at `url`: its header read by ranges and parsed by the one parser; if it is a
/// shard of a split model (and `single_shard` is not set), every shard by its URL, named by the
/// rule for files (`Model::with_siblings`) applied to the URL's path, the query kept for each.
pub fn open_model(url: &str, options: &HttpOptions, single_shard: bool) -> Result<Model<Source>> {
    let (base, query) = match url.find('?') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let open = |name: &Path| -> Result<GgufFile<Source>> {
        // `name` is `base` or a sibling made from it by ASCII suffixes: UTF-8.
        let name = name.to_str().expect("a URL made from a UTF-8 one is UTF-8");
        let source = HttpSource::open_shared(&format!("{name}{query}"), options)?;
        crate::load::parse_source(source)
    };
    let path = Path::new(base);
    Model::with_siblings(open(path)?, path, single_shard, open)
}

impl ReadAt for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let n = in_memory((self.len - offset).min(dst.len() as u64));
        let dst = &mut dst[..n];
        // Bytes the first response already brought are not fetched again.
        let cached = (self.head.len() as u64).saturating_sub(offset);
        let cached = in_memory(cached.min(n as u64));
        if cached > 0 {
            let from = in_memory(offset);
            dst[..cached].copy_from_slice(&self.head[from..from + cached]);
        }
        self.fetch(offset + cached as u64, &mut dst[cached..])?;
        Ok(n)
    }

    fn describe(&self) -> String {
        self.url.clone()
    }

    fn parallel(&self) -> bool {
        // Each read is its own request; the agent pools connections for several threads.
        true
    }
}

/// `Content-Range: bytes FIRST-LAST/SIZE`, as a half-open range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ContentRange {
    start: u64,
    end: u64,
    total: u64,
}

impl ContentRange {
    fn parse(text: &str) -> Option<ContentRange> {
        let rest = text.trim().strip_prefix("bytes")?.trim_start();
        let (range, total) = rest.split_once('/')?;
        let (first, last) = range.split_once('-')?;
        let number = |s: &str| -> Option<u64> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        };
        let (start, last, total) = (number(first)?, number(last)?, number(total)?);
        (start <= last && last < total).then_some(ContentRange {
            start,
            end: last + 1,
            total,
        })
    }
}

/// The size in a `416`'s `Content-Range: bytes */SIZE`.
fn content_range_total(response: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    let text = response
        .headers()
        .get(header::CONTENT_RANGE)?
        .to_str()
        .ok()?;
    let size = text
        .trim()
        .strip_prefix("bytes")?
        .trim()
        .strip_prefix("*/")?;
    size.trim().parse().ok()
}

fn parse_url(url: &str) -> Result<Uri> {
    let invalid = |why: &str| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{url:?} is not an http:// or https:// URL: {why}"),
        )
    };
    let uri: Uri = url.parse().map_err(|e| invalid(&format!("{e}")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        Some(other) => return Err(invalid(&format!("the scheme is {other:?}"))),
        None => return Err(invalid("no scheme")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    Ok(uri)
}

/// The agent for one source: no automatic redirects (see `HttpSource::get`), statuses as
/// responses, the caller's timeout on connecting and on every read and write, and for HTTPS the
/// system's trusted roots (SSL_CERT_FILE and SSL_CERT_DIR first, as OpenSSL does). Name lookups
/// are left to the system resolver's own timeouts: with a timeout of its own, the client would
/// start a thread per request to wait on it.
fn agent(uri: &Uri, options: &HttpOptions) -> Result<ureq::Agent> {
    let timeout = Some(options.timeout);
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(timeout)
        .timeout_per_read(timeout)
        .timeout_per_write(timeout)
        .user_agent(concat!("libgguf/", env!("CARGO_PKG_VERSION")));
    if uri.scheme_str() == Some("https") {
        config = config.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(root_certs()?)
                .build(),
        );
    }
    Ok(config.build().new_agent())
}

/// The system's trusted roots; Mozilla's (compiled in) only where the system has none.
fn root_certs() -> Result<ureq::tls::RootCerts> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        if let Ok(file) = std::env::var("SSL_CERT_FILE") {
            // The caller named a file: falling back to other roots would hide their mistake.
            let why = found
                .errors
                .first()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "it holds no certificate".to_string());
            return Err(Error::msg(
                ErrorCode::Io,
                format!("SSL_CERT_FILE={file}: no trusted root certificate loaded: {why}"),
            ));
        }
        return Ok(ureq::tls::RootCerts::WebPki);
    }
    let certs: Vec<ureq::tls::Certificate<'static>> = found
        .certs
        .iter()
        .map(|der| ureq::tls::Certificate::from_der(der.as_ref()).to_owned())
        .collect();
    Ok(ureq::tls::RootCerts::new_with_certs(&certs))
}

/// Whether the bearer token given for `origin` may be sent to `uri`: the same host and port,
/// and never from HTTPS down to HTTP.
fn token_may_go(origin: &Uri, uri: &Uri) -> bool {
    origin.host() == uri.host()
        && origin.port_u16() == uri.port_u16()
        && (origin.scheme_str() == uri.scheme_str() || uri.scheme_str() == Some("https"))
}

/// `location` (a redirect's target) resolved against `base`.
fn join(base: &Uri, location: &str) -> std::result::Result<String, String> {
    let location = location.trim();
    if location.contains("://") {
        return parse_url(location)
            .map(|_| location.to_string())
            .map_err(|e| e.to_string());
    }
    let scheme = base.scheme_str().unwrap_or("http");
    if let Some(rest) = location.strip_prefix("//") {
        return Ok(format!("{scheme}://{rest}"));
    }
    let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
    if location.starts_with('/') {
        return Ok(format!("{scheme}://{authority}{location}"));
    }
    if location.is_empty() {
        return Err("an empty Location".to_string());
    }
    // Relative to the base's directory.
    let path = base.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Ok(format!("{scheme}://{authority}{dir}{location}"))
}

/// A URL for messages, without its query (a redirect's query often holds a signature).
fn shown(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?..."),
        None => url.to_string(),
    }
}

/// Why a request failed, in words.
fn request_failure(
    url: &str,
    given: &str,
    range: &str,
    e: ureq::Error,
    source: &HttpSource,
) -> String {
    let via = if url == given {
        String::new()
    } else {
        format!(" (redirected to {})", shown(url))
    };
    let why = match e {
        ureq::Error::Timeout(what) => timeout_text(what, source),
        ureq::Error::Io(e) => io_text(&e, source),
        other => other.to_string(),
    };
    format!("request for {range}{via} failed: {why}")
}

fn timeout_text(what: ureq::Timeout, source: &HttpSource) -> String {
    let t = source.options.timeout;
    match what {
        ureq::Timeout::Connect | ureq::Timeout::Resolve => {
            format!("timed out connecting ({} ms)", t.as_millis())
        }
        _ => format!(
            "timed out: no data from the server for {} ms",
            t.as_millis()
        ),
    }
}

/// An I/O error from the body reader, which wraps the client's own errors (a timeout among them).
fn io_text(e: &std::io::Error, source: &HttpSource) -> String {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        if let ureq::Error::Timeout(what) = inner {
            return timeout_text(*what, source);
        }
        return inner.to_string();
    }
    if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock {
        return format!(
            "timed out: no data from the server for {} ms",
            source.options.timeout.as_millis()
        );
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range() {
        assert_eq!(
            ContentRange::parse("bytes 0-99/1000"),
            Some(ContentRange {
                start: 0,
                end: 100,
                total: 1000
            })
        );
        assert_eq!(ContentRange::parse("bytes 5-4/1000"), None);
        assert_eq!(ContentRange::parse("bytes 0-1000/1000"), None);
        assert_eq!(ContentRange::parse("bytes 0-99/*"), None);
        assert_eq!(ContentRange::parse("bytes +0-99/1000"), None);
        assert_eq!(ContentRange::parse("items 0-99/1000"), None);
    }

    #[test]
    fn joins_locations() {
        let base: Uri = "https://h.example:8443/a/b/model.gguf?x=1".parse().unwrap();
        assert_eq!(join(&base, "/c/d").unwrap(), "https://h.example:8443/c/d");
        assert_eq!(
            join(&base, "e.gguf").unwrap(),
            "https://h.example:8443/a/b/e.gguf"
        );
        assert_eq!(
            join(&base, "//cdn.example/f").unwrap(),
            "https://cdn.example/f"
        );
        assert_eq!(
            join(&base, "http://o.example/g").unwrap(),
            "http://o.example/g"
        );
        assert!(join(&base, "ftp://o.example/g").is_err());
    }

    #[test]
    fn token_stays_on_its_host() {
        let origin: Uri = "https://h.example/m".parse().unwrap();
        assert!(token_may_go(
            &origin,
            &"https://h.example/n".parse().unwrap()
        ));
        assert!(!token_may_go(
            &origin,
            &"https://cdn.example/n".parse().unwrap()
        ));
        assert!(!token_may_go(
            &origin,
            &"http://h.example/n".parse().unwrap()
        ));
        assert!(!token_may_go(
            &origin,
            &"https://h.example:444/n".parse().unwrap()
        ));
    }

    #[test]
    fn refuses_other_schemes() {
        assert_eq!(
            parse_url("ftp://h/m").unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            parse_url("/tmp/m").unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        assert!(parse_url("http://127.0.0.1:8/m.gguf").is_ok());
    }
}
