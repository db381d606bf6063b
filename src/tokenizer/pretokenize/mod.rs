//! Pre-tokenization: text split into words by the regular expressions llama.cpp names for each
//! pre-tokenizer, with exactly the words llama.cpp's `unicode_regex_split` gives.
//!
//! llama.cpp runs each expression of a pre-tokenizer in turn over the pieces the previous ones
//! left (each piece split into the matches and the text between them). It recognises a few
//! expressions by their text and runs hand-written splitters for them (GPT-2's, Llama 3's,
//! Qwen 2's, Qwen 3.5's, Kimi K2's, AFMoE's digit grouping, newline runs), whose results differ
//! from the expressions' in corner cases: [`Splitter`] recognises the same texts and runs ports of
//! those splitters. Every other expression goes through libstdc++'s `std::regex` (ECMAScript,
//! leftmost match, the first alternative that matches wins) over a stand-in of the text: when the
//! expression names a Unicode category (`\p{L}`...), each code point of 128 or more becomes one
//! byte for its category (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol,
//! 0x0B whitespace, 0xD0 anything else) and the categories in the expression become classes of
//! those bytes and their ASCII members; otherwise the expression runs over the code points, with
//! non-ASCII whitespace replaced by 0x0B. `\s`, `\d`, `\w` and `\b` are ASCII-only, as in the C
//! locale. This module does the same transformation and runs the expression with its own
//! backtracking matcher, which gives `std::regex`'s match but remembers the (state, position)
//! pairs that failed, so no input makes it quadratic.

mod afmoe;
mod gpt2;
mod kimi_k2;
mod llama3;
mod newlines;
mod piece;
mod qwen35;
mod regex;
mod table;

pub use table::PreType;

use super::unicode::{byte_to_utf8_bytes, cpt_to_utf8, cpts_from_utf8, flag_bits, Flags};
use crate::regex::Scratch;
use afmoe::afmoe;
use gpt2::gpt2;
use kimi_k2::kimi_k2;
use llama3::llama3;
use newlines::newlines;
use piece::Text;
use qwen35::qwen35;

/// The expression texts llama.cpp replaces by its hand-written splitters.
const CUSTOM_GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const CUSTOM_LLAMA3: [&str; 2] = [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
];
const CUSTOM_QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const CUSTOM_QWEN35: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const CUSTOM_KIMI_K2: &str = r"\p{Han}+";
const CUSTOM_AFMOE: [&str; 2] = [r"\p{AFMoE_digits}", r"\d{1,3}(?=(?:\d{3})*\b)"];
const CUSTOM_NEWLINES: &str = r"[^\n]+|[\n]+";

/// One step of a [`Splitter`]: a hand-written splitter or a compiled expression.
#[derive(Debug)]
enum Step {
    Gpt2,
    Llama3,
    Qwen2,
    Qwen35,
    KimiK2,
    Afmoe,
    Newlines,
    Regex(Box<regex::Expression>),
}

/// The pre-tokenizer expressions of [`split`], compiled once: build one per vocabulary and split
/// any number of texts with it (it is immutable, so threads may share it).
#[derive(Debug)]
pub struct Splitter {
    steps: Vec<Step>,
}

impl Splitter {
    /// Compiles `regexes` (applied in order, as llama.cpp's `unicode_regex_split` applies its
    /// `regex_exprs`). An error names an expression this matcher does not support (every
    /// expression of every [`PreType`] is supported) and says why.
    pub fn new(regexes: &[&str]) -> Result<Splitter, String> {
        let mut steps = Vec::with_capacity(regexes.len());
        for &re in regexes {
            let step = if re == CUSTOM_GPT2 {
                Step::Gpt2
            } else if CUSTOM_LLAMA3.contains(&re) {
                Step::Llama3
            } else if re == CUSTOM_QWEN2 {
                Step::Qwen2
            } else if re == CUSTOM_QWEN35 {
                Step::Qwen35
            } else if re == CUSTOM_KIMI_K2 {
                Step::KimiK2
            } else if CUSTOM_AFMOE.contains(&re) {
                Step::Afmoe
            } else if re == CUSTOM_NEWLINES {
                Step::Newlines
            } else {
                let program = regex::Expression::new(re)
                    .map_err(|e| format!("pre-tokenizer expression {re:?}: {e}"))?;
                Step::Regex(Box::new(program))
            };
            steps.push(step);
        }
        Ok(Splitter { steps })
    }

