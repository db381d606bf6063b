//! The tokenizer a GGUF file's vocabulary describes: text to tokens and back, as llama.cpp does.
//!
//! [`Tokenizer::from_file`] reads `tokenizer.ggml.*` once, checks it (an unknown model or
//! pre-tokenizer name, duplicate tokens, out-of-range types or ids, NaN scores, merges naming
//! no token are errors) and copies what it needs: the tokenizer does not borrow the file, and
//! it is immutable, so one tokenizer serves any number of threads at once.

mod bpe;
mod detokenize;
mod load;
mod plamo2;
pub mod pretokenize;
mod rwkv;
mod special;
mod spm;
mod trie;
mod ugm;
pub mod unicode;
mod unicode_tables;
mod vocab;
mod wpm;

use crate::error::{Error, ErrorCode, Result};
use special::Fragment;
use vocab::{attr, Vocab};

/// The byte length of the UTF-8 sequence that `lead` starts, as llama.cpp's
/// `unicode_len_utf8` sees it (a continuation byte counts as 1).
#[inline]
pub(crate) fn unicode_len(lead: u8) -> usize {
    const LEN: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    usize::from(LEN[usize::from(lead >> 4)])
}

/// The tokenization algorithm, from `tokenizer.ggml.model`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VocabType {
    /// `llama`: SentencePiece BPE over scores, with byte fallback.
    Spm,
    /// `gpt2` (and `gemma4`, `whitespace`, `hybriddna`): byte-level BPE over merges, after a
    /// pre-tokenizer's split.
    Bpe,
    /// `bert`: WordPiece.
    Wpm,
    /// `t5`: Unigram.
    Ugm,
    /// `rwkv`: greedy longest match.
    Rwkv,
    /// `plamo2`: PLaMo 2's Unigram-like dynamic programme.
    Plamo2,
}

/// The special tokens an engine needs; `None` where the vocabulary has none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    /// Beginning of sequence.
    pub bos: Option<i32>,
    /// End of sequence.
    pub eos: Option<i32>,
    /// End of turn.
    pub eot: Option<i32>,
    /// End of message.
    pub eom: Option<i32>,
    /// Unknown.
    pub unk: Option<i32>,
    /// Separator.
    pub sep: Option<i32>,
    /// Padding.
    pub pad: Option<i32>,
    /// Mask.
    pub mask: Option<i32>,
    /// Newline.
    pub nl: Option<i32>,
    /// Fill-in-the-middle: prefix.
    pub fim_pre: Option<i32>,
    /// Fill-in-the-middle: suffix.
    pub fim_suf: Option<i32>,
    /// Fill-in-the-middle: middle.
    pub fim_mid: Option<i32>,
    /// Fill-in-the-middle: padding.
    pub fim_pad: Option<i32>,
    /// Fill-in-the-middle: repository.
    pub fim_rep: Option<i32>,
    /// Fill-in-the-middle: file separator.
    pub fim_sep: Option<i32>,
}

/// The flags llama.cpp's loader derives from the model and pre-tokenizer names and the keys.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Flags {
    pub add_space_prefix: bool,
    pub add_bos: bool,
    pub add_eos: bool,
    pub add_sep: bool,
    pub ignore_merges: bool,
    pub clean_spaces: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
    pub lowercase: bool,
    pub strip_accents: bool,
}

/// A file's vocabulary made into a tokenizer. Owns everything it uses; `Send` and `Sync`.
pub struct Tokenizer {
    pub(crate) vocab: Vocab,
    pub(crate) kind: VocabType,
    pub(crate) model: String,
    pub(crate) pre: String,
    pub(crate) flags: Flags,
    pub(crate) special: SpecialTokens,
    /// End-of-generation tokens, sorted.
    pub(crate) eog: Vec<i32>,
    /// Control, user-defined and unknown tokens, found in the text before tokenizing.
    pub(crate) special_index: special::SpecialIndex,
    /// Every token's piece (with special tokens' text), in one buffer.
    pub(crate) pieces: Vec<u8>,
    pub(crate) piece_ends: Vec<usize>,
    /// The algorithm's own tables.
    pub(crate) model_data: ModelData,
    /// SentencePiece: the character pairs inside tokens (empty for the other algorithms).
    pub(crate) spm_pairs: spm::Pairs,
}

