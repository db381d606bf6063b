//! A model: one GGUF file, or every shard of a split model (`name-00001-of-00005.gguf`, ...)
//! presented as one, as llama.cpp's `gguf-split` writes them: each shard carries `split.no`
//! (0-based), `split.count` and `split.tensors.count`; the first holds the model's metadata.

use crate::error::{Error, ErrorCode, ErrorKind, FirstSeen, Result};
use crate::file::{GgufFile, TensorInfo};
use crate::index::NameIndex;
use crate::read_at::{FileAt, ReadAt};
use crate::source::{map_range, open_file, OpenOptions, Source};
use crate::text::{path_text, quote};
use crate::value::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::format::{SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
/// Most shards a split model can have: `split.count` is written as a UINT16.
const MAX_SHARDS: u64 = u16::MAX as u64;

/// A model over one or more parsed files.
pub struct Model<S: AsRef<[u8]>> {
    shards: Vec<GgufFile<S>>,
    /// Each shard's path, exactly as opened.
    paths: Vec<PathBuf>,
    /// Each shard's path as shown in messages (escaped).
    names: Vec<String>,
    /// Global position of each shard's first tensor, then the total.
    starts: Vec<usize>,
    /// Name index over every shard's tensors; a single file uses its own.
    index: Option<NameIndex>,
}

/// A tensor of a model: which shard holds it, and its description there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelTensor<'a> {
    /// Position of the shard holding the tensor (0 for an unsplit file).
    pub shard: usize,
    /// The tensor, with offsets in its own shard.
    pub info: TensorInfo<'a>,
}

/// A split key's value, of any integer type (split keys are written with several), or what is
/// wrong with it, phrased for a message: `split.no is missing`, `split.no has type STRING, ...`.
fn split_key(file: &GgufFile<impl AsRef<[u8]>>, key: &str) -> std::result::Result<i128, String> {
    let value = file.get(key).ok_or_else(|| format!("{key} is missing"))?;
    let int = match value {
        Value::I8(_) | Value::I16(_) | Value::I32(_) | Value::I64(_) => {
            value.as_i64().map(i128::from)
        }
        _ => value.as_u64().map(i128::from),
    };
    int.ok_or_else(|| {
        format!(
            "{key} has type {}, not an integer",
            value.value_type().name()
        )
    })
}

/// `expected KEY N, found M`, or `expected KEY N, but KEY is missing` (or not an integer).
fn expected(
    key: &str,
    want: impl std::fmt::Display,
    found: &std::result::Result<i128, String>,
) -> String {
    match found {
        Ok(v) => format!("expected {key} {want}, found {v}"),
        Err(why) => format!("expected {key} {want}, but {why}"),
    }
}

/// The path of shard `no` (0-based) of `count`, given the path of shard `given` of the model.
fn shard_path(given_path: &Path, given: u16, no: u16, count: u16) -> Result<PathBuf> {
    let name = |no: u16| crate::format::shard_file_name("", no.into(), count.into());
    let suffix = name(given);
    let prefix = crate::platform::strip_path_suffix(given_path, &suffix).ok_or_else(|| {
        Error::new(ErrorKind::ShardMismatch {
            key: None,
            message: format!(
                "this is shard {} of {count} of a split model, but its name does not end in \
                 '{suffix}', so its siblings cannot be found (open it alone with \
                 GGUF_OPEN_FLAG_SINGLE_SHARD)",
                given + 1
            ),
        })
        .in_path(given_path)
    })?;
    let mut path = OsString::from(prefix);
    path.push(name(no));
    Ok(PathBuf::from(path))
}

/// An error about the split keys of the shard named `file`.
fn mismatch(file: &Path, key: &'static str, message: String) -> Error {
    let key = Some(key);
    Error::new(ErrorKind::ShardMismatch { key, message }).in_path(file)
}

fn check(ok: bool, file: &Path, key: &'static str, message: String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(mismatch(file, key, message))
    }
}

/// The shard count `given` (a file named `path`) declares, checked to be at most
/// [`MAX_SHARDS`]; 1 when it declares none.
fn shard_count(given: &GgufFile<Source>, path: &Path) -> Result<u16> {
    let count = split_key(given, SPLIT_COUNT).unwrap_or(1).max(1);
    check(
        count <= MAX_SHARDS.into(),
        path,
        SPLIT_COUNT,
        format!(
            "{SPLIT_COUNT} is {count}, more than the {MAX_SHARDS} shards a split model can \
             have"
        ),
    )?;
    Ok(u16::try_from(count).expect("1 <= count <= MAX_SHARDS, checked above"))
}

