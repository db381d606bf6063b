//! A model turned into another type in one pass, as llama.cpp's `llama-quantize` does it: a
//! preset's per-tensor types ([`rules`]), overrides by name pattern, an importance matrix
//! ([`Importance`]), 1-D tensors and norms kept as they are, split models in and out.
//!
//! It streams: each tensor is read (converted to floats where it changes type), quantized and
//! written before the next is read, so memory holds a few tensors, never the model. The output
//! goes through the atomic writer: until every tensor is written the destination is untouched,
//! and a failure (or a progress callback asking to stop) leaves no output file. The tensors are
//! written in llama.cpp's order (by layer, then by name), with its metadata changes
//! (`general.file_type`, `general.quantization_version`, the imatrix keys), so that the file is
//! the one `llama_model_quantize` writes from the same source where the kernels give the same
//! bytes.

pub mod imatrix;
pub mod rules;

pub use crate::regex::Pattern;
pub use imatrix::Importance;
pub use rules::{FileType, Hparams};

use crate::error::{Error, ErrorCode, Result};
use crate::format::{ByteOrder, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
use crate::load::{read_tensor, tensor_to_float_parallel};
use crate::model::Model;
use crate::source::{OpenOptions, Source};
use crate::text::quote;
use crate::types::DataType;
use crate::writer::{MetadataValue, TensorStream, Writer};
use rules::{Choice, TensorShape, TypeRules};
use std::path::{Path, PathBuf};

/// ggml's quantization version (`GGML_QNT_VERSION`), written as `general.quantization_version`.
pub const QUANTIZATION_VERSION: u32 = 2;

/// A request to stop: polled before each tensor and, while a tensor is quantized, between runs
/// of its rows (a fraction of a second of work each), so that the work stops within about a
/// second of it turning true ([`ErrorCode::Cancelled`], no file left).
#[derive(Clone)]
pub struct Cancel(std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl Cancel {
    /// A request that is made when `asked` returns true (it may be called from any thread).
    pub fn new(asked: impl Fn() -> bool + Send + Sync + 'static) -> Cancel {
        Cancel(std::sync::Arc::new(asked))
    }

    /// Whether stopping is asked for.
    pub fn asked(&self) -> bool {
        (self.0)()
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cancel")
    }
}

/// The runs of rows a tensor is quantized in while [`Options::cancel`] is set: each about a
/// tenth of a second (timed, where the platform has a clock; else a fixed number of values).
struct Runs {
    values: usize,
    row: usize,
    #[cfg(not(target_arch = "wasm32"))]
    started: Option<std::time::Instant>,
}

impl Runs {
    fn new(row: usize, threads: usize) -> Runs {
        Runs {
            // Small at first (the slowest types take milliseconds a row), then grown.
            values: (1 << 12) * threads.max(1),
            row: row.max(1),
            #[cfg(not(target_arch = "wasm32"))]
            started: None,
        }
    }

    fn rows(&self) -> usize {
        (self.values / self.row).max(1)
    }

    fn start(&mut self) {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.started = Some(std::time::Instant::now());
        }
    }

    fn finished(&mut self) {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(t) = self.started {
            let ms = t.elapsed().as_millis();
            if ms < 25 {
                self.values = self.values.saturating_mul(4).min(1 << 30);
            } else if ms > 200 {
                self.values = (self.values / 2).max(1);
            }
        }
    }
}

/// What to turn a model into: llama-quantize's options.
#[derive(Clone, Debug)]
pub struct Options {
    /// The preset (`Q4_K_M`, `Q8_0`, `IQ4_XS`, ...): the default type and its mixture.
    pub file_type: FileType,
    /// Every quantized tensor gets the preset's default type, no mixture (`--pure`).
    pub pure: bool,
    /// Leave `output.weight` as it is (`--leave-output-tensor`).
    pub leave_output_tensor: bool,
    /// Copy every tensor as it is, changing only the metadata (llama-quantize's `COPY`).
    pub only_copy: bool,
    /// The type of `output.weight` (`--output-tensor-type`).
    pub output_tensor_type: Option<DataType>,
    /// The type of the token embeddings (`--token-embedding-type`).
    pub token_embedding_type: Option<DataType>,
    /// Types by tensor-name pattern (`--tensor-type PATTERN=TYPE`, regular expressions found
    /// anywhere in the name); the first that matches a tensor wins.
    pub tensor_types: Vec<(String, DataType)>,
    /// The importance matrix (`--imatrix`).
    pub importance: Option<Importance>,
    /// The imatrix file's name, as llama-quantize writes it to `quantize.imatrix.file`: when
    /// set (with an importance matrix), the `quantize.imatrix.*` keys the command writes are
    /// written too (the file, the first dataset, the entry and chunk counts); when not, the
    /// metadata is what `llama_model_quantize` itself writes.
    pub importance_file: Option<String>,
    /// Allow tensors that are already quantized to be quantized again (`--allow-requantize`).
    pub allow_requantize: bool,
    /// Write one shard per shard of the source (`--keep-split`).
    pub keep_split: bool,
    /// Split the output into shards of at most this many tensors (0: no split), as
    /// `gguf-split --split-max-tensors` does.
    pub split_max_tensors: usize,
    /// Threads for conversion and quantization (0: one per core).
    pub threads: u32,
    /// Flush the output to stable storage before it replaces the destination (on by default).
    pub sync: bool,
    /// Stop when asked (a signal in the command); none by default.
    pub cancel: Option<Cancel>,
}

impl Options {
    /// The options for preset `file_type`, everything else as llama-quantize's defaults, on one
    /// thread.
    pub fn new(file_type: FileType) -> Options {
        Options {
            file_type,
            pure: false,
            leave_output_tensor: false,
            only_copy: false,
            output_tensor_type: None,
            token_embedding_type: None,
            tensor_types: Vec::new(),
            importance: None,
            importance_file: None,
            allow_requantize: false,
            keep_split: false,
            split_max_tensors: 0,
            threads: 1,
            sync: true,
            cancel: None,
        }
    }
}

/// The tensor type named `name` (ggml's name, any case: `q4_k`, `Q8_0`, `f16`), as
/// llama-quantize's `--output-tensor-type`, `--token-embedding-type` and `--tensor-type` read
/// it.
pub fn data_type_named(name: &str) -> Result<DataType> {
    DataType::ALL
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            invalid(format!(
                "'{name}' is not a ggml type name (Q4_K, Q8_0, F16, ...)"
            ))
        })
}

