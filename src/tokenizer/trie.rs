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

/// The Aho-Corasick links of a [`Prefixes`] trie: read byte after byte, the text's state is
/// the node of its longest suffix that some string starts with, and the strings that end there
/// follow from it. Each byte costs amortized constant time, however far strings continue.
struct Links {
    /// The node of the longest proper suffix of each node's string that is a node (0: the root).
    fail: Vec<u32>,
    /// The node of the longest suffix of each node's string (itself included) that is one of
    /// the strings (`NONE`: none).
    found: Vec<u32>,
    /// Each node's string length.
    depth: Vec<u32>,
}

impl Links {
    fn new(t: &Prefixes) -> Links {
        let n = t.values.len();
        let mut links = Links {
            fail: vec![0; n],
            found: vec![NONE; n],
            depth: vec![0; n],
        };
        // Nodes are numbered breadth first: a node's fail node is shallower, so its links are
        // set when its turn comes.
        for u in 0..n {
            let (s, e) = (t.edges[u] as usize, t.edges[u + 1] as usize);
            for k in s..e {
                let (c, v32) = (t.labels[k], t.children[k]);
                let v = v32 as usize;
                links.depth[v] = links.depth[u] + 1;
                let f = if u == 0 {
                    0
                } else {
                    let mut f = links.fail[u] as usize;
                    loop {
                        if let Some(x) = t.child(f, c) {
                            break x;
                        }
                        if f == 0 {
                            break 0;
                        }
                        f = links.fail[f] as usize;
                    }
                };
                // Node numbers fit in u32 (checked when the trie was built).
                links.fail[v] = u32::try_from(f).unwrap_or(0);
                links.found[v] = if t.values[v] == NONE {
                    links.found[f]
                } else {
                    v32
                };
            }
        }
        links
    }

    /// The state after `state` reads `c`.
    #[inline]
    fn step(&self, t: &Prefixes, mut state: usize, c: u8) -> usize {
        loop {
            if let Some(v) = t.child(state, c) {
                return v;
            }
            if state == 0 {
                return 0;
            }
            state = self.fail[state] as usize;
        }
    }
}

/// Strings found by the text read so far, by where they end: [`Ends::push`] reads one byte and
/// names the strings that end with it, longest first.
pub(crate) struct Ends {
    trie: Prefixes,
    links: Links,
}

impl Ends {
    /// The automaton of `ids`, whose strings `text_of` gives (see [`Prefixes::new`]).
    pub fn new<'a>(ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Option<Ends> {
        let trie = Prefixes::new(ids, text_of)?;
        let links = Links::new(&trie);
        Some(Ends { trie, links })
    }

    /// The automaton of the strings of `ids` reversed: read a text from its end back, the
    /// strings found at a byte are those that start there.
    pub fn reversed<'a>(ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Option<Ends> {
        let mut bytes = Vec::new();
        let mut spans = vec![(0, 0); ids.iter().max().map_or(0, |&m| m as usize + 1)];
        for &id in &ids {
            let t = text_of(id);
            spans[id as usize] = (bytes.len(), t.len());
            bytes.extend(t.iter().rev());
        }
        Ends::new(ids, |id| {
            let (s, l) = spans[id as usize];
            &bytes[s..s + l]
        })
    }

    /// The state of an empty text.
    pub const START: usize = 0;

    /// Reads `c` after `state`, with no need of the strings found.
    #[inline]
    pub fn step(&self, state: usize, c: u8) -> usize {
        self.links.step(&self.trie, state, c)
    }

    /// Reads `c` after `state`; calls `found(len, id)` for each string that ends with it, longest
    /// first; returns the new state.
    #[inline]
    pub fn push(&self, state: usize, c: u8, mut found: impl FnMut(usize, u32)) -> usize {
        let state = self.links.step(&self.trie, state, c);
        let mut v = self.links.found[state];
        while v != NONE {
            let node = v as usize;
            found(self.links.depth[node] as usize, self.trie.values[node]);
            v = self.links.found[self.links.fail[node] as usize];
        }
        state
    }

    /// Reads `c` after `state`: the new state, and the longest string that ends with `c`
    /// (`(len, id)`; lengths fit in u32, as the trie's bytes do).
    #[inline]
    fn push_longest(&self, state: usize, c: u8) -> (usize, Option<(u32, u32)>) {
        let state = self.links.step(&self.trie, state, c);
        let v = self.links.found[state];
        let m = (v != NONE).then(|| {
            let node = v as usize;
            (self.links.depth[node], self.trie.values[node])
        });
        (state, m)
    }
}

/// Greedy longest match, as llama.cpp's RWKV and WordPiece tokenizers cut text: the longest
/// string that starts at a position, found in amortized constant time per byte of text (an
/// automaton of the reversed strings, read from the end of the text back), however far other
/// strings continue past it.
pub(crate) struct Longest {
    reversed: Ends,
}

