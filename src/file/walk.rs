//! The walk over the tensor infos: each read and checked once, in a fast walk for the common
//! layout (little-endian, 64-bit lengths) and by one general reader for every other layout and
//! for any info the fast walk leaves to it; what each holds is recorded ([`TensorRecord`]), each
//! name hashed and indexed.

use super::entry_error::{entry_error, Entry};
use super::record::TensorRecord;
use super::record::{
    dim_excess, pack_dims, pack_name, Records, DIM_BITS, NAME_AT_BITS, NAME_LEN_BITS,
};
use crate::error::{Error, ErrorKind, FirstSeen, Result};
use crate::format::{ByteOrder, Layout, MAX_DIMS};
use crate::index::{NameHasher, NameIndex};
use crate::reader::{ByteReader, Span};
use crate::text::quote;
use crate::types::DataType;

/// What the walk over the tensor infos learns.
pub(super) struct TensorInfos {
    /// Each tensor info, read and checked.
    pub tensors: Records,
    /// Offset just past the last tensor info.
    pub end: usize,
    pub tensor_index: NameIndex,
    /// Whether the tensors with data lie in file order without overlapping.
    pub in_order: bool,
    /// The largest end of a tensor's data, from the start of the data section (`u64::MAX` if one
    /// overflows).
    pub max_end: u64,
}

/// Reads and checks `count` tensor infos starting at `at`, recording each and hashing its name as
/// it goes, then indexes the names.
/// Errors come in the order a reader meets them: a malformed info first (the first in file
/// order), then a name given twice; ranges are checked by the caller.
pub(super) fn read_tensor_infos(
    bytes: &[u8],
    size: u64,
    at: usize,
    count: usize,
    layout: Layout,
    alignment: u64,
) -> Result<TensorInfos> {
    let fast = layout.wide && layout.order == ByteOrder::Little;
    #[cfg(test)]
    let fast = fast && !tests::GENERAL_ONLY.get();
    // Room for every record (pushed: a vector cleared first costs a pass over its memory on
    // every open that reuses it) and every hash (written by place); `count` is bounded by the
    // bytes (`read_count`). The records are allocated before the index table, the hashes after:
    // in that order the allocator reuses the same memory when files are opened one after another.
    let tensors = Records::with_capacity(count);
    let mut index = NameIndex::with_capacity(count);
    let mut walk = Walk {
        bytes,
        size,
        layout,
        alignment,
        tensors,
        hasher: index.hasher(),
        hashes: vec![0; count],
        in_order: true,
        prev_end: 0,
        max_end: 0,
    };
    let mut pos = at;
    while walk.tensors.len() < count {
        if fast {
            pos = walk.run_le64(pos);
            if walk.tensors.len() == count {
                break;
            }
        }
        let i = walk.tensors.len();
        // The info the fast walk stopped at (or any, in other layouts): read, checked and its
        // error worded by the general path.
        pos = walk
            .accept_general(pos)
            .map_err(|e| entry_error(e, bytes, layout, Entry::Tensor, (pos, i, count)))?;
    }
    let Walk {
        tensors,
        hashes,
        in_order,
        max_end,
        ..
    } = walk;
    // Names are indexed in file order, so the first duplicate is the one a reader meets.
    let name_of = |k: usize| tensors.name(k, bytes);
    if let Some((a, b)) = index.insert_all(0, &hashes, |j, k| name_of(j) == name_of(k)) {
        let at = |k: usize| tensors.get(k).map_or(0, |t| t.at(layout)) as u64;
        return Err(Error::at_with(at(b), || ErrorKind::DuplicateTensor {
            tensor: quote(name_of(b)),
            first: FirstSeen::AtOffset(at(a)),
        }));
    }
    Ok(TensorInfos {
        tensors,
        end: pos,
        tensor_index: index,
        in_order,
        max_end,
    })
}

/// The state of the walk over the tensor infos.
struct Walk<'a> {
    bytes: &'a [u8],
    /// The file's size (`bytes` may be its first bytes only).
    size: u64,
    layout: Layout,
    alignment: u64,
    /// Each accepted info, in file order (room for `count`): their number is the number of infos
    /// accepted.
    tensors: Records,
    hasher: NameHasher,
    /// Each accepted name's hash, indexed after the walk (as `tensors`).
    hashes: Vec<u32>,
    in_order: bool,
    prev_end: u64,
    max_end: u64,
}

