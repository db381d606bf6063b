//! A model requantized into a new file (`crate::requantize`), as llama-quantize does it.

use super::boundary::{c_path, c_str, guard, known_flags, null, write_out};
use crate::error::{Error, ErrorCode, Result};
use crate::requantize::{self, Options, Progress};
use std::ffi::{c_char, c_int, c_void, CString};

/// One tensor written, as `gguf_requantize` tells its progress callback.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFRequantizeStep {
    /// The tensor's position in the output (0-based) and the number of tensors.
    pub index: u64,
    /// The number of tensors.
    pub count: u64,
    /// Its name (NUL-terminated), valid during the call only.
    pub name: *const c_char,
    /// Its type in the source (a `GGUFDataType` id).
    pub from_type: u32,
    /// Its type in the output.
    pub to_type: u32,
    /// Bytes of source tensor data read so far.
    pub bytes_in: u64,
    /// Bytes of tensor data written so far.
    pub bytes_out: u64,
    /// All the source's tensor data, in bytes.
    pub total_in: u64,
}

/// Told each tensor as `gguf_requantize` writes it (on the calling thread); returns false to
/// stop, which fails the call with GGUF_ERROR_CODE_CANCELLED and leaves no output file.
pub type GGUFRequantizeProgressFn =
    Option<unsafe extern "C" fn(user: *mut c_void, step: *const GGUFRequantizeStep) -> bool>;

/// Every tensor quantized gets the preset's default type, no mixture (`--pure`).
pub const GGUF_REQUANTIZE_PURE: u32 = 1;
/// `output.weight` keeps its type (`--leave-output-tensor`).
pub const GGUF_REQUANTIZE_LEAVE_OUTPUT_TENSOR: u32 = 2;
/// Tensors already quantized may be quantized again (`--allow-requantize`).
pub const GGUF_REQUANTIZE_ALLOW_REQUANTIZE: u32 = 4;
/// One output shard per shard of the source (`--keep-split`), named
/// `DST-NNNNN-of-MMMMM.gguf` (`DST` without `.gguf`), a single-file source's too
/// (`DST-00001-of-00001.gguf`), as llama.cpp names them.
pub const GGUF_REQUANTIZE_KEEP_SPLIT: u32 = 8;
/// Do not flush the output to stable storage before it replaces the destination (faster; the
/// replace stays atomic).
pub const GGUF_REQUANTIZE_NO_SYNC: u32 = 16;

const KNOWN_FLAGS: u32 = 31;

/// What `gguf_requantize` does: llama-quantize's options. Zero-initialise it
/// (`GGUFRequantizeOptions o = {0};`), set `preset` and what else you need; a zero or NULL
/// field takes its default. Fields are only ever appended (`options_size` says how many the
/// caller knows).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFRequantizeOptions {
    /// The preset as llama-quantize names it (NUL-terminated, any case): `Q4_K_M`, `Q5_K_S`,
    /// `Q8_0`, `IQ4_XS`, `F16`, ..., `COPY` (tensors copied as they are). NULL: `Q8_0`.
    pub preset: *const c_char,
    /// `GGUF_REQUANTIZE_*` flags, combined with `|`.
    pub flags: u32,
    /// Threads for conversion and quantization: 0 or 1 the calling thread alone; at most 1024.
    pub threads: u32,
    /// The type of `output.weight` by ggml's name (`--output-tensor-type`), or NULL.
    pub output_tensor_type: *const c_char,
    /// The type of the token embeddings (`--token-embedding-type`), or NULL.
    pub token_embedding_type: *const c_char,
    /// `n_tensor_types` strings `PATTERN=TYPE` (`--tensor-type`: a regular expression found
    /// anywhere in a tensor's name, lower-cased, and a type name); the first that matches wins.
    /// Patterns mean what `std::regex` (ECMAScript) and `std::regex_search` make of them in
    /// llama-quantize; one it refuses, one too large (a count above 2147483647, more than
    /// 100,000 states) or a search of more than 2,000,000 steps fails the call, with the reason.
    pub tensor_types: *const *const c_char,
    /// The number of `tensor_types`.
    pub n_tensor_types: usize,
    /// The path of an imatrix GGUF file as llama-imatrix writes it (`--imatrix`), or NULL.
    pub imatrix: *const c_char,
    /// `n_include_weights` name parts: only the imatrix entries whose name contains one are
    /// used (`--include-weights`).
    pub include_weights: *const *const c_char,
    /// The number of `include_weights`.
    pub n_include_weights: usize,
    /// `n_exclude_weights` name parts: the imatrix entries whose name contains one are not
    /// used (`--exclude-weights`; not together with `include_weights`).
    pub exclude_weights: *const *const c_char,
    /// The number of `exclude_weights`.
    pub n_exclude_weights: usize,
    /// Split the output into shards of at most this many tensors (0: no split, unless
    /// `GGUF_REQUANTIZE_KEEP_SPLIT`).
    pub split_max_tensors: u32,
    /// Called after each tensor is written, or NULL.
    pub progress: GGUFRequantizeProgressFn,
    /// Passed to `progress`.
    pub progress_user: *mut c_void,
    /// NULL, or an `int` (such as a `volatile sig_atomic_t` a signal handler sets) read while
    /// the call works, from any of its threads: once it is not 0 the call stops within about a
    /// second, even inside a tensor, failing with GGUF_ERROR_CODE_CANCELLED and leaving no
    /// output file. It must stay valid during the call.
    pub cancel: *const c_int,
}

