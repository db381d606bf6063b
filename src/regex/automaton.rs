//! Tensor-name patterns: the regular expressions llama-quantize's `--tensor-type PATTERN=TYPE`
//! takes, with exactly the meaning libstdc++'s `std::regex` (ECMAScript grammar, the "C"
//! locale, `char` signed as on x86-64) gives them under `std::regex_search`, the call
//! llama.cpp makes: the whole syntax (literals, `.`, bracket expressions with ranges, POSIX
//! classes `[[:digit:]]` and escapes, `\d` `\w` `\s` and their negations, `\xHH`, `\uHHHH`
//! (cut to its low byte, as libstdc++ stores it in a `char`), `\cX`, `\0`, groups, `(?:...)`,
//! collating elements and equivalence classes by libstdc++'s names (`[[.hyphen.]]`, `[[=a=]]`),
//! lookaheads `(?=...)` `(?!...)`, back-references `\N`, `^` `$` `\b` `\B`, the greedy and lazy
//! quantifiers `*` `+` `?` `{n}` `{n,}` `{n,m}`), compiled to the automaton libstdc++ builds
//! (states, clones of repeated expressions, its limit of 100,000 states) and run by its
//! depth-first search, step for step: the same quirks too (an empty repetition may run twice
//! at one position; captures set in a lookahead stay; an unset group's back-reference fails;
//! `^` at a lookahead's start when the search began at 0).
//!
//! Refused with a message naming the pattern and where: what `std::regex` refuses (its
//! `regex_error`s), and what it cannot be matched exactly here: counts above 2^31 - 1 (which
//! libstdc++ wraps), groups nested more than 256 deep. Matching is bounded: a search that takes more than
//! `MAX_STEPS` (2,000,000) steps, or holds more than `MAX_FRAMES` (200,000) frames on its stack, fails with an error naming
//! the pattern and the name (libstdc++ would run on, or overflow its stack).

use super::anchors::{line_begin, line_end, word_boundary};
use super::classes::Class;
use super::grammar::{Assertion, Build, Grammar, Quantifier};
use super::syntax::Tokens;
use crate::error::{Error, ErrorCode, Result};
use crate::text::quote;
use std::collections::HashMap;

/// libstdc++'s `_GLIBCXX_REGEX_STATE_LIMIT`: most states an automaton may have.
const MAX_STATES: usize = 100_000;
/// Most steps one search (one pattern, one name) may take.
const MAX_STEPS: u64 = 2_000_000;
/// Most frames the search's stack may hold (libstdc++ recurses: its depth).
const MAX_FRAMES: usize = 200_000;

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    nfa: Vec<State>,
    classes: Vec<Class>,
    groups: usize,
}

const NONE: usize = usize::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Alternative,
    Repeat {
        lazy: bool,
    },
    SubBegin(usize),
    SubEnd(usize),
    LineBegin,
    LineEnd,
    WordBound {
        neg: bool,
    },
    Lookahead {
        neg: bool,
    },
    /// A unit in the pattern's class `.0`.
    Match(usize),
    Backref(usize),
    Accept,
    Dummy,
}

impl Op {
    fn has_alt(self) -> bool {
        matches!(
            self,
            Op::Alternative | Op::Repeat { .. } | Op::Lookahead { .. }
        )
    }
}

#[derive(Clone, Copy, Debug)]
struct State {
    op: Op,
    next: usize,
    alt: usize,
}

fn too_big(source: &str, what: &str) -> Error {
    Error::msg(
        ErrorCode::InvalidArgument,
        format!("tensor-name pattern '{source}': {what}"),
    )
}

/// A run of states: where it starts and its last state (whose `next` is open).
#[derive(Clone, Copy)]
struct Seq {
    start: usize,
    end: usize,
}

