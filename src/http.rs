//! A model on an HTTP(S) server, read by range requests (`gguf_open_url`): a [`ReadAt`] whose
//! every read is one `GET` with a `Range` header. The handle over it parses only the header
//! bytes it reads (the same parser as for files); tensor data stays on the server until
//! `gguf_read_tensor` asks for it.
//!
//! Only servers that answer ranges are used: a `200` with the whole file is refused at once,
//! before its body is read, since reading a multi-gigabyte model to get its header is never what
//! the caller wants. Redirects are followed by hand (not by the client) so that a loop is named
//! as one, the bearer token never leaves its host, and each target is resolved as RFC 3986 says.
//! What a response means (its status, `Content-Range`, `Content-Length`, encodings) is decided
//! by a pure function over its headers (`http/response.rs`), fuzzed on its own.

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::read_at::ReadAt;
use crate::size::in_memory;
use crate::source::Source;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ureq::http::{header, StatusCode, Uri};

mod response;
use response::{Answer, Asked};

/// How a URL is fetched.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Sent as `Authorization: Bearer ...` to the URL's own host (and to redirects to the same
    /// host over HTTPS), never to another host a redirect leads to.
    pub bearer_token: Option<String>,
    /// The longest wait for a connection, or for any bytes while a response is awaited or
    /// read: a server that stalls that long fails the read. A server that keeps sending a
    /// little at a time is bounded by `deadline` alone.
    pub timeout: Duration,
    /// The most redirects one request follows.
    pub max_redirects: u32,
    /// If set, the longest the open may take, every request of it together (the header's
    /// chunks, redirects, every shard of a split model), and after the open the longest each
    /// range request may take (one read of [`ReadAt::read_at`], redirects and body included).
    pub deadline: Option<Duration>,
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
            deadline: None,
        }
    }
}

/// One open's deadline, shared by the sources it opens (the shards of a split model): it bounds
/// their requests until the open is over, then each request has `HttpOptions::deadline` alone.
#[derive(Debug)]
pub(crate) struct OpenCall {
    until: Option<Instant>,
    over: AtomicBool,
}

impl OpenCall {
    fn start(options: &HttpOptions) -> Arc<OpenCall> {
        Arc::new(OpenCall {
            // One too far to represent is none.
            until: options.deadline.and_then(|d| Instant::now().checked_add(d)),
            over: AtomicBool::new(false),
        })
    }

    fn end(&self) {
        self.over.store(true, Ordering::Release);
    }
}

/// Bytes fetched by the first request (they also tell the file's size), kept to answer the
/// first read: the parser's first chunk, which it reads first, so they are never fetched twice.
const PROBE_BYTES: u64 = crate::source::FIRST_CHUNK;

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
    /// The first response's entity tag: every later one must be the same (the same file).
    etag: Option<String>,
    /// The open this source belongs to, for its deadline.
    call: Arc<OpenCall>,
}

/// When a request must be over, and why (for the message).
#[derive(Clone, Copy, Debug)]
struct Deadline {
    until: Instant,
    of_open: bool,
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
    /// `options.deadline` bounds this open; then each later request.
    pub fn open(url: &str, options: &HttpOptions) -> Result<HttpSource> {
        let call = OpenCall::start(options);
        let source = HttpSource::open_in(url, options, call.clone());
        call.end();
        source
    }