/// The caller's `cancel` int, read from the call's threads.
#[derive(Clone, Copy)]
struct CancelFlag(*const c_int);

// SAFETY: the header's contract: the int stays valid during the call (the only time the flag
// is used: `Options` do not outlive `gguf_requantize`), and it is only ever read, with volatile
// reads of a whole aligned int (what a signal handler's `sig_atomic_t` store gives).
unsafe impl Send for CancelFlag {}
// SAFETY: as for `Send`: shared reads only.
unsafe impl Sync for CancelFlag {}

impl CancelFlag {
    fn is_set(&self) -> bool {
        // SAFETY: valid during the call (the contract), and read as a whole int.
        unsafe { std::ptr::read_volatile(self.0) != 0 }
    }
}

/// What `gguf_requantize` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GGUFRequantizeResult {
    /// Tensors written.
    pub tensors: u64,
    /// Of them, those whose type changed.
    pub converted: u64,
    /// Of them, those whose chosen type did not fit their rows (a fallback type was taken).
    pub fell_back: u64,
    /// Bytes of tensor data in the source.
    pub bytes_in: u64,
    /// Bytes of tensor data in the output.
    pub bytes_out: u64,
    /// Files written (1, or the number of shards: `<dst without .gguf>-NNNNN-of-MMMMM.gguf`).
    pub files: u64,
}

// Written out: raw pointers implement `Default` only from Rust 1.88, and the crate builds on 1.82.
#[allow(clippy::derivable_impls)]
impl Default for GGUFRequantizeOptions {
    fn default() -> Self {
        GGUFRequantizeOptions {
            preset: std::ptr::null(),
            flags: 0,
            threads: 0,
            output_tensor_type: std::ptr::null(),
            token_embedding_type: std::ptr::null(),
            tensor_types: std::ptr::null(),
            n_tensor_types: 0,
            imatrix: std::ptr::null(),
            include_weights: std::ptr::null(),
            n_include_weights: 0,
            exclude_weights: std::ptr::null(),
            n_exclude_weights: 0,
            split_max_tensors: 0,
            progress: None,
            progress_user: std::ptr::null_mut(),
            cancel: std::ptr::null(),
        }
    }
}

fn invalid(message: String) -> Error {
    Error::msg(ErrorCode::InvalidArgument, message)
}

