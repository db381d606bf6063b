//! Opens a vocabulary (a small one cut from llama.cpp's test files, mutated: tokens, scores,
//! types, merges, special ids, model and pre-tokenizer names, flags; long tokens and nested
//! ones, as hostile vocabularies have) as a tokenizer, then tokenizes the input's text (now and
//! then repeated, or a run of one byte) with every flag, detokenizes the result and asks for
//! pieces, through the Rust API and the C API.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_tokenize(data));
