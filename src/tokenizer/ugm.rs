//! Unigram (`tokenizer.ggml.model` = `t5`), as llama.cpp's `llm_tokenizer_ugm`: the text
//! normalized (user-defined tokens kept, the precompiled character map's replacements, spaces
//! as U+2581), then the highest-scoring segmentation by a Viterbi pass over the tokens that
//! start at each character, unknown characters costing the lowest score less 10.

use super::trie::{Ends, Prefixes};
use super::types::Flags;
use super::unicode::len_utf8;
use super::vocab::{self, attr, bad, Vocab};
use crate::error::Result;
use crate::file::GgufFile;
use crate::types::ValueType;
use std::collections::VecDeque;

/// The precompiled character map: an XOR-compressed compact double array and the
/// NUL-terminated replacement strings it points into.
pub(crate) struct CharsMap {
    xcda: Vec<u32>,
    replacements: Vec<u8>,
}

impl CharsMap {
    /// `tokenizer.ggml.precompiled_charsmap`, parsed (`None` where the key is absent).
    pub fn load<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Result<Option<CharsMap>> {
        match vocab::array(file, "tokenizer.ggml.precompiled_charsmap")? {
            None => Ok(None),
            Some(a) if matches!(a.elem_type(), ValueType::Uint8 | ValueType::Int8) => {
                Ok(Some(CharsMap::parse(a.raw_bytes())?))
            }
            Some(_) => Err(vocab::wrong_type(
                "tokenizer.ggml.precompiled_charsmap",
                "an array of UINT8 or INT8",
            )),
        }
    }

    /// Reads `tokenizer.ggml.precompiled_charsmap`'s bytes (a little-endian blob size, the
    /// array's little-endian entries, the strings).
    pub fn parse(bytes: &[u8]) -> Result<CharsMap> {
        let size = bytes
            .first_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b))
            .ok_or_else(|| bad("the precompiled charsmap is shorter than its 4-byte header"))?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size.checked_add(4).is_none_or(|end| end >= bytes.len()) {
            return Err(bad(format!(
                "the precompiled charsmap's array ({size} bytes) runs past its {} bytes",
                bytes.len()
            )));
        }
        let xcda = bytes[4..4 + size / 4 * 4]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(CharsMap {
            xcda,
            replacements: bytes[4 + size..].to_vec(),
        })
    }

    /// The longest prefix of `input` the map replaces: (replacement, length matched).
    fn longest(&self, input: &[u8]) -> Option<(&[u8], usize)> {
        let node = |i: usize| self.xcda.get(i).copied();
        let base = |p: u32| (p >> 10) << ((p & (1 << 9)) >> 6);
        let mut index = base(node(0)?) as usize;
        let mut best: Option<(usize, usize)> = None;
        for (k, &c) in input.iter().enumerate() {
            if c == 0 {
                break;
            }
            index ^= usize::from(c);
            let Some(p) = node(index) else { break };
            if p & ((1 << 31) | 0xff) != u32::from(c) {
                break;
            }
            let leaf = (p >> 8) & 1 == 1;
            index ^= base(p) as usize;
            if leaf {
                // llama.cpp throws (and the call fails) on an index past the array.
                let Some(v) = node(index) else { break };
                best = Some((k + 1, (v & ((1 << 31) - 1)) as usize));
            }
        }
        let (len, offset) = best?;
        let rest = self.replacements.get(offset..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some((&rest[..end], len))
    }
}

/// The length of the UTF-8 sequence at the start of `s` if llama.cpp's decoder accepts it
/// (lead byte and continuation bytes only; no check of overlong forms or surrogates).
pub(crate) fn valid_utf8_len(s: &[u8]) -> Option<usize> {
    let b0 = *s.first()?;
    let n = match b0 {
        _ if b0 & 0x80 == 0 => return Some(1),
        _ if b0 & 0x40 == 0 => return None,
        _ if b0 & 0x20 == 0 => 2,
        _ if b0 & 0x10 == 0 => 3,
        _ if b0 & 0x08 == 0 => 4,
        _ => return None,
    };
    (s.len() >= n && s[1..n].iter().all(|&b| b & 0xc0 == 0x80)).then_some(n)
}

