//! Errors: a stable code per rule, the byte offset where the rule was broken, and a message
//! saying what was expected and what was found.

use crate::text::escape_controls;
use crate::types::{DataType, ValueType};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// Text escaping for messages lives in [`crate::text`]; kept reachable here as well.
pub use crate::text::{escape, escape_into, path_text, quote};

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
    /// The caller's progress callback asked to stop (`gguf_read_tensors`).
    Cancelled = 9,

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
    /// A tensor holds a NaN or an infinity where ggml's `ggml_validate_row_data` refuses one (a
    /// float value or a quantized block's scale): `gguf_validate_tensor`.
    BadValue = 38,

    /// The shards of a split model do not fit together: a shard is missing, misnumbered, or
    /// disagrees with the others on the shard or tensor count.
    ShardMismatch = 40,

    /// A chat template does not parse (the message names its line and column), or is not UTF-8.
    TemplateSyntax = 50,
    /// A chat template failed while rendering: it raised an exception (the message is the
    /// template's own), or called what does not exist or what the sandbox refuses.
    TemplateRender = 51,
    /// A chat template reached one of the renderer's bounds (its work, recursion or size).
    TemplateLimit = 52,
    /// A chat request is not valid JSON (the offset is its byte), or not of the request's shape.
    BadRequest = 53,
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
            Cancelled => "cancelled",
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
            BadValue => "NaN or infinity in tensor data",
            ShardMismatch => "shard mismatch",
            TemplateSyntax => "chat template syntax error",
            TemplateRender => "chat template error",
            TemplateLimit => "chat template limit reached",
            BadRequest => "bad chat request",
        }
    }
}

