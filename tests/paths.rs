//! File names are UTF-8 in the C API on every platform: a name with non-ASCII characters is
//! written (atomically, through a temporary beside it) and opened through the C API and the Rust
//! API. On Windows this goes through the wide (UTF-16) file API; on Unix the bytes are the name.

use gguf::ffi::*;
use gguf::{GgufFile, MetadataValue, Writer};
use std::ffi::{CStr, CString};
use std::path::PathBuf;

fn last_error() -> String {
    // SAFETY: the message is valid until the next call on this thread; it is copied at once.
    unsafe { CStr::from_ptr(gguf_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_non_ascii_file_name_is_written_and_opened_through_the_c_api() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("paths-ünïcødé");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("modèle-模型-🦀.gguf");
    let _ = std::fs::remove_file(&path);
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    let key = CString::new("test.answer").unwrap();

    // SAFETY: the writer and the handle are used only here, with live pointers, and freed.
    unsafe {
        let w = gguf_writer_new();
        assert!(!w.is_null());
        assert!(
            gguf_writer_set_uint32(w, key.as_ptr(), 42),
            "{}",
            last_error()
        );
        assert!(
            gguf_writer_write_file(w, c_path.as_ptr()),
            "{}",
            last_error()
        );
        gguf_writer_free(w);

        let h = gguf_open(c_path.as_ptr());
        assert!(!h.is_null(), "{}", last_error());
        let kv = gguf_get_metadata(h, key.as_ptr());
        assert!(!kv.is_null(), "{}", last_error());
        assert_eq!((*kv).value.u32, 42);
        gguf_close(h);
    }

    // The same name through the Rust API, and no temporary file left beside it.
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.get("test.answer").and_then(|v| v.as_u64()), Some(42));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["modèle-模型-🦀.gguf"]);

    // Replacing it (the writer's atomic rename over an existing file) works too.
    let mut w = Writer::new();
    w.add_metadata("test.answer", MetadataValue::U32(43))
        .unwrap();
    drop(f);
    w.write_file(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.get("test.answer").and_then(|v| v.as_u64()), Some(43));
}

/// Replacing a file that a handle still maps. On Unix the rename succeeds and the handle keeps
/// reading the old bytes. Windows cannot replace (or delete) a file while a mapping of it is
/// open: the writer says so, naming the cause, and the file stays whole as it was, with no
/// temporary file left beside it.
#[test]
fn replacing_a_file_that_a_handle_maps() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("paths-replace-mapped");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mapped.gguf");
    let mut old = Writer::new();
    old.add_metadata("test.answer", MetadataValue::U32(1))
        .unwrap();
    old.write_file(&path).unwrap();
    let old_bytes = std::fs::read(&path).unwrap();
    let mapped = GgufFile::open(&path).unwrap();

    let mut new = Writer::new();
    new.add_metadata("test.answer", MetadataValue::U32(2))
        .unwrap();
    new.add_metadata("test.more", MetadataValue::string("x".repeat(5000)))
        .unwrap();
    let result = new.write_file(&path);
    if cfg!(windows) {
        let e = result.expect_err("Windows cannot replace a mapped file");
        let text = e.to_string();
        assert_eq!(e.code(), gguf::ErrorCode::Io, "{text}");
        assert!(
            text.contains("mapped.gguf")
                && text.contains("open or mapped by another handle")
                && text.contains("close"),
            "the message names the file and the cause: {text}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            old_bytes,
            "the file was changed"
        );
        drop(mapped);
        // Once the handle is closed, the same replacement succeeds.
        new.write_file(&path).unwrap();
    } else {
        result.unwrap();
        assert_eq!(mapped.get("test.answer").and_then(|v| v.as_u64()), Some(1));
        drop(mapped);
    }
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.get("test.answer").and_then(|v| v.as_u64()), Some(2));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["mapped.gguf"], "a temporary file was left behind");
}
