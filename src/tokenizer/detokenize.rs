//! Tokens back to text: each token's piece (computed once, at load, as llama.cpp's
//! `token_to_piece` with `special` set), and `llama_detokenize`'s joining and space cleaning.

use super::model::Tokenizer;
use super::rwkv::unescape_rwkv;
use super::space::unescape_whitespace;
use super::types::{bad_token, VocabType};
use super::unicode;
use super::vocab::{attr, bad, Vocab};
use crate::error::Result;
use crate::text::quote;

/// C's `strtol(s, NULL, 16)` of the (at most two) characters after `<0x` in a byte token's
/// text, as a byte (llama.cpp's `token_to_byte`).
pub(crate) fn token_byte(text: &[u8]) -> u8 {
    let s = text.get(3..text.len().min(5)).unwrap_or(&[]);
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    if i + 2 < s.len() + 1 && s.get(i) == Some(&b'0') && matches!(s.get(i + 1), Some(b'x' | b'X')) {
        // "0x" followed by a hex digit is a prefix; otherwise the 0 alone is the number.
        if s.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            i += 2;
        }
    }
    let mut v: u32 = 0;
    while let Some(d) = s.get(i).and_then(|&c| char::from(c).to_digit(16)) {
        v = v * 16 + d;
        i += 1;
    }
    let v = if negative { v.wrapping_neg() } else { v };
    v.to_le_bytes()[0]
}

/// The most bytes all pieces together may take: the larger of this and [`PIECES_PER_BYTE`]
/// times the token texts. A byte-level BPE token's piece repeats its whole text for each code
/// point outside GPT-2's alphabet (as llama.cpp writes it), so a vocabulary of a few hundred
/// kilobytes could otherwise ask for gigabytes.
pub(crate) const PIECES_FLOOR: usize = 64 << 20;
/// See [`PIECES_FLOOR`].
pub(crate) const PIECES_PER_BYTE: usize = 8;