/// What went wrong, as data: one variant per rule of the format (each mapping to its stable
/// [`ErrorCode`]) with the facts a caller may want (names, counts, what was expected and
/// found), and the failures outside the file (I/O, arguments). `Display` is the message without
/// the file, offset and context that [`Error`] adds.
///
/// Names from the file (`key`, `tensor`) are held quoted and escaped as [`quote`] makes them, so
/// that they are safe to print.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An operating-system call failed; `source` is its error.
    #[error("{context}: {source}{advice}")]
    Io {
        /// What was being done (`cannot open the file`, `cannot write`).
        context: String,
        /// The operating system's error (shared, so that the error can be cloned: a writer
        /// reports the same failure again on later calls). `std::error::Error::source` of the
        /// [`Error`] gives it as `&std::io::Error`.
        #[source]
        source: Arc<std::io::Error>,
        /// What may help, as `: ...` after the OS message, or empty.
        advice: String,
    },
    /// The file cannot be used though no call failed (not a regular file, a size the system
    /// reports wrongly, a directory where a file is to be written, a source cut short).
    #[error("{message}")]
    FileUnusable {
        /// Why.
        message: String,
    },
    /// A required pointer argument was NULL.
    #[error("{what} is NULL")]
    NullArgument {
        /// The argument's name.
        what: String,
    },
    /// An argument was out of range or did not belong to this handle.
    #[error("{message}")]
    InvalidArgument {
        /// What was wrong with it.
        message: String,
    },
    /// No key or tensor has that name.
    #[error("{message}")]
    NotFound {
        /// What was looked for.
        message: String,
    },
    /// The value exists but has another type than the accessor reads.
    #[error("{message}")]
    WrongType {
        /// The type asked for and the type found.
        message: String,
    },
    /// Memory for a result could not be allocated.
    #[error("{message}")]
    OutOfMemory {
        /// For what.
        message: String,
    },
    /// An internal error (a bug: please report it).
    #[error("{message}")]
    Internal {
        /// What is known of it.
        message: String,
    },
    /// The operation does not apply to this handle.
    #[error("{message}")]
    Unsupported {
        /// Why.
        message: String,
    },
    /// The caller asked to stop.
    #[error("{message}")]
    Cancelled {
        /// What was stopped, and how far it had got.
        message: String,
    },

    /// The file ends in the middle of a field.
    #[error("expected {needed} bytes for {reading}, found {}", found_before_end(*.remaining, *.empty_file))]
    Truncated {
        /// The field (`the magic`, `the key`).
        reading: String,
        /// Its size in bytes.
        needed: u64,
        /// The bytes left in the file.
        remaining: u64,
        /// Whether the file is empty.
        empty_file: bool,
    },
    /// The file does not start with `GGUF`.
    #[error("expected magic 'GGUF' (47 47 55 46), found {:02x} {:02x} {:02x} {:02x}", .found[0], .found[1], .found[2], .found[3])]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// The version is not 1, 2 or 3.
    #[error("expected version 1, 2 or 3, found {found}")]
    UnsupportedVersion {
        /// The version read (as stored, in the file's byte order).
        found: u32,
    },
    /// The tensor count cannot fit in the bytes that follow.
    #[error("the tensor count is {count}{}", shortfall.after(*.count))]
    TensorCountTooLarge {
        /// The count read.
        count: u64,
        /// Why it cannot be.
        shortfall: Shortfall,
    },
    /// The key-value count cannot fit in the bytes that follow.
    #[error("the key-value count is {count}{}", shortfall.after(*.count))]
    KeyCountTooLarge {
        /// The count read.
        count: u64,
        /// Why it cannot be.
        shortfall: Shortfall,
    },
    /// A string's length runs past the end of the file.
    #[error("{reading} has length {len}, past the end of the file ({remaining} bytes remain)")]
    StringTooLong {
        /// The string (`the key`, `the tensor name`).
        reading: String,
        /// The length read.
        len: u64,
        /// The bytes left after the length.
        remaining: u64,
    },
    /// A metadata key is empty (in a file, or given to the writer when `refused`).
    #[error("{}", if *.refused { "metadata keys must not be empty" } else { "expected a non-empty key, found length 0" })]
    EmptyKey {
        /// Whether the writer refused it (rather than a file holding it).
        refused: bool,
    },
    /// Two metadata entries have the same key.
    #[error("key {key} {}", first.text("set"))]
    DuplicateKey {
        /// The key, quoted.
        key: String,
        /// Where it was first met.
        first: FirstSeen,
    },
    /// A value type or array element type is not one of the 13 the format defines.
    #[error("expected a value type from 0 to 12, found {found}")]
    BadValueType {
        /// The type id read.
        found: u32,
    },
    /// An array given to the writer holds an element of another type than its own
    /// ([`ErrorCode::BadValueType`]).
    #[error("array of {} holds a {} element", .elem.name(), .found.name())]
    MixedArray {
        /// The array's element type.
        elem: ValueType,
        /// The type of the element that differs.
        found: ValueType,
    },
    /// An array's element count cannot fit in the bytes that remain.
    #[error("{reading} is an array of {count} {} elements{}", .elem.name(), shortfall.after(*.count))]
    ArrayTooLong {
        /// The value holding the array.
        reading: String,
        /// The element type.
        elem: ValueType,
        /// The element count read.
        count: u64,
        /// Why it cannot be.
        shortfall: Shortfall,
    },
    /// Arrays are nested deeper than `max` levels.
    #[error("arrays nested deeper than {max} levels")]
    ArrayTooDeep {
        /// The deepest nesting read ([`MAX_ARRAY_DEPTH`](crate::format::MAX_ARRAY_DEPTH)).
        max: usize,
    },
    /// A boolean is stored as a byte other than 0 or 1.
    #[error("{}", bad_bool_text(*.found, *.element))]
    BadBool {
        /// The byte.
        found: u8,
        /// Which element of an array given to the writer, if one was.
        element: Option<u64>,
    },
    /// `general.alignment` is not a UINT32 power of two no larger than 2^24.
    #[error("{found}")]
    BadAlignment {
        /// What it is instead.
        found: AlignmentFound,
    },
    /// Two tensors have the same name.
    #[error("tensor {tensor} {}", first.text("added"))]
    DuplicateTensor {
        /// The name, quoted.
        tensor: String,
        /// Where it was first met.
        first: FirstSeen,
    },
    /// A tensor has more than `max` dimensions.
    #[error("tensor {tensor}: {}at most {max} dimensions, found {found}", if *.refused { "" } else { "expected " })]
    TooManyDims {
        /// The name, quoted.
        tensor: String,
        /// The dimension count.
        found: u64,
        /// The most there may be.
        max: usize,
        /// Whether the writer refused it (rather than a file holding it).
        refused: bool,
    },
    /// A size does not fit in 64 bits.
    #[error("{}{what}", tensor_prefix(.tensor))]
    SizeOverflow {
        /// The tensor it concerns (quoted), if one.
        tensor: Option<String>,
        /// Which size.
        what: String,
    },
    /// A tensor's data type is unknown or was removed from ggml.
    #[error("tensor {tensor}: {}", bad_data_type_text(*.found, *.refused))]
    BadDataType {
        /// The name, quoted.
        tensor: String,
        /// The type id.
        found: u32,
        /// Whether the writer refused it (rather than a file holding it).
        refused: bool,
    },
    /// A tensor's value, or a quantized block's scale, is a NaN or an infinity (the error's offset
    /// is the bad bytes' position in the file).
    #[error("tensor {tensor}: {what} {index}{} is {found} ({} data, byte {byte} of the tensor's data)", field_of(.field), .data_type.name())]
    BadValue {
        /// The name, quoted.
        tensor: String,
        /// The data type.
        data_type: DataType,
        /// `element` (float tensors) or `block` (quantized ones).
        what: &'static str,
        /// The element or block index.
        index: u64,
        /// The block's field (`d`, `dmin`, ...; empty for an element).
        field: &'static str,
        /// `NaN` or `infinity`.
        found: &'static str,
        /// Offset of the bad bytes from the start of the tensor's data.
        byte: u64,
    },
    /// A tensor's first dimension is not a multiple of its type's block size.
    #[error("tensor {tensor}: first dimension {first} is not a multiple of {}'s block size {}", .data_type.name(), .data_type.block_elems())]
    BadBlockMultiple {
        /// The name, quoted.
        tensor: String,
        /// The first dimension.
        first: u64,
        /// The data type.
        data_type: DataType,
    },
    /// A tensor's offset is not a multiple of the alignment.
    #[error(
        "tensor {tensor}: expected an offset that is a multiple of {alignment}, found {found}"
    )]
    MisalignedOffset {
        /// The name, quoted.
        tensor: String,
        /// The file's alignment.
        alignment: u64,
        /// The offset (from the start of the data section).
        found: u64,
    },
    /// A tensor's data ends past the end of the file.
    #[error("{}tensor {tensor} data ends at {}, past the end of the file ({file_size} bytes)", early_end_prefix(*.end), end_text(*.end))]
    DataOutOfBounds {
        /// The name, quoted.
        tensor: String,
        /// Where its data ends in the file (`None`: beyond 2^64).
        end: Option<u64>,
        /// The file's size.
        file_size: u64,
    },
    /// Two tensors' data ranges overlap.
    #[error("tensor {tensor} data [{}, {}) overlaps tensor {other} data [{}, {})", .range.0, .range.1, .other_range.0, .other_range.1)]
    DataOverlap {
        /// The name, quoted, of the tensor that starts later.
        tensor: String,
        /// Its data range (start, end) from the start of the data section.
        range: (u64, u64),
        /// The tensor it overlaps, quoted.
        other: String,
        /// That tensor's data range.
        other_range: (u64, u64),
    },
    /// The shards of a split model do not fit together ([`Error::path`] names the shard).
    #[error("{message}")]
    ShardMismatch {
        /// The split key that is missing or disagrees (`split.count`, `split.no`,
        /// `split.tensors.count`); `None` when the file's name is the problem.
        key: Option<&'static str>,
        /// What was expected and what was found.
        message: String,
    },
    /// A chat template does not parse.
    #[error("{message}")]
    TemplateSyntax {
        /// Where (line and column) and what is wrong.
        message: String,
    },
    /// A chat template failed while rendering.
    #[error("{message}")]
    TemplateRender {
        /// The template's own message (`raise_exception`), or where and what failed.
        message: String,
    },
    /// A chat template reached a bound of the renderer.
    #[error("{message}")]
    TemplateLimit {
        /// Which bound, and where.
        message: String,
    },
    /// A chat request is malformed.
    #[error("{message}")]
    BadRequest {
        /// What was expected and what was found.
        message: String,
    },
}

