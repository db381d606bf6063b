//! Models read over HTTP(S) by range requests (`src/http.rs`, `gguf_open_url`), against servers
//! this test starts on the loopback: nginx from Debian's packages (ranges, TLS with a certificate
//! authority the test makes, redirects, a path that wants a bearer token) and a small server that
//! misbehaves in each way a server can (`url/servers.rs`). No request leaves the machine.
//!
//! Host only: it drives nginx and openssl (tools/cross.sh lists it with the host-only tests).
//! Built without the `net` feature, only the last test runs: gguf_open_url says so.

#![cfg_attr(not(feature = "net"), allow(unused))]

mod common;
#[cfg(feature = "net")]
#[path = "url/servers.rs"]
mod servers;

/// Each of `parts` is in `text` (an error's message).
fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in: {text}");
    }
}

#[cfg(not(feature = "net"))]
#[test]
fn without_the_net_feature_open_url_says_so() {
    let url = std::ffi::CString::new("https://127.0.0.1:9/m.gguf").unwrap();
    // SAFETY: a NUL-terminated string living through the call; NULL token.
    let f = unsafe { gguf::ffi::gguf_open_url(url.as_ptr(), std::ptr::null(), 0) };
    assert!(f.is_null());
    assert_eq!(
        gguf::ffi::gguf_last_error_code(),
        gguf::ErrorCode::Unsupported as u32
    );
    let text = common::last_error();
    assert_mentions(
        &text,
        &[
            "built without network support",
            "https://127.0.0.1:9/m.gguf",
        ],
    );
}

#[cfg(feature = "net")]
mod with_net {
    use super::{assert_mentions, common, servers};

    use gguf::http::{HttpOptions, HttpSource};
    use gguf::read_at::ReadAt;
    use gguf::{DataType, ErrorCode, MetadataValue, ValueType, Writer};
    use servers::{fresh_dir, BadServer, Misbehaviour, Nginx, Tls, TOKEN};
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// Set in a child process: runs the HTTPS scenario with SSL_CERT_FILE naming the test's CA.
    const HTTPS_CHILD: &str = "GGUF_URL_HTTPS_CHILD";

    /// Byte `j` of tensor `k`.
    fn pattern(k: usize, j: usize) -> u8 {
        (k * 31 + j * 7 + 3) as u8
    }

