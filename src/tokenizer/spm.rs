//! SentencePiece BPE (`tokenizer.ggml.model` = `llama`), as llama.cpp's `llm_tokenizer_spm`:
//! the text split into UTF-8 characters, then the adjacent pair whose joined text is the
//! highest-scoring token merged first (the leftmost among equal scores), until no pair is a
//! token; what is left that is no token goes out as byte tokens.

use super::symbols::{order_from_cmp, symbols, Symbol, NONE};
use super::unicode::len_utf8;
use super::vocab::Vocab;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A candidate merge: symbols `left` and `right`, whose texts together make a token of
/// `score`, `size` bytes long.
struct Bigram {
    left: usize,
    right: usize,
    score: f32,
    size: usize,
}

order_from_cmp!(Bigram);
impl Ord for Bigram {
    /// The greatest is the highest score, then the leftmost (scores are never NaN).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// The pairs of adjacent characters that occur inside some token: a merge can join two
/// symbols only across such a pair, so the text is cut, where no token can span, into segments
/// merged independently (the same merges as over the whole text, in small heaps).
struct Pairs(hashbrown::HashSet<u64, foldhash::fast::FixedState>);

/// Up to 4 bytes as a number (symbols are at most 4 bytes; two that pack alike only merge the
/// sets they stand for, which keeps a boundary that could have been cut).
#[inline]
fn pack(s: &[u8]) -> u64 {
    let mut b = [0u8; 4];
    let n = s.len().min(4);
    b[..n].copy_from_slice(&s[..n]);
    u64::from(u32::from_le_bytes(b))
}

impl Pairs {
    fn new(vocab: &Vocab) -> Pairs {
        let mut set = hashbrown::HashSet::with_hasher(foldhash::fast::FixedState::with_seed(7));
        let mut syms = Vec::new();
        for id in 0..vocab.len() {
            let t = vocab.text(id);
            symbols(t, &mut syms);
            for w in syms.windows(2) {
                let (a, b) = (w[0], w[1]);
                set.insert(
                    pack(&t[a.start..a.start + a.len]) << 32 | pack(&t[b.start..b.start + b.len]),
                );
            }
        }
        Pairs(set)
    }

    #[inline]
    fn joinable(&self, a: &[u8], b: &[u8]) -> bool {
        self.0.contains(&(pack(a) << 32 | pack(b)))
    }
}

/// The SentencePiece model built from the vocabulary.
pub(crate) struct Spm {
    pairs: Pairs,
}

impl Spm {
    /// The model of `vocab`.
    pub fn load(vocab: &Vocab) -> Spm {
        Spm {
            pairs: Pairs::new(vocab),
        }
    }

    /// Appends the tokens of raw `text` to `out` (see [`tokenize_raw`]); a byte no token covers
    /// is its byte token, else the token of its one-byte text, else `unk`.
    pub fn tokenize(
        &self,
        vocab: &Vocab,
        prefix: bool,
        text: &[u8],
        unk: Option<i32>,
        out: &mut Vec<i32>,
    ) {
        tokenize_raw(
            vocab,
            &self.pairs,
            prefix,
            text,
            &|b| byte_token(vocab, unk, b),
            out,
        );
    }
}

/// The token of byte `b` where no token covers it, as llama.cpp's `byte_to_token` (the
/// unknown token where the vocabulary has no byte token, where llama.cpp would throw).
fn byte_token(vocab: &Vocab, unk: Option<i32>, b: u8) -> Option<u32> {
    vocab
        .find_byte(b)
        .or_else(|| vocab.find(&[b]))
        .or_else(|| unk.and_then(|u| u32::try_from(u).ok()))
}

/// Appends the tokens of raw `text` to `out`, its spaces escaped as U+2581 on the fly and,
/// with `prefix`, a U+2581 before it: the same tokens as merging the whole escaped text,
/// with working memory bounded by the longest segment no merge leaves, not by the text
/// (the text is cut where no token spans the pair of characters at the cut).
fn tokenize_raw(
    vocab: &Vocab,
    pairs: &Pairs,
    prefix: bool,
    text: &[u8],
    byte_token: &dyn Fn(u8) -> Option<u32>,
    out: &mut Vec<i32>,
) {
    const MARK: &[u8] = "\u{2581}".as_bytes();
    let head: &[u8] = if prefix { MARK } else { &[] };
    let bytes = head.iter().copied().chain(
        text.iter()
            .flat_map(|b| {
                if *b == b' ' {
                    MARK
                } else {
                    std::slice::from_ref(b)
                }
            })
            .copied(),
    );
    Segmenter::new(vocab, pairs, byte_token).run(bytes, out);
}

/// Cuts a stream of (escaped) bytes into UTF-8 characters and those into segments where no
/// token spans the pair at the cut, merging each segment alone in buffers reused between them.
struct Segmenter<'a> {
    vocab: &'a Vocab,
    pairs: &'a Pairs,
    byte_token: &'a dyn Fn(u8) -> Option<u32>,
    seg: Vec<u8>,
    syms: Vec<Symbol>,
    queue: BinaryHeap<Bigram>,
}