/// The Unigram model built from the vocabulary.
pub(crate) struct Ugm {
    charsmap: Option<CharsMap>,
    /// Normal, user-defined and unused tokens, found where they end.
    matcher: Ends,
    /// The longest edge of the Viterbi graph: the longest of those tokens, or a character.
    longest: usize,
    /// Whether every score is finite: then every character start is reached (each has an edge
    /// of finite score to the next). An infinite score leaves positions unreached, whose best
    /// path llama.cpp takes from the text's start (see [`Ugm::emit`]).
    #[cfg_attr(not(test), allow(dead_code))]
    finite: bool,
    /// User-defined tokens.
    user_defined: Prefixes,
    unknown_score: f32,
    unk: u32,
}

impl Ugm {
    /// The model of `vocab`, whose token types gave `attrs`.
    pub fn new(
        vocab: &Vocab,
        attrs: &[u32],
        charsmap: Option<CharsMap>,
        unk: Option<i32>,
    ) -> Result<Ugm> {
        let unk = unk
            .and_then(|u| u32::try_from(u).ok())
            .ok_or_else(|| bad("the Unigram vocabulary has no unknown token"))?;
        let mut min_score = f32::MAX;
        let mut matched = Vec::new();
        let mut user = Vec::new();
        for (id, &a) in attrs.iter().enumerate().take(vocab.len()) {
            let id32 = u32::try_from(id).map_err(|_| bad("too many tokens"))?;
            if a & attr::NORMAL != 0 {
                min_score = min_score.min(vocab.scores[id]);
            }
            if a & (attr::NORMAL | attr::USER_DEFINED | attr::UNUSED) != 0 {
                matched.push(id32);
            }
            if a & attr::USER_DEFINED != 0 {
                user.push(id32);
            }
        }
        let finite = matched.iter().all(|&i| {
            vocab.attrs[i as usize] & attr::USER_DEFINED != 0
                || vocab.scores[i as usize].is_finite()
        });
        let text = |i: u32| vocab.text(i as usize);
        let longest = matched
            .iter()
            .map(|&i| text(i).len())
            .max()
            .unwrap_or(0)
            .max(4);
        Ok(Ugm {
            charsmap,
            matcher: Ends::new(matched, text)
                .ok_or_else(|| bad("the tokens' texts are too long"))?,
            longest,
            user_defined: Prefixes::new(user, text)
                .ok_or_else(|| bad("the tokens' texts are too long"))?,
            unknown_score: min_score - 10.0,
            finite: finite && (min_score - 10.0).is_finite(),
            unk,
        })
    }

    /// llama.cpp's `normalize`.
    fn normalize(&self, input: &[u8], flags: &Flags, out: &mut Vec<u8>) {
        let space: &[u8] = if flags.escape_whitespaces {
            "\u{2581}".as_bytes()
        } else {
            b" "
        };
        let prepend = flags.add_space_prefix;
        let merge = flags.remove_extra_whitespaces;
        let mut prepended = false;
        let mut in_word = false;
        let mut at = 0;
        while at < input.len() {
            let rest = &input[at..];
            let user = self.user_defined.walk(rest, |_, _| {});
            let (piece, consumed): (&[u8], usize) = if user > 0 {
                (&rest[..user], user)
            } else if let Some(hit) = self.charsmap.as_ref().and_then(|m| m.longest(rest)) {
                hit
            } else if let Some(n) = valid_utf8_len(rest) {
                (&rest[..n], n)
            } else {
                ("\u{fffd}".as_bytes(), 1)
            };
            for &c in piece {
                if c != b' ' {
                    if !in_word {
                        in_word = true;
                        if (prepend && !prepended) || merge {
                            out.extend_from_slice(space);
                            prepended = true;
                        }
                    }
                    out.push(c);
                } else {
                    in_word = false;
                    if !merge {
                        out.extend_from_slice(space);
                    }
                }
            }
            at += consumed;
        }
    }

