//! WordPiece (`tokenizer.ggml.model` = `bert`), as llama.cpp's `llm_tokenizer_wpm`: the text
//! split into words at whitespace, punctuation, ASCII symbols and CJK ideographs (lower-cased
//! and stripped of accents as the normalizer options say), each word, after a U+2581, cut
//! greedily into the longest tokens; a word with an uncovered part is the unknown token.

use super::trie::Longest;
use super::types::Flags;
use super::unicode::{cpt_to_utf8, cpts_iter, flags, nfd_one, to_lower};
use super::vocab::{bad, Vocab};
use crate::error::Result;

/// llama.cpp's `is_chinese_char` (with its 0x2B920 where BERT has 0x2B820).
fn is_chinese_char(cp: u32) -> bool {
    matches!(cp,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// The words of `text`, as llama.cpp's `preprocess`, each given to `word` as it ends (its
/// bytes in `buf`, reused between words; no empty word).
fn words(
    text: &[u8],
    lowercase: bool,
    strip_accents: bool,
    buf: &mut Vec<u8>,
    mut word: impl FnMut(&[u8]),
) {
    buf.clear();
    let mut end = |buf: &mut Vec<u8>| {
        if !buf.is_empty() {
            word(buf);
            buf.clear();
        }
    };
    for cp in cpts_iter(text) {
        // ASCII is its own NFD form, and lower-cases by the ASCII rule in llama.cpp's table.
        let cp = if strip_accents && cp >= 0x80 {
            nfd_one(cp)
        } else {
            cp
        };
        let f = flags(cp);
        if f.is_whitespace {
            end(buf);
            continue;
        }
        if cp == 0 || cp == 0xFFFD || f.is_control {
            continue;
        }
        if strip_accents && f.is_accent_mark {
            continue;
        }
        let c = if !lowercase {
            cp
        } else if cp < 0x80 {
            u32::from(u8::try_from(cp).unwrap_or(0).to_ascii_lowercase())
        } else {
            to_lower(cp)
        };
        if f.is_punctuation || (cp < 0x7F && f.is_symbol) || is_chinese_char(cp) {
            end(buf);
            cpt_to_utf8(c, buf);
            end(buf);
        } else {
            cpt_to_utf8(c, buf);
        }
    }
    end(buf);
}

/// The WordPiece model: every token, for the longest match at each position.
pub(crate) struct Wpm {
    longest: Longest,
}

impl Wpm {
    /// The longest-match index of every token of `vocab` (texts are unique and not empty).
    pub fn load(vocab: &Vocab) -> Result<Wpm> {
        let ids = (0..vocab.len())
            .map(|i| u32::try_from(i).map_err(|_| bad("too many tokens")))
            .collect::<Result<Vec<u32>>>()?;
        let longest = Longest::new(ids, |i| vocab.text(i as usize))
            .ok_or_else(|| bad("the tokens' texts are too long"))?;
        Ok(Wpm { longest })
    }

    /// Appends the tokens of `text` to `out` (see [`tokenize`]).
    pub fn tokenize(&self, text: &[u8], flags: &Flags, unk: Option<i32>, out: &mut Vec<i32>) {
        tokenize(
            &self.longest,
            text,
            flags.lowercase,
            flags.strip_accents,
            unk,
            out,
        );
    }
}

/// Appends the tokens of `text` to `out`: each word, after a U+2581, cut into the longest
/// token at each position (llama.cpp tries every length from the longest token's down; the
/// index finds the same token in time linear in the word).
fn tokenize(
    longest: &Longest,
    text: &[u8],
    lowercase: bool,
    strip_accents: bool,
    unk: Option<i32>,
    out: &mut Vec<i32>,
) {
    let mut word1 = Vec::new();
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    words(text, lowercase, strip_accents, &mut buf, |word| {
        word1.clear();
        word1.extend_from_slice("\u{2581}".as_bytes());
        word1.extend_from_slice(word);
        let before = out.len();
        let mut covered = true;
        longest.cut(&word1, &mut scratch, |at, m| match m {
            Some((len, id)) => {
                out.push(id as i32);
                Some(at + len)
            }
            None => {
                covered = false;
                None
            }
        });
        if !covered {
            out.truncate(before);
        }
        if out.len() == before {
            // llama.cpp pushes its unknown id, -1 where the vocabulary has none; nothing here.
            out.extend(unk);
        }
    });
}