/// What one algorithm needs beyond the vocabulary.
pub(crate) enum ModelData {
    None,
    Ugm(ugm::Ugm),
    Rwkv(rwkv::Rwkv),
    Plamo2(Box<plamo2::Plamo2>),
    Bpe(Box<BpeData>),
    /// WordPiece: every token, for the longest match at each position.
    Wpm(Box<trie::Longest>),
}

/// A byte-level BPE vocabulary's merges and pre-tokenizer.
pub(crate) struct BpeData {
    pub merges: bpe::Merges,
    pub splitter: pretokenize::Splitter,
    pub byte_encode: bool,
    pub gemma4: bool,
    /// The session llama.cpp runs for the model name.
    pub variant: BpeVariant,
}

/// The BPE session a `tokenizer.ggml.model` name picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BpeVariant {
    /// `gpt2`, `gemma4`: the pre-tokenizer's words, merged.
    Plain,
    /// `whitespace`: the text cut at whitespace (which is dropped), each piece lower-cased
    /// where the normalizer says so, then tokenized as `Plain`.
    Whitespace,
    /// `hybriddna`: `<dna>`…`</dna>` spans become 6-mer tokens, the rest is `Plain`.
    HybridDna,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("model", &self.model)
            .field("pre", &self.pre)
            .field("tokens", &self.vocab.len())
            .finish()
    }
}

impl Tokenizer {
    /// The tokenizer of `file`'s vocabulary, checked.
    pub fn from_file<S: AsRef<[u8]>>(file: &crate::file::GgufFile<S>) -> Result<Tokenizer> {
        load::load(file)
    }

    /// The algorithm.
    pub fn vocab_type(&self) -> VocabType {
        self.kind
    }

    /// `tokenizer.ggml.model`.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// `tokenizer.ggml.pre` (empty when absent).
    pub fn pre_name(&self) -> &str {
        &self.pre
    }

    /// The number of tokens.
    pub fn n_tokens(&self) -> usize {
        self.vocab.len()
    }

    /// Token `id`'s text as the vocabulary holds it.
    pub fn token_text(&self, id: i32) -> Option<&[u8]> {
        let i = usize::try_from(id).ok().filter(|&i| i < self.vocab.len())?;
        Some(self.vocab.text(i))
    }

    /// The special tokens.
    pub fn special_tokens(&self) -> SpecialTokens {
        self.special
    }

    /// Whether `add_special` adds a BOS token.
    pub fn add_bos(&self) -> bool {
        self.flags.add_bos
    }

    /// Whether `add_special` adds an EOS token.
    pub fn add_eos(&self) -> bool {
        self.flags.add_eos
    }

    /// Whether `id` ends generation (EOS, EOT, EOM and the tokens llama.cpp names so).
    pub fn is_eog(&self, id: i32) -> bool {
        self.eog.binary_search(&id).is_ok()
    }

    /// Whether `id` is a control token.
    pub fn is_control(&self, id: i32) -> bool {
        u32::try_from(id).is_ok_and(|i| self.vocab.attr(i) & attr::CONTROL != 0)
    }

    /// `text` to tokens, as `llama_tokenize`: `add_special` adds the model's BOS/EOS (or
    /// CLS/SEP), `parse_special` turns control-token text into those tokens. Any bytes are
    /// accepted (invalid UTF-8 and NUL included).
    pub fn tokenize(&self, text: &[u8], add_special: bool, parse_special: bool) -> Vec<i32> {
        let fragments = self
            .special_index
            .partition(&self.vocab, text, parse_special);
        let mut out = Vec::with_capacity(text.len() / 3 + 4);
        match self.kind {
            VocabType::Spm => self.tokenize_spm(text, &fragments, add_special, &mut out),
            kind => {
                // What add_special adds: BPE and UGM follow add_bos/add_eos; WordPiece always
                // adds CLS (the BOS id) and SEP; RWKV and PLaMo 2 add nothing.
                let (first, last) = match kind {
                    VocabType::Wpm => (self.special.bos, self.special.sep),
                    VocabType::Bpe | VocabType::Ugm => (
                        self.special.bos.filter(|_| self.flags.add_bos),
                        self.special.eos.filter(|_| self.flags.add_eos),
                    ),
                    _ => (None, None),
                };
                if add_special {
                    out.extend(first);
                }
                for f in &fragments {
                    match *f {
                        Fragment::Token(id) => out.push(id as i32),
                        Fragment::Text(s, e) => self.tokenize_text(&text[s..e], &mut out),
                    }
                }
                if add_special {
                    out.extend(last);
                }
            }
        }
        out
    }

