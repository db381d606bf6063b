//! The writer: builds GGUF files with any metadata (all 13 value types, nested arrays) and
//! tensors of any data type, in any supported version and byte order. It refuses what the reader
//! would refuse, so everything it writes opens.
//!
//! A tensor's bytes come from memory, from a range of an open file, or from the caller, who
//! streams them after the header ([`TensorData`]). One loop writes a whole file (the header,
//! then each tensor and its padding) to a file replaced atomically ([`Writer::write_file`]),
//! any `Write` ([`Writer::write_to`]) or a buffer ([`Writer::write_to_slice`]); a stream
//! ([`Writer::begin_file`]) takes the same steps as the caller gives each tensor.

mod builder;
mod encode;
mod from_model;
mod metadata;
mod output;
mod stream;
mod tensor;

pub use builder::Writer;
pub(crate) use from_model::OwnedRange;
pub use metadata::MetadataValue;
pub(crate) use output::Api;
pub use stream::TensorStream;
pub(crate) use tensor::check_dim_count;
pub use tensor::TensorData;
