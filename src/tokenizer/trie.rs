//! Prefix search over a set of byte strings: the strings' ids sorted by their bytes, narrowed
//! one byte at a time by binary search. It answers what llama.cpp's `naive_trie` answers (every
//! string that is a prefix of the text, walking only while some string continues the prefix)
//! with one `u32` per string and no copy of the strings.

/// Ids sorted by the bytes `text_of` gives them.
pub(crate) struct Prefixes {
    ids: Vec<u32>,
}

impl Prefixes {
    /// The index of `ids`, whose strings `text_of` gives.
    pub fn new<'a>(mut ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Prefixes {
        ids.sort_unstable_by(|&a, &b| text_of(a).cmp(text_of(b)).then(a.cmp(&b)));
        Prefixes { ids }
    }

    /// Calls `found(len, id)` for each string that is `text[..len]`, shortest first; returns
    /// how far the walk got (the longest `len` that some string starts with).
    pub fn walk<'a>(
        &self,
        text_of: impl Fn(u32) -> &'a [u8],
        text: &[u8],
        mut found: impl FnMut(usize, u32),
    ) -> usize {
        let (mut lo, mut hi) = (0, self.ids.len());
        for (d, &c) in text.iter().enumerate() {
            let range = &self.ids[lo..hi];
            let below = |id: &u32, strict: bool| {
                let t = text_of(*id);
                t.len() <= d || if strict { t[d] < c } else { t[d] <= c }
            };
            let start = range.partition_point(|id| below(id, true));
            let end = range.partition_point(|id| below(id, false));
            if start == end {
                return d;
            }
            hi = lo + end;
            lo += start;
            let first = self.ids[lo];
            if text_of(first).len() == d + 1 {
                found(d + 1, first);
            }
        }
        text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Prefixes;

    #[test]
    fn every_prefix_is_found_and_the_walk_stops_where_strings_do() {
        let words: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"b", b"abd", b"x"];
        let p = Prefixes::new((0..6).collect(), |i| words[i as usize]);
        let mut hits = Vec::new();
        let depth = p.walk(|i| words[i as usize], b"abcz", |l, id| hits.push((l, id)));
        assert_eq!(hits, vec![(1, 0), (2, 1), (3, 2)]);
        assert_eq!(depth, 3);
        hits.clear();
        assert_eq!(
            p.walk(|i| words[i as usize], b"q", |l, id| hits.push((l, id))),
            0
        );
        assert!(hits.is_empty());
        assert_eq!(p.walk(|i| words[i as usize], b"ab", |_, _| {}), 2);
    }
}
