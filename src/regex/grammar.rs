//! The grammar of ECMAScript expressions as libstdc++'s `_Compiler` reads it, once for both
//! matchers: a disjunction of alternatives (`|`, the left one tried first), each a run of
//! terms; a term is an assertion (`^`, `$`, `\b`, `\B`, a lookahead `(?=...)` `(?!...)`, which
//! take no quantifier) or an atom (a character, `.`, an escape class, a bracket expression, a
//! back-reference, a group `(...)` or `(?:...)`, nested at most 256 deep) followed by its
//! quantifiers (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, each lazy when `?` follows). It reads
//! [`Tokens`] and hands each construct, in libstdc++'s order, to a [`Build`]: the byte
//! automaton's states, or the code-point matcher's tree.

use super::classes::Class;
use super::syntax::{Token, Tokens};
use crate::error::Result;

/// Most groups nested in one another.
const MAX_NESTING: u32 = 256;

/// An assertion that takes no quantifier and reads no unit.
#[derive(Clone, Copy)]
pub(crate) enum Assertion {
    LineBegin,
    LineEnd,
    WordBound { neg: bool },
}

/// A quantifier: `*`, `+`, `?`, or a count (`max` `None` for `{n,}`).
#[derive(Clone, Copy)]
pub(crate) enum Quantifier {
    Star,
    Plus,
    Opt,
    Count { min: u64, max: Option<u64> },
}

/// What an expression compiles to, construct by construct, in the order libstdc++ builds it.
pub(crate) trait Build {
    type Expr;
    /// What an open group keeps until it closes.
    type Group;
    fn assertion(&mut self, a: Assertion) -> Result<Self::Expr>;
    /// A lookahead, once its inside is read.
    fn lookahead(&mut self, neg: bool, inside: Self::Expr) -> Result<Self::Expr>;
    /// A unit matching `class` (`.` is [`Class::any`]).
    fn class(&mut self, class: Class) -> Result<Self::Expr>;
    /// The character `u`.
    fn unit(&mut self, u: u32) -> Result<Self::Expr>;
    /// Whether `\n`, the current token, may stand here (errors are told at `t`).
    fn backref_allowed(&mut self, t: &Tokens, n: u64) -> Result<()>;
    /// `\n`, once allowed.
    fn backref(&mut self, n: u64) -> Result<Self::Expr>;
    /// A group opens (`capture` for `(`, not for `(?:`).
    fn open_group(&mut self, capture: bool) -> Result<Self::Group>;
    fn close_group(&mut self, group: Self::Group, inside: Self::Expr) -> Result<Self::Expr>;
    /// An alternative's terms, in order (none for an empty one).
    fn sequence(&mut self, terms: Vec<Self::Expr>) -> Result<Self::Expr>;
    /// `left|right`; `first` where `left` is the disjunction's first alternative.
    fn or(&mut self, left: Self::Expr, right: Self::Expr, first: bool) -> Result<Self::Expr>;
    /// A count's minimum was read (libstdc++ starts the repetition's states here).
    fn count_begins(&mut self) -> Result<()>;
    /// `e` quantified (errors are told at `t`).
    fn repeat(
        &mut self,
        t: &Tokens,
        e: Self::Expr,
        q: Quantifier,
        lazy: bool,
    ) -> Result<Self::Expr>;
}

/// The reader of one expression's tokens into a [`Build`].
pub(crate) struct Grammar<'t, 'a, B> {
    pub(crate) t: &'t mut Tokens<'a>,
    pub(crate) b: &'t mut B,
    nesting: u32,
}

impl<'t, 'a, B: Build> Grammar<'t, 'a, B> {
    pub(crate) fn new(t: &'t mut Tokens<'a>, b: &'t mut B) -> Self {
        Grammar { t, b, nesting: 0 }
    }

    /// The whole expression: its disjunction, then the end of the tokens.
    pub(crate) fn expression(&mut self) -> Result<B::Expr> {
        let e = self.disjunction()?;
        if self.t.token != Token::Eof {
            return Err(self.t.error(match self.t.token {
                Token::GroupEnd => "unmatched ')'",
                Token::Closure0 | Token::Closure1 | Token::Opt | Token::IntervalBegin => {
                    "nothing to repeat"
                }
                _ => "unexpected character",
            }));
        }
        Ok(e)
    }