/// A `--tensor-type` argument, `PATTERN=TYPE`: the pattern lower-cased as llama-quantize does,
/// and the type.
pub fn parse_tensor_type(arg: &str) -> Result<(String, DataType)> {
    let (pattern, ty) = arg
        .split_once('=')
        .ok_or_else(|| invalid(format!("tensor type '{arg}' is not PATTERN=TYPE")))?;
    if pattern.is_empty() {
        return Err(invalid(format!(
            "tensor type '{arg}' has no pattern before '='"
        )));
    }
    if ty.is_empty() {
        return Err(invalid(format!(
            "tensor type '{arg}' has no type after '='"
        )));
    }
    // llama-quantize lower-cases the pattern with C's `tolower`: ASCII letters only.
    let pattern = pattern.to_ascii_lowercase();
    Pattern::new(&pattern)?;
    Ok((pattern, data_type_named(ty)?))
}

impl Options {
    /// The options for the preset llama-quantize names `name` (any case; `Q3_K`, `Q4_K` and
    /// `Q5_K` are the medium mixtures; a decimal file type id; `COPY` copies every tensor).
    pub fn for_preset(name: &str) -> Result<Options> {
        if name.eq_ignore_ascii_case("COPY") {
            let mut o = Options::new(FileType::F32);
            o.only_copy = true;
            return Ok(o);
        }
        let ft = FileType::from_name(name).ok_or_else(|| {
            invalid(format!(
                "'{name}' is not one of llama-quantize's presets (Q4_K_M, Q5_K_S, Q8_0, \
                 IQ4_XS, F16, COPY, ...)"
            ))
        })?;
        Ok(Options::new(ft))
    }

