//! A backtracking matcher for ECMAScript expressions over 32-bit units (code points, or bytes
//! for an expression over bytes): the tree libstdc++'s grammar ([`super::grammar`]) reads, the
//! match `std::regex` gives (leftmost, the first alternative that matches wins), and the
//! (state, position) pairs that failed remembered, so no input makes it quadratic. `\s`, `\d`,
//! `\w` and `\b` are the "C" locale's ([`super::classes`]).

use super::anchors::{line_begin, line_end, word_boundary};
use super::classes::Class;
use super::grammar::{Assertion, Build, Grammar, Quantifier};
use super::syntax::Tokens;
use crate::error::{Error, ErrorCode, Result};

#[derive(Debug, Clone)]
enum Node {
    Unit(u32),
    Class(Class),
    Bol,
    Eol,
    WordBoundary(bool),
    Look(bool, Box<Node>),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
    },
}

impl Node {
    fn can_be_empty(&self) -> bool {
        match self {
            Node::Unit(_) | Node::Class(_) => false,
            Node::Bol | Node::Eol | Node::WordBoundary(_) | Node::Look(..) => true,
            Node::Concat(v) => v.iter().all(Node::can_be_empty),
            Node::Alt(v) => v.iter().any(Node::can_be_empty),
            Node::Repeat { node, min, .. } => *min == 0 || node.can_be_empty(),
        }
    }

    /// The class of a node that matches exactly one unit, `(?=[a])[b]` included.
    fn one_class(&self) -> Option<Class> {
        if let Node::Concat(items) = self {
            if let [Node::Look(false, look), next] = &items[..] {
                let (a, mut b) = (look.as_class()?, next.as_class()?);
                b.and = Some(Box::new(a));
                return Some(b);
            }
        }
        self.as_class()
    }

    /// The class of a node that matches exactly one unit.
    fn as_class(&self) -> Option<Class> {
        match self {
            Node::Unit(u) => Some(Class::single(*u)),
            Node::Class(c) => Some(c.clone()),
            _ => None,
        }
    }
}

/// The tree an expression's grammar ([`super::grammar`]) builds here: the part llama.cpp's
/// expressions use, with back-references, counts above 1000 and unbounded repetitions of what
/// can match nothing refused.
struct Tree;

/// Most repetitions a count may ask for.
const MAX_REPEAT: u64 = 1000;

fn unsupported(what: &str) -> Error {
    Error::msg(ErrorCode::InvalidArgument, what)
}

impl Build for Tree {
    type Expr = Node;
    type Group = ();

    fn assertion(&mut self, a: Assertion) -> Result<Node> {
        Ok(match a {
            Assertion::LineBegin => Node::Bol,
            Assertion::LineEnd => Node::Eol,
            Assertion::WordBound { neg } => Node::WordBoundary(!neg),
        })
    }

    fn lookahead(&mut self, neg: bool, inside: Node) -> Result<Node> {
        Ok(Node::Look(neg, Box::new(inside)))
    }

    fn class(&mut self, class: Class) -> Result<Node> {
        Ok(Node::Class(class))
    }

    fn unit(&mut self, u: u32) -> Result<Node> {
        Ok(Node::Unit(u))
    }

    fn backref_allowed(&mut self, t: &Tokens, _: u64) -> Result<()> {
        Err(t.error("back-references are not supported"))
    }

    fn backref(&mut self, _: u64) -> Result<Node> {
        Err(unsupported("back-references are not supported"))
    }

    fn open_group(&mut self, _: bool) -> Result<()> {
        Ok(())
    }

    fn close_group(&mut self, _: (), inside: Node) -> Result<Node> {
        Ok(inside)
    }

    fn sequence(&mut self, mut terms: Vec<Node>) -> Result<Node> {
        Ok(if terms.len() == 1 {
            terms.pop().unwrap_or(Node::Concat(Vec::new()))
        } else {
            Node::Concat(terms)
        })
    }

    fn or(&mut self, left: Node, right: Node, first: bool) -> Result<Node> {
        Ok(match left {
            Node::Alt(mut alts) if !first => {
                alts.push(right);
                Node::Alt(alts)
            }
            left => Node::Alt(vec![left, right]),
        })
    }

    fn count_begins(&mut self) -> Result<()> {
        Ok(())
    }

