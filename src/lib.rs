#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
// No 64-bit size or offset is cut to a 32-bit `usize` (CI runs clippy with -D warnings).
#![warn(clippy::cast_possible_truncation)]
// Every `unsafe` block says why it is sound, and every `unsafe fn` what its caller promises.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

// The Rust guide's examples run as doctests too (tests/readme.rs checks every document with
// one is here).
#[cfg(doctest)]
#[doc = include_str!("../docs/rust.md")]
struct RustGuide;
#[cfg(doctest)]
#[doc = include_str!("../docs/tokenizer.md")]
struct TokenizerGuide;

#[cfg(doctest)]
#[doc = include_str!("../docs/quantize-models.md")]
struct QuantizeModelsGuide;

mod atomic_file;
pub mod chat;
pub mod check;
pub mod digest;
pub mod error;
pub mod file;
pub mod format;
pub mod hparams;
#[cfg(all(feature = "net", not(target_family = "wasm")))]
pub mod http;
mod index;
pub mod load;
pub mod memory;
pub mod model;
/// Work on the threads a caller asked for: how many, at most [`parallel::MAX_THREADS`], and one
/// runner.
///
/// cbindgen:ignore
pub mod parallel;
pub mod plan;
#[allow(unsafe_code)]
mod platform;
/// Tensor values as `f32`, every data type (the C API's `gguf_dequantize`).
///
/// cbindgen:ignore
pub mod quant;
pub mod quantize;
pub mod read_at;
mod reader;
mod regex;
pub mod requantize;
mod size;
#[allow(unsafe_code)]
pub mod source;
pub mod text;
/// Text to tokens and back, as llama.cpp does, from a file's vocabulary (the C API's
/// `gguf_tokenize`).
///
/// cbindgen:ignore
pub mod tokenizer;
pub mod types;
pub mod value;
pub mod writer;

// The C API (`include/gguf.h`, documented there): public for Rust code that wants the C
// functions (the tests do), kept out of the Rust API's documentation.
#[doc(hidden)]
#[allow(unsafe_code)]
pub mod ffi;

pub use digest::{Digest, DigestAlgorithm, Digester};
pub use error::{AlignmentFound, Error, ErrorCode, ErrorKind, FirstSeen, Result, Shortfall};
pub use file::{GgufFile, MappedFile, MetadataEntry, TensorInfo};
pub use format::ByteOrder;
pub use model::{Model, ModelTensor};
/// Where the platform has no clock (wasm32 without WASI): the one `strftime_now` reads.
#[cfg(not(any(unix, windows)))]
pub use platform::set_clock;
pub use source::{OpenOptions, Paging};
pub use types::{DataType, ValueType};
pub use value::{Array, Element, Value};
pub use writer::{MetadataValue, Writer};
