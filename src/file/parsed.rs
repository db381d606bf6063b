//! What the walk over the header learns: where each metadata entry lies, and the positions and
//! records the parsed file answers from.

use super::record::Records;
use crate::format::Layout;
use crate::index::NameIndex;
use crate::reader::Span;
use crate::value::RawValue;

/// Where one metadata entry lies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KvRecord {
    /// Offset of the entry (its key's length field).
    pub at: usize,
    pub key: Span,
    pub value: RawValue,
}

/// Everything the walk over the header learns: positions into the file's bytes, and each tensor
/// info's record.
pub(super) struct Parsed {
    pub(super) version: u32,
    pub(super) layout: Layout,
    pub(super) alignment: u64,
    pub(super) data_offset: u64,
    /// Where the tensor infos lie: from the end of the metadata to the end of the last info
    /// (before the padding up to the data section).
    pub(super) tensor_infos: (u64, u64),
    /// The file's size: the length of its bytes, or the size declared for the source of which
    /// they are the header ([`GgufFile::from_prefix`]).
    pub(super) size: u64,
    pub(super) kvs: Vec<KvRecord>,
    /// Each tensor info, in file order.
    pub(super) tensors: Records,
    pub(super) key_index: NameIndex,
    pub(super) tensor_index: NameIndex,
}
