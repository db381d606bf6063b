//! Qwen 3.5's hand-written splitter.

use super::llama3::llama3_tail;
use super::piece::{is_rn, Piece, Text, LETTER, MARK, NUMBER};

/// llama.cpp's `unicode_regex_split_custom_qwen35` on the piece `ini..end`.
pub(super) fn qwen35(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        let n = p.contraction(pos, true);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
        if !(is_rn(cpt) || flags & NUMBER != 0)
            && (flags & (LETTER | MARK) != 0 || p.flags(pos + 1) & (LETTER | MARK) != 0)
        {
            pos = p.run(pos + 1, LETTER | MARK);
            p.add(pos);
            continue;
        }
        // \p{N}
        if flags & NUMBER != 0 {
            pos += 1;
            p.add(pos);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, true, false);
        p.add(pos);
    }
}
