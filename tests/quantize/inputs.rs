#![allow(dead_code)] // each test crate uses part of it

//! The rows every quantization test converts, the same on every platform: for each case, a
//! few rows of floats (random at several scales, zeros, constants, huge and tiny magnitudes,
//! subnormals, values beside powers of two, infinities and NaN), and importance weights.
//! `quantize_ggml.rs` checks ggml writes what `tests/data/quantize-golden.tsv` records for them;
//! `quantize.rs` checks this build writes it too, on any platform (no ggml needed).

use gguf::DataType;

/// The types the non-IQ quantizers write (every one `ggml_quantize_chunk` takes but the IQ
/// types).
pub const TYPES: [DataType; 19] = [
    DataType::F32,
    DataType::F16,
    DataType::BF16,
    DataType::Q1_0,
    DataType::Q2_0,
    DataType::Q4_0,
    DataType::Q4_1,
    DataType::Q5_0,
    DataType::Q5_1,
    DataType::Q8_0,
    DataType::MXFP4,
    DataType::NVFP4,
    DataType::Q2_K,
    DataType::Q3_K,
    DataType::Q4_K,
    DataType::Q5_K,
    DataType::Q6_K,
    DataType::TQ1_0,
    DataType::TQ2_0,
];

use super::common::golden::tsv_rows;
pub use super::common::rng::Rng;

/// Values per row of every case: a whole number of blocks of every type.
pub const ROW: usize = 512;

/// One named case: rows of `ROW` values.
pub struct Case {
    pub name: &'static str,
    pub rows: Vec<f32>,
    /// Whether every value is finite.
    pub finite: bool,
}

fn row(f: impl FnMut(usize) -> f32) -> Vec<f32> {
    (0..ROW).map(f).collect()
}

/// Every case, in order.
pub fn cases() -> Vec<Case> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut out = Vec::new();
    let mut add = |name, rows: Vec<Vec<f32>>| {
        let rows: Vec<f32> = rows.concat();
        let finite = rows.iter().all(|v| v.is_finite());
        out.push(Case { name, rows, finite });
    };
    let mut random = Vec::new();
    for scale in [1e-3f32, 0.02, 1.0, 7.5, 1e3] {
        random.push(row(|_| rng.normal(scale)));
    }
    // Outliers, one-signed rows and a mean offset: the searches' other branches.
    random.push(row(|i| {
        if i % 61 == 3 {
            rng.normal(40.0)
        } else {
            rng.normal(1.0)
        }
    }));
    random.push(row(|_| rng.unit() * 3.0 + 0.5));
    random.push(row(|_| -rng.unit() * 2.0 - 0.25));
    random.push(row(|_| rng.normal(1.0) + 2.0));
    random.push(row(|i| if i % 3 == 0 { 0.0 } else { rng.normal(0.5) }));
    add("random", random);
    add(
        "zeros",
        vec![
            row(|_| 0.0),
            row(|i| if i % 2 == 0 { -0.0 } else { 0.0 }),
            row(|i| if i % 32 == 5 { 1.0 } else { 0.0 }),
            row(|i| if i % 256 == 255 { -3.0 } else { 0.0 }),
        ],
    );
    add(
        "constant",
        vec![
            row(|_| 1.0),
            row(|_| -0.75),
            row(|_| 1e-20),
            row(|_| 65504.0),
            row(|_| -7e4),
        ],
    );
    add(
        "huge",
        vec![
            row(|_| rng.normal(1e38)),
            row(|i| {
                if i % 7 == 0 {
                    f32::MAX
                } else {
                    rng.normal(1e30)
                }
            }),
            row(|i| if i % 2 == 0 { -f32::MAX } else { f32::MAX }),
            row(|_| rng.normal(1e20)),
            row(|_| rng.normal(7e4)),
        ],
    );
    add(
        "tiny",
        vec![
            row(|_| rng.normal(1e-20)),
            row(|_| rng.normal(1e-30)),
            row(|_| rng.normal(1e-37)),
            row(|_| rng.normal(1e-7)),
        ],
    );
    add(
        "subnormal",
        vec![
            row(|_| rng.normal(1e-40)),
            row(|i| f32::from_bits((i as u32).wrapping_mul(2_654_435_761) & 0x807F_FFFF)),
            row(|i| f32::from_bits(i as u32 % 5)),
        ],
    );
    add(
        "powers",
        vec![
            // Just below, at and just above powers of two: where a scale's exponent turns.
            row(|i| {
                let p = 2f32.powi((i / 3) as i32 % 40 - 20);
                let v = match i % 3 {
                    0 => f32::from_bits(p.to_bits() - 1),
                    1 => p,
                    _ => f32::from_bits(p.to_bits() + 1),
                };
                if i % 5 == 0 {
                    -v
                } else {
                    v
                }
            }),
            row(|i| {
                if i % 16 == 0 {
                    f32::from_bits(0x4000_0000 - 1 - (i as u32 % 7))
                } else {
                    0.5
                }
            }),
            row(|i| {
                if i % 32 == 0 {
                    f32::from_bits(0x3F00_0000 - 1)
                } else {
                    0.01
                }
            }),
            // Ties: halves of the quant steps.
            row(|i| (i % 17) as f32 * 0.5 - 4.0),
            row(|i| (i % 33) as f32 * 0.25),
        ],
    );
    add(
        "nonfinite",
        vec![
            row(|i| {
                if i == 17 {
                    f32::INFINITY
                } else {
                    rng.normal(1.0)
                }
            }),
            row(|i| {
                if i == 300 {
                    f32::NEG_INFINITY
                } else {
                    rng.normal(1.0)
                }
            }),
            row(|i| {
                if i % 64 == 40 {
                    f32::NAN
                } else {
                    rng.normal(1.0)
                }
            }),
            row(|i| {
                if i % 32 == 31 {
                    f32::NAN
                } else {
                    rng.normal(1.0)
                }
            }),
            row(|i| {
                if i % 2 == 0 {
                    f32::INFINITY
                } else {
                    f32::NEG_INFINITY
                }
            }),
            row(|_| f32::NAN),
            row(|i| if i % 9 == 0 { -f32::NAN } else { f32::INFINITY }),
        ],
    );
    out
}

/// Importance weights for rows of `n` values: positive, a few zero, over a wide range.
pub fn importance(n: usize) -> Vec<f32> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    (0..n)
        .map(|i| {
            if i % 29 == 7 {
                0.0
            } else {
                rng.unit() * rng.unit() * 10.0 + 1e-3
            }
        })
        .collect()
}

/// xxh64 of the bytes: the fingerprint recorded in the golden file.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(bytes, 0)
}

/// The recorded fingerprints: (type name, case name, with importance) to the fingerprint of
/// ggml's bytes.
pub fn golden() -> Vec<(String, String, bool, u64)> {
    tsv_rows(include_str!("../data/quantize-golden.tsv"))
        .map(|f| {
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2] == "imatrix",
                u64::from_str_radix(f[3], 16).unwrap(),
            )
        })
        .collect()
}