    fn tokenize_spm(
        &self,
        text: &[u8],
        fragments: &[Fragment],
        add_special: bool,
        out: &mut Vec<i32>,
    ) {
        let mut prev_special = true;
        if add_special && self.flags.add_bos {
            if let Some(b) = self.special.bos {
                out.push(b);
            }
        }
        for f in fragments {
            match *f {
                Fragment::Token(id) => {
                    out.push(id as i32);
                    prev_special = true;
                }
                Fragment::Text(s, e) => {
                    spm::tokenize_raw(
                        &self.vocab,
                        &self.spm_pairs,
                        self.flags.add_space_prefix && prev_special,
                        &text[s..e],
                        &|b| self.byte_token(b),
                        out,
                    );
                    prev_special = false;
                }
            }
        }
        if add_special && self.flags.add_eos {
            if let Some(e) = self.special.eos {
                out.push(e);
            }
        }
    }

    /// The tokens of one text fragment (no special tokens in it), by the vocabulary's algorithm.
    pub(crate) fn tokenize_text(&self, text: &[u8], out: &mut Vec<i32>) {
        match &self.model_data {
            ModelData::Ugm(u) => u.tokenize(&self.vocab, text, &self.flags, out),
            ModelData::Rwkv(r) => r.tokenize(text, self.special.unk, out),
            ModelData::Plamo2(p) => p.tokenize(text, out),
            ModelData::Wpm(longest) => wpm::tokenize(
                longest,
                text,
                self.flags.lowercase,
                self.flags.strip_accents,
                self.special.unk,
                out,
            ),
            ModelData::Bpe(b) => {
                let escaped;
                let text = if self.flags.escape_whitespaces {
                    let mut buf = Vec::with_capacity(text.len() + 16);
                    escape_whitespace(text, &mut buf);
                    escaped = buf;
                    &escaped[..]
                } else {
                    text
                };
                let mut session = bpe::Session::default();
                match b.variant {
                    BpeVariant::Plain => self.bpe_plain(b, &mut session, text, out),
                    BpeVariant::Whitespace => {
                        self.bpe_whitespace(b, &mut session, text, out);
                    }
                    BpeVariant::HybridDna => self.bpe_hybriddna(b, &mut session, text, out),
                }
            }
            ModelData::None => {
                if self.kind == VocabType::Spm {
                    spm::tokenize_raw(
                        &self.vocab,
                        &self.spm_pairs,
                        false,
                        text,
                        &|b| self.byte_token(b),
                        out,
                    );
                }
            }
        }
    }

    /// llama.cpp's plain BPE session over one piece of (escaped) text.
    fn bpe_plain(&self, b: &BpeData, session: &mut bpe::Session, text: &[u8], out: &mut Vec<i32>) {
        let pass = bpe::Bpe {
            vocab: &self.vocab,
            merges: &b.merges,
            ignore_merges: self.flags.ignore_merges,
            gemma4: b.gemma4,
            byte_encode: b.byte_encode,
        };
        b.splitter
            .for_each_word(text, b.byte_encode, |word| pass.word(session, word, out));
    }