impl Model<Source> {
    /// Opens the file at `path`; if it is a shard of a split model (and `options.single_shard`
    /// is not set), opens every shard and presents them as one model.
    pub fn open(path: &Path, options: OpenOptions) -> Result<Model<Source>> {
        let open = |p: &Path| open_file(p, options).map_err(|e| e.in_path(p));
        let given = open(path)?;
        Model::with_siblings(given, path, options.single_shard, open)
    }

    /// The model that `given`, opened from `path`, belongs to: `given` alone if it is not a
    /// shard of a split model (or `single_shard` asks for it alone), else every shard, each
    /// found by the naming rule from `path` (a file's path, or a URL's, `src/http.rs`) and
    /// opened by `open`.
    pub(crate) fn with_siblings(
        given: GgufFile<Source>,
        path: &Path,
        single_shard: bool,
        open: impl Fn(&Path) -> Result<GgufFile<Source>>,
    ) -> Result<Model<Source>> {
        // Most files have no split keys: asked first, so that no message is formatted for them.
        if single_shard
            || given.get(SPLIT_COUNT).is_none()
            || split_key(&given, SPLIT_COUNT).unwrap_or(1) <= 1
        {
            return Ok(Model::of_one(given, path.to_path_buf()));
        }
        let count = shard_count(&given, path)?;
        let given_no = match split_key(&given, SPLIT_NO) {
            // Within 0..count, so within u16.
            Ok(no) if (0..count.into()).contains(&no) => {
                u16::try_from(no).expect("0 <= no < count <= MAX_SHARDS")
            }
            Ok(no) => {
                let last = count - 1;
                let why = format!(
                    "{SPLIT_NO} is {no}, outside the {count} shards of {SPLIT_COUNT} (0 to {last})"
                );
                return Err(mismatch(path, SPLIT_NO, why));
            }
            Err(why) => {
                let why = format!(
                    "{SPLIT_COUNT} is {count}, so this is a shard of a split model, but {why}"
                );
                return Err(mismatch(path, SPLIT_NO, why));
            }
        };
        let mut shards = Vec::with_capacity(count.into());
        let mut given = Some(given);
        for no in 0..count {
            let shard_path = shard_path(path, given_no, no, count)?;
            let file = match given.take_if(|_| no == given_no) {
                Some(file) => file,
                None => open(&shard_path)?,
            };
            shards.push((file, shard_path));
        }
        Model::from_shards(shards, count)
    }

