//! The servers tests/url.rs reads from, all on the loopback: nginx from Debian's packages (it
//! serves ranges, TLS and redirects as the web does), started on free ports with a config of its
//! own, and a small misbehaving server for what nginx never does.

// Each test file that includes this one uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A fresh, empty directory for one test.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("url")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn nginx_binary() -> PathBuf {
    for dir in ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join("nginx");
        if p.is_file() {
            return p;
        }
    }
    panic!("tests/url.rs needs nginx (Debian: apt-get install nginx-light); .ci/run installs it");
}

/// A certificate authority of the test's own, and a certificate it signs for 127.0.0.1 and
/// localhost (openssl's command line).
pub struct Tls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn make_tls(dir: &Path) -> Tls {
    let openssl = |args: &[&str]| {
        super::common::run(Command::new("openssl").args(args).current_dir(dir));
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
            &["-subj", "/CN=libgguf test CA"],
            &["-addext", "basicConstraints=critical,CA:TRUE"],
            &["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &["-keyout", "server.key", "-out", "server.csr"],
            &["-subj", "/CN=localhost"],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    Tls {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
    }
}

/// nginx serving `root` over HTTP and HTTPS, killed when dropped.
///
/// - `/m/...`: the files under `root`, by ranges (nginx answers `Range` with 206).
/// - `/gated/...`: the same files, only with `Authorization: Bearer sekrit` (401 otherwise).
/// - `/moved/...`: a 302 to `/m/...`.
/// - `/other-host/...`: a 302 to the same file on `localhost` (another host, for the token).
///
/// Its access log has one line per request: `URI STATUS BODY_BYTES_SENT RANGE AUTHORIZATION`.
pub struct Nginx {
    child: Child,
    pub dir: PathBuf,
    pub http: u16,
    pub https: u16,
}

pub const TOKEN: &str = "sekrit";

impl Nginx {
    pub fn start(dir: &Path, root: &Path, tls: &Tls) -> Nginx {
        let mut last = String::new();
        for _ in 0..5 {
            let (http, https) = (free_port(), free_port());
            let conf = format!(
                r#"daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    log_format bytes '$request_uri $status $body_bytes_sent "$http_range" "$http_authorization"';
    access_log {dir}/access.log bytes;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    types {{ application/octet-stream gguf; }}
    default_type application/octet-stream;
    sendfile on;
    server {{
        listen 127.0.0.1:{http};
        listen 127.0.0.1:{https} ssl;
        server_name localhost 127.0.0.1;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location /m/ {{ alias {root}/; }}
        location /gated/ {{
            if ($http_authorization != "Bearer {TOKEN}") {{ return 401; }}
            alias {root}/;
        }}
        location /moved/ {{ rewrite ^/moved/(.*)$ /m/$1 redirect; }}
        location /other-host/ {{
            rewrite ^/other-host/(.*)$ $scheme://localhost:$server_port/gated/$1 redirect;
        }}
    }}
}}
"#,
                dir = dir.display(),
                root = root.display(),
                cert = tls.cert.display(),
                key = tls.key.display(),
            );
            let conf_path = dir.join("nginx.conf");
            std::fs::write(&conf_path, conf).unwrap();
            let log = dir.join("error.log");
            let _ = std::fs::remove_file(&log);
            let mut cmd = Command::new(nginx_binary());
            cmd.arg("-p")
                .arg(dir)
                .arg("-e")
                .arg(&log)
                .arg("-c")
                .arg(&conf_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: prctl is async-signal-safe; the child only asks to be killed when this
            // test process dies, so a panicking test never leaves nginx behind.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let mut child = cmd.spawn().expect("cannot start nginx");
            let started = Instant::now();
            loop {
                if TcpStream::connect(("127.0.0.1", http)).is_ok()
                    && TcpStream::connect(("127.0.0.1", https)).is_ok()
                {
                    return Nginx {
                        child,
                        dir: dir.to_path_buf(),
                        http,
                        https,
                    };
                }
                if let Some(status) = child.try_wait().unwrap() {
                    last = format!(
                        "nginx exited ({status}):\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                    break; // most likely a port taken meanwhile: try others
                }
                if started.elapsed() > Duration::from_secs(20) {
                    let _ = child.kill();
                    panic!("nginx did not listen on ports {http} and {https}");
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("cannot start nginx: {last}");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.http)
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}/{path}", self.https)
    }

    /// The access log's lines so far: (URI, status, body bytes sent, Range, Authorization).
    /// nginx logs a request after sending its response, so possibly after the client has read
    /// it: the log is read once it has not grown for 200 ms.
    pub fn log(&self) -> Vec<LogLine> {
        let read = || std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        let mut text = read();
        loop {
            thread::sleep(Duration::from_millis(200));
            let again = read();
            if again == text {
                break;
            }
            text = again;
        }
        text.lines()
            .map(|l| {
                let (head, quoted) = l.split_once(" \"").unwrap();
                let mut words = head.split(' ');
                let uri = words.next().unwrap().to_string();
                let status = words.next().unwrap().parse().unwrap();
                let bytes = words.next().unwrap().parse().unwrap();
                let mut quoted = quoted.split("\" \"");
                let range = quoted.next().unwrap().to_string();
                let auth = quoted.next().unwrap().trim_end_matches('"').to_string();
                LogLine {
                    uri,
                    status,
                    bytes,
                    range,
                    auth,
                }
            })
            .collect()
    }

    /// Forgets the requests logged so far.
    pub fn clear_log(&self) {
        std::fs::write(self.dir.join("access.log"), "").unwrap();
    }
}

#[derive(Clone, Debug)]
pub struct LogLine {
    pub uri: String,
    pub status: u32,
    pub bytes: u64,
    pub range: String,
    pub auth: String,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the small server misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Answers every request with 200 and an endless body (the whole "file").
    IgnoresRanges,
    /// 404 for everything.
    NotFound,
    /// `/a` redirects to `/b`, which redirects to `/a`.
    RedirectLoop,
    /// Answers the first bytes honestly, then closes the connection halfway through the body.
    CutsMidHeader,
    /// Answers with the range asked for, but a Content-Length and a body longer than it.
    MoreThanAskedLength,
    /// Answers with a Content-Range longer than asked (and the body to match).
    MoreThanAskedRange,
    /// Answers with no length (the body ends when the connection closes), and more than asked.
    MoreThanAskedUnframed,
    /// Reads the request and then sends nothing.
    Silent,
    /// Sends the response's headers, then stalls in the body.
    StallsInBody,
    /// Answers every range with its bytes, labelled `Content-Encoding: gzip`.
    Gzip,
    /// Answers the first request honestly, later ones labelled `Content-Encoding: gzip`.
    GzipAfterFirst,
    /// Redirects by relative references and to other schemes: `/model.gguf` to `?x=1`,
    /// `/next` to `/other.gguf?next=http://x`, `/dots/x/y` to `../../m.gguf?d`, `/js` to
    /// `javascript:alert(1)`, `/ftp` to `ftp://127.0.0.1/m.gguf`, `/nohost` to `http:///m.gguf`,
    /// `/latin1` to `/café.gguf` (UTF-8, not ASCII); `/model.gguf?x=1`,
    /// `/other.gguf?next=http://x` and `/m.gguf?d` answer honestly, anything else is a 404.
    Redirects,
    /// Sends the response's headers, then its body one byte every 250 ms.
    DripsBody,
    /// Answers the first request honestly; later, sends the body one byte every 250 ms.
    DripsLaterBodies,
    /// Sends the response's status line and headers one byte every 250 ms.
    DripsHeaders,
    /// Sends a status line, then header lines without end.
    EndlessHeaders,
    /// A 206 with the range asked for and a Content-Length of 2^63.
    HugeContentLength,
    /// A 206 whose Content-Range ends at 2^64 - 1 (`bytes 0-18446744073709551615/5`).
    ContentRangeAtTheTop,
    /// Answers the first request honestly, later ones with 200 and the whole file.
    IgnoresRangesAfterFirst,
    /// A different ETag on every response.
    ChangesETag,
    /// Says the file is one byte longer after the first response.
    ChangesSize,
    /// Answers the first request honestly; later, each response ends after half its body.
    CutsLaterBodies,
}

/// A server on the loopback misbehaving one way, over `file`'s bytes. Counts the body bytes it
/// sent. Stops with the test process (its thread blocks in `accept`).
pub struct BadServer {
    pub port: u16,
    pub sent: Arc<AtomicU64>,
    pub requests: Arc<Mutex<Vec<String>>>,
    /// Each request's `Accept-Encoding` header, or "" without one.
    pub accept_encodings: Arc<Mutex<Vec<String>>>,
}

impl BadServer {
    pub fn start(how: Misbehaviour, file: Vec<u8>) -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accept_encodings = Arc::new(Mutex::new(Vec::new()));
        let file = Arc::new(file);
        {
            let (sent, requests, accept) =
                (sent.clone(), requests.clone(), accept_encodings.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let log = Log {
                        sent: sent.clone(),
                        requests: requests.clone(),
                        accept_encodings: accept.clone(),
                    };
                    let file = file.clone();
                    thread::spawn(move || {
                        let _ = serve(stream, how, &file, &log);
                    });
                }
            });
        }
        BadServer {
            port,
            sent,
            requests,
            accept_encodings,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

/// What a server records.
struct Log {
    sent: Arc<AtomicU64>,
    requests: Arc<Mutex<Vec<String>>>,
    accept_encodings: Arc<Mutex<Vec<String>>>,
}

/// What a server reads of a request.
struct Request {
    path: String,
    /// `Range: bytes=A-B`.
    range: Option<(u64, u64)>,
    /// `Accept-Encoding`, or "" without one.
    accept: String,
}

/// The request's path, `Range: bytes=A-B` and `Accept-Encoding`, read up to its blank line.
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let path = line.split(' ').nth(1).unwrap_or("/").to_string();
    let mut range = None;
    let mut accept = String::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("range: bytes=") {
            let (a, b) = v.trim().split_once('-').unwrap();
            range = Some((a.parse().unwrap(), b.parse().unwrap()));
        }
        if let Some(v) = lower.strip_prefix("accept-encoding:") {
            accept = v.trim().to_string();
        }
    }
    Ok(Request {
        path,
        range,
        accept,
    })
}

/// Writes `bytes` one at a time, `every` apart.
fn drip(out: &mut TcpStream, bytes: &[u8], every: Duration) -> std::io::Result<()> {
    for b in bytes {
        out.write_all(&[*b])?;
        out.flush()?;
        thread::sleep(every);
    }
    Ok(())
}

fn serve(stream: TcpStream, how: Misbehaviour, file: &[u8], log: &Log) -> std::io::Result<()> {
    let (sent, requests) = (&*log.sent, &*log.requests);
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let Request {
            path,
            range,
            accept,
        } = read_request(&mut reader)?;
        let first = {
            let mut requests = requests.lock().unwrap();
            requests.push(format!("{path} {range:?}"));
            requests.len() == 1
        };
        log.accept_encodings.lock().unwrap().push(accept);
        let total = file.len() as u64;
        let (a, b) = range.unwrap_or((0, total - 1));
        let b = b.min(total - 1);
        let body = &file[a as usize..=b as usize];
        let partial = |out: &mut TcpStream, length: u64, last: u64| {
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{last}/{total}\r\n\
                 Content-Length: {length}\r\n\r\n"
            )
        };
        match how {
            Misbehaviour::IgnoresRanges => {
                write!(out, "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n")?;
                let chunk = vec![0u8; 65536];
                loop {
                    out.write_all(&chunk)?;
                    sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            }
            Misbehaviour::NotFound => {
                write!(
                    out,
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
                )?;
            }
            Misbehaviour::RedirectLoop => {
                let next = if path == "/a" { "/b" } else { "/a" };
                write!(
                    out,
                    "HTTP/1.1 302 Found\r\nLocation: {next}\r\nContent-Length: 0\r\n\r\n"
                )?;
            }
            Misbehaviour::CutsMidHeader => {
                partial(&mut out, body.len() as u64, b)?;
                out.write_all(&body[..body.len() / 2])?;
                sent.fetch_add(body.len() as u64 / 2, Ordering::Relaxed);
                out.flush()?;
                out.shutdown(Shutdown::Both)?;
                return Ok(());
            }
            Misbehaviour::MoreThanAskedLength => {
                partial(&mut out, body.len() as u64 + 100, b)?;
                out.write_all(body)?;
                out.write_all(&[0u8; 100])?;
            }
            Misbehaviour::MoreThanAskedRange => {
                let last = (b + 100).min(total - 1);
                partial(&mut out, last - a + 1, last)?;
                out.write_all(&file[a as usize..=last as usize])?;
            }
            Misbehaviour::MoreThanAskedUnframed => {
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n\
                     Connection: close\r\n\r\n"
                )?;
                out.write_all(body)?;
                out.write_all(b"trailing bytes nobody asked for")?;
                out.shutdown(Shutdown::Both)?;
                return Ok(());
            }
            Misbehaviour::Silent => {
                thread::sleep(Duration::from_secs(30));
                return Ok(());
            }
            Misbehaviour::StallsInBody => {
                partial(&mut out, body.len() as u64, b)?;
                out.write_all(&body[..body.len().min(10)])?;
                out.flush()?;
                thread::sleep(Duration::from_secs(30));
                return Ok(());
            }
            Misbehaviour::Gzip | Misbehaviour::GzipAfterFirst => {
                let gzip = how == Misbehaviour::Gzip || !first;
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n\
                     Content-Length: {}\r\n{}\r\n",
                    body.len(),
                    if gzip {
                        "Content-Encoding: gzip\r\n"
                    } else {
                        ""
                    }
                )?;
                out.write_all(body)?;
            }
            Misbehaviour::Redirects => {
                let location = match path.as_str() {
                    "/model.gguf" => Some("?x=1"),
                    "/next" => Some("/other.gguf?next=http://x"),
                    "/dots/x/y" => Some("../../m.gguf?d"),
                    "/js" => Some("javascript:alert(1)"),
                    "/ftp" => Some("ftp://127.0.0.1/m.gguf"),
                    "/nohost" => Some("http:///m.gguf"),
                    "/latin1" => Some("/caf\u{e9}.gguf"),
                    _ => None,
                };
                match location {
                    Some(l) => write!(
                        out,
                        "HTTP/1.1 302 Found\r\nLocation: {l}\r\nContent-Length: 0\r\n\r\n"
                    )?,
                    None if ["/model.gguf?x=1", "/other.gguf?next=http://x", "/m.gguf?d"]
                        .contains(&path.as_str()) =>
                    {
                        partial(&mut out, body.len() as u64, b)?;
                        out.write_all(body)?;
                    }
                    None => write!(
                        out,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
                    )?,
                }
            }
            Misbehaviour::DripsBody | Misbehaviour::DripsLaterBodies => {
                partial(&mut out, body.len() as u64, b)?;
                if how == Misbehaviour::DripsLaterBodies && first {
                    out.write_all(body)?;
                } else {
                    drip(&mut out, body, Duration::from_millis(250))?;
                }
            }
            Misbehaviour::DripsHeaders => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n\
                     X-Padding: {}\r\nContent-Length: {}\r\n\r\n",
                    "p".repeat(100),
                    body.len()
                );
                drip(&mut out, head.as_bytes(), Duration::from_millis(250))?;
                out.write_all(body)?;
            }
            Misbehaviour::EndlessHeaders => {
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n"
                )?;
                let line = format!("X-More: {}\r\n", "m".repeat(1000));
                loop {
                    out.write_all(line.as_bytes())?;
                    sent.fetch_add(line.len() as u64, Ordering::Relaxed);
                }
            }
            Misbehaviour::HugeContentLength => {
                partial(&mut out, 1 << 63, b)?;
                out.write_all(body)?;
            }
            Misbehaviour::ContentRangeAtTheTop => {
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \
                     {a}-18446744073709551615/{total}\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )?;
                out.write_all(body)?;
            }
            Misbehaviour::IgnoresRangesAfterFirst => {
                if first {
                    partial(&mut out, body.len() as u64, b)?;
                    out.write_all(body)?;
                } else {
                    write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n")?;
                    out.write_all(file)?;
                }
            }
            Misbehaviour::ChangesETag => {
                let n = requests.lock().unwrap().len();
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n\
                     Content-Length: {}\r\nETag: \"v{n}\"\r\n\r\n",
                    body.len()
                )?;
                out.write_all(body)?;
            }
            Misbehaviour::ChangesSize => {
                let total = if first { total } else { total + 1 };
                write!(
                    out,
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{total}\r\n\
                     Content-Length: {}\r\n\r\n",
                    body.len()
                )?;
                out.write_all(body)?;
            }
            Misbehaviour::CutsLaterBodies => {
                partial(&mut out, body.len() as u64, b)?;
                if first {
                    out.write_all(body)?;
                } else {
                    out.write_all(&body[..body.len() / 2])?;
                    out.flush()?;
                    out.shutdown(Shutdown::Both)?;
                    return Ok(());
                }
            }
        }
        out.flush()?;
        // Keep-alive: the loop reads the next request on this connection.
    }
}
