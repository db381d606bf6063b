//! A name-to-position hash index that stores only positions: names stay in the file's bytes, so
//! the index owns no strings and borrows nothing.
//!
//! Opening a file indexes every tensor name (a duplicate name is refused at open), so inserting
//! is on the open path of files with many thousands of tensors. Each slot is one `u64`: the high
//! 32 bits of the name's hash and the entry's position + 1 (0 marks an empty slot). Probing is
//! linear over a table at most half full, and compares a name only when the stored hash bits
//! match, so an insert is one hash, usually one slot read and one write.

use foldhash::fast::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Positions of entries, found by the name each entry has in the file.
pub(crate) struct NameIndex {
    slots: Box<[u64]>,
    // Seeded per index so that a file cannot be crafted to make every name collide.
    hasher: RandomState,
}

const HASH_BITS: u64 = 0xFFFF_FFFF_0000_0000;

/// The low bits of `x` as a position: a table index from a hash, or a slot's low 32 bits
/// (position + 1). Dropping the high bits is the point here, so this cast truncates on purpose.
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn low_bits(x: u64) -> usize {
    x as usize
}

/// The hash of one name: its bytes alone (no length prefix: only whole names are hashed).
#[inline]
fn hash(hasher: &RandomState, name: &[u8]) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(name);
    h.finish()
}

impl NameIndex {
    /// An empty index with room for `count` entries (fewer than 2^32).
    pub fn with_capacity(count: usize) -> NameIndex {
        // At most half full, so probes stay short and always reach an empty slot.
        let size = count.saturating_mul(2).next_power_of_two().max(8);
        NameIndex {
            slots: vec![0; size].into_boxed_slice(),
            hasher: RandomState::default(),
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

    /// The hash of `name` in this index, for [`NameIndex::insert_hashed`].
    #[inline(always)]
    pub fn hash(&self, name: &[u8]) -> u64 {
        hash(&self.hasher, name)
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
        self.place(i, hash, |j| name_of(j) == name)
    }

    /// [`NameIndex::insert`] of entry `i` whose name hashes to `hash` (from [`NameIndex::hash`]);
    /// the name itself is read (through `name_of(i)`) only when a slot's hash bits match.
    ///
    /// Inserting is a random access into a table that, past a few thousand entries, no longer
    /// fits in the cache; called in a loop that does nothing else, the processor overlaps the
    /// misses of many inserts, which it cannot do when each insert follows a long decode.
    #[inline(always)]
    pub fn insert_hashed<'n>(
        &mut self,
        i: usize,
        hash: u64,
        name_of: impl Fn(usize) -> &'n [u8],
    ) -> Result<(), usize> {
        self.place(i, hash, |j| name_of(j) == name_of(i))
    }

    /// Puts entry `i` in the first free slot from its hash's, unless a slot holds an entry with
    /// the same hash bits for which `same_name` holds: then returns that entry's position.
    #[inline(always)]
    fn place(
        &mut self,
        i: usize,
        hash: u64,
        same_name: impl Fn(usize) -> bool,
    ) -> Result<(), usize> {
        let mask = self.slots.len() - 1;
        let mut at = low_bits(hash) & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                self.slots[at] = (hash & HASH_BITS) | (i as u64 + 1);
                return Ok(());
            }
            let j = low_bits(slot & !HASH_BITS).wrapping_sub(1);
            if slot & HASH_BITS == hash & HASH_BITS && same_name(j) {
                return Err(j);
            }
            at = (at + 1) & mask;
        }
    }

    /// The position of the entry named `name`.
    pub fn find<'n>(&self, name: &[u8], name_of: impl Fn(usize) -> &'n [u8]) -> Option<usize> {
        let hash = hash(&self.hasher, name);
        let mask = self.slots.len() - 1;
        let mut at = low_bits(hash) & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return None;
            }
            let j = low_bits(slot & !HASH_BITS).wrapping_sub(1);
            if slot & HASH_BITS == hash & HASH_BITS && name_of(j) == name {
                return Some(j);
            }
            at = (at + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let names: Vec<Vec<u8>> = [b"a".as_slice(), b"bb", b"a", b"c", b"bb", b"a"]
            .iter()
            .map(|n| n.to_vec())
            .collect();
        let mut index = NameIndex::with_capacity(names.len());
        let hashes: Vec<u64> = names.iter().map(|n| index.hash(n)).collect();
        let found: Vec<Result<(), usize>> = (0..names.len())
            .map(|i| index.insert_hashed(i, hashes[i], |j| &names[j]))
            .collect();
        assert_eq!(found, [Ok(()), Ok(()), Err(0), Ok(()), Err(1), Err(0)]);
        assert_eq!(index.find(b"c", |j| &names[j]), Some(3));
        assert_eq!(index.find(b"bb", |j| &names[j]), Some(1));
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
