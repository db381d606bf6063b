//! A name-to-position hash index that stores only positions: names stay in the file's bytes, so
//! the index owns no strings and borrows nothing.

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Positions of entries, found by the name each entry has in the file.
pub(crate) struct NameIndex {
    table: HashTable<u32>,
    // Seeded per index so that a file cannot be crafted to make every name collide.
    hasher: RandomState,
}

impl NameIndex {
    /// Indexes `count` entries whose names `name_of` gives. Returns the positions of the first
    /// pair of entries that share a name, if any.
    pub fn build<'n>(
        count: usize,
        name_of: impl Fn(usize) -> &'n [u8],
    ) -> Result<NameIndex, (usize, usize)> {
        let hasher = RandomState::default();
        let mut table = HashTable::with_capacity(count);
        for i in 0..count {
            let name = name_of(i);
            let hash = hasher.hash_one(name);
            let entry = table.entry(
                hash,
                |&j: &u32| name_of(j as usize) == name,
                |&j: &u32| hasher.hash_one(name_of(j as usize)),
            );
            match entry {
                hashbrown::hash_table::Entry::Occupied(first) => {
                    return Err((*first.get() as usize, i));
                }
                hashbrown::hash_table::Entry::Vacant(slot) => {
                    slot.insert(i as u32);
                }
            }
        }
        Ok(NameIndex { table, hasher })
    }

    /// The position of the entry named `name`.
    pub fn find<'n>(&self, name: &[u8], name_of: impl Fn(usize) -> &'n [u8]) -> Option<usize> {
        let hash = self.hasher.hash_one(name);
        self.table
            .find(hash, |&j| name_of(j as usize) == name)
            .map(|&j| j as usize)
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
}