/// What the fast walk needs of a tensor type: elements per block minus one (a mask, the count
/// being a power of two), that count as a shift, and bytes per block.
#[derive(Clone, Copy)]
struct FastType {
    block_mask: u64,
    shift: u32,
    bytes: u32,
}

/// [`FastType`] by type id, and one more entry for every id past the table. Ids that the fast
/// walk leaves to the general path (unknown or removed ids, a type whose block is not a power of
/// two elements) have a mask of all ones: no first dimension but 0 passes it, and a tensor with
/// no elements goes to the general path anyway.
#[allow(clippy::cast_possible_truncation)] // `bytes` is checked to fit.
const FAST_TYPES: [FastType; 65] = {
    let other = FastType {
        block_mask: u64::MAX,
        shift: 0,
        bytes: 0,
    };
    let mut table = [other; 65];
    let mut i = 0;
    while i < DataType::ALL.len() {
        let t = DataType::ALL[i];
        let (elems, bytes) = (t.block_elems(), t.block_bytes());
        // At most 8 bytes an element (true of every type ggml defines): the fast walk's bound on
        // the element count then keeps the size below 2^64.
        if elems.is_power_of_two() && bytes <= 8 * elems && (t as usize) < 64 {
            table[t as usize] = FastType {
                block_mask: elems - 1,
                shift: elems.trailing_zeros(),
                bytes: bytes as u32,
            };
        }
        i += 1;
    }
    table
};

/// [`MAX_DIMS`] as a stored dimension count.
#[allow(clippy::cast_possible_truncation)] // 4
const MAX_DIMS_U32: u32 = MAX_DIMS as u32;

/// Per dimension count (0 to 4): for each of the four dimension slots, a mask that keeps the
/// stored word: all ones if the info has that dimension, else 0 (and then the mask + 1, which is
/// 1, takes the word's place).
const KEEP_DIMS: [[u64; MAX_DIMS]; MAX_DIMS + 1] = {
    let mut table = [[0u64; MAX_DIMS]; MAX_DIMS + 1];
    let mut n = 0;
    while n <= MAX_DIMS {
        let mut k = 0;
        while k < n {
            table[n][k] = u64::MAX;
            k += 1;
        }
        n += 1;
    }
    table
};

/// The bits that dimensions 0 to 3 may use in the fast walk, less one ([`DIM_BITS`], as the records
/// store them): 22 + 22 + 12 + 4 = 60, so the element count is at most 2^60 and, at most 8 bytes
/// an element ([`FAST_TYPES`]), the size at most 2^63: neither product can overflow, and no
/// product's high half is needed. Any larger dimension (a first or second one over 4 Mi, over
/// 4096 experts, a fourth over 16), and any dimension 0, goes to the general path, which checks
/// overflow exactly.
const FAST_DIM_BITS: [u32; MAX_DIMS] = DIM_BITS;

/// What the fast walk reads of one info from its window: non-zero `broken` if the info breaks a
/// rule (or is left to the general path), its dimensions and their count packed for its record
/// ([`pack_dims`]), its type id, its data's size and offset, and how many bytes of the window it
/// uses.
struct FastInfo {
    broken: u64,
    dims: u64,
    type_id: u64,
    size: u64,
    offset: u64,
    used: usize,
}

