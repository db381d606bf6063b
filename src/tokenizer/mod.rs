//! The tokenizer a GGUF file's vocabulary describes: text to tokens and back, as llama.cpp does.

pub mod pretokenize;
pub mod unicode;
mod unicode_tables;
