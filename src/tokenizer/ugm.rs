//! Unigram (`tokenizer.ggml.model` = `t5`), as llama.cpp's `llm_tokenizer_ugm`: the text
//! normalized (user-defined tokens kept, the precompiled character map's replacements, spaces
//! as U+2581), then the highest-scoring segmentation by a Viterbi pass over the tokens that
//! start at each character, unknown characters costing the lowest score less 10.

use super::trie::Prefixes;
use super::unicode_len;
use super::vocab::{attr, bad, Vocab};
use crate::error::Result;

/// The precompiled character map: an XOR-compressed compact double array and the
/// NUL-terminated replacement strings it points into.
pub(crate) struct CharsMap {
    xcda: Vec<u32>,
    replacements: Vec<u8>,
}

impl CharsMap {
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
    /// Normal, user-defined and unused tokens.
    matcher: Prefixes,
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
        let text = |i: u32| vocab.text(i as usize);
        Ok(Ugm {
            charsmap,
            matcher: Prefixes::new(matched, text)
                .ok_or_else(|| bad("the tokens' texts are too long"))?,
            user_defined: Prefixes::new(user, text)
                .ok_or_else(|| bad("the tokens' texts are too long"))?,
            unknown_score: min_score - 10.0,
            unk,
        })
    }

    /// llama.cpp's `normalize`.
    fn normalize(&self, input: &[u8], flags: &super::Flags, out: &mut Vec<u8>) {
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

    /// Appends the tokens of `text` to `out`.
    pub fn tokenize(&self, vocab: &Vocab, text: &[u8], flags: &super::Flags, out: &mut Vec<i32>) {
        let mut norm = Vec::with_capacity(text.len() + text.len() / 4 + 16);
        self.normalize(text, flags, &mut norm);
        let n = norm.len();
        if n == 0 {
            return;
        }
        // Viterbi over the normalized text, cut where no edge (token or unknown character)
        // spans: every path passes there, so the part before goes out then and its table is
        // dropped. Scores stay absolute, so every comparison is the one over the whole text.
        let start_node = |score| Best {
            id: self.unk,
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
            if reach <= at && at > base {
                let carry = best[at - base].score;
                self.emit(&best, at - base, &mut last_unknown, out);
                best.clear();
                best.push(start_node(carry));
                base = at;
            }
            let char_len = unicode_len(norm[at]).min(n - at);
            let current = best[at - base];
            let mut whole_char = false;
            let mut far = at + char_len;
            self.matcher.walk(&norm[at..], |len, id| {
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
                let challenger = current.score + f64::from(self.unknown_score);
                let champ = &mut best[at + char_len - base];
                if challenger > champ.score {
                    *champ = Best {
                        id: self.unk,
                        from: at - base,
                        score: challenger,
                    };
                }
            }
            reach = reach.max(far);
            at += char_len;
        }
        self.emit(&best, n - base, &mut last_unknown, out);
    }

    /// The best path's tokens from the table's start to `end`, in order, into `out`; a run of
    /// unknown tokens (one that began before, as `last_unknown` says, included) is one.
    fn emit(&self, best: &[Best], end: usize, last_unknown: &mut bool, out: &mut Vec<i32>) {
        let start = out.len();
        let mut prev_unknown = false;
        let mut i = end;
        loop {
            let b = best[i];
            let unknown = b.id == self.unk;
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
        if *last_unknown && out.get(start) == Some(&(self.unk as i32)) {
            out.remove(start);
        }
        if out.len() > start {
            *last_unknown = out.last() == Some(&(self.unk as i32));
        }
    }
}

/// A Viterbi node: the best path's last token to here, where it starts (in the table), and
/// its score.
#[derive(Clone, Copy)]
struct Best {
    id: u32,
    from: usize,
    score: f64,
}

#[cfg(test)]
mod tests {
    use super::valid_utf8_len;

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
