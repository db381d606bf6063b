//! Serves arbitrary bytes as a file read by position, in chunks of chosen sizes, then reads its
//! header and every tensor (some listed twice) through the Rust API and `gguf_open_reader` /
//! `gguf_read_tensors`, comparing with the whole file parsed from memory.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_read(data));
