//! The IQ types' quantizers on any platform (no ggml needed): the fixed inputs of
//! `quantize_iq/inputs.rs` give the bytes ggml gives, as `tests/data/quantize-iq-fingerprints.tsv`
//! records them (`quantize_iq_ggml.rs` checks ggml against that file on the host), so 32-bit,
//! big-endian and other targets prove byte equality; and the argument errors.

mod common;
#[path = "quantize_iq/inputs.rs"]
mod inputs;

use common::manifest_dir;
use gguf::quant::simd;
use gguf::quantize::quantize;
use gguf::{DataType, ErrorCode};
use inputs::{fingerprint_input, fingerprint_line, FINGERPRINTS, TYPES};

fn quantized(t: DataType, src: &[f32], n: usize, imp: Option<&[f32]>) -> Vec<u8> {
    let len = src.len() / n * (n / t.block_elems() as usize) * t.block_bytes() as usize;
    let mut out = vec![0x5Au8; len];
    assert_eq!(quantize(t, src, n, imp, &mut out).unwrap(), len);
    out
}

#[test]
fn fixed_inputs_give_ggml_s_bytes() {
    check_fingerprints();
}

/// The vector kernels and the portable ones give the same bytes (each instruction set this CPU
/// has, in turn; the dispatch is process-wide, and every set gives the same answers, so the
/// other tests are not disturbed).
#[test]
fn every_instruction_set_gives_ggml_s_bytes() {
    let before = simd::active();
    for isa in simd::Isa::ALL {
        if simd::set_isa(isa) {
            check_fingerprints();
        }
    }
    simd::set_isa(before);
}

fn check_fingerprints() {
    let recorded = std::fs::read_to_string(manifest_dir().join(FINGERPRINTS)).unwrap();
    let mut lines = recorded.lines();
    for (t, req) in TYPES {
        let (src, n, imp) = fingerprint_input(t);
        let mut ours = vec![fingerprint_line(
            t,
            true,
            &quantized(t, &src, n, Some(&imp)),
        )];
        if !req {
            ours.push(fingerprint_line(t, false, &quantized(t, &src, n, None)));
        }
        for line in ours {
            assert_eq!(Some(line.as_str()), lines.next(), "{t:?}");
        }
    }
    assert_eq!(lines.next(), None);
}

#[test]
fn argument_errors_name_the_problem() {
    let src = [0.5f32; 512];
    let mut out = vec![0u8; 1024];
    let err = |t, src: &[f32], n, imp: Option<&[f32]>, out: &mut [u8]| {
        let e = quantize(t, src, n, imp, out).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        e.to_string()
    };
    let m = err(DataType::IQ4_XS, &src[..288], 288, None, &mut out[..0]);
    assert!(m.contains("IQ4_XS") && m.contains("288"), "{m}");
    let m = err(DataType::IQ4_NL, &src[..48], 48, None, &mut out[..0]);
    assert!(m.contains("48"), "{m}");
    let m = err(DataType::IQ3_S, &src[..300], 256, None, &mut out[..110]);
    assert!(m.contains("300"), "{m}");
    let m = err(DataType::IQ3_S, &src[..256], 256, None, &mut out[..109]);
    assert!(m.contains("110") && m.contains("109"), "{m}");
    let m = err(
        DataType::IQ1_M,
        &src[..256],
        256,
        Some(&src[..255]),
        &mut out[..56],
    );
    assert!(m.contains("255"), "{m}");
    for t in [DataType::IQ2_XXS, DataType::IQ2_XS, DataType::IQ1_S] {
        let bytes = t.block_bytes() as usize;
        let m = err(t, &src[..256], 256, None, &mut out[..bytes]);
        assert!(m.contains("importance"), "{m}");
    }
}

#[test]
fn rows_without_an_answer_are_errors_naming_row_and_element() {
    let mut src: Vec<f32> = (0..768)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
        .collect();
    src[512 + 44] = f32::NAN;
    for t in [DataType::IQ3_S, DataType::IQ2_S, DataType::IQ3_XXS] {
        let mut out = vec![0u8; 3 * t.block_bytes() as usize];
        let e = quantize(t, &src, 256, None, &mut out).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        let m = e.to_string();
        assert!(
            m.contains("row 2,") && m.contains("element 44 (NaN)"),
            "{t:?}: {m}"
        );
    }
}

#[test]
fn threads_name_the_row_one_thread_names_and_a_failing_row_is_left_alone() {
    use gguf::quantize::quantize_parallel;
    let t = DataType::IQ3_XXS;
    let row = t.block_bytes() as usize;
    let rows = 12;
    let clean: Vec<f32> = (0..rows * 256)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
        .collect();
    // A NaN at row 7, and at rows 3 and 7: one thread names the first; so does every count
    // of threads, whichever part fails first in time.
    for bad in [&[7usize][..], &[3, 7], &[0], &[11], &[2, 5, 8, 11]] {
        let mut src = clean.clone();
        for &r in bad {
            src[r * 256 + 10] = f32::NAN;
        }
        let mut out = vec![0xABu8; rows * row];
        let one = quantize(t, &src, 256, None, &mut out)
            .unwrap_err()
            .to_string();
        let want = format!("row {},", bad[0]);
        assert!(one.contains(&want), "{one}");
        // The failing row and those after it are untouched; those before are written.
        assert!(out[bad[0] * row..].iter().all(|&b| b == 0xAB), "{bad:?}");
        assert!(bad[0] == 0 || out[..bad[0] * row].iter().any(|&b| b != 0xAB));
        for threads in [2, 3, 4, 7] {
            let mut out = vec![0xABu8; rows * row];
            let many = quantize_parallel(t, &src, 256, None, &mut out, threads)
                .unwrap_err()
                .to_string();
            assert_eq!(many, one, "{threads} threads, NaN at rows {bad:?}");
            for &r in bad {
                assert!(
                    out[r * row..(r + 1) * row].iter().all(|&b| b == 0xAB),
                    "{threads} threads: row {r} was written"
                );
            }
        }
    }
}