    /// Appends the tokens of `text` to `out`: llama.cpp's Viterbi pass, which relaxes the edges
    /// from each character start in turn (every token that starts there, then the unknown
    /// character if no token is that character), each end keeping the first best. Here each
    /// end's edges are found where they end (the automaton gives the tokens ending at each byte,
    /// longest first: their starts in llama.cpp's order), in time linear in the text and the
    /// tokens found, however far tokens continue past the text. The table is cut where no edge
    /// spans (every path passes there, so the part before goes out and is dropped), once every
    /// edge that could span is known: scores stay absolute, so every comparison is the one over
    /// the whole text.
    ///
    /// Each position keeps only the length of its best path's last edge, in the narrowest
    /// integer that holds the longest edge (one byte for common vocabularies): the scores, and
    /// what the cut needs, are kept for the last positions an edge can span alone. The token of
    /// an edge on the best path is found again when it goes out: the token whose text the edge
    /// spans (each text is one token), or the unknown token where no token spans it.
    pub fn tokenize(&self, vocab: &Vocab, text: &[u8], flags: &Flags, out: &mut Vec<i32>) {
        let mut norm = Vec::with_capacity(text.len() + text.len() / 4 + 16);
        self.normalize(text, flags, &mut norm);
        let n = norm.len();
        if n == 0 {
            return;
        }
        // No edge is longer than the text.
        let edge = self.longest.min(n);
        if edge < usize::from(u8::MAX) {
            self.viterbi::<u8>(vocab, &norm, edge, out);
        } else if edge < usize::from(u16::MAX) {
            self.viterbi::<u16>(vocab, &norm, edge, out);
        } else if u32::try_from(edge).is_ok_and(|e| e < u32::MAX) {
            self.viterbi::<u32>(vocab, &norm, edge, out);
        } else {
            self.viterbi::<usize>(vocab, &norm, edge, out);
        }
    }

    /// The pass of [`Ugm::tokenize`] over the normalized text `norm`, whose edges are at most
    /// `edge` bytes long (less than `L::MARK`).
    fn viterbi<L: EdgeLen>(&self, vocab: &Vocab, norm: &[u8], edge: usize, out: &mut Vec<i32>) {
        let n = norm.len();
        // The last positions an edge can span, by position modulo their number.
        let span = edge + 1;
        let mut recent = vec![
            Recent {
                score: f64::MIN,
                reach: 0,
                start: false,
            };
            span
        ];
        recent[0] = Recent {
            score: 0.0,
            reach: 0,
            start: true,
        };
        // back[i]: the length of the best path's last edge to position base + i (0: none).
        let mut back: VecDeque<L> = VecDeque::with_capacity(n + 1);
        back.push_back(L::of(0));
        let mut base = 0;
        // The next position to test for a cut, and the furthest an edge from a position
        // before the one before it (from base on) reaches.
        let (mut check, mut reach) = (0, 0);
        let mut last_unknown = false;
        let first = out.len();
        // The character that ends next: its start and end.
        let (mut char_start, mut char_end) = (0, len_utf8(norm[0]).min(n));
        let mut state = Ends::START;
        for j in 1..=n {
            let unknown_from = (j == char_end).then_some(char_start);
            // The best edge to `j` so far: where it starts (none yet) and the path's score.
            let mut champ: (Option<usize>, f64) = (None, f64::MIN);
            let mut unknown_done = unknown_from.is_none();
            let relax =
                |recent: &mut [Recent], champ: &mut (Option<usize>, f64), s: usize, score: f64| {
                    let from = &mut recent[s % span];
                    from.reach = from.reach.max(j);
                    let challenger = from.score + score;
                    if challenger > champ.1 {
                        *champ = (Some(s), challenger);
                    }
                };
            let unknown_score = f64::from(self.unknown_score);
            state = self.matcher.push(state, norm[j - 1], |len, id| {
                let s = j - len;
                if s < base || !recent[s % span].start {
                    return;
                }
                if let Some(u) = unknown_from.filter(|_| !unknown_done) {
                    if s == u {
                        // A token is the whole character: no unknown edge.
                        unknown_done = true;
                    } else if s > u {
                        relax(&mut recent, &mut champ, u, unknown_score);
                        unknown_done = true;
                    }
                }
                let score = if vocab.attrs[id as usize] & attr::USER_DEFINED != 0 {
                    0.0
                } else {
                    f64::from(vocab.scores[id as usize])
                };
                relax(&mut recent, &mut champ, s, score);
            });
            if let Some(u) = unknown_from.filter(|_| !unknown_done) {
                relax(&mut recent, &mut champ, u, unknown_score);
            }
            let start = j == char_end && j < n;
            if start {
                char_start = j;
                char_end = j + len_utf8(norm[j]).min(n - j);
            }
            recent[j % span] = Recent {
                score: champ.1,
                reach: 0,
                start,
            };
            back.push_back(L::of(champ.0.map_or(0, |s| j - s)));
            // Every edge from before `check` is known once `check - 1 + longest` is read.
            while check < j && check + self.longest <= j + 1 {
                if check > base {
                    reach = reach.max(recent[(check - 1) % span].reach);
                    if recent[check % span].start && reach <= check {
                        self.emit(norm, &mut back, base, check, first, &mut last_unknown, out);
                        back.drain(..check - base);
                        base = check;
                        reach = 0;
                    }
                }
                check += 1;
            }
        }
        self.emit(norm, &mut back, base, n, first, &mut last_unknown, out);
    }