/// The fast walk's reading and checks of one info, from `w`, the 48 bytes after its name;
/// `n_dims` is its stored dimension count and `nd` that count, at most [`MAX_DIMS`]. Every rule of
/// [`check_tensor_info`] is folded into one word, with no branch per rule.
///
/// The walk inlines it once for each common dimension count with `nd` a constant, so that each
/// copy loads only its own dimensions, finds the type and offset at fixed places and multiplies
/// no ones: about a fifth fewer instructions a tensor than one copy for every count.
#[inline(always)]
fn read_window(w: &[u8; 48], n_dims: u32, nd: usize, align_mask: u64) -> FastInfo {
    // Dimensions past the count are 1: each is loaded, then kept or replaced through a mask from
    // a table (a table, not a comparison, so that where `nd` is not a constant the compiler makes
    // no branch of it and the loads stay unconditional).
    let keep = &KEEP_DIMS[nd];
    let dim = |k: usize| (window_u64(w, 4 + 8 * k) & keep[k]) | keep[k].wrapping_add(1);
    let type_at = 4 + 8 * nd;
    let type_id = window_u64(w, type_at) & 0xFFFF_FFFF;
    let offset = window_u64(w, type_at + 4);
    let (d0, d1, d2, d3) = (dim(0), dim(1), dim(2), dim(3));
    let t = FAST_TYPES[usize::try_from(type_id.min(64)).unwrap_or(64)];
    let [b0, b1, b2, b3] = FAST_DIM_BITS;
    // Zero or too wide.
    let too_wide =
        (dim_excess(d0, b0) | dim_excess(d1, b1)) | (dim_excess(d2, b2) | dim_excess(d3, b3));
    // Exact within the bounds `too_wide` checks: the size is the element count over the block,
    // times the block's bytes (the first dimension is a whole number of blocks).
    let n_elements = d0.wrapping_mul(d1).wrapping_mul(d2.wrapping_mul(d3));
    let size = (n_elements >> t.shift).wrapping_mul(u64::from(t.bytes));
    // Every rule in one word, non-zero when one is broken: one branch, not one a rule. The first
    // terms are shifts rather than comparisons, and over-strict: they also send the general path
    // dimensions past `FAST_DIM_BITS`.
    let broken = ((u64::from(n_dims) + 3) >> 3) // more than 4 dimensions
        | too_wide
        | (d0 & t.block_mask)
        | (offset & align_mask);
    FastInfo {
        broken,
        // Packed here, where `nd` is a constant: the dimensions past it fold into one.
        dims: pack_dims([d0, d1, d2, d3], n_dims),
        type_id,
        size,
        offset,
        used: type_at + 12,
    }
}

/// The little-endian `u64` at `at` in an info's 48-byte window (`at` is at most 40).
#[inline(always)]
fn window_u64(w: &[u8; 48], at: usize) -> u64 {
    w.get(at..at + 8)
        .and_then(|b| b.first_chunk::<8>())
        .map_or(0, |b| u64::from_le_bytes(*b))
}

