//! What every exported function does at the boundary: catch panics, turn errors into the
//! documented failure value plus a recorded error, and check pointer arguments.

use super::last_error::record;
use crate::error::{Error, ErrorCode, Result};
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

// Which threads are inside a C API call is kept with the platform's threads, which mark the
// threads they start for a call as inside it too.
pub(crate) use crate::platform::{inside, outside, quietly};

/// Installs, once per process, a panic hook that prints nothing for a panic inside the C API
/// (the boundary catches it and records it as an error: nothing may print) and hands every
/// other panic to the hook that was there before (a Rust host's own panics print as before).
/// Not installed from a thread that is panicking (std forbids changing the hook there): the
/// next call installs it.
fn install_quiet_hook() {
    static HOOK: Once = Once::new();
    if HOOK.is_completed() || std::thread::panicking() {
        return;
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !inside() {
                previous(info);
            }
        }));
    });
}

/// Runs `body`; on an error or a panic, records why and returns `fail`. A panic prints nothing
/// (see [`install_quiet_hook`]).
pub(crate) fn guard<T>(fail: T, body: impl FnOnce() -> Result<T>) -> T {
    install_quiet_hook();
    match quietly(true, || catch_unwind(AssertUnwindSafe(body))) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            record(&error);
            fail
        }
        Err(_) => {
            record(&Error::msg(
                ErrorCode::Internal,
                "internal error (a panic was caught at the C boundary; please report it)",
            ));
            fail
        }
    }
}

/// Refuses caller buffers (`(address, length)`, in argument order, named `what[k]`) that share a
/// byte or run past the end of the address space; empty ones share nothing.
pub(crate) fn disjoint(spans: impl Iterator<Item = (usize, usize)>, what: &str) -> Result<()> {
    let mut spans: Vec<(usize, usize, usize)> = spans
        .enumerate()
        .filter(|(_, (_, len))| *len > 0)
        .map(|(k, (at, len))| (at, len, k))
        .collect();
    spans.sort_unstable();
    for (at, len, k) in &spans {
        if at.checked_add(*len).is_none() {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("{what}[{k}] ({len} bytes at {at:#x}) runs past the end of memory"),
            ));
        }
    }
    for pair in spans.windows(2) {
        let ((a, a_len, j), (b, _, k)) = (pair[0], pair[1]);
        if a + a_len > b {
            let (first, second) = (j.min(k), j.max(k));
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{what}[{first}] and {what}[{second}] overlap: buffers must not share a byte"
                ),
            ));
        }
    }
    Ok(())
}

/// A handle type of the C API: an opaque struct the library moves to the heap and hands to C as
/// `*mut Self` ([`to_boxed_mut_ptr`]), borrows back on each call ([`try_from`],
/// [`try_from_mut`]) and frees when C gives it back ([`free_box`]). One implementation of that
/// round trip serves every handle (file, writer, tokenizer, digester, chat template).
pub(crate) trait Castable: Sized {
    /// The argument a NULL handle is reported as ("file", "writer", "tok").
    const ARG: &'static str;
}

/// Moves `value` to the heap and hands it to C, which owns it until it frees it with
/// [`free_box`].
pub(crate) fn to_boxed_mut_ptr<H: Castable>(value: H) -> *mut H {
    Box::into_raw(Box::new(value))
}

/// Frees a handle C gives back; NULL is a no-op.
///
/// # Safety
/// `ptr` is NULL or came from [`to_boxed_mut_ptr`], is freed once, and nothing uses it during or
/// after the call.
pub(crate) unsafe fn free_box<H: Castable>(ptr: *mut H) {
    if !ptr.is_null() {
        // SAFETY: a non-NULL `ptr` came from `Box::into_raw` (to_boxed_mut_ptr) and is freed
        // once, with no other use (the caller's contract).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// The handle behind a C argument, for shared use; an error naming [`Castable::ARG`] for NULL.
///
/// # Safety
/// `ptr` is NULL or a live handle from [`to_boxed_mut_ptr`] that nothing frees or mutates
/// during `'a`.
pub(crate) unsafe fn try_from<'a, H: Castable>(ptr: *const H) -> Result<&'a H> {
    // SAFETY: NULL or a live Box's pointer (the caller's contract), only read during 'a.
    unsafe { ptr.as_ref() }.ok_or_else(|| null(H::ARG))
}

/// The handle behind a C argument, for exclusive use; an error naming [`Castable::ARG`] for
/// NULL.
///
/// # Safety
/// `ptr` is NULL or a live handle from [`to_boxed_mut_ptr`] that no other call uses during `'a`
/// (one thread at a time).
pub(crate) unsafe fn try_from_mut<'a, H: Castable>(ptr: *mut H) -> Result<&'a mut H> {
    // SAFETY: NULL or a live Box's pointer, used by this call alone during 'a (the caller's
    // contract).
    unsafe { ptr.as_mut() }.ok_or_else(|| null(H::ARG))
}

/// Refuses flag bits outside `known`: GGUF_ERROR_CODE_INVALID_ARGUMENT, "unknown `what` 0x..."
/// naming the unknown bits (`what`: "open flags", "flags").
pub(crate) fn known_flags(flags: u32, known: u32, what: &str) -> Result<()> {
    let unknown = flags & !known;
    if unknown != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!("unknown {what} {unknown:#x}"),
        ));
    }
    Ok(())
}

