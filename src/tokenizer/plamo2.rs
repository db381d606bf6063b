//! PLaMo 2's tokenizer (`tokenizer.ggml.model` = `plamo2`), as llama.cpp's
//! `llm_tokenizer_plamo2`: over the text's code points (a leading byte-order mark dropped), the
//! segmentation of least cost by dynamic programming from the end, each token costing its score
//! times 10^4 rounded (tokens of non-finite score never taken), an unknown code point 10^7 and
//! going out as the byte tokens of its UTF-8 form. Among equal costs the longest token wins,
//! the unknown code point last, as llama.cpp's table orders them.

use super::trie::Ends;
use super::unicode::{cpt_to_utf8, cpts_from_utf8};
use super::vocab::{attr, bad, Vocab};
use crate::error::Result;

const INVALID_SCORE: i32 = -20_000_000;
const UNKNOWN_SCORE: i32 = -10_000_000;

/// The model built from the vocabulary.
pub(crate) struct Plamo2 {
    /// Every token but the byte tokens whose text is UTF-8 as llama.cpp decodes it (the others
    /// can never match the re-encoded text), reversed: the text read from its end back, the
    /// tokens found at a code point's first byte are those that start there, longest first.
    matcher: Ends,
    /// Each token's score as llama.cpp's table holds it.
    scores: Vec<i32>,
    /// The token of each byte.
    bytes: [u32; 256],
    /// Each token's length in code points.
    lengths: Vec<u32>,
}

impl Plamo2 {
    /// The model of `vocab`, whose token types gave `attrs`.
    pub fn new(vocab: &Vocab, attrs: &[u32]) -> Result<Plamo2> {
        let n = vocab.len();
        let mut bytes = [0u32; 256];
        let mut ids = Vec::new();
        let mut scores = vec![INVALID_SCORE; n];
        let mut lengths = vec![0u32; n];
        let mut buf = Vec::new();
        for id in 0..n {
            let id32 = u32::try_from(id).map_err(|_| bad("too many tokens"))?;
            let text = vocab.text(id);
            if attrs.get(id).is_some_and(|&a| a & attr::BYTE != 0) {
                let hex = |c: u8| char::from(c).to_digit(16);
                if text.len() == 6 && text.starts_with(b"<0x") && text[5] == b'>' {
                    if let (Some(h), Some(l)) = (hex(text[3]), hex(text[4])) {
                        bytes[(h * 16 + l) as usize] = id32;
                    }
                }
                continue;
            }
            let cpts = cpts_from_utf8(text);
            buf.clear();
            for &c in &cpts {
                cpt_to_utf8(c, &mut buf);
            }
            if buf != text || text.is_empty() {
                continue;
            }
            let s = vocab.scores[id];
            scores[id] = if s.is_finite() {
                let r = (f64::from(s) * 1e4).round();
                // Out of range, x86's conversion (what llama.cpp's cast compiles to) gives the
                // lowest value.
                if r >= f64::from(i32::MIN) && r <= f64::from(i32::MAX) {
                    // In range and whole: exact.
                    #[allow(clippy::cast_possible_truncation)]
                    let r = r as i32;
                    r
                } else {
                    i32::MIN
                }
            } else {
                INVALID_SCORE
            };
            lengths[id] = u32::try_from(cpts.len()).map_err(|_| bad("a token is too long"))?;
            ids.push(id32);
        }
        if let Some(b) = bytes.iter().position(|&id| id == 0) {
            return Err(bad(format!(
                "the PLaMo 2 vocabulary has no byte token <0x{b:02X}> (or has it as token 0)"
            )));
        }
        // Of tokens with the same text, llama.cpp keeps the last.
        let text = |i: u32| vocab.text(i as usize);
        ids.sort_unstable_by(|&a, &b| text(a).cmp(text(b)).then(b.cmp(&a)));
        ids.dedup_by(|a, b| text(*a) == text(*b));
        let matcher =
            Ends::reversed(ids, text).ok_or_else(|| bad("the tokens' texts are too long"))?;
        Ok(Plamo2 {
            matcher,
            scores,
            bytes,
            lengths,
        })
    }

    /// Appends the tokens of `text` to `out`.
    pub fn tokenize(&self, text: &[u8], out: &mut Vec<i32>) {
        let mut cpts = cpts_from_utf8(text);
        if cpts.first() == Some(&0xFEFF) {
            cpts.remove(0);
        }
        let n = cpts.len();
        if n == 0 {
            return;
        }
        // The text re-encoded, and where each code point starts in it.
        let mut norm = Vec::with_capacity(text.len() + 4);
        let mut starts = Vec::with_capacity(n + 1);
        for &c in &cpts {
            starts.push(norm.len());
            cpt_to_utf8(c, &mut norm);
        }
        starts.push(norm.len());
        let mut cost = vec![1i64 << 60; n + 1];
        cost[n] = 0;
        // (length in code points, token or -1 for byte tokens).
        let mut path = vec![(0u32, -1i32); n + 1];
        let mut hits: Vec<u32> = Vec::new();
        // The tokens starting at each code point, longest first, in time linear in the text and
        // the tokens found (a walk from each code point went as far as any token continued).
        let mut state = Ends::START;
        for i in (0..n).rev() {
            hits.clear();
            for k in (starts[i] + 1..starts[i + 1]).rev() {
                state = self.matcher.step(state, norm[k]);
            }
            state = self
                .matcher
                .push(state, norm[starts[i]], |_, id| hits.push(id));
            let mut unknown_seen = false;
            for &id in &hits {
                let score = self.scores[id as usize];
                if score > INVALID_SCORE {
                    let len = self.lengths[id as usize];
                    let s = cost[i + len as usize] - i64::from(score);
                    if s < cost[i] {
                        cost[i] = s;
                        path[i] = (len, id as i32);
                    }
                }
                if score == UNKNOWN_SCORE {
                    unknown_seen = true;
                    break;
                }
            }
            if !unknown_seen {
                let s = cost[i + 1] - i64::from(UNKNOWN_SCORE);
                if s < cost[i] {
                    cost[i] = s;
                    path[i] = (1, -1);
                }
            }
        }
        let mut pos = 0;
        let mut utf8 = Vec::with_capacity(4);
        while pos < n {
            let (len, id) = path[pos];
            if id >= 0 {
                out.push(id);
            } else {
                utf8.clear();
                cpt_to_utf8(cpts[pos], &mut utf8);
                out.extend(utf8.iter().map(|&b| self.bytes[usize::from(b)] as i32));
            }
            pos += len.max(1) as usize;
        }
    }
}