impl Walk<'_> {
    /// The walk over tensor infos in the common layout (little-endian, 64-bit lengths), from the
    /// info at `pos` (the one after those recorded) until every one is accepted: each info
    /// is read from its name and one bounds-checked 48-byte window after it ([`read_window`]),
    /// with one branch for all of [`check_tensor_info`]'s rules; its record is pushed (into room
    /// for every info) and its name's hash written in place. Stops, returning where, at the
    /// first info it cannot accept (one that breaks a rule, has no elements, an unusual type, or
    /// lies too near the end of the bytes): the general path then reads that one, and words its
    /// error exactly as for any layout.
    #[inline(never)]
    fn run_le64(&mut self, mut pos: usize) -> usize {
        // The first 4 TiB: an info past them (only in files as long) is left to the general path,
        // as a record cannot hold the offset of its name.
        let within = usize::try_from(1u64 << NAME_AT_BITS).unwrap_or(usize::MAX);
        let bytes = self.bytes.get(..within).unwrap_or(self.bytes);
        let align_mask = self.alignment - 1;
        let hasher = self.hasher;
        let mut prev_end = self.prev_end;
        let tensors = self.tensors.stored_mut();
        let hashes = &mut self.hashes[..];
        // One count for the loop, the records and the hashes: the number of records.
        while let Some(hash_of) = hashes.get_mut(tensors.len()) {
            let Some((len, rest)) = bytes.get(pos..).and_then(|r| r.split_first_chunk::<8>())
            else {
                break;
            };
            let Ok(len) = usize::try_from(u64::from_le_bytes(*len)) else {
                break;
            };
            let Some((name, w)) = rest
                .split_at_checked(len)
                .and_then(|(name, tail)| Some((name, tail.first_chunk::<48>()?)))
            else {
                break;
            };
            // Names too long for a record (64 KiB or more) are recorded by the general path.
            if len >> NAME_LEN_BITS != 0 {
                break;
            }
            // Hashed first (written over if the info is refused), so that the hashing and the
            // reading of the window do not hold registers at the same time.
            *hash_of = hasher.hash(name);
            let n_dims = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let nd = n_dims.min(MAX_DIMS_U32) as usize;
            // The reading and checks specialized by dimension count ([`read_window`]). Which
            // copy runs follows the file's pattern of shapes, which repeats with each layer; even
            // a random mix of 1 to 3 dimensions opened faster than one copy for all counts.
            let FastInfo {
                broken,
                dims,
                type_id,
                size,
                offset,
                used,
            } = match n_dims {
                1 => read_window(w, 1, 1, align_mask),
                2 => read_window(w, 2, 2, align_mask),
                3 => read_window(w, 3, 3, align_mask),
                _ => read_window(w, n_dims, nd, align_mask),
            };
            if broken != 0 {
                break;
            }
            // Ends only grow while the data lie in order, so the largest is the last. Data out of
            // order make it `u64::MAX` (and so every later comparison fails too): the largest
            // end then says that the tensors may not lie inside the file, and the full check
            // runs (as it does for an end that overflows).
            prev_end = if offset >= prev_end {
                offset.saturating_add(size)
            } else {
                u64::MAX
            };
            tensors.push([
                pack_name((pos + 8) as u64, len as u64, type_id),
                offset,
                dims,
            ]);
            pos += 8 + len + used;
        }
        (self.prev_end, self.max_end) = (prev_end, self.max_end.max(prev_end));
        pos
    }

    /// Reads the info at `at` with the general reader (any layout), checks it, records it and
    /// hashes its name, and notes its data range; returns where it ends.
    #[inline(never)]
    fn accept_general(&mut self, at: usize) -> Result<usize> {
        let (bytes, layout) = (self.bytes, self.layout);
        let mut r = ByteReader::sized(bytes, at, layout, self.size);
        let raw = decode_tensor_info(&mut r)?;
        let (dtype, size) = check_tensor_info(&raw, bytes, layout, self.alignment)?;
        let i = self.tensors.len();
        self.hashes[i] = self.hasher.hash(raw.name.of(bytes));
        let end = raw.offset.saturating_add(size);
        if size > 0 {
            self.in_order &= raw.offset >= self.prev_end;
            self.prev_end = end;
        }
        self.max_end = self.max_end.max(end);
        let record = TensorRecord {
            name_at: raw.name.start,
            name_len: raw.name.len,
            dims: raw.dims,
            offset: raw.offset,
            dtype,
            n_dims: raw.n_dims,
        };
        self.tensors.push(&record);
        Ok(raw.end)
    }
}

/// One tensor info's fields as stored, before any check.
#[derive(Debug, PartialEq)]
struct RawTensorInfo {
    /// Offset of the info (its name's length field) and just past it.
    at: usize,
    end: usize,
    name: Span,
    n_dims: u32,
    dims: [u64; MAX_DIMS],
    type_id: u32,
    offset: u64,
}

/// Reads one tensor info in any layout; fails on a truncated info or too many dimensions (past
/// which the info cannot be read).
fn decode_tensor_info(r: &mut ByteReader<'_>) -> Result<RawTensorInfo> {
    let at = r.pos();
    let name = r.string("the tensor name")?;
    let dims_at = r.pos();
    let n_dims = r.u32("the dimension count")?;
    if n_dims as usize > MAX_DIMS {
        return Err(Error::at_with(dims_at as u64, || ErrorKind::TooManyDims {
            tensor: quote(name.of(r.bytes())),
            found: n_dims.into(),
            max: MAX_DIMS,
            refused: false,
        }));
    }
    let mut dims = [1u64; MAX_DIMS];
    for d in dims.iter_mut().take(n_dims as usize) {
        *d = r.len("a dimension")?;
    }
    let type_id = r.u32("the tensor type")?;
    let offset = r.u64("the tensor offset")?;
    Ok(RawTensorInfo {
        at,
        end: r.pos(),
        name,
        n_dims,
        dims,
        type_id,
        offset,
    })
}

