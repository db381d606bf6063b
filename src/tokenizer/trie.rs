//! Prefix search over a set of byte strings: a flat trie built once (nodes numbered breadth
//! first, each node's edges sorted by byte in one array, the root's in a table of 256). It
//! answers what llama.cpp's `naive_trie` answers (every string that is a prefix of the text,
//! walking only while some string continues the prefix) in one step per byte.

use std::collections::VecDeque;

/// No string ends at this node.
const NONE: u32 = u32::MAX;

/// The trie of a set of strings.
pub(crate) struct Prefixes {
    /// The root's child for each first byte (0: none; the root is no one's child).
    root: Vec<u32>,
    /// Node `i`'s edges are `labels[edges[i]..edges[i + 1]]` (sorted) and the same range of
    /// `children`.
    edges: Vec<u32>,
    labels: Vec<u8>,
    children: Vec<u32>,
    /// The id whose string ends at each node (`NONE`: none).
    values: Vec<u32>,
}

impl Prefixes {
    /// The trie of `ids`, whose strings `text_of` gives; of equal strings the one sorting first
    /// (by id) is found. `None` when the strings have 2^32 bytes or more.
    pub fn new<'a>(mut ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Option<Prefixes> {
        ids.sort_unstable_by(|&a, &b| text_of(a).cmp(text_of(b)).then(a.cmp(&b)));
        let mut t = Prefixes {
            root: vec![0; 256],
            edges: Vec::new(),
            labels: Vec::new(),
            children: Vec::new(),
            values: vec![NONE],
        };
        // Breadth first: a node's number is given when it is queued, and nodes are taken in
        // that order, so each node's edges follow the previous node's.
        let mut queue = VecDeque::from([(0usize, 0usize, ids.len(), 0usize)]);
        while let Some((node, mut i, hi, depth)) = queue.pop_front() {
            t.edges.push(u32::try_from(t.labels.len()).ok()?);
            while i < hi && text_of(ids[i]).len() == depth {
                if t.values[node] == NONE {
                    t.values[node] = ids[i];
                }
                i += 1;
            }
            while i < hi {
                let c = text_of(ids[i])[depth];
                let mut j = i + 1;
                while j < hi && text_of(ids[j])[depth] == c {
                    j += 1;
                }
                let child = u32::try_from(t.values.len()).ok().filter(|&c| c != NONE)?;
                t.values.push(NONE);
                if node == 0 {
                    t.root[usize::from(c)] = child;
                }
                t.labels.push(c);
                t.children.push(child);
                queue.push_back((child as usize, i, j, depth + 1));
                i = j;
            }
        }
        t.edges.push(u32::try_from(t.labels.len()).ok()?);
        Some(t)
    }

    /// The child of `node` by byte `c`.
    #[inline]
    fn child(&self, node: usize, c: u8) -> Option<usize> {
        if node == 0 {
            return Some(self.root[usize::from(c)] as usize).filter(|&n| n != 0);
        }
        let (s, e) = (self.edges[node] as usize, self.edges[node + 1] as usize);
        let labels = &self.labels[s..e];
        let k = if labels.len() <= 8 {
            labels.iter().position(|&l| l == c)?
        } else {
            labels.binary_search(&c).ok()?
        };
        Some(self.children[s + k] as usize)
    }

    /// Calls `found(len, id)` for each string that is `text[..len]`, shortest first; returns
    /// how far the walk got (the longest `len` that some string starts with).
    #[inline]
    pub fn walk(&self, text: &[u8], mut found: impl FnMut(usize, u32)) -> usize {
        let mut node = 0;
        for (d, &c) in text.iter().enumerate() {
            let Some(next) = self.child(node, c) else {
                return d;
            };
            node = next;
            let v = self.values[node];
            if v != NONE {
                found(d + 1, v);
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
        let p = Prefixes::new((0..6).collect(), |i| words[i as usize]).unwrap();
        let mut hits = Vec::new();
        let depth = p.walk(b"abcz", |l, id| hits.push((l, id)));
        assert_eq!(hits, vec![(1, 0), (2, 1), (3, 2)]);
        assert_eq!(depth, 3);
        hits.clear();
        assert_eq!(p.walk(b"q", |l, id| hits.push((l, id))), 0);
        assert!(hits.is_empty());
        assert_eq!(p.walk(b"ab", |_, _| {}), 2);
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
            let p = Prefixes::new(ids, |i| &words[i as usize][..]).unwrap();
            for _ in 0..20 {
                let text: Vec<u8> = (0..next(6)).map(|_| b"abc"[next(3)]).collect();
                let mut hits = Vec::new();
                let depth = p.walk(&text, |l, id| hits.push((l, id)));
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
