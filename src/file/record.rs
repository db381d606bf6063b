//! What the walk over the tensor infos keeps of each: a [`TensorRecord`], stored in 24 bytes
//! (a file may hold hundreds of thousands of tensors, and every open writes them all: writing
//! them is a sizeable part of opening a file of many small tensors).

use crate::format::{Layout, MAX_DIMS};
use crate::types::DataType;

/// One tensor info as the walk over the header read and checked it: every later access reads
/// this, never the info again. The element count and the byte size follow from the dimensions
/// and the type, checked not to overflow when the info was read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TensorRecord {
    /// Offset of the name's bytes (the info starts one length field before).
    pub name_at: usize,
    /// Length of the name in bytes.
    pub name_len: usize,
    /// Dimensions, innermost first; 1 past `n_dims`.
    pub dims: [u64; MAX_DIMS],
    /// Offset from the start of the data section, as stored.
    pub offset: u64,
    pub dtype: DataType,
    pub n_dims: u32,
}

impl TensorRecord {
    /// The name, from the bytes the record was read from.
    #[inline]
    pub fn name<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        name_in(bytes, self.name_at, self.name_len)
    }

    /// Offset of the tensor info (its name's length field).
    pub fn at(&self, layout: Layout) -> usize {
        self.name_at - layout.len_size()
    }

    /// Number of elements (the product of the dimensions; checked not to overflow).
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().fold(1, |n, &d| n.wrapping_mul(d))
    }

    /// Size of the data in bytes (checked not to overflow when the info was read).
    pub fn size(&self) -> u64 {
        self.dtype
            .tensor_bytes(&self.dims)
            .expect("the walk checks that a tensor's byte size fits in 64 bits")
    }
}

/// `len` bytes of `bytes` from `at` (where the walk read a name: in bounds).
#[inline]
fn name_in(bytes: &[u8], at: usize, len: usize) -> &[u8] {
    at.checked_add(len)
        .and_then(|end| bytes.get(at..end))
        .unwrap_or_default()
}

/// Bits of each dimension in a stored record, which stores each dimension less one: 60 in all (a
/// first or second dimension of 1 to 4 Mi, a third of 1 to 4096, a fourth of 1 to 16), the
/// bounds within which the fast walk takes an info. A record with a larger dimension, or a
/// dimension 0, is kept whole beside the others.
pub(super) const DIM_BITS: [u32; MAX_DIMS] = [22, 22, 12, 4];

/// Where each dimension starts in the packed word.
const DIM_SHIFTS: [u32; MAX_DIMS] = [0, 22, 44, 56];

/// Where the dimension count starts in the packed word (after the dimensions), and its bits (up
/// to [`MAX_DIMS`]).
const N_DIMS_SHIFT: u32 = 60;
const N_DIMS_BITS: u32 = 3;

/// Bits of the name's offset in a stored record's first word (offsets below 4 TiB).
pub(super) const NAME_AT_BITS: u32 = 42;

/// Bits of the name's length, after its offset (names shorter than 64 KiB).
pub(super) const NAME_LEN_BITS: u32 = 16;

/// Where the type id starts in the first word: its last 6 bits.
const TYPE_SHIFT: u32 = NAME_AT_BITS + NAME_LEN_BITS;

// The dimension count fits below the wide flag.
const _: () = assert!(MAX_DIMS < 1 << N_DIMS_BITS && N_DIMS_SHIFT + N_DIMS_BITS <= 63);

// Every type id fits in the bits above the name.
const _: () = {
    let mut i = 0;
    while i < DataType::ALL.len() {
        assert!((DataType::ALL[i] as u32) < 1 << (64 - TYPE_SHIFT));
        i += 1;
    }
};

/// Set in the last word of a stored record whose fields do not fit: the rest of that word is the
/// record's place among the wide ones.
const WIDE: u64 = 1 << 63;

