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
    pub fn tokenize(&self, vocab: &Vocab, text: &[u8], flags: &Flags, out: &mut Vec<i32>) {
        let mut norm = Vec::with_capacity(text.len() + text.len() / 4 + 16);
        self.normalize(text, flags, &mut norm);
        let n = norm.len();
        if n == 0 {
            return;
        }
        let node = |from: usize, score: f64, start: bool| Node {
            best: Best {
                id: self.unk,
                from,
                score,
            },
            start,
            reach: 0,
        };
        // win[i] is position base + i.
        let mut win: VecDeque<Node> = VecDeque::from([node(0, 0.0, true)]);
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
            let mut champ = Best {
                id: self.unk,
                from: base,
                score: f64::MIN,
            };
            let mut unknown_done = unknown_from.is_none();
            let relax_unknown = |win: &mut VecDeque<Node>, champ: &mut Best, s: usize| {
                let from = &mut win[s - base];
                from.reach = from.reach.max(j);
                let challenger = from.best.score + f64::from(self.unknown_score);
                if challenger > champ.score {
                    *champ = Best {
                        id: self.unk,
                        from: s,
                        score: challenger,
                    };
                }
            };
            state = self.matcher.push(state, norm[j - 1], |len, id| {
                let s = j - len;
                if s < base || !win[s - base].start {
                    return;
                }
                if let Some(u) = unknown_from.filter(|_| !unknown_done) {
                    if s == u {
                        // A token is the whole character: no unknown edge.
                        unknown_done = true;
                    } else if s > u {
                        relax_unknown(&mut win, &mut champ, u);
                        unknown_done = true;
                    }
                }
                let from = &mut win[s - base];
                from.reach = from.reach.max(j);
                let score = if vocab.attrs[id as usize] & attr::USER_DEFINED != 0 {
                    0.0
                } else {
                    f64::from(vocab.scores[id as usize])
                };
                let challenger = from.best.score + score;
                if challenger > champ.score {
                    champ = Best {
                        id,
                        from: s,
                        score: challenger,
                    };
                }
            });
            if let Some(u) = unknown_from.filter(|_| !unknown_done) {
                relax_unknown(&mut win, &mut champ, u);
            }
            let start = j == char_end && j < n;
            if j == char_end && j < n {
                char_start = j;
                char_end = j + len_utf8(norm[j]).min(n - j);
            }
            win.push_back(Node {
                best: champ,
                start,
                reach: 0,
            });
            // Every edge from before `check` is known once `check - 1 + longest` is read.
            while check < j && check + self.longest <= j + 1 {
                if check > base {
                    reach = reach.max(win[check - 1 - base].reach);
                    if win[check - base].start && reach <= check {
                        self.emit(&win, base, check, first, &mut last_unknown, out);
                        win.drain(..check - base);
                        base = check;
                        reach = 0;
                    }
                }
                check += 1;
            }
        }
        self.emit(&win, base, n, first, &mut last_unknown, out);
    }

    /// The best path's tokens from the table's start (`base`) to `end`, in order, into `out`; a
    /// run of unknown tokens (one that began before, as `last_unknown` says, included) is one.
    /// A position no path reaches (only where a score is infinite: its score stays the lowest)
    /// takes its path from the text's start in llama.cpp's whole table, which ends the path
    /// there: what the parts before gave (from `first` on) is dropped, as llama.cpp never gets
    /// to them.
    fn emit(
        &self,
        win: &VecDeque<Node>,
        base: usize,
        end: usize,
        first: usize,
        last_unknown: &mut bool,
        out: &mut Vec<i32>,
    ) {
        let mut start = out.len();
        let mut prev_unknown = false;
        let mut i = end;
        let unreached = loop {
            let b = win[i - base].best;
            let unknown = b.id == self.unk;
            if !(prev_unknown && unknown) {
                out.push(b.id as i32);
            }
            // An unreached position keeps the table's start it was made in: the table's start,
            // for a table cut since.
            if b.from <= base {
                break b.score == f64::MIN;
            }
            prev_unknown = unknown;
            i = b.from;
        };
        if unreached && start > first {
            out.drain(first..start);
            start = first;
            *last_unknown = false;
        }
        out[start..].reverse();
        if *last_unknown && out.get(start) == Some(&(self.unk as i32)) {
            out.remove(start);
        }
        if out.len() > start {
            *last_unknown = out.last() == Some(&(self.unk as i32));
        }
    }
}

/// A position of the Viterbi table: its best path, whether a character starts there (only
/// those start edges), and the furthest an edge from it reaches.
#[derive(Clone, Copy)]
struct Node {
    best: Best,
    start: bool,
    reach: usize,
}

/// A Viterbi node: the best path's last token to here, where it starts, and its score.
#[derive(Clone, Copy)]
struct Best {
    id: u32,
    from: usize,
    score: f64,
}

#[cfg(test)]
mod tests {
    use super::{valid_utf8_len, Best, Ugm};
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