    /// A model with a 262144-token vocabulary (a header of about 4.6 MB) and three tensors of
    /// 4 MiB, 1 KiB and 4 MiB.
    fn vocab_model() -> Writer {
        let mut w = Writer::new();
        w.add_metadata("general.architecture", MetadataValue::string("llama"))
            .unwrap();
        let tokens = (0..262_144)
            .map(|i| MetadataValue::string(format!("tok{i}")))
            .collect();
        w.add_metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(ValueType::String, tokens),
        )
        .unwrap();
        for (k, n) in [(0usize, 1u64 << 20), (1, 256), (2, 1 << 20)] {
            let data = (0..n as usize * 4).map(|j| pattern(k, j)).collect();
            w.add_tensor(format!("t{k}"), &[n], DataType::F32, data)
                .unwrap();
        }
        w
    }

    /// A small model: two tensors.
    fn small_model() -> Writer {
        let mut w = Writer::new();
        w.add_metadata("general.name", MetadataValue::string("small"))
            .unwrap();
        for k in 0..2 {
            let data = (0..4096).map(|j| pattern(k, j)).collect();
            w.add_tensor(format!("s{k}"), &[1024], DataType::F32, data)
                .unwrap();
        }
        w
    }

    /// The files nginx serves: `vocab.gguf`, `small.gguf` and `split-0000i-of-00003.gguf`
    /// (`vocab.gguf` one tensor to a shard).
    fn serve_models(root: &Path) {
        std::fs::create_dir_all(root).unwrap();
        vocab_model().write_file(root.join("vocab.gguf")).unwrap();
        small_model().write_file(root.join("small.gguf")).unwrap();
        for (no, shard) in vocab_model().into_shards(1).unwrap().iter().enumerate() {
            shard
                .write_file(root.join(Writer::shard_path("split", no, 3)))
                .unwrap();
        }
    }

    /// nginx over fresh copies of the models, with its own CA, for test `name`.
    fn nginx(name: &str) -> (Nginx, Tls, std::path::PathBuf) {
        let dir = fresh_dir(name);
        let root = dir.join("root");
        serve_models(&root);
        let tls = servers::make_tls(&dir);
        (Nginx::start(&dir, &root, &tls), tls, root)
    }

    fn options(timeout_ms: u64) -> HttpOptions {
        HttpOptions {
            timeout: Duration::from_millis(timeout_ms),
            ..HttpOptions::default()
        }
    }

    fn read_all(source: &dyn ReadAt, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let n = source.read_at(offset, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    // ---------------------------------------------------------------------------------------------
    // The source itself, against nginx.

    #[test]
    fn ranges_read_from_nginx_are_the_files_bytes() {
        let (nginx, _tls, root) = nginx("ranges");
        let bytes = std::fs::read(root.join("vocab.gguf")).unwrap();
        let source = HttpSource::open(&nginx.url("m/vocab.gguf"), &options(10_000)).unwrap();
        assert_eq!(source.len(), bytes.len() as u64);
        let len = bytes.len();
        // Inside the first response's bytes, across its end, far past it, and at the file's end.
        for (offset, count) in [
            (0, 100),
            (60_000, 10_000),
            (1 << 20, 3 << 20),
            (len - 10, 10),
            (len - 10, 100),
        ] {
            let got = read_all(&source, offset as u64, count);
            let end = (offset + count).min(len);
            assert!(got == bytes[offset..end], "bytes {offset}+{count} differ");
        }
        assert!(read_all(&source, len as u64, 10).is_empty());
        assert!(read_all(&source, len as u64 + 5, 10).is_empty());
        // Every request was a range request answered with 206.
        let log = nginx.log();
        assert!(log.len() >= 4, "{log:?}");
        for line in &log {
            assert_eq!(line.status, 206, "{line:?}");
            assert!(line.range.starts_with("bytes="), "{line:?}");
        }
    }

    #[test]
    fn redirects_are_followed() {
        let (nginx, _tls, root) = nginx("redirects");
        let bytes = std::fs::read(root.join("small.gguf")).unwrap();
        let source = HttpSource::open(&nginx.url("moved/small.gguf"), &options(10_000)).unwrap();
        assert_eq!(source.len(), bytes.len() as u64);
        assert_eq!(read_all(&source, 0, bytes.len()), bytes);
        let log = nginx.log();
        assert_eq!(log[0].uri, "/moved/small.gguf");
        assert_eq!(log[0].status, 302);
        assert_eq!(log[1].uri, "/m/small.gguf");
        assert_eq!(log[1].status, 206);
    }

    #[test]
    fn a_bearer_token_opens_a_gated_file_and_stays_on_its_host() {
        let (nginx, _tls, root) = nginx("token");
        let bytes = std::fs::read(root.join("small.gguf")).unwrap();
        let url = nginx.url("gated/small.gguf");

        let e = HttpSource::open(&url, &options(10_000)).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.code(), ErrorCode::Io);
        assert_mentions(&text, &["HTTP 401 Unauthorized", &url, "bytes 0-262143"]);

        let with_token = HttpOptions {
            bearer_token: Some(TOKEN.to_string()),
            ..options(10_000)
        };
        let source = HttpSource::open(&url, &with_token).unwrap();
        assert_eq!(read_all(&source, 0, bytes.len()), bytes);
        assert!(nginx
            .log()
            .iter()
            .any(|l| l.status == 206 && l.auth == format!("Bearer {TOKEN}")));

        // A redirect to another host (localhost, not 127.0.0.1) does not carry the token there.
        nginx.clear_log();
        let e = HttpSource::open(&nginx.url("other-host/small.gguf"), &with_token).unwrap_err();
        assert!(e.to_string().contains("HTTP 401"), "{e}");
        let log = nginx.log();
        assert_eq!(log.len(), 2, "{log:?}");
        assert_eq!(log[0].auth, format!("Bearer {TOKEN}"));
        assert_eq!(log[1].auth, "-", "the token went to another host: {log:?}");
    }

    #[test]
    fn https_is_refused_without_the_servers_ca() {
        let (nginx, _tls, _root) = nginx("https-untrusted");
        if std::env::var_os("SSL_CERT_FILE").is_some() {
            // This process's own environment names a CA file: the child below runs without it.
            let out = common::this_test_binary()
                .args([
                    "with_net::https_is_refused_without_the_servers_ca",
                    "--exact",
                ])
                .env_remove("SSL_CERT_FILE")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", common::show(&out));
            return;
        }
        let url = nginx.https_url("m/small.gguf");
        let e = HttpSource::open(&url, &options(10_000)).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&url), "{text}");
        assert!(text.to_lowercase().contains("certificate"), "{text}");
        println!("{text}");
        says_once(&text);
    }

    #[test]
    fn https_with_the_tests_own_certificate_authority() {
        if std::env::var_os(HTTPS_CHILD).is_none() {
            // SSL_CERT_FILE is read by the library; set it from the start of a child process rather
            // than change this process's environment under its other threads.
            let (nginx, tls, _root) = nginx("https");
            let out = common::this_test_binary()
                .args([
                    "with_net::https_with_the_tests_own_certificate_authority",
                    "--exact",
                    "--nocapture",
                ])
                .env(HTTPS_CHILD, nginx.https.to_string())
                .env("SSL_CERT_FILE", &tls.ca)
                .env_remove("SSL_CERT_DIR")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", common::show(&out));
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("https: read over TLS"),
                "{}",
                common::show(&out)
            );
            let log = nginx.log();
            assert!(
                !log.is_empty() && log.iter().all(|l| l.status == 206),
                "{log:?}"
            );
            return;
        }
        let port = std::env::var(HTTPS_CHILD).unwrap();
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("url/https/root");
        let bytes = std::fs::read(root.join("vocab.gguf")).unwrap();
        let url = format!("https://127.0.0.1:{port}/m/vocab.gguf");
        let source = HttpSource::open(&url, &options(10_000)).unwrap();
        assert_eq!(source.len(), bytes.len() as u64);
        assert!(read_all(&source, 1 << 20, 1 << 20) == bytes[1 << 20..2 << 20]);
        // The certificate names localhost too.
        let url = format!("https://localhost:{port}/m/small.gguf");
        let source = HttpSource::open(&url, &options(10_000)).unwrap();
        assert_eq!(read_all(&source, 0, 8)[..4], *b"GGUF");
        println!("https: read over TLS");
    }

    #[test]
    fn a_cert_file_without_certificates_is_named() {
        if std::env::var_os(HTTPS_CHILD).is_none() {
            let dir = fresh_dir("empty-cert-file");
            let empty = dir.join("empty.pem");
            std::fs::write(&empty, "").unwrap();
            let out = common::this_test_binary()
                .args([
                    "with_net::a_cert_file_without_certificates_is_named",
                    "--exact",
                ])
                .env(HTTPS_CHILD, "1")
                .env("SSL_CERT_FILE", &empty)
                .env_remove("SSL_CERT_DIR")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", common::show(&out));
            return;
        }
        let e = HttpSource::open("https://127.0.0.1:9/m.gguf", &options(1000)).unwrap_err();
        assert!(e.to_string().contains("SSL_CERT_FILE="), "{e}");
        assert!(e.to_string().contains("no trusted root"), "{e}");
    }

    // ---------------------------------------------------------------------------------------------
    // Misbehaving servers: each gives a clear error naming the URL and the byte range, promptly.

    fn bad(how: Misbehaviour) -> BadServer {
        BadServer::start(how, small_model().to_bytes().unwrap())
    }

    /// Checks that `text` is one message: "gguf: " once (not counting a file name's ".gguf: ").
    fn says_once(text: &str) {
        let prefixes = text.matches("gguf: ").count() - text.matches(".gguf: ").count();
        assert_eq!(prefixes, 1, "{text}");
        assert!(text.starts_with("gguf: "), "{text}");
    }

    /// The bytes `server` has sent, `ms` milliseconds from now (time for a server that keeps
    /// pushing to fill the sockets' buffers).
    fn sent_after(server: &BadServer, ms: u64) -> u64 {
        std::thread::sleep(Duration::from_millis(ms));
        server.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Opens `path` on `server` with a 500 ms timeout; returns the error's text, checking it names
    /// the URL and came within 10 s.
    fn open_fails(server: &BadServer, path: &str) -> String {
        let url = server.url(path);
        let start = Instant::now();
        let e = HttpSource::open(&url, &options(500)).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10), "{e}");
        assert_eq!(e.code(), ErrorCode::Io, "{e}");
        let text = e.to_string();
        assert!(text.contains(&url), "{text}");
        says_once(&text);
        text
    }

    #[test]
    fn a_server_ignoring_ranges_is_refused_without_downloading() {
        let server = bad(Misbehaviour::IgnoresRanges);
        let text = open_fails(&server, "m.gguf");
        assert_mentions(
            &text,
            &["ignored the range request", "HTTP 200", "1073741824 bytes"],
        );
        // The connection was closed at once: the server could push no more than what the sockets'
        // buffers hold, nowhere near the gigabyte it offered.
        let sent = sent_after(&server, 500);
        assert!(sent < 64 << 20, "{sent} bytes were sent");
    }

    #[test]
    fn a_404_names_the_url_and_range() {
        let text = open_fails(&bad(Misbehaviour::NotFound), "missing.gguf");
        assert!(
            text.contains("HTTP 404 Not Found for bytes 0-262143"),
            "{text}"
        );
    }

    #[test]
    fn a_redirect_loop_is_named() {
        let server = bad(Misbehaviour::RedirectLoop);
        let text = open_fails(&server, "a");
        assert_mentions(&text, &["redirect loop", "/a -> ", "/b -> "]);
        // Named as soon as a URL comes back, not after the redirect limit.
        assert_eq!(server.requests.lock().unwrap().len(), 2);
    }

    #[test]
    fn too_many_redirects_are_named() {
        let (nginx, _tls, _root) = nginx("redirect-limit");
        let o = HttpOptions {
            max_redirects: 0,
            ..options(10_000)
        };
        let e = HttpSource::open(&nginx.url("moved/small.gguf"), &o).unwrap_err();
        assert!(e.to_string().contains("more than 0 redirects"), "{e}");
    }

    #[test]
    fn a_connection_cut_mid_header_is_named() {
        let text = open_fails(&bad(Misbehaviour::CutsMidHeader), "m.gguf");
        assert!(text.contains("bytes 0-"), "{text}");
        assert!(
            text.contains("connection ended") || text.contains("failed after"),
            "{text}"
        );
    }

    #[test]
    fn more_bytes_than_asked_are_refused() {
        for how in [
            Misbehaviour::MoreThanAskedLength,
            Misbehaviour::MoreThanAskedRange,
            Misbehaviour::MoreThanAskedUnframed,
        ] {
            // The small model is shorter than the first request: ask from further in.
            let file = vocab_model().header_bytes().unwrap();
            let server = BadServer::start(how, file);
            let url = server.url("m.gguf");
            let e = HttpSource::open(&url, &options(2000)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&url), "{how:?}: {text}");
            assert!(text.contains("bytes 0-262143"), "{how:?}: {text}");
            assert!(
                text.contains("more bytes than") || text.contains("announced"),
                "{how:?}: {text}"
            );
        }
    }

    #[test]
    fn a_silent_server_times_out() {
        for how in [Misbehaviour::Silent, Misbehaviour::StallsInBody] {
            let server = bad(how);
            let start = Instant::now();
            let text = open_fails(&server, "m.gguf");
            assert!(start.elapsed() >= Duration::from_millis(400), "{text}");
            assert!(
                text.contains("timed out: no data from the server for 500 ms"),
                "{how:?}: {text}"
            );
            assert!(text.contains("bytes 0-"), "{how:?}: {text}");
        }
    }

    #[test]
    fn nothing_listening_is_named() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/m.gguf");
        let e = HttpSource::open(&url, &options(2000)).unwrap_err();
        assert!(e.to_string().contains(&url), "{e}");
        assert!(e.to_string().contains("bytes 0-262143"), "{e}");
        println!("{e}");
        says_once(&e.to_string());
    }

    // ---------------------------------------------------------------------------------------------
    // gguf_open_url: a handle over a URL.

    use gguf::ffi::*;
    use std::ffi::{CStr, CString};

    fn c(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    /// Opens `url` with `token` and `flags`; the handle, or the error's code and message.
    fn open_url(url: &str, token: Option<&str>, flags: u32) -> Result<GGUFFile, (u32, String)> {
        let token = token.map(c);
        // SAFETY: NUL-terminated strings living through the call.
        let f = unsafe {
            gguf_open_url(
                c(url).as_ptr(),
                token.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
                flags,
            )
        };
        if f.is_null() {
            // SAFETY: no argument.
            Err((gguf_last_error_code(), common::last_error()))
        } else {
            Ok(f)
        }
    }

    /// A tensor's bytes in a parsed file.
    fn data_of<'a>(file: &'a gguf::GgufFile<impl AsRef<[u8]>>, t: &gguf::TensorInfo) -> &'a [u8] {
        &file.bytes()[t.file_offset as usize..][..t.size as usize]
    }

    /// Every tensor of the handle `f`, read whole with gguf_read_tensor: (name, bytes).
    fn tensors_of(f: GGUFFile) -> Vec<(String, Vec<u8>)> {
        // SAFETY: `f` is a live handle; the records it returns live as long.
        unsafe {
            (0..gguf_tensor_count(f))
                .map(|i| {
                    let t = gguf_get_tensor_by_index(f, i);
                    assert!(!t.is_null());
                    let mut buf = vec![0u8; (*t).size_bytes as usize];
                    assert!(
                        gguf_read_tensor(f, t, 0, buf.as_mut_ptr().cast(), (*t).size_bytes),
                        "{}",
                        common::last_error()
                    );
                    let name = CStr::from_ptr((*t).name).to_string_lossy().into_owned();
                    (name, buf)
                })
                .collect()
        }
    }

    #[test]
    fn a_262144_token_model_opens_by_reading_only_its_header() {
        let (nginx, _tls, root) = nginx("vocab");
        let path = root.join("vocab.gguf");
        let local = gguf::GgufFile::open(&path).unwrap();
        let header = local.data_offset();
        let size = std::fs::metadata(&path).unwrap().len();
        let url = nginx.url("m/vocab.gguf");

        let f = open_url(&url, None, 0).unwrap();
        let log = nginx.log();
        let sent: u64 = log.iter().map(|l| l.bytes).sum();
        let largest = log.iter().map(|l| l.bytes).max().unwrap();
        // SAFETY: `f` is a live handle until gguf_close below.
        unsafe {
            assert_eq!(gguf_tensor_count(f), 3);
            assert_eq!(gguf_data_offset(f), header);
            assert_eq!(gguf_file_size(f), size);
            assert!(!gguf_is_mapped(f));
            let kv = gguf_get_metadata(f, c("tokenizer.ggml.tokens").as_ptr());
            assert!(!kv.is_null());
            assert_eq!((*kv).array_len, 262_144);
            // Tensor data stays on the server until asked for.
            let t = gguf_get_tensor_by_index(f, 0);
            assert!(gguf_tensor_data(f, t).is_null());
            gguf_clear_error();
        }
        println!(
        "header {header} bytes, file {size} bytes: {} requests, {sent} bytes sent, largest {largest}",
        log.len()
    );
        for l in &log {
            assert_eq!(l.status, 206, "{l:?}");
        }
        assert!(
            sent <= header + largest,
            "{sent} bytes sent for a header of {header} (largest request {largest}): {log:?}"
        );
        // The doubling's last chunk may run into the data section, never to the file's end.
        assert!(sent < size - (4 << 20), "{sent} of {size} bytes sent");
        // Logarithmic: a first chunk of 256 KiB, doubling.
        assert!(log.len() <= 6, "{log:?}");

        // The tensors read by ranges are the file's.
        nginx.clear_log();
        let got = tensors_of(f);
        let want: Vec<(String, Vec<u8>)> = local
            .tensors()
            .map(|t| {
                let name = String::from_utf8_lossy(t.name).into_owned();
                (name, data_of(&local, &t).to_vec())
            })
            .collect();
        assert!(got == want, "tensor data differs");
        let log = nginx.log();
        let sent: u64 = log.iter().map(|l| l.bytes).sum();
        let data: u64 = want.iter().map(|(_, d)| d.len() as u64).sum();
        assert_eq!(sent, data, "{log:?}");

        // Several at once, on threads, into the caller's buffers.
        // SAFETY: as above; the buffers outlive the call.
        unsafe {
            let (ok, _, bufs) = common::read_tensors(f, 3, 4, 0, None);
            assert!(ok, "{}", common::last_error());
            for (k, b) in bufs.iter().enumerate() {
                assert!(*b == want[k].1, "tensor {k} differs");
            }
            gguf_close(f);
        }
    }

    #[test]
    fn a_split_model_opens_from_any_shards_url() {
        let (nginx, _tls, root) = nginx("split");
        let local = vocab_model();
        let local = gguf::GgufFile::from_bytes(local.to_bytes().unwrap()).unwrap();
        let want: Vec<(String, Vec<u8>)> = local
            .tensors()
            .map(|t| {
                let name = String::from_utf8_lossy(t.name).into_owned();
                (name, data_of(&local, &t).to_vec())
            })
            .collect();
        // From the second shard's URL, with a query (as Hugging Face's `?download=true`).
        let url = nginx.url("m/split-00002-of-00003.gguf?download=true");
        let f = open_url(&url, None, 0).unwrap();
        // SAFETY: `f` is live until gguf_close.
        unsafe {
            assert_eq!(gguf_shard_count(f), 3);
            for no in 0..3u32 {
                let s = gguf_get_shard(f, no);
                let path = CStr::from_ptr((*s).path).to_str().unwrap();
                assert_eq!(
                    path,
                    nginx.url(&format!("m/split-{:05}-of-00003.gguf", no + 1)),
                    "shard {no}"
                );
            }
        }
        assert!(tensors_of(f) == want, "tensor data differs");
        // Every request kept the query.
        assert!(nginx
            .log()
            .iter()
            .all(|l| l.uri.ends_with("?download=true")));
        // SAFETY: live handle.
        unsafe { gguf_close(f) };

        // Alone.
        let f = open_url(&url, None, OpenFlag::SingleShard as u32).unwrap();
        // SAFETY: live handle.
        unsafe {
            assert_eq!(gguf_shard_count(f), 1);
            assert_eq!(gguf_tensor_count(f), 1);
            gguf_close(f);
        }

        // A missing sibling names its URL.
        std::fs::remove_file(root.join("split-00003-of-00003.gguf")).unwrap();
        let (code, text) = open_url(&url, None, 0).unwrap_err();
        assert_eq!(code, ErrorCode::Io as u32, "{text}");
        assert_mentions(
            &text,
            &["split-00003-of-00003.gguf?download=true", "HTTP 404"],
        );
    }

    #[test]
    fn an_empty_file_and_a_truncated_one_are_the_formats_errors() {
        let (nginx, _tls, root) = nginx("empty");
        std::fs::write(root.join("empty.gguf"), b"").unwrap();
        // nginx answers the first range of an empty file with 416 and `bytes */0`.
        let (code, text) = open_url(&nginx.url("m/empty.gguf"), None, 0).unwrap_err();
        assert_eq!(code, ErrorCode::Truncated as u32, "{text}");
        assert!(text.contains(&nginx.url("m/empty.gguf")), "{text}");
        // Cut in the vocabulary: the same error as for the file, at the same offset.
        let bytes = std::fs::read(root.join("vocab.gguf")).unwrap();
        std::fs::write(root.join("cut.gguf"), &bytes[..1 << 20]).unwrap();
        let Err(local) = gguf::GgufFile::open(root.join("cut.gguf")) else {
            panic!("a cut file opens")
        };
        let (code, text) = open_url(&nginx.url("m/cut.gguf"), None, 0).unwrap_err();
        assert_eq!(code, local.code() as u32, "{text} / {local}");
        // SAFETY: no argument.
        assert_eq!(
            gguf_last_error_offset(),
            local.offset().unwrap() as i64,
            "{text}"
        );
    }

    #[test]
    fn open_url_arguments_and_flags() {
        // SAFETY: NULL and NUL-terminated arguments.
        unsafe {
            assert!(gguf_open_url(std::ptr::null(), std::ptr::null(), 0).is_null());
            assert_eq!(gguf_last_error_code(), ErrorCode::NullArgument as u32);
            assert!(gguf_open_url_ex(std::ptr::null(), std::ptr::null(), 0).is_null());
        }
        for url in [
            "ftp://127.0.0.1/m.gguf",
            "/tmp/m.gguf",
            "http://",
            "not a url",
        ] {
            let (code, text) = open_url(url, None, 0).unwrap_err();
            assert_eq!(code, ErrorCode::InvalidArgument as u32, "{url}: {text}");
            assert!(text.contains("http:// or https://"), "{url}: {text}");
        }
        let (code, text) =
            open_url("http://127.0.0.1:9/m.gguf", None, OpenFlag::Populate as u32).unwrap_err();
        assert_eq!(code, ErrorCode::InvalidArgument as u32);
        assert!(
            text.contains("GGUF_OPEN_FLAG_POPULATE does not apply to a URL"),
            "{text}"
        );
        let (code, text) = open_url("http://127.0.0.1:9/m.gguf", None, 1 << 30).unwrap_err();
        assert_eq!(code, ErrorCode::InvalidArgument as u32);
        assert!(text.contains("unknown open flags"), "{text}");
    }

    #[test]
    fn open_url_with_a_token_and_options() {
        let (nginx, _tls, root) = nginx("open-token");
        let bytes = std::fs::read(root.join("small.gguf")).unwrap();
        let url = nginx.url("gated/small.gguf");
        let (code, text) = open_url(&url, None, 0).unwrap_err();
        assert_eq!(code, ErrorCode::Io as u32);
        assert!(text.contains("HTTP 401"), "{text}");
        let f = open_url(&url, Some(TOKEN), 0).unwrap();
        let local = gguf::GgufFile::from_bytes(bytes).unwrap();
        let t = local.tensors().next().unwrap();
        assert_eq!(tensors_of(f)[0].1, data_of(&local, &t));
        // SAFETY: live handle.
        unsafe { gguf_close(f) };

        // gguf_open_url_ex: the token in the options, and a redirect limit.
        let token = c(TOKEN);
        let options = GGUFUrlOptions {
            bearer_token: token.as_ptr(),
            timeout_ms: 5000,
            max_redirects: 0,
            deadline_ms: 0,
        };
        // SAFETY: the options and strings live through the call.
        let f = unsafe { gguf_open_url_ex(c(&url).as_ptr(), &options, 0) };
        assert!(!f.is_null(), "{}", common::last_error());
        // SAFETY: live handle.
        unsafe { gguf_close(f) };
    }

    #[test]
    fn open_url_ex_timeout_applies_to_a_silent_server() {
        let server = bad(Misbehaviour::Silent);
        let url = c(&server.url("m.gguf"));
        let options = GGUFUrlOptions {
            bearer_token: std::ptr::null(),
            timeout_ms: 300,
            max_redirects: 0,
            deadline_ms: 0,
        };
        let start = Instant::now();
        // SAFETY: the options and strings live through the call.
        let f = unsafe { gguf_open_url_ex(url.as_ptr(), &options, 0) };
        assert!(f.is_null());
        let text = common::last_error();
        assert!(start.elapsed() < Duration::from_secs(5), "{text}");
        assert!(
            text.contains("no data from the server for 300 ms"),
            "{text}"
        );
    }

    #[test]
    fn a_read_after_the_server_went_away_names_the_url_and_range() {
        let (nginx, _tls, _root) = nginx("gone");
        let url = nginx.url("m/vocab.gguf");
        let f = open_url(&url, None, 0).unwrap();
        drop(nginx);
        // SAFETY: live handle; the buffer outlives the call.
        unsafe {
            let t = gguf_get_tensor_by_index(f, 2);
            let at = (*t).file_offset;
            let mut buf = vec![0u8; 1000];
            assert!(!gguf_read_tensor(f, t, 24, buf.as_mut_ptr().cast(), 1000));
            let text = common::last_error();
            assert_eq!(gguf_last_error_code(), ErrorCode::Io as u32);
            assert!(text.contains(&url), "{text}");
            let range = format!("bytes {}-{}", at + 24, at + 24 + 999);
            assert!(text.contains(&range), "{text}");
            println!("{text}");
            says_once(&text);
            gguf_close(f);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Hostile servers, each case a clear error naming the URL and range, promptly.

    /// A model whose one tensor (512 KiB) lies past the first request's 256 KiB: reading it
    /// makes a request of its own.
    fn far_tensor_model() -> Vec<u8> {
        let mut w = Writer::new();
        w.add_metadata("general.name", MetadataValue::string("far"))
            .unwrap();
        let data = (0..512 << 10).map(|j| pattern(5, j)).collect();
        w.add_tensor("far", &[128 << 10], DataType::F32, data)
            .unwrap();
        w.to_bytes().unwrap()
    }

    /// Reads the first tensor of the handle over `url` whole; the error's code and text.
    fn read_first_tensor(url: &str, options: &GGUFUrlOptions) -> Result<Vec<u8>, (u32, String)> {
        let url = c(url);
        // SAFETY: the options and strings live through the call; the handle until gguf_close.
        unsafe {
            let f = open_url_with(url.as_ptr(), options);
            assert!(!f.is_null(), "{}", common::last_error());
            let t = gguf_get_tensor_by_index(f, 0);
            let mut buf = vec![0u8; (*t).size_bytes as usize];
            let ok = gguf_read_tensor(f, t, 0, buf.as_mut_ptr().cast(), (*t).size_bytes);
            let result = if ok {
                Ok(buf)
            } else {
                Err((gguf_last_error_code(), common::last_error()))
            };
            gguf_close(f);
            result
        }
    }

    /// gguf_open_url_with with the whole of `options`.
    ///
    /// # Safety
    /// `url` is NUL-terminated.
    unsafe fn open_url_with(url: *const std::ffi::c_char, options: &GGUFUrlOptions) -> GGUFFile {
        // SAFETY: the caller's contract; `options` is whole.
        unsafe { gguf_open_url_with(url, options, std::mem::size_of::<GGUFUrlOptions>(), 0) }
    }

    fn url_options(timeout_ms: u32, deadline_ms: u32) -> GGUFUrlOptions {
        GGUFUrlOptions {
            bearer_token: std::ptr::null(),
            timeout_ms,
            max_redirects: 0,
            deadline_ms,
        }
    }

    /// Checks a read's error: GGUF_ERROR_CODE_IO, the URL, the text `want`, one "gguf: ".
    fn read_fails(result: Result<Vec<u8>, (u32, String)>, url: &str, want: &str) -> String {
        let (code, text) = result.map(|_| ()).unwrap_err();
        assert_eq!(code, ErrorCode::Io as u32, "{text}");
        assert_mentions(&text, &[url, want]);
        says_once(&text);
        text
    }

    #[test]
    fn open_url_with_reads_options_size_bytes() {
        let (nginx, _tls, _root) = nginx("options-size");
        let url = c(&nginx.url("m/small.gguf"));
        let whole = std::mem::size_of::<GGUFUrlOptions>();
        let before_deadline = std::mem::offset_of!(GGUFUrlOptions, deadline_ms);
        // A deadline of 1 ms: read, the open fails; not read, it opens.
        let o = url_options(5000, 1);
        let open = |options: *const GGUFUrlOptions, size: usize| {
            // SAFETY: `options` is NULL or holds `size` readable bytes; `url` lives.
            let f = unsafe { gguf_open_url_with(url.as_ptr(), options, size, 0) };
            if f.is_null() {
                Err((gguf_last_error_code(), common::last_error()))
            } else {
                // SAFETY: a live handle.
                unsafe { gguf_close(f) };
                Ok(())
            }
        };
        let (code, text) = open(&o, whole).unwrap_err();
        assert_eq!(code, ErrorCode::Io as u32, "{text}");
        assert!(text.contains("deadline of 1 ms passed"), "{text}");
        // A program built against the header before deadline_ms: that field is never read.
        open(&o, before_deadline).unwrap();
        // SAFETY: the options and strings live through the call.
        let f = unsafe { gguf_open_url_ex(url.as_ptr(), &o, 0) };
        assert!(!f.is_null(), "{}", common::last_error());
        // SAFETY: a live handle.
        unsafe { gguf_close(f) };
        open(std::ptr::null(), 0).unwrap();
        let (code, text) = open(&o, before_deadline - 1).unwrap_err();
        assert_eq!(code, ErrorCode::InvalidArgument as u32, "{text}");
        assert!(
            text.contains("smaller than the first GGUFUrlOptions"),
            "{text}"
        );
        // A newer header's struct: its unknown fields unset are fine, set are refused.
        #[repr(C)]
        struct Newer {
            options: GGUFUrlOptions,
            more: [u32; 4],
        }
        let mut newer = Newer {
            options: url_options(5000, 0),
            more: [0; 4],
        };
        let size = std::mem::size_of::<Newer>();
        open(&newer.options, size).unwrap();
        newer.more[2] = 7;
        let (code, text) = open(&newer.options, size).unwrap_err();
        assert_eq!(code, ErrorCode::InvalidArgument as u32, "{text}");
        assert!(text.contains("built for a newer header"), "{text}");
        let (code, _) = open(&newer.options, usize::MAX).unwrap_err();
        assert_eq!(code, ErrorCode::InvalidArgument as u32);
    }

    #[test]
    fn a_compressed_range_is_refused_and_never_asked_for() {
        let server = bad(Misbehaviour::Gzip);
        let text = open_fails(&server, "m.gguf");
        assert_mentions(
            &text,
            &["HTTP 206 for bytes 0-262143", "Content-Encoding \"gzip\""],
        );
        // Later reads too: the first answer honest, the tensor's labelled gzip.
        let server = BadServer::start(Misbehaviour::GzipAfterFirst, far_tensor_model());
        let url = server.url("m.gguf");
        read_fails(
            read_first_tensor(&url, &url_options(5000, 0)),
            &url,
            "Content-Encoding \"gzip\"",
        );
        let asked = server.accept_encodings.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert!(asked.iter().all(|a| a == "identity"), "{asked:?}");
    }

    #[test]
    fn redirects_resolve_as_rfc_3986_says() {
        let file = small_model().to_bytes().unwrap();
        let server = BadServer::start(Misbehaviour::Redirects, file.clone());
        for (path, target) in [
            ("model.gguf", "/model.gguf?x=1"),
            ("next", "/other.gguf?next=http://x"),
            ("dots/x/y", "/m.gguf?d"),
        ] {
            server.requests.lock().unwrap().clear();
            let source = HttpSource::open(&server.url(path), &options(5000))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(read_all(&source, 0, file.len()), file);
            let requests = server.requests.lock().unwrap().clone();
            assert_eq!(requests.len(), 2, "{requests:?}");
            assert!(
                requests[1].starts_with(&format!("{target} ")),
                "{requests:?}"
            );
        }
        // Another scheme is refused, with the one error, and nothing more is requested.
        for (path, scheme) in [("js", "\"javascript\""), ("ftp", "\"ftp\"")] {
            server.requests.lock().unwrap().clear();
            let text = open_fails(&server, path);
            assert_mentions(
                &text,
                &[
                    "HTTP 302 redirect from",
                    &format!("the scheme is {scheme}, not http or https"),
                    "bytes 0-262143",
                ],
            );
            assert_eq!(server.requests.lock().unwrap().len(), 1);
        }
        for (path, want) in [
            ("nohost", "to \"http:///m.gguf\": no host (nothing between"),
            ("latin1", "with a Location that is not ASCII text"),
        ] {
            let text = open_fails(&server, path);
            assert!(text.contains(want), "{path}: {text}");
        }
    }

    #[test]
    fn a_deadline_bounds_a_server_that_drips() {
        // One byte every 250 ms never trips a 1000 ms wait: the deadline does.
        for how in [Misbehaviour::DripsBody, Misbehaviour::DripsHeaders] {
            let server = bad(how);
            let url = server.url("m.gguf");
            let o = HttpOptions {
                deadline: Some(Duration::from_millis(1500)),
                ..options(1000)
            };
            let start = Instant::now();
            let e = HttpSource::open(&url, &o).unwrap_err();
            let took = start.elapsed();
            let text = e.to_string();
            assert!(
                took >= Duration::from_millis(1400),
                "{how:?} {took:?}: {text}"
            );
            assert!(took < Duration::from_secs(6), "{how:?} {took:?}: {text}");
            assert_eq!(e.code(), ErrorCode::Io, "{text}");
            assert!(text.contains(&url), "{text}");
            assert!(
                text.contains("the open's deadline of 1500 ms passed"),
                "{how:?}: {text}"
            );
            assert!(text.contains("bytes 0-"), "{how:?}: {text}");
            says_once(&text);
        }
        // From C: gguf_open_url_with's deadline_ms.
        let server = bad(Misbehaviour::DripsBody);
        let url = c(&server.url("m.gguf"));
        let start = Instant::now();
        // SAFETY: the options and strings live through the call.
        let f = unsafe { open_url_with(url.as_ptr(), &url_options(1000, 1500)) };
        assert!(f.is_null());
        let text = common::last_error();
        assert!(start.elapsed() < Duration::from_secs(6), "{text}");
        assert_eq!(gguf_last_error_code(), ErrorCode::Io as u32, "{text}");
        assert!(
            text.contains("the open's deadline of 1500 ms passed"),
            "{text}"
        );
    }

    #[test]
    fn after_the_open_the_deadline_bounds_each_request() {
        // The open's deadline has passed long before the read; each read has its own.
        let server = BadServer::start(Misbehaviour::DripsLaterBodies, far_tensor_model());
        let url = server.url("m.gguf");
        let c_url = c(&url);
        // SAFETY: the options and strings live through the call; the handle until gguf_close.
        unsafe {
            let f = open_url_with(c_url.as_ptr(), &url_options(1000, 1000));
            assert!(!f.is_null(), "{}", common::last_error());
            std::thread::sleep(Duration::from_millis(1100));
            let t = gguf_get_tensor_by_index(f, 0);
            let mut buf = vec![0u8; (*t).size_bytes as usize];
            let start = Instant::now();
            assert!(!gguf_read_tensor(
                f,
                t,
                0,
                buf.as_mut_ptr().cast(),
                (*t).size_bytes
            ));
            let took = start.elapsed();
            let text = common::last_error();
            assert!(took >= Duration::from_millis(900), "{took:?}: {text}");
            assert!(took < Duration::from_secs(5), "{took:?}: {text}");
            assert!(
                text.contains("the request's deadline of 1000 ms passed"),
                "{text}"
            );
            gguf_close(f);
        }
        // Against nginx, a deadline that passes after the open leaves the reads working.
        let (nginx, _tls, root) = nginx("deadline");
        let local = gguf::GgufFile::open(root.join("split-00001-of-00003.gguf")).unwrap();
        let t = local.tensors().next().unwrap();
        let url = nginx.url("m/split-00001-of-00003.gguf");
        let o = url_options(5000, 1000);
        let c_url = c(&url);
        // SAFETY: as above.
        unsafe {
            let f = open_url_with(c_url.as_ptr(), &o);
            assert!(!f.is_null(), "{}", common::last_error());
            std::thread::sleep(Duration::from_millis(1100));
            assert_eq!(tensors_of(f)[0].1, data_of(&local, &t));
            gguf_close(f);
        }
        // A deadline too far to represent is none (no overflow).
        let o = HttpOptions {
            deadline: Some(Duration::MAX),
            ..options(5000)
        };
        let bytes = std::fs::read(root.join("small.gguf")).unwrap();
        let source = HttpSource::open(&nginx.url("m/small.gguf"), &o).unwrap();
        assert_eq!(read_all(&source, 0, bytes.len()), bytes);
    }

    #[test]
    fn hostile_responses_to_the_first_request() {
        for (how, want) in [
            (
                Misbehaviour::HugeContentLength,
                "announced 9223372036854775808 bytes",
            ),
            (
                Misbehaviour::ContentRangeAtTheTop,
                "a Content-Range that is not 'bytes FIRST-LAST/SIZE'",
            ),
        ] {
            let text = open_fails(&bad(how), "m.gguf");
            assert!(text.contains(want), "{how:?}: {text}");
            println!("{how:?}: {text}");
        }
        // Headers without end: refused once past the client's limit, not read forever.
        let server = bad(Misbehaviour::EndlessHeaders);
        let text = open_fails(&server, "m.gguf");
        println!("endless headers: {text}");
        assert_mentions(&text, &["bytes 0-262143", "header"]);
        let sent = sent_after(&server, 200);
        assert!(sent < 16 << 20, "{sent} header bytes were sent");
    }

    #[test]
    fn hostile_responses_to_later_requests() {
        for (how, want) in [
            (
                Misbehaviour::IgnoresRangesAfterFirst,
                "ignored the range request",
            ),
            (
                Misbehaviour::ChangesETag,
                "the file changed on the server: its ETag was \"v1\" and is now \"v2\"",
            ),
            (
                Misbehaviour::ChangesSize,
                "the file's size changed on the server",
            ),
            (Misbehaviour::CutsLaterBodies, "failed after"),
        ] {
            let server = BadServer::start(how, far_tensor_model());
            let url = server.url("m.gguf");
            let text = read_fails(read_first_tensor(&url, &url_options(5000, 0)), &url, want);
            assert!(text.contains("bytes 262144-"), "{how:?}: {text}");
            println!("{how:?}: {text}");
        }
    }

    unsafe extern "C" fn stop_after_first(_user: *mut std::ffi::c_void, done: u64, _: u64) -> bool {
        done == 0
    }

    #[test]
    fn a_cancelled_load_leaves_the_handle_working() {
        let (nginx, _tls, root) = nginx("cancel");
        let local = gguf::GgufFile::open(root.join("vocab.gguf")).unwrap();
        let f = open_url(&nginx.url("m/vocab.gguf"), None, 0).unwrap();
        // SAFETY: a live handle; the buffers outlive the calls.
        unsafe {
            let (ok, _, _) = common::read_tensors(f, 3, 2, 0, Some(stop_after_first));
            assert!(!ok);
            assert_eq!(gguf_last_error_code(), ErrorCode::Cancelled as u32);
            let want: Vec<Vec<u8>> = local
                .tensors()
                .map(|t| data_of(&local, &t).to_vec())
                .collect();
            let got: Vec<Vec<u8>> = tensors_of(f).into_iter().map(|(_, d)| d).collect();
            assert!(got == want, "tensor data differs after a cancelled load");
            gguf_close(f);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // From C: c_tests/test_url.c, with ASan and UBSan (against libgguf.so and libgguf.a) and under
    // valgrind. (tests/c_api.rs's every_c_program_is_run finds these two calls here.)

    use common::Link;

    fn compile(program: &str, link: Link) -> std::path::PathBuf {
        common::compile_c_program("url", program, link)
    }

    /// Runs `exe` (through `wrapper` words first, if any) against a fresh nginx and silent server.
    fn run_against_servers(name: &str, wrapper: &[&str], exe: &Path) -> std::process::Output {
        let (nginx, tls, _root) = nginx(name);
        let silent = bad(Misbehaviour::Silent);
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = std::process::Command::new(program);
                c.args(args).arg(exe);
                c
            }
            None => std::process::Command::new(exe),
        };
        // Under valgrind, plain HTTP only: ring's assembly (TLS's ciphers) is opaque to memcheck,
        // which then takes every byte it computes for uninitialised. The ASan runs cover HTTPS.
        let https = if wrapper.is_empty() {
            nginx.https_url("")
        } else {
            "-".to_string()
        };
        cmd.arg(nginx.url(""))
            .arg(https)
            .arg(silent.url("m.gguf"))
            .env("SSL_CERT_FILE", &tls.ca)
            .env_remove("SSL_CERT_DIR")
            .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
            .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1");
        cmd.output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    }

    fn run_c_test(program: &str) {
        for link in [Link::Shared, Link::Static] {
            let exe = compile(program, link);
            let output = run_against_servers(&format!("c-{link:?}"), &[], &exe);
            assert!(
                output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
                "{program} ({link:?} link) failed\n{}",
                common::show(&output)
            );
        }
    }

    /// The one leak report valgrind makes that is not one: Rust's standard library keeps a handle on
    /// the current thread (made when the library first starts threads of its own from the C
    /// program's main thread) in a thread-local that the main thread never tears down, and points
    /// into it past its start (hence "possibly").
    const STD_THREAD_HANDLE_SUPPRESSION: &str = "{
   rust-std-current-thread-handle
   Memcheck:Leak
   match-leak-kinds: possible
   fun:malloc
   ...
   fun:*init_current*
}
";

    fn run_valgrind(program: &str) {
        let exe = compile(program, Link::Plain);
        let supp = common::bin_dir("url").join("std-thread.supp");
        std::fs::write(&supp, STD_THREAD_HANDLE_SUPPRESSION).unwrap();
        let supp = format!("--suppressions={}", supp.display());
        let output = run_against_servers(
            "c-valgrind",
            &[
                "valgrind",
                &supp,
                "--tool=memcheck",
                "--error-exitcode=99",
                "--leak-check=full",
                "--show-leak-kinds=definite,indirect,possible",
                "--errors-for-leak-kinds=definite,indirect,possible",
                "--quiet",
            ],
            &exe,
        );
        assert!(
            output.status.success(),
            "{program} under valgrind failed\n{}",
            common::show(&output)
        );
    }

    /// python/tests/url_cases.py: `libgguf.open(url)` from Python.
    #[test]
    fn python_opens_urls() {
        let (nginx, tls, _root) = nginx("python");
        let silent = bad(Misbehaviour::Silent);
        let root = common::manifest_dir();
        let lib = common::lib_dir().join("libgguf.so");
        let out = std::process::Command::new(common::reference_python())
            .args(["-m", "unittest", "-v", "url_cases"])
            .current_dir(root.join("python/tests"))
            .env("PYTHONPATH", root.join("python"))
            .env("LIBGGUF_PATH", &lib)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("GGUF_TEST_HTTP", nginx.url(""))
            .env("GGUF_TEST_HTTPS", nginx.https_url(""))
            .env("GGUF_TEST_SILENT", silent.url("m.gguf"))
            .env("SSL_CERT_FILE", &tls.ca)
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.contains("Ran 5 tests") && stderr.contains("\nOK"),
            "{}",
            common::show(&out)
        );
    }

    #[test]
    fn c_test_url() {
        run_c_test("test_url");
    }

    #[test]
    fn valgrind_url() {
        run_valgrind("test_url");
    }
}
