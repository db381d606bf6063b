//! Tensor-name patterns: the regular expressions llama-quantize's `--tensor-type PATTERN=TYPE`
//! takes (ECMAScript syntax, found anywhere in the name, as `std::regex_search` finds them), for
//! the part of the syntax names need: literals, `.`, classes (`[a-z]`, `[^0-9]`, `\d`, `\w`,
//! `\s` and their negations), groups (`(...)`, `(?:...)`) with alternation, the quantifiers `*`,
//! `+`, `?`, `{n}`, `{n,}`, `{n,m}` (lazy or not: a search only asks whether there is a match),
//! and the anchors `^` and `$`. Matched by simulating all paths of the automaton at once, so a
//! search takes time linear in the name for a given pattern, whatever the pattern.

use crate::error::{Error, ErrorCode, Result};

/// Most automaton steps a pattern may compile to (bounded repetitions are expanded).
const MAX_PROGRAM: usize = 10_000;

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    program: Vec<Inst>,
}

/// A set of bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ByteSet([u64; 4]);

impl ByteSet {
    const EMPTY: ByteSet = ByteSet([0; 4]);

    fn add(&mut self, b: u8) {
        self.0[usize::from(b >> 6)] |= 1 << (b & 63);
    }

    fn add_range(&mut self, lo: u8, hi: u8) {
        for b in lo..=hi {
            self.add(b);
        }
    }

    fn has(&self, b: u8) -> bool {
        self.0[usize::from(b >> 6)] & (1 << (b & 63)) != 0
    }

    fn negated(self) -> ByteSet {
        ByteSet(self.0.map(|w| !w))
    }

    fn union(&mut self, other: ByteSet) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
    }
}