    /// Reads the importance matrix at `path` (`--imatrix`), keeps the entries `include` names
    /// and drops those `exclude` names (`--include-weights`, `--exclude-weights`, which
    /// llama-quantize does not take together), and records the path for the
    /// `quantize.imatrix.*` keys.
    pub fn load_importance(
        &mut self,
        path: &Path,
        include: &[String],
        exclude: &[String],
    ) -> Result<()> {
        if !include.is_empty() && !exclude.is_empty() {
            return Err(invalid(
                "weights to include and to exclude cannot be given together".into(),
            ));
        }
        let mut m = Importance::open(path)?;
        m.filter(include, exclude);
        self.importance = Some(m);
        self.importance_file = Some(path.to_string_lossy().into_owned());
        Ok(())
    }
}

/// One tensor of the output, as planned.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedTensor {
    /// Its name.
    pub name: Vec<u8>,
    /// Its position in the source model.
    pub index: usize,
    /// Its dimensions.
    pub dims: Vec<u64>,
    /// Its type in the source.
    pub from: DataType,
    /// Its type in the output.
    pub to: DataType,
    /// Whether its chosen type did not fit its rows and a fallback type was taken.
    pub fell_back: bool,
    /// The output shard it goes to (0-based).
    pub shard: usize,
    /// Its size in the output, in bytes.
    pub size: u64,
}

/// What one step of the work did, as a progress callback sees it.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// The tensor just written (0-based, in output order).
    pub index: usize,
    /// How many tensors there are.
    pub count: usize,
    /// Its name.
    pub name: &'a [u8],
    /// Its type in the source and in the output.
    pub from: DataType,
    /// Its type in the output.
    pub to: DataType,
    /// Bytes of source tensor data read so far, and its total.
    pub bytes_in: u64,
    /// Bytes of tensor data written so far.
    pub bytes_out: u64,
    /// All the source's tensor data.
    pub total_in: u64,
}

/// What a requantization did.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Every tensor as written, in output order.
    pub tensors: Vec<PlannedTensor>,
    /// How many tensors changed type.
    pub converted: usize,
    /// How many took a fallback type.
    pub fell_back: usize,
    /// Bytes of tensor data in the source, and in the output.
    pub bytes_in: u64,
    /// Bytes of tensor data in the output.
    pub bytes_out: u64,
    /// The files written (one, or each shard).
    pub files: Vec<PathBuf>,
}

fn invalid(message: String) -> Error {
    Error::msg(ErrorCode::InvalidArgument, message)
}

/// The type rules `options` give (for a model with an importance matrix if `options` has one):
/// what [`requantize`] chooses each tensor's type by. Fails on a name pattern that does not
/// parse, or a type option that names a type ggml cannot quantize to.
pub fn type_rules(options: &Options) -> Result<TypeRules> {
    let tensor_types = options
        .tensor_types
        .iter()
        .map(|(p, t)| Ok((Pattern::new(p)?, *t)))
        .collect::<Result<Vec<_>>>()?;
    for (what, ty) in [
        ("output tensor type", options.output_tensor_type),
        ("token embedding type", options.token_embedding_type),
    ]
    .into_iter()
    .chain(
        options
            .tensor_types
            .iter()
            .map(|(_, t)| ("tensor type", Some(*t))),
    ) {
        if let Some(ty) = ty {
            if !crate::quantize::can_quantize(ty) {
                return Err(Error::msg(
                    ErrorCode::Unsupported,
                    format!("{what} {}: ggml has no quantizer for it", ty.name()),
                ));
            }
        }
    }
    Ok(TypeRules {
        file_type: options.file_type,
        pure: options.pure,
        leave_output_tensor: options.leave_output_tensor,
        only_copy: options.only_copy,
        output_tensor_type: options.output_tensor_type,
        token_embedding_type: options.token_embedding_type,
        tensor_types,
        has_importance: options.importance.as_ref().is_some_and(|i| !i.is_empty()),
    })
}

