//! Constants and layout rules of the GGUF container that are not types: magic, versions,
//! byte order, alignment and the limits this library enforces.

/// The four bytes every GGUF file starts with, in both byte orders.
pub const MAGIC: [u8; 4] = *b"GGUF";

/// Oldest format version read (32-bit counts and lengths).
pub const MIN_VERSION: u32 = 1;
/// Newest format version read. Versions 2 and 3 share one layout (64-bit counts and lengths).
pub const MAX_VERSION: u32 = 3;

/// Size of the fixed header: magic, version, tensor count, key-value count (version 2 and 3).
pub const HEADER_SIZE_V2: usize = 24;
/// Size of the fixed header in version 1, whose counts are 32-bit.
pub const HEADER_SIZE_V1: usize = 16;

/// Alignment of tensor data when the file has no `general.alignment` key.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The metadata key that sets the alignment; it must be a UINT32.
pub const ALIGNMENT_KEY: &[u8] = b"general.alignment";
/// Largest `general.alignment` accepted (16 MiB: covers 2 MiB huge pages with room to spare).
/// Anything larger is refused rather than trusted to size padding.
pub const MAX_ALIGNMENT: u64 = 1 << 24;

/// Key holding a split model's shard number (0-based).
pub const SPLIT_NO: &str = "split.no";
/// Key holding the number of shards of a split model.
pub const SPLIT_COUNT: &str = "split.count";
/// Key holding the number of tensors in all shards together.
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// The file name of shard `no` (0-based) of `count`: `<prefix>-<no+1:05>-of-<count:05>.gguf`,
/// as llama.cpp's `llama-gguf-split` names them.
pub fn shard_file_name(prefix: &str, no: usize, count: usize) -> String {
    format!("{prefix}-{:05}-of-{count:05}.gguf", no + 1)
}

/// Largest number of dimensions a tensor may have (ggml's `GGML_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;

/// Deepest nesting of arrays accepted: an array of arrays is depth 2. Nested arrays are legal but
/// no known producer writes them; the bound keeps walking them iterative and cheap.
pub const MAX_ARRAY_DEPTH: usize = 8;

/// Byte order of every number in a file (metadata and, by convention, tensor data).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian: the default, and what almost every file uses.
    Little = 0,
    /// Big-endian: detected by the version field reading byte-swapped.
    Big = 1,
}

/// Widths that differ between format versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Byte order of every number.
    pub order: ByteOrder,
    /// Whether counts, lengths and dimensions are 64-bit (versions 2 and 3) or 32-bit (version 1).
    pub wide: bool,
}

impl Layout {
    /// Layout of the given version and byte order.
    pub fn new(version: u32, order: ByteOrder) -> Layout {
        Layout {
            order,
            wide: version >= 2,
        }
    }

    /// Bytes taken by a count, a length or a dimension.
    pub fn len_size(self) -> usize {
        if self.wide {
            8
        } else {
            4
        }
    }
}

/// Rounds `pos` up to the next multiple of `align` (a power of two), or `None` on overflow.
pub fn align_up(pos: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    Some(pos.checked_add(align - 1)? & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_up_rounds_to_the_next_multiple() {
        assert_eq!(align_up(0, 32), Some(0));
        assert_eq!(align_up(1, 32), Some(32));
        assert_eq!(align_up(105_743, 32), Some(105_760));
        assert_eq!(align_up(64, 64), Some(64));
        assert_eq!(align_up(u64::MAX - 3, 32), None);
    }
}
