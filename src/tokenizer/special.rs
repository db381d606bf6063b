//! Special-token text cut out of the input before tokenizing, as llama.cpp's
//! `tokenizer_st_partition` does: each special token in turn (longest first) is found in the
//! text fragments left by the ones before it, with its lstrip/rstrip attributes taking the
//! whitespace beside it.

use super::vocab::{attr, Vocab};

/// A piece of the input: a token already decided, or a byte range still to tokenize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fragment {
    /// A special token.
    Token(u32),
    /// The input's bytes `start..end` (never empty).
    Text(usize, usize),
}

/// C's `isspace` in the "C" locale.
#[inline]
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The first occurrence of `needle` (not empty) in `hay`.
#[inline]
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    if hay.len() < needle.len() {
        return None;
    }
    let last_start = hay.len() - needle.len();
    let mut from = 0;
    while from <= last_start {
        let at = from + hay[from..=last_start].iter().position(|&b| b == first)?;
        if &hay[at + 1..at + needle.len()] == rest {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `text` cut into fragments by the special tokens `specials` (in llama.cpp's order: longest
/// first). Control and unknown tokens are cut only when `parse_special` is set; user-defined ones
/// always.
pub(crate) fn partition(
    vocab: &Vocab,
    specials: &[u32],
    text: &[u8],
    parse_special: bool,
) -> Vec<Fragment> {
    let mut fragments = Vec::new();
    if text.is_empty() {
        return fragments;
    }
    fragments.push(Fragment::Text(0, text.len()));
    let mut next = Vec::new();
    for &id in specials {
        let a = vocab.attr(id);
        if !parse_special && a & (attr::CONTROL | attr::UNKNOWN) != 0 {
            continue;
        }
        let tok = vocab.text(id as usize);
        if tok.is_empty() {
            continue;
        }
        // Most special tokens occur nowhere: one search of each text fragment tells.
        let occurs = fragments.iter().any(|f| match *f {
            Fragment::Text(s, e) => find(&text[s..e], tok).is_some(),
            Fragment::Token(_) => false,
        });
        if !occurs {
            continue;
        }
        next.clear();
        next.reserve(fragments.len() + 2);
        for &f in &fragments {
            let Fragment::Text(mut start, end) = f else {
                next.push(f);
                continue;
            };
            loop {
                let Some(rel) = find(&text[start..end], tok) else {
                    next.push(Fragment::Text(start, end));
                    break;
                };
                let at = start + rel;
                if at > start {
                    let mut left_end = at;
                    if a & attr::LSTRIP != 0 {
                        while left_end > start && is_c_space(text[left_end - 1]) {
                            left_end -= 1;
                        }
                    }
                    if left_end > start {
                        next.push(Fragment::Text(start, left_end));
                    }
                }
                next.push(Fragment::Token(id));
                let mut right = at + tok.len();
                if right >= end {
                    break;
                }
                if a & attr::RSTRIP != 0 {
                    while right < end && is_c_space(text[right]) {
                        right += 1;
                    }
                }
                if right >= end {
                    break;
                }
                start = right;
            }
        }
        std::mem::swap(&mut fragments, &mut next);
    }
    fragments
}

#[cfg(test)]
mod tests {
    use super::find;

    #[test]
    fn find_matches_the_first_occurrence() {
        assert_eq!(find(b"abcabc", b"ca"), Some(2));
        assert_eq!(find(b"abc", b"abcd"), None);
        assert_eq!(find(b"aab", b"ab"), Some(1));
        assert_eq!(find(b"", b"a"), None);
        assert_eq!(find(b"xyz", b"z"), Some(2));
    }
}
