//! The syntax of ECMAScript expressions as libstdc++ reads it, once for both matchers: its
//! scanner (`_Scanner`: the tokens of the normal, bracket and brace modes, the escapes
//! `\d` `\w` `\s` `\b` `\B` `\xHH` `\uHHHH` `\cX` `\0` `\N`, `(?:` `(?=` `(?!`, counts up to
//! 2^31 - 1) over units, bytes or code points, and its bracket expressions
//! (`_M_insert_bracket_matcher`: ranges, POSIX classes `[[:name:]]`, collating elements and
//! equivalence classes by libstdc++'s names, escapes), compiled to a [`Class`]. The grammar
//! above the tokens (alternation, terms, quantifiers, groups, assertions) is read by each
//! matcher's compiler from these tokens.

use super::classes::{collating, escaped, named, Class};
use crate::error::{Error, ErrorCode, Result};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Token {
    Eof,
    Ord(u32),
    Hex(u32),
    Backref(u64),
    QuotedClass(u8),
    WordBound { neg: bool },
    LineBegin,
    LineEnd,
    AnyChar,
    Closure0,
    Closure1,
    Opt,
    Or,
    GroupBegin,
    NoGroupBegin,
    LookaheadBegin { neg: bool },
    GroupEnd,
    BracketBegin { neg: bool },
    BracketEnd,
    BracketDash,
    ClassName(Vec<u32>),
    Collating { equiv: bool, name: Vec<u32> },
    IntervalBegin,
    IntervalEnd,
    Comma,
    Count(u64),
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Normal,
    Bracket,
    Brace,
}

/// libstdc++'s `_Scanner` for ECMAScript, over units (bytes or code points).
struct Scanner<'a> {
    s: &'a [u32],
    at: usize,
    mode: Mode,
    /// Whether units are code points (`\uHHHH` whole, as `wchar_t` holds it) rather than bytes
    /// (cut to its low byte, as a `char` holds it).
    wide: bool,
    /// How errors name the expression: `"tensor-name pattern 'x'"`, or nothing.
    label: String,
}