/// The output's tensors, in order, with their types and shards: what [`requantize`] writes,
/// checked as it checks them (an importance matrix where a type needs one, of the right size,
/// no requantizing unless allowed), nothing read or written.
pub fn plan(model: &Model<Source>, options: &Options) -> Result<Vec<PlannedTensor>> {
    let rules = type_rules(options)?;
    let hp = Hparams::from_file(model.first());
    let count = model.tensor_count();
    let infos: Vec<_> = (0..count)
        .map(|i| {
            model
                .tensor_at(i)
                .ok_or_else(|| Error::msg(ErrorCode::Internal, format!("tensor {i} is missing")))
        })
        .collect::<Result<_>>()?;
    // llama.cpp's order: by layer and name, or with --keep-split by shard and data offset.
    let order: Vec<usize> = if options.keep_split {
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by_key(|&i| (infos[i].shard, infos[i].info.offset));
        order
    } else {
        let names: Vec<&[u8]> = infos.iter().map(|t| t.info.name).collect();
        rules::llama_order(&names)
    };
    let shapes: Vec<TensorShape<'_>> = order
        .iter()
        .map(|&i| {
            let info = &infos[i].info;
            TensorShape {
                name: info.name,
                dims: &info.dims[..info.n_dims as usize],
                data_type: info.dtype,
            }
        })
        .collect();
    let choices = rules::choose_types(&rules, &hp, &shapes)?;
    let shard_of = |k: usize| -> usize {
        if options.keep_split {
            infos[order[k]].shard
        } else {
            // 0: no split.
            k.checked_div(options.split_max_tensors).unwrap_or(0)
        }
    };
    let mut planned = Vec::with_capacity(count);
    for (k, (&i, choice)) in order.iter().zip(&choices).enumerate() {
        let t = &shapes[k];
        check_tensor(options, t, choice)?;
        let row = t.dims.first().copied().unwrap_or(1);
        let block = choice.data_type.block_elems();
        if row % block != 0 {
            return Err(invalid(format!(
                "tensor {}: its rows of {row} values are not whole blocks of {} ({block} \
                 values a block); choose a type whose block divides {row}",
                quote(t.name),
                choice.data_type.name()
            )));
        }
        let size = choice.data_type.tensor_bytes(t.dims).ok_or_else(|| {
            invalid(format!(
                "tensor {}: its size as {} overflows",
                quote(t.name),
                choice.data_type.name()
            ))
        })?;
        planned.push(PlannedTensor {
            name: t.name.to_vec(),
            index: i,
            dims: t.dims.to_vec(),
            from: t.data_type,
            to: choice.data_type,
            fell_back: choice.fell_back,
            shard: shard_of(k),
            size,
        });
    }
    Ok(planned)
}

/// The checks of one tensor before anything is written: those llama.cpp makes, made up front.
fn check_tensor(options: &Options, t: &TensorShape<'_>, choice: &Choice) -> Result<()> {
    let name = quote(t.name);
    let to = choice.data_type;
    if t.data_type == to {
        return Ok(());
    }
    if !crate::quantize::can_quantize(to) {
        return Err(Error::msg(
            ErrorCode::Unsupported,
            format!("tensor {name}: {} cannot be quantized", to.name()),
        ));
    }
    if rules::is_quantized(t.data_type) && !options.allow_requantize {
        return Err(invalid(format!(
            "tensor {name} is already quantized ({}): requantizing it to {} loses quality; \
             allow it explicitly (--allow-requantize)",
            t.data_type.name(),
            to.name()
        )));
    }
    let ne0 = t.dims.first().copied().unwrap_or(1);
    let ne2 = t.dims.get(2).copied().unwrap_or(1);
    let weights = options.importance.as_ref().and_then(|m| m.get(t.name));
    let usable = match weights {
        Some(w) if w.len() as u64 == ne0.saturating_mul(ne2) => true,
        Some(w) if !rules::is_token_embd(t.name) => {
            return Err(invalid(format!(
                "tensor {name}: the importance matrix holds {} values, the tensor needs {} \
                 ({ne0} per row, {ne2} experts)",
                w.len(),
                ne0.saturating_mul(ne2)
            )))
        }
        _ => false,
    };
    if choice.requires_importance && !usable {
        return Err(invalid(format!(
            "tensor {name}: {} needs an importance matrix{}",
            to.name(),
            if options.importance.is_some() {
                ", and the one given has no entry for it"
            } else {
                " (--imatrix)"
            }
        )));
    }
    Ok(())
}