    /// The best path's tokens from the table's start (`base`) to `end`, in order, into `out`; a
    /// run of unknown tokens (one that began before, as `last_unknown` says, included) is one.
    /// A position no path reaches (only where a score is infinite: its score stays the lowest)
    /// takes its path from the text's start in llama.cpp's whole table, which ends the path
    /// there: what the parts before gave (from `first` on) is dropped, as llama.cpp never gets
    /// to them. The path's positions are marked in `back` on the way back from `end`, then
    /// read forward.
    #[allow(clippy::too_many_arguments)]
    fn emit<L: EdgeLen>(
        &self,
        norm: &[u8],
        back: &mut VecDeque<L>,
        base: usize,
        end: usize,
        first: usize,
        last_unknown: &mut bool,
        out: &mut Vec<i32>,
    ) {
        let mut i = end;
        let unreached = loop {
            let len = back[i - base].len();
            back[i - base] = L::MARK;
            if len == 0 {
                break true;
            }
            if i - len <= base {
                break false;
            }
            i -= len;
        };
        if unreached && out.len() > first {
            out.truncate(first);
            *last_unknown = false;
        }
        let unk = self.unk as i32;
        let mut prev_unknown = *last_unknown;
        // The unreached position's token is the unknown one, as it was made.
        let mut from = if unreached { None } else { Some(base) };
        for at in i..=end {
            if back[at - base] != L::MARK {
                continue;
            }
            let id = match from {
                Some(s) => self.token(&norm[s..at]).map_or(unk, |t| t as i32),
                None => unk,
            };
            let unknown = id == unk;
            if !(prev_unknown && unknown) {
                out.push(id);
            }
            prev_unknown = unknown;
            from = Some(at);
        }
        *last_unknown = prev_unknown;
    }

    /// The token whose text is `piece` (not empty), if there is one.
    fn token(&self, piece: &[u8]) -> Option<u32> {
        let (&last, head) = piece.split_last()?;
        let state = head
            .iter()
            .fold(Ends::START, |state, &c| self.matcher.step(state, c));
        let mut found = None;
        self.matcher.push(state, last, |len, id| {
            if len == piece.len() && found.is_none() {
                found = Some(id);
            }
        });
        found
    }
}

/// What the pass keeps of one of the last positions: its best path's score, the furthest an
/// edge from it reaches, and whether a character starts there (only those start edges).
#[derive(Clone, Copy)]
struct Recent {
    score: f64,
    reach: usize,
    start: bool,
}

/// The length of a best path's last edge, as the pass keeps it per position: 0 where no path
/// reaches, `MARK` once the position is found on the best path.
trait EdgeLen: Copy + PartialEq {
    const MARK: Self;
    fn of(len: usize) -> Self;
    fn len(self) -> usize;
}

macro_rules! edge_len {
    ($($t:ty),*) => {$(
        impl EdgeLen for $t {
            const MARK: $t = <$t>::MAX;
            #[inline]
            fn of(len: usize) -> $t {
                // The caller chose the type for the longest edge.
                <$t>::try_from(len).unwrap_or(<$t>::MAX)
            }
            #[inline]
            fn len(self) -> usize {
                // The type is at most as wide as usize.
                self as usize
            }
        }
    )*};
}
edge_len!(u8, u16, u32, usize);

#[cfg(test)]
mod tests {
    use super::{valid_utf8_len, Ugm};
    use crate::tokenizer::trie::Prefixes;
    use crate::tokenizer::unicode::len_utf8;
    use crate::tokenizer::vocab::{attr, Vocab};
    use crate::writer::{MetadataValue, Writer};
    use crate::{GgufFile, ValueType};

    /// The Viterbi pass as it was written before, by start (llama.cpp's order, the trie walked
    /// from each character start; its table kept whole, as llama.cpp's, where a score is
    /// infinite): the reference for the pass by end.
    mod by_start {
        use super::*;

        /// A Viterbi node: the best path's last token to here, where it starts, and its score.
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            from: usize,
            score: f64,
        }

