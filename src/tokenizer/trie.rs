//! Prefix search over a set of byte strings: the strings' ids sorted by their bytes, narrowed
//! one byte at a time by binary search. It answers what llama.cpp's `naive_trie` answers (every
//! string that is a prefix of the text, walking only while some string continues the prefix)
//! with one `u32` per string and no copy of the strings.

/// Ids sorted by the bytes `text_of` gives them, and the range of those starting with each
/// two bytes (the first two steps of every walk, without a search).
pub(crate) struct Prefixes {
    ids: Vec<u32>,
    /// `pairs[a << 8 | b]`: the range of `ids` whose strings start with bytes `a`, `b`.
    pairs: Vec<(u32, u32)>,
    /// `singles[a]`: the id whose string is the one byte `a`, if any.
    singles: Vec<Option<u32>>,
}

impl Prefixes {
    /// The index of `ids`, whose strings `text_of` gives.
    pub fn new<'a>(mut ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Prefixes {
        ids.sort_unstable_by(|&a, &b| text_of(a).cmp(text_of(b)).then(a.cmp(&b)));
        let mut pairs = vec![(0u32, 0u32); 65536];
        let mut singles = vec![None; 256];
        for (k, &id) in ids.iter().enumerate() {
            // Fewer than 2^32 strings.
            let k = u32::try_from(k).unwrap_or(u32::MAX);
            match text_of(id) {
                [a] => {
                    singles[usize::from(*a)].get_or_insert(id);
                }
                [a, b, ..] => {
                    let r = &mut pairs[usize::from(*a) << 8 | usize::from(*b)];
                    if r.0 == r.1 {
                        *r = (k, k + 1);
                    } else {
                        r.1 = k + 1;
                    }
                }
                [] => {}
            }
        }
        Prefixes {
            ids,
            pairs,
            singles,
        }
    }

    /// Calls `found(len, id)` for each string that is `text[..len]`, shortest first; returns
    /// how far the walk got (the longest `len` that some string starts with).
    pub fn walk<'a>(
        &self,
        text_of: impl Fn(u32) -> &'a [u8],
        text: &[u8],
        mut found: impl FnMut(usize, u32),
    ) -> usize {
        let Some(&c0) = text.first() else {
            return 0;
        };
        if let Some(id) = self.singles[usize::from(c0)] {
            found(1, id);
        }
        let Some(&c1) = text.get(1) else {
            // Some string starts with the byte if it is one, or a pair range starts with it.
            let any = self.singles[usize::from(c0)].is_some()
                || self.pairs[usize::from(c0) << 8..(usize::from(c0) + 1) << 8]
                    .iter()
                    .any(|r| r.0 != r.1);
            return usize::from(any);
        };
        let (lo, hi) = self.pairs[usize::from(c0) << 8 | usize::from(c1)];
        let (mut lo, mut hi) = (lo as usize, hi as usize);
        if lo == hi {
            let any = self.singles[usize::from(c0)].is_some()
                || self.pairs[usize::from(c0) << 8..(usize::from(c0) + 1) << 8]
                    .iter()
                    .any(|r| r.0 != r.1);
            return usize::from(any);
        }
        if text_of(self.ids[lo]).len() == 2 {
            found(2, self.ids[lo]);
        }
        for (d, &c) in text.iter().enumerate().skip(2) {
            let range = &self.ids[lo..hi];
            let below = |id: &u32, strict: bool| {
                let t = text_of(*id);
                t.len() <= d || if strict { t[d] < c } else { t[d] <= c }
            };
            let start = range.partition_point(|id| below(id, true));
            let end = start + range[start..].partition_point(|id| below(id, false));
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

    /// Against a plain scan of every string, on random strings and texts over a small alphabet.
    #[test]
    fn the_walk_matches_a_plain_scan() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap()
        };
        for _ in 0..200 {
            let mut words: Vec<Vec<u8>> = Vec::new();
            for _ in 0..next(30) {
                let w: Vec<u8> = (0..1 + next(4)).map(|_| b"abc"[next(3)]).collect();
                if !words.contains(&w) {
                    words.push(w);
                }
            }
            let ids: Vec<u32> = (0..u32::try_from(words.len()).unwrap()).collect();
            let p = Prefixes::new(ids, |i| &words[i as usize][..]);
            for _ in 0..20 {
                let text: Vec<u8> = (0..next(6)).map(|_| b"abc"[next(3)]).collect();
                let mut hits = Vec::new();
                let depth = p.walk(
                    |i| &words[i as usize][..],
                    &text,
                    |l, id| hits.push((l, id)),
                );
                let mut want: Vec<(usize, u32)> = words
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| text.starts_with(w))
                    .map(|(i, w)| (w.len(), u32::try_from(i).unwrap()))
                    .collect();
                want.sort_unstable();
                assert_eq!(hits, want, "{words:?} {text:?}");
                let want_depth = (0..=text.len())
                    .rev()
                    .find(|&d| words.iter().any(|w| w.starts_with(&text[..d])))
                    .unwrap_or(0);
                assert_eq!(depth, want_depth, "{words:?} {text:?}");
            }
        }
    }
}
