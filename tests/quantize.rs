//! Quantization without ggml, on every platform: the bytes of every case of
//! `tests/quantize/inputs.rs` against the fingerprints of ggml's bytes recorded in
//! `tests/data/quantize-golden.tsv` (which `quantize_ggml.rs` checks are ggml's), the argument
//! rules, and quantized values read back through the crate's own dequantizer within each
//! type's error bound.

mod common;
#[path = "quantize/inputs.rs"]
mod inputs;

use gguf::quant::simd::{available, set_isa, Isa};
use gguf::quantize::{
    can_quantize, output_bytes, quantize, quantize_parallel, requires_importance,
};
use gguf::{DataType, ErrorCode};
use inputs::{cases, fingerprint, golden, importance, Rng, ROW, TYPES};

fn quantized(t: DataType, src: &[f32], n_per_row: usize, imp: Option<&[f32]>) -> Vec<u8> {
    let size = output_bytes(t, (src.len() / n_per_row) as u64, n_per_row as u64).unwrap();
    let mut dst = vec![0u8; usize::try_from(size).unwrap()];
    assert_eq!(
        quantize(t, src, n_per_row, imp, &mut dst).unwrap(),
        dst.len()
    );
    dst
}

/// Every instruction set this CPU has (the K types are compiled for each), ggml's bytes.
#[test]
fn bytes_are_ggmls_on_this_platform() {
    for isa in Isa::ALL {
        if set_isa(isa) {
            ggmls_bytes(isa);
        }
    }
    set_isa(Isa::ALL.into_iter().rfind(|&i| available(i)).unwrap());
}

fn ggmls_bytes(isa: Isa) {
    let golden = golden();
    let imp = importance(ROW);
    let mut failures = Vec::new();
    for t in TYPES {
        for case in cases() {
            for w in [None, Some(&imp[..])] {
                let bytes = quantized(t, &case.rows, ROW, w);
                let g = golden
                    .iter()
                    .find(|g| g.0 == t.name() && g.1 == case.name && g.2 == w.is_some())
                    .unwrap_or_else(|| panic!("no golden line for {} {}", t.name(), case.name));
                // Every byte, on every platform: a NaN made by arithmetic is x86's, as ggml's
                // build made it (src/quantize/search.rs, `x86_nan`).
                let (got, want) = (fingerprint(&bytes), g.3);
                if got != want {
                    failures.push(format!(
                        "{} {} importance={}",
                        t.name(),
                        case.name,
                        w.is_some()
                    ));
                }
            }
        }
    }
    assert_eq!(golden.len(), TYPES.len() * cases().len() * 2);
    assert!(
        failures.is_empty(),
        "{isa:?}: not ggml's bytes: {failures:#?}"
    );
}

#[test]
fn threads_write_what_one_thread_writes() {
    let imp = importance(ROW);
    let rows = &cases()[0].rows;
    for t in TYPES {
        let want = quantized(t, rows, ROW, Some(&imp));
        for threads in [0, 1, 4, 64] {
            let mut got = vec![0xAAu8; want.len() + 3];
            let n = quantize_parallel(t, rows, ROW, Some(&imp), &mut got, threads).unwrap();
            assert_eq!(n, want.len());
            assert_eq!(&got[..n], &want[..], "{t:?} on {threads} threads");
            assert_eq!(
                &got[n..],
                &[0xAA; 3],
                "{t:?}: bytes past the output are left alone"
            );
        }
    }
}

