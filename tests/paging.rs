//! Open flags and paging advice on every platform: populate and lock succeed on a small file
//! (`MAP_POPULATE`/`mlock` on Unix, `PrefetchVirtualMemory`/`VirtualLock` on Windows), and each
//! advice either works or reports GGUF_ERROR_CODE_UNSUPPORTED naming the platform's limit (never
//! an I/O error or a crash). Lent memory takes no advice anywhere.

use gguf::ffi::*;
use gguf::{DataType, ErrorCode, Paging, Writer};
use std::ffi::{CStr, CString};
use std::path::PathBuf;

fn last_error() -> String {
    // SAFETY: the message is valid until the next call on this thread; it is copied at once.
    unsafe { CStr::from_ptr(gguf_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn model(name: &str) -> (PathBuf, Vec<u8>) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let mut w = Writer::new();
    w.add_tensor("t", &[4096], DataType::I8, vec![7; 4096])
        .unwrap();
    let bytes = w.to_bytes().unwrap();
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

/// Whether `advice` is expected to work on this platform for a mapped file.
fn supported(advice: Paging) -> bool {
    if cfg!(windows) {
        advice == Paging::WillNeed
    } else {
        cfg!(unix)
    }
}

/// The handle `h` takes WILL_NEED advice where the platform supports it.
///
/// # Safety
/// `h` is an open handle.
unsafe fn assert_will_need_applies(h: GGUFFile) {
    // SAFETY: the caller's contract.
    let ok = unsafe { gguf_advise_data(h, Paging::WillNeed as u32) };
    assert_eq!(ok, supported(Paging::WillNeed), "{}", last_error());
}

#[test]
fn open_flags_and_advice_work_or_report_unsupported() {
    let (path, _) = model("paging-flags.gguf");
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    let name = CString::new("t").unwrap();
    let flags = OpenFlag::Populate as u32 | OpenFlag::Lock as u32;
    // SAFETY: the handle is used only here, with pointers it returned, and closed.
    unsafe {
        let h = gguf_open_ex(c_path.as_ptr(), flags);
        assert!(!h.is_null(), "populate and lock: {}", last_error());
        let t = gguf_get_tensor(h, name.as_ptr());
        assert!(!t.is_null());
        assert_eq!(*gguf_tensor_data(h, t).cast::<u8>(), 7);
        gguf_close(h);

        // Advice on a plain map (Linux refuses DONTNEED on locked pages).
        let h = gguf_open(c_path.as_ptr());
        assert!(!h.is_null(), "{}", last_error());
        let t = gguf_get_tensor(h, name.as_ptr());
        for advice in [
            Paging::Normal,
            Paging::WillNeed,
            Paging::DontNeed,
            Paging::Sequential,
            Paging::Random,
        ] {
            let ok = gguf_advise_tensor(h, t, advice as u32);
            if supported(advice) {
                assert!(ok, "{advice:?}: {}", last_error());
            } else {
                assert!(!ok, "{advice:?} was accepted");
                assert_eq!(gguf_last_error_code(), ErrorCode::Unsupported as u32);
                assert!(
                    last_error().contains(&format!("{advice:?}")),
                    "{}",
                    last_error()
                );
            }
        }
        assert_will_need_applies(h);
        gguf_close(h);
    }
}

#[test]
fn lent_memory_takes_no_advice_on_any_platform() {
    let (_, bytes) = model("paging-lent.gguf");
    // SAFETY: `bytes` outlives the handle, closed below.
    unsafe {
        let h = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
        assert!(!h.is_null(), "{}", last_error());
        assert!(!gguf_advise_data(h, Paging::WillNeed as u32));
        assert_eq!(gguf_last_error_code(), ErrorCode::Unsupported as u32);
        gguf_close(h);
    }
}

/// DONT_NEED on a locked mapping: Linux refuses to drop locked pages (madvise's EINVAL); the
/// message says which advice failed and that the pages are locked, not a bare "Invalid
/// argument". (Windows has no DONT_NEED at all: UNSUPPORTED, as above.)
#[test]
fn dont_need_on_locked_pages_says_they_are_locked() {
    let (path, _) = model("paging-locked.gguf");
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: the handle is used only here, with pointers it returned, and closed.
    unsafe {
        let h = gguf_open_ex(c_path.as_ptr(), OpenFlag::Lock as u32);
        assert!(!h.is_null(), "lock: {}", last_error());
        let ok = gguf_advise_data(h, Paging::DontNeed as u32);
        let (code, text) = (gguf_last_error_code(), last_error());
        if cfg!(any(target_os = "linux", target_os = "android")) {
            assert!(!ok, "DONT_NEED on locked pages was accepted");
            assert_eq!(code, ErrorCode::Io as u32, "{text}");
            assert!(
                text.contains("DONT_NEED") && text.contains("locked"),
                "the message names the advice and the cause: {text}"
            );
        } else if cfg!(windows) {
            assert!(!ok);
            assert_eq!(code, ErrorCode::Unsupported as u32, "{text}");
        }
        // The handle still works, and other advice still applies.
        assert_will_need_applies(h);
        gguf_close(h);
    }
}
