//! Code points as llama.cpp sees them: UTF-8 decoding, categories, lower case, NFD.
//!
//! Every function here gives what llama.cpp's function of the same purpose (`src/unicode.cpp`)
//! gives, including for input those functions treat in a surprising way (noted on each); the
//! tables are llama.cpp's own (`unicode_tables`, generated from its `unicode-data.cpp`), not the
//! Unicode version of the Rust standard library.

use super::unicode_tables::{
    FLAGS_BLOCKS, FLAGS_INDEX, FLAGS_SHIFT, FLAGS_VALUES, LOWERCASE, NFD_RANGES,
};

/// The code points llama.cpp's tables cover: `0..MAX_CODEPOINTS`. Above, every code point is
/// undefined.
pub const MAX_CODEPOINTS: u32 = 0x11_0000;

/// The code point llama.cpp substitutes for each byte it cannot decode.
pub const REPLACEMENT: u32 = 0xFFFD;

/// The properties of one code point, as llama.cpp's `unicode_cpt_flags`: one general category
/// (at most one of the first eight is set) and four helper flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Not assigned in llama.cpp's tables (also every code point from 0x110000 on).
    pub is_undefined: bool,
    /// `\p{N}`.
    pub is_number: bool,
    /// `\p{L}`.
    pub is_letter: bool,
    /// `\p{Z}`.
    pub is_separator: bool,
    /// `\p{M}`.
    pub is_accent_mark: bool,
    /// `\p{P}`.
    pub is_punctuation: bool,
    /// `\p{S}`.
    pub is_symbol: bool,
    /// `\p{C}`.
    pub is_control: bool,
    /// `\s` as llama.cpp's custom splitters see it (its `unicode_set_whitespace`).
    pub is_whitespace: bool,
    /// The lowercase form of some code point (a target of llama.cpp's lowercase map).
    pub is_lowercase: bool,
    /// The uppercase form of some code point (a target of llama.cpp's uppercase map).
    pub is_uppercase: bool,
    /// The first code point of some code point's NFD decomposition.
    pub is_nfd: bool,
}

impl Flags {
    /// Bit of [`Flags::is_undefined`] in [`Flags::bits`] (llama.cpp's `UNDEFINED`).
    pub const UNDEFINED: u16 = 0x0001;
    /// Bit of [`Flags::is_number`].
    pub const NUMBER: u16 = 0x0002;
    /// Bit of [`Flags::is_letter`].
    pub const LETTER: u16 = 0x0004;
    /// Bit of [`Flags::is_separator`].
    pub const SEPARATOR: u16 = 0x0008;
    /// Bit of [`Flags::is_accent_mark`].
    pub const ACCENT_MARK: u16 = 0x0010;
    /// Bit of [`Flags::is_punctuation`].
    pub const PUNCTUATION: u16 = 0x0020;
    /// Bit of [`Flags::is_symbol`].
    pub const SYMBOL: u16 = 0x0040;
    /// Bit of [`Flags::is_control`].
    pub const CONTROL: u16 = 0x0080;
    /// The category bits.
    pub const MASK_CATEGORIES: u16 = 0x00FF;
    /// Bit of [`Flags::is_whitespace`].
    pub const WHITESPACE: u16 = 0x0100;
    /// Bit of [`Flags::is_lowercase`].
    pub const LOWERCASE: u16 = 0x0200;
    /// Bit of [`Flags::is_uppercase`].
    pub const UPPERCASE: u16 = 0x0400;
    /// Bit of [`Flags::is_nfd`].
    pub const NFD: u16 = 0x0800;