#[derive(Clone, Debug)]
enum Node {
    Set(ByteSet),
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Inst {
    Byte(ByteSet),
    Split(usize, usize),
    Jump(usize),
    Start,
    End,
    Match,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    source: &'a str,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> Error {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "tensor-name pattern '{}': {what} at character {}",
                self.source,
                self.at + 1
            ),
        )
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn alternation(&mut self, depth: usize) -> Result<Node> {
        if depth > 64 {
            return Err(self.error("groups nest too deep"));
        }
        let mut branches = vec![self.concat(depth)?];
        while self.peek() == Some(b'|') {
            self.at += 1;
            branches.push(self.concat(depth)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Concat(Vec::new()))
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self, depth: usize) -> Result<Node> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' {
                break;
            }
            let atom = self.atom(depth)?;
            items.push(self.quantified(atom)?);
        }
        Ok(Node::Concat(items))
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at])
            .ok()?
            .parse()
            .ok()
    }

    fn quantified(&mut self, atom: Node) -> Result<Node> {
        let (min, max) = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => {
                self.at += 1;
                let min = self
                    .number()
                    .ok_or_else(|| self.error("a count expected"))?;
                let max = if self.peek() == Some(b',') {
                    self.at += 1;
                    if self.peek() == Some(b'}') {
                        None
                    } else {
                        Some(
                            self.number()
                                .ok_or_else(|| self.error("a count expected"))?,
                        )
                    }
                } else {
                    Some(min)
                };
                if self.peek() != Some(b'}') {
                    return Err(self.error("'}' expected"));
                }
                if max.is_some_and(|m| m < min) {
                    return Err(self.error("a repetition's maximum is below its minimum"));
                }
                (min, max)
            }
            _ => return Ok(atom),
        };
        if matches!(atom, Node::Start | Node::End) {
            return Err(self.error("an anchor cannot be repeated"));
        }
        self.at += 1;
        if self.peek() == Some(b'?') {
            self.at += 1; // lazy: the same for a search
        }
        if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
            return Err(self.error("nothing to repeat"));
        }
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    fn atom(&mut self, depth: usize) -> Result<Node> {
        let c = self
            .peek()
            .ok_or_else(|| self.error("a pattern expected"))?;
        self.at += 1;
        Ok(match c {
            b'(' => {
                if self.s[self.at..].starts_with(b"?:") {
                    self.at += 2;
                } else if self.peek() == Some(b'?') {
                    return Err(self.error("lookarounds are not supported"));
                }
                let inner = self.alternation(depth + 1)?;
                if self.peek() != Some(b')') {
                    return Err(self.error("')' expected"));
                }
                self.at += 1;
                inner
            }
            b'[' => Node::Set(self.class()?),
            b'.' => {
                let mut set = ByteSet::EMPTY;
                set.add(b'\n');
                set.add(b'\r');
                Node::Set(set.negated())
            }
            b'^' => Node::Start,
            b'$' => Node::End,
            b'\\' => Node::Set(self.escape()?),
            b'*' | b'+' | b'?' => {
                self.at -= 1;
                return Err(self.error("nothing to repeat"));
            }
            b'{' => {
                self.at -= 1;
                return Err(self.error("nothing to repeat"));
            }
            _ => {
                let mut set = ByteSet::EMPTY;
                set.add(c);
                Node::Set(set)
            }
        })
    }

    /// The set an escape (after its backslash) stands for.
    fn escape(&mut self) -> Result<ByteSet> {
        let c = self
            .peek()
            .ok_or_else(|| self.error("a pattern ends in a backslash"))?;
        self.at += 1;
        let mut set = ByteSet::EMPTY;
        let class = |c: u8| {
            let mut set = ByteSet::EMPTY;
            match c.to_ascii_lowercase() {
                b'd' => set.add_range(b'0', b'9'),
                b'w' => {
                    set.add_range(b'0', b'9');
                    set.add_range(b'a', b'z');
                    set.add_range(b'A', b'Z');
                    set.add(b'_');
                }
                _ => {
                    for b in [b' ', b'\t', b'\n', b'\r', 0x0b, 0x0c] {
                        set.add(b);
                    }
                }
            }
            if c.is_ascii_uppercase() {
                set.negated()
            } else {
                set
            }
        };
        match c {
            b'd' | b'D' | b'w' | b'W' | b's' | b'S' => return Ok(class(c)),
            b'n' => set.add(b'\n'),
            b't' => set.add(b'\t'),
            b'r' => set.add(b'\r'),
            c if c.is_ascii_alphanumeric() => {
                self.at -= 1;
                return Err(self.error("this escape is not supported"));
            }
            c => set.add(c),
        }
        Ok(set)
    }

    /// A bracketed class, after its `[`.
    fn class(&mut self) -> Result<ByteSet> {
        let negate = self.peek() == Some(b'^');
        if negate {
            self.at += 1;
        }
        let mut set = ByteSet::EMPTY;
        let mut first = true;
        loop {
            let c = self.peek().ok_or_else(|| self.error("']' expected"))?;
            if c == b']' && !first {
                self.at += 1;
                break;
            }
            first = false;
            self.at += 1;
            let lo = if c == b'\\' {
                let escaped = self.escape()?;
                let single = (0..=255u8).filter(|&b| escaped.has(b)).count() == 1;
                if !single {
                    set.union(escaped);
                    continue;
                }
                (0..=255u8).find(|&b| escaped.has(b)).unwrap_or(0)
            } else {
                c
            };
            if self.peek() == Some(b'-') && self.s.get(self.at + 1).is_some_and(|&n| n != b']') {
                self.at += 1;
                let mut hi = self.peek().unwrap_or(0);
                self.at += 1;
                if hi == b'\\' {
                    let escaped = self.escape()?;
                    hi = (0..=255u8).find(|&b| escaped.has(b)).unwrap_or(0);
                }
                if hi < lo {
                    return Err(self.error("a range's end is below its start"));
                }
                set.add_range(lo, hi);
            } else {
                set.add(lo);
            }
        }
        Ok(if negate { set.negated() } else { set })
    }
}

struct Compiler {
    program: Vec<Inst>,
}