    /// llama.cpp's `whitespace` session: the code points between whitespace (lower-cased where
    /// the normalizer lower-cases), each run tokenized alone.
    fn bpe_whitespace(
        &self,
        b: &BpeData,
        session: &mut bpe::Session,
        text: &[u8],
        out: &mut Vec<i32>,
    ) {
        let mut segment = Vec::new();
        for cp in unicode::cpts_iter(text) {
            if unicode::flags(cp).is_whitespace {
                if !segment.is_empty() {
                    self.bpe_plain(b, session, &segment, out);
                    segment.clear();
                }
            } else {
                let cp = if self.flags.lowercase {
                    unicode::to_lower(cp)
                } else {
                    cp
                };
                unicode::cpt_to_utf8(cp, &mut segment);
            }
        }
        if !segment.is_empty() {
            self.bpe_plain(b, session, &segment, out);
        }
    }

    /// llama.cpp's `hybriddna` session (plain BPE where the vocabulary lacks `<dna>`,
    /// `</dna>` or `<oov>`).
    fn bpe_hybriddna(
        &self,
        b: &BpeData,
        session: &mut bpe::Session,
        text: &[u8],
        out: &mut Vec<i32>,
    ) {
        const OPEN: &[u8] = b"<dna>";
        const CLOSE: &[u8] = b"</dna>";
        let (Some(begin), Some(end), Some(oov)) = (
            self.vocab.find(OPEN),
            self.vocab.find(CLOSE),
            self.vocab.find(b"<oov>"),
        ) else {
            self.bpe_plain(b, session, text, out);
            return;
        };
        let mut pos = 0;
        while pos < text.len() {
            let Some(start) = find_bytes(&text[pos..], OPEN).map(|i| i + pos) else {
                self.bpe_plain(b, session, &text[pos..], out);
                break;
            };
            if start > pos {
                self.bpe_plain(b, session, &text[pos..start], out);
            }
            out.push(begin as i32);
            let content = start + OPEN.len();
            let close = find_bytes(&text[content..], CLOSE).map(|i| i + content);
            self.dna_kmers(&text[content..close.unwrap_or(text.len())], oov, out);
            let Some(close) = close else { break };
            out.push(end as i32);
            pos = close + CLOSE.len();
        }
    }

    /// The 6-mer tokens of a DNA span: ASCII upper-cased, the last k-mer padded with `A`, each
    /// looked up with the marker suffix, `oov` where the vocabulary lacks it.
    fn dna_kmers(&self, raw: &[u8], oov: u32, out: &mut Vec<i32>) {
        const K: usize = 6;
        let seq = raw.to_ascii_uppercase();
        let mut key = Vec::with_capacity(K + DNA_MARKER.len());
        for chunk in seq.chunks(K) {
            key.clear();
            key.extend_from_slice(chunk);
            key.resize(K, b'A');
            key.extend_from_slice(DNA_MARKER);
            out.push(self.vocab.find(&key).unwrap_or(oov) as i32);
        }
    }

    /// The token of byte `b` where no token covers it, as llama.cpp's `byte_to_token` (the
    /// unknown token where the vocabulary has no byte token, where llama.cpp would throw).
    pub(crate) fn byte_token(&self, b: u8) -> Option<u32> {
        self.vocab
            .find_byte(b)
            .or_else(|| self.vocab.find(&[b]))
            .or_else(|| self.special.unk.and_then(|u| u32::try_from(u).ok()))
    }

    /// Token `id`'s text as output (`special`: control and unknown tokens' text too, else
    /// nothing for them), with up to `lstrip` leading spaces taken off, as
    /// `llama_token_to_piece`. `None` for an id past the vocabulary.
    pub fn token_to_piece(&self, id: i32, lstrip: u32, special: bool) -> Option<&[u8]> {
        let i = usize::try_from(id).ok().filter(|&i| i < self.vocab.len())?;
        let a = self.vocab.attrs[i];
        if !special && a & (attr::UNKNOWN | attr::CONTROL) != 0 {
            return Some(&[]);
        }
        let start = if i == 0 { 0 } else { self.piece_ends[i - 1] };
        let mut piece = &self.pieces[start..self.piece_ends[i]];
        let mut left = lstrip;
        while left > 0 && piece.first() == Some(&b' ') {
            piece = &piece[1..];
            left -= 1;
        }
        Some(piece)
    }

