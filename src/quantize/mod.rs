//! Floats to ggml's tensor types, byte for byte as `ggml_quantize_chunk` writes them.

pub(crate) mod iquant;
