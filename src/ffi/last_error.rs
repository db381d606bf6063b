//! The thread-local record of why the last failing call on this thread failed.

use crate::error::{Error, ErrorCode};
use std::cell::RefCell;
use std::ffi::{c_char, CString};

struct LastError {
    code: ErrorCode,
    offset: i64,
    message: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError {
        code: ErrorCode::None,
        offset: -1,
        message: CString::default(),
    });
}

/// Records `error` as this thread's last error.
pub(crate) fn record(error: &Error) {
    // `Display` escapes every control character, NUL included (`\x00`), so the text converts
    // whole; `unwrap_or_default` is never reached.
    let message = CString::new(error.to_string()).unwrap_or_default();
    let offset = error
        .offset()
        .and_then(|o| i64::try_from(o).ok())
        .unwrap_or(-1);
    // `try_with`: during thread teardown the slot may be gone; the record is then dropped.
    let _ = LAST_ERROR.try_with(|slot| {
        *slot.borrow_mut() = LastError {
            code: error.code(),
            offset,
            message,
        }
    });
}

/// The code of the last error recorded on the calling thread (a `GGUFErrorCode`), or
/// `GGUF_ERROR_CODE_NONE` if none has been recorded since the thread started or
/// `gguf_clear_error` was called. Successful calls leave the record unchanged, so check it only
/// after a call reports failure.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_last_error_code() -> u32 {
    LAST_ERROR
        .try_with(|slot| slot.borrow().code as u32)
        .unwrap_or(ErrorCode::None as u32)
}

/// The message of the last error recorded on the calling thread: `gguf: FILE: offset N: what was
/// expected, what was found` (the file and offset parts when they apply). Never NULL: "" when
/// no error is recorded. The string belongs to the library and to the calling thread: it is
/// valid only on that thread, until its next failing call, `gguf_clear_error`, or the thread's
/// exit; copy it to keep it or to pass it to another thread. It is safe to print: names from the
/// file and path bytes appear escaped (control characters, invisible or direction-changing
/// characters and bytes that are not UTF-8 as `\xNN`, a backslash as `\\`), so a file cannot
/// put terminal escape sequences or a forged line into it.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().message.as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The byte offset in the file that the last error on the calling thread concerns, or -1 when
/// it concerns no particular byte (an argument, a missing key) or no error is recorded.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_last_error_offset() -> i64 {
    LAST_ERROR
        .try_with(|slot| slot.borrow().offset)
        .unwrap_or(-1)
}

/// Clears the calling thread's error record.
#[unsafe(no_mangle)]
pub extern "C" fn gguf_clear_error() {
    let _ = LAST_ERROR.try_with(|slot| {
        *slot.borrow_mut() = LastError {
            code: ErrorCode::None,
            offset: -1,
            message: CString::default(),
        }
    });
}