impl<'a> Segmenter<'a> {
    fn new(vocab: &'a Vocab, pairs: &'a Pairs, byte_token: &'a dyn Fn(u8) -> Option<u32>) -> Self {
        Segmenter {
            vocab,
            pairs,
            byte_token,
            seg: Vec::new(),
            syms: Vec::new(),
            queue: BinaryHeap::new(),
        }
    }

    fn run(mut self, mut bytes: impl Iterator<Item = u8>, out: &mut Vec<i32>) {
        // Where the segment's last character starts.
        let mut last = 0;
        let mut ch = [0u8; 4];
        while let Some(lead) = bytes.next() {
            // A lead byte's length, cut where the bytes end (as `symbols`).
            let want = len_utf8(lead);
            ch[0] = lead;
            let mut n = 1;
            while n < want {
                match bytes.next() {
                    Some(b) => {
                        ch[n] = b;
                        n += 1;
                    }
                    None => break,
                }
            }
            let c = &ch[..n];
            if !self.seg.is_empty() && !self.pairs.joinable(&self.seg[last..], c) {
                self.flush(out);
            }
            last = self.seg.len();
            self.seg.extend_from_slice(c);
        }
        self.flush(out);
    }

    /// Merges the segment so far, its tokens into `out`, and starts an empty one.
    fn flush(&mut self, out: &mut Vec<i32>) {
        if self.seg.is_empty() {
            return;
        }
        symbols(&self.seg, &mut self.syms);
        merge(
            self.vocab,
            &self.seg,
            &mut self.syms,
            &mut self.queue,
            self.byte_token,
            out,
        );
        self.seg.clear();
    }
}

/// The merges of one segment, then its tokens into `out`.
fn merge(
    vocab: &Vocab,
    text: &[u8],
    syms: &mut [Symbol],
    queue: &mut BinaryHeap<Bigram>,
    byte_token: &dyn Fn(u8) -> Option<u32>,
    out: &mut Vec<i32>,
) {
    queue.clear();
    let try_add = |syms: &[Symbol], queue: &mut BinaryHeap<Bigram>, left: usize, right: usize| {
        if left == NONE || right == NONE {
            return;
        }
        let (l, r) = (syms[left], syms[right]);
        // Adjacent symbols are adjacent in the text.
        let joined = &text[l.start..r.start + r.len];
        if let Some(id) = vocab.find(joined) {
            queue.push(Bigram {
                left,
                right,
                score: vocab.scores[id as usize],
                size: joined.len(),
            });
        }
    };
    for i in 1..syms.len() {
        try_add(syms, queue, i - 1, i);
    }
    while let Some(b) = queue.pop() {
        let (l, r) = (syms[b.left], syms[b.right]);
        if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
            continue;
        }
        syms[b.left].len += r.len;
        syms[b.right].len = 0;
        syms[b.left].next = r.next;
        if r.next != NONE {
            syms[r.next].prev = b.left;
        }
        try_add(syms, queue, l.prev, b.left);
        try_add(syms, queue, b.left, r.next);
    }
    let mut i = if syms.is_empty() { NONE } else { 0 };
    while i != NONE {
        let s = syms[i];
        let piece = &text[s.start..s.start + s.len];
        match vocab.find(piece) {
            Some(id) => out.push(id as i32),
            None => {
                // No token: byte tokens (llama.cpp's merge record only ever names tokens, so
                // its resegmenting ends here too).
                for &b in piece {
                    if let Some(id) = byte_token(b) {
                        out.push(id as i32);
                    }
                }
            }
        }
        i = s.next;
    }
}
