//! Errors: a stable code per rule, the byte offset where the rule was broken, and a message
//! saying what was expected and what was found.

use std::fmt;

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

    /// The same error, naming the file it concerns.
    pub fn in_file(mut self, path: impl Into<String>) -> Error {
        self.0.path = Some(path.into());
        self
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
            write!(f, "{path}: ")?;
        }
        if let Some(offset) = self.0.offset {
            write!(f, "offset {offset}: ")?;
        }
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {}

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
}