        /// Appends the tokens of `text` to `out`.
        pub(super) fn tokenize(
            u: &Ugm,
            walker: &Prefixes,
            vocab: &Vocab,
            text: &[u8],
            flags: &crate::tokenizer::types::Flags,
            out: &mut Vec<i32>,
        ) {
            let mut norm = Vec::with_capacity(text.len() + text.len() / 4 + 16);
            u.normalize(text, flags, &mut norm);
            let n = norm.len();
            if n == 0 {
                return;
            }
            // Viterbi over the normalized text, cut where no edge (token or unknown character)
            // spans: every path passes there, so the part before goes out then and its table is
            // dropped. Scores stay absolute, so every comparison is the one over the whole text.
            let start_node = |score| Best {
                id: u.unk,
                from: 0,
                score,
            };
            // best[i] is position base + i.
            let mut best = vec![start_node(0.0)];
            let mut base = 0;
            // The furthest any edge from a position before `at` reaches.
            let mut reach = 0;
            let mut last_unknown = false;
            let mut at = 0;
            while at < n {
                if u.finite && reach <= at && at > base {
                    let carry = best[at - base].score;
                    emit(u, &best, at - base, &mut last_unknown, out);
                    best.clear();
                    best.push(start_node(carry));
                    base = at;
                }
                let char_len = len_utf8(norm[at]).min(n - at);
                let current = best[at - base];
                let mut whole_char = false;
                let mut far = at + char_len;
                walker.walk(&norm[at..], |len, id| {
                    if len == char_len {
                        whole_char = true;
                    }
                    far = far.max(at + len);
                    let score = if vocab.attrs[id as usize] & attr::USER_DEFINED != 0 {
                        0.0
                    } else {
                        f64::from(vocab.scores[id as usize])
                    };
                    let challenger = current.score + score;
                    if best.len() <= far - base {
                        best.resize(far - base + 1, start_node(f64::MIN));
                    }
                    let champ = &mut best[at + len - base];
                    if challenger > champ.score {
                        *champ = Best {
                            id,
                            from: at - base,
                            score: challenger,
                        };
                    }
                });
                if best.len() <= far - base {
                    best.resize(far - base + 1, start_node(f64::MIN));
                }
                if !whole_char {
                    let challenger = current.score + f64::from(u.unknown_score);
                    let champ = &mut best[at + char_len - base];
                    if challenger > champ.score {
                        *champ = Best {
                            id: u.unk,
                            from: at - base,
                            score: challenger,
                        };
                    }
                }
                reach = reach.max(far);
                at += char_len;
            }
            emit(u, &best, n - base, &mut last_unknown, out);
        }