impl Scanner<'_> {
    fn error(&self, what: &str) -> Error {
        let at = self.at.min(self.s.len()) + 1;
        Error::msg(
            ErrorCode::InvalidArgument,
            if self.label.is_empty() {
                format!("{what} at character {at}")
            } else {
                format!("{}: {what} at character {at}", self.label)
            },
        )
    }

    /// The next unit as the syntax reads it: itself below 256, else a byte that means nothing
    /// to the syntax (0xFF).
    fn peek(&self) -> Option<u8> {
        self.peek_unit().map(|u| u8::try_from(u).unwrap_or(0xFF))
    }

    fn peek_unit(&self) -> Option<u32> {
        self.s.get(self.at).copied()
    }

    fn digits(&mut self, first: u8) -> Result<u64> {
        let mut v = u64::from(first - b'0');
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            self.at += 1;
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                .filter(|&v| v <= i32::MAX as u64)
                .ok_or_else(|| {
                    self.error("a number above 2147483647 (std::regex would wrap it)")
                })?;
        }
        Ok(v)
    }

    fn next(&mut self) -> Result<Token> {
        let (Some(c), Some(u)) = (self.peek(), self.peek_unit()) else {
            return Ok(Token::Eof);
        };
        self.at += 1;
        match self.mode {
            Mode::Normal => self.normal(c, u),
            Mode::Bracket => self.bracket(c, u),
            Mode::Brace => self.brace(c),
        }
    }

    fn normal(&mut self, c: u8, u: u32) -> Result<Token> {
        Ok(match c {
            b'\\' => {
                if self.peek().is_none() {
                    return Err(self.error("a pattern ends in a backslash"));
                }
                self.escape()?
            }
            b'(' => {
                if self.peek() == Some(b'?') {
                    self.at += 1;
                    let t = match self.peek() {
                        Some(b':') => Token::NoGroupBegin,
                        Some(b'=') => Token::LookaheadBegin { neg: false },
                        Some(b'!') => Token::LookaheadBegin { neg: true },
                        _ => return Err(self.error("'(?' is not followed by ':', '=' or '!'")),
                    };
                    self.at += 1;
                    t
                } else {
                    Token::GroupBegin
                }
            }
            b')' => Token::GroupEnd,
            b'[' => {
                self.mode = Mode::Bracket;
                if self.peek() == Some(b'^') {
                    self.at += 1;
                    Token::BracketBegin { neg: true }
                } else {
                    Token::BracketBegin { neg: false }
                }
            }
            b'{' => {
                self.mode = Mode::Brace;
                Token::IntervalBegin
            }
            b'^' => Token::LineBegin,
            b'$' => Token::LineEnd,
            b'.' => Token::AnyChar,
            b'*' => Token::Closure0,
            b'+' => Token::Closure1,
            b'?' => Token::Opt,
            b'|' => Token::Or,
            _ => Token::Ord(u),
        })
    }

    fn bracket(&mut self, c: u8, u: u32) -> Result<Token> {
        Ok(match c {
            b'-' => Token::BracketDash,
            b'[' => match self.peek() {
                None => return Err(self.error("an incomplete '[[' in a bracket expression")),
                Some(d @ (b'.' | b':' | b'=')) => {
                    self.at += 1;
                    let start = self.at;
                    while self.peek().is_some_and(|c| c != d) {
                        self.at += 1;
                    }
                    let name = self.s[start..self.at].to_vec();
                    if self.peek() != Some(d) || self.s.get(self.at + 1) != Some(&u32::from(b']')) {
                        return Err(self.error("a class name in brackets is not closed"));
                    }
                    self.at += 2;
                    if d == b':' {
                        Token::ClassName(name)
                    } else {
                        Token::Collating {
                            equiv: d == b'=',
                            name,
                        }
                    }
                }
                Some(_) => Token::Ord(u32::from(b'[')),
            },
            b']' => {
                self.mode = Mode::Normal;
                Token::BracketEnd
            }
            b'\\' => {
                if self.peek().is_none() {
                    return Err(self.error("a pattern ends in a backslash"));
                }
                self.escape()?
            }
            _ => Token::Ord(u),
        })
    }

    fn brace(&mut self, c: u8) -> Result<Token> {
        Ok(match c {
            b'0'..=b'9' => Token::Count(self.digits(c)?),
            b',' => Token::Comma,
            b'}' => {
                self.mode = Mode::Normal;
                Token::IntervalEnd
            }
            _ => {
                self.at -= 1;
                return Err(self.error("a repetition count is not '{n}', '{n,}' or '{n,m}'"));
            }
        })
    }

    /// `_M_eat_escape_ecma`, after the backslash (a character follows).
    fn escape(&mut self) -> Result<Token> {
        let c = self.peek().unwrap_or(0);
        let u = self.peek_unit().unwrap_or(0);
        self.at += 1;
        if let Some(e) = escaped(c, self.mode == Mode::Bracket) {
            return Ok(Token::Ord(u32::from(e)));
        }
        Ok(match c {
            b'b' => Token::WordBound { neg: false },
            b'B' => Token::WordBound { neg: true },
            b'd' | b'D' | b's' | b'S' | b'w' | b'W' => Token::QuotedClass(c),
            b'c' => {
                let Some(n) = self.peek_unit() else {
                    return Err(self.error("'\\c' ends the pattern"));
                };
                self.at += 1;
                Token::Ord(n)
            }
            b'x' | b'u' => {
                let n = if c == b'x' { 2 } else { 4 };
                let mut v = 0u32;
                for _ in 0..n {
                    let d = self
                        .peek()
                        .and_then(|d| char::from(d).to_digit(16))
                        .ok_or_else(|| {
                            self.error(if n == 2 {
                                "'\\x' needs two hexadecimal digits"
                            } else {
                                "'\\u' needs four hexadecimal digits"
                            })
                        })?;
                    self.at += 1;
                    v = v * 16 + d;
                }
                // Stored in a `char` (its low byte) or a `wchar_t`.
                Token::Hex(if self.wide { v } else { v & 0xff })
            }
            b'1'..=b'9' => Token::Backref(self.digits(c)?),
            _ => Token::Ord(u),
        })
    }
}

/// A unit's low byte (the whole unit, over bytes).
fn low_byte(u: u32) -> u8 {
    u.to_le_bytes()[0]
}

/// A byte unit as a signed `char` compares it.
fn signed(u: u32) -> i8 {
    i8::from_le_bytes([low_byte(u)])
}

enum Last {
    None,
    Char(u32),
    Class,
}

/// The tokens of one expression, read one ahead.
pub(crate) struct Tokens<'a> {
    scanner: Scanner<'a>,
    /// The current token.
    pub(crate) token: Token,
}

