//! The C API, declared in `include/gguf.h` (generated from these files by cbindgen) and documented
//! there; hidden from the Rust documentation (`#[doc(hidden)]` in lib.rs), which is the Rust API's.
//!
//! Every function here follows one contract: pointer arguments are NULL-checked, panics are caught
//! (none unwinds into C), failure returns the value the header documents and records why in a
//! thread-local error ([`last_error`]), and every pointer handed out is owned by the handle and
//! valid until `gguf_close`. Getters only read the handle or fill its lazy caches through
//! write-once cells (`lazy.rs`), so many threads may call them on one handle at once. A
//! `GGUFWriter` (`writer.rs`) is the exception: one thread at a time.
//!
//! Functions taking pointers are `unsafe` to call from Rust: the caller guarantees what the
//! header states for C (a `GGUFFile` from `gguf_open*` not yet closed, strings NUL-terminated,
//! out-pointers writable). That shared contract is their `# Safety` section.

#![allow(clippy::missing_safety_doc)]

mod array_cache;
pub mod arrays;
pub(crate) mod boundary;
pub mod chat;
pub mod digest;
pub mod handle;
pub mod last_error;
mod lazy;
pub mod memory;
pub mod metadata;
pub mod open;
pub mod paging;
pub mod parallel;
pub mod plan;
pub mod quantize;
pub mod read;
pub mod records;
pub mod requantize;
pub mod shards;
pub mod tensors;
pub mod tokenizer;
pub mod types;
pub mod url;
pub mod validate;
pub mod values;
pub mod version;
pub mod writer;

// Every C function and type, under `gguf::ffi::` as well as its topic module.
pub use arrays::*;
pub use chat::*;
pub use digest::*;
pub use handle::{GGUFFile, GGUFFileImpl};
pub use last_error::*;
pub use memory::*;
pub use metadata::*;
pub use open::*;
pub use paging::*;
pub use parallel::*;
pub use plan::*;
pub use read::*;
pub use records::*;
pub use requantize::*;
pub use shards::*;
pub use tensors::*;
pub use tokenizer::*;
pub use types::*;
pub use url::*;
pub use validate::*;
pub use values::*;
pub use version::*;
pub use writer::*;