    fn repeat(&mut self, t: &Tokens, e: Node, q: Quantifier, lazy: bool) -> Result<Node> {
        let (min, max) = match q {
            Quantifier::Star => (0, None),
            Quantifier::Plus => (1, None),
            Quantifier::Opt => (0, Some(1)),
            Quantifier::Count { min, max } => {
                if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
                    return Err(t.error("a repetition count above 1000"));
                }
                let fit = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
                (fit(min), max.map(fit))
            }
        };
        if max.is_none() && e.can_be_empty() {
            return Err(t.error("unbounded repetition of what can match nothing"));
        }
        Ok(Node::Repeat {
            node: Box::new(e),
            min,
            max,
            greedy: !lazy,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Inst {
    Unit(u32),
    Class(u32),
    /// Try `first`, then `second`; `memo` numbers the (state, position) failure bit.
    Split {
        first: u32,
        second: u32,
        memo: u32,
    },
    Jmp(u32),
    Bol,
    Eol,
    WordBoundary(bool),
    /// `(?=c)` / `(?!c)` for a one-unit class.
    LookClass {
        negated: bool,
        class: u32,
    },
    /// A lookahead whose sub-program starts at `start`, ends with `LookEnd`.
    Look {
        negated: bool,
        start: u32,
        id: u32,
    },
    /// Greedy `class*`: a loop whose every iteration has its own failure bit, as a
    /// `Split` loop, but one frame for all its iterations.
    Star {
        class: u32,
        memo: u32,
    },
    /// Greedy `class{min,max}`.
    Run {
        class: u32,
        min: u32,
        max: u32,
        memo: u32,
    },
    Match,
    LookEnd,
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) struct Program {
    insts: Vec<Inst>,
    classes: Vec<Class>,
    n_memo: usize,
    /// The number of lookaheads with sub-programs.
    n_looks: usize,
    /// The failure bits numbered from here on belong to lookahead bodies.
    look_memo: u32,
    /// Whether it has `^` or `\b` / `\B`.
    anchors: bool,
}

struct Compiler {
    insts: Vec<Inst>,
    classes: Vec<Class>,
    n_memo: u32,
    looks: Vec<(usize, Node)>,
}

impl Compiler {
    fn here(&self) -> u32 {
        // Programs are far smaller than 4G instructions (repeats are capped).
        u32::try_from(self.insts.len()).unwrap_or(u32::MAX)
    }

    fn class(&mut self, c: Class) -> u32 {
        self.classes.push(c);
        u32::try_from(self.classes.len() - 1).unwrap_or(u32::MAX)
    }

    fn memo(&mut self) -> u32 {
        self.n_memo += 1;
        self.n_memo - 1
    }

    fn emit(&mut self, node: &Node) {
        match node {
            Node::Unit(u) => self.insts.push(Inst::Unit(*u)),
            Node::Class(_) => {
                let c = node.as_class().unwrap_or_default();
                let id = self.class(c);
                self.insts.push(Inst::Class(id));
            }
            Node::Bol => self.insts.push(Inst::Bol),
            Node::Eol => self.insts.push(Inst::Eol),
            Node::WordBoundary(b) => self.insts.push(Inst::WordBoundary(*b)),
            Node::Look(negated, inner) => {
                if let Some(c) = inner.as_class() {
                    let class = self.class(c);
                    self.insts.push(Inst::LookClass {
                        negated: *negated,
                        class,
                    });
                } else {
                    let id = u32::try_from(self.looks.len()).unwrap_or(u32::MAX);
                    self.looks.push((self.insts.len(), (**inner).clone()));
                    self.insts.push(Inst::Look {
                        negated: *negated,
                        start: 0,
                        id,
                    });
                }
            }
            Node::Concat(items) => {
                let mut i = 0;
                while i < items.len() {
                    // `(?=[a])[b]`: one class, `b` and `a`.
                    if let (Node::Look(false, look), Some(next)) = (&items[i], items.get(i + 1)) {
                        if let (Some(a), Some(mut b)) = (look.as_class(), next.as_class()) {
                            b.and = Some(Box::new(a));
                            let id = self.class(b);
                            self.insts.push(Inst::Class(id));
                            i += 2;
                            continue;
                        }
                    }
                    self.emit(&items[i]);
                    i += 1;
                }
            }
            Node::Alt(alts) => {
                let mut jumps = Vec::new();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 < alts.len() {
                        let split = self.insts.len();
                        let memo = self.memo();
                        self.insts.push(Inst::Split {
                            first: self.here() + 1,
                            second: 0,
                            memo,
                        });
                        self.emit(alt);
                        jumps.push(self.insts.len());
                        self.insts.push(Inst::Jmp(0));
                        let here = self.here();
                        if let Inst::Split { second, .. } = &mut self.insts[split] {
                            *second = here;
                        }
                    } else {
                        self.emit(alt);
                    }
                }
                let end = self.here();
                for j in jumps {
                    self.insts[j] = Inst::Jmp(end);
                }
            }
            Node::Repeat {
                node,
                min,
                max,
                greedy,
            } => {
                if let (Some(class), Some(max), true) = (node.as_class(), max, greedy) {
                    if *max > 4 {
                        let class = self.class(class);
                        let memo = self.memo();
                        self.insts.push(Inst::Run {
                            class,
                            min: *min,
                            max: *max,
                            memo,
                        });
                        return;
                    }
                }
                for _ in 0..*min {
                    self.emit(node);
                }
                if let (Some(class), None, true) = (node.one_class(), max, greedy) {
                    let class = self.class(class);
                    let memo = self.memo();
                    self.insts.push(Inst::Star { class, memo });
                    return;
                }
                let split = |c: &mut Compiler, body: u32, exit: u32| {
                    let memo = c.memo();
                    let (first, second) = if *greedy { (body, exit) } else { (exit, body) };
                    Inst::Split {
                        first,
                        second,
                        memo,
                    }
                };
                match max {
                    None => {
                        let head = self.insts.len();
                        self.insts.push(Inst::Jmp(0));
                        self.emit(node);
                        self.insts.push(Inst::Jmp(u32::try_from(head).unwrap_or(0)));
                        let (body, exit) = (u32::try_from(head + 1).unwrap_or(0), self.here());
                        self.insts[head] = split(self, body, exit);
                    }
                    Some(max) => {
                        let mut heads = Vec::new();
                        for _ in *min..*max {
                            heads.push(self.insts.len());
                            self.insts.push(Inst::Jmp(0));
                            self.emit(node);
                        }
                        let exit = self.here();
                        for head in heads {
                            let body = u32::try_from(head + 1).unwrap_or(0);
                            self.insts[head] = split(self, body, exit);
                        }
                    }
                }
            }
        }
    }
}

impl Program {
    fn parse(units: &[u32], wide: bool) -> Result<Node> {
        let mut t = Tokens::new(units, wide, String::new())?;
        Grammar::new(&mut t, &mut Tree).expression()
    }

    /// Compiles the expression whose characters are `units`: code points where `wide` (as
    /// `std::wregex` reads them), else bytes (as `std::regex` does). An error says what is
    /// wrong or what this matcher does not support, and where.
    pub(crate) fn new(units: &[u32], wide: bool) -> std::result::Result<Program, String> {
        let node = Program::parse(units, wide).map_err(|e| e.message())?;
        let mut c = Compiler {
            insts: Vec::new(),
            classes: Vec::new(),
            n_memo: 0,
            looks: Vec::new(),
        };
        c.emit(&node);
        c.insts.push(Inst::Match);
        let look_memo = c.n_memo;
        let mut i = 0;
        while i < c.looks.len() {
            let (at, inner) = c.looks[i].clone();
            let start = c.here();
            c.emit(&inner);
            c.insts.push(Inst::LookEnd);
            if let Inst::Look { start: s, .. } = &mut c.insts[at] {
                *s = start;
            }
            i += 1;
        }
        let anchors = c
            .insts
            .iter()
            .any(|i| matches!(i, Inst::Bol | Inst::WordBoundary(_)));
        Ok(Program {
            insts: c.insts,
            classes: c.classes,
            n_memo: c.n_memo as usize,
            n_looks: c.looks.len(),
            look_memo,
            anchors,
        })
    }

    /// Splits one piece (its units) as llama.cpp's `unicode_regex_split_stl`: the text
    /// before each match, each match (empty ones too), the text after the last; as lengths.
    pub(crate) fn split_piece(&self, units: &[u32], out: &mut Vec<usize>, scratch: &mut Scratch) {
        let mut exec = Exec::new(self, units, scratch);
        let mut last = 0;
        let mut emit = |s: usize, e: usize, out: &mut Vec<usize>| {
            if s > last {
                out.push(s - last);
            }
            out.push(e - s);
            last = e;
        };
        // libstdc++'s regex_iterator: after an empty match, an anchored non-empty match at
        // the same place, else a search from the next unit; `match_prev_avail` from the
        // second search on.
        let mut prev_avail = false;
        let mut found = exec.search(0, false);
        while let Some((s, e)) = found {
            emit(s, e, out);
            let mut start = e;
            if s == e {
                if start == units.len() {
                    break;
                }
                if let Some(e2) = exec.retry(start, prev_avail) {
                    found = Some((start, e2));
                    continue;
                }
                start += 1;
            }
            prev_avail = true;
            found = exec.search(start, true);
        }
        if last < units.len() {
            out.push(units.len() - last);
        }
        exec.give_back(scratch);
    }
}

/// Buffers a [`Program`] reuses from piece to piece.
#[derive(Default)]
pub(crate) struct Scratch {
    failed: Vec<u64>,
    found: Vec<u64>,
    looks: Vec<u8>,
    stack: Vec<Frame>,
    /// The steps taken so far (see `Splitter::matcher_steps`).
    pub(crate) steps: u64,
    /// Remember nothing, as where the bits would not fit (for tests).
    forget: bool,
}

impl Scratch {
    /// Buffers that remember nothing when `forget` (as where the bits would not fit), for tests
    /// that forgetting changes no match.
    #[cfg(test)]
    pub(crate) fn forgetting(forget: bool) -> Scratch {
        Scratch {
            forget,
            ..Scratch::default()
        }
    }
}

enum Frame {
    Try {
        pc: u32,
        pos: usize,
    },
    Fail {
        memo: u32,
        pos: usize,
    },
    /// The exits of a `Star` at `lo..=hi` still to try after the one at `hi` (being tried).
    Star {
        exit: u32,
        memo: u32,
        lo: usize,
        hi: usize,
    },
    Run {
        pc: u32,
        pos: usize,
        k: usize,
        min: usize,
    },
}

/// Matching state for one piece: the failed (state, position) bits and the lookahead
/// results, valid across the searches of the piece (no captures, and assertions that look
/// behind the search start are decided the same way whenever a position is revisited).
struct Exec<'a> {
    prog: &'a Program,
    units: &'a [u32],
    failed: Vec<u64>,
    /// For the states of lookahead bodies, which only ask whether a match exists: the
    /// (state, position) pairs from which one was found.
    found: Vec<u64>,
    /// Per lookahead and position: 0 not known yet, 1 no match, 2 a match.
    looks: Vec<u8>,
    stack: Vec<Frame>,
    /// Whether `failed` and `found` have their bits (see `Exec::new`).
    remember: bool,
    /// Whether `looks` has its bytes.
    remember_looks: bool,
    steps: u64,
    retrying: bool,
    begin: usize,
    prev_avail: bool,
    not_null: bool,
}

impl<'a> Exec<'a> {
    fn new(prog: &'a Program, units: &'a [u32], scratch: &mut Scratch) -> Exec<'a> {
        // One bit per (state, position) and one byte per (lookahead, position). Where a
        // count does not fit in usize (a piece of hundreds of millions of code points on a
        // 32-bit target), nothing is remembered: the same words, without the linear bound.
        let cells = |per: usize| units.len().checked_add(1).and_then(|n| n.checked_mul(per));
        let memo_cells = cells(prog.n_memo);
        let look_cells = cells(prog.n_looks);
        let words = memo_cells.map_or(1, |c| c.div_ceil(64).max(1));
        let reset = |v: &mut Vec<u64>, len: usize| {
            let mut v = std::mem::take(v);
            v.clear();
            v.resize(len, 0);
            v
        };
        let has_looks = (prog.look_memo as usize) < prog.n_memo;
        let mut looks = std::mem::take(&mut scratch.looks);
        looks.clear();
        looks.resize(look_cells.unwrap_or(0), 0);
        Exec {
            prog,
            units,
            failed: reset(&mut scratch.failed, words),
            found: reset(&mut scratch.found, if has_looks { words } else { 0 }),
            looks,
            stack: std::mem::take(&mut scratch.stack),
            remember: memo_cells.is_some() && !scratch.forget,
            remember_looks: look_cells.is_some() && !scratch.forget,
            steps: 0,
            retrying: false,
            begin: 0,
            prev_avail: false,
            not_null: false,
        }
    }

