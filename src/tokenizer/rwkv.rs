//! RWKV's tokenizer (`tokenizer.ggml.model` = `rwkv`), as llama.cpp's `llm_tokenizer_rwkv`:
//! tokens are escaped byte strings; the text is cut greedily into the longest token at each
//! position.

use super::trie::Longest;
use super::vocab::{bad, Vocab};
use crate::error::Result;

/// The longest-match index of the tokens' unescaped bytes.
pub(crate) struct Rwkv {
    longest: Longest,
}

impl Rwkv {
    pub fn load(vocab: &Vocab) -> Result<Rwkv> {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(vocab.len());
        for id in 0..vocab.len() {
            unescape_rwkv(vocab.text(id), &mut bytes);
            ends.push(bytes.len());
        }
        let text = |i: u32| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &bytes[start..ends[i]]
        };
        // Of tokens that unescape alike, llama.cpp's trie keeps the last; one that unescapes to
        // nothing is never matched.
        let mut ids: Vec<u32> = (0..vocab.len())
            .map(|i| u32::try_from(i).map_err(|_| bad("too many tokens")))
            .collect::<Result<_>>()?;
        ids.retain(|&i| !text(i).is_empty());
        ids.sort_unstable_by(|&a, &b| text(a).cmp(text(b)).then(b.cmp(&a)));
        ids.dedup_by(|a, b| text(*a) == text(*b));
        let longest =
            Longest::new(ids, text).ok_or_else(|| bad("the tokens' texts are too long"))?;
        Ok(Rwkv { longest })
    }

    /// Appends the tokens of `text`: the longest token at each position; a byte no token
    /// starts with is the unknown token (skipped where there is none). (llama.cpp pushes the
    /// unknown token when no token starts with the byte, and loops forever when some do but
    /// none ends within the text: one byte is skipped as unknown instead.)
    pub fn tokenize(&self, text: &[u8], unk: Option<i32>, out: &mut Vec<i32>) {
        let mut scratch = Vec::new();
        self.longest.cut(text, &mut scratch, |at, m| match m {
            Some((len, id)) => {
                out.push(id as i32);
                Some(at + len)
            }
            None => {
                out.extend(unk);
                Some(at + 1)
            }
        });
    }
}

/// RWKV's escaped token text (`\t`, `\n`, `\r`, `\xHH`, `\c`) as bytes, as llama.cpp's
/// `llama_unescape_rwkv_token` (whose hex digits are lower case; others read as it reads them).
pub(crate) fn unescape_rwkv(text: &[u8], out: &mut Vec<u8>) {
    let mut escaping = false;
    let mut hex_left = 0u8;
    let mut acc = 0u8;
    for &c in text {
        if hex_left != 0 {
            let v = if c >= b'a' {
                c.wrapping_sub(b'a').wrapping_add(10)
            } else {
                c.wrapping_sub(b'0')
            };
            acc = (acc << 4).wrapping_add(v);
            hex_left -= 1;
            if hex_left == 0 {
                out.push(acc);
                acc = 0;
            }
            continue;
        }
        if escaping {
            match c {
                b't' => out.push(b'\t'),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b'x' => hex_left = 2,
                _ => out.push(c),
            }
            escaping = false;
            continue;
        }
        if c == b'\\' {
            escaping = true;
            continue;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwkv_escapes_unescape() {
        let mut out = Vec::new();
        unescape_rwkv(br"a\n\x41\\", &mut out);
        assert_eq!(out, b"a\nA\\");
    }
}
