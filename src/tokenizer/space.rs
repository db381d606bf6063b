//! SentencePiece's visible space (U+2581): spaces escaped into it and back.

/// `text` with every space as U+2581 (SentencePiece's visible space), appended to `out`.
pub(crate) fn escape_whitespace(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        if b == b' ' {
            out.extend_from_slice("\u{2581}".as_bytes());
        } else {
            out.push(b);
        }
    }
}

/// `text` with every U+2581 as a space, appended to `out`.
pub(crate) fn unescape_whitespace(text: &[u8], out: &mut Vec<u8>) {
    let mark = "\u{2581}".as_bytes();
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(mark) {
            out.push(b' ');
            i += mark.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_escapes_round_trip() {
        let mut e = Vec::new();
        escape_whitespace(b" a  b", &mut e);
        assert_eq!(e, "\u{2581}a\u{2581}\u{2581}b".as_bytes());
        let mut u = Vec::new();
        unescape_whitespace(&e, &mut u);
        assert_eq!(u, b" a  b");
    }
}