impl<'a> Tokens<'a> {
    /// The tokens of `units` (code points where `wide`, else bytes); errors begin with `label`
    /// (`"tensor-name pattern 'x'"`) where it is not empty.
    pub(crate) fn new(units: &'a [u32], wide: bool, label: String) -> Result<Tokens<'a>> {
        let mut t = Tokens {
            scanner: Scanner {
                s: units,
                at: 0,
                mode: Mode::Normal,
                wide,
                label,
            },
            token: Token::Eof,
        };
        t.advance()?;
        Ok(t)
    }

    /// An error at the scanner's place.
    pub(crate) fn error(&self, what: &str) -> Error {
        self.scanner.error(what)
    }

    pub(crate) fn advance(&mut self) -> Result<()> {
        self.token = self.scanner.next()?;
        Ok(())
    }

    /// Takes the current token if it is `t`.
    pub(crate) fn take(&mut self, t: &Token) -> Result<bool> {
        if &self.token == t {
            self.advance()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Takes the current token if it is a character.
    pub(crate) fn try_char(&mut self) -> Result<Option<u32>> {
        match self.token {
            Token::Ord(c) | Token::Hex(c) => {
                self.advance()?;
                Ok(Some(c))
            }
            _ => Ok(None),
        }
    }

    /// A name in brackets as errors show it.
    fn shown(&self, name: &[u32]) -> String {
        if self.scanner.wide {
            name.iter().filter_map(|&u| char::from_u32(u)).collect()
        } else {
            let bytes: Vec<u8> = name.iter().map(|&u| low_byte(u)).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }

    /// `_M_insert_bracket_matcher`, after the `[` or `[^`: the set of units it matches.
    /// Over bytes ranges compare as signed bytes (`char` is signed on x86-64), over code
    /// points as code points.
    pub(crate) fn bracket(&mut self, neg: bool) -> Result<Class> {
        let mut chars = Class::default();
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut classes: Vec<fn(u32) -> bool> = Vec::new();
        let mut neg_classes: Vec<fn(u32) -> bool> = Vec::new();
        let mut equivs: Vec<u8> = Vec::new();
        let mut last = Last::None;
        let dash = u32::from(b'-');
        if let Some(c) = self.try_char()? {
            last = Last::Char(c);
        } else if self.take(&Token::BracketDash)? {
            last = Last::Char(dash);
        }
        let push_char = |last: &mut Last, chars: &mut Class, c: Option<u32>| {
            if let Last::Char(l) = *last {
                chars.add_range(l, l);
            }
            *last = match c {
                Some(c) => Last::Char(c),
                None => Last::Class,
            };
        };
        loop {
            if self.take(&Token::BracketEnd)? {
                break;
            }
            match self.token.clone() {
                Token::Collating { equiv, name } => {
                    let bytes: Vec<u8> = name
                        .iter()
                        .map(|&u| u8::try_from(u).unwrap_or(0xFF))
                        .collect();
                    let c = collating(&bytes).ok_or_else(|| {
                        self.error(&format!(
                            "'{}' is not a collating element's name",
                            self.shown(&name)
                        ))
                    })?;
                    self.advance()?;
                    if equiv {
                        // `transform_primary` in the "C" locale: the character lower-cased.
                        push_char(&mut last, &mut chars, None);
                        equivs.push(c.to_ascii_lowercase());
                    } else {
                        chars.add_range(u32::from(c), u32::from(c));
                        push_char(&mut last, &mut chars, Some(u32::from(c)));
                    }
                }
                Token::ClassName(name) => {
                    let bytes: Vec<u8> = name
                        .iter()
                        .map(|&u| u8::try_from(u).unwrap_or(0xFF))
                        .collect();
                    let f = named(&bytes).ok_or_else(|| {
                        self.error(&format!("'{}' is not a character class", self.shown(&name)))
                    })?;
                    self.advance()?;
                    push_char(&mut last, &mut chars, None);
                    classes.push(f);
                }
                Token::QuotedClass(c) => {
                    self.advance()?;
                    push_char(&mut last, &mut chars, None);
                    let f = named(&[c]).unwrap_or(|_| false);
                    if c.is_ascii_uppercase() {
                        neg_classes.push(f);
                    } else {
                        classes.push(f);
                    }
                }
                Token::BracketDash => {
                    self.advance()?;
                    if self.take(&Token::BracketEnd)? {
                        push_char(&mut last, &mut chars, Some(dash));
                        break;
                    }
                    match last {
                        Last::Class => return Err(self.error("a range starts with a class")),
                        Last::Char(lo) => {
                            let hi = if let Some(h) = self.try_char()? {
                                h
                            } else if self.take(&Token::BracketDash)? {
                                dash
                            } else {
                                return Err(self.error("a range has no end"));
                            };
                            let below = if self.scanner.wide {
                                hi < lo
                            } else {
                                signed(hi) < signed(lo)
                            };
                            if below {
                                return Err(self.error("a range's end is below its start"));
                            }
                            ranges.push((lo, hi));
                            last = Last::None;
                        }
                        Last::None => push_char(&mut last, &mut chars, Some(dash)),
                    }
                }
                _ => match self.try_char()? {
                    Some(c) => push_char(&mut last, &mut chars, Some(c)),
                    None => {
                        return Err(self
                            .error("an unexpected character or the end in a bracket expression"))
                    }
                },
            }
        }
        if let Last::Char(l) = last {
            chars.add_range(l, l);
        }
        let mut set = chars;
        if self.scanner.wide {
            for &(lo, hi) in &ranges {
                set.add_range(lo, hi);
            }
        }
        for u in 0..256u32 {
            let b = low_byte(u);
            let hit = (!self.scanner.wide
                && ranges
                    .iter()
                    .any(|&(lo, hi)| signed(lo) <= signed(u) && signed(u) <= signed(hi)))
                || classes.iter().any(|f| f(u))
                || equivs.contains(&b.to_ascii_lowercase())
                || neg_classes.iter().any(|f| !f(u));
            if hit {
                set.add_range(u, u);
            }
        }
        // The classes are ASCII: every unit above a byte is outside them.
        if !neg_classes.is_empty() {
            set.add_range(256, u32::MAX);
        }
        set.negated = neg;
        Ok(set)
    }
}
