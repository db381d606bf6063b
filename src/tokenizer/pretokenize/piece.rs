//! The text as the hand-written splitters read it: code points and their flag bits, one piece
//! at a time, with llama.cpp's accessors (a position outside the piece reads as
//! `OUT_OF_RANGE`) and its `_add_token`.

use crate::tokenizer::unicode::{to_lower, Flags};

/// The code points and their flag bits, as the hand-written splitters read them: outside the
/// piece `ini..end` a code point reads as `OUT_OF_RANGE` and its flags as 0.
pub(super) struct Text<'a> {
    pub(super) cpts: &'a [u32],
    pub(super) flags: &'a [u16],
}

pub(super) const OUT_OF_RANGE: u32 = 0xFFFF_FFFF;
pub(super) const WS: u16 = Flags::WHITESPACE;
pub(super) const LETTER: u16 = Flags::LETTER;
pub(super) const NUMBER: u16 = Flags::NUMBER;
pub(super) const MARK: u16 = Flags::ACCENT_MARK;

/// Positions within one piece, with llama.cpp's accessors and its `_add_token`.
pub(super) struct Piece<'a, 'b> {
    pub(super) text: &'a Text<'a>,
    pub(super) ini: usize,
    pub(super) end: usize,
    pub(super) prev_end: usize,
    pub(super) out: &'b mut Vec<usize>,
}

impl<'a, 'b> Piece<'a, 'b> {
    /// The piece `ini..end` of `text`, its words' lengths going to `out`.
    #[inline(always)]
    pub(super) fn new(text: &'a Text<'a>, ini: usize, end: usize, out: &'b mut Vec<usize>) -> Self {
        Piece {
            text,
            ini,
            end,
            prev_end: ini,
            out,
        }
    }

    #[inline]
    pub(super) fn cpt(&self, pos: usize) -> u32 {
        if self.ini <= pos && pos < self.end {
            self.text.cpts[pos]
        } else {
            OUT_OF_RANGE
        }
    }

    #[inline]
    pub(super) fn flags(&self, pos: usize) -> u16 {
        if self.ini <= pos && pos < self.end {
            self.text.flags[pos]
        } else {
            0
        }
    }

    /// Ends a word at `end` (none when empty); returns its length.
    #[inline]
    pub(super) fn add(&mut self, end: usize) -> usize {
        let len = end - self.prev_end;
        if len > 0 {
            self.out.push(len);
        }
        self.prev_end = end;
        len
    }

    /// `'s|'t|'re|'ve|'m|'ll|'d` at `pos` (lowercasing the letters when `fold`): the length.
    #[inline]
    pub(super) fn contraction(&self, pos: usize, fold: bool) -> usize {
        let low = |cp: u32| if fold { to_lower(cp) } else { cp };
        if self.cpt(pos) != u32::from(b'\'') || pos + 1 >= self.end {
            return 0;
        }
        let next = low(self.cpt(pos + 1));
        if [b's', b't', b'm', b'd']
            .iter()
            .any(|&c| next == u32::from(c))
        {
            return 2;
        }
        if pos + 2 < self.end {
            let next2 = low(self.cpt(pos + 2));
            let pair = |a: u8, b: u8| next == u32::from(a) && next2 == u32::from(b);
            if pair(b'r', b'e') || pair(b'v', b'e') || pair(b'l', b'l') {
                return 3;
            }
        }
        0
    }

    /// The whitespace run at `pos`: its length and the end of its last `\r` or `\n` (0: none).
    #[inline]
    pub(super) fn whitespace_run(&self, pos: usize) -> (usize, usize) {
        let mut n = 0;
        let mut last_rn = 0;
        while self.flags(pos + n) & WS != 0 {
            let cp = self.cpt(pos + n);
            if cp == u32::from(b'\r') || cp == u32::from(b'\n') {
                last_rn = pos + n + 1;
            }
            n += 1;
        }
        (n, last_rn)
    }

    /// The end of the run of code points from `pos` whose flags have a bit of `mask`.
    #[inline(always)]
    pub(super) fn run(&self, mut pos: usize, mask: u16) -> usize {
        while self.flags(pos) & mask != 0 {
            pos += 1;
        }
        pos
    }

    /// `\p{N}{1,max}` at `pos`, as often as it matches: each word of up to `max` digits ended;
    /// returns the end of the digits.
    #[inline(always)]
    pub(super) fn digits(&mut self, mut pos: usize, max: usize) -> usize {
        let mut first = pos;
        while self.flags(pos) & NUMBER != 0 {
            pos += 1;
            if pos - first >= max {
                self.add(pos);
                first = pos;
            }
        }
        self.add(pos);
        pos
    }

    /// The end of the last branches of llama.cpp's splitters at `pos`, where a whitespace run of
    /// `nws` code points starts: `\s+(?!\S)`, `\s+`, else one code point.
    #[inline(always)]
    pub(super) fn space_end(&self, pos: usize, nws: usize) -> usize {
        if nws > 1 && self.cpt(pos + nws) != OUT_OF_RANGE {
            pos + nws - 1
        } else if nws > 0 {
            pos + nws
        } else {
            pos + 1
        }
    }
}

pub(super) fn is_rn(cp: u32) -> bool {
    cp == u32::from(b'\r') || cp == u32::from(b'\n')
}

pub(super) const SPACE: u32 = b' ' as u32;