    /// The words of the code points `cpts`, as lengths in code points (in order, summing to
    /// `cpts.len()`; a length may be 0 where llama.cpp yields an empty word, which happens only
    /// for expressions that can match nothing, such as `superbpe`'s lookahead).
    pub fn split_cpts(&self, cpts: &[u32]) -> Vec<usize> {
        self.split_counting(cpts).0
    }

    /// The number of steps the expression matcher takes to split `cpts` (instructions run and
    /// backtracking frames popped; the hand-written splitters take none): instrumentation, for
    /// tests that the matcher runs in linear time.
    pub fn matcher_steps(&self, cpts: &[u32]) -> u64 {
        self.split_counting(cpts).1
    }

    fn split_counting(&self, cpts: &[u32]) -> (Vec<usize>, u64) {
        let mut matcher_steps = 0;
        let flags: Vec<u16> = cpts.iter().map(|&cp| flag_bits(cp)).collect();
        let mut offsets = vec![cpts.len()];
        let mut collapsed: Option<Vec<u32>> = None;
        let mut wide: Option<Vec<u32>> = None;
        for step in &self.steps {
            let text = Text {
                cpts,
                flags: &flags,
            };
            let next = match step {
                Step::Gpt2 => each_piece(&offsets, |a, b, out| gpt2(&text, a, b, out)),
                Step::Llama3 => each_piece(&offsets, |a, b, out| llama3(&text, a, b, out, 3)),
                Step::Qwen2 => each_piece(&offsets, |a, b, out| llama3(&text, a, b, out, 1)),
                Step::Qwen35 => each_piece(&offsets, |a, b, out| qwen35(&text, a, b, out)),
                Step::KimiK2 => each_piece(&offsets, |a, b, out| kimi_k2(&text, a, b, out)),
                Step::Afmoe => each_piece(&offsets, |a, b, out| afmoe(&text, a, b, out)),
                Step::Newlines => each_piece(&offsets, |a, b, out| newlines(&text, a, b, out)),
                Step::Regex(program) => {
                    let units = if program.collapsed {
                        collapsed.get_or_insert_with(|| collapse(cpts, &flags))
                    } else {
                        wide.get_or_insert_with(|| widen(cpts, &flags))
                    };
                    let mut out = Vec::with_capacity(offsets.len());
                    let mut start = 0;
                    let mut scratch = Scratch::default();
                    for &len in &offsets {
                        program.program.split_piece(
                            &units[start..start + len],
                            &mut out,
                            &mut scratch,
                        );
                        start += len;
                    }
                    matcher_steps += scratch.steps;
                    out
                }
            };
            // When a hand-written splitter yields nothing (every piece empty), llama.cpp runs
            // the expression through `std::regex` instead, which yields nothing either.
            offsets = next;
        }
        (offsets, matcher_steps)
    }

    /// The words of `text` (UTF-8, decoded as llama.cpp decodes it: each invalid byte becomes
    /// U+FFFD), each re-encoded as UTF-8 and, when `byte_encode`, mapped byte by byte to GPT-2's
    /// byte-level characters ([`super::unicode::byte_to_utf8`]), as llama.cpp's
    /// `unicode_regex_split(text, regex_exprs, byte_encode)`.
    ///
    /// llama.cpp throws instead when `text` decodes to a code point above 0x10FFFF (lead bytes
    /// 0xF4 to 0xF7 followed by continuation bytes: it cannot re-encode the word); here such a
    /// code point is re-encoded from its bits, giving back the four bytes it came from. For the
    /// Kimi K2 and AFMoE expressions llama.cpp also throws on empty text; here there are no words.
    pub fn split(&self, text: &[u8], byte_encode: bool) -> Vec<Vec<u8>> {
        let mut words = Vec::new();
        self.for_each_word(text, byte_encode, |w| words.push(w.to_vec()));
        words
    }

