//! The newline-runs hand-written splitter.

use super::piece::Text;

/// llama.cpp's `unicode_regex_split_custom_newlines` on the piece `ini..end`: runs of `\n` and
/// runs of anything else.
pub(super) fn newlines(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut pos = ini;
    while pos < end {
        let nl = text.cpts[pos] == u32::from(b'\n');
        let first = pos;
        while pos < end && (text.cpts[pos] == u32::from(b'\n')) == nl {
            pos += 1;
        }
        out.push(pos - first);
    }
}
