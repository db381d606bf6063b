//! What the library does with what it does not control, at its edges:
//!
//! * names from a file (keys, tensor names) and paths from the caller reach messages escaped, so
//!   a file cannot clear the screen, retitle the terminal or forge a line of output through
//!   `gguf_last_error()` or `Display`;
//! * opening anything but a regular file (a FIFO without a writer, a directory, a character
//!   device, a `/proc` file that reports size 0) fails at once with a message saying what it is;
//! * a map that fails for want of mappings or address space says so (in a child process run
//!   under an address space limit, `ulimit -v`).

mod common;

use common::last_error;
use common::raw::{le_u64, with_data};
use gguf::ffi::*;
use gguf::source::Source;
use gguf::{DataType, ErrorCode, GgufFile, MappedFile, MetadataValue, Model, OpenOptions, Writer};
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("boundary")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A name that would act on a terminal if printed raw: clear the screen, set the window title,
/// return to the start of the line and print a forged verdict on a line of its own, a C1 CSI,
/// a right-to-left override, bytes that are not UTF-8, and a literal backslash-x.
const HOSTILE: &[u8] =
    b"\x1b[2J\x1b]0;owned\x07\r\ngguf: all tensors OK\n\x9b\xc2\x9b\xe2\x80\xae\xff\\x41";

/// How [`HOSTILE`] must appear in a message.
const HOSTILE_SHOWN: &str = "\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0agguf: all tensors OK\\x0a\\x9b\
                             \\xc2\\x9b\\xe2\\x80\\xae\\xff\\\\x41";

/// Nothing in `text` that a terminal acts on or that hides or reorders text.
fn assert_printable(text: &str) {
    for c in text.chars() {
        let hidden = matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}' | '\u{feff}');
        assert!(!c.is_control() && !hidden, "{c:?} in a message: {text:?}");
    }
}

fn bytes_kv(key: &[u8], ty: u32, value: &[u8]) -> Vec<u8> {
    let mut b = le_u64(key.len() as u64).to_vec();
    b.extend_from_slice(key);
    b.extend_from_slice(&ty.to_le_bytes());
    b.extend_from_slice(value);
    b
}

fn bytes_tensor(name: &[u8], offset: u64) -> Vec<u8> {
    let mut b = le_u64(name.len() as u64).to_vec();
    b.extend_from_slice(name);
    b.extend_from_slice(&1u32.to_le_bytes()); // one dimension
    b.extend_from_slice(&le_u64(4));
    b.extend_from_slice(&0u32.to_le_bytes()); // F32
    b.extend_from_slice(&le_u64(offset));
    b
}

fn header(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut f = b"GGUF".to_vec();
    f.extend_from_slice(&3u32.to_le_bytes());
    f.extend_from_slice(&le_u64(tensors));
    f.extend_from_slice(&le_u64(kvs));
    f
}