/// A size, count or index from a C argument (`u64`) as a `usize`: `None` where it passes what
/// this platform's `usize` holds (a 32-bit target). Every such argument is converted here; each
/// caller says what the refusal is.
pub(crate) fn to_usize(n: u64) -> Option<usize> {
    usize::try_from(n).ok()
}

/// [`to_usize`], refusing a larger `n` as GGUF_ERROR_CODE_INVALID_ARGUMENT: "`what` is `n`, more
/// than this platform's memory".
pub(crate) fn memory_count(n: u64, what: &str) -> Result<usize> {
    to_usize(n).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{what} is {n}, more than this platform's memory"),
        )
    })
}

/// The error for a NULL pointer argument.
pub(crate) fn null(what: &str) -> Error {
    Error::msg(ErrorCode::NullArgument, what)
}

/// The bytes of a NUL-terminated C string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string living for 'a.
    Ok(unsafe { CStr::from_ptr(ptr) }.to_bytes())
}

/// A path argument: the exact bytes of a NUL-terminated C string (see
/// `crate::platform::path_from_bytes`).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn c_path(ptr: *const c_char, what: &str) -> Result<std::path::PathBuf> {
    // SAFETY: the caller's contract is c_str's.
    crate::platform::path_from_bytes(unsafe { c_str(ptr, what)? })
}

/// What a caller's array holds, named in the error for a pointer not aligned for it.
pub(crate) trait Element {
    /// The elements, in the plural ("floats").
    const NOUN: &'static str;
}

impl Element for u8 {
    const NOUN: &'static str = "bytes";
}
impl Element for f32 {
    const NOUN: &'static str = "floats";
}
impl Element for i32 {
    const NOUN: &'static str = "token ids";
}
impl Element for u64 {
    const NOUN: &'static str = "indexes";
}
impl Element for usize {
    const NOUN: &'static str = "lengths";
}
impl<T> Element for *const T {
    const NOUN: &'static str = "pointers";
}

/// Refuses a pointer argument `what` that is not aligned for `T`.
pub(crate) fn aligned<T: Element>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_aligned() {
        return Ok(());
    }
    Err(Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "{what} ({ptr:p}) is not aligned for {} (a multiple of {} bytes)",
            T::NOUN,
            std::mem::align_of::<T>()
        ),
    ))
}

/// Checks that `len` elements of `T` at `ptr` can be one slice: `ptr` non-NULL and aligned,
/// the span no larger than an object can be and not past the end of the address space.
fn span<T: Element>(ptr: *const T, len: usize, what: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(null(what));
    }
    aligned(ptr, what)?;
    let fits = len
        .checked_mul(std::mem::size_of::<T>())
        .filter(|&bytes| isize::try_from(bytes).is_ok())
        .and_then(|bytes| (ptr as usize).checked_add(bytes))
        .is_some();
    if fits {
        return Ok(());
    }
    Err(Error::msg(
        ErrorCode::InvalidArgument,
        format!("{what}: {len} {} at {ptr:p} do not fit in memory", T::NOUN),
    ))
}

/// The caller's `len` elements at `ptr`: empty when `len` is 0, whatever `ptr` is; an error
/// when `ptr` is NULL or not aligned, or the elements could not be one object.
///
/// # Safety
/// When `len` is not 0 and `ptr` is not NULL: `ptr` is valid for reads of `len` elements of `T`
/// that nothing writes during `'a`.
pub(crate) unsafe fn slice<'a, T: Element>(
    ptr: *const T,
    len: usize,
    what: &str,
) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    span(ptr, len, what)?;
    // SAFETY: non-NULL, aligned, one object's size at most and within the address space
    // (checked), and valid for reads for 'a (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The caller's room for `len` elements at `ptr`, as [`slice`] checks it.
