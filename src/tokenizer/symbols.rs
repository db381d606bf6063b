//! A text's UTF-8 characters as linked symbols, the unit the BPE merges join, and the order a
//! merge queue pops in.

use super::unicode::len_utf8;

/// A run of the text: `start..start + len`, linked to its neighbours (`usize::MAX`: none).
#[derive(Clone, Copy)]
pub(crate) struct Symbol {
    pub start: usize,
    pub len: usize,
    pub prev: usize,
    pub next: usize,
}

pub(crate) const NONE: usize = usize::MAX;

/// `PartialEq`, `Eq` and `PartialOrd` for a merge queue's entry from its `Ord`, the order the
/// queue pops in (entries are equal when neither comes first).
macro_rules! order_from_cmp {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other) == std::cmp::Ordering::Equal
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
    };
}
pub(crate) use order_from_cmp;

/// Splits `text` into UTF-8 characters (a lead byte's length, cut at the end), linked in order.
pub(crate) fn symbols(text: &[u8], out: &mut Vec<Symbol>) {
    out.clear();
    let mut offs = 0;
    while offs < text.len() {
        let len = len_utf8(text[offs]).min(text.len() - offs);
        let index = out.len();
        out.push(Symbol {
            start: offs,
            len,
            prev: if index == 0 { NONE } else { index - 1 },
            next: if offs + len == text.len() {
                NONE
            } else {
                index + 1
            },
        });
        offs += len;
    }
}