/// libstdc++'s `_Compiler`: the same states, in the same way.
struct Compiler<'a> {
    source: &'a str,
    /// The first state of the count being read (see [`Build::count_begins`]).
    count: Option<Seq>,
    nfa: Vec<State>,
    classes: Vec<Class>,
    groups: usize,
    open: Vec<usize>,
}

impl Compiler<'_> {
    fn insert(&mut self, op: Op, next: usize, alt: usize) -> Result<usize> {
        if self.nfa.len() >= MAX_STATES {
            return Err(too_big(
                self.source,
                "it compiles to more than 100000 states (std::regex's limit: \
                 a repetition count too large, or too long a pattern)",
            ));
        }
        self.nfa.push(State { op, next, alt });
        Ok(self.nfa.len() - 1)
    }

    /// A state matching one unit of `class`.
    fn matcher(&mut self, class: Class) -> Result<Seq> {
        self.classes.push(class);
        self.single(Op::Match(self.classes.len() - 1))
    }

    fn single(&mut self, op: Op) -> Result<Seq> {
        let id = self.insert(op, NONE, NONE)?;
        Ok(Seq { start: id, end: id })
    }

    fn append(&mut self, seq: &mut Seq, id: usize) {
        self.nfa[seq.end].next = id;
        seq.end = id;
    }

    fn append_seq(&mut self, seq: &mut Seq, other: Seq) {
        self.nfa[seq.end].next = other.start;
        seq.end = other.end;
    }

    fn single_alt(&mut self, op: Op, alt: usize) -> Result<Seq> {
        let id = self.insert(op, NONE, alt)?;
        Ok(Seq { start: id, end: id })
    }

    /// `_StateSeq::_M_clone`: a copy of the states reachable from `seq`'s start (not past its
    /// end), with libstdc++'s order (and its copies of a state pushed twice).
    fn clone_seq(&mut self, seq: Seq) -> Result<Seq> {
        let mut map: HashMap<usize, usize> = HashMap::new();
        let mut stack = vec![seq.start];
        while let Some(u) = stack.pop() {
            let dup = self.nfa[u];
            let id = self.insert(dup.op, dup.next, dup.alt)?;
            map.insert(u, id);
            if dup.op.has_alt() && dup.alt != NONE && !map.contains_key(&dup.alt) {
                stack.push(dup.alt);
            }
            if u == seq.end {
                continue;
            }
            if dup.next != NONE && !map.contains_key(&dup.next) {
                stack.push(dup.next);
            }
        }
        for &v in map.values() {
            let s = self.nfa[v];
            let next = if s.next == NONE {
                NONE
            } else {
                map.get(&s.next).copied().unwrap_or(s.next)
            };
            let alt = if s.op.has_alt() && s.alt != NONE {
                map.get(&s.alt).copied().unwrap_or(s.alt)
            } else {
                s.alt
            };
            self.nfa[v].next = next;
            self.nfa[v].alt = alt;
        }
        Ok(Seq {
            start: map[&seq.start],
            end: map[&seq.end],
        })
    }
}