    /// The flags whose bits (llama.cpp's values, the constants above) are `bits`.
    pub const fn from_bits(bits: u16) -> Flags {
        Flags {
            is_undefined: bits & Self::UNDEFINED != 0,
            is_number: bits & Self::NUMBER != 0,
            is_letter: bits & Self::LETTER != 0,
            is_separator: bits & Self::SEPARATOR != 0,
            is_accent_mark: bits & Self::ACCENT_MARK != 0,
            is_punctuation: bits & Self::PUNCTUATION != 0,
            is_symbol: bits & Self::SYMBOL != 0,
            is_control: bits & Self::CONTROL != 0,
            is_whitespace: bits & Self::WHITESPACE != 0,
            is_lowercase: bits & Self::LOWERCASE != 0,
            is_uppercase: bits & Self::UPPERCASE != 0,
            is_nfd: bits & Self::NFD != 0,
        }
    }

    /// The bits of these flags, as llama.cpp's `unicode_cpt_flags::as_uint`.
    pub const fn bits(self) -> u16 {
        let pairs = [
            (self.is_undefined, Self::UNDEFINED),
            (self.is_number, Self::NUMBER),
            (self.is_letter, Self::LETTER),
            (self.is_separator, Self::SEPARATOR),
            (self.is_accent_mark, Self::ACCENT_MARK),
            (self.is_punctuation, Self::PUNCTUATION),
            (self.is_symbol, Self::SYMBOL),
            (self.is_control, Self::CONTROL),
            (self.is_whitespace, Self::WHITESPACE),
            (self.is_lowercase, Self::LOWERCASE),
            (self.is_uppercase, Self::UPPERCASE),
            (self.is_nfd, Self::NFD),
        ];
        let mut bits = 0;
        let mut i = 0;
        while i < pairs.len() {
            if pairs[i].0 {
                bits |= pairs[i].1;
            }
            i += 1;
        }
        bits
    }

    /// The category bits alone (llama.cpp's `category_flag`).
    pub const fn category(self) -> u16 {
        self.bits() & Self::MASK_CATEGORIES
    }
}

/// The flags of `cp` as bits (llama.cpp's `unicode_cpt_flags_from_cpt(cp).as_uint()`): the
/// table lookup without building a [`Flags`].
#[inline]
pub fn flag_bits(cp: u32) -> u16 {
    if cp >= MAX_CODEPOINTS {
        return Flags::UNDEFINED;
    }
    let block = usize::from(FLAGS_INDEX[(cp >> FLAGS_SHIFT) as usize]);
    let within = (cp & ((1 << FLAGS_SHIFT) - 1)) as usize;
    FLAGS_VALUES[usize::from(FLAGS_BLOCKS[(block << FLAGS_SHIFT) | within])]
}

/// The flags of `cp`, as llama.cpp's `unicode_cpt_flags_from_cpt` (undefined from 0x110000 on).
#[inline]
pub fn flags(cp: u32) -> Flags {
    Flags::from_bits(flag_bits(cp))
}

/// The number of bytes of the UTF-8 sequence `first_byte` starts, as llama.cpp's
/// `unicode_len_utf8`: from its high four bits alone (1 for a continuation byte, 4 for
/// 0xF8..=0xFF).
#[inline]
pub const fn len_utf8(first_byte: u8) -> usize {
    const LOOKUP: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    LOOKUP[(first_byte >> 4) as usize] as usize
}

/// Decodes the code point at `text[*offset]` as llama.cpp's `unicode_cpt_from_utf8`, advancing
/// `offset`; `None` (offset unchanged) where llama.cpp throws. It checks only the lead byte's
/// length bits and that the continuation bytes are `10xxxxxx`: overlong forms, surrogates and
/// values up to 0x1FFFFF (lead bytes 0xF5..=0xF7) decode.
#[inline]
fn decode_one(text: &[u8], offset: &mut usize) -> Option<u32> {
    let at = *offset;
    let b0 = u32::from(text[at]);
    let cont = |i: usize| -> Option<u32> {
        let b = *text.get(at + i)?;
        (b & 0xC0 == 0x80).then_some(u32::from(b & 0x3F))
    };
    let (cp, len) = if b0 & 0x80 == 0 {
        (b0, 1)
    } else if b0 & 0x40 == 0 {
        return None;
    } else if b0 & 0x20 == 0 {
        ((b0 & 0x1F) << 6 | cont(1)?, 2)
    } else if b0 & 0x10 == 0 {
        ((b0 & 0x0F) << 12 | cont(1)? << 6 | cont(2)?, 3)
    } else if b0 & 0x08 == 0 {
        (
            (b0 & 0x07) << 18 | cont(1)? << 12 | cont(2)? << 6 | cont(3)?,
            4,
        )
    } else {
        return None;
    };
    *offset = at + len;
    Some(cp)
}

