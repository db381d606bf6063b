//! The vocabulary: token texts, scores and attributes read from `tokenizer.ggml.*`, each checked,
//! and the text-to-id index.

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::index::NameIndex;
use crate::reader::ByteReader;
use crate::text::quote;
use crate::types::ValueType;
use crate::value::{RawValue, Value};

/// Token attributes, as llama.cpp's `llama_token_attr` bits.
pub(crate) mod attr {
    pub const UNKNOWN: u32 = 1 << 0;
    pub const UNUSED: u32 = 1 << 1;
    pub const NORMAL: u32 = 1 << 2;
    pub const CONTROL: u32 = 1 << 3;
    pub const USER_DEFINED: u32 = 1 << 4;
    pub const BYTE: u32 = 1 << 5;
    pub const LSTRIP: u32 = 1 << 7;
    pub const RSTRIP: u32 = 1 << 8;
}

/// The longest token text accepted (real vocabularies stay under a few hundred bytes).
pub(crate) const MAX_TOKEN_LEN: usize = 1 << 20;

/// The most tokens a vocabulary may hold (ids are `i32`).
pub(crate) const MAX_TOKENS: u64 = i32::MAX as u64;

/// The keys of the token texts, scores and types.
pub(crate) const TOKENS: &str = "tokenizer.ggml.tokens";
const SCORES: &str = "tokenizer.ggml.scores";
const TYPES: &str = "tokenizer.ggml.token_type";

/// An error about the vocabulary.
#[cold]
pub(crate) fn bad(message: impl Into<String>) -> Error {
    Error::msg(ErrorCode::InvalidArgument, message.into())
}

/// Token texts in one buffer, their scores and attributes, and the index from text to id.
pub(crate) struct Vocab {
    text: Vec<u8>,
    /// `ends[i]` is where token `i`'s text ends in `text` (it starts where token `i - 1`'s ends).
    ends: Vec<usize>,
    pub scores: Vec<f32>,
    pub attrs: Vec<u32>,
    index: NameIndex,
    /// Bytes cut from the end of each token's text once loaded (empty: none), as llama.cpp's
    /// `hybriddna` loader cuts its marker from the texts but not from the lookup by text.
    cut: Vec<u8>,
}

impl Vocab {
    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Token `id`'s text (the caller keeps `id` in range).
    #[inline]
    pub fn text(&self, id: usize) -> &[u8] {
        let t = self.key(id);
        let cut = self.cut.get(id).map_or(0, |&c| usize::from(c));
        &t[..t.len() - cut]
    }

    /// Token `id`'s text as the file gives it, which [`Vocab::find`] looks up.
    #[inline]
    fn key(&self, id: usize) -> &[u8] {
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        &self.text[start..self.ends[id]]
    }

    /// Cuts `suffix` from the text of every token after `first` that ends with it and is
    /// longer; [`Vocab::find`] still finds them by their whole text.
    pub fn cut_suffix_after(&mut self, first: usize, suffix: &[u8]) {
        let Ok(len) = u8::try_from(suffix.len()) else {
            return;
        };
        self.cut = vec![0; self.len()];
        for id in first.saturating_add(1)..self.len() {
            let t = self.key(id);
            if t.len() > suffix.len() && t.ends_with(suffix) {
                self.cut[id] = len;
            }
        }
    }

    /// The id of the token whose text is `s`.
    #[inline]
    pub fn find(&self, s: &[u8]) -> Option<u32> {
        let id = self.index.find(s, |i| self.key(i))?;
        // The vocabulary holds fewer than 2^31 tokens.
        u32::try_from(id).ok()
    }

    /// The id of byte `b`'s token in SentencePiece's spelling, `<0xHH>` (upper-case hex).
    #[inline]
    pub fn find_byte(&self, b: u8) -> Option<u32> {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.find(&[
            b'<',
            b'0',
            b'x',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
            b'>',
        ])
    }

