//! What a range response means, decided from its status and headers alone: the part of the
//! URL source (`src/http.rs`) that interprets what a server says, as a pure function over
//! bytes, so that it is tested and fuzzed without a network (`fuzz/fuzz_targets/http_response.rs`
//! includes this file by its path). The status line and the header fields themselves are parsed
//! by the HTTP client; a request's redirects are resolved by [`resolve`].
//!
//! Only `std`: nothing of the crate, so the fuzz target builds it without the `net` feature.

/// The request a response answers: bytes `start..start + count` (`count` at least 1), of a file
/// of `len` bytes once the first response said so (`None` for that first response).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub start: u64,
    pub count: u64,
    pub len: Option<u64>,
}

impl Asked {
    /// `bytes FIRST-LAST`, as messages name the range.
    pub fn text(&self) -> String {
        // `count` is at least 1 and the range lies inside a file of at most 2^64 - 1 bytes;
        // saturating keeps a caller's mistake from wrapping.
        let last = self.start.saturating_add(self.count.max(1) - 1);
        format!("bytes {}-{last}", self.start)
    }
}

/// `Content-Range: bytes FIRST-LAST/SIZE`, as a half-open range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentRange {
    pub start: u64,
    pub end: u64,
    pub total: u64,
}

impl ContentRange {
    /// `bytes FIRST-LAST/SIZE` with FIRST <= LAST < SIZE, in decimal digits only; `None` for
    /// anything else (`*` sizes, other units, signs, numbers past 2^64 - 1).
    pub fn parse(text: &str) -> Option<ContentRange> {
        let rest = text.trim().strip_prefix("bytes")?.trim_start();
        let (range, total) = rest.split_once('/')?;
        let (first, last) = range.split_once('-')?;
        let (start, last, total) = (number(first)?, number(last)?, number(total)?);
        // Lazily: `last + 1` exists only once `last < total`.
        (start <= last && last < total).then(|| ContentRange {
            start,
            end: last + 1,
            total,
        })
    }
}

/// A decimal number of digits alone (surrounding blanks allowed), at most 2^64 - 1.
fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// What a response that may be read says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The file is empty (a `200` with no body, or a `416` saying the size is 0): only for the
    /// first request.
    Empty,
    /// A `206` carrying exactly `range` (the bytes asked for, cut only at the file's end), as
    /// many bytes as its body must hold, in the file's own encoding.
    Range(ContentRange),
}

/// The response's header fields: name (any case) and value bytes, in the order received.
pub type Headers<'a> = [(&'a str, &'a [u8])];

/// The values of the header `name`, as text; an error for a value that is not visible ASCII.
fn values<'a>(headers: &Headers<'a>, name: &str) -> Result<Vec<&'a str>, String> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| {
            std::str::from_utf8(v)
                .ok()
                .filter(|s| s.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
                .ok_or_else(|| format!("a {name} header that is not ASCII text: {:?}", lossy(v)))
        })
        .collect()
}

/// The one value of the header `name`, if any: several different values are refused (a server,
/// or a proxy between, that cannot say which it means).
fn value<'a>(headers: &Headers<'a>, name: &str) -> Result<Option<&'a str>, String> {
    let all = values(headers, name)?;
    match all.split_first() {
        None => Ok(None),
        Some((first, rest)) => {
            if let Some(other) = rest.iter().find(|v| v.trim() != first.trim()) {
                return Err(format!(
                    "two different {name} headers: {first:?} and {other:?}"
                ));
            }
            Ok(Some(first))
        }
    }
}

/// Text for a message from bytes that may be anything, cut at 100 bytes.
fn lossy(v: &[u8]) -> String {
    let cut = &v[..v.len().min(100)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if v.len() > 100 {
        s.push_str("...");
    }
    s
}

/// The body's declared length (`Content-Length`), if any.
pub fn content_length(headers: &Headers<'_>) -> Result<Option<u64>, String> {
    match value(headers, "Content-Length")? {
        None => Ok(None),
        Some(text) => number(text)
            .map(Some)
            .ok_or_else(|| format!("a Content-Length that is not a number of bytes: {text:?}")),
    }
}

/// The reason phrase the standard gives `status`, for messages.
fn reason(status: u16) -> &'static str {
    match status {
        200 => " OK",
        206 => " Partial Content",
        304 => " Not Modified",
        400 => " Bad Request",
        401 => " Unauthorized",
        403 => " Forbidden",
        404 => " Not Found",
        405 => " Method Not Allowed",
        408 => " Request Timeout",
        410 => " Gone",
        412 => " Precondition Failed",
        416 => " Range Not Satisfiable",
        429 => " Too Many Requests",
        500 => " Internal Server Error",
        501 => " Not Implemented",
        502 => " Bad Gateway",
        503 => " Service Unavailable",
        504 => " Gateway Timeout",
        _ => "",
    }
}