/// Quantized then read back with the crate's dequantizer: each value within the type's step of
/// the original (random rows at scale 1).
#[test]
fn values_come_back_within_the_types_error() {
    let mut rng = Rng(5);
    let src: Vec<f32> = (0..ROW * 4).map(|_| rng.normal(1.0)).collect();
    let imp = importance(ROW);
    // The largest error each type may make on these rows (|x| < 2), relative to 2.
    let bounds: [(DataType, f32); 19] = [
        (DataType::F32, 0.0),
        (DataType::F16, 1e-3),
        (DataType::BF16, 8e-3),
        (DataType::Q1_0, 2.0),
        (DataType::Q2_0, 1.0),
        (DataType::Q4_0, 0.15),
        (DataType::Q4_1, 0.15),
        (DataType::Q5_0, 0.07),
        (DataType::Q5_1, 0.07),
        (DataType::Q8_0, 0.01),
        (DataType::MXFP4, 0.5),
        (DataType::NVFP4, 0.4),
        (DataType::Q2_K, 0.6),
        (DataType::Q3_K, 0.3),
        (DataType::Q4_K, 0.15),
        (DataType::Q5_K, 0.07),
        (DataType::Q6_K, 0.04),
        (DataType::TQ1_0, 2.0),
        (DataType::TQ2_0, 2.0),
    ];
    for (t, bound) in bounds {
        for w in [None, Some(&imp[..])] {
            let q = quantized(t, &src, ROW, w);
            let mut back = vec![0f32; src.len()];
            gguf::quant::dequantize(t, &q, &mut back).unwrap();
            let worst = src
                .iter()
                .zip(&back)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                worst <= bound * 2.0,
                "{t:?}: error {worst} above {}",
                bound * 2.0
            );
            if bound < 1.0 {
                assert!(back.iter().any(|&v| v != 0.0), "{t:?}: all zeros");
            }
        }
    }
}

#[test]
fn argument_rules() {
    let src = vec![0.5f32; 512];
    let mut dst = vec![0u8; 4096];
    let err = |t, src: &[f32], n, imp: Option<&[f32]>, dst: &mut [u8]| {
        let e = quantize(t, src, n, imp, dst).unwrap_err();
        (e.code(), e.to_string())
    };
    // Types ggml has no quantizer for.
    for t in [
        DataType::Q8_K,
        DataType::Q8_1,
        DataType::I8,
        DataType::I32,
        DataType::F64,
    ] {
        assert!(!can_quantize(t));
        let (code, msg) = err(t, &src, 256, None, &mut dst);
        assert_eq!(code, ErrorCode::Unsupported, "{t:?}");
        assert!(msg.contains(t.name()), "{msg}");
    }
    for t in TYPES {
        assert!(can_quantize(t));
        assert!(!requires_importance(t));
    }
    for t in [DataType::IQ2_XXS, DataType::IQ2_XS, DataType::IQ1_S] {
        assert!(requires_importance(t));
        let (code, msg) = err(t, &src, 256, None, &mut dst);
        assert_eq!(code, ErrorCode::InvalidArgument);
        assert!(
            msg.contains("importance") && msg.contains(t.name()),
            "{msg}"
        );
    }
    // A row that is not whole blocks, and an empty one.
    let (code, msg) = err(DataType::Q4_K, &src, 128, None, &mut dst);
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(
        msg.contains("Q4_K") && msg.contains("128") && msg.contains("256"),
        "{msg}"
    );
    assert_eq!(
        err(DataType::Q8_0, &src, 0, None, &mut dst).0,
        ErrorCode::InvalidArgument
    );
    // Values that are not whole rows.
    let (code, msg) = err(DataType::Q8_0, &src[..96], 64, None, &mut dst);
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(msg.contains("96"), "{msg}");
    // Importance weights of the wrong length.
    let (code, msg) = err(DataType::Q4_K, &src, 256, Some(&src[..255]), &mut dst);
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(msg.contains("255"), "{msg}");
    // dst too small: nothing written.
    let mut small = vec![7u8; 143];
    let (code, msg) = err(DataType::Q4_K, &src[..256], 256, None, &mut small);
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(msg.contains("143") && msg.contains("144"), "{msg}");
    assert!(small.iter().all(|&b| b == 7));
    // Sizes.
    assert_eq!(output_bytes(DataType::Q4_K, 3, 512).unwrap(), 3 * 2 * 144);
    assert_eq!(output_bytes(DataType::F16, 2, 5).unwrap(), 20);
    assert_eq!(
        output_bytes(DataType::Q8_0, u64::MAX, 64)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(quantize(DataType::Q8_0, &[], 32, None, &mut []).unwrap(), 0);
}