/// Why a count cannot be: what it would need against what is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shortfall {
    /// Items of at least `min_size` bytes each need more than the `remaining` bytes.
    Bytes {
        /// The smallest encoding of one item.
        min_size: u64,
        /// The bytes left in the file.
        remaining: u64,
    },
    /// More than `max`, the most this library reads.
    Limit {
        /// The limit.
        max: u64,
    },
}

impl Shortfall {
    fn after(&self, count: u64) -> String {
        match *self {
            Shortfall::Bytes {
                min_size,
                remaining,
            } => {
                let need = count
                    .checked_mul(min_size)
                    .map_or("more than 2^64".to_string(), |n| n.to_string());
                format!(
                    ", which needs at least {need} bytes ({min_size} each), but only {remaining} \
                     bytes remain before the end of the file"
                )
            }
            Shortfall::Limit { max } => format!(", more than the {max} this library reads"),
        }
    }
}

/// Where a name given twice was first met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirstSeen {
    /// At this byte offset of the same file.
    AtOffset(u64),
    /// In shard `shard` (1-based), file `file`; again in shard `again`.
    InShard {
        /// The shard that has it first.
        shard: u64,
        /// That shard's file.
        file: String,
        /// The shard that has it again.
        again: u64,
    },
    /// Earlier in the same writer.
    Given,
}