    /// Returns the buffers for the next piece.
    fn give_back(self, scratch: &mut Scratch) {
        scratch.failed = self.failed;
        scratch.found = self.found;
        scratch.looks = self.looks;
        scratch.stack = self.stack;
        scratch.steps += self.steps;
    }

    #[inline]
    fn bit(&self, memo: u32, pos: usize) -> (usize, u64) {
        // Position-major: the bits a position's states use lie together.
        if !self.remember {
            return (0, 0);
        }
        let i = pos * self.prog.n_memo + memo as usize;
        (i >> 6, 1 << (i & 63))
    }

    /// regex_search from `begin`: the first position with a match, and its end.
    fn search(&mut self, begin: usize, prev_avail: bool) -> Option<(usize, usize)> {
        self.begin = begin;
        self.prev_avail = prev_avail;
        self.not_null = false;
        for start in begin..=self.units.len() {
            // libstdc++ tries each later start with `match_prev_avail` set.
            self.begin = start;
            self.prev_avail = prev_avail || start > begin;
            if let Some(end) = self.run(0, start) {
                return Some((start, end));
            }
        }
        None
    }

    /// regex_search at `start` alone, for a non-empty match (`match_not_null |
    /// match_continuous`). Its failures are not recorded (an empty match at `start` fails
    /// here alone), and it trusts the recorded ones unless the expression has `^` or `\b`
    /// (which may decide differently at `start` without `match_prev_avail`).
    fn retry(&mut self, start: usize, prev_avail: bool) -> Option<usize> {
        self.begin = start;
        self.prev_avail = prev_avail;
        self.not_null = true;
        self.retrying = true;
        let found = self.run(0, start);
        self.not_null = false;
        self.retrying = false;
        found
    }