/// The caller's options: the first `size` bytes of `options` (an older, the same or a newer
/// header's struct).
///
/// # Safety
/// `options` is NULL or points to `size` readable bytes.
unsafe fn read_options(
    options: *const GGUFRequantizeOptions,
    size: usize,
) -> Result<GGUFRequantizeOptions> {
    if options.is_null() {
        return Err(null("options"));
    }
    let ours = std::mem::size_of::<GGUFRequantizeOptions>();
    if isize::try_from(size).is_err() {
        return Err(invalid(format!(
            "options_size {size} is larger than any object"
        )));
    }
    // The fields a caller built before `cancel` was appended know this much of the struct.
    let first = std::mem::offset_of!(GGUFRequantizeOptions, cancel);
    if size < ours && size != first {
        return Err(invalid(format!(
            "options_size {size} is smaller than GGUFRequantizeOptions ({ours} bytes; {first} \
             without its last field, cancel)"
        )));
    }
    // SAFETY: `options` points to `size` readable bytes (the contract).
    let bytes = unsafe { super::boundary::slice(options.cast::<u8>(), size, "options")? };
    if size > ours && bytes[ours..].iter().any(|&b| b != 0) {
        return Err(invalid(format!(
            "options_size {size} with fields set past the {ours} bytes of \
             GGUFRequantizeOptions this library knows (built for a newer header)"
        )));
    }
    if size >= ours {
        // SAFETY: at least `ours` readable bytes; read unaligned as a copy.
        return Ok(unsafe { options.read_unaligned() });
    }
    // An older caller's struct: its fields, the later ones zero (their defaults).
    let mut out = GGUFRequantizeOptions::default();
    // SAFETY: `size` bytes are readable at `options` (checked above) and `out` holds more; every
    // field's bytes come whole from the caller's struct of the same layout, the rest stay
    // those of the default (NULL `cancel`).
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            (&mut out as *mut GGUFRequantizeOptions).cast::<u8>(),
            size,
        );
    }
    Ok(out)
}

/// `n` NUL-terminated strings at `list`, as UTF-8.
///
/// # Safety
/// `list` is NULL (with `n` 0) or points to `n` pointers to NUL-terminated strings.
unsafe fn strings(list: *const *const c_char, n: usize, what: &str) -> Result<Vec<String>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(null(what));
    }
    (0..n)
        .map(|i| {
            // SAFETY: `list` holds `n` pointers (the contract); each is NULL or a string.
            let bytes = unsafe { c_str(*list.add(i), &format!("{what}[{i}]"))? };
            text(bytes, &format!("{what}[{i}]"))
        })
        .collect()
}

fn text(bytes: &[u8], what: &str) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// An optional string field.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn optional(p: *const c_char, what: &str) -> Result<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, NUL-terminated (the contract).
    Ok(Some(text(unsafe { c_str(p, what)? }, what)?))
}

