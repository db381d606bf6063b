//! Requantizing against llama.cpp itself: `llama_model_quantize` from the pinned `libllama`
//! (npm `@node-llama-cpp/linux-x64` 3.22.1, `make ggml`; `GGUF_GGML_LIB_DIR` points elsewhere),
//! loaded into this process, quantizes the same source model as `gguf::requantize`:
//!
//! - every preset (with an importance matrix, and without one where the preset does not need
//!   it): identical tensor types, tensor by tensor;
//! - the presets whose types the quantizer supports: identical files, byte for byte (metadata,
//!   tensor order, data), with and without an importance matrix.
//!
//! - the command, `tools/gguf-quantize.c` (built here against the library), with an imatrix
//!   file and an override: the file llama-quantize writes (its imatrix keys included);
//! - libllama runs our files: with ggml's baseline x86-64 CPU backend (`libggml-cpu-x64.so`
//!   beside libllama), one thread, it loads each preset's file of ours and of its own, decodes a
//!   short prompt, and gives the same logits, bit for bit.
//!
//! The source is the llama-like model of `tests/requantize/model.rs`, thin (16 rows per weight:
//! the rules look at names and row lengths only, and llama.cpp's quantizer does not check
//! shapes), so that llama.cpp's slowest quantizers take milliseconds.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;
#[path = "requantize/model.rs"]
mod model;

use common::{bin_dir, cc, ggml_dir, lib_dir, link_aside, llama_src_dir, manifest_dir, run};
use ggml_dl::Lib;
use gguf::requantize::{plan, requantize_file, FileType, Importance, Options, Progress};
use gguf::{DataType, Model, OpenOptions};
use model::{Spec, SPEC};
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `struct llama_model_quantize_params` of `include/llama.h` (x86-64 layout: 64 bytes; checked
/// against the defaults libllama returns).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct QuantizeParams {
    nthread: i32,
    ftype: u32,
    output_tensor_type: u32,
    token_embedding_type: u32,
    allow_requantize: bool,
    quantize_output_tensor: bool,
    only_copy: bool,
    pure: bool,
    keep_split: bool,
    dry_run: bool,
    imatrix: *const ImatrixData,
    kv_overrides: *const c_void,
    tt_overrides: *const TensorOverride,
    prune_layers: *const i32,
    max_buf_size: usize,
}

/// `struct llama_model_kv_override`: a tag (0 int, 1 float, 2 bool, 3 string), a key of 128
/// bytes and a value of 128 (264 bytes on x86-64).
#[repr(C)]
struct KvOverride {
    tag: u32,
    key: [u8; 128],
    value: KvValue,
}

#[repr(C)]
union KvValue {
    int: i64,
    string: [u8; 128],
}

impl KvOverride {
    fn new(key: &str, value: KvValue, tag: u32) -> KvOverride {
        let mut k = [0u8; 128];
        k[..key.len()].copy_from_slice(key.as_bytes());
        KvOverride { tag, key: k, value }
    }

    fn int(key: &str, v: i64) -> KvOverride {
        KvOverride::new(key, KvValue { int: v }, 0)
    }

    fn string(key: &str, v: &str) -> KvOverride {
        let mut s = [0u8; 128];
        let n = v.len().min(127);
        s[..n].copy_from_slice(&v.as_bytes()[..n]);
        KvOverride::new(key, KvValue { string: s }, 3)
    }
}

/// `struct llama_model_imatrix_data`.
#[repr(C)]
struct ImatrixData {
    name: *const c_char,
    data: *const f32,
    size: usize,
}

/// `struct llama_model_tensor_override`.
#[repr(C)]
struct TensorOverride {
    pattern: *const c_char,
    ty: u32,
}

const GGML_TYPE_COUNT: u32 = 43;

struct Llama {
    default_params: unsafe extern "C" fn() -> QuantizeParams,
    quantize: unsafe extern "C" fn(*const c_char, *const c_char, *const QuantizeParams) -> u32,
}

type LogCallback = unsafe extern "C" fn(u32, *const c_char, *mut c_void);

/// llama.cpp's log while it is captured (a dry run's per-tensor lines), else dropped.
static LOG: Mutex<Option<String>> = Mutex::new(None);

unsafe extern "C" fn quiet(_level: u32, text: *const c_char, _user: *mut c_void) {
    let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(log), false) = (log.as_mut(), text.is_null()) {
        // SAFETY: llama.cpp passes a NUL-terminated message.
        log.push_str(&unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy());
    }
}

fn llama() -> &'static Llama {
    static LLAMA: OnceLock<Llama> = OnceLock::new();
    LLAMA.get_or_init(|| {
        let path = ggml_dir().join("libllama.v0.5.0.so");
        assert!(
            path.is_file(),
            "{} is missing: run `make ggml`",
            path.display()
        );
        let lib = Lib::open(&path);
        let sym = |name: &str| lib.sym(name);
        // SAFETY: the library stays loaded for the process (never dlclosed), so the function
        // pointers stay valid; each is cast to its signature in include/llama.h.
        unsafe {
            let log_set: unsafe extern "C" fn(Option<LogCallback>, *mut c_void) =
                std::mem::transmute(sym("llama_log_set"));
            log_set(Some(quiet), std::ptr::null_mut());
            let llama = Llama {
                default_params: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn() -> QuantizeParams,
                >(sym("llama_model_quantize_default_params")),
                quantize: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(
                        *const c_char,
                        *const c_char,
                        *const QuantizeParams,
                    ) -> u32,
                >(sym("llama_model_quantize")),
            };
            // The layout: the defaults llama-quant.cpp sets, each where the header puts it.
            let p = (llama.default_params)();
            assert_eq!(std::mem::size_of::<QuantizeParams>(), 64);
            assert_eq!((p.nthread, p.ftype), (0, FileType::Q8_0.id()));
            assert_eq!(
                (p.output_tensor_type, p.token_embedding_type),
                (GGML_TYPE_COUNT, GGML_TYPE_COUNT)
            );
            assert_eq!(
                [
                    p.allow_requantize,
                    p.quantize_output_tensor,
                    p.only_copy,
                    p.pure,
                    p.keep_split,
                    p.dry_run
                ],
                [false, true, false, false, false, false]
            );
            assert!(p.imatrix.is_null() && p.kv_overrides.is_null() && p.tt_overrides.is_null());
            assert!(p.prune_layers.is_null());
            assert_eq!(p.max_buf_size, 8 << 30);
            llama
        }
    })
}

