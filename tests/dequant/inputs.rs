#![allow(dead_code)] // each test crate uses part of it

//! The blocks every dequantization test converts, the same on every platform: for each type,
//! random blocks, then blocks whose scale fields hold each special value. `dequant_ggml.rs`
//! checks ggml gives what `tests/data/dequant-golden.tsv` records for them; `dequant.rs` checks
//! this build gives it too, on any platform (no ggml needed).

use gguf::quant::blocks::{fields, FieldKind};
use gguf::DataType;

use super::common::golden::{fnv1a64, tsv_rows};
pub use super::common::rng::Rng;

/// Special half floats: zeros, subnormals, largest finite, infinities, NaNs (quiet, signalling,
/// with payloads, both signs), and a few ordinary values.
pub const SPECIAL_F16: [u16; 14] = [
    0x0000, 0x8000, 0x0001, 0x03FF, 0x8001, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFD55,
    0x3C00, 0xB800,
];
/// The same for f32 scales (Q8_K).
pub const SPECIAL_F32: [u32; 12] = [
    0,
    0x8000_0000,
    1,
    0x007F_FFFF,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0xFFAA_AAAA,
    0x3F80_0000,
];

/// Blocks of `t` with each scale field set to each special value (other bytes random).
pub fn special_blocks(t: DataType, rng: &mut Rng) -> Vec<u8> {
    let bytes = t.block_bytes() as usize;
    let mut out = Vec::new();
    let mut block = |set: &dyn Fn(&mut [u8])| {
        let mut b = rng.bytes(bytes);
        set(&mut b);
        out.extend_from_slice(&b);
    };
    if t == DataType::IQ1_M {
        // Its f16 scale is spread over the top nibbles of the four scale words.
        for &h in &SPECIAL_F16 {
            block(&|b: &mut [u8]| {
                for k in 0..4 {
                    let at = 48 + 2 * k + 1;
                    b[at] = (b[at] & 0x0F) | ((((h >> (4 * k)) & 0xF) as u8) << 4);
                }
            });
        }
        return out;
    }
    for field in fields(t) {
        let at = field.offset;
        match field.kind {
            FieldKind::F16 => {
                for &h in &SPECIAL_F16 {
                    block(&|b: &mut [u8]| b[at..at + 2].copy_from_slice(&h.to_le_bytes()));
                }
                // Every scale field special at once (NaN payloads meeting in one sum).
                for &h in &SPECIAL_F16 {
                    for &g in &SPECIAL_F16 {
                        block(&|b: &mut [u8]| {
                            for (n, f) in fields(t)
                                .iter()
                                .filter(|f| f.kind == FieldKind::F16)
                                .enumerate()
                            {
                                let v = if n == 0 { h } else { g };
                                b[f.offset..f.offset + 2].copy_from_slice(&v.to_le_bytes());
                            }
                        });
                    }
                }
            }
            FieldKind::F32 => {
                for &s in &SPECIAL_F32 {
                    block(&|b: &mut [u8]| b[at..at + 4].copy_from_slice(&s.to_le_bytes()));
                }
            }
            FieldKind::E8M0 | FieldKind::UE4M3 => {
                for v in 0..=255u8 {
                    block(&|b: &mut [u8]| b[at..at + field.len].fill(v));
                }
            }
            FieldKind::Bytes => {}
        }
    }
    out
}

/// The cases of type `t`: (name, blocks), random then special.
pub fn cases(t: DataType) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(t.id()));
    let random = rng.bytes(t.block_bytes() as usize * 256);
    let special = special_blocks(t, &mut rng);
    vec![("random", random), ("special", special)]
}

/// FNV-1a (64 bits) over the floats' bits, little-endian: a platform-independent fingerprint.
pub fn fingerprint(values: &[f32]) -> u64 {
    fnv1a64(values.iter().flat_map(|v| v.to_bits().to_le_bytes()))
}

/// The recorded fingerprints: (type name, case name) to fingerprint.
pub fn golden() -> Vec<(String, String, u64)> {
    tsv_rows(include_str!("../data/dequant-golden.tsv"))
        .map(|f| {
            (
                f[0].to_string(),
                f[1].to_string(),
                u64::from_str_radix(f[2], 16).unwrap(),
            )
        })
        .collect()
}