/// Requantizes the model at `src` into `dst` (see [`requantize`]), reading the source by
/// position: a source truncated meanwhile fails with an I/O error, and no file is left.
pub fn requantize_file(
    src: &Path,
    dst: &Path,
    options: &Options,
    progress: &mut dyn FnMut(&Progress<'_>) -> bool,
) -> Result<Summary> {
    // Read by position, not mapped: a source cut short while it is read (truncated by another
    // process) is an I/O error, where a mapping would fault (SIGBUS).
    let open = OpenOptions {
        no_map: true,
        ..OpenOptions::default()
    };
    let model = Model::open(src, open)?;
    requantize(&model, dst, options, progress)
}

/// The file names of `count` shards written for `dst`: `dst` itself for one; else
/// `<dst without .gguf>-NNNNN-of-MMMMM.gguf`.
pub fn output_paths(dst: &Path, count: usize) -> Vec<PathBuf> {
    if count <= 1 {
        return vec![dst.to_path_buf()];
    }
    shard_paths(dst, count)
}

/// The file names of `count` shards written for `dst` with `--keep-split`: always
/// `<dst without .gguf>-NNNNN-of-MMMMM.gguf`, a single file too
/// (`DST-00001-of-00001.gguf`), as llama.cpp names them.
pub fn keep_split_paths(dst: &Path, count: usize) -> Vec<PathBuf> {
    shard_paths(dst, count.max(1))
}

fn shard_paths(dst: &Path, count: usize) -> Vec<PathBuf> {
    let text = dst.to_string_lossy();
    let prefix = text.strip_suffix(".gguf").unwrap_or(&text);
    (0..count)
        .map(|no| PathBuf::from(Writer::shard_path(prefix, no, count)))
        .collect()
}

/// Writes `model` requantized as `options` say to `dst` (or its shards, see [`output_paths`]):
/// every tensor in [`plan`]'s order and types, the metadata of the model's first file with
/// `general.quantization_version` and `general.file_type` set (and moved to the end, as
/// llama.cpp's writer does), the split keys of a split output, and with an importance matrix
/// the `quantize.imatrix.*` keys llama-quantize writes. `progress` is called after each tensor
/// (on this thread); returning `false` stops the work ([`ErrorCode::Cancelled`]). A failure
/// leaves no output file: a split output's shards are finished together
/// ([`TensorStream::finish_all`]), so a failure at any shard leaves none.
pub fn requantize(
    model: &Model<Source>,
    dst: &Path,
    options: &Options,
    progress: &mut dyn FnMut(&Progress<'_>) -> bool,
) -> Result<Summary> {
    if let Some(m) = &options.importance {
        m.check_finite()?;
    }
    if let Some(i) = model
        .shards()
        .iter()
        .position(|s| s.byte_order() == ByteOrder::Big)
    {
        return Err(Error::msg(
            ErrorCode::Unsupported,
            format!(
                "{} is a big-endian file: requantizing writes little-endian files from \
                 little-endian sources only",
                model.shard_names()[i]
            ),
        ));
    }
    let planned = plan(model, options)?;
    let n_shards = planned.last().map_or(1, |t| t.shard + 1);
    let writers = output_writers(model, options, &planned, n_shards)?;
    let paths = if options.keep_split {
        keep_split_paths(dst, n_shards)
    } else {
        output_paths(dst, n_shards)
    };
    let mut streams: Vec<TensorStream> = writers
        .iter()
        .zip(&paths)
        .map(|(w, p)| w.begin_file(p))
        .collect::<Result<_>>()?;

    let total_in: u64 = planned
        .iter()
        .filter_map(|t| model.tensor_at(t.index).map(|m| m.info.size))
        .sum();
    let mut summary = Summary {
        tensors: Vec::with_capacity(planned.len()),
        converted: 0,
        fell_back: 0,
        bytes_in: 0,
        bytes_out: 0,
        files: paths.clone(),
    };
    for (k, t) in planned.iter().enumerate() {
        check_cancel(options, &t.name)?;
        match crate::load::positioned_tensor(model, t.index).filter(|_| t.from == t.to) {
            // A tensor that keeps its type goes from the source file to the output without a
            // copy in memory (inside the kernel where it can).
            Some((source, at)) => streams[t.shard].write_tensor_from(&*source, at)?,
            None => {
                let data = tensor_bytes(model, t, options)?;
                streams[t.shard].write_tensor_data(&data)?;
            }
        }
        let info = model.tensor_at(t.index).map(|m| m.info);
        summary.bytes_in += info.map_or(0, |i| i.size);
        summary.bytes_out += t.size;
        summary.converted += usize::from(t.from != t.to);
        summary.fell_back += usize::from(t.fell_back);
        summary.tensors.push(t.clone());
        let step = Progress {
            index: k,
            count: planned.len(),
            name: &t.name,
            from: t.from,
            to: t.to,
            bytes_in: summary.bytes_in,
            bytes_out: summary.bytes_out,
            total_in,
        };
        if !progress(&step) {
            return Err(Error::msg(
                ErrorCode::Cancelled,
                format!(
                    "stopped by the progress callback after tensor {} of {}; no file was written",
                    k + 1,
                    planned.len()
                ),
            ));
        }
    }
    // The shards appear together or not at all.
    TensorStream::finish_all(&mut streams)?;
    Ok(summary)
}

/// The writers of the output's files: the metadata llama.cpp writes, each shard's tensors.
fn output_writers(
    model: &Model<Source>,
    options: &Options,
    planned: &[PlannedTensor],
    n_shards: usize,
) -> Result<Vec<Writer>> {
    let first = model.first();
    let mut head = Writer::new();
    head.set_sync(options.sync);
    head.copy_metadata_from(first)?;
    for key in [SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS_COUNT] {
        head.remove_metadata(key);
    }
    let file_type = if options.only_copy {
        match first.get("general.file_type") {
            Some(v) => v
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(options.file_type.id()),
            None => guessed_file_type(model),
        }
    } else {
        options.file_type.id()
    };
    set(
        &mut head,
        "general.quantization_version",
        MetadataValue::U32(QUANTIZATION_VERSION),
    )?;
    set(
        &mut head,
        "general.file_type",
        MetadataValue::U32(file_type),
    )?;
    let importance = options.importance.as_ref().filter(|m| !m.is_empty());
    if let (Some(m), Some(file)) = (importance, &options.importance_file) {
        // llama-quantize's strings are cut to 127 bytes; here on a character boundary, so
        // that the value stays UTF-8 (llama-quantize may cut inside a character).
        let cut = |s: &str| {
            let mut end = s.len().min(127);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            MetadataValue::String(s.as_bytes()[..end].to_vec())
        };
        set(&mut head, "quantize.imatrix.file", cut(file))?;
        if let Some(d) = m.datasets.first() {
            set(&mut head, "quantize.imatrix.dataset", cut(d))?;
        }
        let entries = u32::try_from(m.len()).unwrap_or(u32::MAX);
        set(
            &mut head,
            "quantize.imatrix.entries_count",
            MetadataValue::U32(entries),
        )?;
        if m.chunk_count > 0 {
            set(
                &mut head,
                "quantize.imatrix.chunks_count",
                MetadataValue::U32(m.chunk_count),
            )?;
        }
    }
    let alignment = head.alignment();
    let mut writers = vec![head];
    for _ in 1..n_shards {
        let mut w = Writer::new();
        w.set_sync(options.sync);
        if alignment != crate::format::DEFAULT_ALIGNMENT {
            w.set_alignment(u32::try_from(alignment).unwrap_or(32))?;
        }
        writers.push(w);
    }
    if n_shards > 1 {
        let count = u16::try_from(n_shards).map_err(|_| {
            invalid(format!(
                "{n_shards} shards are more than a split model can have"
            ))
        })?;
        let total = i32::try_from(planned.len()).map_err(|_| {
            invalid(format!(
                "{} tensors are too many for split keys",
                planned.len()
            ))
        })?;
        for (no, w) in writers.iter_mut().enumerate() {
            let no = u16::try_from(no).unwrap_or(u16::MAX);
            set(w, SPLIT_NO, MetadataValue::U16(no))?;
            set(w, SPLIT_COUNT, MetadataValue::U16(count))?;
            set(w, SPLIT_TENSORS_COUNT, MetadataValue::I32(total))?;
        }
    }
    for t in planned {
        writers[t.shard].add_tensor_info(&t.name, &t.dims, t.to)?;
    }
    Ok(writers)
}

/// Fails with [`ErrorCode::Cancelled`] when [`Options::cancel`] asks to stop.
fn check_cancel(options: &Options, name: &[u8]) -> Result<()> {
    if options.cancel.as_ref().is_some_and(Cancel::asked) {
        return Err(Error::msg(
            ErrorCode::Cancelled,
            format!(
                "stopped as asked, at tensor {}; no file was written",
                quote(name)
            ),
        ));
    }
    Ok(())
}

/// llama.cpp's flag on a file type its loader guessed (`LLAMA_FTYPE_GUESSED`).
const FILE_TYPE_GUESSED: u32 = 1024;

/// The file type llama.cpp's loader guesses for a model without `general.file_type` (what
/// `COPY` writes then): the type most of its tensors have (the first to reach the largest
/// count, the tensors taken by name), as the file type that type stands for (F32 for a type
/// without one), with the guessed flag.
fn guessed_file_type(model: &Model<Source>) -> u32 {
    let mut names: Vec<(&[u8], DataType)> = (0..model.tensor_count())
        .filter_map(|i| model.tensor_at(i).map(|t| (t.info.name, t.info.dtype)))
        .collect();
    names.sort_by(|a, b| a.0.cmp(b.0));
    let mut counts = std::collections::HashMap::new();
    let (mut max, mut most) = (0u64, DataType::F32);
    for (_, t) in names {
        let n = counts.entry(t).or_insert(0u64);
        *n += 1;
        if *n > max {
            max = *n;
            most = t;
        }
    }
    use DataType as T;
    let id = match most {
        T::F16 => 1,
        T::BF16 => 32,
        T::Q4_0 => 2,
        T::Q4_1 => 3,
        T::Q5_0 => 8,
        T::Q5_1 => 9,
        T::Q8_0 => 7,
        T::Q2_K => 10,
        T::Q3_K => 12,
        T::Q4_K => 15,
        T::Q5_K => 17,
        T::Q6_K => 18,
        T::TQ1_0 => 36,
        T::TQ2_0 => 37,
        T::IQ2_XXS => 19,
        T::IQ2_XS => 20,
        T::IQ2_S => 28,
        T::IQ3_XXS => 23,
        T::IQ1_S => 24,
        T::IQ1_M => 31,
        T::IQ4_NL => 25,
        T::IQ4_XS => 30,
        T::IQ3_S => 26,
        T::NVFP4 => 39,
        T::Q1_0 => 40,
        T::Q2_0 => 41,
        _ => 0,
    };
    id | FILE_TYPE_GUESSED
}

/// Sets `key` as ggml's `gguf_set_val_*` does: removes it, then appends it.
fn set(w: &mut Writer, key: &str, value: MetadataValue) -> Result<()> {
    w.remove_metadata(key);
    w.add_metadata(key, value)?;
    Ok(())
}

/// One tensor's output bytes: its source bytes where its type stays, else its rows converted
/// to floats and quantized (expert by expert, each with its importance weights).
fn tensor_bytes(model: &Model<Source>, t: &PlannedTensor, options: &Options) -> Result<Vec<u8>> {
    let too_big = || {
        Error::msg(
            ErrorCode::OutOfMemory,
            format!("tensor {} does not fit in memory", quote(&t.name)),
        )
    };
    let info = model
        .tensor_at(t.index)
        .ok_or_else(|| Error::msg(ErrorCode::Internal, "a planned tensor is missing"))?
        .info;
    if t.from == t.to {
        let mut data = vec![0u8; usize::try_from(info.size).map_err(|_| too_big())?];
        read_tensor(model, t.index, 0, &mut data)?;
        return Ok(data);
    }
    let ne0 = usize::try_from(info.dims[0]).map_err(|_| too_big())?;
    let n = usize::try_from(info.n_elements).map_err(|_| too_big())?;
    let rows = info.n_elements / info.dims[0].max(1);
    let mut floats = vec![0f32; n];
    tensor_to_float_parallel(model, t.index, 0, rows, &mut floats, options.threads)?;
    let mut out = vec![0u8; usize::try_from(t.size).map_err(|_| too_big())?];
    let ne1 = usize::try_from(info.dims[1].max(1)).map_err(|_| too_big())?;
    let per_expert = ne0.checked_mul(ne1).ok_or_else(too_big)?;
    let importance = options.importance.as_ref().and_then(|m| m.get(&t.name));
    let importance = importance.filter(|w| w.len() as u64 == info.dims[0] * info.dims[2]);
    let row_bytes = usize::try_from(t.to.row_bytes(info.dims[0]).ok_or_else(too_big)?)
        .map_err(|_| too_big())?;
    let mut written = 0usize;
    for (e, src) in floats.chunks(per_expert.max(1)).enumerate() {
        // A 4-D tensor's experts repeat their matrices (llama.cpp uses the third dimension).
        let weights = importance.map(|w| {
            let k = e % (w.len() / ne0.max(1)).max(1);
            &w[k * ne0..(k + 1) * ne0]
        });
        let dst = &mut out[written..written + src.len() / ne0.max(1) * row_bytes];
        let rows_here = src.len() / ne0.max(1);
        if options.cancel.is_none() {
            crate::quantize::quantize_parallel(t.to, src, ne0, weights, dst, options.threads)
                .map_err(|e| e.with_context(format!("tensor {}", quote(&t.name))))?;
        } else {
            // In runs of rows of about a tenth of a second each, the request to stop polled
            // between them; rows are named as one call over the matrix names them.
            let mut run = Runs::new(ne0, crate::parallel::thread_count(options.threads));
            let mut done = 0;
            while done < rows_here {
                check_cancel(options, &t.name)?;
                let n = run.rows().min(rows_here - done);
                let x = &src[done * ne0..(done + n) * ne0];
                let y = &mut dst[done * row_bytes..(done + n) * row_bytes];
                run.start();
                crate::quantize::quantize_parallel_at(
                    t.to,
                    x,
                    ne0,
                    weights,
                    y,
                    options.threads,
                    done,
                )
                .map_err(|e| e.with_context(format!("tensor {}", quote(&t.name))))?;
                run.finished();
                done += n;
            }
        }
        written += rows_here * row_bytes;
    }
    if let Some(bad) = crate::quant::validate::find_bad_value(t.to, &out, ByteOrder::Little) {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "tensor {}: as {}, {} {} would hold {}: the source's values are not finite or \
                 too large for this type (ggml's check refuses such data)",
                quote(&t.name),
                t.to.name(),
                bad.what,
                bad.index,
                if bad.nan { "a NaN" } else { "an infinity" }
            ),
        ));
    }
    Ok(out)
}