/// llama.cpp's quantizer is not meant to run twice at once in one process (its logging and
/// backend state are global): one at a time.
fn lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What both quantizers are asked to do.
#[derive(Clone, Default)]
struct Ask {
    importance: Option<Vec<(String, Vec<f32>)>>,
    tensor_types: Vec<(String, DataType)>,
    output_tensor_type: Option<DataType>,
    token_embedding_type: Option<DataType>,
    pure: bool,
    leave_output_tensor: bool,
    /// One output shard per source shard (`--keep-split`).
    keep_split: bool,
    /// Every tensor copied as it is (the `COPY` preset).
    only_copy: bool,
    /// Only compute the types (`--dry-run`): llama.cpp logs each tensor's type, quantizes
    /// nothing (so never builds the IQ types' grids, which takes it seconds).
    dry_run: bool,
    /// What llama-quantize passes as metadata overrides (its imatrix keys).
    kv_overrides: Vec<(String, Result<i64, String>)>,
}

/// Quantizes `src` into `dst` with llama.cpp; returns whether it succeeded.
fn llama_quantize(src: &Path, dst: &Path, ft: FileType, ask: &Ask) -> bool {
    llama_quantize_logged(src, dst, ft, ask).0
}

/// [`llama_quantize`], and what llama.cpp logged meanwhile.
fn llama_quantize_logged(src: &Path, dst: &Path, ft: FileType, ask: &Ask) -> (bool, String) {
    let l = llama();
    let _guard = lock();
    *LOG.lock().unwrap() = Some(String::new());
    // SAFETY: the function as the header declares it.
    let mut p = unsafe { (l.default_params)() };
    p.nthread = 1;
    p.dry_run = ask.dry_run;
    p.ftype = ft.id();
    p.pure = ask.pure;
    p.keep_split = ask.keep_split;
    p.only_copy = ask.only_copy;
    p.quantize_output_tensor = !ask.leave_output_tensor;
    if let Some(t) = ask.output_tensor_type {
        p.output_tensor_type = t.id();
    }
    if let Some(t) = ask.token_embedding_type {
        p.token_embedding_type = t.id();
    }
    let names: Vec<CString>;
    let mut entries: Vec<ImatrixData> = Vec::new();
    if let Some(m) = &ask.importance {
        names = m
            .iter()
            .map(|(n, _)| CString::new(n.as_str()).unwrap())
            .collect();
        for ((_, v), n) in m.iter().zip(&names) {
            entries.push(ImatrixData {
                name: n.as_ptr(),
                data: v.as_ptr(),
                size: v.len(),
            });
        }
        entries.push(ImatrixData {
            name: std::ptr::null(),
            data: std::ptr::null(),
            size: 0,
        });
        p.imatrix = entries.as_ptr();
    }
    let patterns: Vec<CString> = ask
        .tensor_types
        .iter()
        .map(|(n, _)| CString::new(n.as_str()).unwrap())
        .collect();
    let mut overrides: Vec<TensorOverride> = patterns
        .iter()
        .zip(&ask.tensor_types)
        .map(|(c, (_, t))| TensorOverride {
            pattern: c.as_ptr(),
            ty: t.id(),
        })
        .collect();
    if !overrides.is_empty() {
        overrides.push(TensorOverride {
            pattern: std::ptr::null(),
            ty: GGML_TYPE_COUNT,
        });
        p.tt_overrides = overrides.as_ptr();
    }
    let mut kvs: Vec<KvOverride> = ask
        .kv_overrides
        .iter()
        .map(|(k, v)| match v {
            Ok(i) => KvOverride::int(k, *i),
            Err(s) => KvOverride::string(k, s),
        })
        .collect();
    if !kvs.is_empty() {
        kvs.push(KvOverride::new("", KvValue { int: 0 }, 0));
        p.kv_overrides = kvs.as_ptr().cast();
    }
    let (s, d) = (
        CString::new(src.to_str().unwrap()).unwrap(),
        CString::new(dst.to_str().unwrap()).unwrap(),
    );
    // SAFETY: NUL-terminated paths, and params whose pointers (names, values, patterns) live
    // through the call.
    let rc = unsafe { (l.quantize)(s.as_ptr(), d.as_ptr(), &p) };
    let log = LOG.lock().unwrap().take().unwrap_or_default();
    (rc == 0, log)
}

fn options(ft: FileType, ask: &Ask) -> Options {
    let mut o = Options::new(ft);
    o.sync = false;
    o.pure = ask.pure;
    o.keep_split = ask.keep_split;
    o.only_copy = ask.only_copy;
    o.leave_output_tensor = ask.leave_output_tensor;
    o.output_tensor_type = ask.output_tensor_type;
    o.token_embedding_type = ask.token_embedding_type;
    o.tensor_types = ask.tensor_types.clone();
    if let Some(m) = &ask.importance {
        let mut imp = Importance::new();
        for (n, v) in m {
            imp.insert(n, v.clone());
        }
        o.importance = Some(imp);
    }
    o
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "gguf-requantize-llama-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const THIN: Spec = Spec {
    rows: Some(16),
    ..SPEC
};

/// Thinner still (2 rows per weight; one row would make a weight 1-D), for the types alone and
/// for the IQ presets, which llama.cpp quantizes slowly.
const TWO_ROWS: Spec = Spec {
    rows: Some(2),
    ..SPEC
};

fn is_iq(ft: FileType) -> bool {
    ft.name().starts_with("IQ")
}

/// Importance weights for every 2-D weight of the model (positive, uneven).
fn importance(spec: &Spec) -> Vec<(String, Vec<f32>)> {
    model::tensors(spec)
        .into_iter()
        .filter(|(_, d)| d.len() == 2)
        .map(|(n, d)| {
            let mut rng = model::Rng::new(n.len() as u64 + 7);
            let v = (0..d[0])
                .map(|_| rng.next_f32().abs() * 40.0 + 0.01)
                .collect();
            (n, v)
        })
        .collect()
}

