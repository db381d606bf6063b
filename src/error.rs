//! Errors: a stable code per rule, the byte offset where the rule was broken, and a message
//! saying what was expected and what was found.

use std::fmt;
use std::path::Path;

/// Why an operation failed. The numeric values are stable: they are part of the C API
/// (`GGUF_ERROR_CODE_*` in `gguf.h`) and never change meaning once released.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// No error.
    None = 0,
    /// The file could not be opened, sized or mapped.
    Io = 1,
    /// A required pointer argument was NULL.
    NullArgument = 2,
    /// An argument was out of range or did not belong to this handle.
    InvalidArgument = 3,
    /// No key or tensor has that name.
    NotFound = 4,
    /// The value exists but has another type than the accessor reads.
    WrongType = 5,
    /// Memory for a result could not be allocated.
    OutOfMemory = 6,
    /// An internal error was caught at the C boundary (a bug: please report it).
    Internal = 7,
    /// The operation does not apply to this handle (e.g. paging advice for lent memory).
    Unsupported = 8,

    /// The file ends in the middle of a field.
    Truncated = 10,
    /// The file does not start with `GGUF`.
    BadMagic = 11,
    /// The version is not 1, 2 or 3.
    UnsupportedVersion = 12,
    /// The tensor count cannot fit in the bytes that follow the header.
    TensorCountTooLarge = 13,
    /// The key-value count cannot fit in the bytes that follow the header.
    KeyCountTooLarge = 14,
    /// A string's length runs past the end of the file.
    StringTooLong = 15,

    /// A metadata key is empty.
    EmptyKey = 20,
    /// Two metadata entries have the same key.
    DuplicateKey = 21,
    /// A value type or array element type is not one of the 13 the format defines.
    BadValueType = 22,
    /// An array's element count cannot fit in the bytes that remain.
    ArrayTooLong = 23,
    /// Arrays are nested deeper than 8 levels (`MAX_ARRAY_DEPTH` in `src/format.rs`).
    ArrayTooDeep = 24,
    /// A boolean is stored as a byte other than 0 or 1.
    BadBool = 25,
    /// `general.alignment` is not a UINT32 power of two no larger than 2^24 (`MAX_ALIGNMENT` in
    /// `src/format.rs`).
    BadAlignment = 26,

    /// Two tensors have the same name.
    DuplicateTensor = 30,
    /// A tensor has more than 4 dimensions.
    TooManyDims = 31,
    /// A tensor's element count or byte size does not fit in 64 bits.
    SizeOverflow = 32,
    /// A tensor's data type is unknown or was removed from ggml.
    BadDataType = 33,
    /// A tensor's first dimension is not a multiple of its type's block size.
    BadBlockMultiple = 34,
    /// A tensor's offset is not a multiple of the alignment.
    MisalignedOffset = 35,
    /// A tensor's data ends past the end of the file.
    DataOutOfBounds = 36,
    /// Two tensors' data ranges overlap.
    DataOverlap = 37,

    /// The shards of a split model do not fit together: a shard is missing, misnumbered, or
    /// disagrees with the others on the shard or tensor count.
    ShardMismatch = 40,
}

impl ErrorCode {
    /// A short, stable, human-readable name for the code.
    pub fn describe(self) -> &'static str {
        use ErrorCode::*;
        match self {
            None => "no error",
            Io => "I/O error",
            NullArgument => "NULL argument",
            InvalidArgument => "invalid argument",
            NotFound => "not found",
            WrongType => "wrong type",
            OutOfMemory => "out of memory",
            Internal => "internal error",
            Unsupported => "unsupported",
            Truncated => "truncated file",
            BadMagic => "bad magic",
            UnsupportedVersion => "unsupported version",
            TensorCountTooLarge => "tensor count too large",
            KeyCountTooLarge => "key-value count too large",
            StringTooLong => "string too long",
            EmptyKey => "empty key",
            DuplicateKey => "duplicate key",
            BadValueType => "bad value type",
            ArrayTooLong => "array too long",
            ArrayTooDeep => "arrays nested too deep",
            BadBool => "bad boolean",
            BadAlignment => "bad alignment",
            DuplicateTensor => "duplicate tensor",
            TooManyDims => "too many dimensions",
            SizeOverflow => "size overflow",
            BadDataType => "bad data type",
            BadBlockMultiple => "dimension not a multiple of the block size",
            MisalignedOffset => "misaligned tensor offset",
            DataOutOfBounds => "tensor data out of bounds",
            DataOverlap => "tensor data overlap",
            ShardMismatch => "shard mismatch",
        }
    }
}

