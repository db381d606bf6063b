//! GPT-2's hand-written splitter.

use super::piece::{Piece, Text, LETTER, NUMBER, SPACE, WS};

/// llama.cpp's `unicode_regex_split_custom_gpt2` on the piece `ini..end`.
pub(super) fn gpt2(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // 's|'t|'re|'ve|'m|'ll|'d
        let n = p.contraction(pos, false);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        let space = usize::from(cpt == SPACE);
        let mut f2 = if cpt == SPACE {
            p.flags(pos + 1)
        } else {
            flags
        };
        // <space>?\p{L}+, <space>?\p{N}+
        if let Some(class) = [LETTER, NUMBER].into_iter().find(|&c| f2 & c != 0) {
            pos = p.run(pos + space, class);
            p.add(pos);
            continue;
        }
        // <space>?[^\s\p{L}\p{N}]+
        if f2 & (WS | LETTER | NUMBER) == 0 && f2 != 0 {
            pos += space;
            while f2 & (WS | LETTER | NUMBER) == 0 && f2 != 0 {
                pos += 1;
                f2 = p.flags(pos);
            }
            p.add(pos);
            continue;
        }
        let (nws, _) = p.whitespace_run(pos);
        pos = p.space_end(pos, nws);
        p.add(pos);
    }
}