    fn look(&mut self, id: u32, start: u32, pos: usize) -> bool {
        if !self.remember_looks {
            return self.run(start, pos).is_some();
        }
        let slot = id as usize * (self.units.len() + 1) + pos;
        match self.looks[slot] {
            1 => return false,
            2 => return true,
            _ => {}
        }
        // The body runs on the same stack, above the frames of the outer match.
        let r = self.run(start, pos).is_some();
        self.looks[slot] = 1 + u8::from(r);
        r
    }

    #[inline]
    fn trust_failures(&self) -> bool {
        !(self.retrying && self.prog.anchors)
    }

    /// A lookahead body matched: every state on the way there (the failure frames still on
    /// the stack) leads to a match.
    fn found_at(&mut self, base: usize, pos: usize) -> usize {
        let n_memo = self.prog.n_memo;
        if !self.remember {
            self.stack.truncate(base);
            return pos;
        }
        for frame in self.stack.drain(base..) {
            let (memo, positions) = match frame {
                Frame::Fail { memo, pos: q } => (memo, q..=q),
                Frame::Star { memo, lo, hi, .. } => (memo, lo..=hi),
                _ => continue,
            };
            for q in positions {
                let i = q * n_memo + memo as usize;
                self.found[i >> 6] |= 1 << (i & 63);
            }
        }
        pos
    }