impl Build for Compiler<'_> {
    type Expr = Seq;
    /// The group's number where it captures, and its first state.
    type Group = (Option<usize>, Seq);

    fn assertion(&mut self, a: Assertion) -> Result<Seq> {
        self.single(match a {
            Assertion::LineBegin => Op::LineBegin,
            Assertion::LineEnd => Op::LineEnd,
            Assertion::WordBound { neg } => Op::WordBound { neg },
        })
    }

    fn lookahead(&mut self, neg: bool, mut inner: Seq) -> Result<Seq> {
        let accept = self.insert(Op::Accept, NONE, NONE)?;
        self.append(&mut inner, accept);
        self.single_alt(Op::Lookahead { neg }, inner.start)
    }

    fn class(&mut self, class: Class) -> Result<Seq> {
        self.matcher(class)
    }

    fn unit(&mut self, u: u32) -> Result<Seq> {
        self.matcher(Class::single(u))
    }

    fn backref_allowed(&mut self, t: &Tokens, n: u64) -> Result<()> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n >= self.groups {
            return Err(t.error(&format!(
                "a back-reference \\{n} to a group not opened before it"
            )));
        }
        if self.open.contains(&n) {
            return Err(t.error("a back-reference to a group still open"));
        }
        Ok(())
    }

    fn backref(&mut self, n: u64) -> Result<Seq> {
        self.single(Op::Backref(usize::try_from(n).unwrap_or(usize::MAX)))
    }

    fn open_group(&mut self, capture: bool) -> Result<(Option<usize>, Seq)> {
        if !capture {
            return Ok((None, self.single(Op::Dummy)?));
        }
        let id = self.groups;
        self.groups += 1;
        self.open.push(id);
        Ok((Some(id), self.single(Op::SubBegin(id))?))
    }

    fn close_group(&mut self, (id, mut r): (Option<usize>, Seq), inner: Seq) -> Result<Seq> {
        self.append_seq(&mut r, inner);
        if let Some(id) = id {
            let close = self.open.pop().unwrap_or(id);
            let end = self.insert(Op::SubEnd(close), NONE, NONE)?;
            self.append(&mut r, end);
        }
        Ok(r)
    }

    /// `_M_alternative`: its terms, then a dummy state (iteratively: libstdc++ recurses, the
    /// states come out the same).
    fn sequence(&mut self, terms: Vec<Seq>) -> Result<Seq> {
        let dummy = self.single(Op::Dummy)?;
        let mut iter = terms.into_iter();
        let Some(mut seq) = iter.next() else {
            return Ok(dummy);
        };
        for t in iter {
            self.append_seq(&mut seq, t);
        }
        self.append_seq(&mut seq, dummy);
        Ok(seq)
    }

    fn or(&mut self, mut alt1: Seq, mut alt2: Seq, _first: bool) -> Result<Seq> {
        let end = self.insert(Op::Dummy, NONE, NONE)?;
        self.append(&mut alt1, end);
        self.append(&mut alt2, end);
        let alt = self.insert(Op::Alternative, alt2.start, alt1.start)?;
        Ok(Seq { start: alt, end })
    }

    fn count_begins(&mut self) -> Result<()> {
        self.count = Some(self.single(Op::Dummy)?);
        Ok(())
    }

    fn repeat(&mut self, _t: &Tokens, mut e: Seq, q: Quantifier, lazy: bool) -> Result<Seq> {
        match q {
            Quantifier::Star => {
                let r = self.insert(Op::Repeat { lazy }, NONE, e.start)?;
                self.append(&mut e, r);
                Ok(Seq { start: r, end: r })
            }
            Quantifier::Plus => {
                let r = self.insert(Op::Repeat { lazy }, NONE, e.start)?;
                self.append(&mut e, r);
                Ok(e)
            }
            Quantifier::Opt => {
                let end = self.insert(Op::Dummy, NONE, NONE)?;
                let r = self.insert(Op::Repeat { lazy }, NONE, e.start)?;
                self.append(&mut e, end);
                let mut rs = Seq { start: r, end: r };
                self.append(&mut rs, end);
                Ok(rs)
            }
            Quantifier::Count { min, max } => {
                let r = e;
                let mut out = match self.count.take() {
                    Some(out) => out,
                    None => self.single(Op::Dummy)?,
                };
                for _ in 0..min {
                    let c = self.clone_seq(r)?;
                    self.append_seq(&mut out, c);
                }
                if let Some(max) = max {
                    let end = self.insert(Op::Dummy, NONE, NONE)?;
                    let mut repeats = Vec::new();
                    for _ in 0..max - min {
                        let tmp = self.clone_seq(r)?;
                        let alt = self.insert(Op::Repeat { lazy }, tmp.start, end)?;
                        repeats.push(alt);
                        self.append_seq(
                            &mut out,
                            Seq {
                                start: alt,
                                end: tmp.end,
                            },
                        );
                    }
                    self.append(&mut out, end);
                    for id in repeats {
                        let s = &mut self.nfa[id];
                        std::mem::swap(&mut s.next, &mut s.alt);
                    }
                } else {
                    let mut tmp = self.clone_seq(r)?;
                    let s = self.insert(Op::Repeat { lazy }, NONE, tmp.start)?;
                    self.append(&mut tmp, s);
                    self.append(&mut out, s);
                }
                Ok(out)
            }
        }
    }
}

