//! The assertions `^`, `$`, `\b` and `\B`, as libstdc++'s executor decides them, for both
//! matchers, over bytes or code points: `^` holds at the search's start only where no text is
//! taken to precede it (`match_prev_avail` unset), `$` at the end of the text, and a word
//! boundary where a word character ([`super::classes::is_word`]) is on one side only, the unit
//! before the search's start counted only with `match_prev_avail`.

use super::classes::is_word;

/// A unit of the text a matcher reads: a byte or a code point.
pub(crate) trait Unit: Copy {
    fn code(self) -> u32;
}

impl Unit for u8 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u32 {
    #[inline]
    fn code(self) -> u32 {
        self
    }
}

/// `^` at `pos`, for a search that started at `begin`.
#[inline]
pub(crate) fn line_begin(pos: usize, begin: usize, prev_avail: bool) -> bool {
    pos == begin && !prev_avail
}

/// `$` at `pos` in a text of `len` units.
#[inline]
pub(crate) fn line_end(pos: usize, len: usize) -> bool {
    pos == len
}

/// `\b` at `pos` (`\B` is its negation), for a search that started at `begin`.
#[inline]
pub(crate) fn word_boundary<U: Unit>(
    text: &[U],
    pos: usize,
    begin: usize,
    prev_avail: bool,
) -> bool {
    let left = (pos != begin || prev_avail) && pos > 0 && is_word(text[pos - 1].code());
    let right = text.get(pos).is_some_and(|&u| is_word(u.code()));
    left != right
}