/// An error with its code, the byte offset it concerns (when it concerns the file), the file it
/// concerns (when known) and a message stating what was expected and what was found.
///
/// Boxed, so that every `Result` on the parser's hot path stays two words and is returned in
/// registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(Box<Details>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Details {
    code: ErrorCode,
    offset: Option<u64>,
    path: Option<String>,
    message: String,
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error about the bytes at `offset`.
    pub fn at(code: ErrorCode, offset: u64, message: impl Into<String>) -> Error {
        Error(Box::new(Details {
            code,
            offset: Some(offset),
            path: None,
            message: message.into(),
        }))
    }

    /// An error about no particular byte (an argument, a missing key, an I/O failure).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error(Box::new(Details {
            code,
            offset: None,
            path: None,
            message: message.into(),
        }))
    }

    /// The same error, naming the file it concerns. `path` is shown as given: pass text made
    /// by [`path_text`] (or [`Error::in_path`]) for a path that may hold any byte.
    pub fn in_file(mut self, path: impl Into<String>) -> Error {
        self.0.path = Some(path.into());
        self
    }

    /// The same error, naming the file at `path`, its bytes escaped as [`path_text`] does.
    pub fn in_path(self, path: &Path) -> Error {
        self.in_file(path_text(path))
    }

    /// The same error with `context` (what was being read) before its message.
    pub(crate) fn context(mut self, context: impl fmt::Display) -> Error {
        self.0.message = format!("{context}: {}", self.0.message);
        self
    }

    /// Whether the error says the bytes ran out before what the file declares: a field cut
    /// off, or a length or count larger than the bytes left (a truncated file, or a corrupt
    /// length).
    pub(crate) fn is_early_end(&self) -> bool {
        use ErrorCode::*;
        matches!(
            self.code(),
            Truncated | StringTooLong | ArrayTooLong | TensorCountTooLarge | KeyCountTooLarge
        )
    }

    /// The rule that was broken.
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// The byte offset in the file the error concerns, if any.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }

    /// The file the error concerns, if known.
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }

    /// What was expected and what was found, without the file and offset prefix.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    /// `gguf: model.gguf: offset 1024: tensor 'x' data ends at 9437216, past the end of the file (9437000 bytes)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("gguf: ")?;
        if let Some(path) = &self.0.path {
            write!(f, "{}: ", escape_controls(path))?;
        }
        if let Some(offset) = self.0.offset {
            write!(f, "offset {offset}: ")?;
        }
        // Names and paths are escaped where they enter a message; this catches text that
        // entered otherwise (a path given as a string, an OS message), so no message prints raw.
        f.write_str(&escape_controls(&self.0.message))
    }
}

impl std::error::Error for Error {}

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
fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
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
pub fn path_text(path: &Path) -> String {
    // The platform's own encoding of the path: any bytes on Unix, WTF-8 on Windows.
    escape(path.as_os_str().as_encoded_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_offset_and_message() {
        let e = Error::at(
            ErrorCode::DataOutOfBounds,
            1024,
            "tensor 'w' data ends at 10",
        )
        .in_file("model.gguf");
        assert_eq!(
            e.to_string(),
            "gguf: model.gguf: offset 1024: tensor 'w' data ends at 10"
        );
        assert_eq!(e.code(), ErrorCode::DataOutOfBounds);
        assert_eq!(e.offset(), Some(1024));
        let e = Error::new(ErrorCode::NotFound, "no key 'k'");
        assert_eq!(e.to_string(), "gguf: no key 'k'");
    }

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
    #[cfg(unix)]
    fn paths_show_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"/m/caf\xe9/\x1b.gguf"));
        assert_eq!(path_text(path), "/m/caf\\xe9/\\x1b.gguf");
        let e = Error::new(ErrorCode::Io, "x").in_path(path);
        assert_eq!(e.to_string(), "gguf: /m/caf\\xe9/\\x1b.gguf: x");
    }

    #[test]
    fn display_escapes_text_that_did_not_come_through_escape() {
        let e = Error::new(ErrorCode::Io, "os said \x1b[2J\u{202e}").in_file("p\nq\\r");
        assert_eq!(
            e.to_string(),
            "gguf: p\\x0aq\\r: os said \\x1b[2J\\xe2\\x80\\xae"
        );
        // Escaped text is left as it is.
        let e = Error::new(ErrorCode::NotFound, format!("no key {}", quote(b"a\x1b\\")));
        assert_eq!(e.to_string(), "gguf: no key 'a\\x1b\\\\'");
    }
}