fn types_of(path: &Path) -> Vec<(String, DataType)> {
    let m = Model::open(path, OpenOptions::default()).unwrap();
    (0..m.tensor_count())
        .map(|i| {
            let t = m.tensor_at(i).unwrap().info;
            (String::from_utf8_lossy(t.name).into_owned(), t.dtype)
        })
        .collect()
}

/// The presets that need no importance matrix (llama.cpp refuses the others without one).
fn needs_importance(ft: FileType) -> bool {
    use FileType as F;
    matches!(
        ft,
        F::IQ2_XXS
            | F::IQ2_XS
            | F::IQ2_S
            | F::IQ2_M
            | F::IQ1_S
            | F::IQ1_M
            | F::IQ3_XXS
            | F::IQ3_XS
            | F::Q2_K_S
    )
}

/// Our planned types for `src` equal the types of llama.cpp's file, tensor by tensor.
/// The types a dry run of llama.cpp's quantizer logs, tensor by tensor in its order: lines
/// `[  i/  n] NAME - [SHAPE], type = OLD, size = A MiB -> B MiB (NEW)`, or `size = A MiB` for a
/// tensor that keeps its type.
fn dry_run_types(log: &str) -> Vec<(String, DataType)> {
    let ty = |name: &str| {
        DataType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name.trim()))
            .unwrap_or_else(|| panic!("llama.cpp logs an unknown type '{name}'"))
    };
    log.lines()
        .filter(|l| l.starts_with('[') && l.contains(" - [") && l.contains("type = "))
        .map(|l| {
            let name = l[l.find("] ").unwrap() + 2..l.find(" - [").unwrap()].trim();
            let after = &l[l.find("type = ").unwrap() + 7..];
            let old = ty(&after[..after.find(',').unwrap()]);
            let new = match l.find("MiB (") {
                Some(i) => ty(&l[i + 5..l[i..].find(')').unwrap() + i]),
                None => old,
            };
            (name.to_string(), new)
        })
        .collect()
}

fn same_types(src: &Path, _dir: &Path, ft: FileType, ask: &Ask) -> Result<(), String> {
    let dry = Ask {
        dry_run: true,
        ..ask.clone()
    };
    let (done, log) = llama_quantize_logged(src, Path::new("unused.gguf"), ft, &dry);
    let m = Model::open(src, OpenOptions::default()).unwrap();
    let ours = match (plan(&m, &options(ft, ask)), done) {
        // Both refuse (a row length no type of the preset fits, ...).
        (Err(_), false) => return Ok(()),
        (Err(e), true) => {
            return Err(format!(
                "{}: llama.cpp quantizes, we refuse: {e}",
                ft.name()
            ))
        }
        (Ok(_), false) => return Err(format!("{}: llama.cpp refuses, we do not", ft.name())),
        (Ok(p), true) => p,
    };
    let ours: Vec<(String, DataType)> = ours
        .iter()
        .map(|t| (String::from_utf8_lossy(&t.name).into_owned(), t.to))
        .collect();
    let theirs = dry_run_types(&log);
    assert_eq!(
        theirs.len(),
        m.tensor_count(),
        "llama.cpp's dry run log:\n{log}"
    );
    if ours == theirs {
        return Ok(());
    }
    let diff: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("{} {} / llama.cpp {} {}", a.0, a.1.name(), b.0, b.1.name()))
        .collect();
    Err(format!(
        "{}: {} tensors differ: {diff:?}",
        ft.name(),
        diff.len()
    ))
}