    /// The attribute bits of `id` (0 past the end).
    #[inline]
    pub fn attr(&self, id: u32) -> u32 {
        self.attrs.get(id as usize).copied().unwrap_or(0)
    }

    /// Reads and checks the vocabulary of `file`.
    pub fn load<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Result<Vocab> {
        let tokens = array(file, TOKENS)?
            .ok_or_else(|| bad("the file has no vocabulary (key tokenizer.ggml.tokens)"))?;
        if tokens.elem_type() != ValueType::String {
            return Err(wrong_type("tokenizer.ggml.tokens", "an array of strings"));
        }
        let n = tokens.len();
        if n == 0 {
            return Err(bad("the vocabulary tokenizer.ggml.tokens is empty"));
        }
        if n > MAX_TOKENS {
            return Err(bad(format!(
                "the vocabulary holds {n} tokens, more than the {MAX_TOKENS} token ids can name"
            )));
        }
        let n_usize =
            usize::try_from(n).map_err(|_| bad("the vocabulary does not fit in memory"))?;

        let mut text = Vec::with_capacity(tokens.raw_bytes().len());
        let mut ends = Vec::with_capacity(n_usize);
        let strings = tokens
            .strings()
            .ok_or_else(|| wrong_type("tokenizer.ggml.tokens", "an array of strings"))?;
        for (i, word) in strings.enumerate() {
            if word.len() > MAX_TOKEN_LEN {
                return Err(bad(format!(
                    "token {i} is {} bytes long, more than the {MAX_TOKEN_LEN} a token may have",
                    word.len()
                ))
                .with_offset(element_offset(file, TOKENS, i as u64)));
            }
            if word.is_empty() {
                // llama.cpp names an empty token after its id.
                text.extend_from_slice(format!("[EMPTY_{i}]").as_bytes());
            } else {
                text.extend_from_slice(word);
            }
            ends.push(text.len());
        }
        if ends.len() != n_usize {
            return Err(Error::msg(
                ErrorCode::Internal,
                "the vocabulary's strings ended early",
            ));
        }

        let scores = match array(file, SCORES)? {
            None => vec![0.0; n_usize],
            Some(a) => {
                let mut s: Vec<f32> = match a.elem_type() {
                    ValueType::Float32 => a.to_vec::<f32>().unwrap_or_default(),
                    ValueType::Int32 => a
                        .to_vec::<i32>()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|v| v as f32)
                        .collect(),
                    _ => {
                        return Err(wrong_type(
                            "tokenizer.ggml.scores",
                            "an array of FLOAT32 or INT32",
                        ))
                    }
                };
                if s.len() < n_usize {
                    return Err(bad(format!(
                        "tokenizer.ggml.scores has {} scores for {n} tokens",
                        s.len()
                    ))
                    .with_offset(value_offset(file, SCORES)));
                }
                s.truncate(n_usize);
                if let Some(i) = s.iter().position(|v| v.is_nan()) {
                    return Err(bad(format!("the score of token {i} is NaN"))
                        .with_offset(element_offset(file, SCORES, i as u64)));
                }
                s
            }
        };

        let mut attrs = vec![attr::NORMAL; n_usize];
        if let Some(a) = array(file, TYPES)? {
            let types = a
                .to_vec::<i32>()
                .ok_or_else(|| wrong_type("tokenizer.ggml.token_type", "an array of INT32"))?;
            if types.len() < n_usize {
                return Err(bad(format!(
                    "tokenizer.ggml.token_type has {} types for {n} tokens",
                    types.len()
                ))
                .with_offset(value_offset(file, TYPES)));
            }
            for (i, (&t, a)) in types.iter().zip(attrs.iter_mut()).enumerate() {
                *a = match t {
                    0 => 0,
                    1 => attr::NORMAL,
                    2 => attr::UNKNOWN,
                    3 => attr::CONTROL,
                    4 => attr::USER_DEFINED,
                    5 => attr::UNUSED,
                    6 => attr::BYTE,
                    _ => {
                        return Err(bad(format!(
                            "token {i} has type {t}, expected 0 to 6 (tokenizer.ggml.token_type)"
                        ))
                        .with_offset(element_offset(file, TYPES, i as u64)))
                    }
                };
            }
        }

