//! A tensor to be written: its description, the one check every tensor passes before the writer
//! takes it, and where its bytes come from when the file is written.

use crate::error::{Error, ErrorCode, ErrorKind, FirstSeen, Result};
use crate::format::MAX_DIMS;
use crate::read_at::ReadAt;
use crate::text::quote;
use crate::types::DataType;
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::fs::File;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

/// Where a tensor's bytes come from when a file is written: bytes in memory, a range of an open
/// file, or data the caller streams after the header ([`Writer::begin_file`]).
///
/// [`Writer::begin_file`]: crate::Writer::begin_file
#[derive(Clone)]
pub struct TensorData(pub(super) Origin);

#[derive(Clone)]
pub(super) enum Origin {
    /// Bytes in memory.
    Memory(Bytes),
    /// The tensor's bytes in an open file, from `offset` on; `memory` holds the same bytes where
    /// they are also in memory (a mapping), which small tensors and writes to memory use.
    File {
        file: Arc<File>,
        offset: u64,
        memory: Option<Bytes>,
    },
    /// The tensor's bytes in a source read by position (a file descriptor, a callback, a
    /// server), from `offset` on.
    Positioned {
        source: Arc<dyn ReadAt>,
        offset: u64,
    },
    /// Given by the caller after the header.
    Streamed,
}

/// A range of bytes that some owner keeps alive.
#[derive(Clone)]
pub(super) struct Bytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: Range<usize>,
}

impl Bytes {
    pub(super) fn get(&self) -> &[u8] {
        // The range was checked against the owner when made; an owner whose bytes shrank since
        // gives nothing, which the writer refuses as a size mismatch.
        (*self.owner)
            .as_ref()
            .get(self.range.clone())
            .unwrap_or(&[])
    }
}

impl TensorData {
    /// The tensor's bytes, owned.
    pub fn bytes(data: Vec<u8>) -> TensorData {
        let len = data.len();
        TensorData(Origin::Memory(Bytes {
            owner: Arc::new(data),
            range: 0..len,
        }))
    }

    /// The bytes `range` of `owner` (a mapping, a buffer, a model), kept alive by the writer
    /// until it is dropped. Fails if `range` is not inside `owner`'s bytes.
    pub fn shared(
        owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
        range: Range<usize>,
    ) -> Result<TensorData> {
        Ok(TensorData(Origin::Memory(shared_bytes(owner, range)?)))
    }

    /// The tensor's bytes at `offset` in `file` (as many as the tensor takes). A file written
    /// with [`Writer::write_file`] gets them copied inside the kernel where the platform can
    /// (`copy_file_range`, which reflinks where the file system can); other outputs read them.
    ///
    /// [`Writer::write_file`]: crate::Writer::write_file
    pub fn file_range(file: Arc<File>, offset: u64) -> TensorData {
        TensorData(Origin::File {
            file,
            offset,
            memory: None,
        })
    }

    /// Like [`TensorData::file_range`], with the same bytes also in memory at `range` of
    /// `owner` (the file's mapping): small tensors, and writes to memory, take them from there.
    pub fn file_range_mapped(
        file: Arc<File>,
        offset: u64,
        owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
        range: Range<usize>,
    ) -> Result<TensorData> {
        Ok(TensorData(Origin::File {
            file,
            offset,
            memory: Some(shared_bytes(owner, range)?),
        }))
    }

    /// The tensor's bytes at `offset` of `source`, a source read by position (a file descriptor,
    /// a read callback, a server): read when the file is written.
    pub fn read_at(source: Arc<dyn ReadAt>, offset: u64) -> TensorData {
        TensorData(Origin::Positioned { source, offset })
    }

    /// No bytes yet: the caller streams them after the header.
    pub fn streamed() -> TensorData {
        TensorData(Origin::Streamed)
    }

    /// Whether the caller streams the bytes (see [`TensorData::streamed`]).
    pub fn is_streamed(&self) -> bool {
        matches!(self.0, Origin::Streamed)
    }

    /// The number of bytes held in memory (`None` for a file range or streamed data, whose
    /// length is the tensor's size).
    fn memory_len(&self) -> Option<u64> {
        match &self.0 {
            Origin::Memory(b) => Some(b.range.len() as u64),
            _ => None,
        }
    }
}

