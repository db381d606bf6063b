//! A writer holding everything an opened model holds, to change and write again (a metadata
//! editor): unchanged tensor data is copied from the model's files when the file is written.

use super::builder::Writer;
use super::tensor::TensorData;
use crate::atomic_file::reopen_mapped;
use crate::error::{Error, ErrorCode, Result};
use crate::format::{SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
use crate::model::Model;
use crate::source::Source;
use std::ops::Range;
use std::sync::Arc;

/// Bytes that stay alive as long as their owner, as [`TensorData::shared`] takes them.
pub(crate) type Owner = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Bytes in memory: their owner and their range in it.
pub(crate) type OwnedRange = (Owner, Range<usize>);

/// The bytes of one shard of a shared model.
struct ShardBytes(Arc<Model<Source>>, usize);

impl AsRef<[u8]> for ShardBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.shards()[self.1].bytes()
    }
}

impl Writer {
    /// A writer holding everything `model` holds: its metadata (minus the `split.*` keys of a
    /// split model, whose tensors are all gathered into one file), version, byte order, and
    /// every tensor, its data read from `model` when the file is written (copied inside the
    /// kernel from a mapped file, else from memory, or read from the source of a model that is
    /// not mapped). Change what you like, then write it; the
    /// writer keeps `model` alive. Writing over the model's own path is safe: the file is
    /// replaced atomically, and `model` keeps reading the old contents.
    pub fn from_model(model: &Arc<Model<Source>>) -> Result<Writer> {
        let owners: Vec<Owner> = (0..model.shards().len())
            .map(|shard| Arc::new(ShardBytes(Arc::clone(model), shard)) as Owner)
            .collect();
        Writer::copy_of(model, &mut |shard, data| {
            let base = model.shards()[shard].bytes().as_ptr() as usize;
            let start = (data.as_ptr() as usize).wrapping_sub(base);
            let range = start..start.saturating_add(data.len());
            Ok((Arc::clone(&owners[shard]), range))
        })
    }

    /// What [`Writer::from_model`] makes, each tensor's bytes in memory lent by `memory`: given
    /// the shard and the tensor's data, the owner of those bytes and their range in it.
    pub(crate) fn copy_of(
        model: &Model<Source>,
        memory: &mut dyn FnMut(usize, &[u8]) -> Result<OwnedRange>,
    ) -> Result<Writer> {
        let first = model.first();
        let mut writer = Writer::new();
        writer
            .set_version(first.version())?
            .set_byte_order(first.byte_order());
        writer.copy_metadata_from(first)?;
        if model.shards().len() > 1 {
            for key in [SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS_COUNT] {
                writer.remove_metadata(key);
            }
        }
        // Mapped files are opened again (checked to be the very file mapped), so that unchanged
        // tensor data is copied inside the kernel rather than through the mapping.
        let files: Vec<Option<Arc<std::fs::File>>> = model
            .shards()
            .iter()
            .zip(model.shard_paths())
            .map(|(shard, path)| match shard.source() {
                Source::Mapped(_, mapped) => reopen_mapped(path, mapped).map(Arc::new),
                _ => None,
            })
            .collect();
        for i in 0..model.tensor_count() {
            let t = model.tensor_at(i).ok_or_else(|| {
                Error::msg(
                    ErrorCode::Internal,
                    format!("tensor {i} of the model is missing"),
                )
            })?;
            let info = t.info;
            let source = model.shards()[t.shard].source();
            let positioned = source.positioned().filter(|_| !source.in_memory());
            let data = match (positioned, files.get(t.shard).and_then(Option::as_ref)) {
                // Only the header is in memory: the data is read from the source.
                (Some(source), _) => TensorData::read_at(Arc::clone(source), info.file_offset),
                (None, file) => {
                    let (owner, range) = memory(t.shard, info.data)?;
                    match file {
                        Some(file) => TensorData::file_range_mapped(
                            Arc::clone(file),
                            info.file_offset,
                            owner,
                            range,
                        )?,
                        None => TensorData::shared(owner, range)?,
                    }
                }
            };
            writer.add_tensor_data(
                info.name,
                &info.dims[..info.n_dims as usize],
                info.dtype,
                data,
            )?;
        }
        Ok(writer)
    }
}