impl Compiler {
    fn push(&mut self, inst: Inst) -> Result<usize> {
        if self.program.len() >= MAX_PROGRAM {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                "a tensor-name pattern is too large (its repetitions expand to too many steps)",
            ));
        }
        self.program.push(inst);
        Ok(self.program.len() - 1)
    }

    fn node(&mut self, node: &Node) -> Result<()> {
        match node {
            Node::Set(set) => {
                self.push(Inst::Byte(*set))?;
            }
            Node::Start => {
                self.push(Inst::Start)?;
            }
            Node::End => {
                self.push(Inst::End)?;
            }
            Node::Concat(items) => {
                for item in items {
                    self.node(item)?;
                }
            }
            Node::Alt(branches) => {
                let mut jumps = Vec::new();
                for (i, branch) in branches.iter().enumerate() {
                    if i + 1 < branches.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.node(branch)?;
                        jumps.push(self.push(Inst::Jump(0))?);
                        let next = self.program.len();
                        self.program[split] = Inst::Split(split + 1, next);
                    } else {
                        self.node(branch)?;
                    }
                }
                let end = self.program.len();
                for j in jumps {
                    self.program[j] = Inst::Jump(end);
                }
            }
            Node::Repeat { node, min, max } => {
                for _ in 0..*min {
                    self.node(node)?;
                }
                match max {
                    None => {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.node(node)?;
                        self.push(Inst::Jump(split))?;
                        let end = self.program.len();
                        self.program[split] = Inst::Split(split + 1, end);
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.node(node)?;
                        }
                        let end = self.program.len();
                        for s in splits {
                            self.program[s] = Inst::Split(s + 1, end);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Pattern {
    /// Compiles `source`; a clear error names what is wrong and where.
    pub fn new(source: &str) -> Result<Pattern> {
        let mut parser = Parser {
            s: source.as_bytes(),
            at: 0,
            source,
        };
        let node = parser.alternation(0)?;
        if parser.at != parser.s.len() {
            return Err(parser.error("unmatched ')'"));
        }
        let mut compiler = Compiler {
            program: Vec::new(),
        };
        compiler.node(&node)?;
        compiler.push(Inst::Match)?;
        Ok(Pattern {
            source: source.to_string(),
            program: compiler.program,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches somewhere in `text`.
    pub fn is_match(&self, text: &[u8]) -> bool {
        let n = self.program.len();
        let mut current: Vec<usize> = Vec::with_capacity(n);
        let mut next: Vec<usize> = Vec::with_capacity(n);
        let mut seen = vec![usize::MAX; n];
        let mut stack = Vec::new();
        for at in 0..=text.len() {
            // A match may start at every position.
            if self.add(0, at, text, &mut current, &mut seen, &mut stack) {
                return true;
            }
            let Some(&b) = text.get(at) else { break };
            next.clear();
            for &pc in &current {
                if let Inst::Byte(set) = self.program[pc] {
                    if set.has(b)
                        && self.add(pc + 1, at + 1, text, &mut next, &mut seen, &mut stack)
                    {
                        return true;
                    }
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        false
    }

    /// Adds the thread at `pc` (and every thread it reaches without reading a byte) at position
    /// `at` to `list`; returns whether one of them matches.
    fn add(
        &self,
        pc: usize,
        at: usize,
        text: &[u8],
        list: &mut Vec<usize>,
        seen: &mut [usize],
        stack: &mut Vec<usize>,
    ) -> bool {
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if seen[pc] == at {
                continue;
            }
            seen[pc] = at;
            match self.program[pc] {
                Inst::Byte(_) => list.push(pc),
                Inst::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Inst::Jump(a) => stack.push(a),
                Inst::Start => {
                    if at == 0 {
                        stack.push(pc + 1);
                    }
                }
                Inst::End => {
                    if at == text.len() {
                        stack.push(pc + 1);
                    }
                }
                Inst::Match => {
                    stack.clear();
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    fn m(p: &str, t: &str) -> bool {
        Pattern::new(p).unwrap().is_match(t.as_bytes())
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
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in ["(", "a)", "[a", "*a", "a{2,1}", r"\b", "(?=a)", "a**", "\\"] {
            let e = Pattern::new(bad).unwrap_err();
            assert!(e.to_string().contains("pattern"), "{bad}: {e}");
        }
        assert!(Pattern::new("a{1000}{1000}").is_err());
    }
}