/// Positions of a text whose longest matches [`Longest::cut`] holds at once.
const CHUNK: usize = 1 << 14;

impl Longest {
    /// The matcher of `ids`, whose strings `text_of` gives (none empty; of equal strings the one
    /// sorting first by id is found).
    pub fn new<'a>(ids: Vec<u32>, text_of: impl Fn(u32) -> &'a [u8]) -> Option<Longest> {
        Some(Longest {
            reversed: Ends::reversed(ids, text_of)?,
        })
    }

    /// Cuts `text` greedily: `next(at, longest)` is called at 0 with the longest string that
    /// starts there (`(len, id)`, or `None`), and returns the position to call it at next
    /// (after `at`), or `None` to stop; it is also stopped at the end of the text.
    /// `scratch` is working room, reused between calls.
    pub fn cut(
        &self,
        text: &[u8],
        scratch: &mut Vec<Option<(u32, u32)>>,
        mut next: impl FnMut(usize, Option<(usize, u32)>) -> Option<usize>,
    ) {
        let n = text.len();
        // The state at each chunk's end (every CHUNK positions), the text read from its end.
        let mut marks = Vec::new();
        if n > CHUNK {
            marks.resize(n / CHUNK + 1, Ends::START);
            let mut state = Ends::START;
            for i in (0..n).rev() {
                // The state after the bytes from i + 1 on: the one before chunk (i + 1) / CHUNK.
                if (i + 1) % CHUNK == 0 {
                    marks[(i + 1) / CHUNK] = state;
                }
                state = self
                    .reversed
                    .links
                    .step(&self.reversed.trie, state, text[i]);
            }
        }
        let longest = scratch;
        let mut chunk = usize::MAX;
        let mut at = 0;
        while at < n {
            let c = at / CHUNK;
            if c != chunk {
                chunk = c;
                let (start, end) = (c * CHUNK, n.min((c + 1) * CHUNK));
                let mut state = if end == n {
                    Ends::START
                } else {
                    marks[end / CHUNK]
                };
                longest.clear();
                longest.resize(end - start, None);
                for i in (start..end).rev() {
                    let (s, m) = self.reversed.push_longest(state, text[i]);
                    state = s;
                    longest[i - start] = m;
                }
            }
            let m = longest[at - c * CHUNK].map(|(len, id)| (len as usize, id));
            match next(at, m) {
                Some(to) if to > at => at = to,
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ends, Longest, Prefixes};

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

    /// A small random generator for the tests.
    fn rng(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap()
        }
    }

    /// Random words over `alphabet`, no two alike, some long.
    fn words(next: &mut impl FnMut(usize) -> usize, alphabet: &[u8]) -> Vec<Vec<u8>> {
        let mut words: Vec<Vec<u8>> = Vec::new();
        for _ in 0..1 + next(30) {
            let len = if next(8) == 0 {
                1 + next(40)
            } else {
                1 + next(4)
            };
            let w: Vec<u8> = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            if !words.contains(&w) {
                words.push(w);
            }
        }
        words
    }

    /// The strings ending at each position, and the longest starting at each, against plain
    /// scans of every string; the texts cross the chunks of the greedy cut.
    #[test]
    fn the_automata_match_plain_scans() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..60 {
            let alphabet = [&b"ab"[..], b"abc", b"a"][round % 3];
            let words = words(&mut next, alphabet);
            let ids: Vec<u32> = (0..u32::try_from(words.len()).unwrap()).collect();
            let text_of = |i: u32| &words[i as usize][..];
            let ends = Ends::new(ids.clone(), text_of).unwrap();
            let longest = Longest::new(ids, text_of).unwrap();
            let len = if round % 10 == 0 {
                2 * super::CHUNK + next(999)
            } else {
                next(300)
            };
            let text: Vec<u8> = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            let mut state = Ends::START;
            for j in 0..text.len() {
                let mut got = Vec::new();
                state = ends.push(state, text[j], |l, id| got.push((l, id)));
                let mut want: Vec<(usize, u32)> = (0..words.len())
                    .filter(|&i| text[..=j].ends_with(&words[i]))
                    .map(|i| (words[i].len(), u32::try_from(i).unwrap()))
                    .collect();
                want.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(got, want, "round {round} at {j}");
            }
            // Greedy: every position visited in turn (one byte at a time).
            let mut scratch = Vec::new();
            let mut visited = 0;
            longest.cut(&text, &mut scratch, |at, m| {
                assert_eq!(at, visited);
                let want = (0..words.len())
                    .filter(|&i| text[at..].starts_with(&words[i]))
                    .max_by_key(|&i| words[i].len())
                    .map(|i| (words[i].len(), u32::try_from(i).unwrap()));
                assert_eq!(m, want, "round {round} at {at}");
                visited += 1;
                Some(at + 1)
            });
            assert_eq!(visited, text.len());
        }
    }
}