#[test]
fn every_preset_chooses_llama_cpps_types() {
    let dir = temp_dir("types");
    let src = dir.join("src.gguf");
    model::write(&src, &TWO_ROWS);
    let with = Ask {
        importance: Some(importance(&TWO_ROWS)),
        ..Ask::default()
    };
    let mut failures = Vec::new();
    for ft in FileType::ALL {
        if !needs_importance(ft) {
            if let Err(e) = same_types(&src, &dir, ft, &Ask::default()) {
                failures.push(e);
            }
        }
        if let Err(e) = same_types(&src, &dir, ft, &with) {
            failures.push(format!("with an importance matrix: {e}"));
        }
    }
    // The options: overrides by pattern, output and embedding types, pure, leave output.
    let asks = [
        Ask {
            tensor_types: vec![
                ("attn_q".into(), DataType::Q8_0),
                (r"blk\.[0-3]\.ffn_(up|gate)".into(), DataType::Q5_0),
                ("ffn_down".into(), DataType::Q6_K),
            ],
            ..Ask::default()
        },
        Ask {
            output_tensor_type: Some(DataType::Q5_K),
            token_embedding_type: Some(DataType::Q8_0),
            ..Ask::default()
        },
        Ask {
            pure: true,
            leave_output_tensor: true,
            ..Ask::default()
        },
    ];
    for ask in &asks {
        for ft in [FileType::Q4_K_M, FileType::Q3_K_S, FileType::IQ4_XS] {
            if let Err(e) = same_types(&src, &dir, ft, ask) {
                failures.push(format!("with options: {e}"));
            }
        }
    }
    // Tied embeddings, one KV head per head.
    let tied = dir.join("tied.gguf");
    model::write(
        &tied,
        &Spec {
            tied: true,
            n_head_kv: 4,
            ..TWO_ROWS
        },
    );
    for ft in [
        FileType::Q4_K_M,
        FileType::Q2_K,
        FileType::IQ4_NL,
        FileType::Q6_K,
    ] {
        if let Err(e) = same_types(&tied, &dir, ft, &Ask::default()) {
            failures.push(format!("tied: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The presets not compared byte for byte: those whose main type is IQ1_S, IQ1_M, IQ2_XXS,
/// IQ2_XS or IQ2_S, whose grids ggml builds in its first call of the process for each (about
/// 40 s on a CI core, all five). Those types' bytes are checked against ggml by
/// `tests/quantize_iq_ggml.rs`, and these presets' types by
/// [`every_preset_chooses_llama_cpps_types`]. (IQ3_XXS is compared: its few IQ2_S tensors cost
/// one grid.)
const SLOW_PRESETS: [FileType; 6] = [
    FileType::IQ1_S,
    FileType::IQ1_M,
    FileType::IQ2_XXS,
    FileType::IQ2_XS,
    FileType::IQ2_S,
    FileType::IQ2_M,
];

fn same_bytes(src: &Path, dir: &Path, ft: FileType, ask: &Ask) -> Result<(), String> {
    let theirs = dir.join(format!("llama-{}.gguf", ft.name()));
    let ours = dir.join(format!("ours-{}.gguf", ft.name()));
    let _ = std::fs::remove_file(&theirs);
    let done = llama_quantize(src, &theirs, ft, ask);
    let mine = requantize_file(src, &ours, &options(ft, ask), &mut |_: &Progress<'_>| true);
    match (mine, done) {
        // Both refuse (a row length no type of the preset fits).
        (Err(_), false) => return Ok(()),
        (Err(e), true) => return Err(format!("{}: {e}", ft.name())),
        (Ok(_), false) => return Err(format!("{}: llama.cpp refuses, we do not", ft.name())),
        (Ok(_), true) => {}
    }
    let (a, b) = (
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    if a == b {
        return Ok(());
    }
    // Say where: the header, or which tensors.
    let (ma, mb) = (
        Model::open(&ours, OpenOptions::default()).unwrap(),
        Model::open(&theirs, OpenOptions::default()).unwrap(),
    );
    let mut what = Vec::new();
    for i in 0..ma.tensor_count().min(mb.tensor_count()) {
        let (x, y) = (ma.tensor_at(i).unwrap().info, mb.tensor_at(i).unwrap().info);
        if x.name != y.name || x.dtype != y.dtype || x.data != y.data {
            what.push(format!(
                "{} {} / llama.cpp {} {}",
                String::from_utf8_lossy(x.name),
                x.dtype.name(),
                String::from_utf8_lossy(y.name),
                y.dtype.name()
            ));
        }
    }
    let ka: Vec<_> = ma
        .first()
        .metadata()
        .map(|e| (e.key.to_vec(), format!("{:?}", e.value)))
        .collect();
    let kb: Vec<_> = mb
        .first()
        .metadata()
        .map(|e| (e.key.to_vec(), format!("{:?}", e.value)))
        .collect();
    if ka != kb {
        what.push(format!("metadata: ours {ka:?}\nllama.cpp {kb:?}"));
    }
    Err(format!(
        "{}: the files differ ({} and {} bytes): {what:?}",
        ft.name(),
        a.len(),
        b.len()
    ))
}

#[test]
fn supported_presets_give_llama_cpps_bytes() {
    let dir = temp_dir("bytes");
    let (thin, two) = (dir.join("thin.gguf"), dir.join("two.gguf"));
    model::write(&thin, &THIN);
    model::write(&two, &TWO_ROWS);
    let with = Ask {
        importance: Some(importance(&THIN)),
        ..Ask::default()
    };
    let mut failures = Vec::new();
    // The presets are the library's list: every_preset_chooses_llama_cpps_types runs each
    // through libllama, which refuses an id that is no preset of its own.
    for ft in FileType::ALL {
        if SLOW_PRESETS.contains(&ft) {
            continue;
        }
        let asks: &[&Ask] = if needs_importance(ft) {
            &[&with]
        } else {
            &[&Ask::default(), &with]
        };
        let src = if is_iq(ft) { &two } else { &thin };
        for ask in asks.iter().copied() {
            if let Err(e) = same_bytes(src, &dir, ft, ask) {
                failures.push(format!(
                    "{}{e}",
                    if ask.importance.is_some() {
                        "with an importance matrix: "
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    // An F16 source, with overrides.
    let f16 = dir.join("f16.gguf");
    model::write(
        &f16,
        &Spec {
            weights: DataType::F16,
            ..THIN
        },
    );
    let ask = Ask {
        tensor_types: vec![
            ("attn_(q|k)".into(), DataType::Q5_1),
            ("ffn_up".into(), DataType::Q3_K),
        ],
        output_tensor_type: Some(DataType::Q8_0),
        ..Ask::default()
    };
    for ft in [FileType::Q4_K_M, FileType::Q8_0] {
        if let Err(e) = same_bytes(&f16, &dir, ft, &ask) {
            failures.push(format!("F16 source: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The command, compiled once per test process against this profile's library.
fn command() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let root = manifest_dir();
        let lib = lib_dir();
        let exe = bin_dir("requantize_llama").join("gguf-quantize");
        let mut cmd = std::process::Command::new(cc());
        cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .args([
                "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all",
                "-g",
            ])
            .arg(format!("-I{}", root.join("include").display()))
            .arg(root.join("tools/gguf-quantize.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lgguf")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
        link_aside(&mut cmd, &exe);
        exe
    })
}

#[test]
fn the_command_writes_llama_quantizes_file() {
    let dir = temp_dir("command");
    let src = dir.join("src.gguf");
    model::write(&src, &THIN);
    // An imatrix file as llama-imatrix writes it, for every 2-D weight.
    let imatrix = dir.join("imatrix.gguf");
    let mut w = gguf::Writer::new();
    w.add_metadata(
        "imatrix.datasets",
        gguf::MetadataValue::Array(
            gguf::ValueType::String,
            vec![gguf::MetadataValue::string("calibration.txt")],
        ),
    )
    .unwrap();
    w.add_metadata("imatrix.chunk_count", gguf::MetadataValue::U32(7))
        .unwrap();
    w.add_metadata("imatrix.chunk_size", gguf::MetadataValue::U32(512))
        .unwrap();
    for (name, values) in importance(&THIN) {
        let sums: Vec<u8> = values
            .iter()
            .flat_map(|v| (v * 70.0).to_le_bytes())
            .collect();
        w.add_tensor(
            format!("{name}.in_sum2"),
            &[values.len() as u64, 1],
            DataType::F32,
            sums,
        )
        .unwrap();
        w.add_tensor(
            format!("{name}.counts"),
            &[1, 1],
            DataType::F32,
            70.2f32.to_le_bytes().to_vec(),
        )
        .unwrap();
    }
    w.write_file(&imatrix).unwrap();

    let ours = dir.join("ours.gguf");
    let out = run(std::process::Command::new(command())
        .arg("--imatrix")
        .arg(&imatrix)
        .args(["--tensor-type", "ffn_UP=q5_0", "--no-sync", "-q"])
        .arg(&src)
        .arg(&ours)
        .args(["q4_k_m", "2"]));
    assert!(
        out.stdout.is_empty(),
        "--quiet printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );

    // llama-quantize's call: the imatrix as it normalizes it, the override lower-cased, its keys.
    let m = Importance::open(&imatrix).unwrap();
    let entries: Vec<(String, Vec<f32>)> = importance(&THIN)
        .into_iter()
        .map(|(n, _)| {
            let v = m.get(&n).unwrap().to_vec();
            (n, v)
        })
        .collect();
    let n_entries = entries.len() as i64;
    let ask = Ask {
        importance: Some(entries),
        tensor_types: vec![("ffn_up".into(), DataType::Q5_0)],
        kv_overrides: vec![
            (
                "quantize.imatrix.file".into(),
                Err(imatrix.to_str().unwrap().into()),
            ),
            (
                "quantize.imatrix.dataset".into(),
                Err("calibration.txt".into()),
            ),
            ("quantize.imatrix.entries_count".into(), Ok(n_entries)),
            ("quantize.imatrix.chunks_count".into(), Ok(7)),
        ],
        ..Ask::default()
    };
    let theirs = dir.join("theirs.gguf");
    assert!(llama_quantize(&src, &theirs, FileType::Q4_K_M, &ask));
    let (a, b) = (
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    assert!(
        a == b,
        "gguf-quantize's file differs from llama-quantize's ({} and {} bytes)",
        a.len(),
        b.len()
    );
    let types = types_of(&ours);
    assert!(types
        .iter()
        .any(|(n, t)| n == "blk.5.ffn_up.weight" && *t == DataType::Q5_0));

    // A failure leaves nothing: an unknown type, exit status 1 or 2, no output.
    let bad = dir.join("bad.gguf");
    let out = std::process::Command::new(command())
        .args(["--tensor-type", "attn_q=iq2_xxs", "-q"])
        .arg(&src)
        .arg(&bad)
        .arg("Q4_K_M")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("importance matrix"), "{err}");
    assert!(!bad.exists());
    // A tensor-type file that cannot be read (a directory) fails, naming it.
    let out = std::process::Command::new(command())
        .arg("--tensor-type-file")
        .arg(&dir)
        .arg("-q")
        .arg(&src)
        .arg(&bad)
        .arg("Q4_K_M")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read the tensor types") && err.contains(dir.to_str().unwrap()),
        "{err}"
    );
    assert!(!bad.exists());
    let out = std::process::Command::new(command())
        .args(["--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn split_sources_and_keep_split_as_llama_cpp() {
    let dir = temp_dir("split");
    let mut w = model::writer(&THIN);
    w.set_sync(false);
    let shards = w.into_shards(25).unwrap();
    let n = shards.len();
    for (no, s) in shards.into_iter().enumerate() {
        s.write_file(dir.join(gguf::Writer::shard_path("src", no, n)))
            .unwrap();
    }
    let first = dir.join(gguf::Writer::shard_path("src", 0, n));
    for keep_split in [false, true] {
        let ask = Ask {
            keep_split,
            ..Ask::default()
        };
        // llama.cpp names shards after the path it is given; we after the path less `.gguf`.
        assert!(llama_quantize(
            &first,
            &dir.join("theirs"),
            FileType::Q4_K_M,
            &ask
        ));
        let ours = dir.join("ours.gguf");
        requantize_file(
            &first,
            &ours,
            &options(FileType::Q4_K_M, &ask),
            &mut |_: &Progress<'_>| true,
        )
        .unwrap();
        let count = if keep_split { n } else { 1 };
        for no in 0..count {
            let (a, b) = if keep_split {
                (
                    dir.join(gguf::Writer::shard_path("ours", no, n)),
                    dir.join(gguf::Writer::shard_path("theirs", no, n)),
                )
            } else {
                (ours.clone(), dir.join("theirs"))
            };
            assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                "{} differs from llama.cpp's {}",
                a.display(),
                b.display()
            );
        }
    }
    // --keep-split on a single-file source: one shard, DST-00001-of-00001.gguf, as llama.cpp
    // names and writes it.
    let single = dir.join("single.gguf");
    model::write(&single, &THIN);
    let ask = Ask {
        keep_split: true,
        ..Ask::default()
    };
    assert!(llama_quantize(
        &single,
        &dir.join("theirs-single"),
        FileType::Q4_K_M,
        &ask
    ));
    // COPY from a source without general.file_type: llama.cpp writes the type its loader
    // guesses (F16 with the guessed flag, 1025), and so do we.
    let mut w = model::writer(&Spec {
        weights: DataType::F16,
        ..THIN
    });
    w.remove_metadata("general.file_type");
    w.set_sync(false);
    let bare = dir.join("bare.gguf");
    w.write_file(&bare).unwrap();
    let copy = Ask {
        only_copy: true,
        ..Ask::default()
    };
    let (theirs, ours) = (dir.join("copy-theirs.gguf"), dir.join("copy-ours.gguf"));
    assert!(llama_quantize(&bare, &theirs, FileType::F16, &copy));
    requantize_file(
        &bare,
        &ours,
        &options(FileType::F16, &copy),
        &mut |_: &Progress<'_>| true,
    )
    .unwrap();
    assert_eq!(
        Model::open(&ours, OpenOptions::default())
            .unwrap()
            .first()
            .get("general.file_type"),
        Some(gguf::Value::U32(1025))
    );
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap());
    let summary = requantize_file(
        &single,
        &dir.join("ours-single.gguf"),
        &options(FileType::Q4_K_M, &ask),
        &mut |_: &Progress<'_>| true,
    )
    .unwrap();
    let (a, b) = (
        dir.join("ours-single-00001-of-00001.gguf"),
        dir.join("theirs-single-00001-of-00001.gguf"),
    );
    assert_eq!(summary.files, vec![a.clone()]);
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `struct llama_model_params` (x86-64: 80 bytes; checked against the defaults libllama returns).
#[repr(C)]
#[derive(Clone, Copy)]
struct ModelParams {
    devices: *const c_void,
    tensor_buft_overrides: *const c_void,
    n_gpu_layers: i32,
    split_mode: i32,
    load_mode: i32,
    lazy_mode: i32,
    main_gpu: i32,
    tensor_split: *const f32,
    progress_callback: *const c_void,
    progress_callback_user_data: *mut c_void,
    kv_overrides: *const c_void,
    vocab_only: bool,
    check_tensors: bool,
    use_extra_bufts: bool,
    no_host: bool,
    no_alloc: bool,
    load_mtp: bool,
}

/// `struct llama_context_params` (x86-64: 160 bytes; checked against the defaults).
#[repr(C)]
#[derive(Clone, Copy)]
struct ContextParams {
    n_ctx: u32,
    n_batch: u32,
    n_ubatch: u32,
    n_seq_max: u32,
    n_rs_seq: u32,
    n_outputs_max: u32,
    n_outputs_max_per_seq: u32,
    n_threads: i32,
    n_threads_batch: i32,
    ctx_type: i32,
    rope_scaling_type: i32,
    pooling_type: i32,
    attention_type: i32,
    flash_attn_type: i32,
    rope_freq_base: f32,
    rope_freq_scale: f32,
    yarn_ext_factor: f32,
    yarn_attn_factor: f32,
    yarn_beta_fast: f32,
    yarn_beta_slow: f32,
    yarn_orig_ctx: u32,
    defrag_thold: f32,
    cb_eval: *const c_void,
    cb_eval_user_data: *mut c_void,
    type_k: u32,
    type_v: u32,
    abort_callback: *const c_void,
    abort_callback_data: *mut c_void,
    embeddings: bool,
    offload_kqv: bool,
    no_perf: bool,
    op_offload: bool,
    swa_full: bool,
    kv_unified: bool,
    samplers: *const c_void,
    n_samplers: usize,
    ctx_other: *mut c_void,
}

/// `struct llama_batch` (x86-64: 56 bytes; checked against what `llama_batch_get_one` returns).
#[repr(C)]
#[derive(Clone, Copy)]
struct Batch {
    n_tokens: i32,
    token: *mut i32,
    embd: *mut f32,
    pos: *mut i32,
    n_seq_id: *mut i32,
    seq_id: *mut *mut i32,
    logits: *mut i8,
}

/// libllama's inference entry points (`include/llama.h`), with ggml's CPU backend loaded.
struct Infer {
    model_default_params: unsafe extern "C" fn() -> ModelParams,
    context_default_params: unsafe extern "C" fn() -> ContextParams,
    model_load_from_file: unsafe extern "C" fn(*const c_char, ModelParams) -> *mut c_void,
    model_free: unsafe extern "C" fn(*mut c_void),
    init_from_model: unsafe extern "C" fn(*mut c_void, ContextParams) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    model_get_vocab: unsafe extern "C" fn(*mut c_void) -> *const c_void,
    vocab_n_tokens: unsafe extern "C" fn(*const c_void) -> i32,
    tokenize:
        unsafe extern "C" fn(*const c_void, *const c_char, i32, *mut i32, i32, bool, bool) -> i32,
    batch_get_one: unsafe extern "C" fn(*mut i32, i32) -> Batch,
    decode: unsafe extern "C" fn(*mut c_void, Batch) -> i32,
    get_logits_ith: unsafe extern "C" fn(*mut c_void, i32) -> *mut f32,
}

/// A symbol's address as the function pointer type `F`.
///
/// # Safety
/// `F` must be the symbol's signature.
unsafe fn fn_ptr<F: Copy>(f: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: same size; the caller vouches for the signature.
    unsafe { std::mem::transmute_copy(&f) }
}

fn infer() -> &'static Infer {
    static INFER: OnceLock<Infer> = OnceLock::new();
    INFER.get_or_init(|| {
        llama(); // loaded, its log (and ggml's) silenced
        let open = |name: &str| Lib::open(&ggml_dir().join(name));
        let sym = |lib: Lib, name: &str| lib.sym(name);
        let (ggml, lib) = (open("libggml.v0.5.0.so"), open("libllama.v0.5.0.so"));
        // SAFETY: each symbol is cast to its signature in include/llama.h and
        // ggml/include/ggml-backend.h; the structs passed by value are checked below.
        unsafe {
            let backend_load: unsafe extern "C" fn(*const c_char) -> *mut c_void =
                std::mem::transmute(sym(ggml, "ggml_backend_load"));
            let cpu =
                CString::new(ggml_dir().join("libggml-cpu-x64.so").to_str().unwrap()).unwrap();
            assert!(
                !backend_load(cpu.as_ptr()).is_null(),
                "ggml_backend_load({cpu:?}) failed"
            );
            let backend_init: unsafe extern "C" fn() =
                std::mem::transmute(sym(lib, "llama_backend_init"));
            backend_init();
            macro_rules! f {
                ($name:literal) => {
                    fn_ptr(sym(lib, $name))
                };
            }
            let infer = Infer {
                model_default_params: f!("llama_model_default_params"),
                context_default_params: f!("llama_context_default_params"),
                model_load_from_file: f!("llama_model_load_from_file"),
                model_free: f!("llama_model_free"),
                init_from_model: f!("llama_init_from_model"),
                free: f!("llama_free"),
                model_get_vocab: f!("llama_model_get_vocab"),
                vocab_n_tokens: f!("llama_vocab_n_tokens"),
                tokenize: f!("llama_tokenize"),
                batch_get_one: f!("llama_batch_get_one"),
                decode: f!("llama_decode"),
                get_logits_ith: f!("llama_get_logits_ith"),
            };
            // The layouts: the defaults llama-model.cpp and llama-context.cpp set, each where
            // the header puts it.
            assert_eq!(std::mem::size_of::<ModelParams>(), 80);
            let m = (infer.model_default_params)();
            assert!(m.devices.is_null() && m.tensor_buft_overrides.is_null());
            assert_eq!(
                (
                    m.n_gpu_layers,
                    m.split_mode,
                    m.load_mode,
                    m.lazy_mode,
                    m.main_gpu
                ),
                (-1, 1, -1, 1, 0)
            );
            assert!(m.tensor_split.is_null() && m.progress_callback.is_null());
            assert!(m.progress_callback_user_data.is_null() && m.kv_overrides.is_null());
            assert_eq!(
                [
                    m.vocab_only,
                    m.check_tensors,
                    m.use_extra_bufts,
                    m.no_host,
                    m.no_alloc,
                    m.load_mtp
                ],
                [false, false, true, false, false, false]
            );
            assert_eq!(std::mem::size_of::<ContextParams>(), 160);
            let c = (infer.context_default_params)();
            assert_eq!(
                [
                    c.n_ctx,
                    c.n_batch,
                    c.n_ubatch,
                    c.n_seq_max,
                    c.n_rs_seq,
                    c.n_outputs_max,
                    c.n_outputs_max_per_seq
                ],
                [512, 2048, 512, 1, 0, 0, 1]
            );
            assert_eq!(
                [
                    c.ctx_type,
                    c.rope_scaling_type,
                    c.pooling_type,
                    c.attention_type,
                    c.flash_attn_type
                ],
                [0, -1, -1, -1, -1]
            );
            assert!(c.n_threads > 0 && c.n_threads == c.n_threads_batch);
            assert_eq!(
                [
                    c.rope_freq_base,
                    c.rope_freq_scale,
                    c.yarn_ext_factor,
                    c.yarn_attn_factor,
                    c.yarn_beta_fast,
                    c.yarn_beta_slow,
                    c.defrag_thold
                ],
                [0.0, 0.0, -1.0, -1.0, -1.0, -1.0, -1.0]
            );
            assert_eq!((c.yarn_orig_ctx, c.type_k, c.type_v), (0, 1, 1));
            assert!(c.cb_eval.is_null() && c.cb_eval_user_data.is_null());
            assert!(c.abort_callback.is_null() && c.abort_callback_data.is_null());
            assert_eq!(
                [
                    c.embeddings,
                    c.offload_kqv,
                    c.no_perf,
                    c.op_offload,
                    c.swa_full,
                    c.kv_unified
                ],
                [false, true, true, true, true, false]
            );
            assert!(c.samplers.is_null() && c.n_samplers == 0 && c.ctx_other.is_null());
            assert_eq!(std::mem::size_of::<Batch>(), 56);
            let mut tokens = [1i32, 2, 3];
            let b = (infer.batch_get_one)(tokens.as_mut_ptr(), 3);
            assert_eq!((b.n_tokens, b.token), (3, tokens.as_mut_ptr()));
            assert!(b.embd.is_null() && b.pos.is_null() && b.n_seq_id.is_null());
            assert!(b.seq_id.is_null() && b.logits.is_null());
            infer
        }
    })
}

/// The last token's logits after libllama decodes `prompt` with the model in `path` (on the
/// CPU, one thread, mapped), and the prompt's tokens.
fn forward(path: &Path, prompt: &str) -> Result<(Vec<i32>, Vec<f32>), String> {
    let l = infer();
    let _guard = lock();
    let p = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: the functions as the header declares them, with structs of its layout; the model,
    // context and vocabulary pointers are used only while the model and context live, and freed
    // once; the token buffer outlives the batch that points into it.
    unsafe {
        let mut mp = (l.model_default_params)();
        mp.n_gpu_layers = 0;
        mp.load_mode = 1; // LLAMA_LOAD_MODE_MMAP
        let model = (l.model_load_from_file)(p.as_ptr(), mp);
        if model.is_null() {
            return Err(format!("libllama cannot load {}", path.display()));
        }
        let mut cp = (l.context_default_params)();
        (cp.n_ctx, cp.n_batch, cp.n_ubatch) = (64, 16, 16);
        (cp.n_threads, cp.n_threads_batch) = (1, 1);
        let ctx = (l.init_from_model)(model, cp);
        if ctx.is_null() {
            (l.model_free)(model);
            return Err(format!("no context for {}", path.display()));
        }
        let vocab = (l.model_get_vocab)(model);
        let n_vocab = (l.vocab_n_tokens)(vocab);
        let mut tokens = vec![0i32; 16];
        let n = (l.tokenize)(
            vocab,
            prompt.as_ptr().cast(),
            prompt.len() as i32,
            tokens.as_mut_ptr(),
            16,
            true,
            false,
        );
        let result = if n <= 0 {
            Err(format!("llama_tokenize gives {n}"))
        } else {
            tokens.truncate(n as usize);
            let rc = (l.decode)(ctx, (l.batch_get_one)(tokens.as_mut_ptr(), n));
            let logits = (l.get_logits_ith)(ctx, -1);
            if rc != 0 || logits.is_null() {
                Err(format!("llama_decode gives {rc}"))
            } else {
                Ok((
                    tokens.clone(),
                    std::slice::from_raw_parts(logits, n_vocab as usize).to_vec(),
                ))
            }
        };
        (l.free)(ctx);
        (l.model_free)(model);
        result
    }
}

/// The model of the forward pass: full rows, one layer, a narrow feed-forward (a multiple of
/// 32, not of 256: `ffn_down` takes the fallbacks), and the first 512 tokens of llama's
/// SentencePiece vocabulary (`models/ggml-vocab-llama-spm.gguf`: control tokens, the 256 byte
/// tokens, the first merges), so that libllama tokenizes any prompt. Small, as our quantizers
/// run unoptimized in the tests.
const FORWARD: Spec = Spec {
    n_layer: 1,
    n_ff: 96,
    n_vocab: 512,
    ..SPEC
};

fn write_forward_model(path: &Path) {
    write_forward_model_aligned(path, None);
}

/// [`write_forward_model`] with `general.alignment` set to `alignment`.
fn write_forward_model_aligned(path: &Path, alignment: Option<u32>) {
    let vocab = llama_src_dir().join("models/ggml-vocab-llama-spm.gguf");
    let v = Model::open(&vocab, OpenOptions::default()).unwrap();
    let mut w = model::writer(&FORWARD);
    let n = FORWARD.n_vocab as usize;
    for e in v.first().metadata() {
        if !e.key.starts_with(b"tokenizer.") {
            continue;
        }
        let value = match gguf::MetadataValue::from(e.value) {
            gguf::MetadataValue::Array(t, mut items) => {
                assert_eq!(items.len(), 32000);
                items.truncate(n);
                gguf::MetadataValue::Array(t, items)
            }
            other => other,
        };
        w.add_metadata(std::str::from_utf8(e.key).unwrap(), value)
            .unwrap();
    }
    if let Some(a) = alignment {
        w.set_alignment(a).unwrap();
    }
    w.set_sync(false);
    w.write_file(path).unwrap();
}

/// A source with `general.alignment = 64`: our output keeps the key and lays its data out at 64
/// bytes, and libllama runs it (its logits near the source's); llama.cpp's own output keeps the
/// key but lays the data out at 32 bytes, and libllama refuses it (the difference
/// docs/quantize-models.md states).
#[test]
fn libllama_runs_our_output_of_a_64_byte_aligned_source() {
    let dir = temp_dir("aligned");
    let src = dir.join("src64.gguf");
    write_forward_model_aligned(&src, Some(64));
    let prompt = "The quick brown fox";
    let (source_tokens, source_logits) = forward(&src, prompt).unwrap();
    let ours = dir.join("ours64.gguf");
    requantize_file(
        &src,
        &ours,
        &options(FileType::Q8_0, &Ask::default()),
        &mut |_: &Progress<'_>| true,
    )
    .unwrap();
    let m = Model::open(&ours, OpenOptions::default()).unwrap();
    assert_eq!(
        m.first().get("general.alignment"),
        Some(gguf::Value::U32(64))
    );
    for i in 0..m.tensor_count() {
        let t = m.tensor_at(i).unwrap().info;
        assert_eq!(t.offset % 64, 0, "{}", String::from_utf8_lossy(t.name));
    }
    let (tokens, logits) = forward(&ours, prompt).unwrap();
    assert_eq!(tokens, source_tokens);
    let range = source_logits.iter().fold(f32::MIN, |m, x| m.max(*x))
        - source_logits.iter().fold(f32::MAX, |m, x| m.min(*x));
    let off = logits
        .iter()
        .zip(&source_logits)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(
        logits.iter().all(|x| x.is_finite()) && off <= 0.03 * range,
        "{off} of {range}"
    );
    let theirs = dir.join("theirs64.gguf");
    assert!(llama_quantize(
        &src,
        &theirs,
        FileType::Q8_0,
        &Ask::default()
    ));
    assert!(
        forward(&theirs, prompt).is_err(),
        "libllama loads llama.cpp's own file now"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// libllama loads each preset's file of ours and of llama.cpp's, decodes the same prompt, and
/// gives the same last-token logits, bit for bit (same bytes in, same backend, one thread).
/// Quantized activations make some single-weight changes invisible in the logits, so this check
/// stands beside the byte comparison above, not instead of it.
#[test]
fn libllama_runs_our_files_as_its_own() {
    let dir = temp_dir("forward");
    let src = dir.join("src.gguf");
    write_forward_model(&src);
    let prompt = "The quick brown fox";
    let (source_tokens, source_logits) = forward(&src, prompt).unwrap();
    assert!(
        source_tokens.len() > 3 && source_tokens[0] == 1,
        "{source_tokens:?}"
    );
    assert!(source_logits.iter().all(|x| x.is_finite()));
    let mut failures = Vec::new();
    let range = source_logits.iter().fold(f32::MIN, |m, x| m.max(*x))
        - source_logits.iter().fold(f32::MAX, |m, x| m.min(*x));
    let mut seen: Vec<Vec<f32>> = vec![source_logits];
    // Each preset, and how far (a fraction of the float model's logit range) its logits may
    // lie from the float model's.
    for (ft, near) in [
        (FileType::Q8_0, 0.03),
        (FileType::Q4_K_M, 0.15),
        (FileType::Q6_K, 0.08),
        (FileType::IQ4_XS, 0.2),
    ] {
        let theirs = dir.join(format!("llama-{}.gguf", ft.name()));
        let ours = dir.join(format!("ours-{}.gguf", ft.name()));
        assert!(llama_quantize(&src, &theirs, ft, &Ask::default()));
        requantize_file(
            &src,
            &ours,
            &options(ft, &Ask::default()),
            &mut |_: &Progress<'_>| true,
        )
        .unwrap();
        let (tokens, a) = forward(&ours, prompt).unwrap();
        let (their_tokens, b) = forward(&theirs, prompt).unwrap();
        assert_eq!(tokens, source_tokens);
        assert_eq!(their_tokens, source_tokens);
        assert_eq!(a.len(), FORWARD.n_vocab as usize);
        // The model ran: finite logits, not all the same.
        assert!(a.iter().all(|x| x.is_finite()), "{}: {a:?}", ft.name());
        assert!(a.iter().any(|x| *x != a[0]), "{}: {a:?}", ft.name());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        if bits(&a) != bits(&b) {
            let same_file = std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap();
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            failures.push(format!(
                "{}: the logits differ (files identical: {same_file}; largest difference {worst})",
                ft.name()
            ));
        }
        // The model ran on the weights: near the float model's logits, yet each preset's own.
        let off = a
            .iter()
            .zip(&seen[0])
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(
            off <= near * range,
            "{}: logits {off} from the float model's (range {range})",
            ft.name()
        );
        assert!(
            seen.iter().all(|s| bits(s) != bits(&a)),
            "{}: the logits of another file",
            ft.name()
        );
        seen.push(a);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The command stops within a second of SIGINT or SIGTERM, inside a tensor that takes far
/// longer, and leaves no file.
#[test]
fn the_command_stops_soon_on_a_signal() {
    let dir = temp_dir("signal");
    let mut w = gguf::Writer::new();
    w.add_metadata("general.architecture", gguf::MetadataValue::string("llama"))
        .unwrap();
    let x: Vec<u8> = model::values("blk.0.attn_q.weight", &[1024, 4096])
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    w.add_tensor("blk.0.attn_q.weight", &[1024, 4096], DataType::F32, x)
        .unwrap();
    w.set_sync(false);
    let src = dir.join("big.gguf");
    w.write_file(&src).unwrap();
    let dst = dir.join("out.gguf");
    for signal in ["-INT", "-TERM"] {
        let mut child = std::process::Command::new(command())
            .args(["-q", "--no-sync"])
            .arg(&src)
            .arg(&dst)
            .args(["IQ3_S", "1"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(
            child.try_wait().unwrap().is_none(),
            "done before the signal"
        );
        let sent = std::time::Instant::now();
        let kill = std::process::Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(kill.success());
        let out = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        assert!(
            took.as_secs_f64() < 1.0,
            "{signal}: stopped {took:?} after it"
        );
        assert_eq!(out.status.code(), Some(1), "{signal}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("interrupted"), "{err}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("big.gguf")], "{signal}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