/// Decides whether the response (its `status` and `headers`; not a redirect, which the caller
/// follows first) answers `asked` with bytes that may be read, and what they are. The error is
/// the reason in words, naming the range asked for (the caller names the URL). The body is not
/// looked at: a caller reads exactly the range's length of it and checks that nothing follows.
pub fn check(status: u16, headers: &Headers<'_>, asked: Asked) -> Result<Answer, String> {
    let range_text = asked.text();
    // Strictly for a 206 below; a number or nothing for the others' messages.
    let length = content_length(headers).ok().flatten();
    let first = asked.len.is_none() && asked.start == 0;
    if first && status == 200 && length == Some(0) {
        // The whole file, empty: nginx answers a range of an empty file so.
        return Ok(Answer::Empty);
    }
    if first && status == 416 {
        // Even byte 0 is out of range: an empty file (`Content-Range: bytes */0`).
        let total = value(headers, "Content-Range")
            .ok()
            .flatten()
            .and_then(|t| {
                t.trim()
                    .strip_prefix("bytes")?
                    .trim()
                    .strip_prefix("*/")
                    .and_then(number)
            });
        return match total {
            Some(0) => Ok(Answer::Empty),
            _ => Err(format!(
                "the server refused the range {} (HTTP 416) without saying the file's size",
                range_text.replacen(' ', "=", 1)
            )),
        };
    }
    if status == 200 {
        return Err(format!(
            "the server ignored the range request for {range_text} and answered HTTP 200 with \
             the whole file{}: models are read by ranges only (the body was not downloaded)",
            match length {
                Some(n) => format!(" ({n} bytes)"),
                None => String::new(),
            }
        ));
    }
    if status != 206 {
        return Err(format!("HTTP {status}{} for {range_text}", reason(status)));
    }
    let bad = |e: String| format!("HTTP 206 for {range_text} with {e}");
    let length = content_length(headers).map_err(bad)?;
    // The bytes must be the file's own: a compressed body (which this client never asks for)
    // would be taken for the range's bytes.
    for coding in values(headers, "Content-Encoding").map_err(bad)? {
        for c in coding.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if !c.eq_ignore_ascii_case("identity") {
                return Err(format!(
                    "HTTP 206 for {range_text} in Content-Encoding {coding:?}: ranges are read \
                     as the file's own bytes only (the request asked for identity)"
                ));
            }
        }
    }
    // The client undoes `chunked` framing, and nothing else.
    for coding in values(headers, "Transfer-Encoding").map_err(bad)? {
        for c in coding.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if !c.eq_ignore_ascii_case("chunked") && !c.eq_ignore_ascii_case("identity") {
                return Err(format!(
                    "HTTP 206 for {range_text} in Transfer-Encoding {coding:?}: only chunked \
                     framing of the file's own bytes is read"
                ));
            }
        }
    }
    let text = value(headers, "Content-Range")
        .map_err(bad)?
        .ok_or_else(|| format!("HTTP 206 for {range_text} without a Content-Range header"))?;
    let range = ContentRange::parse(text).ok_or_else(|| {
        format!(
            "HTTP 206 for {range_text} with a Content-Range that is not 'bytes FIRST-LAST/SIZE': \
             {text:?}"
        )
    })?;
    // The server must send the bytes asked for, cut only at the end of the file, and the same
    // size every time (a file replaced on the server mid-read is a different file).
    let want_end = asked.start.saturating_add(asked.count).min(range.total);
    if range.start != asked.start || range.end != want_end {
        return Err(format!(
            "asked for {range_text}, the server sent {text:?}{}",
            if range.end > want_end {
                " (more bytes than asked)"
            } else {
                ""
            }
        ));
    }
    if let Some(len) = asked.len {
        if range.total != len {
            return Err(format!(
                "the file's size changed on the server from {len} to {} bytes (reading \
                 {range_text})",
                range.total
            ));
        }
    }
    if let Some(length) = length {
        if length != range.end - range.start {
            return Err(format!(
                "asked for {range_text}, the server announced {length} bytes (Content-Length) \
                 for {} bytes of Content-Range {text:?}",
                range.end - range.start
            ));
        }
    }
    Ok(Answer::Range(range))
}