/// A capture: libstdc++'s `sub_match` (`first` set where the group opens, `second` and
/// `matched` where it closes).
#[derive(Clone, Copy, Debug, Default)]
struct Cap {
    first: usize,
    second: usize,
    matched: bool,
}

/// What the executor's stack holds: the work still to do on this path (`Try`), the other
/// paths to take if it fails (`Alt`, `OnceMore`), what to undo when it does, and where a
/// lookahead's own search began (its executor's state, to go back to).
enum Frame {
    /// Run state `.0` here.
    Try(usize),
    /// When what is above fails: run state `.0` (an alternative's second branch, a greedy
    /// repetition's way out).
    Alt(usize),
    /// When what is above fails: the lazy repetition `.0` once more.
    OnceMore(usize),
    RestoreFirst(usize, usize),
    RestoreCap(usize, Cap),
    RestoreCur(usize),
    RestoreRep(usize, (usize, u32)),
    Look(Box<Look>),
}

/// A lookahead in progress: what its search started from.
struct Look {
    neg: bool,
    next: usize,
    begin: usize,
    cur: usize,
    caps: Vec<Cap>,
    reps: HashMap<usize, (usize, u32)>,
}

/// Why a search stopped.
enum Stop {
    Steps,
    Depth,
}

/// libstdc++'s depth-first executor (`_Executor<..., true>`) from `begin`, in prefix mode,
/// with its recursion kept on a stack of [`Frame`]s: whether it finds a match.
struct Exec<'a> {
    nfa: &'a [State],
    classes: &'a [Class],
    text: &'a [u8],
    begin: usize,
    prev_avail: bool,
    cur: usize,
    caps: Vec<Cap>,
    reps: HashMap<usize, (usize, u32)>,
    stack: Vec<Frame>,
    looks: usize,
    steps: &'a mut u64,
}