/// Every token's piece into one buffer; returns the buffer and each piece's end. `token_at`
/// gives the byte offset of a token's text in the file, for the errors.
pub(crate) fn pieces(
    vocab: &Vocab,
    kind: VocabType,
    escape_whitespaces: bool,
    token_at: &dyn Fn(usize) -> Option<u64>,
) -> Result<(Vec<u8>, Vec<usize>)> {
    let text_bytes = (0..vocab.len())
        .map(|id| vocab.text(id).len())
        .sum::<usize>();
    let limit = text_bytes.saturating_mul(PIECES_PER_BYTE).max(PIECES_FLOOR);
    let mut buf = Vec::with_capacity(vocab.len() * 6);
    let mut ends = Vec::with_capacity(vocab.len());
    for id in 0..vocab.len() {
        let text = vocab.text(id);
        let a = vocab.attrs[id];
        let special = attr::UNKNOWN | attr::CONTROL | attr::USER_DEFINED;
        let byte_needs_name = |text: &[u8]| {
            if text.len() < 3 {
                Err(bad(format!(
                    "byte token {id} is {}, expected <0xXX>",
                    quote(text)
                ))
                .with_offset(token_at(id)))
            } else {
                Ok(token_byte(text))
            }
        };
        match kind {
            VocabType::Spm | VocabType::Wpm | VocabType::Ugm | VocabType::Bpe => {
                if a & special != 0 {
                    buf.extend_from_slice(text);
                } else if a & attr::NORMAL != 0 {
                    if kind == VocabType::Bpe && !escape_whitespaces {
                        let (len, unknown) = decoded_bpe_len(text);
                        if len > limit.saturating_sub(buf.len()) as u64 {
                            return Err(bad(format!(
                                "token {id}'s piece would be {len} bytes (llama.cpp repeats its \
                                 {}-byte text for each of its {unknown} code points outside \
                                 GPT-2's byte alphabet): the pieces would pass {limit} bytes, \
                                 the most this vocabulary's {text_bytes} bytes of text may make",
                                text.len()
                            ))
                            .with_offset(token_at(id)));
                        }
                        decode_bpe_text(text, &mut buf);
                    } else {
                        unescape_whitespace(text, &mut buf);
                    }
                } else if a & attr::BYTE != 0 {
                    if kind == VocabType::Wpm {
                        return Err(bad(format!(
                            "token {id} is a byte token, which a WordPiece vocabulary cannot have"
                        ))
                        .with_offset(token_at(id)));
                    }
                    buf.push(byte_needs_name(text)?);
                }
            }
            VocabType::Rwkv => unescape_rwkv(text, &mut buf),
            VocabType::Plamo2 => {
                let hex = |c: u8| char::from(c).to_digit(16);
                if a & attr::BYTE != 0
                    && text.len() == 6
                    && text.starts_with(b"<0x")
                    && text[5] == b'>'
                    && hex(text[3]).is_some()
                    && hex(text[4]).is_some()
                {
                    buf.push(token_byte(text));
                } else {
                    buf.extend_from_slice(text);
                }
            }
        }
        ends.push(buf.len());
    }
    Ok((buf, ends))
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

/// `llama_detokenize`.
pub(crate) fn detokenize(
    tok: &Tokenizer,
    mut tokens: &[i32],
    remove_special: bool,
    unparse_special: bool,
) -> Result<Vec<u8>> {
    let n = tok.vocab.len();
    if let Some(&bad) = tokens
        .iter()
        .find(|&&t| usize::try_from(t).map_or(true, |i| i >= n))
    {
        return Err(bad_token(bad, n));
    }
    let mut remove_space = tok.flags.add_space_prefix;
    if remove_special && tok.flags.add_bos {
        if let (Some(&first), Some(bos)) = (tokens.first(), tok.special.bos) {
            if first == bos {
                remove_space = false;
                tokens = &tokens[1..];
            }
        }
    }
    if remove_special && tok.flags.add_eos {
        if let (Some(&last), Some(eos)) = (tokens.last(), tok.special.eos) {
            if last == eos {
                tokens = &tokens[..tokens.len() - 1];
            }
        }
    }
    let mut text = Vec::with_capacity(tokens.len() * 4);
    for &t in tokens {
        let piece = tok
            .token_to_piece(t, u32::from(remove_space), unparse_special)
            .unwrap_or_default();
        text.extend_from_slice(piece);
        remove_space = false;
    }
    if tok.flags.clean_spaces {
        clean_spaces(&mut text);
    }
    Ok(text)
}

/// llama.cpp's three passes of `clean_up_tokenization_spaces`: no space before `?!.,`, none
/// around a lone apostrophe, none before `'s`, `'m`, `'re`, `'ve`.
fn clean_spaces(text: &mut Vec<u8>) {
    // First pass: " ?", " !", " .", " ,".
    let n = text.len();
    let mut total = usize::from(n > 0);
    for i in 1..n {
        let x = text[i];
        if text[i - 1] == b' ' && matches!(x, b'?' | b'!' | b'.' | b',') {
            total -= 1;
        }
        text[total] = x;
        total += 1;
    }
    // Second pass: " ' " loses both spaces.
    let n = total;
    total = usize::from(n > 0);
    let mut i = 1;
    while i < n {
        let x = text[i];
        if x == b'\'' && i + 1 < n && text[i - 1] == b' ' && text[i + 1] == b' ' {
            total -= 1;
            text[i + 1] = 0;
            text[total] = x;
            total += 1;
            // The next space is skipped (llama.cpp zeroes it and steps over it).
            i += 2;
            continue;
        }
        text[total] = x;
        total += 1;
        i += 1;
    }
    // Third pass: " 's", " 'm", " 're", " 've".
    let n = total;
    total = usize::from(n > 0);
    for i in 1..n {
        let x = text[i];
        if text[i - 1] == b' ' && x == b'\'' && i + 1 < n {
            let x1 = text[i + 1];
            if x1 == b't' || x1 == b'd' {
            } else if x1 == b's' || x1 == b'm' {
                total -= 1;
            } else if i + 2 < n {
                let x2 = text[i + 2];
                if x2 == b'e' && (x1 == b'r' || x1 == b'v') {
                    total -= 1;
                }
            }
        }
        text[total] = x;
        total += 1;
    }
    text.truncate(total);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> String {
        let mut v = s.as_bytes().to_vec();
        clean_spaces(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn spaces_are_cleaned_as_llama_cpp_does() {
        assert_eq!(clean("Hello , world !"), "Hello, world!");
        assert_eq!(clean("it 's"), "it's");
        assert_eq!(clean("we 're here"), "we're here");
        assert_eq!(clean("don 't"), "don 't");
        assert_eq!(clean("a ' b"), "a'b");
        assert_eq!(clean(""), "");
        assert_eq!(clean(" ."), ".");
    }

    #[test]
    fn byte_tokens_read_as_strtol_does() {
        assert_eq!(token_byte(b"<0x0A>"), 0x0a);
        assert_eq!(token_byte(b"<0xFF>"), 0xff);
        assert_eq!(token_byte(b"<0xzz>"), 0);
        assert_eq!(token_byte(b"<0x"), 0);
    }
}
