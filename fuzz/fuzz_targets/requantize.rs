//! The requantizer's options and `--tensor-type` patterns from the input (8 bytes of choices,
//! then `PATTERN=TYPE` lines, an empty line, names to search): each pattern compiled and
//! searched (a bounded search: an error, never a hang), the plan of a small model made, and
//! one time in four the model written (no file left after a failure).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_requantize(data));