/// The entity tag of a response (`ETag`), if it has one that can be compared.
pub fn etag<'a>(headers: &Headers<'a>) -> Option<&'a str> {
    value(headers, "ETag").ok().flatten().map(str::trim)
}

/// A URL reference split as RFC 3986 (appendix B) splits it; the fragment dropped.
#[derive(Clone, Copy, Debug)]
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
}

fn split(reference: &str) -> Parts<'_> {
    let reference = reference.split_once('#').map_or(reference, |(r, _)| r);
    // A scheme is the text before the first ':' if no '/', '?' (or '#') comes first.
    let (scheme, rest) = match reference.find([':', '/', '?']) {
        Some(i) if reference.as_bytes()[i] == b':' => (Some(&reference[..i]), &reference[i + 1..]),
        _ => (None, reference),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(r) => {
            let end = r.find('/').unwrap_or(r.len());
            (Some(&r[..end]), &r[end..])
        }
        None => (None, rest),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
    }
}

/// RFC 3986's `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
}

/// RFC 3986 section 5.2.4: `.` and `..` segments removed from `path`.
fn remove_dot_segments(path: &str) -> String {
    let mut input = path;
    let mut out = String::with_capacity(path.len());
    let pop = |out: &mut String| out.truncate(out.rfind('/').unwrap_or(0));
    while !input.is_empty() {
        if let Some(r) = input.strip_prefix("../") {
            input = r;
        } else if let Some(r) = input.strip_prefix("./") {
            input = r;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") {
            input = &input[3..];
            pop(&mut out);
        } else if input == "/.." {
            input = "/";
            pop(&mut out);
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let from = usize::from(input.starts_with('/'));
            let end = input[from..].find('/').map_or(input.len(), |i| i + from);
            out.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    out
}

/// A redirect's `location` resolved against `base` (an absolute `http://` or `https://` URL) as
/// RFC 3986 section 5.2 says: `/p?q`, `p`, `../p`, `?q`, `//host/p` and absolute URLs. Refuses
/// a scheme other than http and https (`javascript:`, `file:`, `ftp:`) and an empty reference.
/// The result is checked further by the caller (a host, a valid URI).
pub fn resolve(base: &str, location: &str) -> Result<String, String> {
    let location = location.trim();
    if location.is_empty() {
        return Err("an empty Location".to_string());
    }
    if let Some(c) = location
        .chars()
        .find(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "a Location with {c:?} inside (a URL holds no blanks or control characters)"
        ));
    }
    let r = split(location);
    let b = split(base);
    let scheme = match r.scheme {
        Some(s) if !is_scheme(s) => {
            return Err(format!(
                "{s:?} before ':' is not a scheme (a relative path with ':' in its first \
                 segment must start with './')"
            ))
        }
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {
            s.to_ascii_lowercase()
        }
        Some(s) => return Err(format!("the scheme is {s:?}, not http or https")),
        None => b.scheme.unwrap_or("http").to_ascii_lowercase(),
    };
    // `http:g` from an http URL is relative (the section's "non-strict" reading, as browsers
    // take it); an absolute URL needs a host.
    let relative_with_scheme = r.authority.is_none()
        && r.scheme
            .zip(b.scheme)
            .is_some_and(|(r, b)| r.eq_ignore_ascii_case(b));
    let absolute = r.authority.is_some() || (r.scheme.is_some() && !relative_with_scheme);
    if absolute && r.authority.is_none() {
        return Err("an absolute URL without a host (no '//' after the scheme)".to_string());
    }
    let (authority, path, query) = if absolute {
        (
            r.authority.unwrap_or(""),
            remove_dot_segments(r.path),
            r.query,
        )
    } else if r.path.is_empty() {
        (
            b.authority.unwrap_or(""),
            b.path.to_string(),
            r.query.or(b.query),
        )
    } else if r.path.starts_with('/') {
        (
            b.authority.unwrap_or(""),
            remove_dot_segments(r.path),
            r.query,
        )
    } else {
        let merged = if b.authority.is_some() && b.path.is_empty() {
            format!("/{}", r.path)
        } else {
            let dir = &b.path[..b.path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{}", r.path)
        };
        (
            b.authority.unwrap_or(""),
            remove_dot_segments(&merged),
            r.query,
        )
    };
    if authority.is_empty() {
        return Err("no host (nothing between '//' and the path)".to_string());
    }
    let path = if path.is_empty() { "/" } else { &path };
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    Ok(format!("{scheme}://{authority}{path}{query}"))
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
        assert_eq!(
            ContentRange::parse("bytes 0-18446744073709551615/18446744073709551615"),
            None
        );
    }

    const BASE: &str = "http://a.example:8080/b/c/model.gguf?q=1";

    #[test]
    fn resolves_as_rfc_3986_says() {
        for (reference, want) in [
            (
                "/other.gguf?next=http://x",
                "http://a.example:8080/other.gguf?next=http://x",
            ),
            ("?x=1", "http://a.example:8080/b/c/model.gguf?x=1"),
            ("#frag", "http://a.example:8080/b/c/model.gguf?q=1"),
            ("g", "http://a.example:8080/b/c/g"),
            ("./g", "http://a.example:8080/b/c/g"),
            ("g/", "http://a.example:8080/b/c/g/"),
            ("../g", "http://a.example:8080/b/g"),
            ("../../../g", "http://a.example:8080/g"),
            ("/./g/../h", "http://a.example:8080/h"),
            ("g?y#s", "http://a.example:8080/b/c/g?y"),
            ("//cdn.example/f", "http://cdn.example/f"),
            ("//cdn.example", "http://cdn.example/"),
            ("https://o.example/g", "https://o.example/g"),
            ("HTTPS://o.example/g", "https://o.example/g"),
            ("http:g", "http://a.example:8080/b/c/g"),
            ("./a:b", "http://a.example:8080/b/c/a:b"),
        ] {
            assert_eq!(resolve(BASE, reference).as_deref(), Ok(want), "{reference}");
        }
    }

    #[test]
    fn refuses_other_schemes() {
        for reference in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "ftp://h/m",
            "data:,x",
        ] {
            let e = resolve(BASE, reference).unwrap_err();
            assert!(e.contains("not http or https"), "{reference}: {e}");
        }
        assert!(resolve(BASE, "").is_err());
        assert!(resolve(BASE, "< #\u{8}").unwrap_err().contains("' '"));
        assert!(resolve(BASE, "a\tb").is_err());
        assert!(resolve(BASE, "http:///x").unwrap_err().contains("no host"));
        assert!(resolve(BASE, "1a:b").unwrap_err().contains("not a scheme"));
    }

    fn h<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<(&'a str, &'a [u8])> {
        pairs.iter().map(|(n, v)| (*n, v.as_bytes())).collect()
    }

    const FIRST: Asked = Asked {
        start: 0,
        count: 100,
        len: None,
    };

    #[test]
    fn checks_a_range() {
        let ok = h(&[
            ("content-range", "bytes 0-99/1000"),
            ("content-length", "100"),
        ]);
        assert_eq!(
            check(206, &ok, FIRST),
            Ok(Answer::Range(ContentRange {
                start: 0,
                end: 100,
                total: 1000
            }))
        );
        let identity = h(&[
            ("content-range", "bytes 0-99/1000"),
            ("Content-Encoding", "identity"),
        ]);
        assert!(check(206, &identity, FIRST).is_ok());
        // A valid range with one more header that makes the answer unusable.
        for (name, value, want) in [
            ("Content-Encoding", "gzip", "Content-Encoding \"gzip\""),
            ("transfer-encoding", "gzip, chunked", "Transfer-Encoding"),
            ("content-range", "bytes 0-99/2000", "two different"),
            ("content-length", "99999999999999999999999", "not a number"),
        ] {
            let pairs = [("content-range", "bytes 0-99/1000"), (name, value)];
            let e = check(206, &h(&pairs), FIRST).unwrap_err();
            assert!(e.contains(want), "{name}: {value}: {e}");
        }
        let later = Asked {
            start: 100,
            count: 100,
            len: Some(1000),
        };
        let resized = h(&[("content-range", "bytes 100-199/1001")]);
        assert!(check(206, &resized, later)
            .unwrap_err()
            .contains("size changed"));
        assert_eq!(
            check(200, &h(&[("content-length", "0")]), FIRST),
            Ok(Answer::Empty)
        );
        assert!(check(200, &h(&[("content-length", "0")]), later).is_err());
        assert_eq!(
            check(416, &h(&[("content-range", "bytes */0")]), FIRST),
            Ok(Answer::Empty)
        );
        assert_eq!(
            check(404, &[], later).unwrap_err(),
            "HTTP 404 Not Found for bytes 100-199"
        );
    }
}
