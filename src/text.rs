//! Text for messages: names, keys and paths from files and callers, escaped so that a message
//! is safe to print and reads back unambiguously.

use std::path::Path;

/// Appends `bytes` to `out` as text that is safe to print and reads back unambiguously. UTF-8
/// text is kept, except what a terminal would act on or that could disguise the text: C0 and C1
/// control characters and DEL (a name holding ESC, CR or LF could clear the screen, retitle the
/// terminal or forge a line of output), and Unicode's invisible and direction-changing formatting
/// characters. Those, and every byte that is not valid UTF-8, are shown as `\xNN` per byte; a
/// backslash is doubled, so that `\x` always starts an escape.
pub fn escape_into(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if is_hidden(c) {
                push_hex(out, c.encode_utf8(&mut [0; 4]).as_bytes());
            } else {
                out.push(c);
            }
        }
        push_hex(out, chunk.invalid());
    }
}

/// `text` with the characters [`escape_into`] shows as `\xNN` so shown, and nothing else
/// changed: text that has been through [`escape`] passes unchanged (and unallocated).
pub(crate) fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            push_hex(&mut out, c.encode_utf8(&mut [0; 4]).as_bytes());
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// Appends `\xNN` for each byte.
fn push_hex(out: &mut String, bytes: &[u8]) {
    use std::fmt::Write;
    for b in bytes {
        let _ = write!(out, "\\x{b:02x}");
    }
}

/// Characters a message never holds raw: controls (C0, DEL, C1) and [`is_format_char`]s.
fn is_hidden(c: char) -> bool {
    c.is_control() || is_format_char(c)
}

/// `bytes` escaped as [`escape_into`] does.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    escape_into(&mut out, bytes);
    out
}

/// Invisible characters and those that reorder or hide the text around them (Unicode's
/// zero-width, line/paragraph separator, bidirectional embedding, override and isolate marks,
/// and the byte order mark).
fn is_format_char(c: char) -> bool {
    matches!(c,
        '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// A name from a file, quoted for a message: escaped as [`escape`] does, and cut after 80 bytes
/// (at a character boundary) with `...` so that one long name cannot flood the message.
pub fn quote(name: &[u8]) -> String {
    const MAX: usize = 80;
    if name.len() <= MAX {
        return format!("'{}'", escape(name));
    }
    // Back off from a cut inside a UTF-8 sequence (at most 3 continuation bytes).
    let mut end = MAX;
    while end > MAX - 3 && name[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    format!("'{}...'", escape(&name[..end]))
}

/// A path for a message: its exact bytes, escaped as [`escape`] does (a path may hold any byte
/// but NUL on Unix; a lossy conversion would show two different names the same).
///
/// On Windows the separator `\` is shown as it is, as Windows shows paths (no file name holds
/// one), not doubled as a backslash in a name is elsewhere.
pub fn path_text(path: &Path) -> String {
    // The platform's own encoding of the path: any bytes on Unix, WTF-8 on Windows.
    escape_path(path.as_os_str().as_encoded_bytes(), cfg!(windows))
}

/// [`path_text`] of a path's bytes, `\` being a separator when `backslash_separates`.
fn escape_path(bytes: &[u8], backslash_separates: bool) -> String {
    if !backslash_separates {
        return escape(bytes);
    }
    let mut out = String::with_capacity(bytes.len());
    for (i, part) in bytes.split(|&b| b == b'\\').enumerate() {
        if i > 0 {
            out.push('\\');
        }
        escape_into(&mut out, part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_text_and_shows_every_dangerous_byte() {
        assert_eq!(escape(b"blk.0.attn_q.weight"), "blk.0.attn_q.weight");
        assert_eq!(
            escape("h\u{e9}llo \u{4e16}\u{754c}".as_bytes()),
            "h\u{e9}llo \u{4e16}\u{754c}"
        );
        // C0 controls, DEL, a C1 control (U+009B, CSI), a lone 0x9b byte, invalid UTF-8.
        assert_eq!(
            escape(b"\x00\x07\x1b[2J\r\n\x7f\xc2\x9b\x9b\xff\xc3"),
            "\\x00\\x07\\x1b[2J\\x0d\\x0a\\x7f\\xc2\\x9b\\x9b\\xff\\xc3"
        );
        // Invisible and direction-changing characters.
        assert_eq!(
            escape("a\u{202e}b\u{200b}c\u{2066}d\u{feff}".as_bytes()),
            "a\\xe2\\x80\\xaeb\\xe2\\x80\\x8bc\\xe2\\x81\\xa6d\\xef\\xbb\\xbf"
        );
        // A backslash is doubled, so `\x41` in a name cannot pass for an escaped byte.
        assert_eq!(escape(b"\\x41"), "\\\\x41");
        assert_ne!(escape(b"\\x41"), escape(b"A"));
    }

    #[test]
    fn quoting_cuts_long_names() {
        assert_eq!(quote(b"k\n"), "'k\\x0a'");
        let long = [b'x'; 100];
        assert_eq!(quote(&long), format!("'{}...'", "x".repeat(80)));
        assert_eq!(quote(&long[..80]), format!("'{}'", "x".repeat(80)));
    }

    #[test]
    fn windows_paths_keep_their_separators() {
        // A backslash separates on Windows (shown once); elsewhere it is a name's byte (doubled).
        let bytes = "C:\\m\\caf\u{e9}\\\u{202e}.gguf".as_bytes();
        assert_eq!(
            escape_path(bytes, true),
            "C:\\m\\caf\u{e9}\\\\xe2\\x80\\xae.gguf"
        );
        assert_eq!(
            escape_path(b"C:\\a\\b", false),
            "C:\\\\a\\\\b",
            "a Unix name holding backslashes"
        );
        #[cfg(windows)]
        assert_eq!(path_text(Path::new("C:\\m\\x.gguf")), "C:\\m\\x.gguf");
    }
}
