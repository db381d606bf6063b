//! The `std::regex` path of llama.cpp's splitter: the expression transformed as llama.cpp
//! transforms it (each category named becomes a class of stand-in bytes), then parsed and
//! matched by the crate's backtracking matcher ([`crate::regex::Program`]) with `std::regex`'s
//! semantics.

use crate::regex::Program;
use crate::tokenizer::unicode::cpts_from_utf8;

/// llama.cpp's category names and the stand-in byte each becomes, with its ASCII members
/// (`k_ucat_enum`, `k_ucat_cpt`, `k_ucat_map`).
const CATEGORIES: [(&str, u8, &str); 10] = [
    (r"\p{N}", 0xD1, "0-9"),
    (r"\p{L}", 0xD2, "A-Za-z"),
    (r"\p{P}", 0xD3, r"!-#%-*,-/:-;?-@\[-\]_\{\}"),
    (r"\p{M}", 0xD4, ""),
    (r"\p{S}", 0xD5, r"\$\+<->^`\|\~"),
    (r"\p{Lu}", 0xD2, "A-Za-z"),
    (r"\p{Ll}", 0xD2, "A-Za-z"),
    (r"\p{Lt}", 0xD2, "A-Za-z"),
    (r"\p{Lm}", 0xD2, "A-Za-z"),
    (r"\p{Lo}", 0xD2, "A-Za-z"),
];

/// llama.cpp's rewriting of an expression that names categories into one over the
/// stand-in bytes (the loop in `unicode_regex_split`, with its way of tracking brackets).
fn collapse_regex(re: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(re.len() * 2);
    let mut inside = false;
    let mut i = 0;
    while i < re.len() {
        if re[i] == b'[' && (i == 0 || re[i - 1] != b'\\') {
            out.push(b'[');
            inside = true;
            i += 1;
            continue;
        }
        if inside && re[i] == b']' && re[i - 1] != b'\\' {
            out.push(b']');
            inside = false;
            i += 1;
            continue;
        }
        if re[i] == b'\\' && i + 3 < re.len() && re[i + 1] == b'p' && re[i + 2] == b'{' {
            if let Some(close) = re[i + 3..]
                .iter()
                .position(|&b| b == b'}')
                .map(|c| c + i + 3)
            {
                if close <= i + 10 {
                    let name = &re[i..=close];
                    if let Some(&(_, byte, members)) =
                        CATEGORIES.iter().find(|(n, _, _)| n.as_bytes() == name)
                    {
                        if !inside {
                            out.push(b'[');
                        }
                        out.push(byte);
                        out.extend_from_slice(members.as_bytes());
                        if !inside {
                            out.push(b']');
                        }
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        out.push(re[i]);
        i += 1;
    }
    out
}

/// An expression of a pre-tokenizer, compiled.
#[derive(Debug)]
pub(super) struct Expression {
    /// Whether it reads the category stand-in of the text (else the code points).
    pub collapsed: bool,
    pub program: Program,
}

impl Expression {
    /// `re` as llama.cpp runs it: over the stand-in bytes where it names a category, else over
    /// the code points.
    pub fn new(re: &str) -> Result<Expression, String> {
        let collapsed = CATEGORIES.iter().any(|(name, _, _)| re.contains(name));
        let units: Vec<u32> = if collapsed {
            if !re.is_ascii() {
                return Err(
                    "names a category and has non-ASCII characters (llama.cpp rejects it)".into(),
                );
            }
            collapse_regex(re.as_bytes())
                .into_iter()
                .map(u32::from)
                .collect()
        } else {
            cpts_from_utf8(re.as_bytes())
        };
        Ok(Expression {
            collapsed,
            program: Program::new(&units, !collapsed)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regex::Scratch;

    /// Without the failure bits and lookahead table (where they would not fit), the words
    /// are the same.
    #[test]
    fn forgetting_gives_the_same_words() {
        let texts = [
            "a 1234567 89 'S  x\r\n\n  Ünï 中文 !!",
            "   \t x",
            "",
            "1234",
        ];
        for regexes in super::super::table::PreType::ALL.map(super::super::table::PreType::regexes)
        {
            for re in regexes {
                let Ok(expression) = Expression::new(re) else {
                    continue;
                };
                for text in texts {
                    let units: Vec<u32> = text.chars().map(u32::from).collect();
                    let mut both = [Vec::new(), Vec::new()];
                    for (forget, out) in [false, true].into_iter().zip(&mut both) {
                        let mut scratch = Scratch::forgetting(forget);
                        expression.program.split_piece(&units, out, &mut scratch);
                    }
                    assert_eq!(both[0], both[1], "{re:?} on {text:?}");
                }
            }
        }
    }
}
