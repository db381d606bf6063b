//! Quantization against ggml's own `ggml_quantize_chunk`, loaded from the pinned
//! `libggml-base.so` (npm `@node-llama-cpp/linux-x64` 3.22.1, `make ggml`; `GGUF_GGML_LIB_DIR`
//! points elsewhere) into this process: every type it quantizes but the IQ types, with and
//! without importance weights, on the cases of `tests/quantize/inputs.rs` (random rows at
//! several scales, zeros, constants, huge and tiny magnitudes, subnormals, values beside powers
//! of two, infinities and NaN) and on several row lengths, compared byte for byte. ggml's bytes
//! are also what `tests/data/quantize-golden.tsv` records, which `quantize.rs` checks on every
//! platform.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;
#[path = "quantize/inputs.rs"]
mod inputs;

use common::ggml_dir;
use ggml_dl::Lib;
use gguf::quantize::{quantize, quantize_parallel};
use gguf::DataType;
use inputs::{cases, fingerprint, golden, importance, Rng, ROW, TYPES};
use std::ffi::c_void;
use std::sync::OnceLock;

type QuantizeChunk =
    unsafe extern "C" fn(u32, *const f32, *mut c_void, i64, i64, i64, *const f32) -> usize;

fn ggml_quantize_chunk() -> QuantizeChunk {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| {
        // The library stays loaded for the process, so the function pointer stays valid.
        Lib::open(&ggml_dir().join("libggml-base.so")).sym("ggml_quantize_chunk") as usize
    });
    // SAFETY: the symbol's C signature is the one of `QuantizeChunk` (ggml.h).
    unsafe { std::mem::transmute::<usize, QuantizeChunk>(f) }
}

/// ggml's bytes for rows of `n_per_row` values.
fn ggml(t: DataType, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) -> Vec<u8> {
    let rows = src.len() / n_per_row;
    let size = (n_per_row as u64 / t.block_elems() * t.block_bytes()) as usize * rows;
    let mut dst = vec![0u8; size];
    let imp = imp.map_or(std::ptr::null(), <[f32]>::as_ptr);
    // SAFETY: `src` holds `rows * n_per_row` floats, `dst` their blocks, `imp` NULL or
    // `n_per_row` weights; the type is one ggml quantizes without asserting.
    let n = unsafe {
        ggml_quantize_chunk()(
            t.id(),
            src.as_ptr(),
            dst.as_mut_ptr().cast(),
            0,
            rows as i64,
            n_per_row as i64,
            imp,
        )
    };
    assert_eq!(n, size, "{t:?}: ggml's byte count");
    dst
}

fn ours(t: DataType, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) -> Vec<u8> {
    let mut dst =
        vec![0u8; ggml(t, &src[..n_per_row], n_per_row, None).len() * (src.len() / n_per_row)];
    let n = quantize(t, src, n_per_row, imp, &mut dst).unwrap();
    assert_eq!(n, dst.len());
    dst
}

/// Where two outputs first differ, in words, or `None` when they are equal.
fn first_difference(t: DataType, n_per_row: usize, want: &[u8], got: &[u8]) -> Option<String> {
    let at = want.iter().zip(got).position(|(a, b)| a != b)?;
    let row_bytes = want.len()
        / (want.len() / (n_per_row / t.block_elems() as usize * t.block_bytes() as usize));
    let block = t.block_bytes() as usize;
    let (row, in_row) = (at / row_bytes, at % row_bytes);
    let b = in_row / block;
    let from = row * row_bytes + b * block;
    Some(format!(
        "row {row}, block {b}, byte {}: ggml {:02x?}, ours {:02x?}",
        in_row % block,
        &want[from..from + block],
        &got[from..from + block]
    ))
}

#[test]
fn every_case_matches_ggml() {
    let imp = importance(ROW);
    let mut failures = Vec::new();
    let mut compared = 0;
    for t in TYPES {
        for case in cases() {
            for w in [None, Some(&imp[..])] {
                let want = ggml(t, &case.rows, ROW, w);
                let got = ours(t, &case.rows, ROW, w);
                compared += 1;
                if let Some(d) = first_difference(t, ROW, &want, &got) {
                    failures.push(format!(
                        "{} {} {}: {d}",
                        t.name(),
                        case.name,
                        if w.is_some() { "imatrix" } else { "plain" }
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn row_lengths_match_ggml() {
    let mut rng = Rng(77);
    let mut failures = Vec::new();
    for t in TYPES {
        let block = t.block_elems() as usize;
        for blocks in [1usize, 3, 5] {
            let n_per_row = block.max(32) * blocks;
            let n_per_row = n_per_row - n_per_row % block;
            let src: Vec<f32> = (0..n_per_row * 3).map(|_| rng.normal(2.0)).collect();
            let imp = importance(n_per_row);
            for w in [None, Some(&imp[..])] {
                let want = ggml(t, &src, n_per_row, w);
                let got = ours(t, &src, n_per_row, w);
                if let Some(d) = first_difference(t, n_per_row, &want, &got) {
                    failures.push(format!(
                        "{} rows of {n_per_row} ({}): {d}",
                        t.name(),
                        w.is_some()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn threads_write_what_one_thread_writes() {
    let case = &cases()[0];
    let imp = importance(ROW);
    for t in TYPES {
        let want = ggml(t, &case.rows, ROW, Some(&imp));
        for threads in [2, 3, 7] {
            let mut got = vec![0u8; want.len()];
            let n = quantize_parallel(t, &case.rows, ROW, Some(&imp), &mut got, threads).unwrap();
            assert_eq!(n, want.len());
            assert!(want == got, "{t:?} on {threads} threads");
        }
    }
}

/// The golden file holds ggml's fingerprints; `GGUF_WRITE_GOLDEN=1` rewrites it from ggml.
#[test]
fn golden_fingerprints_are_ggmls() {
    let imp = importance(ROW);
    let mut text = String::from("# type\tcase\timportance\txxh64 of ggml_quantize_chunk's bytes\n");
    for t in TYPES {
        for case in cases() {
            for w in [None, Some(&imp[..])] {
                let bytes = ggml(t, &case.rows, ROW, w);
                let h = fingerprint(&bytes);
                let kind = if w.is_some() { "imatrix" } else { "plain" };
                text.push_str(&format!("{}\t{}\t{kind}\t{h:016x}\n", t.name(), case.name));
            }
        }
    }
    let path = common::manifest_dir().join("tests/data/quantize-golden.tsv");
    if std::env::var_os("GGUF_WRITE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        recorded, text,
        "tests/data/quantize-golden.tsv is not ggml's (GGUF_WRITE_GOLDEN=1 rewrites it)"
    );
    assert_eq!(golden().len(), TYPES.len() * cases().len() * 2);
}