    /// Opens the GGUF file stored as `length` bytes from `offset` of `file` (0: to the end of
    /// the file), such as an Android APK asset, a llamafile or a tar member. `name` names the
    /// model in errors; `file_name` names `file` in messages about it (its kind, its size, a
    /// failed read). Only a regular file is read by position (anything else is refused, saying
    /// what it is). The bytes are mapped from the page boundary at or before `offset`, unless
    /// `no_map` is set or they do not fit the address space: then the header is read by
    /// positioned reads and tensor data only when asked. Offsets are relative to the embedded
    /// file; a split model's shards are not looked for.
    pub fn open_embedded(
        file: std::fs::File,
        offset: u64,
        length: u64,
        name: &str,
        file_name: &str,
        no_map: bool,
    ) -> Result<Model<Source>> {
        let meta = file
            .metadata()
            .map_err(|e| Error::io(format!("cannot read the size of {file_name}"), e))?;
        if !meta.is_file() {
            return Err(Error::msg(
                ErrorCode::Io,
                format!(
                    "{file_name} is {}: only regular files are read by position",
                    crate::source::kind_of(&meta)
                ),
            ));
        }
        let size = meta.len();
        let length = if length == 0 {
            size.saturating_sub(offset)
        } else {
            length
        };
        if offset.checked_add(length).is_none_or(|end| end > size) || length == 0 {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{length} bytes from offset {offset} do not lie inside {name}'s file of \
                     {size} bytes"
                ),
            ));
        }
        let at = Arc::new(
            FileAt::new(file, offset, length, name.to_string()).file_named(file_name.to_string()),
        );
        if no_map || usize::try_from(length).is_err() {
            return Model::open_source(name, at);
        }
        let source =
            map_range(at.file(), offset, length, at.clone()).map_err(|e| e.in_file(name))?;
        let file = GgufFile::from_bytes(source).map_err(|e| e.in_file(name))?;
        Model::single(file, name.to_string())
    }

    /// Opens a model from one source read by position (a file descriptor, a read callback, a
    /// server), named `name` in messages. Its siblings cannot be found from a source, so a
    /// shard of a split model is opened alone (open every shard with [`Model::open_sources`]).
    pub fn open_source(name: &str, source: Arc<dyn ReadAt>) -> Result<Model<Source>> {
        let file = crate::source::parse_source(source)?;
        Ok(Model::of_one(file, PathBuf::from(name)))
    }

    /// Opens a split model from its shards' sources, in order (shard 1 first), each with its
    /// name for messages, checking the split keys as [`Model::open`] does: each shard's
    /// `split.no` is its position, every `split.count` is the number of sources, and
    /// `split.tensors.count` is the number of tensors in all of them. One source that is not a
    /// split model is an ordinary model.
    pub fn open_sources(sources: Vec<(String, Arc<dyn ReadAt>)>) -> Result<Model<Source>> {
        let given = sources.len();
        let mut shards = Vec::with_capacity(given);
        for (name, source) in sources {
            let file = crate::source::parse_source(source)?;
            shards.push((file, PathBuf::from(name)));
        }
        let Some((first, first_path)) = shards.first() else {
            return Err(Error::msg(
                crate::ErrorCode::InvalidArgument,
                "a model needs at least one source",
            ));
        };
        let count = shard_count(first, first_path)?;
        if count <= 1 && given == 1 {
            let (file, path) = shards.pop().expect("one");
            return Ok(Model::of_one(file, path));
        }
        check(
            usize::from(count) == given,
            first_path,
            SPLIT_COUNT,
            format!("{SPLIT_COUNT} is {count}, but {given} shards were given"),
        )?;
        Model::from_shards(shards, count)
    }

    /// A split model of `count` shards, in order, each with its path: checks each shard's
    /// number and count, that tensor names are unique, and the total tensor count.
    fn from_shards(shards: Vec<(GgufFile<Source>, PathBuf)>, count: u16) -> Result<Model<Source>> {
        let mut files = Vec::with_capacity(shards.len());
        let mut paths = Vec::with_capacity(shards.len());
        for (no, (file, shard_path)) in (0u16..).zip(shards) {
            let this_no = split_key(&file, SPLIT_NO);
            check(
                this_no == Ok(no.into()),
                &shard_path,
                SPLIT_NO,
                expected(SPLIT_NO, no, &this_no),
            )?;
            let this_count = split_key(&file, SPLIT_COUNT);
            check(
                this_count == Ok(count.into()),
                &shard_path,
                SPLIT_COUNT,
                expected(
                    SPLIT_COUNT,
                    format!("{count} like the other shards"),
                    &this_count,
                ),
            )?;
            files.push(file);
            paths.push(shard_path);
        }
        let model = Model::assemble(files, paths)?;
        let total = model.tensor_count() as i128;
        for (file, path) in model.shards.iter().zip(&model.paths) {
            let claimed = split_key(file, SPLIT_TENSORS_COUNT);
            let why = match &claimed {
                Ok(n) => format!("{SPLIT_TENSORS_COUNT} is {n}"),
                Err(why) => why.clone(),
            };
            check(
                claimed == Ok(total),
                path,
                SPLIT_TENSORS_COUNT,
                format!("{why}, but the shards hold {total} tensors"),
            )?;
        }
        Ok(model)
    }
}

impl<S: AsRef<[u8]>> Model<S> {
    /// A model of one file, named `name` (a path, or a name such as `<memory>`).
    pub fn single(file: GgufFile<S>, name: String) -> Result<Model<S>> {
        Ok(Model::of_one(file, PathBuf::from(name)))
    }

    fn of_one(file: GgufFile<S>, path: PathBuf) -> Model<S> {
        let total = file.tensor_count();
        Model {
            shards: vec![file],
            names: vec![path_text(&path)],
            paths: vec![path],
            starts: vec![0, total],
            index: None,
        }
    }

