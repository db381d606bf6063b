//! What a tokenizer holds: the vocabulary, its names and flags, the special tokens, the pieces
//! and the one algorithm's model ([`Model`]), each algorithm's in its own file.

use super::bpe::Bpe;
use super::plamo2::Plamo2;
use super::rwkv::Rwkv;
use super::special::SpecialIndex;
use super::spm::Spm;
use super::types::{Flags, SpecialTokens, VocabType};
use super::ugm::Ugm;
use super::vocab::Vocab;
use super::wpm::Wpm;

/// A file's vocabulary made into a tokenizer. Owns everything it uses; `Send` and `Sync`.
pub struct Tokenizer {
    pub(crate) vocab: Vocab,
    pub(crate) kind: VocabType,
    pub(crate) model: String,
    pub(crate) pre: String,
    pub(crate) flags: Flags,
    pub(crate) special: SpecialTokens,
    /// What `add_special` puts before and after the tokens.
    pub(crate) added: (Option<i32>, Option<i32>),
    /// End-of-generation tokens, sorted.
    pub(crate) eog: Vec<i32>,
    /// Control, user-defined and unknown tokens, found in the text before tokenizing.
    pub(crate) special_index: SpecialIndex,
    /// Every token's piece (with special tokens' text), in one buffer.
    pub(crate) pieces: Vec<u8>,
    pub(crate) piece_ends: Vec<usize>,
    /// The algorithm's model.
    pub(crate) algorithm: Model,
}

/// One algorithm's model: what it needs beyond the vocabulary.
pub(crate) enum Model {
    /// SentencePiece BPE: the character pairs inside tokens.
    Spm(Spm),
    /// Byte-level BPE: merges and pre-tokenizer.
    Bpe(Box<Bpe>),
    /// WordPiece: every token, for the longest match at each position.
    Wpm(Box<Wpm>),
    /// Unigram: the normalizer and the Viterbi graph's edges.
    Ugm(Ugm),
    /// RWKV: the longest match over the unescaped tokens.
    Rwkv(Rwkv),
    /// PLaMo 2: the segmentation of least cost.
    Plamo2(Box<Plamo2>),
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
