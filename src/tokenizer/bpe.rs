//! Byte-level BPE (`tokenizer.ggml.model` = `gpt2`, `gemma4`), as llama.cpp's
//! `llm_tokenizer_bpe_session`: the pre-tokenizer's words (bytes mapped to GPT-2's printable
//! stand-ins, or raw UTF-8 for SentencePiece-style vocabularies), each split into characters
//! and merged by the lowest-ranked merge first (the leftmost among equal ranks); a piece that is
//! no token goes out as byte tokens.

use super::spm::{order_from_cmp, symbols, Symbol, NONE};
use super::vocab::{self, bad, Vocab};
use crate::error::Result;
use crate::file::GgufFile;
use crate::text::quote;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The key of the merges.
const MERGES: &str = "tokenizer.ggml.merges";

/// The merges: (left token, right token) to (rank, merged token).
pub(crate) struct Merges {
    map: hashbrown::HashMap<u64, (u32, u32), foldhash::fast::FixedState>,
}

#[inline]
fn key(left: u32, right: u32) -> u64 {
    u64::from(left) << 32 | u64::from(right)
}

impl Merges {
    /// Reads `tokenizer.ggml.merges` ("left right" each): every part and every result must be a
    /// token; the first of two equal merges counts, as in llama.cpp.
    pub fn load<S: AsRef<[u8]>>(
        file: &GgufFile<S>,
        vocab: &Vocab,
        optional: bool,
    ) -> Result<Merges> {
        let mut map =
            hashbrown::HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5eed));
        let Some(a) = vocab::array(file, MERGES)? else {
            if optional {
                return Ok(Merges { map });
            }
            return Err(bad(
                "the BPE vocabulary has no merges (tokenizer.ggml.merges)",
            ));
        };
        let strings = a
            .strings()
            .ok_or_else(|| vocab::wrong_type("tokenizer.ggml.merges", "an array of strings"))?;
        map.reserve(usize::try_from(a.len()).unwrap_or(0));
        for (rank, m) in strings.enumerate() {
            let at = || vocab::element_offset(file, MERGES, rank as u64);
            let space = m
                .iter()
                .skip(1)
                .position(|&b| b == b' ')
                .map(|p| p + 1)
                .ok_or_else(|| {
                    bad(format!("merge {rank} ({}) has no space", quote(m))).with_offset(at())
                })?;
            let (l, r) = (&m[..space], &m[space + 1..]);
            let id = |part: &[u8]| {
                vocab.find(part).ok_or_else(|| {
                    bad(format!(
                        "merge {rank} ({}) names {}, which is no token",
                        quote(m),
                        quote(part)
                    ))
                    .with_offset(at())
                })
            };
            let (li, ri) = (id(l)?, id(r)?);
            let mut joined = Vec::with_capacity(l.len() + r.len());
            joined.extend_from_slice(l);
            joined.extend_from_slice(r);
            let result = id(&joined)?;
            let rank = u32::try_from(rank).map_err(|_| bad("too many merges"))?;
            map.entry(key(li, ri)).or_insert((rank, result));
        }
        Ok(Merges { map })
    }

    #[inline]
    fn get(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.map.get(&key(left, right)).copied()
    }
}

struct Bigram {
    left: usize,
    right: usize,
    rank: u32,
    result: u32,
    size: usize,
}

order_from_cmp!(Bigram);
impl Ord for Bigram {
    /// The greatest is the lowest rank, then the leftmost.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// Reusable buffers for one call.
#[derive(Default)]
pub(crate) struct Session {
    syms: Vec<Symbol>,
    ids: Vec<u32>,
    queue: BinaryHeap<Bigram>,
}

/// What the BPE pass needs to know of the vocabulary.
pub(crate) struct Bpe<'a> {
    pub vocab: &'a Vocab,
    pub merges: &'a Merges,
    pub ignore_merges: bool,
    pub gemma4: bool,
    pub byte_encode: bool,
}

impl Bpe<'_> {
    /// Appends the tokens of one word to `out`.
    pub fn word(&self, s: &mut Session, word: &[u8], out: &mut Vec<i32>) {
        let whole = if self.ignore_merges || (self.gemma4 && word.iter().all(|&b| b == b'\n')) {
            self.vocab.find(word)
        } else {
            None
        };
        if let Some(id) = whole {
            out.push(id as i32);
            return;
        }
        symbols(word, &mut s.syms);
        s.ids.clear();
        s.ids.extend(s.syms.iter().map(|y| {
            self.vocab
                .find(&word[y.start..y.start + y.len])
                .unwrap_or(u32::MAX)
        }));
        s.queue.clear();
        for i in 1..s.syms.len() {
            self.add(s, i - 1, i);
        }
        while let Some(b) = s.queue.pop() {
            let (l, r) = (s.syms[b.left], s.syms[b.right]);
            if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
                continue;
            }
            s.syms[b.left].len += r.len;
            s.syms[b.right].len = 0;
            s.ids[b.left] = b.result;
            s.syms[b.left].next = r.next;
            if r.next != NONE {
                s.syms[r.next].prev = b.left;
            }
            self.add(s, l.prev, b.left);
            self.add(s, b.left, r.next);
        }
        for (i, y) in s.syms.iter().enumerate() {
            if y.len == 0 {
                continue;
            }
            let id = s.ids[i];
            if id != u32::MAX {
                out.push(id as i32);
                continue;
            }
            for &b in &word[y.start..y.start + y.len] {
                let found = if self.byte_encode {
                    self.vocab.find(&[b])
                } else {
                    self.vocab.find_byte(b)
                };
                if let Some(t) = found {
                    out.push(t as i32);
                }
            }
        }
    }

    #[inline]
    fn add(&self, s: &mut Session, left: usize, right: usize) {
        if left == NONE || right == NONE {
            return;
        }
        let (li, ri) = (s.ids[left], s.ids[right]);
        if li == u32::MAX || ri == u32::MAX {
            return;
        }
        if let Some((rank, result)) = self.merges.get(li, ri) {
            s.queue.push(Bigram {
                left,
                right,
                rank,
                result,
                size: s.syms[left].len + s.syms[right].len,
            });
        }
    }
}