    fn open_in(url: &str, options: &HttpOptions, call: Arc<OpenCall>) -> Result<HttpSource> {
        let uri = parse_url(url)?;
        let agent = agent(&uri, options).map_err(|e| e.in_file(url))?;
        let mut source = HttpSource {
            url: url.to_string(),
            agent,
            options: options.clone(),
            len: 0,
            head: Vec::new(),
            etag: None,
            call,
        };
        let (len, head, etag) = source.probe()?;
        source.len = len;
        source.head = head;
        source.etag = etag;
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
    fn probe(&self) -> Result<(u64, Vec<u8>, Option<String>)> {
        let deadline = self.deadline();
        let mut response = self.get(0, PROBE_BYTES, deadline)?;
        let asked = Asked {
            start: 0,
            count: PROBE_BYTES,
            len: None,
        };
        let range = match self.check(&response, asked)? {
            Answer::Empty => return Ok((0, Vec::new(), None)),
            Answer::Range(range) => range,
        };
        let etag = response::etag(&headers_of(&response)).map(str::to_string);
        let count = range.end - range.start;
        let mut head = vec![0; in_memory(count)];
        self.read_body(&mut response, 0, &mut head, deadline)?;
        Ok((range.total, head, etag))
    }

    /// The deadline of a request starting now: the open's while it lasts, then the request's
    /// own, if the options set one.
    fn deadline(&self) -> Option<Deadline> {
        if !self.call.over.load(Ordering::Acquire) {
            if let Some(until) = self.call.until {
                return Some(Deadline {
                    until,
                    of_open: true,
                });
            }
        }
        let until = Instant::now().checked_add(self.options.deadline?)?;
        Some(Deadline {
            until,
            of_open: false,
        })
    }

    /// "the deadline ... passed", for a message.
    fn deadline_text(&self, deadline: Option<Deadline>) -> String {
        let ms = self.options.deadline.unwrap_or_default().as_millis();
        match deadline {
            Some(Deadline { of_open: true, .. }) => {
                format!("timed out: the open's deadline of {ms} ms passed")
            }
            _ => format!("timed out: the request's deadline of {ms} ms passed"),
        }
    }

    /// Sends `GET` for bytes `start..start + count`, following redirects, by `deadline`;
    /// returns the final response, whatever its status.
    fn get(
        &self,
        start: u64,
        count: u64,
        deadline: Option<Deadline>,
    ) -> Result<ureq::http::Response<ureq::Body>> {
        let range = Asked {
            start,
            count,
            len: None,
        }
        .text();
        let mut url = self.url.clone();
        let mut uri = parse_url(&url)?;
        let origin = uri.clone();
        let mut visited: Vec<String> = Vec::new();
        loop {
            let mut request = self.agent.get(&url);
            if let Some(deadline) = deadline {
                // What is left of it covers this request, its body included.
                let left = deadline.until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    let via = via(&url, &self.url);
                    return Err(self.error(format_args!(
                        "request for {range}{via} not sent: {}",
                        self.deadline_text(Some(deadline))
                    )));
                }
                request = request.config().timeout_global(Some(left)).build();
            }
            let mut request = request.header(header::RANGE, range.replacen(' ', "=", 1));
            if let Some(token) = &self.options.bearer_token {
                if token_may_go(&origin, &uri) {
                    request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
            }
            let response = request.call().map_err(|e| {
                self.error(request_failure(&url, &self.url, &range, e, self, deadline))
            })?;
            if !response.status().is_redirection() || response.status() == StatusCode::NOT_MODIFIED
            {
                return Ok(response);
            }
            let status = response.status().as_u16();
            let location = match response.headers().get(header::LOCATION) {
                None => {
                    return Err(self.error(format_args!(
                        "HTTP {status} redirect from {} without a Location header ({range})",
                        shown(&url)
                    )))
                }
                Some(v) => v.to_str().map_err(|_| {
                    self.error(format_args!(
                        "HTTP {status} redirect from {} with a Location that is not ASCII \
                         text ({range})",
                        shown(&url)
                    ))
                })?,
            };
            let (next, next_uri) = join(&url, location).map_err(|why| {
                self.error(format_args!(
                    "HTTP {status} redirect from {} to {:?}: {why} ({range})",
                    shown(&url),
                    shown(location)
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
            uri = next_uri;
            url = next;
        }
    }

    /// What `response` answers to `asked` (see `response::check`), and for a range, that it is
    /// the same file as the first response's (its size and entity tag).
    fn check(&self, response: &ureq::http::Response<ureq::Body>, asked: Asked) -> Result<Answer> {
        let headers = headers_of(response);
        let answer = response::check(response.status().as_u16(), &headers, asked)
            .map_err(|why| self.error(why))?;
        if let (Some(first), Some(now)) = (&self.etag, response::etag(&headers)) {
            if first != now {
                return Err(self.error(format_args!(
                    "the file changed on the server: its ETag was {first} and is now {now} \
                     (reading {})",
                    asked.text()
                )));
            }
        }
        Ok(answer)
    }

    /// Reads the body of a checked `206` into `dst` (exactly its length), and checks that
    /// nothing follows.
    fn read_body(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        start: u64,
        dst: &mut [u8],
        deadline: Option<Deadline>,
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
                        io_text(&e, self, deadline)
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
                io_text(&e, self, deadline)
            ))),
        }
    }

    /// One range request for `dst.len()` bytes at `start`, all inside the file.
    fn fetch(&self, start: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let deadline = self.deadline();
        let mut response = self.get(start, dst.len() as u64, deadline)?;
        let asked = Asked {
            start,
            count: dst.len() as u64,
            len: Some(self.len),
        };
        match self.check(&response, asked)? {
            Answer::Range(_) => self.read_body(&mut response, start, dst, deadline),
            Answer::Empty => unreachable!("an empty file is an answer to the first request only"),
        }
    }
}

/// The files of a model at a URL, opened as one call: each file's header read by ranges and
/// parsed by the one parser, `options.deadline` bounding every request of the call together.
/// `Model::open_url` opens a split model's shards through it, the query kept for each.
pub struct UrlFiles<'a> {
    query: &'a str,
    options: &'a HttpOptions,
    call: Arc<OpenCall>,
}