impl FirstSeen {
    fn text(&self, given: &str) -> String {
        match self {
            FirstSeen::AtOffset(at) => format!("appears twice (first at offset {at})"),
            FirstSeen::InShard { shard, file, again } => {
                format!("is in shard {shard} ({file}) and again in shard {again}")
            }
            FirstSeen::Given => format!("is already {given}"),
        }
    }
}

/// What `general.alignment` holds instead of a valid alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignmentFound {
    /// A value of another type than UINT32.
    Type(ValueType),
    /// A number that is not a power of two up to [`MAX_ALIGNMENT`](crate::format::MAX_ALIGNMENT).
    Value(u64),
}

impl fmt::Display for AlignmentFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlignmentFound::Type(ty) => write!(f, "expected a UINT32, found a {}", ty.name()),
            AlignmentFound::Value(v) => write!(
                f,
                "expected a power of two from 1 to {}, found {v}",
                crate::format::MAX_ALIGNMENT
            ),
        }
    }
}

fn found_before_end(remaining: u64, empty_file: bool) -> String {
    if empty_file {
        "an empty file".to_string()
    } else {
        format!("{remaining} before the end of the file")
    }
}

fn bad_bool_text(found: u8, element: Option<u64>) -> String {
    match element {
        Some(i) => format!("bool element {i} is {found}, not 0 or 1"),
        None => format!("expected a BOOL byte of 0 or 1, found {found}"),
    }
}

fn tensor_prefix(tensor: &Option<String>) -> String {
    tensor
        .as_ref()
        .map_or(String::new(), |t| format!("tensor {t}: "))
}

fn bad_data_type_text(found: u32, refused: bool) -> String {
    if refused {
        format!("{found} is not a ggml data type")
    } else {
        format!("expected a ggml data type, found unknown or removed type {found}")
    }
}

/// How a message starts when the bytes run out before what the file declares.
pub(crate) const EARLY_END: &str = "the file ends early (truncated?)";

fn early_end_prefix(end: Option<u64>) -> String {
    end.map_or(String::new(), |_| format!("{EARLY_END}: "))
}

fn end_text(end: Option<u64>) -> String {
    end.map_or("beyond 2^64".to_string(), |e| e.to_string())
}