impl From<Vec<u8>> for TensorData {
    fn from(data: Vec<u8>) -> TensorData {
        TensorData::bytes(data)
    }
}

impl std::fmt::Debug for TensorData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Origin::Memory(b) => write!(f, "TensorData::Memory({} bytes)", b.range.len()),
            Origin::File { offset, .. } => write!(f, "TensorData::File(at {offset})"),
            Origin::Positioned { source, offset } => {
                write!(
                    f,
                    "TensorData::Positioned({} at {offset})",
                    source.describe()
                )
            }
            Origin::Streamed => f.write_str("TensorData::Streamed"),
        }
    }
}

fn shared_bytes(owner: Arc<dyn AsRef<[u8]> + Send + Sync>, range: Range<usize>) -> Result<Bytes> {
    let len = (*owner).as_ref().len();
    if range.start > range.end || range.end > len {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "bytes {}..{} are not inside the {len} bytes given",
                range.start, range.end
            ),
        ));
    }
    Ok(Bytes { owner, range })
}

/// A tensor the writer holds.
pub(super) struct PendingTensor {
    pub name: Vec<u8>,
    pub dims: Vec<u64>,
    pub dtype: DataType,
    pub size: u64,
    pub data: TensorData,
}

/// Refuses more dimensions than the format allows (`n_dims`, before the dimensions are read).
pub(crate) fn check_dim_count(name: &[u8], n_dims: u64) -> Result<()> {
    if n_dims > MAX_DIMS as u64 {
        return Err(Error::new(ErrorKind::TooManyDims {
            tensor: quote(name),
            found: n_dims,
            max: MAX_DIMS,
            refused: true,
        }));
    }
    Ok(())
}

/// The one check of a tensor given to the writer, with the reader's rules: a name not yet used
/// (`taken`), at most [`MAX_DIMS`] dimensions, the first a whole number of the type's blocks, a
/// size that fits 64 bits, and data in memory of exactly that size. Returns the size in bytes.
pub(super) fn check_tensor(
    taken: bool,
    name: &[u8],
    dims: &[u64],
    dtype: DataType,
    data: &TensorData,
) -> Result<u64> {
    if taken {
        return Err(Error::new(ErrorKind::DuplicateTensor {
            tensor: quote(name),
            first: FirstSeen::Given,
        }));
    }
    check_dim_count(name, dims.len() as u64)?;
    let first = dims.first().copied().unwrap_or(1);
    if first % dtype.block_elems() != 0 {
        return Err(Error::new(ErrorKind::BadBlockMultiple {
            tensor: quote(name),
            first,
            data_type: dtype,
        }));
    }
    let size = dtype.tensor_bytes(dims).ok_or_else(|| {
        Error::new(ErrorKind::SizeOverflow {
            tensor: Some(quote(name)),
            what: "size overflows".to_string(),
        })
    })?;
    match data.memory_len() {
        Some(given) if given != size => Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "tensor {}: {} {dims:?} takes {size} bytes, {given} given",
                quote(name),
                dtype.name(),
            ),
        )),
        _ => Ok(size),
    }
}

/// Tensor positions found by name; the names stay in the tensors.
#[derive(Default)]
pub(super) struct TensorNames {
    table: HashTable<usize>,
    hasher: RandomState,
}

impl TensorNames {
    pub fn find(&self, tensors: &[PendingTensor], name: &[u8]) -> Option<usize> {
        self.table
            .find(self.hasher.hash_one(name), |&i| tensors[i].name == name)
            .copied()
    }

    /// Records that the last of `tensors` is at its position (its name is not yet recorded).
    pub fn push(&mut self, tensors: &[PendingTensor]) {
        let i = tensors.len() - 1;
        let hasher = &self.hasher;
        self.table
            .insert_unique(hasher.hash_one(&tensors[i].name[..]), i, |&j| {
                hasher.hash_one(&tensors[j].name[..])
            });
    }

    pub fn of(tensors: &[PendingTensor]) -> TensorNames {
        let mut names = TensorNames::default();
        for i in 1..=tensors.len() {
            names.push(&tensors[..i]);
        }
        names
    }
}
