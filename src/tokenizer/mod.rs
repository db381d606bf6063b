//! The tokenizer a GGUF file's vocabulary describes: text to tokens and back, as llama.cpp does.
//!
//! [`Tokenizer::from_file`] reads `tokenizer.ggml.*` once, checks it (an unknown model or
//! pre-tokenizer name, duplicate tokens, out-of-range types or ids, NaN scores, merges naming
//! no token are errors) and copies what it needs: the tokenizer does not borrow the file, and
//! it is immutable, so one tokenizer serves any number of threads at once.
//!
//! Each algorithm is one file that owns its model, its loading and its encoding (`spm`, `bpe`,
//! `wpm`, `ugm`, `rwkv`, `plamo2`); [`Tokenizer::tokenize`] cuts the special tokens out and
//! hands each text fragment to the algorithm, in one `match`.

mod bpe;
mod detokenize;
mod load;
mod model;
mod plamo2;
pub mod pretokenize;
mod rwkv;
mod space;
mod special;
mod spm;
mod symbols;
mod trie;
mod types;
mod ugm;
pub mod unicode;
mod unicode_tables;
mod vocab;
mod wpm;

pub use model::Tokenizer;
pub(crate) use types::bad_token;
pub use types::{SpecialTokens, VocabType};

use load::Newline;
use model::Model;
use special::Fragment;
use vocab::attr;

use crate::error::Result;

impl Tokenizer {
    /// The tokenizer of `file`'s vocabulary, checked.
    pub fn from_file<S: AsRef<[u8]>>(file: &crate::file::GgufFile<S>) -> Result<Tokenizer> {
        let (mut tok, newline) = load::load(file)?;
        tok.special.nl = match newline {
            Newline::Known(nl) => nl,
            Newline::FirstTokenOfNewline { fallback } => {
                let mut out = Vec::new();
                tok.encode(b"\n", false, &mut out);
                out.first().copied().or(fallback)
            }
        };
        Ok(tok)
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
        let (first, last) = self.added;
        if add_special {
            out.extend(first);
        }
        // SentencePiece puts its space prefix before text that follows a special token or
        // starts the input.
        let mut after_special = true;
        for f in &fragments {
            match *f {
                Fragment::Token(id) => {
                    out.push(id as i32);
                    after_special = true;
                }
                Fragment::Text(s, e) => {
                    self.encode(&text[s..e], after_special, &mut out);
                    after_special = false;
                }
            }
        }
        if add_special {
            out.extend(last);
        }
        out
    }

    /// The tokens of one text fragment (no special tokens in it), by the vocabulary's
    /// algorithm; `after_special`: the fragment starts the input or follows a special token.
    fn encode(&self, text: &[u8], after_special: bool, out: &mut Vec<i32>) {
        let (vocab, flags, unk) = (&self.vocab, &self.flags, self.special.unk);
        match &self.algorithm {
            Model::Spm(m) => m.tokenize(
                vocab,
                flags.add_space_prefix && after_special,
                text,
                unk,
                out,
            ),
            Model::Bpe(m) => m.tokenize(vocab, flags, text, out),
            Model::Wpm(m) => m.tokenize(text, flags, unk, out),
            Model::Ugm(m) => m.tokenize(vocab, text, flags, out),
            Model::Rwkv(m) => m.tokenize(text, unk, out),
            Model::Plamo2(m) => m.tokenize(text, out),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Tokenizer>();
    }
}