impl ErrorKind {
    /// The stable code of the rule (the C API's `GGUF_ERROR_CODE_*`).
    pub fn code(&self) -> ErrorCode {
        use ErrorKind as K;
        match self {
            K::Io { .. } | K::FileUnusable { .. } => ErrorCode::Io,
            K::NullArgument { .. } => ErrorCode::NullArgument,
            K::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            K::NotFound { .. } => ErrorCode::NotFound,
            K::WrongType { .. } => ErrorCode::WrongType,
            K::OutOfMemory { .. } => ErrorCode::OutOfMemory,
            K::Internal { .. } => ErrorCode::Internal,
            K::Unsupported { .. } => ErrorCode::Unsupported,
            K::Cancelled { .. } => ErrorCode::Cancelled,
            K::Truncated { .. } => ErrorCode::Truncated,
            K::BadMagic { .. } => ErrorCode::BadMagic,
            K::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            K::TensorCountTooLarge { .. } => ErrorCode::TensorCountTooLarge,
            K::KeyCountTooLarge { .. } => ErrorCode::KeyCountTooLarge,
            K::StringTooLong { .. } => ErrorCode::StringTooLong,
            K::EmptyKey { .. } => ErrorCode::EmptyKey,
            K::DuplicateKey { .. } => ErrorCode::DuplicateKey,
            K::BadValueType { .. } | K::MixedArray { .. } => ErrorCode::BadValueType,
            K::ArrayTooLong { .. } => ErrorCode::ArrayTooLong,
            K::ArrayTooDeep { .. } => ErrorCode::ArrayTooDeep,
            K::BadBool { .. } => ErrorCode::BadBool,
            K::BadAlignment { .. } => ErrorCode::BadAlignment,
            K::DuplicateTensor { .. } => ErrorCode::DuplicateTensor,
            K::TooManyDims { .. } => ErrorCode::TooManyDims,
            K::SizeOverflow { .. } => ErrorCode::SizeOverflow,
            K::BadDataType { .. } => ErrorCode::BadDataType,
            K::BadBlockMultiple { .. } => ErrorCode::BadBlockMultiple,
            K::MisalignedOffset { .. } => ErrorCode::MisalignedOffset,
            K::DataOutOfBounds { .. } => ErrorCode::DataOutOfBounds,
            K::DataOverlap { .. } => ErrorCode::DataOverlap,
            K::BadValue { .. } => ErrorCode::BadValue,
            K::ShardMismatch { .. } => ErrorCode::ShardMismatch,
            K::TemplateSyntax { .. } => ErrorCode::TemplateSyntax,
            K::TemplateRender { .. } => ErrorCode::TemplateRender,
            K::TemplateLimit { .. } => ErrorCode::TemplateLimit,
            K::BadRequest { .. } => ErrorCode::BadRequest,
        }
    }
}

/// `'s d` for a block's field `d`, nothing for an element (BadValue's message).
fn field_of(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("'s {field}")
    }
}

/// An error: what went wrong ([`ErrorKind`], matchable), the byte offset it concerns (when it
/// concerns the file), the file (when known) and what was being read (when the rule was broken
/// inside a named entry).
///
/// Boxed, so that every `Result` on the parser's hot path stays two words and is returned in
/// registers; nothing is formatted until it is shown.
#[derive(Clone)]
pub struct Error(Box<Inner>);

