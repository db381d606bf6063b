//! A name-to-position hash index that stores only positions: names stay in the file's bytes, so
//! the index owns no strings and borrows nothing.
//!
//! Opening a file indexes every tensor name (a duplicate name is refused at open), so inserting
//! is on the open path of files with many thousands of tensors. Names hash to 32 bits (half the
//! memory a 64-bit hash would take in the open's hash list, which a large file's open writes and
//! reads whole). Each slot is one `u32`: the entry's position + 1 in the low bits (0 marks an empty
//! slot) and the hash's high bits in the rest; the table index is its low bits.
//! Probing is linear over a table at most a quarter full, and compares a name only when the stored
//! hash bits match, so an insert is one hash, usually one slot read and one write.

use foldhash::fast::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Positions of entries, found by the name each entry has in the file.
pub(crate) struct NameIndex {
    slots: Box<[u32]>,
    /// The bits of a slot that hold hash bits; the others hold the position + 1.
    tag_mask: u32,
    hasher: NameHasher,
}

/// The slot a hash starts its probe at, in a table of `mask + 1` slots: its low bits (a table of
/// more than 2^32 slots, for over a billion names, uses its first 2^32 only).
#[inline]
fn home(hash: u32, mask: usize) -> usize {
    hash as usize & mask
}

/// The hash of names, seeded per index so that a file cannot be crafted to make every name
/// collide. Names are short (tensor names are mostly 10 to 40 bytes) and opening hashes every
/// one, so this is a multiply-fold over 16 bytes at a time with no per-byte work: a name of up
/// to 16 bytes is one fold, up to 32 two (foldhash spent about 39 instructions a name here).
#[derive(Clone, Copy)]
pub(crate) struct NameHasher {
    seeds: [u64; 2],
}

/// The 128-bit product of `a` and `b`, its halves XOR-ed: every bit of each factor reaches most
/// bits of the result.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The 8 bytes of `s` from `at` (which the caller keeps in bounds), little-endian.
#[inline(always)]
fn word(s: &[u8], at: usize) -> u64 {
    s.get(at..at + 8)
        .and_then(|w| w.first_chunk::<8>())
        .map_or(0, |w| u64::from_le_bytes(*w))
}

/// The 4 bytes of `s` from `at` (which the caller keeps in bounds), little-endian.
#[inline(always)]
fn half_word(s: &[u8], at: usize) -> u64 {
    s.get(at..at + 4)
        .and_then(|w| w.first_chunk::<4>())
        .map_or(0, |w| u64::from(u32::from_le_bytes(*w)))
}

impl NameHasher {
    fn new() -> NameHasher {
        // foldhash's per-process random state draws the seeds. Its per-instance part does not
        // differ between instances on every target (on i686 two in a row got the same seeds),
        // so a count of the hashers made so far goes into each seed too.
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let nth = MADE.fetch_add(1, Ordering::Relaxed) as u64;
        let state = RandomState::default();
        NameHasher {
            seeds: [state.hash_one((1u64, nth)) | 1, state.hash_one((2u64, nth))],
        }
    }

    /// The hash of one name: all of its bytes and its length.
    #[inline(always)]
    pub fn hash(&self, name: &[u8]) -> u32 {
        #[cfg(test)]
        if tests::COLLIDE.get() {
            return tests::COLLIDING_HASH;
        }
        let [k0, k1] = self.seeds;
        let n = name.len();
        let mut h = k0 ^ n as u64;
        let (a, b) = if n > 16 {
            // 16-byte chunks while more than 32 bytes are left (a loop most names skip), then the
            // first 16 of the 17 to 32 left, then the last 16 (which may overlap them).
            let mut rest = name;
            while rest.len() > 32 {
                h = fold(word(rest, 0) ^ k1, word(rest, 8) ^ h);
                rest = &rest[16..];
            }
            h = fold(word(rest, 0) ^ k1, word(rest, 8) ^ h);
            (word(name, n - 16), word(name, n - 8))
        } else if n >= 8 {
            (word(name, 0), word(name, n - 8))
        } else if n >= 4 {
            (half_word(name, 0), half_word(name, n - 4))
        } else if n > 0 {
            let byte = |i: usize| u64::from(name[i]);
            (byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16, 0)
        } else {
            (0, 0)
        };
        // The fold mixes every bit of its factors into the high and the low half alike: its low
        // 32 bits are the hash.
        #[allow(clippy::cast_possible_truncation)]
        let hash = fold(a ^ k1, b ^ h) as u32;
        hash
    }
}

