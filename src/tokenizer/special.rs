//! Special-token text cut out of the input before tokenizing, as llama.cpp's
//! `tokenizer_st_partition` does: each special token in turn (longest first) is found in the
//! text fragments left by the ones before it, with its lstrip/rstrip attributes taking the
//! whitespace beside it.

use super::vocab::{attr, Vocab};
use std::collections::BTreeMap;

/// The special tokens by their first two bytes (and the one-byte ones by their byte), for one
/// value of `parse_special`: every occurrence of every one of them is found in one pass over
/// the text.
struct Lookup {
    /// Token ids in llama.cpp's order (longest first); a token's place here is its priority.
    order: Vec<u32>,
    /// `starts[k]..starts[k + 1]` indexes `by_pair` for the tokens whose first two bytes are
    /// `k` (first byte high).
    starts: Vec<u32>,
    by_pair: Vec<u32>,
    /// The priorities of the one-byte tokens, by their byte.
    single: Vec<Vec<u32>>,
}

impl Lookup {
    fn new(vocab: &Vocab, order: Vec<u32>) -> Lookup {
        let mut single = vec![Vec::new(); 256];
        let mut pairs: Vec<(u16, u32)> = Vec::new();
        for (prio, &id) in order.iter().enumerate() {
            // Fewer than 2^31 tokens.
            let prio = u32::try_from(prio).unwrap_or(u32::MAX);
            match vocab.text(id as usize) {
                [] => {}
                [b] => single[usize::from(*b)].push(prio),
                [a, b, ..] => pairs.push((u16::from_be_bytes([*a, *b]), prio)),
            }
        }
        pairs.sort_unstable();
        let mut starts = vec![0u32; 65537];
        for &(k, _) in &pairs {
            starts[usize::from(k) + 1] += 1;
        }
        for k in 0..65536 {
            starts[k + 1] += starts[k];
        }
        Lookup {
            order,
            starts,
            by_pair: pairs.into_iter().map(|(_, p)| p).collect(),
            single,
        }
    }