/// The code points of `text`, as llama.cpp's `unicode_cpts_from_utf8`: each byte that does not
/// start a sequence llama.cpp accepts (see [`decode_one`]: a stray continuation byte, 0xF8..=0xFF,
/// a lead byte whose continuation bytes are missing or wrong) yields U+FFFD and is skipped
/// alone, so decoding resumes at the next byte. Overlong forms, surrogates and lead bytes
/// 0xF5..=0xF7 decode to what their bits say (up to 0x1FFFFF).
pub fn cpts_from_utf8(text: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(text.len());
    let mut offset = 0;
    while offset < text.len() {
        if text[offset] < 0x80 {
            out.push(u32::from(text[offset]));
            offset += 1;
            continue;
        }
        match decode_one(text, &mut offset) {
            Some(cp) => out.push(cp),
            None => {
                out.push(REPLACEMENT);
                offset += 1;
            }
        }
    }
    out
}

/// The code points of `text` one at a time, as [`cpts_from_utf8`] gives them (no vector of
/// the whole text).
pub fn cpts_iter(text: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut offset = 0;
    std::iter::from_fn(move || {
        let &b = text.get(offset)?;
        if b < 0x80 {
            offset += 1;
            return Some(u32::from(b));
        }
        Some(decode_one(text, &mut offset).unwrap_or_else(|| {
            offset += 1;
            REPLACEMENT
        }))
    })
}