    /// The words [`split`](Self::split) gives, each handed to `word` in turn from one buffer
    /// reused between them (no vector of words).
    pub fn for_each_word(&self, text: &[u8], byte_encode: bool, mut word: impl FnMut(&[u8])) {
        let cpts = cpts_from_utf8(text);
        let offsets = self.split_cpts(&cpts);
        let mut start = 0;
        let mut utf8 = Vec::with_capacity(4);
        let mut buf = Vec::new();
        for len in offsets {
            let cps = &cpts[start..start + len];
            start += len;
            buf.clear();
            for &cp in cps {
                if byte_encode {
                    utf8.clear();
                    cpt_to_utf8(cp, &mut utf8);
                    for &b in &utf8 {
                        buf.extend_from_slice(byte_to_utf8_bytes(b));
                    }
                } else {
                    cpt_to_utf8(cp, &mut buf);
                }
            }
            word(&buf);
        }
    }
}

/// The words llama.cpp's `unicode_regex_split(text, regexes, byte_encode)` gives (see
/// [`Splitter::split`]; build a [`Splitter`] once to split many texts).
///
/// # Panics
///
/// When [`Splitter::new`] rejects `regexes` (never for the expressions of a [`PreType`]).
pub fn split(text: &[u8], regexes: &[&str], byte_encode: bool) -> Vec<Vec<u8>> {
    match Splitter::new(regexes) {
        Ok(splitter) => splitter.split(text, byte_encode),
        Err(e) => panic!("{e}"),
    }
}

/// Applies `f(start, end, out)` to each piece `start..end` of the code points, in order.
fn each_piece(offsets: &[usize], mut f: impl FnMut(usize, usize, &mut Vec<usize>)) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &len in offsets {
        f(start, start + len, &mut out);
        start += len;
    }
    out
}

/// The stand-in llama.cpp's `std::regex` path reads when an expression names a category: one
/// byte per code point.
fn collapse(cpts: &[u32], flags: &[u16]) -> Vec<u32> {
    cpts.iter()
        .zip(flags)
        .map(|(&cp, &f)| {
            if cp < 128 {
                cp
            } else if f & Flags::WHITESPACE != 0 {
                0x0B
            } else {
                match f & Flags::MASK_CATEGORIES {
                    Flags::NUMBER => 0xD1,
                    Flags::LETTER => 0xD2,
                    Flags::PUNCTUATION => 0xD3,
                    Flags::ACCENT_MARK => 0xD4,
                    Flags::SYMBOL => 0xD5,
                    _ => 0xD0,
                }
            }
        })
        .collect()
}