///
/// # Safety
/// When `len` is not 0 and `ptr` is not NULL: `ptr` is valid for writes of `len` elements of
/// `T` that nothing else reads or writes during `'a`.
pub(crate) unsafe fn slice_mut<'a, T: Element>(
    ptr: *mut T,
    len: usize,
    what: &str,
) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    span(ptr.cast_const(), len, what)?;
    // SAFETY: non-NULL, aligned, one object's size at most and within the address space
    // (checked), and valid for writes with no other access for 'a (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Writes `value` through an optional out-pointer.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
        unsafe { out.write(value) };
    }
}

#[cfg(all(test, not(target_family = "wasm")))]
mod tests {
    use super::*;
    use std::panic::catch_unwind;
    use std::process::Command;

    const CHILD: &str = "GGUF_QUIET_HOOK_CHILD";

    #[test]
    fn caller_arrays_become_slices_only_when_they_can_be_one() {
        let floats = [1.0f32, 2.0, 3.0];
        // SAFETY: each pointer given with a non-zero length is valid for that many elements, or
        // is refused before it is read.
        unsafe {
            assert_eq!(slice(floats.as_ptr(), 3, "src").unwrap(), &floats);
            // Empty, whatever the pointer.
            assert!(slice(std::ptr::null::<f32>(), 0, "src").unwrap().is_empty());
            let e = slice(std::ptr::null::<f32>(), 1, "src").unwrap_err();
            assert_eq!(
                (e.code(), e.to_string()),
                (ErrorCode::NullArgument, "gguf: src is NULL".into())
            );
            let odd = floats.as_ptr().cast::<u8>().wrapping_add(1).cast::<f32>();
            let e = slice(odd, 1, "src").unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument);
            assert!(
                e.to_string()
                    .contains("not aligned for floats (a multiple of 4 bytes)"),
                "{e}"
            );
            // More than an object can hold, and past the end of the address space.
            let e = slice(floats.as_ptr(), usize::MAX / 2, "src").unwrap_err();
            assert!(e.to_string().contains("do not fit in memory"), "{e}");
            let end = usize::MAX - 7;
            let e = slice(end as *const u8, 16, "data").unwrap_err();
            assert!(e.to_string().starts_with("gguf: data: 16 bytes at"), "{e}");
            let mut room = [0i32; 2];
            slice_mut(room.as_mut_ptr(), 2, "tokens").unwrap()[1] = 7;
            assert_eq!(room, [0, 7]);
            let e = slice_mut(std::ptr::null_mut::<i32>(), 2, "tokens").unwrap_err();
            assert_eq!(e.code(), ErrorCode::NullArgument);
        }
    }

    #[test]
    fn a_handle_goes_to_c_and_back() {
        struct Counter(u32);
        impl Castable for Counter {
            const ARG: &'static str = "counter";
        }
        let p = to_boxed_mut_ptr(Counter(7));
        // SAFETY: `p` is live until `free_box`, used by this thread alone; NULL is refused or
        // ignored.
        unsafe {
            assert_eq!(try_from(p).unwrap().0, 7);
            try_from_mut(p).unwrap().0 += 1;
            assert_eq!(try_from(p).unwrap().0, 8);
            free_box(p);
            free_box(std::ptr::null_mut::<Counter>());
            let e = try_from(std::ptr::null::<Counter>()).err().unwrap();
            assert_eq!(
                (e.code(), e.to_string()),
                (ErrorCode::NullArgument, "gguf: counter is NULL".into())
            );
            let e = try_from_mut(std::ptr::null_mut::<Counter>()).err().unwrap();
            assert_eq!(e.code(), ErrorCode::NullArgument);
        }
    }

    #[test]
    fn unknown_flag_bits_are_named() {
        assert!(known_flags(0, 0, "flags").is_ok());
        assert!(known_flags(5, 7, "open flags").is_ok());
        let e = known_flags(0x29, 0x9, "read flags").unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (
                ErrorCode::InvalidArgument,
                "gguf: unknown read flags 0x20".into()
            )
        );
    }

    #[test]
    fn sizes_from_c_fit_usize_or_are_refused() {
        assert_eq!(to_usize(12), Some(12));
        assert_eq!(memory_count(3, "len").unwrap(), 3);
        let wide = u64::MAX;
        match usize::BITS {
            64 => assert_eq!(to_usize(wide), Some(usize::MAX)),
            _ => {
                assert_eq!(to_usize(wide), None);
                let e = memory_count(wide, "len").unwrap_err();
                assert_eq!(e.code(), ErrorCode::InvalidArgument);
                assert!(e.to_string().contains("more than this platform's memory"));
            }
        }
    }

    #[test]
    fn buffers_that_share_a_byte_are_refused() {
        let ok = |spans: &[(usize, usize)]| disjoint(spans.iter().copied(), "dsts");
        assert!(ok(&[(100, 10), (110, 5), (90, 10), (200, 0), (105, 0)]).is_ok());
        let e = ok(&[(100, 10), (300, 1), (100, 10)]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("dsts[0] and dsts[2] overlap"), "{e}");
        let e = ok(&[(120, 4), (100, 21)]).unwrap_err();
        assert!(e.to_string().contains("dsts[0] and dsts[1] overlap"), "{e}");
        // One inside another that is not its neighbour in address order.
        let e = ok(&[(100, 100), (150, 1), (120, 1)]).unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
        let e = ok(&[(usize::MAX - 3, 8)]).unwrap_err();
        assert!(e.to_string().contains("past the end of memory"), "{e}");
    }

    const NAME: &str = "ffi::boundary::tests::a_panic_inside_the_boundary_prints_nothing";

    /// What the child process does: panics inside boundary calls (on the calling thread, on a
    /// thread the library starts, in a nested call), each recorded as an internal error, then a
    /// panic in a caller's callback called from inside a call and one outside any call, which
    /// reach the hook that was there before (the default hook, printing to stderr).
    fn child() {
        assert!(!guard(false, || -> Result<bool> {
            panic!("PANIC-ON-THE-CALLING-THREAD")
        }));
        assert_eq!(
            super::super::last_error::gguf_last_error_code(),
            ErrorCode::Internal as u32
        );
        let in_worker = guard(false, || {
            crate::platform::with_workers(2, &|| panic!("PANIC-ON-A-LIBRARY-THREAD"), || ());
            Ok(true)
        });
        assert!(in_worker);
        let nested = guard(0u8, || {
            Ok(guard(1u8, || -> Result<u8> { panic!("PANIC-IN-A-NESTED-CALL") }) + 1)
        });
        assert_eq!(nested, 2);
        let callback = guard(false, || {
            Ok(outside(|| catch_unwind(|| panic!("PANIC-IN-A-CALLBACK"))).is_err())
        });
        assert!(callback);
        assert!(catch_unwind(|| panic!("PANIC-OUTSIDE-ANY-CALL")).is_err());
        eprintln!("CHILD-DONE");
    }

    /// A panic caught at the C boundary prints nothing, whichever thread of the call it happens
    /// on; the host's own panics still go to its hook. Run in a child process, whose stderr is
    /// the one the hook writes to.
    #[test]
    fn a_panic_inside_the_boundary_prints_nothing() {
        if std::env::var_os(CHILD).is_some() {
            child();
            return;
        }
        let exe = std::env::current_exe().unwrap();
        // Under a cross runner (qemu, Wine: tools/cross.sh) the child runs through it too.
        let runner = std::env::var("GGUF_TEST_RUNNER").unwrap_or_default();
        let mut words = runner.split_whitespace();
        let mut cmd = match words.next() {
            Some(program) if !cfg!(windows) => {
                let mut cmd = Command::new(program);
                cmd.args(words).arg(exe);
                cmd
            }
            _ => Command::new(exe),
        };
        let out = cmd
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the child failed:\n{stderr}");
        assert!(
            stderr.contains("CHILD-DONE"),
            "the child did not run:\n{stderr}"
        );
        for quiet in [
            "PANIC-ON-THE-CALLING-THREAD",
            "PANIC-ON-A-LIBRARY-THREAD",
            "PANIC-IN-A-NESTED-CALL",
        ] {
            assert!(!stderr.contains(quiet), "{quiet} was printed:\n{stderr}");
        }
        for loud in ["PANIC-IN-A-CALLBACK", "PANIC-OUTSIDE-ANY-CALL"] {
            assert!(stderr.contains(loud), "{loud} was not printed:\n{stderr}");
        }
    }
}
