//! Opens arbitrary bytes from memory and calls every accessor, through the C API and Rust's.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_open(data));
