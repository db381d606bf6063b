//! AFMoE's hand-written splitter: digit runs grouped by three from their end.

use super::piece::{Piece, Text, NUMBER};

/// llama.cpp's `unicode_regex_split_custom_afmoe` on the piece `ini..end`: each digit run
/// split into groups of three from its end (the first group of 1 or 2), everything else
/// kept together between them.
pub(super) fn afmoe(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        if p.flags(pos) & NUMBER != 0 {
            let first = pos;
            while pos < end && p.flags(pos) & NUMBER != 0 {
                pos += 1;
            }
            let count = pos - first;
            let mut current = first;
            if count % 3 > 0 {
                current += count % 3;
                p.add(current);
            }
            while current < first + count {
                current += 3;
                p.add(current);
            }
            continue;
        }
        pos += 1;
    }
    if p.prev_end < end {
        p.add(end);
    }
}