impl Exec<'_> {
    fn run(&mut self) -> std::result::Result<bool, Stop> {
        self.stack.push(Frame::Try(0));
        while let Some(frame) = self.stack.pop() {
            *self.steps += 1;
            if *self.steps > MAX_STEPS {
                return Err(Stop::Steps);
            }
            if self.stack.len() > MAX_FRAMES {
                return Err(Stop::Depth);
            }
            match frame {
                Frame::Try(i) | Frame::Alt(i) => {
                    if self.state(i) && self.accept() {
                        return Ok(true);
                    }
                }
                Frame::OnceMore(i) => self.once_more(i),
                Frame::RestoreFirst(k, first) => self.caps[k].first = first,
                Frame::RestoreCap(k, cap) => self.caps[k] = cap,
                Frame::RestoreCur(cur) => self.cur = cur,
                Frame::RestoreRep(i, rc) => {
                    self.reps.insert(i, rc);
                }
                Frame::Look(look) => {
                    // The lookahead's search failed.
                    let look = self.leave(look);
                    if look.neg {
                        self.stack.push(Frame::Try(look.next));
                    }
                }
            }
        }
        Ok(false)
    }

    /// Back to the executor a lookahead started from.
    fn leave(&mut self, mut look: Box<Look>) -> Box<Look> {
        self.looks -= 1;
        self.begin = look.begin;
        self.cur = look.cur;
        std::mem::swap(&mut self.caps, &mut look.caps);
        std::mem::swap(&mut self.reps, &mut look.reps);
        look
    }

    /// The accept state was reached: the whole search's match (true), or a lookahead's, whose
    /// captures are kept (`_M_lookahead`) before the path goes on (false).
    fn accept(&mut self) -> bool {
        if self.looks == 0 {
            return true;
        }
        let found = self.caps.clone();
        while let Some(frame) = self.stack.pop() {
            if let Frame::Look(look) = frame {
                let look = self.leave(look);
                for (c, w) in self.caps.iter_mut().zip(found) {
                    if w.matched {
                        *c = w;
                    }
                }
                if !look.neg {
                    self.stack.push(Frame::Try(look.next));
                }
                break;
            }
        }
        false
    }

    /// Runs state `i`: pushes what follows it on this path and the other paths; true for the
    /// accept state.
    fn state(&mut self, i: usize) -> bool {
        let Some(&s) = self.nfa.get(i) else {
            return false;
        };
        match s.op {
            Op::Repeat { lazy: false } => {
                self.stack.push(Frame::Alt(s.next));
                self.once_more(i);
            }
            Op::Repeat { lazy: true } => {
                self.stack.push(Frame::OnceMore(i));
                self.stack.push(Frame::Try(s.next));
            }
            Op::SubBegin(k) => {
                self.stack.push(Frame::RestoreFirst(k, self.caps[k].first));
                self.caps[k].first = self.cur;
                self.stack.push(Frame::Try(s.next));
            }
            Op::SubEnd(k) => {
                self.stack.push(Frame::RestoreCap(k, self.caps[k]));
                self.caps[k].second = self.cur;
                self.caps[k].matched = true;
                self.stack.push(Frame::Try(s.next));
            }
            Op::LineBegin => {
                if line_begin(self.cur, self.begin, self.prev_avail) {
                    self.stack.push(Frame::Try(s.next));
                }
            }
            Op::LineEnd => {
                if line_end(self.cur, self.text.len()) {
                    self.stack.push(Frame::Try(s.next));
                }
            }
            Op::WordBound { neg } => {
                if word_boundary(self.text, self.cur, self.begin, self.prev_avail) != neg {
                    self.stack.push(Frame::Try(s.next));
                }
            }
            Op::Lookahead { neg } => {
                // A new executor starting here: its own start, captures copied, no repeats.
                self.looks += 1;
                let look = Look {
                    neg,
                    next: s.next,
                    begin: self.begin,
                    cur: self.cur,
                    caps: self.caps.clone(),
                    reps: std::mem::take(&mut self.reps),
                };
                self.begin = self.cur;
                self.stack.push(Frame::Look(Box::new(look)));
                self.stack.push(Frame::Try(s.alt));
            }
            Op::Match(k) => {
                let class = &self.classes[k];
                if self
                    .text
                    .get(self.cur)
                    .is_some_and(|&c| class.matches(u32::from(c)))
                {
                    self.stack.push(Frame::RestoreCur(self.cur));
                    self.cur += 1;
                    self.stack.push(Frame::Try(s.next));
                }
            }
            Op::Backref(k) => {
                let c = self.caps[k];
                if !c.matched || c.first > c.second {
                    return false;
                }
                let len = c.second - c.first;
                let last = (self.cur + len).min(self.text.len());
                if last - self.cur == len
                    && self.text[c.first..c.second] == self.text[self.cur..last]
                {
                    self.stack.push(Frame::RestoreCur(self.cur));
                    self.cur = last;
                    self.stack.push(Frame::Try(s.next));
                }
            }
            Op::Accept => return true,
            Op::Alternative => {
                self.stack.push(Frame::Alt(s.next));
                self.stack.push(Frame::Try(s.alt));
            }
            Op::Dummy => self.stack.push(Frame::Try(s.next)),
        }
        false
    }

    /// `_M_rep_once_more`: into repetition `i`'s expression again, at most twice in a row at
    /// the same position.
    fn once_more(&mut self, i: usize) {
        let Some(&s) = self.nfa.get(i) else { return };
        let rc = self.reps.get(&i).copied().unwrap_or((0, 0));
        let again = if rc.1 == 0 || rc.0 != self.cur {
            (self.cur, 1)
        } else if rc.1 < 2 {
            (rc.0, rc.1 + 1)
        } else {
            return;
        };
        self.stack.push(Frame::RestoreRep(i, rc));
        self.reps.insert(i, again);
        self.stack.push(Frame::Try(s.alt));
    }
}