/// Checks one tensor info's rules (element count, type, block multiple, byte size, alignment);
/// returns its type and its data's size in bytes.
#[inline(always)]
fn check_tensor_info(
    raw: &RawTensorInfo,
    bytes: &[u8],
    layout: Layout,
    alignment: u64,
) -> Result<(DataType, u64)> {
    let dims = raw.dims;
    let n_elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let dtype = DataType::from_id(raw.type_id);
    let size = dtype.and_then(|t| t.tensor_bytes(&dims));
    // `alignment` is a power of two (checked when it was read).
    let aligned = raw.offset & (alignment - 1) == 0;
    match (n_elements, dtype, size) {
        (Some(_), Some(dtype), Some(size)) if aligned => Ok((dtype, size)),
        _ => Err(tensor_info_error(raw, bytes, layout, alignment)),
    }
}

/// The error for a tensor info that [`check_tensor_info`] refuses: the first rule it breaks, at
/// the offset of the field that breaks it.
#[cold]
#[inline(never)]
fn tensor_info_error(raw: &RawTensorInfo, bytes: &[u8], layout: Layout, alignment: u64) -> Error {
    let tensor = quote(raw.name.of(bytes));
    let dims = raw.dims;
    let dims_at = raw.name.start + raw.name.len;
    let type_at = dims_at + 4 + raw.n_dims as usize * layout.len_size();
    let offset_at = type_at + 4;
    let (at, kind) = if dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_none()
    {
        let what = format!("element count of dimensions {dims:?} overflows 64 bits");
        let tensor = Some(tensor);
        (dims_at, ErrorKind::SizeOverflow { tensor, what })
    } else if let Some(data_type) = DataType::from_id(raw.type_id) {
        if dims[0] % data_type.block_elems() != 0 {
            let first = dims[0];
            let kind = ErrorKind::BadBlockMultiple {
                tensor,
                first,
                data_type,
            };
            (dims_at, kind)
        } else if data_type.tensor_bytes(&dims).is_none() {
            let what = format!(
                "byte size of {} {dims:?} overflows 64 bits",
                data_type.name()
            );
            let tensor = Some(tensor);
            (dims_at, ErrorKind::SizeOverflow { tensor, what })
        } else {
            let kind = ErrorKind::MisalignedOffset {
                tensor,
                alignment,
                found: raw.offset,
            };
            (offset_at, kind)
        }
    } else {
        let kind = ErrorKind::BadDataType {
            tensor,
            found: raw.type_id,
            refused: false,
        };
        (type_at, kind)
    };
    Error::at(at as u64, kind)
}

