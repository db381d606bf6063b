//! The IQ types' quantizers against ggml's own, `ggml_quantize_chunk` in the pinned
//! `libggml-base.so` (npm `@node-llama-cpp/linux-x64` 3.22.1, `make ggml`; `GGUF_GGML_LIB_DIR`
//! points elsewhere), loaded into this process: every output byte compared, with an importance
//! column (random positive weights) and without one where ggml allows it, on random rows at
//! several scales, zeros, constants, tiny magnitudes, subnormals and several row lengths.
//!
//! ggml aborts the process on some rows (NaN, infinities, magnitudes near the float limit) for
//! some types: those rows run ggml in a forked child (its abort callback exits the child), and
//! where ggml aborts ours must return an error naming the row and the element; where ggml gives
//! an answer, ours must give the same bytes.
//!
//! Also checks ggml writes what `tests/data/quantize-iq-fingerprints.tsv` records for the fixed
//! inputs that `quantize_iq.rs` checks on every platform.
//!
//! Most of this file's time is ggml's own `ggml_quantize_init` (its neighbour lists: a `qsort`
//! of the whole grid for each point; about 10 s for IQ1_S's grid, 4 s for IQ2_S's on one core
//! here), paid once per process; the rows themselves are few and small.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;
#[path = "quantize_iq/inputs.rs"]
mod inputs;

use common::{ggml_dir, manifest_dir};
use ggml_dl::Lib;
use gguf::quantize::quantize;
use gguf::{DataType, ErrorCode};
use inputs::{fingerprint_input, fingerprint_line, Rng, FINGERPRINTS, TYPES};
use std::ffi::{c_char, c_void};
use std::sync::{Mutex, OnceLock};

type Init = unsafe extern "C" fn(u32);
type Chunk = unsafe extern "C" fn(u32, *const f32, *mut c_void, i64, i64, i64, *const f32) -> usize;
type AbortCallback = unsafe extern "C" fn(*const c_char);
type SetAbort = unsafe extern "C" fn(Option<AbortCallback>) -> Option<AbortCallback>;

struct Ggml {
    init: Init,
    chunk: Chunk,
    set_abort: SetAbort,
}

fn ggml() -> &'static Ggml {
    static GGML: OnceLock<Ggml> = OnceLock::new();
    GGML.get_or_init(|| {
        let lib = Lib::open(&ggml_dir().join("libggml-base.so"));
        let sym = |name: &str| lib.sym(name);
        // SAFETY: the library stays loaded for the process (never dlclosed), so the function
        // pointers stay valid; each is transmuted to its C signature (ggml.h).
        unsafe {
            Ggml {
                init: std::mem::transmute::<*mut c_void, Init>(sym("ggml_quantize_init")),
                chunk: std::mem::transmute::<*mut c_void, Chunk>(sym("ggml_quantize_chunk")),
                set_abort: std::mem::transmute::<*mut c_void, SetAbort>(sym(
                    "ggml_set_abort_callback",
                )),
            }
        }
    })
}

/// The serialization of calls into ggml (its init builds shared tables, and a fork must not
/// happen while another thread is inside ggml).
static GGML_LOCK: Mutex<()> = Mutex::new(());

fn row_bytes(t: DataType, n_per_row: usize) -> usize {
    n_per_row / t.block_elems() as usize * t.block_bytes() as usize
}

/// ggml's bytes for rows ggml answers (called in this process).
fn ggml_quantize(t: DataType, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) -> Vec<u8> {
    let g = ggml();
    let nrows = src.len() / n_per_row;
    let mut out = vec![0u8; nrows * row_bytes(t, n_per_row)];
    let _guard = GGML_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: src holds nrows * n_per_row floats, out the rows' bytes, imp n_per_row weights or
    // NULL; ggml writes only out.
    let n = unsafe {
        (g.init)(t.id());
        (g.chunk)(
            t.id(),
            src.as_ptr(),
            out.as_mut_ptr().cast(),
            0,
            nrows as i64,
            n_per_row as i64,
            imp.map_or(std::ptr::null(), |w| w.as_ptr()),
        )
    };
    assert_eq!(n, out.len(), "{t:?}: ggml's byte count");
    out
}

unsafe extern "C" fn exit_child(_message: *const c_char) {
    // SAFETY: in the forked child only: leaves at once, without running the parent's handlers.
    unsafe { libc::_exit(86) }
}