    /// Tokens to text, as `llama_detokenize`: `remove_special` drops a leading BOS and a
    /// trailing EOS the model adds, `unparse_special` writes control tokens' text. An id past
    /// the vocabulary is an error.
    pub fn detokenize(
        &self,
        tokens: &[i32],
        remove_special: bool,
        unparse_special: bool,
    ) -> Result<Vec<u8>> {
        detokenize::detokenize(self, tokens, remove_special, unparse_special)
    }
}

/// An id past the vocabulary.
#[cold]
pub(crate) fn bad_token(id: i32, n: usize) -> Error {
    Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "token id {id} is not in the vocabulary (0 to {})",
            n.saturating_sub(1)
        ),
    )
}

/// A byte-level BPE token's text (GPT-2's printable stand-ins for bytes) as the bytes it
/// stands for, as llama.cpp's `llama_decode_text`.
/// Each code point outside GPT-2's alphabet becomes `[UNK_BYTE_0x<its UTF-8 in hex><the whole
/// text>]`, as there: [`decoded_bpe_len`] tells the size first.
pub(crate) fn decode_bpe_text(text: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut utf8 = Vec::with_capacity(4);
    for cp in unicode::cpts_iter(text) {
        match unicode::cpt_to_byte(cp) {
            Some(b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                utf8.clear();
                unicode::cpt_to_utf8(cp, &mut utf8);
                for &b in &utf8 {
                    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
                }
                out.extend_from_slice(text);
                out.push(b']');
            }
        }
    }
}

/// The length [`decode_bpe_text`] gives `text`, and how many of its code points are outside
/// GPT-2's alphabet (each repeats the whole text); the length saturates at `u64::MAX`.
pub(crate) fn decoded_bpe_len(text: &[u8]) -> (u64, usize) {
    // In u64, saturating: on 32-bit targets a hostile token's piece passes `usize` long before
    // the limit is checked.
    let (mut len, mut unknown) = (0u64, 0usize);
    for cp in unicode::cpts_iter(text) {
        if unicode::cpt_to_byte(cp).is_some() {
            len = len.saturating_add(1);
        } else {
            let utf8: u64 = match cp {
                0..=0x7F => 1,
                0x80..=0x7FF => 2,
                0x800..=0xFFFF => 3,
                _ => 4,
            };
            let one =
                (b"[UNK_BYTE_0x".len() as u64 + 2 * utf8 + 1).saturating_add(text.len() as u64);
            len = len.saturating_add(one);
            unknown += 1;
        }
    }
    (len, unknown)
}

/// The suffix (U+E000) that keeps `hybriddna` k-mer tokens apart from equal BPE tokens; their
/// texts lose it once loaded.
pub(crate) const DNA_MARKER: &[u8] = "\u{E000}".as_bytes();

/// Where `needle` first occurs in `hay`.
fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `text` with every space as U+2581 (SentencePiece's visible space), appended to `out`.
pub(crate) fn escape_whitespace(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        if b == b' ' {
            out.extend_from_slice("\u{2581}".as_bytes());
        } else {
            out.push(b);
        }
    }
}

/// `text` with every U+2581 as a space, appended to `out`.
pub(crate) fn unescape_whitespace(text: &[u8], out: &mut Vec<u8>) {
    let mark = "\u{2581}".as_bytes();
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(mark) {
            out.push(b' ');
            i += mark.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Tokenizer>();
    }

    #[test]
    fn whitespace_escapes_round_trip() {
        let mut e = Vec::new();
        escape_whitespace(b" a  b", &mut e);
        assert_eq!(e, "\u{2581}a\u{2581}\u{2581}b".as_bytes());
        let mut u = Vec::new();
        unescape_whitespace(&e, &mut u);
        assert_eq!(u, b" a  b");
    }

    #[test]
    fn utf8_lengths_follow_the_lead_byte() {
        assert_eq!(unicode_len(b'a'), 1);
        assert_eq!(unicode_len(0x80), 1);
        assert_eq!(unicode_len(0xC3), 2);
        assert_eq!(unicode_len(0xE2), 3);
        assert_eq!(unicode_len(0xF0), 4);
    }
}