/// Checks that every tensor's data lies inside the file and that no two tensors' data overlap.
/// Tensors may be listed in any order and have gaps between them (the spec allows both).
pub(super) fn check_tensor_ranges(
    bytes: &[u8],
    file_size: u64,
    records: &Records,
    layout: Layout,
    data_offset: u64,
) -> Result<()> {
    let tensors: Vec<TensorRecord> = (0..records.len()).filter_map(|i| records.get(i)).collect();
    for t in &tensors {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|start| start.checked_add(t.size()));
        if end.is_none_or(|end| end > file_size) {
            // Most often a download cut short: the header is whole, the data is not (the
            // message then says the file ends early).
            return Err(Error::at_with(t.at(layout) as u64, || {
                ErrorKind::DataOutOfBounds {
                    tensor: quote(t.name(bytes)),
                    end,
                    file_size,
                }
            }));
        }
    }
    // The tensor count fits in u32 (`read_count`).
    let mut by_offset: Vec<u32> = (0..tensors.len())
        .filter(|&i| tensors[i].size() > 0)
        .map(|i| u32::try_from(i).expect("read_count keeps counts within u32"))
        .collect();
    by_offset.sort_unstable_by_key(|&i| tensors[i as usize].offset);
    for pair in by_offset.windows(2) {
        let (a, b) = (&tensors[pair[0] as usize], &tensors[pair[1] as usize]);
        let (a_end, b_end) = (a.offset + a.size(), b.offset + b.size());
        if a_end > b.offset {
            return Err(Error::at_with(b.at(layout) as u64, || {
                ErrorKind::DataOverlap {
                    tensor: quote(b.name(bytes)),
                    range: (b.offset, b_end),
                    other: quote(a.name(bytes)),
                    other_range: (a.offset, a_end),
                }
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{header::parse, GgufFile};
    use super::NAME_LEN_BITS;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to read every tensor info with the general path on its thread.
        pub(super) static GENERAL_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    /// What opening `bytes` gives: every tensor's fields and the file's facts, or the error.
    fn outcome(bytes: &[u8]) -> std::result::Result<String, (ErrorCode, Option<u64>, String)> {
        match GgufFile::from_bytes(bytes) {
            Ok(g) => {
                let mut s = format!(
                    "{} {} {}\n",
                    g.data_offset(),
                    g.tensor_count(),
                    g.tensor_name_bytes()
                );
                for (i, t) in g.tensors().enumerate() {
                    assert_eq!(g.tensor_index(t.name), Some(i));
                    s += &format!("{t:?}\n");
                }
                Ok(s)
            }
            Err(e) => Err((e.code(), e.offset(), e.message().to_string())),
        }
    }

    /// [`outcome`] with the general path only.
    fn general_outcome(
        bytes: &[u8],
    ) -> std::result::Result<String, (ErrorCode, Option<u64>, String)> {
        GENERAL_ONLY.set(true);
        let o = outcome(bytes);
        GENERAL_ONLY.set(false);
        o
    }

    /// A version-3 little-endian file with these tensor infos (name, dims, type, offset) and
    /// `data` zero bytes after the aligned header.
    fn file(infos: &[(&str, &[u64], u32, u64)], data: usize) -> Vec<u8> {
        let mut f = b"GGUF".to_vec();
        f.extend_from_slice(&3u32.to_le_bytes());
        f.extend_from_slice(&(infos.len() as u64).to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        for (name, dims, ty, offset) in infos {
            f.extend_from_slice(&(name.len() as u64).to_le_bytes());
            f.extend_from_slice(name.as_bytes());
            f.extend_from_slice(&u32::try_from(dims.len()).unwrap().to_le_bytes());
            for d in *dims {
                f.extend_from_slice(&d.to_le_bytes());
            }
            f.extend_from_slice(&ty.to_le_bytes());
            f.extend_from_slice(&offset.to_le_bytes());
        }
        f.resize(f.len().div_ceil(32) * 32 + data, 0);
        f
    }

    use crate::error::ErrorCode;

    fn refused(bytes: &[u8]) -> (ErrorCode, Option<u64>, String) {
        let e = parse(bytes, bytes.len() as u64).err().expect("refused");
        (e.code(), e.offset(), e.message().to_string())
    }

    #[test]
    fn the_fast_walk_accepts_and_refuses_what_the_general_path_does() {
        // Infos that stress each rule the fast walk folds into one word, each at the edge.
        let edge: &[(&str, &[u64], u32, u64)] = &[
            ("zero", &[0, u64::MAX, 2], 0, 0),
            ("zero-last", &[1 << 40, 1 << 40, 0], 0, 0),
            ("rowbytes-overflow", &[1 << 62, 0], 0, 0),
            ("q4k-rows-no-overflow", &[1 << 63, 0], 12, 0),
            ("elements-overflow", &[1 << 32, 1 << 32], 0, 0),
            ("bytes-overflow", &[1 << 62, 2], 1, 0),
            ("bytes-edge", &[1 << 61, 1], 0, 0),
            ("q4k-blocks", &[256 * 3, 5], 12, 0),
            ("q4k-not-blocks", &[300], 12, 0),
            ("no-dims-q8", &[], 8, 0),
            ("no-dims-f32", &[], 0, 0),
            ("removed-type", &[8], 4, 0),
            ("type-63", &[8], 63, 0),
            ("type-64", &[8], 64, 0),
            ("type-huge", &[8], u32::MAX, 0),
            ("misaligned", &[8], 0, 16),
            ("four-dims", &[2, 3, 4, 5], 0, 0),
            // Each side of `FAST_DIM_BITS`, dimension by dimension.
            ("dim0-below-bound", &[(1 << 22) - 1, 1 << 21], 0, 0),
            ("dim0-at-bound", &[1 << 22, 3], 0, 0),
            ("dim1-at-bound", &[32, 1 << 22], 8, 0),
            ("dim2-below-bound", &[2, 3, 4095, 31], 0, 0),
            ("dim2-at-bound", &[2, 3, 4096], 0, 0),
            ("dim3-at-bound", &[2, 3, 4, 32], 0, 0),
            ("wide-f64", &[(1 << 22) - 1, (1 << 22) - 1, 4095, 31], 28, 0),
            // Products that wrap to a count or a size small enough to fit in the file: 2^64 + 2
            // elements, and 2^61 + 2 elements of 8 bytes.
            ("elements-wrap", &[26_563_938, 694_428_065_361], 0, 0),
            ("bytes-wrap", &[14_865_121, 155_117_675_074], 28, 0),
        ];
        for info in edge {
            // After an ordinary info, its data after that info's (in order, so that what the
            // fast walk accepts is not checked again), and before one (so that the walk goes on
            // after it).
            let (name, dims, ty, offset) = *info;
            for infos in [
                vec![("a", &[8][..], 0, 0), (name, dims, ty, offset + 32)],
                vec![*info, ("z", &[8][..], 0, 0)],
            ] {
                let bytes = file(&infos, 64);
                assert_eq!(outcome(&bytes), general_outcome(&bytes), "{info:?}");
            }
        }
        // A name as long as a record holds, and one byte longer (which the fast walk leaves to
        // the general path), each before an ordinary info.
        for len in [(1 << NAME_LEN_BITS) - 1, 1 << NAME_LEN_BITS] {
            let name = "n".repeat(len);
            let bytes = file(&[(&name, &[8], 0, 0), ("z", &[8], 0, 32)], 64);
            assert_eq!(outcome(&bytes), general_outcome(&bytes), "{len}");
            let g = GgufFile::from_bytes(&bytes[..]).unwrap();
            assert_eq!(g.tensor(&name).map(|t| t.name.len()), Some(len));
            assert_eq!(g.tensor_index("z"), Some(1));
        }
        // Random changes to the infos of a small file, as in the decoder test above.
        let base = file(
            &[
                ("token_embd.weight", &[64, 4], 8, 0),
                ("blk.0.ffn_up.7.weight", &[256], 12, 288),
                ("s", &[], 0, 448),
                ("blk.0.attn_q.weight", &[32, 2, 1, 3], 1, 480),
                ("blk.0.attn_k.weight", &[32], 0, 896),
            ],
            1024,
        );
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let (mut opened, mut refused) = (0, 0);
        for round in 0..6000 {
            let mut bytes = base.clone();
            for _ in 0..1 + round % 3 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let span = (base.len() - 1024 - 24) as u64;
                let at = 24 + usize::try_from((rng >> 8) % span).unwrap();
                bytes[at] = (rng >> 40).to_le_bytes()[0];
            }
            if round % 5 == 0 {
                bytes.truncate(bytes.len() - usize::try_from((rng >> 20) % 1100).unwrap());
            }
            let fast = outcome(&bytes);
            assert_eq!(fast, general_outcome(&bytes), "round {round}");
            if fast.is_ok() {
                opened += 1;
            } else {
                refused += 1;
            }
        }
        assert!(
            opened > 500 && refused > 500,
            "{opened} opened, {refused} refused"
        );
    }

    #[test]
    fn names_that_all_hash_alike_are_indexed_and_told_apart() {
        let names: Vec<String> = (0..300).map(|i| format!("blk.{i}.attn_q.weight")).collect();
        let infos: Vec<(&str, &[u64], u32, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), &[8u64][..], 0, 32 * i as u64))
            .collect();
        let bytes = file(&infos, 32 * names.len());
        crate::index::tests::COLLIDE.set(true);
        let g = GgufFile::from_bytes(&bytes[..]).unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(g.tensor_index(n), Some(i));
            assert_eq!(g.tensor(n).unwrap().offset, 32 * i as u64);
        }
        assert_eq!(g.tensor_index("blk.300.attn_q.weight"), None);
        // A name given twice among them is still refused, naming both infos.
        let mut dup = infos.clone();
        dup[200].0 = names[100].as_str();
        let (code, offset, message) = refused(&file(&dup, 32 * names.len()));
        crate::index::tests::COLLIDE.set(false);
        assert_eq!(code, ErrorCode::DuplicateTensor);
        let at = |i: usize| {
            24 + (0..i)
                .map(|k| 8 + dup[k].0.len() + 4 + 8 + 4 + 8)
                .sum::<usize>()
        };
        assert_eq!(offset, Some(at(200) as u64));
        assert_eq!(
            message,
            format!(
                "tensor 'blk.100.attn_q.weight' appears twice (first at offset {})",
                at(100)
            )
        );
    }

    #[test]
    fn out_of_order_data_is_checked_in_offset_order() {
        // Accepted out of order, with gaps and empty tensors in between.
        let ok = file(
            &[
                ("c", &[8], 0, 64),
                ("empty", &[0], 0, 64),
                ("a", &[8], 0, 0),
                ("b", &[8], 0, 32),
            ],
            96,
        );
        let g = GgufFile::from_bytes(&ok[..]).unwrap();
        assert_eq!(g.tensor("b").unwrap().offset, 32);
        assert_eq!(g.tensor_index("a"), Some(2));
        // Overlaps found whatever the order: the later of the pair by offset is named.
        for infos in [
            [("a", &[16][..], 0, 0), ("b", &[8][..], 0, 32)],
            [("b", &[8][..], 0, 32), ("a", &[16][..], 0, 0)],
        ] {
            let (code, _, message) = refused(&file(&infos, 96));
            assert_eq!(code, ErrorCode::DataOverlap);
            assert!(
                message.starts_with("tensor 'b' data [32, 64) overlaps tensor 'a'"),
                "{message}"
            );
        }
        // The first tensor in file order whose data end past the file is named.
        let f = file(
            &[
                ("in", &[8], 0, 0),
                ("out1", &[8], 0, 64),
                ("out2", &[16], 0, 32),
            ],
            32,
        );
        let (code, offset, message) = refused(&f);
        assert_eq!(code, ErrorCode::DataOutOfBounds);
        assert_eq!(offset, Some(24 + 8 + 2 + 4 + 8 + 4 + 8));
        assert!(
            message.starts_with("the file ends early (truncated?): tensor 'out1' data ends at"),
            "{message}"
        );
    }

    #[test]
    fn a_malformed_info_is_reported_before_an_earlier_duplicate_name() {
        let (code, offset, _) = refused(&file(
            &[("a", &[8], 0, 0), ("a", &[8], 0, 32), ("b", &[8], 99, 64)],
            96,
        ));
        assert_eq!(code, ErrorCode::BadDataType);
        let type_at = 24 + 2 * (8 + 1 + 4 + 8 + 4 + 8) + 8 + 1 + 4 + 8;
        assert_eq!(offset, Some(type_at as u64));
        let (code, offset, message) = refused(&file(
            &[("a", &[8], 0, 0), ("b", &[8], 0, 32), ("a", &[8], 0, 64)],
            96,
        ));
        assert_eq!(code, ErrorCode::DuplicateTensor);
        assert_eq!(offset, Some(24 + 2 * (8 + 1 + 4 + 8 + 4 + 8)));
        assert_eq!(message, "tensor 'a' appears twice (first at offset 24)");
    }

    #[test]
    fn many_tensors_are_indexed_and_read_back() {
        let names: Vec<String> = (0..3000)
            .map(|i| format!("blk.{}.ffn_up.{}.weight", i / 64, i % 64))
            .collect();
        let infos: Vec<(&str, &[u64], u32, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), &[8u64][..], 0, 32 * i as u64))
            .collect();
        let bytes = file(&infos, 32 * names.len());
        let g = GgufFile::from_bytes(&bytes[..]).unwrap();
        assert_eq!(g.tensor_count(), names.len());
        for (i, n) in names.iter().enumerate() {
            let t = g.tensor(n).unwrap();
            assert_eq!(
                (t.name, t.offset, t.size),
                (n.as_bytes(), 32 * i as u64, 32)
            );
        }
        assert!(g.tensor("blk.0.ffn_up.64.weight").is_none());
    }
}