impl NameIndex {
    /// An empty index with room for `count` entries (fewer than 2^32).
    pub fn with_capacity(count: usize) -> NameIndex {
        // At most a quarter full, so that most inserts find their first slot free: whether it is
        // free is a branch that the processor cannot predict, and at half full it was wrong
        // often enough to cost more than the larger table (measured at 1000 to 100000 names).
        let size = count.saturating_mul(4).next_power_of_two().max(8);
        // A slot holds the position + 1 in as few bits as the count needs, and the hash's high
        // bits in the rest, so that names are compared only when those match. The table index
        // takes the low bits, two or three of which the tag shares: names in one probe run still
        // differ in 13 tag bits or more up to 100000 entries.
        let position_bits = usize::BITS - count.leading_zeros();
        NameIndex {
            slots: vec![0; size].into_boxed_slice(),
            tag_mask: u32::MAX.checked_shl(position_bits).unwrap_or(0),
            hasher: NameHasher::new(),
        }
    }

    /// Indexes `count` entries whose names `name_of` gives. Returns the positions of the first
    /// pair of entries that share a name, if any.
    pub fn build<'n>(
        count: usize,
        name_of: impl Fn(usize) -> &'n [u8],
    ) -> Result<NameIndex, (usize, usize)> {
        let mut index = NameIndex::with_capacity(count);
        for i in 0..count {
            index
                .insert(i, name_of(i), &name_of)
                .map_err(|first| (first, i))?;
        }
        Ok(index)
    }

    /// The hash of `name` in this index, for [`NameIndex::insert_all`].
    #[inline(always)]
    pub fn hash(&self, name: &[u8]) -> u32 {
        self.hasher.hash(name)
    }

    /// The hasher of this index, to hash names in a loop that holds no borrow of the index.
    #[inline(always)]
    pub fn hasher(&self) -> NameHasher {
        self.hasher
    }

    /// Adds entry `i` named `name`; `name_of` gives the names of the entries added before. At
    /// most the capacity's count of entries may be added. Returns the position of the entry that
    /// already has this name, if one does (and then adds nothing).
    #[inline(always)]
    pub fn insert<'n>(
        &mut self,
        i: usize,
        name: &[u8],
        name_of: impl Fn(usize) -> &'n [u8],
    ) -> Result<(), usize> {
        let hash = self.hash(name);
        // Below 2^32 (`with_capacity`).
        let entry = u32::try_from(i + 1).unwrap_or(0);
        NameIndex::place(&mut self.slots, self.tag_mask, entry, hash, |j| {
            name_of(j) == name
        })
    }

    /// [`NameIndex::insert`] of entries `first..first + hashes.len()` in order, `hashes[k]`
    /// being entry `first + k`'s hash (from [`NameIndex::hash`]); `same_name(j, i)` tells
    /// whether entries `j` and `i` have the same name (asked only when their hash bits match).
    /// The entries before `first` must have been inserted. Stops at the first entry whose name
    /// an earlier one has, returning both positions (earlier first).
    ///
    /// Inserting is a random access into a table that, past a few thousand entries, no longer
    /// fits in the cache: in a loop that does nothing else the processor overlaps the misses of
    /// several inserts.
    #[inline(always)]
    pub fn insert_all(
        &mut self,
        first: usize,
        hashes: &[u32],
        same_name: impl Fn(usize, usize) -> bool,
    ) -> Option<(usize, usize)> {
        let (slots, tag_mask) = (&mut *self.slots, self.tag_mask);
        let mut k = 0;
        // The common inserts in a run, the rest one by one between runs; `None` (no name given
        // twice) once every entry is in.
        loop {
            k += NameIndex::place_free(slots, tag_mask, first + k, hashes.get(k..)?);
            let &hash = hashes.get(k)?;
            let i = first + k;
            let entry = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if let Err(j) =
                NameIndex::place_after(slots, tag_mask, entry, hash, &|j| same_name(j, i))
            {
                return Some((j, i));
            }
            k += 1;
        }
    }

    /// Inserts entries `first..` (`hashes[k]` being entry `first + k`'s hash) while each finds
    /// a free slot without comparing names: its first slot, or the next if the first holds a
    /// name with other hash bits; returns how many it inserted.
    #[inline(always)]
    fn place_free(slots: &mut [u32], tag_mask: u32, first: usize, hashes: &[u32]) -> usize {
        let mask = slots.len() - 1;
        // Entry `i` is stored as i + 1 (fewer than 2^32 entries: `with_capacity`).
        let entry = u32::try_from(first + 1).unwrap_or(u32::MAX);
        for (k, &hash) in hashes.iter().enumerate() {
            let home = home(hash, mask);
            #[allow(clippy::cast_possible_truncation)] // below 2^32 (above)
            let stored = (hash & tag_mask) | entry.wrapping_add(k as u32);
            let at_home = slots.get(home).copied().unwrap_or(0);
            let next = (home + 1) & mask;
            if at_home == 0 {
                slots[home] = stored;
            } else if (at_home ^ stored) & tag_mask != 0 && slots.get(next) == Some(&0) {
                slots[next] = stored;
            } else {
                return k;
            }
        }
        hashes.len()
    }

    /// [`NameIndex::place`] out of line, for an entry that [`NameIndex::place_free`] leaves.
    #[cold]
    #[inline(never)]
    fn place_after(
        slots: &mut [u32],
        tag_mask: u32,
        entry: u32,
        hash: u32,
        same_name: &dyn Fn(usize) -> bool,
    ) -> Result<(), usize> {
        NameIndex::place(slots, tag_mask, entry, hash, same_name)
    }

    /// Puts an entry, stored as `entry` (its position + 1), in the first free slot of `slots`
    /// (an index's, with its `tag_mask`) from its hash's, unless a slot holds an entry with the
    /// same hash bits for which `same_name` holds: then returns that entry's position.
    #[inline(always)]
    fn place(
        slots: &mut [u32],
        tag_mask: u32,
        entry: u32,
        hash: u32,
        same_name: impl Fn(usize) -> bool,
    ) -> Result<(), usize> {
        let mask = slots.len() - 1;
        let tag = hash & tag_mask;
        let mut at = home(hash, mask);
        loop {
            let slot = slots[at];
            if slot == 0 {
                // `entry` lies below the hash bits (`with_capacity`).
                slots[at] = tag | entry;
                return Ok(());
            }
            let j = (slot & !tag_mask) as usize - 1;
            if (slot ^ tag) & tag_mask == 0 && same_name(j) {
                return Err(j);
            }
            at = (at + 1) & mask;
        }
    }

    /// The position of the entry named `name`.
    pub fn find<'n>(&self, name: &[u8], name_of: impl Fn(usize) -> &'n [u8]) -> Option<usize> {
        let hash = self.hasher.hash(name);
        let mask = self.slots.len() - 1;
        let tag = hash & self.tag_mask;
        let mut at = home(hash, mask);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return None;
            }
            let j = (slot & !self.tag_mask) as usize - 1;
            if (slot ^ tag) & self.tag_mask == 0 && name_of(j) == name {
                return Some(j);
            }
            at = (at + 1) & mask;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to make every name hash alike on its thread.
        pub(crate) static COLLIDE: Cell<bool> = const { Cell::new(false) };
    }

    /// What every name hashes to while [`COLLIDE`] is set.
    pub(crate) const COLLIDING_HASH: u32 = 0x5555_0003;

    #[test]
    fn finds_every_name_and_reports_duplicates() {
        let names: Vec<Vec<u8>> = (0..1000).map(|i| format!("blk.{i}").into_bytes()).collect();
        let index = NameIndex::build(names.len(), |i| &names[i]).unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.find(n, |j| &names[j]), Some(i));
        }
        assert_eq!(index.find(b"missing", |j| &names[j]), None);

        let dup = [b"a".to_vec(), b"b".to_vec(), b"a".to_vec()];
        assert_eq!(NameIndex::build(dup.len(), |i| &dup[i]).err(), Some((0, 2)));
    }

    #[test]
    fn inserting_hashes_finds_what_inserting_names_finds() {
        let names: Vec<Vec<u8>> = [b"a".as_slice(), b"bb", b"c", b"bb", b"a"]
            .iter()
            .map(|n| n.to_vec())
            .collect();
        let mut index = NameIndex::with_capacity(names.len());
        let hashes: Vec<u32> = names.iter().map(|n| index.hash(n)).collect();
        // The first name given again (in order) is reported, with its first position.
        let same = |j: usize, k: usize| names[j] == names[k];
        assert_eq!(index.insert_all(0, &hashes, same), Some((1, 3)));
        assert_eq!(index.find(b"c", |j| &names[j]), Some(2));
        assert_eq!(index.find(b"bb", |j| &names[j]), Some(1));
        let mut index = NameIndex::with_capacity(3);
        let hashes: Vec<u32> = names[..3].iter().map(|n| index.hash(n)).collect();
        // In two parts: entries after those already inserted.
        assert_eq!(index.insert_all(0, &hashes[..1], same), None);
        assert_eq!(index.insert_all(1, &hashes[1..], same), None);
        for (i, n) in names[..3].iter().enumerate() {
            assert_eq!(index.find(n, |j| &names[j]), Some(i));
        }
        let mut index = NameIndex::with_capacity(names.len());
        let hashes: Vec<u32> = names.iter().map(|n| index.hash(n)).collect();
        assert_eq!(index.insert_all(0, &hashes[..2], same), None);
        assert_eq!(index.insert_all(2, &hashes[2..], same), Some((1, 3)));
    }

    #[test]
    fn the_hash_covers_every_byte_and_the_length() {
        let index = NameIndex::with_capacity(1);
        let other = NameIndex::with_capacity(1);
        // Names of every length up to 80 bytes, and each with one byte changed, all hash apart.
        // Among 3000 names, two 32-bit hashes meet by chance in about one run in a thousand:
        // such a pair must then differ under other seeds, as it would not if the hash left a
        // byte or the length out.
        let mut seen = std::collections::HashMap::new();
        let mut differ = |name: Vec<u8>, what: String| {
            if let Some(earlier) = seen.insert(index.hash(&name), name.clone()) {
                assert_ne!(other.hash(&earlier), other.hash(&name), "{what}");
            }
        };
        for n in 0..80usize {
            let name: Vec<u8> = (b'a'..=b'z').cycle().take(n).collect();
            for at in 0..n {
                let mut changed = name.clone();
                changed[at] ^= 0x40;
                differ(changed, format!("length {n}, byte {at}"));
            }
            differ(name, format!("length {n}"));
        }
        // Zero bytes count: a name of zeros differs from a shorter one.
        assert_ne!(index.hash(&[0; 9]), index.hash(&[0; 8]));
        // Seeded per index.
        assert_ne!(
            index.hash(b"blk.0.attn_q.weight"),
            other.hash(b"blk.0.attn_q.weight")
        );
    }

    #[test]
    fn empty_and_tiny_indexes() {
        let none: [Vec<u8>; 0] = [];
        let index = NameIndex::build(0, |i| &none[i]).unwrap();
        assert_eq!(index.find(b"", |i| &none[i]), None);
        let one = [Vec::new()];
        let index = NameIndex::build(1, |i| &one[i]).unwrap();
        assert_eq!(index.find(b"", |i| &one[i]), Some(0));
        assert_eq!(index.find(b"x", |i| &one[i]), None);
    }

    #[test]
    fn names_whose_hashes_share_a_slot_are_told_apart() {
        // Enough names in a small table that many probe past occupied slots.
        let names: Vec<Vec<u8>> = (0..4000).map(|i| format!("{i}").into_bytes()).collect();
        let mut index = NameIndex::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.insert(i, n, |j| &names[j]), Ok(()));
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.insert(names.len(), n, |j| &names[j]), Err(i));
            assert_eq!(index.find(n, |j| &names[j]), Some(i));
        }
    }
}