    /// Backtracking from instruction `pc` at `pos`: the end of the first match in
    /// ECMAScript's order.
    fn run(&mut self, pc: u32, pos: usize) -> Option<usize> {
        let base = self.stack.len();
        let (mut pc, mut pos) = (pc, pos);
        let n = self.units.len();
        loop {
            self.steps += 1;
            let ok = match self.prog.insts[pc as usize] {
                Inst::Unit(u) => {
                    let ok = pos < n && self.units[pos] == u;
                    pos += 1;
                    pc += 1;
                    ok
                }
                Inst::Class(c) => {
                    let ok = pos < n && self.prog.classes[c as usize].matches(self.units[pos]);
                    pos += 1;
                    pc += 1;
                    ok
                }
                Inst::Split {
                    first,
                    second,
                    memo,
                } => {
                    let (w, b) = self.bit(memo, pos);
                    if memo >= self.prog.look_memo && self.found[w] & b != 0 {
                        return Some(self.found_at(base, pos));
                    }
                    if self.failed[w] & b != 0 && self.trust_failures() {
                        false
                    } else {
                        self.stack.push(Frame::Fail { memo, pos });
                        self.stack.push(Frame::Try { pc: second, pos });
                        pc = first;
                        true
                    }
                }
                Inst::Jmp(t) => {
                    pc = t;
                    true
                }
                Inst::Bol => {
                    pc += 1;
                    line_begin(pos, self.begin, self.prev_avail)
                }
                Inst::Eol => {
                    pc += 1;
                    line_end(pos, n)
                }
                Inst::WordBoundary(want) => {
                    pc += 1;
                    word_boundary(self.units, pos, self.begin, self.prev_avail) == want
                }
                Inst::LookClass { negated, class } => {
                    let hit = pos < n && self.prog.classes[class as usize].matches(self.units[pos]);
                    pc += 1;
                    hit != negated
                }
                Inst::Look { negated, start, id } => {
                    let hit = self.look(id, start, pos);
                    pc += 1;
                    hit != negated
                }
                Inst::Run {
                    class,
                    min,
                    max,
                    memo,
                } => {
                    let (w, b) = self.bit(memo, pos);
                    if memo >= self.prog.look_memo && self.found[w] & b != 0 {
                        return Some(self.found_at(base, pos));
                    }
                    let class = &self.prog.classes[class as usize];
                    let mut k = 0;
                    while k < max as usize && pos + k < n && class.matches(self.units[pos + k]) {
                        k += 1;
                    }
                    if self.failed[w] & b != 0 && self.trust_failures() || k < min as usize {
                        false
                    } else {
                        self.stack.push(Frame::Fail { memo, pos });
                        self.stack.push(Frame::Run {
                            pc: pc + 1,
                            pos,
                            k,
                            min: min as usize,
                        });
                        pc += 1;
                        pos += k;
                        true
                    }
                }
                Inst::Star { class, memo } => {
                    let look = memo >= self.prog.look_memo;
                    let class = &self.prog.classes[class as usize];
                    let mut p = pos;
                    let mut found = false;
                    let hi = loop {
                        let (w, b) = self.bit(memo, p);
                        if look && self.found[w] & b != 0 {
                            found = true;
                            break p.checked_sub(1);
                        }
                        if self.failed[w] & b != 0 && self.trust_failures() {
                            break p.checked_sub(1);
                        }
                        if p < n && class.matches(self.units[p]) {
                            p += 1;
                        } else {
                            break Some(p);
                        }
                    }
                    .filter(|&hi| hi >= pos);
                    if let Some(hi) = hi {
                        self.stack.push(Frame::Star {
                            exit: pc + 1,
                            memo,
                            lo: pos,
                            hi,
                        });
                    }
                    if found {
                        return Some(self.found_at(base, p));
                    }
                    match hi {
                        Some(hi) => {
                            pc += 1;
                            pos = hi;
                            true
                        }
                        None => false,
                    }
                }
                Inst::Match => {
                    if self.not_null && pos == self.begin {
                        false
                    } else {
                        self.stack.truncate(base);
                        return Some(pos);
                    }
                }
                Inst::LookEnd => return Some(self.found_at(base, pos)),
            };
            if ok {
                continue;
            }
            // Backtrack.
            loop {
                self.steps += 1;
                if self.stack.len() == base {
                    return None;
                }
                match self.stack.pop() {
                    Some(Frame::Try { pc: p, pos: q }) => {
                        pc = p;
                        pos = q;
                        break;
                    }
                    Some(Frame::Fail { memo, pos: q }) => {
                        if !self.retrying {
                            let (w, b) = self.bit(memo, q);
                            self.failed[w] |= b;
                        }
                    }
                    Some(Frame::Star { exit, memo, lo, hi }) => {
                        if !self.retrying {
                            let (w, b) = self.bit(memo, hi);
                            self.failed[w] |= b;
                        }
                        if hi > lo {
                            self.stack.push(Frame::Star {
                                exit,
                                memo,
                                lo,
                                hi: hi - 1,
                            });
                            pc = exit;
                            pos = hi - 1;
                            break;
                        }
                    }
                    Some(Frame::Run {
                        pc: p,
                        pos: q,
                        k,
                        min,
                    }) => {
                        if k > min {
                            self.stack.push(Frame::Run {
                                pc: p,
                                pos: q,
                                k: k - 1,
                                min,
                            });
                            pc = p;
                            pos = q + k - 1;
                            break;
                        }
                    }
                    None => return None,
                }
            }
        }
    }
}
