//! Llama 3's and Qwen 2's hand-written splitter (one function: Qwen 2 groups digits one by one), and the tail the Llama 3 family shares.

use super::piece::{is_rn, Piece, Text, LETTER, MARK, NUMBER, SPACE, WS};

/// The end of the common tail of llama.cpp's Llama 3 family splitters at `pos` (after the
/// letter and number branches): ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with `\p{M}` also excluded when
/// `marks`), `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`, else one code point.
#[inline]
pub(super) fn llama3_tail(
    p: &Piece,
    pos: usize,
    cpt: u32,
    flags: u16,
    marks: bool,
    kimi: bool,
) -> usize {
    let word = if marks {
        LETTER | NUMBER | MARK
    } else {
        LETTER | NUMBER
    };
    let mut pos = pos;
    let mut f2 = if cpt == SPACE {
        p.flags(pos + 1)
    } else {
        flags
    };
    // llama.cpp's Llama 3, Qwen 2 and Qwen 3.5 splitters test the first code point's own flags
    // for being nonzero here; its Kimi K2 splitter tests f2.
    if f2 & (WS | word) == 0 && (if kimi { f2 } else { flags }) != 0 {
        pos += usize::from(cpt == SPACE);
        while f2 & (WS | word) == 0 && f2 != 0 {
            pos += 1;
            f2 = p.flags(pos);
        }
        while is_rn(p.cpt(pos)) {
            pos += 1;
        }
        return pos;
    }
    let (nws, last_rn) = p.whitespace_run(pos);
    if last_rn > 0 {
        return last_rn;
    }
    p.space_end(pos, nws)
}

/// llama.cpp's `unicode_regex_split_custom_llama3` (`max_digits` 3) and
/// `unicode_regex_split_custom_qwen2` (`max_digits` 1) on the piece `ini..end`.
pub(super) fn llama3(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>, max_digits: usize) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        let n = p.contraction(pos, true);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if !(is_rn(cpt) || flags & NUMBER != 0)
            && (flags & LETTER != 0 || p.flags(pos + 1) & LETTER != 0)
        {
            pos = p.run(pos + 1, LETTER);
            p.add(pos);
            continue;
        }
        // \p{N}{1,3} or \p{N}
        if flags & NUMBER != 0 {
            pos = p.digits(pos, max_digits);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, false, false);
        p.add(pos);
    }
}
