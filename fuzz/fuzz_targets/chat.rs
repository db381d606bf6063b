//! Compiles a chat template and renders a request over it (the input split at its first NUL),
//! through the Rust API and the C API.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::exercise_chat(data));