/// A record as stored: the name's offset and length and the type id ([`pack_name`]); the data
/// offset; the dimensions, each less one, packed as [`DIM_BITS`] lays them out, and their count
/// ([`pack_dims`]), or [`WIDE`] and a place among the wide records.
pub(super) type Stored = [u64; 3];

/// What of dimension `d`, stored less one, does not fit a field of `bits`: 0 when `d` is 1 to
/// 2^bits (a 0 wraps to all ones). A word, not a flag, so that the fast walk can fold it into
/// its checks with no branch.
#[inline(always)]
pub(super) fn dim_excess(d: u64, bits: u32) -> u64 {
    d.wrapping_sub(1) >> bits
}

/// The packed dimensions and dimension count of a record whose dimensions fit [`DIM_BITS`]
/// (unchecked here): each dimension less one, so that those past the count (1) add nothing.
#[inline(always)]
pub(super) fn pack_dims(d: [u64; MAX_DIMS], n_dims: u32) -> u64 {
    let f = |k: usize| d[k].wrapping_sub(1) << DIM_SHIFTS[k];
    f(0) | f(1) | f(2) | f(3) | u64::from(n_dims) << N_DIMS_SHIFT
}

/// A stored record's first word: the name's offset (below 2^[`NAME_AT_BITS`]) and length (below
/// 2^[`NAME_LEN_BITS`]), and the type id (unchecked here).
#[inline(always)]
pub(super) fn pack_name(at: u64, len: u64, type_id: u64) -> u64 {
    at | len << NAME_AT_BITS | type_id << TYPE_SHIFT
}

/// The name's offset and length in a stored record's first word ([`pack_name`]).
#[inline(always)]
fn unpack_name(w: u64) -> (usize, usize) {
    let at = field(w, 0, NAME_AT_BITS);
    let len = field(w, NAME_AT_BITS, NAME_LEN_BITS);
    (word_usize(at), word_usize(len))
}

/// The `bits` bits of `w` from `shift`.
#[inline(always)]
fn field(w: u64, shift: u32, bits: u32) -> u64 {
    (w >> shift) & ((1 << bits) - 1)
}

/// Every tensor's record, in file order.
pub(crate) struct Records {
    /// One a tensor.
    stored: Vec<Stored>,
    /// The records whose dimensions or name length do not fit in [`Stored`] (none in released
    /// models).
    wide: Vec<TensorRecord>,
}

/// The `usize` a stored word holds (written from a `usize`, so it fits).
#[inline]
fn word_usize(w: u64) -> usize {
    usize::try_from(w).unwrap_or(usize::MAX)
}

impl Records {
    /// Room for `count` records, written in order.
    pub(super) fn with_capacity(count: usize) -> Records {
        Records {
            stored: Vec::with_capacity(count),
            wide: Vec::new(),
        }
    }

    /// The stored records, to push the next ones to.
    #[inline(always)]
    pub(super) fn stored_mut(&mut self) -> &mut Vec<Stored> {
        &mut self.stored
    }

    /// Adds the next record.
    pub(super) fn push(&mut self, r: &TensorRecord) {
        let fits = r
            .dims
            .iter()
            .zip(DIM_BITS)
            .all(|(&d, bits)| dim_excess(d, bits) == 0)
            && (r.name_len as u64) >> NAME_LEN_BITS == 0
            && (r.name_at as u64) >> NAME_AT_BITS == 0;
        let stored = if fits {
            let id = u64::from(r.dtype.id());
            let name = pack_name(r.name_at as u64, r.name_len as u64, id);
            [name, r.offset, pack_dims(r.dims, r.n_dims)]
        } else {
            self.wide.push(*r);
            [0, 0, WIDE | (self.wide.len() - 1) as u64]
        };
        self.stored.push(stored);
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.stored.len()
    }

