//! The URL source's reading of a server's answer (`src/http/response.rs`, included by its path:
//! the fuzz build has no network code): a response head and the range it answers, and a
//! redirect's `Location` resolved against a URL. Checks that nothing panics and that what is
//! accepted is what was asked for.
//!
//! Input: 8 bytes of range start, 8 of count, 1 choosing whether the file's size is known (and
//! 8 of it), then a response head as a server sends it (`HTTP/1.1 206 ...\r\nName: value\r\n`),
//! whose `Location` (if any) is also resolved.
#![no_main]

#[path = "../../src/http/response.rs"]
#[allow(dead_code)]
mod response;

use response::{check, content_length, resolve, Answer, Asked};

/// A u64 from up to 8 bytes at the front of `data`, and the rest.
fn take_u64(data: &[u8]) -> (u64, &[u8]) {
    let n = data.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&data[..n]);
    (u64::from_le_bytes(b), &data[n..])
}

/// The status and the header fields of a response head; `None` without a status line.
fn parse_head(head: &[u8]) -> Option<(u16, Vec<(&str, &[u8])>)> {
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status_line = std::str::from_utf8(lines.next()?).ok()?;
    let status: u16 = status_line.split(' ').nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let Ok(name) = std::str::from_utf8(&line[..colon]) else {
            continue;
        };
        let value = &line[colon + 1..];
        let start = value.iter().position(|&b| b != b' ').unwrap_or(value.len());
        headers.push((name, &value[start..]));
    }
    Some((status, headers))
}

const BASE: &str = "http://127.0.0.1:8080/a/b/model.gguf?sig=1";

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (start, data) = take_u64(data);
    let (count, data) = take_u64(data);
    let (known, data) = data.split_first().map_or((0, data), |(k, rest)| (*k, rest));
    let (len, data) = take_u64(data);
    // As the source asks: at least one byte, inside a known file.
    let count = count.max(1);
    let len = (known & 1 == 1).then_some(len);
    if let Some(len) = len {
        if start.checked_add(count).is_none_or(|end| end > len) {
            return;
        }
    }
    let asked = Asked { start, count, len };
    let _ = asked.text();
    let Some((status, headers)) = parse_head(data) else {
        return;
    };
    match check(status, &headers, asked) {
        Ok(Answer::Empty) => {
            assert!(len.is_none() && start == 0, "an empty file answers the first request only");
            assert!(status == 200 || status == 416, "{status}");
        }
        Ok(Answer::Range(r)) => {
            assert_eq!(status, 206);
            assert_eq!(r.start, start, "{r:?} for {asked:?}");
            assert!(r.start < r.end && r.end <= r.total, "{r:?}");
            assert!(r.end - r.start <= count, "{r:?} for {asked:?}");
            assert!(
                r.end == start + count || r.end == r.total,
                "cut before the file's end: {r:?} for {asked:?}"
            );
            if let Some(len) = len {
                assert_eq!(r.total, len);
            }
            if let Ok(Some(n)) = content_length(&headers) {
                assert_eq!(n, r.end - r.start);
            }
            for (name, value) in &headers {
                if name.eq_ignore_ascii_case("content-encoding") {
                    let v = String::from_utf8_lossy(value);
                    assert!(
                        v.split(',').all(|c| c.trim().is_empty()
                            || c.trim().eq_ignore_ascii_case("identity")),
                        "{v:?}"
                    );
                }
            }
        }
        Err(why) => assert!(!why.is_empty()),
    }
    for (name, value) in &headers {
        if !name.eq_ignore_ascii_case("location") {
            continue;
        }
        let Ok(location) = std::str::from_utf8(value) else {
            continue;
        };
        if let Ok(url) = resolve(BASE, location) {
            assert!(
                url.starts_with("http://") || url.starts_with("https://"),
                "{location:?} -> {url:?}"
            );
            assert!(!url.contains('#'), "{location:?} -> {url:?}");
            assert!(
                !url.chars().any(|c| c.is_whitespace() || c.is_control()),
                "{location:?} -> {url:?}"
            );
            // Resolved once is final: resolving it again changes nothing.
            assert_eq!(
                resolve(BASE, &url).as_deref(),
                Ok(url.as_str()),
                "{location:?} -> {url:?}"
            );
        }
    }
});