/// ggml's bytes for rows that may make it abort: run in a forked child writing into shared
/// memory; `None` where ggml aborted.
fn ggml_quantize_forked(
    t: DataType,
    src: &[f32],
    n_per_row: usize,
    imp: Option<&[f32]>,
) -> Option<Vec<u8>> {
    let g = ggml();
    let nrows = src.len() / n_per_row;
    let len = nrows * row_bytes(t, n_per_row);
    let _guard = GGML_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the tables are built before the fork (the child allocates nothing); the shared
    // mapping holds len bytes and is unmapped after the child is reaped; the child only calls
    // ggml and _exit.
    unsafe {
        (g.init)(t.id());
        let shared = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(shared, libc::MAP_FAILED);
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            (g.set_abort)(Some(exit_child));
            let n = (g.chunk)(
                t.id(),
                src.as_ptr(),
                shared,
                0,
                nrows as i64,
                n_per_row as i64,
                imp.map_or(std::ptr::null(), |w| w.as_ptr()),
            );
            libc::_exit(if n == len { 0 } else { 1 });
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        let out = std::slice::from_raw_parts(shared as *const u8, len).to_vec();
        libc::munmap(shared, len);
        assert!(
            libc::WIFEXITED(status),
            "{t:?}: ggml's child died: {status}"
        );
        match libc::WEXITSTATUS(status) {
            0 => Some(out),
            86 => None,
            s => panic!("{t:?}: ggml's child exited {s}"),
        }
    }
}

fn ours(t: DataType, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) -> gguf::Result<Vec<u8>> {
    let mut out = vec![0xA5u8; src.len() / n_per_row * row_bytes(t, n_per_row)];
    let n = quantize(t, src, n_per_row, imp, &mut out)?;
    assert_eq!(n, out.len(), "{t:?}: our byte count");
    Ok(out)
}

/// The first differing block, for a readable failure.
fn first_difference(t: DataType, a: &[u8], b: &[u8]) -> String {
    let bb = t.block_bytes() as usize;
    let i = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0);
    let blk = i / bb;
    format!(
        "block {blk} (byte {}): ours {:02x?} ggml {:02x?}",
        i % bb,
        &a[blk * bb..(blk + 1) * bb],
        &b[blk * bb..(blk + 1) * bb]
    )
}

fn check_same(t: DataType, what: &str, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) {
    let theirs = ggml_quantize(t, src, n_per_row, imp);
    let mine = ours(t, src, n_per_row, imp).unwrap_or_else(|e| panic!("{t:?} {what}: {e}"));
    assert!(
        mine == theirs,
        "{t:?} {what} (importance: {}): {}",
        imp.is_some(),
        first_difference(t, &mine, &theirs)
    );
}

/// Rows of the ordinary kinds, `nrows` of `n_per_row`.
fn ordinary_cases(rng: &mut Rng, n_per_row: usize) -> Vec<(String, Vec<f32>)> {
    let mut cases = Vec::new();
    for scale in [1.0f32, 1e-3, 250.0, 3e-8, 1e12] {
        let src = (0..2 * n_per_row).map(|_| rng.bell() * scale).collect();
        cases.push((format!("random rows at scale {scale}"), src));
    }
    cases.push(("zeros".into(), vec![0.0; n_per_row]));
    cases.push(("negative zeros".into(), vec![-0.0; n_per_row]));
    for c in [0.5f32, -3.0, 1e-6] {
        cases.push((format!("constant {c}"), vec![c; n_per_row]));
    }
    let sparse = (0..n_per_row)
        .map(|i| if i % 37 == 5 { rng.bell() } else { 0.0 })
        .collect();
    cases.push(("mostly zeros".into(), sparse));
    let tiny = (0..n_per_row).map(|_| rng.bell() * 1e-30).collect();
    cases.push(("tiny magnitudes".into(), tiny));
    let sub = (0..n_per_row)
        .map(|_| f32::from_bits((rng.next() as u32) & 0x807F_FFFF))
        .collect();
    cases.push(("subnormals".into(), sub));
    let ints = (0..n_per_row)
        .map(|_| ((rng.next() % 9) as f32) - 4.0)
        .collect();
    cases.push(("small integers (ties)".into(), ints));
    let mixed = (0..n_per_row)
        .map(|i| rng.bell() * if i % 64 < 32 { 1e-4 } else { 10.0 })
        .collect();
    cases.push(("blocks of different scales".into(), mixed));
    cases
}

fn lengths(t: DataType) -> &'static [usize] {
    if t == DataType::IQ4_NL {
        &[32, 96, 256]
    } else {
        &[256, 512]
    }
}

fn check_type(t: DataType, needs_importance: bool) {
    let mut rng = Rng(0x5EED_0000 + u64::from(t.id()));
    for &n in lengths(t) {
        let imp: Vec<f32> = (0..n).map(|_| rng.weight()).collect();
        for (what, src) in ordinary_cases(&mut rng, n) {
            let what = format!("{what}, rows of {n}");
            check_same(t, &what, &src, n, Some(&imp));
            if !needs_importance {
                check_same(t, &what, &src, n, None);
            }
        }
    }
    if needs_importance {
        let e = ours(t, &[0.0; 256], 256, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("importance"), "{e}");
    }
}

