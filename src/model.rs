//! A model: one GGUF file, or every shard of a split model (`name-00001-of-00005.gguf`, ...)
//! presented as one, as llama.cpp's `gguf-split` writes them: each shard carries `split.no`
//! (0-based), `split.count` and `split.tensors.count`; the first holds the model's metadata.

use crate::error::{Error, ErrorCode, Result};
use crate::file::{quote, GgufFile, TensorInfo};
use crate::index::NameIndex;
use crate::source::{open_source, OpenOptions, Source};
use crate::value::Value;
use std::path::Path;

/// Key holding a shard's 0-based number.
pub const SPLIT_NO: &str = "split.no";
/// Key holding the number of shards.
pub const SPLIT_COUNT: &str = "split.count";
/// Key holding the number of tensors in all shards together.
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// A model over one or more parsed files.
pub struct Model<S: AsRef<[u8]>> {
    shards: Vec<GgufFile<S>>,
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

/// An integer metadata value of any integer type, as split keys are written with several.
fn integer(file: &GgufFile<impl AsRef<[u8]>>, key: &str) -> Option<i128> {
    let value = file.get(key)?;
    match value {
        Value::I8(_) | Value::I16(_) | Value::I32(_) | Value::I64(_) => {
            value.as_i64().map(i128::from)
        }
        _ => value.as_u64().map(i128::from),
    }
}

/// An integer key's value for a message, or that the key is missing (or not an integer).
fn shown(value: Option<i128>) -> String {
    value.map_or_else(|| "no integer".to_string(), |v| v.to_string())
}

/// The name of shard `no` (0-based) of `count`, given the name of shard `given` of the model.
fn shard_path(given_path: &str, given: u64, no: u64, count: u64) -> Result<String> {
    // The naming rule lives in the writer, which makes such files.
    let name = |no: u64| crate::writer::Writer::shard_path("", no as usize, count as usize);
    let suffix = name(given);
    let prefix = given_path.strip_suffix(&suffix).ok_or_else(|| {
        Error::new(
            ErrorCode::ShardMismatch,
            format!(
                "this is shard {} of {count} of a split model, but its name does not end in \
                 '{suffix}', so its siblings cannot be found (open it alone with \
                 GGUF_OPEN_FLAG_SINGLE_SHARD)",
                given + 1
            ),
        )
        .in_file(given_path)
    })?;
    Ok(format!("{prefix}{}", name(no)))
}

impl Model<Source> {
    /// Opens the file at `path`; if it is a shard of a split model (and `options.single_shard`
    /// is not set), opens every shard and presents them as one model.
    pub fn open(path: &Path, options: OpenOptions) -> Result<Model<Source>> {
        let name = path.display().to_string();
        let open = |p: &Path, name: &str| {
            open_source(p, options)
                .and_then(GgufFile::from_bytes)
                .map_err(|e| e.in_file(name))
        };
        let given = open(path, &name)?;
        let count = integer(&given, SPLIT_COUNT).unwrap_or(1);
        if options.single_shard || count <= 1 {
            return Model::single(given, name);
        }
        let check = |ok: bool, file: &str, message: String| {
            if ok {
                Ok(())
            } else {
                Err(Error::new(ErrorCode::ShardMismatch, message).in_file(file))
            }
        };
        let given_no = integer(&given, SPLIT_NO).unwrap_or(-1);
        check(
            (0..count).contains(&given_no) && count <= u16::MAX.into(),
            &name,
            format!("{SPLIT_NO} is {given_no}, outside the {count} shards of {SPLIT_COUNT}"),
        )?;
        let (count, given_no) = (count as u64, given_no as u64);
        let mut shards = Vec::with_capacity(count as usize);
        let mut names = Vec::with_capacity(count as usize);
        let mut given = Some(given);
        for no in 0..count {
            let shard_name = shard_path(&name, given_no, no, count)?;
            let file = match given.take_if(|_| no == given_no) {
                Some(file) => file,
                None => open(Path::new(&shard_name), &shard_name)?,
            };
            let this_no = integer(&file, SPLIT_NO);
            check(
                this_no == Some(no.into()),
                &shard_name,
                format!("expected {SPLIT_NO} {no}, found {}", shown(this_no)),
            )?;
            let this_count = integer(&file, SPLIT_COUNT);
            check(
                this_count == Some(count.into()),
                &shard_name,
                format!(
                    "expected {SPLIT_COUNT} {count} like the other shards, found {}",
                    shown(this_count)
                ),
            )?;
            shards.push(file);
            names.push(shard_name);
        }
        let model = Model::assemble(shards, names)?;
        let total = model.tensor_count() as i128;
        for (file, name) in model.shards.iter().zip(&model.names) {
            let claimed = integer(file, SPLIT_TENSORS_COUNT);
            check(
                claimed == Some(total),
                name,
                format!(
                    "{SPLIT_TENSORS_COUNT} is {}, but the shards hold {total} tensors",
                    shown(claimed)
                ),
            )?;
        }
        Ok(model)
    }
}

impl<S: AsRef<[u8]>> Model<S> {
    /// A model of one file.
    pub fn single(file: GgufFile<S>, name: String) -> Result<Model<S>> {
        let total = file.tensor_count();
        Ok(Model {
            shards: vec![file],
            names: vec![name],
            starts: vec![0, total],
            index: None,
        })
    }

    /// A model of several shards, in order; tensor names must be unique across them.
    fn assemble(shards: Vec<GgufFile<S>>, names: Vec<String>) -> Result<Model<S>> {
        let mut starts = Vec::with_capacity(shards.len() + 1);
        let mut total = 0;
        for s in &shards {
            starts.push(total);
            total += s.tensor_count();
        }
        starts.push(total);
        let mut model = Model {
            shards,
            names,
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
            Error::new(
                ErrorCode::DuplicateTensor,
                format!(
                    "tensor {} is in shard {} ({}) and again in shard {}",
                    quote(name_of(b)),
                    sa + 1,
                    model.names[sa],
                    sb + 1
                ),
            )
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

    /// The path (or name) each shard was opened from.
    pub fn shard_names(&self) -> &[String] {
        &self.names
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