    /// Record `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<TensorRecord> {
        let [name, offset, dims] = *self.stored.get(i)?;
        if dims & WIDE != 0 {
            return self.wide.get(word_usize(dims & !WIDE)).copied();
        }
        let dim = |k: usize| field(dims, DIM_SHIFTS[k], DIM_BITS[k]) + 1;
        #[allow(clippy::cast_possible_truncation)] // below 2^6
        let id = (name >> TYPE_SHIFT) as u32;
        let (name_at, name_len) = unpack_name(name);
        Some(TensorRecord {
            name_at,
            name_len,
            dims: [dim(0), dim(1), dim(2), dim(3)],
            offset,
            dtype: DataType::from_id(id).expect("the walk records only known types"),
            #[allow(clippy::cast_possible_truncation)] // below 2^3
            n_dims: field(dims, N_DIMS_SHIFT, N_DIMS_BITS) as u32,
        })
    }

    /// The name of record `i` (empty past the last).
    #[inline]
    pub fn name<'a>(&self, i: usize, bytes: &'a [u8]) -> &'a [u8] {
        match self.stored.get(i) {
            Some(&[_, _, dims]) if dims & WIDE != 0 => self
                .wide
                .get(word_usize(dims & !WIDE))
                .map_or(&[][..], |r| r.name(bytes)),
            Some(&[name, _, _]) => {
                let (at, len) = unpack_name(name);
                name_in(bytes, at, len)
            }
            None => &[],
        }
    }

    /// Sum of the lengths of every name.
    pub fn name_bytes(&self, bytes: &[u8]) -> usize {
        (0..self.len()).map(|i| self.name(i, bytes).len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_stored_and_read_back_unchanged() {
        let mut r = TensorRecord {
            name_at: 32,
            name_len: 3,
            dims: [1 << 22, 1 << 22, 4096, 16],
            offset: u64::MAX - 31,
            dtype: DataType::ALL[DataType::ALL.len() - 1],
            n_dims: 4,
        };
        let mut records = Records::with_capacity(20);
        records.push(&r);
        // The largest name length and, where `usize` holds it, offset that fit.
        let mut packed = vec![TensorRecord {
            name_len: (1 << NAME_LEN_BITS) - 1,
            ..r
        }];
        // Each dimension one past what fits, or 0, and a name too long or too far to pack: kept
        // wide.
        let mut wide = Vec::new();
        for (k, bits) in DIM_BITS.into_iter().enumerate() {
            for d in [(1 << bits) + 1, 0] {
                let mut w = r;
                w.dims[k] = d;
                wide.push(w);
            }
        }
        wide.push(TensorRecord {
            name_len: 1 << NAME_LEN_BITS,
            ..r
        });
        wide.push(TensorRecord {
            name_len: usize::MAX >> 1,
            ..r
        });
        if let (Ok(last), Ok(past)) = (
            usize::try_from((1u64 << NAME_AT_BITS) - 1),
            usize::try_from(1u64 << NAME_AT_BITS),
        ) {
            packed.push(TensorRecord { name_at: last, ..r });
            wide.push(TensorRecord { name_at: past, ..r });
        }
        for w in packed.iter().chain(&wide) {
            records.push(w);
        }
        let bytes = [&[b'.'; 32][..], b"abc"].concat();
        assert_eq!(records.get(0), Some(r));
        assert_eq!(records.name(0, &bytes), b"abc");
        for (i, w) in packed.iter().chain(&wide).enumerate() {
            assert_eq!(records.get(i + 1), Some(*w));
        }
        let n = packed.len() + wide.len();
        assert_eq!(records.name(n, &bytes), b"");
        assert_eq!(records.get(n + 1), None);
        // Only the wide ones are kept whole.
        assert_eq!(records.wide.len(), wide.len());
        r.n_dims = 0;
        r.dims = [1; 4];
        let mut records = Records::with_capacity(1);
        records.push(&r);
        assert_eq!(records.get(0), Some(r));
    }
}