fn refuse(bytes: &[u8]) -> gguf::Error {
    match GgufFile::from_bytes(bytes) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

#[test]
fn names_from_the_file_are_escaped_in_messages() {
    // A key twice.
    let kv = bytes_kv(HOSTILE, 4, &7u32.to_le_bytes());
    let e = refuse(&[header(0, 2), kv.clone(), kv].concat());
    assert_eq!(e.code(), ErrorCode::DuplicateKey);
    assert_eq!(
        e.message(),
        format!("key '{HOSTILE_SHOWN}' appears twice (first at offset 24)")
    );
    assert_printable(&e.to_string());

    // A tensor twice; a tensor whose data lies past the end.
    let t = bytes_tensor(HOSTILE, 0);
    let e = refuse(&with_data([header(2, 0), t.clone(), t].concat(), 16));
    assert_eq!(e.code(), ErrorCode::DuplicateTensor);
    assert!(e.message().contains(HOSTILE_SHOWN), "{e}");
    assert_printable(&e.to_string());
    let e = refuse(&with_data(
        [header(1, 0), bytes_tensor(HOSTILE, 0)].concat(),
        8,
    ));
    assert_eq!(e.code(), ErrorCode::DataOutOfBounds);
    assert!(e.message().contains(HOSTILE_SHOWN), "{e}");
    assert_printable(&e.to_string());

    // A value that breaks a rule, under a hostile key: the message names the key, escaped.
    let e = refuse(&[header(0, 1), bytes_kv(HOSTILE, 7, &[2])].concat());
    assert_eq!(e.code(), ErrorCode::BadBool);
    assert!(e.message().contains(HOSTILE_SHOWN), "{e}");
    assert_printable(&e.to_string());
}

#[test]
fn lookups_through_the_c_api_record_escaped_names() {
    let mut w = Writer::new();
    w.add_metadata(HOSTILE, MetadataValue::U32(1)).unwrap();
    w.add_tensor(HOSTILE, &[4], DataType::F32, vec![0; 16])
        .unwrap();
    let bytes = w.to_bytes().unwrap();
    // The lookups take NUL-terminated names: everything of HOSTILE but a NUL is passed.
    let missing = CString::new([HOSTILE, b"?"].concat()).unwrap();
    // SAFETY: `bytes` outlives the handle; every pointer passed is valid.
    unsafe {
        let f = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
        assert!(!f.is_null(), "{}", last_error());
        assert!(gguf_get_metadata(f, missing.as_ptr()).is_null());
        let msg = last_error();
        assert_eq!(
            msg,
            format!("gguf: <memory>: no metadata key '{HOSTILE_SHOWN}?'")
        );
        assert!(gguf_get_tensor(f, missing.as_ptr()).is_null());
        let msg = last_error();
        assert!(msg.contains(&format!("'{HOSTILE_SHOWN}?'")), "{msg}");
        assert_printable(&msg);
        assert!(gguf_get_float_array(f, missing.as_ptr(), std::ptr::null_mut()).is_null());
        assert_printable(&last_error());
        gguf_close(f);
    }
}

#[test]
fn long_names_are_cut_at_a_character_boundary() {
    // 79 ASCII bytes, then a 3-byte character across the 80-byte cut, then more.
    let name = [&[b'a'; 79][..], "€".as_bytes(), b"tail"].concat();
    let kv = bytes_kv(&name, 4, &7u32.to_le_bytes());
    let e = refuse(&[header(0, 2), kv.clone(), kv].concat());
    assert_eq!(
        e.message(),
        format!(
            "key '{}...' appears twice (first at offset 24)",
            "a".repeat(79)
        )
    );
}

#[test]
fn paths_are_shown_with_their_exact_bytes_escaped() {
    let d = dir("paths");
    let name = OsStr::from_bytes(b"caf\xe9 \x1b]0;x\x07\\.gguf");
    let path = d.join(name);
    let shown = format!("{}/caf\\xe9 \\x1b]0;x\\x07\\\\.gguf", d.display());

    // Missing.
    let Err(e) = MappedFile::open(&path) else {
        panic!("opened")
    };
    assert_eq!(e.code(), ErrorCode::Io);
    assert_eq!(e.path(), Some(shown.as_str()));
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert!(unsafe { gguf_open(c_path.as_ptr()) }.is_null());
    let msg = last_error();
    assert!(
        msg.starts_with(&format!("gguf: {shown}: cannot open")),
        "{msg}"
    );
    assert_printable(&msg);

    // Present but broken: the parse error names it the same way.
    std::fs::write(&path, b"GGUF\x03\0\0\0").unwrap();
    let Err(e) = Model::open(&path, OpenOptions::default()) else {
        panic!("opened")
    };
    assert_eq!(e.code(), ErrorCode::Truncated);
    assert_eq!(e.path(), Some(shown.as_str()));

    // Valid: the handle's name for messages is escaped, its shard path exact.
    Writer::new().write_file(&path).unwrap();
    // SAFETY: a NUL-terminated path; the handle is closed below.
    unsafe {
        let f = gguf_open(c_path.as_ptr());
        assert!(!f.is_null(), "{}", last_error());
        let shard = &*gguf_get_shard(f, 0);
        assert_eq!(
            std::ffi::CStr::from_ptr(shard.path).to_bytes(),
            path.as_os_str().as_bytes()
        );
        assert!(gguf_get_metadata(f, c"nope".as_ptr()).is_null());
        assert_eq!(
            last_error(),
            format!("gguf: {shown}: no metadata key 'nope'")
        );
        gguf_close(f);
    }
}

/// Text that reaches a message some other way than through the escaping of names and paths (a
/// path the writer shows as it was given, an OS message) is still shown escaped.
#[test]
fn every_message_is_printable() {
    let d = dir("printable");
    let path = d.join("no such dir \x1b]0;x\x07\r\n").join("out.gguf");
    let e = Writer::new().write_file(&path).unwrap_err();
    let text = e.to_string();
    assert_printable(&text);
    assert!(text.contains("\\x1b]0;x\\x07\\x0d\\x0a"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Files that are not regular files.

/// Runs `f` on another thread and returns its result, failing if it takes 20 s (it would block
/// forever); `unblock` is run first in that case, to free the thread.
fn promptly<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
    unblock: impl FnOnce(),
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(value) => value,
        Err(_) => {
            unblock();
            panic!("still blocked after 20 s");
        }
    }
}

/// Opening `path` fails at once, through the Rust and the C API, with an I/O error whose
/// message contains `what` and names the path.
fn refused_promptly(path: &Path, what: &str, unblock: impl Fn()) {
    let p = path.to_path_buf();
    let result = promptly(
        move || Model::open(&p, OpenOptions::default()).err(),
        &unblock,
    );
    let e = result.unwrap_or_else(|| panic!("{} opened", path.display()));
    assert_eq!(e.code(), ErrorCode::Io, "{e}");
    assert_eq!(e.path(), path.to_str(), "{e}");
    assert!(e.message().contains(what), "{e}");

    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    let (failed, code, msg) = promptly(
        move || {
            // SAFETY: a NUL-terminated path; a handle, if one came back, is closed.
            let f = unsafe { gguf_open_ex(c_path.as_ptr(), OpenFlag::Read as u32) };
            let failed = f.is_null();
            // SAFETY: NULL or a live handle.
            unsafe { gguf_close(f) };
            (failed, gguf_last_error_code(), last_error())
        },
        &unblock,
    );
    assert!(failed, "{} opened through the C API", path.display());
    assert_eq!(code, ErrorCode::Io as u32, "{msg}");
    assert!(
        msg.contains(what) && msg.contains(path.to_str().unwrap()),
        "{msg}"
    );
}

#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let fifo = dir("fifo").join("model.gguf");
    let c_fifo = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
    // A reader stuck in open(2) is released by a writer opening the other end.
    let unblock = || {
        // SAFETY: a NUL-terminated path; the descriptor is closed at once.
        unsafe {
            let fd = libc::open(c_fifo.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
            if fd >= 0 {
                libc::close(fd);
            }
        }
    };
    refused_promptly(&fifo, "a FIFO (named pipe)", unblock);
}

#[test]
fn directories_and_devices_are_refused() {
    let d = dir("not_files");
    refused_promptly(&d, "cannot open a directory", || {});
    refused_promptly(
        Path::new("/dev/null"),
        "cannot open a character device",
        || {},
    );
    refused_promptly(
        Path::new("/dev/zero"),
        "cannot open a character device",
        || {},
    );
    // A link to a device is the device.
    let link = d.join("link.gguf");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    refused_promptly(&link, "a character device", || {});
}

#[test]
fn a_proc_file_reporting_size_zero_is_not_called_empty() {
    let path = Path::new("/proc/self/status");
    assert_eq!(
        std::fs::metadata(path).unwrap().len(),
        0,
        "procfs reports 0"
    );
    refused_promptly(path, "the file reports size 0 but has contents", || {});

    // A truly empty file is still a truncated GGUF file.
    let empty = dir("empty").join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    let Err(e) = MappedFile::open(&empty) else {
        panic!("opened")
    };
    assert_eq!(e.code(), ErrorCode::Truncated);
    assert!(e.message().contains("an empty file"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Running out of address space.

const RLIMIT_CHILD: &str = "GGUF_TEST_RLIMIT_CHILD";
const RLIMIT_MARK: &str = "rlimit child refused the map: ";

/// This process's virtual size in bytes (`VmSize` in `/proc/self/status`).
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib * 1024
}

/// The test runs itself again in a child process (this test alone, on one thread), which
/// limits its own address space to 256 MiB above what it uses and maps a 4 GiB file: the map
/// fails with ENOMEM, and the message must name the address space limit and
/// `vm.max_map_count` rather than only "Cannot allocate memory".
#[test]
fn a_map_failing_for_address_space_names_the_limits() {
    let big = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("boundary_rlimit_4g.gguf");
    if std::env::var_os(RLIMIT_CHILD).is_none() {
        // Sparse: no disk space is used.
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(4 << 30).unwrap();
        drop(f);
        // A 32-bit process cannot map 4 GiB whatever its limits: it reads such a file by
        // position instead, so what is refused is the content (zeros: no magic).
        if usize::BITS == 32 {
            let Err(e) = Model::<Source>::open(&big, OpenOptions::default()) else {
                panic!("a file of zeros was accepted")
            };
            let _ = std::fs::remove_file(&big);
            assert_eq!(e.code(), ErrorCode::BadMagic, "{e}");
            return;
        }
        let out = common::this_test_binary()
            .args([
                "--exact",
                &common::test_path(
                    module_path!(),
                    "a_map_failing_for_address_space_names_the_limits",
                ),
                "--test-threads=1",
                "--nocapture",
            ])
            .env(RLIMIT_CHILD, "1")
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&big);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", common::show(&out));
        assert!(stdout.contains(RLIMIT_MARK), "{}", common::show(&out));
        return;
    }
    let limit = vm_size() + (256 << 20);
    let rlimit = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads one rlimit; this process is the child, running this test alone.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rlimit) }, 0);
    let Err(e) = Model::<Source>::open(&big, OpenOptions::default()) else {
        panic!("a 4 GiB file was mapped under a {limit}-byte address space limit")
    };
    let msg = e.to_string();
    println!("{RLIMIT_MARK}{msg}");
    assert_eq!(e.code(), ErrorCode::Io, "{msg}");
    assert!(msg.contains("cannot map the file"), "{msg}");
    assert!(msg.contains("vm.max_map_count"), "{msg}");
    assert!(
        msg.contains(&format!("address space (ulimit -v is {limit} bytes)")),
        "{msg}"
    );
    // The same through the READ flag, whose private copy is an anonymous map.
    let read = OpenOptions {
        read: true,
        ..Default::default()
    };
    let Err(e) = Model::<Source>::open(&big, read) else {
        panic!("a 4 GiB file was read under a {limit}-byte address space limit")
    };
    assert!(e.to_string().contains("ulimit -v"), "{e}");
}
