//! Builds a file from arbitrary choices with the writer, then checks the reader returns exactly
//! what was written.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_roundtrip(data));