impl<'a> UrlFiles<'a> {
    /// Starts the call for `url`; returns it and the URL without its query (the path that shard
    /// names are made from).
    pub fn start(url: &'a str, options: &'a HttpOptions) -> (UrlFiles<'a>, &'a str) {
        let (base, query) = match url.find('?') {
            Some(i) => url.split_at(i),
            None => (url, ""),
        };
        let call = OpenCall::start(options);
        (
            UrlFiles {
                query,
                options,
                call,
            },
            base,
        )
    }

    /// Opens the file at `name` (the URL without its query, or a sibling made from it).
    pub fn open(&self, name: &Path) -> Result<GgufFile<Source>> {
        // `name` is the base or a sibling made from it by ASCII suffixes: UTF-8.
        let name = name.to_str().expect("a URL made from a UTF-8 one is UTF-8");
        let source: Arc<dyn ReadAt> = Arc::new(HttpSource::open_in(
            &format!("{name}{}", self.query),
            self.options,
            self.call.clone(),
        )?);
        crate::source::parse_source(source)
    }
}

impl Drop for UrlFiles<'_> {
    /// The open is over: later reads are bounded each on its own.
    fn drop(&mut self) {
        self.call.end();
    }
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

/// The response's header fields, as `response::check` takes them.
fn headers_of(response: &ureq::http::Response<ureq::Body>) -> Vec<(&str, &[u8])> {
    response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect()
}

fn parse_url(url: &str) -> Result<Uri> {
    check_url(url).map_err(|why| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{url:?} is not an http:// or https:// URL: {why}"),
        )
    })
}

/// `url` as the client takes it, if it is an absolute http(s) URL with a host; or why not.
fn check_url(url: &str) -> std::result::Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a valid URI ({e})"))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        Some(other) => return Err(format!("the scheme is {other:?}")),
        None => return Err("no scheme".to_string()),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("no host".to_string());
    }
    Ok(uri)
}

