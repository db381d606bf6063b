//! Kimi K2's hand-written splitter.

use super::llama3::llama3_tail;
use super::piece::{is_rn, Piece, Text, LETTER, NUMBER};
use crate::tokenizer::unicode::is_han;

/// llama.cpp's `unicode_regex_split_custom_kimi_k2` on the piece `ini..end`.
pub(super) fn kimi_k2(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    let letter = |p: &Piece, pos: usize| p.flags(pos) & LETTER != 0 && !is_han(p.cpt(pos));
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // [\p{Han}]+
        if is_han(cpt) {
            while is_han(p.cpt(pos)) {
                pos += 1;
            }
            p.add(pos);
            continue;
        }
        // Letter words without Han, with an optional leading code point and contraction.
        let leading = !(is_rn(cpt) || flags & (LETTER | NUMBER) != 0);
        if (flags & LETTER != 0 && !is_han(cpt)) || (leading && letter(&p, pos + 1)) {
            if leading {
                pos += 1;
            }
            let mut has_letters = false;
            while letter(&p, pos) {
                has_letters = true;
                pos += 1;
            }
            if has_letters || (!leading && letter(&p, pos)) {
                if !has_letters {
                    pos += 1;
                }
                while letter(&p, pos) {
                    pos += 1;
                }
                pos += p.contraction(pos, true);
                p.add(pos);
                continue;
            } else if leading {
                pos -= 1;
            }
        }
        // \p{N}{1,3}
        if flags & NUMBER != 0 {
            pos = p.digits(pos, 3);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, false, true);
        p.add(pos);
    }
}