/// Appends the UTF-8 form of `cp` to `out`, as llama.cpp's `unicode_cpt_to_utf8` for every
/// `cp <= 0x10FFFF` (surrogates included). llama.cpp throws for larger values, which
/// [`cpts_from_utf8`] yields for lead bytes 0xF4..=0xF7; here they get the four-byte form of
/// their low 21 bits, the bytes they were decoded from.
#[inline]
pub fn cpt_to_utf8(cp: u32, out: &mut Vec<u8>) {
    // The `as u8` casts keep the low byte, masked first.
    if cp <= 0x7F {
        out.push((cp & 0x7F) as u8);
    } else if cp <= 0x7FF {
        out.extend_from_slice(&[0xC0 | (cp >> 6 & 0x1F) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp <= 0xFFFF {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12 & 0x0F) as u8,
            0x80 | (cp >> 6 & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18 & 0x07) as u8,
            0x80 | (cp >> 12 & 0x3F) as u8,
            0x80 | (cp >> 6 & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

/// The lowercase form of `cp` by llama.cpp's table (`unicode_tolower`); `cp` itself when it has
/// none.
pub fn to_lower(cp: u32) -> u32 {
    match LOWERCASE.binary_search_by_key(&cp, |&(from, _)| from) {
        Ok(i) => LOWERCASE[i].1,
        Err(_) => cp,
    }
}

/// Each code point replaced by the first code point of its NFD decomposition, as llama.cpp's
/// `unicode_cpts_normalize_nfd` (one code point in, one out: combining marks are not added).
pub fn nfd(cps: &[u32]) -> Vec<u32> {
    cps.iter().map(|&cp| nfd_one(cp)).collect()
}

/// The first code point of the NFD decomposition of `cp` (see [`nfd`]).
pub fn nfd_one(cp: u32) -> u32 {
    // The last range starting at or before `cp` (the table's first starts at 0).
    let i = NFD_RANGES.partition_point(|&(first, _, _)| first <= cp);
    match i.checked_sub(1).map(|i| NFD_RANGES[i]) {
        Some((first, last, to)) if first <= cp && cp <= last => to,
        _ => cp,
    }
}

/// True for the code points llama.cpp's `unicode_cpt_is_han` takes for Han (CJK ideographs:
/// the unified blocks and extensions A to F, and the compatibility blocks).
pub const fn is_han(cp: u32) -> bool {
    matches!(cp,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0x2CEB0..=0x2EBEF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// The code point GPT-2's byte-level encoding gives byte `b`: itself for the printable bytes
/// `!`..=`~`, `¡`..=`¬` and `®`..=`ÿ`, and 256, 257... in byte order for the others.
pub const fn byte_to_cpt(b: u8) -> u32 {
    BYTE_CPTS[b as usize]
}

const BYTE_CPTS: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    let mut b: u32 = 0;
    while b < 256 {
        table[b as usize] = if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE) {
            b
        } else {
            n += 1;
            255 + n
        };
        b += 1;
    }
    table
};

/// The UTF-8 of [`byte_to_cpt`] for each byte: two bytes at most (the code points are below
/// 0x800), then the length.
const BYTE_UTF8: [[u8; 3]; 256] = {
    let mut table = [[0u8; 3]; 256];
    let mut b = 0;
    while b < 256 {
        let cp = BYTE_CPTS[b];
        table[b] = if cp < 0x80 {
            [(cp & 0x7F) as u8, 0, 1]
        } else {
            [0xC0 | (cp >> 6 & 0x1F) as u8, 0x80 | (cp & 0x3F) as u8, 2]
        };
        b += 1;
    }
    table
};

/// The text GPT-2's byte-level encoding gives byte `b` (llama.cpp's `unicode_byte_to_utf8`):
/// the UTF-8 of [`byte_to_cpt`].
pub fn byte_to_utf8(b: u8) -> &'static str {
    // The table holds the UTF-8 of code points below 0x800, built above.
    std::str::from_utf8(byte_to_utf8_bytes(b)).unwrap_or_default()
}

/// The bytes of [`byte_to_utf8`] (without the UTF-8 check).
#[inline]
pub fn byte_to_utf8_bytes(b: u8) -> &'static [u8] {
    let entry = &BYTE_UTF8[usize::from(b)];
    &entry[..usize::from(entry[2])]
}

/// The byte whose GPT-2 byte-level text is `s` (llama.cpp's `unicode_utf8_to_byte`, which
/// throws where this gives `None`: for any text other than one of the 256 characters).
pub fn utf8_to_byte(s: &str) -> Option<u8> {
    let mut chars = s.chars();
    let c = u32::from(chars.next()?);
    if chars.next().is_some() {
        return None;
    }
    cpt_to_byte(c)
}

/// The byte whose GPT-2 byte-level code point is `cp` (the inverse of [`byte_to_cpt`]).
pub fn cpt_to_byte(cp: u32) -> Option<u8> {
    match cp {
        0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF => u8::try_from(cp).ok(),
        0x100..=0x143 => {
            let n = cp - 0x100;
            // The n-th byte (in order) that is not printable maps to 256 + n.
            (0u8..=255)
                .filter(|&b| BYTE_CPTS[usize::from(b)] >= 0x100)
                .nth(n as usize)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_lengths_follow_the_lead_byte() {
        assert_eq!(len_utf8(b'a'), 1);
        assert_eq!(len_utf8(0x80), 1);
        assert_eq!(len_utf8(0xC3), 2);
        assert_eq!(len_utf8(0xE2), 3);
        assert_eq!(len_utf8(0xF0), 4);
    }

    #[test]
    fn decoding_follows_llama_cpp_for_invalid_bytes() {
        // A stray continuation byte, a truncated sequence, 0xFF: one U+FFFD each, one byte
        // skipped each, so the ASCII after each survives.
        assert_eq!(cpts_from_utf8(b"a\x80b"), [0x61, REPLACEMENT, 0x62]);
        assert_eq!(
            cpts_from_utf8(b"\xE2\x82x"),
            [REPLACEMENT, REPLACEMENT, 0x78]
        );
        assert_eq!(cpts_from_utf8(b"\xFF\x00"), [REPLACEMENT, 0]);
        // Overlong, surrogate and past-0x10FFFF forms decode as their bits say.
        assert_eq!(cpts_from_utf8(b"\xC0\x80"), [0]);
        assert_eq!(cpts_from_utf8(b"\xED\xA0\x80"), [0xD800]);
        assert_eq!(cpts_from_utf8(b"\xF7\xBF\xBF\xBF"), [0x1F_FFFF]);
        assert_eq!(cpts_from_utf8("é€😀".as_bytes()), [0xE9, 0x20AC, 0x1F600]);
        // A four-byte lead at the very end: its missing bytes make it invalid.
        assert_eq!(cpts_from_utf8(b"\xF0\x9F\x98"), [REPLACEMENT; 3]);
    }

    #[test]
    fn encoding_round_trips() {
        for cp in (0..0x11_0000)
            .step_by(7)
            .chain([0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000])
        {
            let mut out = Vec::new();
            cpt_to_utf8(cp, &mut out);
            assert_eq!(out.len(), len_utf8(out[0]));
            assert_eq!(cpts_from_utf8(&out), [cp]);
        }
    }

    #[test]
    fn flags_of_a_few_code_points() {
        assert!(flags(u32::from(b'a')).is_letter && flags(u32::from(b'a')).is_lowercase);
        assert!(flags(u32::from(b'A')).is_uppercase);
        assert!(flags(u32::from(b'7')).is_number);
        assert!(flags(u32::from(b' ')).is_whitespace && flags(u32::from(b' ')).is_separator);
        assert!(flags(0x3000).is_whitespace);
        // llama.cpp's whitespace set leaves out 0x1C..=0x1F.
        assert!(!flags(0x1C).is_whitespace && flags(0x1C).is_control);
        assert!(flags(0x0301).is_accent_mark);
        assert!(flags(0x4E00).is_letter);
        assert!(flags(0x11_0000).is_undefined && flags(0xFFFF_FFFF).bits() == Flags::UNDEFINED);
        assert_eq!(Flags::from_bits(flag_bits(0x41)).bits(), flag_bits(0x41));
    }

    #[test]
    fn lower_case_and_nfd() {
        assert_eq!(to_lower(u32::from(b'A')), u32::from(b'a'));
        assert_eq!(to_lower(0x0130), 0x69); // İ
        assert_eq!(to_lower(0x4E00), 0x4E00);
        assert_eq!(nfd(&[0xC0, 0xE9, 0x41, 0x1E9B]), [0x41, 0x65, 0x41, 0x17F]);
    }

    #[test]
    fn byte_level_mapping() {
        assert_eq!(byte_to_utf8(b'a'), "a");
        assert_eq!(byte_to_utf8(b' '), "Ġ");
        assert_eq!(byte_to_utf8(b'\n'), "Ċ");
        assert_eq!(byte_to_utf8(0xAD), "\u{143}");
        for b in 0..=255u8 {
            assert_eq!(utf8_to_byte(byte_to_utf8(b)), Some(b));
        }
        assert_eq!(utf8_to_byte("ab"), None);
        assert_eq!(utf8_to_byte(""), None);
        assert_eq!(utf8_to_byte("\u{144}"), None);
    }

    #[test]
    fn han() {
        assert!(is_han(0x4E2D) && is_han(0x20000) && !is_han(0x3042) && !is_han(u32::from(b'a')));
    }
}