impl Pattern {
    /// Compiles `source` as `std::regex(source)` does; a clear error names what is wrong and
    /// where, or what is not supported.
    pub fn new(source: &str) -> Result<Pattern> {
        let units: Vec<u32> = source.bytes().map(u32::from).collect();
        let mut t = Tokens::new(&units, false, format!("tensor-name pattern '{source}'"))?;
        // The whole pattern is group 0: begin, the disjunction, end, accept.
        let mut c = Compiler {
            source,
            count: None,
            nfa: Vec::new(),
            classes: Vec::new(),
            groups: 1,
            open: vec![0],
        };
        let mut r = c.single(Op::SubBegin(0))?;
        let inner = Grammar::new(&mut t, &mut c).expression()?;
        c.append_seq(&mut r, inner);
        c.open.pop();
        let end = c.insert(Op::SubEnd(0), NONE, NONE)?;
        c.append(&mut r, end);
        let accept = c.insert(Op::Accept, NONE, NONE)?;
        c.append(&mut r, accept);
        Ok(Pattern {
            source: source.to_string(),
            nfa: c.nfa,
            classes: c.classes,
            groups: c.groups,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `std::regex_search(text, pattern)` is true: the pattern matches somewhere in
    /// `text`. Fails (naming the pattern and `text`) where the search would take more than
    /// `MAX_STEPS` (2,000,000) steps or hold more than `MAX_FRAMES` (200,000) frames (its memory is bounded, it
    /// runs on the heap: any thread's stack will do).
    pub fn search(&self, text: &[u8]) -> Result<bool> {
        let mut steps = 0u64;
        let mut stack = Vec::new();
        for begin in 0..=text.len() {
            stack.clear();
            let mut e = Exec {
                nfa: &self.nfa,
                classes: &self.classes,
                text,
                begin,
                prev_avail: begin > 0,
                cur: begin,
                caps: vec![Cap::default(); self.groups],
                reps: HashMap::new(),
                stack: std::mem::take(&mut stack),
                looks: 0,
                steps: &mut steps,
            };
            let r = e.run();
            stack = std::mem::take(&mut e.stack);
            match r {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(stop) => {
                    return Err(Error::msg(
                        ErrorCode::InvalidArgument,
                        format!(
                            "tensor-name pattern '{}' on {}: {}; simplify the pattern",
                            self.source,
                            quote(text),
                            match stop {
                                Stop::Steps => format!(
                                    "the search takes more than {MAX_STEPS} steps \
                                     (nested or empty repetitions)"
                                ),
                                Stop::Depth =>
                                    format!("the search holds more than {MAX_FRAMES} open paths"),
                            }
                        ),
                    ))
                }
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    fn m(p: &str, t: &str) -> bool {
        Pattern::new(p).unwrap().search(t.as_bytes()).unwrap()
    }

    #[test]
    fn searches_like_regex_search() {
        assert!(m("attn_q", "blk.0.attn_q.weight"));
        assert!(!m("attn_q", "blk.0.attn_k.weight"));
        assert!(m(r"blk\.[0-9]+\.ffn_down", "blk.12.ffn_down.weight"));
        assert!(!m(r"blk\.[0-9]+\.ffn_down", "blk.x.ffn_down.weight"));
        assert!(m(r"ffn_(up|gate)_exps", "blk.3.ffn_gate_exps.weight"));
        assert!(!m(r"ffn_(up|gate)_exps", "blk.3.ffn_down_exps.weight"));
        assert!(m(r"^token_embd\.weight$", "token_embd.weight"));
        assert!(!m(r"^token_embd\.weight$", "per_layer_token_embd.weight"));
        assert!(m(r"blk\.(1|2)\d?\.", "blk.17.attn_v.weight"));
        assert!(m(r"blk\.\d{2}\.", "blk.17.attn_v.weight"));
        assert!(!m(r"blk\.\d{3,}\.", "blk.17.attn_v.weight"));
        assert!(m(r"a.*b", "xxaqqqbyy"));
        assert!(m(r"[^a-z]", "abc1"));
        assert!(!m(r"[^a-z]", "abc"));
        assert!(m("", "anything"));
        assert!(m(r"(?:q|k)_norm", "blk.0.attn_k_norm.weight"));
        assert!(m(r"x*?y", "y"));
        // What the simpler engine before refused or read otherwise.
        assert!(m(r"blk\.[[:digit:]]\.attn_q", "blk.3.attn_q.weight"));
        assert!(m(r"blk\.(?!0\.)\d+\.ffn_down", "blk.1.ffn_down.weight"));
        assert!(!m(r"blk\.(?!0\.)\d+\.ffn_down", "blk.0.ffn_down.weight"));
        assert!(m(r"\battn\b", "blk.0.attn.weight"));
        assert!(!m(r"\battn\b", "blk.0.attn_q.weight"));
        assert!(m(r"\Bttn", "blk.0.attn_q.weight"));
        assert!(m(r"\x61ttn", "attn"));
        assert!(m(r"\u0061ttn", "attn"));
        assert!(m(r"blk\.(\d)\.\1", "blk.3.3"));
        assert!(!m(r"blk\.(\d)\.\1", "blk.3.4"));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "(",
            "a)",
            "[a",
            "*a",
            "a{2,1}",
            "(?<=a)",
            "\\",
            r"\1",
            "(a\\1)",
            "[[.ab.]]",
            "[[:foo:]]",
            "a{",
            "a{x}",
            "[b-a]",
            "^*",
            r"[\d-z]",
        ] {
            let e = Pattern::new(bad).unwrap_err();
            assert!(e.to_string().contains("pattern"), "{bad}: {e}");
        }
        assert!(Pattern::new("a{1000}{1000}").is_err());
        let e = Pattern::new("(?:(?:){4000000000}){4000000000}").unwrap_err();
        assert!(e.to_string().contains("2147483647"), "{e}");
        let e = Pattern::new("(?:(?:){40000}){40000}").unwrap_err();
        assert!(e.to_string().contains("100000 states"), "{e}");
    }

    #[test]
    fn a_search_that_runs_long_fails() {
        let p = Pattern::new("(?:(?:(?:a*)*)*)*b").unwrap();
        let e = p.search(&[b'a'; 64]).unwrap_err();
        assert!(e.to_string().contains("steps"), "{e}");
    }

    #[test]
    fn the_deepest_search_fits_a_small_stack() {
        // The search keeps its paths on the heap: long ones on a thread of 64 KiB of stack.
        let t = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(|| {
                let p = Pattern::new("(?:a|b)*c").unwrap();
                let deep = p.search(&vec![b'a'; 100_000]).unwrap_err();
                assert!(deep.to_string().contains("open paths"), "{deep}");
                let mut text = vec![b'a'; super::MAX_FRAMES / 10];
                text.push(b'c');
                assert!(p.search(&text).unwrap());
                let q = Pattern::new("(?=(?=(?=a*)))a*?(?!x)c").unwrap();
                assert!(q.search(&text[text.len() - 300..]).unwrap());
            })
            .unwrap();
        t.join().unwrap();
    }
}
