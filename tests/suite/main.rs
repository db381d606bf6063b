//! The test files that run on every platform, as modules of one test binary, which
//! `tools/cross.sh` builds and runs for each target: one crate to compile and link per target
//! instead of one per file (their shared code, `tests/common`, and the dependencies' generic code
//! are compiled once). On the host `make test` runs each file as its own binary, as `cargo test
//! --test FILE` does; this binary is built only when named (`test = false` in Cargo.toml).
//!
//! Not here: the host-only files (`HOST_ONLY_TESTS` in `tools/cross.sh`, which says why for
//! each), and the files that must be their own process (`SEPARATE_TESTS` there): one with its own
//! harness, for ThreadSanitizer, and those that install a counting global allocator to measure
//! the process's allocations, which other tests' threads would disturb.

// Each file declares `mod common;` for itself, as its own binary needs: the suite holds a copy
// per file.
#![allow(clippy::duplicate_mod)]

// About Unix facilities (FIFOs, /dev and /proc files, setrlimit, permission bits, SIGXFSZ): not
// on Windows. Their platform-neutral cases (atomic replacement, non-ASCII names) are in paths and
// writer_copy.
#[cfg(unix)]
#[path = "../boundary.rs"]
mod boundary;
#[path = "../c_api.rs"]
mod c_api;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../dequant.rs"]
mod dequant;
#[path = "../fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "../hostile_reads.rs"]
mod hostile_reads;
#[path = "../memory_hostile.rs"]
mod memory_hostile;
#[path = "../paging.rs"]
mod paging;
#[path = "../parser_errors.rs"]
mod parser_errors;
#[path = "../paths.rs"]
mod paths;
#[path = "../plans.rs"]
mod plans;
#[path = "../quantize.rs"]
mod quantize;
#[path = "../quantize_iq.rs"]
mod quantize_iq;
#[path = "../requantize.rs"]
mod requantize;
#[path = "../roundtrip_props.rs"]
mod roundtrip_props;
#[path = "../sample.rs"]
mod sample;
#[path = "../scale.rs"]
mod scale;
#[path = "../shards.rs"]
mod shards;
#[path = "../simd.rs"]
mod simd;
#[path = "../simd_threads.rs"]
mod simd_threads;
#[path = "../sources.rs"]
mod sources;
#[path = "../tokenizer_hostile.rs"]
mod tokenizer_hostile;
#[path = "../tokenizer_vocab.rs"]
mod tokenizer_vocab;
// About Unix facilities (FIFOs, /dev and /proc files, setrlimit, permission bits, SIGXFSZ): not
// on Windows. Their platform-neutral cases (atomic replacement, non-ASCII names) are in paths and
// writer_copy.
#[cfg(unix)]
#[path = "../writer_durability.rs"]
mod writer_durability;
#[path = "../writer_outputs.rs"]
mod writer_outputs;
#[path = "../writer_reader.rs"]
mod writer_reader;