    /// A model of several shards, in order; tensor names must be unique across them.
    fn assemble(shards: Vec<GgufFile<S>>, paths: Vec<PathBuf>) -> Result<Model<S>> {
        let mut starts = Vec::with_capacity(shards.len() + 1);
        let mut total = 0;
        for s in &shards {
            starts.push(total);
            total += s.tensor_count();
        }
        starts.push(total);
        let mut model = Model {
            shards,
            names: paths.iter().map(|p| path_text(p)).collect(),
            paths,
            starts,
            index: None,
        };
        let name_of = |i: usize| {
            let (shard, local) = model.locate(i);
            model.shards[shard]
                .tensor_name_at(local)
                .unwrap_or_default()
        };
        let index = NameIndex::build(total, name_of).map_err(|(a, b)| {
            let ((sa, _), (sb, _)) = (model.locate(a), model.locate(b));
            Error::new(ErrorKind::DuplicateTensor {
                tensor: quote(name_of(b)),
                first: FirstSeen::InShard {
                    shard: sa as u64 + 1,
                    file: model.names[sa].clone(),
                    again: sb as u64 + 1,
                },
            })
            .in_file(model.names[sb].clone())
        })?;
        model.index = Some(index);
        Ok(model)
    }

    /// The shard and the position in it of global tensor `i`.
    fn locate(&self, i: usize) -> (usize, usize) {
        let shard = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        (shard, i - self.starts[shard])
    }

    /// The shards, in order (one for an unsplit file).
    pub fn shards(&self) -> &[GgufFile<S>] {
        &self.shards
    }

    /// The path (or name) each shard was opened from, as shown in messages: its bytes escaped
    /// (see [`crate::text::escape`]).
    pub fn shard_names(&self) -> &[String] {
        &self.names
    }

    /// The path each shard was opened from, exactly (`<memory>` for memory lent to
    /// [`Model::single`] under that name).
    pub fn shard_paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The file holding the model's metadata: the first shard.
    pub fn first(&self) -> &GgufFile<S> {
        &self.shards[0]
    }

    /// Number of tensors in all shards.
    pub fn tensor_count(&self) -> usize {
        self.starts[self.shards.len()]
    }

    /// Position of the first tensor of each shard in the model's tensor order.
    pub fn shard_starts(&self) -> &[usize] {
        &self.starts[..self.shards.len()]
    }

    /// Tensor `i` of the model: the tensors of shard 0 in file order, then shard 1's, ...
    pub fn tensor_at(&self, i: usize) -> Option<ModelTensor<'_>> {
        if i >= self.tensor_count() {
            return None;
        }
        let (shard, local) = self.locate(i);
        Some(ModelTensor {
            shard,
            info: self.shards[shard].tensor_at(local)?,
        })
    }

    /// Position of the tensor with this name (a hash lookup).
    pub fn tensor_index(&self, name: impl AsRef<[u8]>) -> Option<usize> {
        match &self.index {
            None => self.shards[0].tensor_index(name),
            Some(index) => index.find(name.as_ref(), |i| {
                let (shard, local) = self.locate(i);
                self.shards[shard].tensor_name_at(local).unwrap_or_default()
            }),
        }
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: impl AsRef<[u8]>) -> Option<ModelTensor<'_>> {
        self.tensor_index(name).and_then(|i| self.tensor_at(i))
    }
}

/// Opening a model at a URL (`gguf_open_url`): the model layer's side of the HTTP source.
#[cfg(all(feature = "net", not(target_family = "wasm")))]
impl Model<Source> {
    /// Opens the model at `url`: its header read by ranges and parsed by the one parser; if it is
    /// a shard of a split model (and `single_shard` is not set), every shard by its URL, named by
    /// the rule for files ([`Model::with_siblings`]) applied to the URL's path, the query kept for
    /// each. `options.deadline` bounds the whole open, every shard's requests together.
    pub fn open_url(
        url: &str,
        options: &crate::http::HttpOptions,
        single_shard: bool,
    ) -> Result<Model<Source>> {
        let (files, base) = crate::http::UrlFiles::start(url, options);
        let path = Path::new(base);
        let open = |name: &Path| files.open(name);
        open(path).and_then(|first| Model::with_siblings(first, path, single_shard, open))
    }
}