/// Requantizes the model at `src_path` (a file, or any shard of a split model: all are read)
/// into `dst_path`, as llama-quantize does: the preset's per-tensor types (the same choices
/// llama.cpp makes), the overrides, the importance matrix, norms and other 1-D tensors kept,
/// tensors written in llama.cpp's order with its metadata (`general.file_type`,
/// `general.quantization_version`, and with an imatrix `quantize.imatrix.*`). It streams:
/// memory holds a few tensors, never the model. The output appears whole or not at all: on any
/// failure, or when `progress` returns false, no output file is left and an existing
/// `dst_path` is untouched. A split output (`GGUF_REQUANTIZE_KEEP_SPLIT`, `split_max_tensors`)
/// is written to `<dst_path without .gguf>-NNNNN-of-MMMMM.gguf`; its shards are all flushed
/// before any is renamed into place, and a failure at any shard leaves none of them (shards
/// already renamed are removed: the old files they replaced do not come back). The source is
/// read by position, not mapped: a source truncated while it is read fails the call with an
/// I/O error (never a fault), leaving no output.
///
/// `options` (not NULL, `options_size` = `sizeof(GGUFRequantizeOptions)`, or
/// `offsetof(GGUFRequantizeOptions, cancel)` from a caller built before that field) is read
/// during the call. `result` (may be NULL) receives what was done. Returns true on success; false with
/// the reason recorded (an unknown preset or type name, a bad pattern, a type that needs an
/// importance matrix without one, a tensor already quantized without
/// `GGUF_REQUANTIZE_ALLOW_REQUANTIZE`, an I/O error, ...).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_requantize(
    src_path: *const c_char,
    dst_path: *const c_char,
    options: *const GGUFRequantizeOptions,
    options_size: usize,
    result: *mut GGUFRequantizeResult,
) -> bool {
    guard(false, || {
        // SAFETY: NULL or NUL-terminated strings (the header's contract).
        let (src, dst) = unsafe { (c_path(src_path, "src_path")?, c_path(dst_path, "dst_path")?) };
        // SAFETY: NULL or `options_size` readable bytes (the header's contract).
        let c = unsafe { read_options(options, options_size)? };
        known_flags(c.flags, KNOWN_FLAGS, "GGUF_REQUANTIZE_* flags")?;
        // SAFETY: every pointer field is NULL or what the header says (the contract).
        let (preset, output, embedding, imatrix, tensor_types, include, exclude) = unsafe {
            (
                optional(c.preset, "preset")?,
                optional(c.output_tensor_type, "output_tensor_type")?,
                optional(c.token_embedding_type, "token_embedding_type")?,
                optional(c.imatrix, "imatrix")?,
                strings(c.tensor_types, c.n_tensor_types, "tensor_types")?,
                strings(c.include_weights, c.n_include_weights, "include_weights")?,
                strings(c.exclude_weights, c.n_exclude_weights, "exclude_weights")?,
            )
        };
        let mut o = Options::for_preset(preset.as_deref().unwrap_or("Q8_0"))?;
        o.pure = c.flags & GGUF_REQUANTIZE_PURE != 0;
        o.leave_output_tensor = c.flags & GGUF_REQUANTIZE_LEAVE_OUTPUT_TENSOR != 0;
        o.allow_requantize = c.flags & GGUF_REQUANTIZE_ALLOW_REQUANTIZE != 0;
        o.keep_split = c.flags & GGUF_REQUANTIZE_KEEP_SPLIT != 0;
        o.sync = c.flags & GGUF_REQUANTIZE_NO_SYNC == 0;
        o.threads = c.threads.max(1);
        o.split_max_tensors = usize::try_from(c.split_max_tensors).unwrap_or(usize::MAX);
        if !c.cancel.is_null() {
            super::boundary::aligned(c.cancel, "cancel")?;
            let flag = CancelFlag(c.cancel);
            o.cancel = Some(requantize::Cancel::new(move || flag.is_set()));
        }
        o.output_tensor_type = output
            .as_deref()
            .map(requantize::data_type_named)
            .transpose()?;
        o.token_embedding_type = embedding
            .as_deref()
            .map(requantize::data_type_named)
            .transpose()?;
        o.tensor_types = tensor_types
            .iter()
            .map(|t| requantize::parse_tensor_type(t))
            .collect::<Result<_>>()?;
        if let Some(path) = imatrix {
            o.load_importance(std::path::Path::new(&path), &include, &exclude)?;
        } else if !include.is_empty() || !exclude.is_empty() {
            return Err(invalid(
                "include_weights and exclude_weights apply to an imatrix, and none is given".into(),
            ));
        }
        let summary = requantize::requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| {
            let Some(f) = c.progress else { return true };
            let name = CString::new(p.name.to_vec()).unwrap_or_default();
            let step = GGUFRequantizeStep {
                index: p.index as u64,
                count: p.count as u64,
                name: name.as_ptr(),
                from_type: p.from.id(),
                to_type: p.to.id(),
                bytes_in: p.bytes_in,
                bytes_out: p.bytes_out,
                total_in: p.total_in,
            };
            // SAFETY: the caller's callback with its own user pointer; `step` and the name it
            // points to live through the call.
            unsafe { f(c.progress_user, &step) }
        })?;
        let r = GGUFRequantizeResult {
            tensors: summary.tensors.len() as u64,
            converted: summary.converted as u64,
            fell_back: summary.fell_back as u64,
            bytes_in: summary.bytes_in,
            bytes_out: summary.bytes_out,
            files: summary.files.len() as u64,
        };
        // SAFETY: NULL or valid for a write (the header's contract).
        unsafe { write_out(result, r) };
        Ok(true)
    })
}

/// The preset llama-quantize names `name` (any case, the aliases `Q3_K`, `Q4_K`, `Q5_K`, a
/// decimal id, `COPY`): its `general.file_type` id (`LLAMA_FTYPE_*`; 0 for COPY, which keeps the
/// source's), or -1 with the reason recorded when no preset has that name.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_requantize_preset_id(name: *const c_char) -> i64 {
    guard(-1, || {
        // SAFETY: NULL or NUL-terminated (the header's contract).
        let name = text(unsafe { c_str(name, "name")? }, "name")?;
        let o = Options::for_preset(&name)?;
        Ok(i64::from(o.file_type.id()))
    })
}
