//! The "C" locale's classes both matchers share: `\\d`, `\\s` and `\\w` (and `\\b`'s word
//! characters) are ASCII only, as glibc's table has them.

/// `\\d`, `[[:digit:]]`: `0`-`9`.
#[inline]
pub(crate) fn is_digit(u: u32) -> bool {
    (0x30..=0x39).contains(&u)
}

/// `\\s`, `[[:space:]]`: space, tab, newline, vertical tab, form feed, carriage return.
#[inline]
pub(crate) fn is_space(u: u32) -> bool {
    (0x09..=0x0D).contains(&u) || u == 0x20
}

/// `\\w`: ASCII letters, digits and `_`.
#[inline]
pub(crate) fn is_word(u: u32) -> bool {
    matches!(u, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x5F)
}