    /// Calls `found(priority, position)` for every occurrence in `text` of a token whose
    /// priority is in `prios`, overlapping ones included, by position (the one-byte tokens
    /// after the others); stops when `found` returns false. Returns whether it went to the end.
    fn each_occurrence(
        &self,
        vocab: &Vocab,
        text: &[u8],
        prios: std::ops::Range<u32>,
        mut found: impl FnMut(u32, usize) -> bool,
    ) -> bool {
        if self.order.is_empty() || prios.is_empty() {
            return true;
        }
        // Each list of priorities is sorted: only the part within `prios` is looked at.
        let all = prios.start == 0 && prios.end as usize >= self.order.len();
        let within = |list: &[u32]| {
            if all {
                return 0..list.len();
            }
            let from = list.partition_point(|&p| p < prios.start);
            let to = list.partition_point(|&p| p < prios.end);
            from..to
        };
        for (i, w) in text.windows(2).enumerate() {
            let k = usize::from(u16::from_be_bytes([w[0], w[1]]));
            let bucket = &self.by_pair[self.starts[k] as usize..self.starts[k + 1] as usize];
            for &prio in &bucket[within(bucket)] {
                let t = vocab.text(self.order[prio as usize] as usize);
                if text[i..].starts_with(t) && !found(prio, i) {
                    return false;
                }
            }
        }
        if self.single.iter().any(|s| !s.is_empty()) {
            for (i, &c) in text.iter().enumerate() {
                let list = &self.single[usize::from(c)];
                for &prio in &list[within(list)] {
                    if !found(prio, i) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Every (priority, position) where a token of `prios` occurs in `text`, overlapping ones
    /// included; `None` when there are more than `budget`.
    fn occurrences(
        &self,
        vocab: &Vocab,
        text: &[u8],
        prios: std::ops::Range<u32>,
        budget: usize,
    ) -> Option<Vec<(u32, usize)>> {
        let mut found = Vec::new();
        let whole = self.each_occurrence(vocab, text, prios, |prio, at| {
            found.push((prio, at));
            found.len() <= budget
        });
        whole.then_some(found)
    }

    /// How many times each token occurs in `text` (saturating).
    fn counts(&self, vocab: &Vocab, text: &[u8]) -> Vec<u32> {
        let mut counts = vec![0u32; self.order.len()];
        self.each_occurrence(vocab, text, 0..u32::MAX, |prio, _| {
            let c = &mut counts[prio as usize];
            *c = c.saturating_add(1);
            true
        });
        counts
    }
}

/// The text fragments left and the special tokens taken so far, as llama.cpp's passes leave
/// them: [`Cuts::take`] is called in llama.cpp's order (priority, then position).
struct Cuts {
    /// Text fragments by start (value: end).
    texts: BTreeMap<usize, usize>,
    /// The tokens taken, by position.
    tokens: Vec<(usize, u32)>,
}

impl Cuts {
    fn new(len: usize) -> Cuts {
        Cuts {
            texts: BTreeMap::from([(0, len)]),
            tokens: Vec::new(),
        }
    }

    /// Takes token `id` at `at` if it still lies whole within a text fragment, with its lstrip
    /// and rstrip.
    fn take(&mut self, vocab: &Vocab, text: &[u8], id: u32, at: usize) {
        let len = vocab.text(id as usize).len();
        let Some((&start, &end)) = self.texts.range(..=at).next_back() else {
            return;
        };
        if at + len > end {
            return;
        }
        let a = vocab.attr(id);
        self.texts.remove(&start);
        let mut left_end = at;
        if a & attr::LSTRIP != 0 {
            while left_end > start && is_c_space(text[left_end - 1]) {
                left_end -= 1;
            }
        }
        if left_end > start {
            self.texts.insert(start, left_end);
        }
        self.tokens.push((at, id));
        let mut right = at + len;
        if a & attr::RSTRIP != 0 {
            while right < end && is_c_space(text[right]) {
                right += 1;
            }
        }
        if right < end {
            self.texts.insert(right, end);
        }
    }

    /// Takes every occurrence of token `id` that lies whole within a text fragment, left to
    /// right (as [`Cuts::take`] at each occurrence in turn would), scanning only the fragments.
    fn take_all(&mut self, vocab: &Vocab, text: &[u8], id: u32) {
        let t = vocab.text(id as usize);
        if t.is_empty() {
            return;
        }
        let mut pos = 0;
        loop {
            // The fragment holding `pos`, else the next one.
            let here = self
                .texts
                .range(..=pos)
                .next_back()
                .filter(|&(_, &e)| e > pos)
                .or_else(|| self.texts.range(pos..).next());
            let Some((&s, &e)) = here else {
                return;
            };
            let from = pos.max(s);
            match find(&text[from..e], t) {
                Some(rel) => {
                    self.take(vocab, text, id, from + rel);
                    pos = from + rel + 1;
                }
                None => pos = e,
            }
        }
    }

    /// The fragments in text order.
    fn fragments(self) -> Vec<Fragment> {
        let Cuts { texts, mut tokens } = self;
        tokens.sort_unstable();
        let mut out = Vec::with_capacity(tokens.len() * 2 + 1);
        let mut t = tokens.into_iter().peekable();
        for (start, end) in texts {
            while let Some(&(at, id)) = t.peek() {
                if at > start {
                    break;
                }
                out.push(Fragment::Token(id));
                t.next();
            }
            out.push(Fragment::Text(start, end));
        }
        out.extend(t.map(|(_, id)| Fragment::Token(id)));
        out
    }
}

/// The special tokens, indexed for [`SpecialIndex::partition`].
pub(crate) struct SpecialIndex {
    /// Control, unknown and user-defined tokens (`parse_special`).
    all: Lookup,
    /// User-defined tokens only.
    user: Lookup,
}

impl SpecialIndex {
    /// The index of `specials` (control, user-defined and unknown tokens, in llama.cpp's order:
    /// longest first).
    pub fn new(vocab: &Vocab, specials: &[u32]) -> SpecialIndex {
        let user = specials
            .iter()
            .copied()
            .filter(|&id| vocab.attr(id) & (attr::CONTROL | attr::UNKNOWN) == 0)
            .collect();
        SpecialIndex {
            all: Lookup::new(vocab, specials.to_vec()),
            user: Lookup::new(vocab, user),
        }
    }

    /// `text` cut into fragments by the special tokens, exactly as llama.cpp's
    /// `tokenizer_st_partition` cuts it (token after token, longest first, each token's
    /// occurrences left to right within what the tokens before it left, with its lstrip and
    /// rstrip), in time linear in the text and the occurrences: every occurrence of every token
    /// is found in one pass, then taken in llama.cpp's order where it still lies whole within a
    /// text fragment. Working memory stays within half the text (and 256 KiB) whatever the
    /// tokens: when they occur more often than that holds (nested tokens such as runs of
    /// newlines occur many times at each position), see [`SpecialIndex::partition_bounded`].
    pub fn partition(&self, vocab: &Vocab, text: &[u8], parse_special: bool) -> Vec<Fragment> {
        self.partition_within(vocab, text, parse_special, text.len() / 64 + (8 << 10))
    }

    /// [`SpecialIndex::partition`] holding at most `budget` occurrences at once.
    fn partition_within(
        &self,
        vocab: &Vocab,
        text: &[u8],
        parse_special: bool,
        budget: usize,
    ) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let lookup = if parse_special { &self.all } else { &self.user };
        let Some(mut found) = lookup.occurrences(vocab, text, 0..u32::MAX, budget) else {
            return Self::partition_bounded(lookup, vocab, text, budget);
        };
        if found.is_empty() {
            return vec![Fragment::Text(0, text.len())];
        }
        found.sort_unstable();
        let mut cuts = Cuts::new(text.len());
        for (prio, at) in found {
            cuts.take(vocab, text, lookup.order[prio as usize], at);
        }
        cuts.fragments()
    }

    /// The partition when the occurrences are more than `budget`: the tokens in llama.cpp's
    /// order, those that occur at most `budget` times gathered into runs of at most `budget`
    /// occurrences (one pass over the text each, then taken as in the one-pass partition), and
    /// each that occurs more often taken by a scan of what the tokens before it left (llama.cpp's
    /// own pass, for that token).
    fn partition_bounded(
        lookup: &Lookup,
        vocab: &Vocab,
        text: &[u8],
        budget: usize,
    ) -> Vec<Fragment> {
        let counts = lookup.counts(vocab, text);
        let mut cuts = Cuts::new(text.len());
        let n = counts.len();
        let mut k = 0;
        let mut found = Vec::new();
        while k < n {
            if counts[k] == 0 {
                k += 1;
                continue;
            }
            let id = lookup.order[k];
            if counts[k] as usize > budget {
                cuts.take_all(vocab, text, id);
                k += 1;
                continue;
            }
            let (lo, mut total) = (k, 0usize);
            while k < n && counts[k] as usize <= budget - total {
                total += counts[k] as usize;
                k += 1;
            }
            // Fewer than 2^31 special tokens: each priority is a u32.
            let range = u32::try_from(lo).unwrap_or(u32::MAX)..u32::try_from(k).unwrap_or(u32::MAX);
            found.clear();
            lookup.each_occurrence(vocab, text, range, |prio, at| {
                found.push((prio, at));
                true
            });
            found.sort_unstable();
            for &(prio, at) in &found {
                cuts.take(vocab, text, lookup.order[prio as usize], at);
            }
        }
        drop(found);
        cuts.fragments()
    }
}

/// A piece of the input: a token already decided, or a byte range still to tokenize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fragment {
    /// A special token.
    Token(u32),
    /// The input's bytes `start..end` (never empty).
    Text(usize, usize),
}

/// C's `isspace` in the "C" locale.
#[inline]
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The first occurrence of `needle` (not empty) in `hay`.
#[inline]
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    if hay.len() < needle.len() {
        return None;
    }
    let last_start = hay.len() - needle.len();
    let mut from = 0;
    while from <= last_start {
        let at = from + hay[from..=last_start].iter().position(|&b| b == first)?;
        if &hay[at + 1..at + needle.len()] == rest {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `text` cut into fragments by the special tokens `specials` (in llama.cpp's order: longest
/// first), token after token over the whole text, as llama.cpp does it: the reference that
/// [`SpecialIndex::partition`] is tested against. Control and unknown tokens are cut only when
/// `parse_special` is set; user-defined ones always.
#[cfg(test)]
pub(crate) fn partition_naive(
    vocab: &Vocab,
    specials: &[u32],
    text: &[u8],
    parse_special: bool,
) -> Vec<Fragment> {
    let mut fragments = Vec::new();
    if text.is_empty() {
        return fragments;
    }
    fragments.push(Fragment::Text(0, text.len()));
    let mut next = Vec::new();
    for &id in specials {
        let a = vocab.attr(id);
        if !parse_special && a & (attr::CONTROL | attr::UNKNOWN) != 0 {
            continue;
        }
        let tok = vocab.text(id as usize);
        if tok.is_empty() {
            continue;
        }
        // Most special tokens occur nowhere: one search of each text fragment tells.
        let occurs = fragments.iter().any(|f| match *f {
            Fragment::Text(s, e) => find(&text[s..e], tok).is_some(),
            Fragment::Token(_) => false,
        });
        if !occurs {
            continue;
        }
        next.clear();
        next.reserve(fragments.len() + 2);
        for &f in &fragments {
            let Fragment::Text(mut start, end) = f else {
                next.push(f);
                continue;
            };
            loop {
                let Some(rel) = find(&text[start..end], tok) else {
                    next.push(Fragment::Text(start, end));
                    break;
                };
                let at = start + rel;
                if at > start {
                    let mut left_end = at;
                    if a & attr::LSTRIP != 0 {
                        while left_end > start && is_c_space(text[left_end - 1]) {
                            left_end -= 1;
                        }
                    }
                    if left_end > start {
                        next.push(Fragment::Text(start, left_end));
                    }
                }
                next.push(Fragment::Token(id));
                let mut right = at + tok.len();
                if right >= end {
                    break;
                }
                if a & attr::RSTRIP != 0 {
                    while right < end && is_c_space(text[right]) {
                        right += 1;
                    }
                }
                if right >= end {
                    break;
                }
                start = right;
            }
        }
        std::mem::swap(&mut fragments, &mut next);
    }
    fragments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{MetadataValue, Writer};
    use crate::{GgufFile, ValueType};

    /// A vocabulary of `texts`, whose types are `types`.
    fn vocab(texts: &[Vec<u8>], types: &[i32]) -> Vocab {
        let mut w = Writer::new();
        w.add_metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(
                ValueType::String,
                texts.iter().cloned().map(MetadataValue::String).collect(),
            ),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.ggml.token_type",
            MetadataValue::Array(
                ValueType::Int32,
                types.iter().copied().map(MetadataValue::I32).collect(),
            ),
        )
        .unwrap();
        Vocab::load(&GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap()).unwrap()
    }

    /// The one-pass partition gives what llama.cpp's token-after-token passes give, on random
    /// special tokens (overlapping, nested, one byte long, with lstrip and rstrip) and texts.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // small test numbers
    fn the_one_pass_partition_matches_llama_cpp_s_passes() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as usize
        };
        let alphabet = b"ab< >\n";
        for round in 0..300 {
            let mut texts: Vec<Vec<u8>> = Vec::new();
            let mut types = Vec::new();
            while texts.len() < 2 + next(8) {
                let len = 1 + next(4);
                let t: Vec<u8> = (0..len)
                    .map(|_| alphabet[next(alphabet.len() as u64)])
                    .collect();
                if !texts.contains(&t) {
                    texts.push(t);
                    types.push([1, 3, 4, 2][next(4)]);
                }
            }
            let mut v = vocab(&texts, &types);
            for a in v.attrs.iter_mut() {
                *a |= [0, attr::LSTRIP, attr::RSTRIP, attr::LSTRIP | attr::RSTRIP][next(4)];
            }
            let mut specials: Vec<u32> = (0..texts.len() as u32)
                .filter(|&i| v.attr(i) & (attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN) != 0)
                .collect();
            specials.sort_by_key(|&i| std::cmp::Reverse(v.text(i as usize).len()));
            let index = SpecialIndex::new(&v, &specials);
            for _ in 0..20 {
                let text: Vec<u8> = (0..next(40))
                    .map(|_| alphabet[next(alphabet.len() as u64)])
                    .collect();
                for parse in [false, true] {
                    let want = partition_naive(&v, &specials, &text, parse);
                    assert_eq!(
                        index.partition(&v, &text, parse),
                        want,
                        "round {round}: {texts:?} on {:?}",
                        String::from_utf8_lossy(&text)
                    );
                    // With room for few occurrences: tokens taken by a scan each, or in runs.
                    for budget in [0, 1, 2, 5] {
                        assert_eq!(
                            index.partition_within(&v, &text, parse, budget),
                            want,
                            "round {round}, budget {budget}: {texts:?} on {:?}",
                            String::from_utf8_lossy(&text)
                        );
                    }
                }
            }
        }
    }

    /// Nested tokens, each one byte longer, in runs of the longest: more occurrences than the
    /// one pass may hold, most tokens too few to be scanned alone (runs of them per pass): the
    /// partition is llama.cpp's.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // small test numbers
    fn nested_tokens_past_the_budget_partition_as_llama_cpp_does() {
        let mut texts: Vec<Vec<u8>> = vec![b"<unk>".to_vec()];
        let mut types = vec![2];
        for k in 1..=300 {
            texts.push(vec![b'y'; k]);
            types.push(4);
        }
        let v = vocab(&texts, &types);
        let mut specials: Vec<u32> = (1..texts.len() as u32).collect();
        specials.sort_by_key(|&i| std::cmp::Reverse(v.text(i as usize).len()));
        let index = SpecialIndex::new(&v, &specials);
        let mut text = Vec::new();
        for run in 0..50 {
            text.extend(std::iter::repeat_n(b'y', 300 - run));
            text.push(b'z');
        }
        let started = std::time::Instant::now();
        let got = index.partition(&v, &text, false);
        assert!(started.elapsed().as_secs() < 300, "{:?}", started.elapsed());
        assert_eq!(got, partition_naive(&v, &specials, &text, false));
        assert!(got.contains(&Fragment::Token(300)) && got.contains(&Fragment::Token(251)));
    }

    #[test]
    fn find_matches_the_first_occurrence() {
        assert_eq!(find(b"abcabc", b"ca"), Some(2));
        assert_eq!(find(b"abc", b"abcd"), None);
        assert_eq!(find(b"aab", b"ab"), Some(1));
        assert_eq!(find(b"", b"a"), None);
        assert_eq!(find(b"xyz", b"z"), Some(2));
    }
}
