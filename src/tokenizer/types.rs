//! The tokenizer's shared vocabulary of types: the algorithm, the special tokens, the flags
//! llama.cpp's loader derives, and the error for a token id past the vocabulary.

use crate::error::{Error, ErrorCode};

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
