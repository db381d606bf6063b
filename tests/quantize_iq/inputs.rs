#![allow(dead_code)] // each test crate uses part of it

//! The rows the IQ quantizer tests feed, the same on every platform: `quantize_iq_ggml.rs`
//! checks ggml writes what `tests/data/quantize-iq-fingerprints.tsv` records for the fixed
//! inputs; `quantize_iq.rs` checks this build writes it too, on any platform (no ggml needed).

use gguf::DataType;

/// The types quantized here, with whether ggml requires an importance matrix for them.
pub const TYPES: [(DataType, bool); 9] = [
    (DataType::IQ4_NL, false),
    (DataType::IQ4_XS, false),
    (DataType::IQ3_XXS, false),
    (DataType::IQ3_S, false),
    (DataType::IQ2_XXS, true),
    (DataType::IQ2_XS, true),
    (DataType::IQ2_S, false),
    (DataType::IQ1_S, true),
    (DataType::IQ1_M, false),
];

use super::common::golden::fnv1a64;
pub use super::common::rng::Rng;

/// The fingerprint case of a type: 4 rows of 512 values (IQ4_NL: rows of 96) at a few scales,
/// and an importance column.
pub fn fingerprint_input(t: DataType) -> (Vec<f32>, usize, Vec<f32>) {
    let n_per_row = if t == DataType::IQ4_NL { 96 } else { 512 };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(t.id()));
    let mut src = Vec::new();
    for (r, scale) in [1.0f32, 0.01, 37.5, 1e-5].into_iter().enumerate() {
        for i in 0..n_per_row {
            // A few zeros and an outlier now and then, as real tensors have.
            let v = match (r * 7 + i) % 61 {
                0 => 0.0,
                1 => 6.0 * rng.bell(),
                _ => rng.bell(),
            };
            src.push(v * scale);
        }
    }
    let importance = (0..n_per_row).map(|_| rng.weight()).collect();
    (src, n_per_row, importance)
}

/// Where the recorded fingerprints live.
pub const FINGERPRINTS: &str = "tests/data/quantize-iq-fingerprints.tsv";

/// The fingerprint lines of outputs: `TYPE<TAB>importance|none<TAB>fnv64 hex`.
pub fn fingerprint_line(t: DataType, with_importance: bool, out: &[u8]) -> String {
    format!(
        "{}\t{}\t{:016x}",
        t.name(),
        if with_importance {
            "importance"
        } else {
            "none"
        },
        fnv1a64(out.iter().copied())
    )
}