    fn disjunction(&mut self) -> Result<B::Expr> {
        let mut left = self.alternative()?;
        let mut first = true;
        while self.t.take(&Token::Or)? {
            let right = self.alternative()?;
            left = self.b.or(left, right, first)?;
            first = false;
        }
        Ok(left)
    }

    fn alternative(&mut self) -> Result<B::Expr> {
        let mut terms = Vec::new();
        while let Some(t) = self.term()? {
            terms.push(t);
        }
        self.b.sequence(terms)
    }

    fn term(&mut self) -> Result<Option<B::Expr>> {
        if let Some(a) = self.assertion()? {
            return Ok(Some(a));
        }
        let Some(mut atom) = self.atom()? else {
            return Ok(None);
        };
        while let Some(q) = self.quantifier()? {
            let lazy = self.t.take(&Token::Opt)?;
            atom = self.b.repeat(self.t, atom, q, lazy)?;
        }
        Ok(Some(atom))
    }

    /// A group's inside and its `)`.
    fn nested(&mut self) -> Result<B::Expr> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.t.error("groups nest more than 256 deep"));
        }
        let inner = self.disjunction()?;
        self.nesting -= 1;
        if !self.t.take(&Token::GroupEnd)? {
            return Err(self.t.error("')' expected"));
        }
        Ok(inner)
    }

    fn assertion(&mut self) -> Result<Option<B::Expr>> {
        let a = match self.t.token {
            Token::LineBegin => Assertion::LineBegin,
            Token::LineEnd => Assertion::LineEnd,
            Token::WordBound { neg } => Assertion::WordBound { neg },
            Token::LookaheadBegin { neg } => {
                self.t.advance()?;
                let inner = self.nested()?;
                return Ok(Some(self.b.lookahead(neg, inner)?));
            }
            _ => return Ok(None),
        };
        self.t.advance()?;
        Ok(Some(self.b.assertion(a)?))
    }

    /// The quantifier at the current token, read up to its lazy `?`.
    fn quantifier(&mut self) -> Result<Option<Quantifier>> {
        let q = match self.t.token {
            Token::Closure0 => Quantifier::Star,
            Token::Closure1 => Quantifier::Plus,
            Token::Opt => Quantifier::Opt,
            Token::IntervalBegin => {
                self.t.advance()?;
                let Token::Count(min) = self.t.token else {
                    return Err(self.t.error("a repetition count expected"));
                };
                self.t.advance()?;
                self.b.count_begins()?;
                let mut max = Some(min);
                if self.t.take(&Token::Comma)? {
                    if let Token::Count(m) = self.t.token {
                        self.t.advance()?;
                        if m < min {
                            return Err(self
                                .t
                                .error("a repetition's maximum is below its minimum"));
                        }
                        max = Some(m);
                    } else {
                        max = None;
                    }
                }
                if !self.t.take(&Token::IntervalEnd)? {
                    return Err(self.t.error("'}' expected"));
                }
                return Ok(Some(Quantifier::Count { min, max }));
            }
            _ => return Ok(None),
        };
        self.t.advance()?;
        Ok(Some(q))
    }

    fn atom(&mut self) -> Result<Option<B::Expr>> {
        let e = match self.t.token.clone() {
            Token::AnyChar => {
                self.t.advance()?;
                self.b.class(Class::any())?
            }
            Token::Ord(c) | Token::Hex(c) => {
                self.t.advance()?;
                self.b.unit(c)?
            }
            Token::Backref(n) => {
                self.b.backref_allowed(self.t, n)?;
                self.t.advance()?;
                self.b.backref(n)?
            }
            Token::QuotedClass(c) => {
                self.t.advance()?;
                self.b.class(Class::escape(c))?
            }
            Token::NoGroupBegin | Token::GroupBegin => {
                let capture = self.t.token == Token::GroupBegin;
                self.t.advance()?;
                let g = self.b.open_group(capture)?;
                let inner = self.nested()?;
                self.b.close_group(g, inner)?
            }
            Token::BracketBegin { neg } => {
                self.t.advance()?;
                let set = self.t.bracket(neg)?;
                self.b.class(set)?
            }
            _ => return Ok(None),
        };
        Ok(Some(e))
    }
}