/// Rows holding NaN, infinities, magnitudes near the float limit: ggml's answer or our error.
fn check_hostile(t: DataType, needs_importance: bool) -> Vec<String> {
    let n = 256;
    let mut rng = Rng(0xBAD_0000 + u64::from(t.id()));
    let imp: Vec<f32> = (0..n).map(|_| rng.weight()).collect();
    let base: Vec<f32> = (0..n).map(|_| rng.bell()).collect();
    let mut cases: Vec<(String, Vec<f32>)> = Vec::new();
    for (name, v) in [
        ("NaN", f32::NAN),
        ("+inf", f32::INFINITY),
        ("-inf", f32::NEG_INFINITY),
        ("3e38", 3e38f32),
        ("-3.4e38", -3.4e38f32),
        ("1e20", 1e20f32),
    ] {
        for at in [0usize, 77] {
            let mut row = base.clone();
            row[at] = v;
            cases.push((format!("{name} at {at}"), row));
        }
    }
    cases.push(("all NaN".into(), vec![f32::NAN; n]));
    cases.push(("all +inf".into(), vec![f32::INFINITY; n]));
    cases.push((
        "near the float limit".into(),
        base.iter().map(|v| v * 1e38).collect(),
    ));
    cases.push(("large".into(), base.iter().map(|v| v * 1e19).collect()));
    let mut aborts = Vec::new();
    for (what, row) in cases {
        // A good row first, so the error must name row 1.
        let mut src = base.clone();
        src.extend_from_slice(&row);
        for imp in [Some(&imp[..]), None] {
            if imp.is_none() && needs_importance {
                continue;
            }
            let theirs = ggml_quantize_forked(t, &src, n, imp);
            let mine = ours(t, &src, n, imp);
            match (theirs, mine) {
                (Some(theirs), Ok(mine)) => assert!(
                    mine == theirs,
                    "{t:?} {what} (importance {}): {}",
                    imp.is_some(),
                    first_difference(t, &mine, &theirs)
                ),
                (None, Err(e)) => {
                    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
                    let m = e.to_string();
                    assert!(m.contains("row 1,") && m.contains("element"), "{m}");
                    aborts.push(format!("{what} (importance {})", imp.is_some()));
                }
                (Some(_), Err(e)) => {
                    panic!(
                        "{t:?} {what} (importance {}): ggml answers, ours fails: {e}",
                        imp.is_some()
                    )
                }
                (None, Ok(_)) => panic!(
                    "{t:?} {what} (importance {}): ggml aborts, ours answers",
                    imp.is_some()
                ),
            }
        }
    }
    aborts
}

macro_rules! type_tests {
    ($($name:ident: $t:expr),* $(,)?) => {$(
        mod $name {
            use super::*;
            #[test]
            fn same_bytes_as_ggml() {
                let (t, req) = TYPES.iter().copied().find(|p| p.0 == $t).unwrap();
                check_type(t, req);
            }
            #[test]
            fn rows_ggml_aborts_on_are_errors_and_the_rest_same_bytes() {
                let (t, req) = TYPES.iter().copied().find(|p| p.0 == $t).unwrap();
                let aborts = check_hostile(t, req);
                eprintln!("{t:?}: ggml aborts on {aborts:?}");
            }
        }
    )*};
}

type_tests! {
    iq4_nl: DataType::IQ4_NL,
    iq4_xs: DataType::IQ4_XS,
    iq3_xxs: DataType::IQ3_XXS,
    iq3_s: DataType::IQ3_S,
    iq2_xxs: DataType::IQ2_XXS,
    iq2_xs: DataType::IQ2_XS,
    iq2_s: DataType::IQ2_S,
    iq1_s: DataType::IQ1_S,
    iq1_m: DataType::IQ1_M,
}

/// ggml writes what the fingerprint file records (the file `quantize_iq.rs` checks every
/// platform against); `GGUF_BLESS=1` rewrites it from ggml's outputs.
#[test]
fn ggml_writes_the_recorded_fingerprints() {
    let mut lines = Vec::new();
    for (t, req) in TYPES {
        let (src, n, imp) = fingerprint_input(t);
        lines.push(fingerprint_line(
            t,
            true,
            &ggml_quantize(t, &src, n, Some(&imp)),
        ));
        if !req {
            lines.push(fingerprint_line(t, false, &ggml_quantize(t, &src, n, None)));
        }
    }
    let text = lines.join("\n") + "\n";
    let path = manifest_dir().join(FINGERPRINTS);
    if std::env::var_os("GGUF_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        recorded,
        text,
        "{} differs from ggml's outputs",
        path.display()
    );
}
