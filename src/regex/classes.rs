//! What one unit matches, for both matchers: the "C" locale's classes (`\d`, `\s` and `\w`,
//! and `\b`'s word characters, ASCII only as glibc's table has them; the POSIX names of
//! `[[:name:]]`), the characters the escapes name (`\n`, `\0`, ...), `.`, the collating names
//! of `[[.name.]]`, and [`Class`], the one set of units that a bracket expression, an escape
//! class or `.` compiles to, over bytes and over code points alike.

/// `\d`, `[[:digit:]]`: `0`-`9`.
#[inline]
pub(crate) fn is_digit(u: u32) -> bool {
    (0x30..=0x39).contains(&u)
}

/// `\s`, `[[:space:]]`: space, tab, newline, vertical tab, form feed, carriage return.
#[inline]
pub(crate) fn is_space(u: u32) -> bool {
    (0x09..=0x0D).contains(&u) || u == 0x20
}

/// `\w`: ASCII letters, digits and `_`.
#[inline]
pub(crate) fn is_word(u: u32) -> bool {
    matches!(u, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x5F)
}

/// Whether `u` is a byte for which `f` holds.
fn ascii(u: u32, f: fn(&u8) -> bool) -> bool {
    u8::try_from(u).is_ok_and(|c| f(&c))
}

/// The classes of the "C" locale (glibc's table), by name as `regex_traits::lookup_classname`
/// knows them (lower-cased first): `d`, `s` and `w` for the escapes `\d`, `\s` and `\w`.
pub(crate) fn named(name: &[u8]) -> Option<fn(u32) -> bool> {
    let name = name.to_ascii_lowercase();
    Some(match &name[..] {
        b"d" | b"digit" => is_digit,
        b"w" => is_word,
        b"s" | b"space" => is_space,
        b"alnum" => |u| ascii(u, u8::is_ascii_alphanumeric),
        b"alpha" => |u| ascii(u, u8::is_ascii_alphabetic),
        b"blank" => |u| u == 0x20 || u == 0x09,
        b"cntrl" => |u| u < 0x20 || u == 0x7f,
        b"graph" => |u| (0x21..=0x7e).contains(&u),
        b"lower" => |u| ascii(u, u8::is_ascii_lowercase),
        b"print" => |u| (0x20..=0x7e).contains(&u),
        b"punct" => |u| ascii(u, u8::is_ascii_punctuation),
        b"upper" => |u| ascii(u, u8::is_ascii_uppercase),
        b"xdigit" => |u| ascii(u, u8::is_ascii_hexdigit),
        _ => return None,
    })
}

/// The character an escape `\c` names, where it names one by its letter: `\0`, `\f`, `\n`,
/// `\r`, `\t`, `\v`, and `\b` (backspace) inside brackets, where it is no word boundary.
pub(crate) fn escaped(c: u8, in_bracket: bool) -> Option<u8> {
    Some(match c {
        b'0' => 0,
        b'b' if in_bracket => 8,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        _ => return None,
    })
}

/// `regex_traits::lookup_collatename`'s names, by the character each stands for.
const COLLATING_NAMES: [&str; 128] = [
    "NUL",
    "SOH",
    "STX",
    "ETX",
    "EOT",
    "ENQ",
    "ACK",
    "alert",
    "backspace",
    "tab",
    "newline",
    "vertical-tab",
    "form-feed",
    "carriage-return",
    "SO",
    "SI",
    "DLE",
    "DC1",
    "DC2",
    "DC3",
    "DC4",
    "NAK",
    "SYN",
    "ETB",
    "CAN",
    "EM",
    "SUB",
    "ESC",
    "IS4",
    "IS3",
    "IS2",
    "IS1",
    "space",
    "exclamation-mark",
    "quotation-mark",
    "number-sign",
    "dollar-sign",
    "percent-sign",
    "ampersand",
    "apostrophe",
    "left-parenthesis",
    "right-parenthesis",
    "asterisk",
    "plus-sign",
    "comma",
    "hyphen",
    "period",
    "slash",
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "colon",
    "semicolon",
    "less-than-sign",
    "equals-sign",
    "greater-than-sign",
    "question-mark",
    "commercial-at",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I",
    "J",
    "K",
    "L",
    "M",
    "N",
    "O",
    "P",
    "Q",
    "R",
    "S",
    "T",
    "U",
    "V",
    "W",
    "X",
    "Y",
    "Z",
    "left-square-bracket",
    "backslash",
    "right-square-bracket",
    "circumflex",
    "underscore",
    "grave-accent",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "i",
    "j",
    "k",
    "l",
    "m",
    "n",
    "o",
    "p",
    "q",
    "r",
    "s",
    "t",
    "u",
    "v",
    "w",
    "x",
    "y",
    "z",
    "left-curly-bracket",
    "vertical-line",
    "right-curly-bracket",
    "tilde",
    "DEL",
];

/// The character a collating name stands for (`[[.name.]]`).
pub(crate) fn collating(name: &[u8]) -> Option<u8> {
    COLLATING_NAMES
        .iter()
        .position(|n| n.as_bytes() == name)
        .and_then(|i| u8::try_from(i).ok())
}

/// A set of units: a bitmap below 256, ranges above, maybe negated, maybe intersected with
/// another set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Class {
    low: [u64; 4],
    high: Vec<(u32, u32)>,
    pub(crate) negated: bool,
    /// A class a unit must also be in (`(?=[a])[b]` becomes `b` and `a`).
    pub(crate) and: Option<Box<Class>>,
}

impl Class {
    /// The units `lo..=hi`, added.
    pub(crate) fn add_range(&mut self, lo: u32, hi: u32) {
        for u in lo..=hi.min(255) {
            self.low[(u >> 6) as usize] |= 1 << (u & 63);
        }
        if hi >= 256 {
            self.high.push((lo.max(256), hi));
        }
    }

    /// `\d`, `\s`, `\w` (`kind` lower-case) or their complements `\D`, `\S`, `\W`.
    pub(crate) fn escape(kind: u8) -> Class {
        let set = named(&[kind.to_ascii_lowercase()]).unwrap_or(|_| false);
        let negated = kind.is_ascii_uppercase();
        let mut c = Class::default();
        for u in 0..256u32 {
            if set(u) != negated {
                c.low[(u >> 6) as usize] |= 1 << (u & 63);
            }
        }
        if negated {
            c.high.push((256, u32::MAX));
        }
        c
    }

    /// The one unit `u`.
    pub(crate) fn single(u: u32) -> Class {
        let mut c = Class::default();
        c.add_range(u, u);
        c
    }

    /// `.`: any unit but newline and carriage return.
    pub(crate) fn any() -> Class {
        let mut c = Class::single(u32::from(b'\n'));
        c.add_range(u32::from(b'\r'), u32::from(b'\r'));
        c.negated = true;
        c
    }

    /// Whether `u` is in the set.
    #[inline]
    pub(crate) fn matches(&self, u: u32) -> bool {
        let inside = if u < 256 {
            self.low[(u >> 6) as usize] >> (u & 63) & 1 != 0
        } else {
            self.high.iter().any(|&(a, b)| a <= u && u <= b)
        };
        inside != self.negated && self.and.as_ref().is_none_or(|a| a.matches(u))
    }
}