/// The agent for one source: no automatic redirects (see `HttpSource::get`), statuses as
/// responses, the caller's timeout on connecting and on every read and write, and for HTTPS the
/// system's trusted roots (SSL_CERT_FILE and SSL_CERT_DIR first, as OpenSSL does). Name lookups
/// are left to the system resolver's own timeouts (see [`BlockingResolver`]).
fn agent(uri: &Uri, options: &HttpOptions) -> Result<ureq::Agent> {
    let timeout = Some(options.timeout);
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(timeout)
        .timeout_per_read(timeout)
        .timeout_per_write(timeout)
        // Ranges are the file's own bytes: no compressed answer is asked for, whatever features
        // of the client another crate turns on (its decompression would be applied to a range).
        .accept_encoding("identity")
        .user_agent(concat!("libgguf/", env!("CARGO_PKG_VERSION")));
    if uri.scheme_str() == Some("https") {
        config = config.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(root_certs()?)
                .build(),
        );
    }
    Ok(ureq::Agent::with_parts(
        config.build(),
        ureq::unversioned::transport::DefaultConnector::default(),
        BlockingResolver::default(),
    ))
}

/// The client's resolver, told to wait as long as the system's own resolver does: given a
/// timeout (a deadline sets one), the client would look the name up on a thread of its own, one
/// per connection, and the library starts no thread the caller did not ask for. A lookup is
/// bounded by the system's resolver settings; the deadline still bounds everything after it.
#[derive(Debug, Default)]
struct BlockingResolver(ureq::unversioned::resolver::DefaultResolver);

impl ureq::unversioned::resolver::Resolver for BlockingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        _timeout: ureq::unversioned::transport::NextTimeout,
    ) -> std::result::Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        // No timeout: looked up on this thread.
        self.0.resolve(
            uri,
            config,
            ureq::unversioned::transport::NextTimeout::default(),
        )
    }
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

/// `location` (a redirect's target) resolved against the URL `base` (RFC 3986), checked to be
/// an http(s) URL the client takes.
fn join(base: &str, location: &str) -> std::result::Result<(String, Uri), String> {
    let next = response::resolve(base, location)?;
    let uri = check_url(&next)?;
    Ok((next, uri))
}

/// A URL for messages, without its query (a redirect's query often holds a signature).
fn shown(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?..."),
        None => url.to_string(),
    }
}

/// " (redirected to URL)" when `url` is not the one `given`.
fn via(url: &str, given: &str) -> String {
    if url == given {
        String::new()
    } else {
        format!(" (redirected to {})", shown(url))
    }
}

/// Why a request failed, in words.
fn request_failure(
    url: &str,
    given: &str,
    range: &str,
    e: ureq::Error,
    source: &HttpSource,
    deadline: Option<Deadline>,
) -> String {
    let why = match e {
        ureq::Error::Timeout(what) => timeout_text(what, source, deadline),
        ureq::Error::Io(e) => io_text(&e, source, deadline),
        other => other.to_string(),
    };
    format!("request for {range}{} failed: {why}", via(url, given))
}

fn timeout_text(what: ureq::Timeout, source: &HttpSource, deadline: Option<Deadline>) -> String {
    let t = source.options.timeout;
    match what {
        ureq::Timeout::Global => source.deadline_text(deadline),
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
fn io_text(e: &std::io::Error, source: &HttpSource, deadline: Option<Deadline>) -> String {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        if let ureq::Error::Timeout(what) = inner {
            return timeout_text(*what, source, deadline);
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
    fn joins_locations() {
        let base = "https://h.example:8443/a/b/model.gguf?x=1";
        assert_eq!(join(base, "/c/d").unwrap().0, "https://h.example:8443/c/d");
        assert_eq!(
            join(base, "e.gguf").unwrap().0,
            "https://h.example:8443/a/b/e.gguf"
        );
        assert_eq!(
            join(base, "//cdn.example/f").unwrap().0,
            "https://cdn.example/f"
        );
        assert_eq!(
            join(base, "http://o.example/g").unwrap().0,
            "http://o.example/g"
        );
        assert!(join(base, "ftp://o.example/g").is_err());
        assert!(join(base, "javascript:alert(1)").is_err());
        assert!(join(base, "http:///nohost").is_err());
        assert!(join(base, "/a b").is_err());
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