#[derive(Clone)]
struct Inner {
    kind: ErrorKind,
    offset: Option<u64>,
    path: Option<String>,
    context: Option<String>,
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error about no particular byte (an argument, a missing key, an I/O failure).
    #[cold]
    pub fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Inner {
            kind,
            offset: None,
            path: None,
            context: None,
        }))
    }

    /// An error about the bytes at `offset`.
    #[cold]
    pub fn at(offset: u64, kind: ErrorKind) -> Error {
        let mut e = Error::new(kind);
        e.0.offset = Some(offset);
        e
    }

    /// An error about the bytes at `offset`, its kind made only when it happens: the closure
    /// keeps the kind's construction out of the parser's hot loops.
    #[cold]
    #[inline(never)]
    pub(crate) fn at_with(offset: u64, kind: impl FnOnce() -> ErrorKind) -> Error {
        Error::at(offset, kind())
    }

    /// An error of a code outside the format's rules (argument, lookup, type, memory, internal,
    /// unsupported), with its message.
    #[cold]
    pub(crate) fn msg(code: ErrorCode, message: impl Into<String>) -> Error {
        // A rule of the format has its own variant, with its facts: build that instead.
        debug_assert!(
            code != ErrorCode::None && (code as u32) < 10,
            "{code:?} has its own ErrorKind"
        );
        let message = message.into();
        Error::new(match code {
            ErrorCode::NullArgument => ErrorKind::NullArgument { what: message },
            ErrorCode::NotFound => ErrorKind::NotFound { message },
            ErrorCode::WrongType => ErrorKind::WrongType { message },
            ErrorCode::OutOfMemory => ErrorKind::OutOfMemory { message },
            ErrorCode::Unsupported => ErrorKind::Unsupported { message },
            ErrorCode::Cancelled => ErrorKind::Cancelled { message },
            ErrorCode::InvalidArgument => ErrorKind::InvalidArgument { message },
            ErrorCode::Io => ErrorKind::FileUnusable { message },
            _ => ErrorKind::Internal { message },
        })
    }

    /// An I/O error: `context` says what was being done.
    #[cold]
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::new(ErrorKind::Io {
            context: context.into(),
            source: Arc::new(source),
            advice: String::new(),
        })
    }

    /// A size (`what`) that does not fit in 64 bits or in memory's address space.
    #[cold]
    pub(crate) fn size_overflow(what: impl Into<String>) -> Error {
        Error::new(ErrorKind::SizeOverflow {
            tensor: None,
            what: what.into(),
        })
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

    /// The same error with `context` (what was being read) before what it had.
    #[cold]
    pub(crate) fn with_context(mut self, context: impl fmt::Display) -> Error {
        self.0.context = Some(match self.0.context.take() {
            Some(inner) => format!("{context}: {inner}"),
            None => context.to_string(),
        });
        self
    }

    /// The same error about the byte at `offset` (or no byte).
    pub(crate) fn with_offset(mut self, offset: Option<u64>) -> Error {
        self.0.offset = offset;
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

    /// What went wrong, with its facts.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The rule that was broken.
    pub fn code(&self) -> ErrorCode {
        self.0.kind.code()
    }

    /// The byte offset in the file the error concerns, if any.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }

    /// The file the error concerns, if known.
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }

    /// What was being read when the rule was broken (`key 'a', metadata entry 2 of 5 (at
    /// offset 40)`), if that adds to the message.
    pub fn context(&self) -> Option<&str> {
        self.0.context.as_deref()
    }

    /// What was expected and what was found, after what was being read; without the file and
    /// offset prefix.
    pub fn message(&self) -> String {
        match &self.0.context {
            Some(context) => format!("{context}: {}", self.0.kind),
            None => self.0.kind.to_string(),
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error::new(kind)
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
        f.write_str(&escape_controls(&self.message()))
    }
}

impl fmt::Debug for Error {
    /// The message, as `Display` shows it: what `fn main() -> Result<(), gguf::Error>` prints.
    /// Match on [`Error::kind`] for the facts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    /// The operating system's error (a `std::io::Error`) for an I/O failure.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            ErrorKind::Io { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_offset_and_message() {
        let kind = ErrorKind::DataOutOfBounds {
            tensor: quote(b"w"),
            end: None,
            file_size: 10,
        };
        let e = Error::at(1024, kind).in_file("model.gguf");
        assert_eq!(
            e.to_string(),
            "gguf: model.gguf: offset 1024: tensor 'w' data ends at beyond 2^64, past the end of \
             the file (10 bytes)"
        );
        assert_eq!(e.code(), ErrorCode::DataOutOfBounds);
        assert_eq!(e.offset(), Some(1024));
        let e = Error::msg(ErrorCode::NotFound, "no key 'k'");
        assert_eq!(e.to_string(), "gguf: no key 'k'");
    }

    #[test]
    #[cfg(unix)]
    fn paths_show_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"/m/caf\xe9/\x1b.gguf"));
        assert_eq!(path_text(path), "/m/caf\\xe9/\\x1b.gguf");
        let e = Error::msg(ErrorCode::Io, "x").in_path(path);
        assert_eq!(e.to_string(), "gguf: /m/caf\\xe9/\\x1b.gguf: x");
    }

    #[test]
    fn display_escapes_text_that_did_not_come_through_escape() {
        let e = Error::msg(ErrorCode::Io, "os said \x1b[2J\u{202e}").in_file("p\nq\\r");
        assert_eq!(
            e.to_string(),
            "gguf: p\\x0aq\\r: os said \\x1b[2J\\xe2\\x80\\xae"
        );
        // Escaped text is left as it is.
        let e = Error::msg(ErrorCode::NotFound, format!("no key {}", quote(b"a\x1b\\")));
        assert_eq!(e.to_string(), "gguf: no key 'a\\x1b\\\\'");
    }
}