/// The code points llama.cpp's `std::wregex` path reads: non-ASCII whitespace becomes 0x0B.
fn widen(cpts: &[u32], flags: &[u16]) -> Vec<u32> {
    cpts.iter()
        .zip(flags)
        .map(|(&cp, &f)| {
            if cp > 0x7F && f & Flags::WHITESPACE != 0 {
                0x0B
            } else {
                cp
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "Hello world's  I'M 12345 \u{4e2d}\u{6587}!!\r\n\n  x\u{e9}\u{301} \u{1F600}";

    fn words(pre: PreType, text: &str, byte_encode: bool) -> Vec<String> {
        split(text.as_bytes(), pre.regexes(), byte_encode)
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    /// Splits recorded from llama.cpp's `unicode_regex_split` (the host test compares every
    /// pre-tokenizer with it; these run on every target).
    #[test]
    fn splits_recorded_from_llama_cpp() {
        let cases: &[(PreType, &[&str])] = &[
            (
                PreType::Gpt2,
                &[
                    "Hello", " world", "'s", " ", " I", "'", "M", " 12345", " 中文", "!!",
                    "\r\n\n ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Llama3,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "123", "45", " 中文",
                    "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Qwen2,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "1", "2", "3", "4", "5",
                    " 中文", "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Deepseek3Llm,
                &[
                    "Hello",
                    " world",
                    "'s",
                    " ",
                    " I",
                    "'M",
                    " ",
                    "123",
                    "45",
                    " ",
                    "中文",
                    "!!\r\n\n",
                    " ",
                    " xé\u{301}",
                    " 😀",
                ],
            ),
            (
                PreType::Gpt4o,
                &[
                    "Hello", " world's", " ", " I'M", " ", "123", "45", " 中文", "!!\r\n\n", " ",
                    " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::DeepseekLlm,
                &[
                    "Hello",
                    " world",
                    "'",
                    "s",
                    " ",
                    " I",
                    "'",
                    "M",
                    " ",
                    "12345",
                    " ",
                    "中文",
                    "!!",
                    "\r",
                    "\n",
                    "\n",
                    " ",
                    " x",
                    "é",
                    "\u{301} 😀",
                ],
            ),
            (
                PreType::Poro,
                &[
                    "Hello",
                    " world's",
                    " ",
                    " I'M",
                    " 12345",
                    " 中文",
                    "!!\r\n\n ",
                    " xé\u{301}",
                    " 😀",
                ],
            ),
            (
                PreType::KimiK2,
                &[
                    "Hello", " world's", " ", " I'M", " ", "123", "45", " ", "中文", "!!\r\n\n",
                    " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Tekken,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "1", "2", "3", "4", "5",
                    " 中文", "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Default,
                &[
                    "Hello", " world", "'", "s", " ", " I", "'", "M", " ", "123", "45", " 中文",
                    "!!", "\r\n\n ", " xé", "\u{301}", " 😀",
                ],
            ),
        ];
        for (pre, expected) in cases {
            assert_eq!(words(*pre, TEXT, false), *expected, "{pre:?}");
        }
        // Byte-level: GPT-2's characters for each byte.
        assert_eq!(
            words(PreType::Gpt2, TEXT, true),
            [
                "Hello",
                "Ġworld",
                "'s",
                "Ġ",
                "ĠI",
                "'",
                "M",
                "Ġ12345",
                "Ġä¸Ńæĸĩ",
                "!!",
                "čĊĊĠ",
                "ĠxÃ©",
                "Ìģ",
                "ĠðŁĺĢ"
            ]
        );
        // `superbpe`'s lookahead matches nothing, and llama.cpp keeps the empty words.
        assert_eq!(
            words(PreType::Superbpe, "a 1234567 89", false),
            ["a ", "1", "", "234", "", "567", " ", "89"]
        );
    }

    #[test]
    fn every_pre_tokenizer_compiles_and_covers_its_text() {
        let text = "Hello 'World' 123\t\r\n \u{a0}中文 \u{301}\u{ff}\0".as_bytes();
        for pre in PreType::ALL {
            let splitter = Splitter::new(pre.regexes()).unwrap();
            let cpts = cpts_from_utf8(text);
            assert_eq!(
                splitter.split_cpts(&cpts).iter().sum::<usize>(),
                cpts.len(),
                "{pre:?}"
            );
            assert_eq!(splitter.split(text, false).concat(), text, "{pre:?}");
        }
        assert_eq!(PreType::from_name("llama-bpe"), Some(PreType::Llama3));
        assert_eq!(PreType::from_name("qwen2"), Some(PreType::Qwen2));
        assert_eq!(PreType::from_name("gpt-4o"), Some(PreType::Gpt4o));
        assert_eq!(PreType::from_name("nonsense"), None);
        assert!(!PreType::Gemma4.byte_encode() && PreType::Gpt2.byte_encode());
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let words = split(b"ab\xFFcd", PreType::Gpt2.regexes(), false);
        assert_eq!(
            words,
            [
                b"ab".to_vec(),
                "\u{FFFD}".as_bytes().to_vec(),
                b"cd".to_vec()
            ]
        );
        assert!(split(b"", PreType::Llama3.regexes(), true).is_empty());
    }

    #[test]
    fn a_splitter_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Splitter>();
        shared::<PreType>();
    }

    #[test]
    fn unsupported_expressions_are_errors() {
        assert!(Splitter::new(&["(a"]).is_err());
        assert!(Splitter::new(&[r"(a)\1"]).is_err());
        assert!(Splitter::new(&[r"\p{L}é"]).is_err());
        assert!(Splitter::new(&["(a*)*"]).is_err());
    }
}