        /// The best path's tokens from the table's start to `end`, in order, into `out`; a run of
        /// unknown tokens (one that began before, as `last_unknown` says, included) is one.
        fn emit(u: &Ugm, best: &[Best], end: usize, last_unknown: &mut bool, out: &mut Vec<i32>) {
            let start = out.len();
            let mut prev_unknown = false;
            let mut i = end;
            loop {
                let b = best[i];
                let unknown = b.id == u.unk;
                if !(prev_unknown && unknown) {
                    out.push(b.id as i32);
                }
                if b.from == 0 {
                    break;
                }
                prev_unknown = unknown;
                i = b.from;
            }
            out[start..].reverse();
            if *last_unknown && out.get(start) == Some(&(u.unk as i32)) {
                out.remove(start);
            }
            if out.len() > start {
                *last_unknown = out.last() == Some(&(u.unk as i32));
            }
        }
    }

    /// The pass by end gives the tokens of the pass by start, on random vocabularies (tokens
    /// nested, overlapping, ending inside characters, user-defined, with equal and infinite
    /// scores) and texts.
    #[test]
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // small test numbers
    fn the_pass_by_end_matches_the_pass_by_start() {
        let mut seed = 0x0dd_ba11_cafe_f00du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as usize
        };
        let pieces: [&[u8]; 6] = [
            b"a",
            b"b",
            b" ",
            "\u{e9}".as_bytes(),
            "\u{2581}".as_bytes(),
            &[0xe2],
        ];
        for round in 0..400 {
            let mut texts: Vec<Vec<u8>> = vec![b"<unk>".to_vec()];
            let mut types = vec![2];
            let mut scores = vec![0.0f32];
            while texts.len() < 2 + next(12) {
                let mut t = Vec::new();
                let most = if next(6) == 0 { 12 } else { 3 };
                for _ in 0..1 + next(most) {
                    t.extend_from_slice(pieces[next(pieces.len() as u64)]);
                }
                if next(4) == 0 {
                    t.truncate(1 + next(t.len() as u64));
                }
                if !texts.contains(&t) {
                    texts.push(t);
                    types.push([1, 1, 1, 4, 5][next(5)]);
                    scores.push(match next(10) {
                        0 => f32::NEG_INFINITY,
                        1 => -1.0,
                        _ => -(next(8) as f32) / 2.0,
                    });
                }
            }
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
            w.add_metadata(
                "tokenizer.ggml.scores",
                MetadataValue::Array(
                    ValueType::Float32,
                    scores.iter().copied().map(MetadataValue::F32).collect(),
                ),
            )
            .unwrap();
            let v = Vocab::load(&GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap()).unwrap();
            let attrs = v.attrs.clone();
            let ugm = Ugm::new(&v, &attrs, None, Some(0)).unwrap();
            let matched: Vec<u32> = (0..texts.len() as u32)
                .filter(|&i| {
                    attrs[i as usize] & (attr::NORMAL | attr::USER_DEFINED | attr::UNUSED) != 0
                })
                .collect();
            let walker = Prefixes::new(matched, |i| v.text(i as usize)).unwrap();
            for _ in 0..10 {
                let mut text = Vec::new();
                let most = if next(10) == 0 { 300 } else { 30 };
                for _ in 0..next(most) {
                    text.extend_from_slice(pieces[next(pieces.len() as u64)]);
                }
                let flags = crate::tokenizer::types::Flags {
                    escape_whitespaces: next(2) == 0,
                    add_space_prefix: next(2) == 0,
                    remove_extra_whitespaces: next(2) == 0,
                    ..Default::default()
                };
                let (mut got, mut want) = (Vec::new(), Vec::new());
                ugm.tokenize(&v, &text, &flags, &mut got);
                by_start::tokenize(&ugm, &walker, &v, &text, &flags, &mut want);
                assert_eq!(got, want, "round {round}: {texts:?} on {text:?}");
            }
        }
    }

    /// Edges longer than a byte holds are kept in wider lengths: the pass by end still gives
    /// the tokens of the pass by start, on each side of the change of width.
    #[test]
    fn long_edges_give_the_same_tokens() {
        for k in [252, 253, 254, 255, 256, 300] {
            let texts: Vec<Vec<u8>> = vec![
                b"<unk>".to_vec(),
                b"a".to_vec(),
                vec![b'a'; k],
                vec![b'a'; k + 1],
                b"b".to_vec(),
            ];
            let scores = [0.0f32, -1.0, -2.0, -2.0, -1.0];
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
                    [2, 1, 1, 1, 1]
                        .into_iter()
                        .map(MetadataValue::I32)
                        .collect(),
                ),
            )
            .unwrap();
            w.add_metadata(
                "tokenizer.ggml.scores",
                MetadataValue::Array(
                    ValueType::Float32,
                    scores.into_iter().map(MetadataValue::F32).collect(),
                ),
            )
            .unwrap();
            let v = Vocab::load(&GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap()).unwrap();
            let attrs = v.attrs.clone();
            let ugm = Ugm::new(&v, &attrs, None, Some(0)).unwrap();
            let walker = Prefixes::new(vec![1, 2, 3, 4], |i| v.text(i as usize)).unwrap();
            for text in [
                vec![b'a'; 3 * k + 7],
                [
                    vec![b'a'; k + 3],
                    b"b".to_vec(),
                    vec![b'a'; 2 * k],
                    b"x".to_vec(),
                ]
                .concat(),
                vec![b'a'; k - 1],
            ] {
                let flags = crate::tokenizer::types::Flags::default();
                let (mut got, mut want) = (Vec::new(), Vec::new());
                ugm.tokenize(&v, &text, &flags, &mut got);
                by_start::tokenize(&ugm, &walker, &v, &text, &flags, &mut want);
                assert_eq!(got, want, "k {k}, text of {} bytes", text.len());
                assert!(got.len() > 1, "k {k}");
            }
        }
    }

    #[test]
    fn utf8_sequences_are_checked_as_llama_cpp_checks_them() {
        assert_eq!(valid_utf8_len(b"a"), Some(1));
        assert_eq!(valid_utf8_len(&[0x80]), None);
        assert_eq!(valid_utf8_len(&[0xc3, 0xa9]), Some(2));
        assert_eq!(valid_utf8_len(&[0xc3]), None);
        assert_eq!(valid_utf8_len(&[0xe2, 0x96, 0x81]), Some(3));
        assert_eq!(valid_utf8_len(&[0xf8, 0x80]), None);
        assert_eq!(valid_utf8_len(&[0xed, 0xa0, 0x80]), Some(3));
    }
}