        let index = {
            let name_of = |i: usize| {
                let start = if i == 0 { 0 } else { ends[i - 1] };
                &text[start..ends[i]]
            };
            NameIndex::build(n_usize, name_of).map_err(|(a, b)| {
                bad(format!("tokens {a} and {b} are both {}", quote(name_of(b))))
                    .with_offset(element_offset(file, TOKENS, b as u64))
            })?
        };

        Ok(Vocab {
            text,
            ends,
            scores,
            attrs,
            index,
            cut: Vec::new(),
        })
    }
}

/// Where element `i` of the array at `key` starts in `file` (a string's length field); `None`
/// when there is no such element (or it is in a nested array).
pub(crate) fn element_offset<S: AsRef<[u8]>>(file: &GgufFile<S>, key: &str, i: u64) -> Option<u64> {
    let record = file.kv_records().get(file.metadata_index(key)?)?;
    let RawValue::Array { elem, len, data } = record.value else {
        return None;
    };
    if i >= len {
        return None;
    }
    let within = if let Some(size) = elem.fixed_size() {
        usize::try_from(i).ok()?.checked_mul(size)?
    } else if elem == ValueType::String {
        // Only on an error: the strings before it are walked to find it.
        let layout = file.layout();
        let mut r = ByteReader::new(data.of(file.bytes()), 0, layout);
        for _ in 0..i {
            r.string("string element").ok()?;
        }
        let s = r.string("string element").ok()?;
        s.start.checked_sub(layout.len_size())?
    } else {
        return None;
    };
    u64::try_from(data.start.checked_add(within)?).ok()
}

/// Where the value of `key` starts in `file` (past its type field).
pub(crate) fn value_offset<S: AsRef<[u8]>>(file: &GgufFile<S>, key: &str) -> Option<u64> {
    let record = file.kv_records().get(file.metadata_index(key)?)?;
    let end = record
        .key
        .start
        .checked_add(record.key.len)?
        .checked_add(4)?;
    u64::try_from(end).ok()
}

/// The error for a key of the wrong type.
#[cold]
pub(crate) fn wrong_type(key: &str, expected: &str) -> Error {
    Error::msg(ErrorCode::WrongType, format!("{key} is not {expected}"))
}

/// The array at `key`, if the key is present (an error if it is not an array).
pub(crate) fn array<'a, S: AsRef<[u8]>>(
    file: &'a GgufFile<S>,
    key: &str,
) -> Result<Option<crate::value::Array<'a>>> {
    match file.get(key) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(wrong_type(key, "an array")),
    }
}

/// The string at `key`, if present.
pub(crate) fn string<'a, S: AsRef<[u8]>>(
    file: &'a GgufFile<S>,
    key: &str,
) -> Result<Option<&'a [u8]>> {
    match file.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(wrong_type(key, "a string")),
    }
}

/// The boolean at `key`, if present.
pub(crate) fn boolean<S: AsRef<[u8]>>(file: &GgufFile<S>, key: &str) -> Result<Option<bool>> {
    match file.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(wrong_type(key, "a BOOL")),
    }
}

/// The unsigned integer at `key`, if present (any integer type; negative values are errors).
pub(crate) fn unsigned<S: AsRef<[u8]>>(file: &GgufFile<S>, key: &str) -> Result<Option<u64>> {
    match file.get(key) {
        None => Ok(None),
        Some(v) => {
            if let Some(u) = v.as_u64() {
                Ok(Some(u))
            } else if let Some(i) = v.as_i64() {
                u64::try_from(i)
                    .map(Some)
                    .map_err(|_| bad(format!("{key} is negative ({i})")))
            } else {
                Err(wrong_type(key, "an integer"))
            }
        }
    }
}
