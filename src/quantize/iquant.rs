//! The IQ types' quantizers (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
//! IQ1_M), in ggml's order of operations.
//!
//! Each search runs its arithmetic exactly as ggml's C does it (f32 throughout, no fused
//! multiply-add, the same comparisons, including how they treat NaN), so the bytes are ggml's.
//! Where ggml has no answer (its `GGML_ASSERT`s on a grid point or on a scale, which abort the
//! process, or a read outside its tables or its input), this returns an error naming the row and
//! the element instead.
//!
//! The grid maps and neighbour lists ggml builds in `ggml_quantize_init` are built here once per
//! grid on first use ([`grids`]), from the dequantizers' grids, with the same neighbours in the
//! same order.

// The casts here are C's conversions that ggml's code makes (to `uint8_t`, `uint16_t`, `int8_t`,
// from `int` to `float`), of values the block layout bounds (levels below 16, grid indices below
// 2048, positions in a 256-value block); the index loops keep ggml's loops side by side with
// its C; `!(scale >= 0.0)` is ggml's assert, which NaN fails.
#![allow(
    clippy::cast_possible_truncation,
    clippy::needless_range_loop,
    clippy::neg_cmp_op_on_partial_ord
)]

mod grid_search;
mod grids;
mod iq1;
mod iq2_iq3;
mod iq4;
mod shared;

use crate::error::{Error, ErrorCode, Result};
use crate::types::DataType;
use iq1::{iq1_m_row, iq1_s_row};
use iq2_iq3::{iq2_s_row, iq2_xs_row, iq2_xxs_row, iq3_s_row, iq3_xxs_row};
use iq4::{iq4_nl_block, iq4_xs_block};
use shared::NoAnswer;

/// Quantizes `src` (whole rows of `n_per_row` floats; `dst` holds exactly their blocks) into the
/// IQ type `data_type`; returns the bytes written. `first_row` is the index of `src`'s first row
/// in the caller's rows (for a message). A row ggml has no answer for fails the call with `dst`
/// unchanged from that row on (each row is quantized aside, then copied).
pub(crate) fn quantize_rows(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
    first_row: usize,
) -> Result<usize> {
    let name = data_type.name();
    let invalid = |m: String| Err(Error::msg(ErrorCode::InvalidArgument, m));
    let (block_elems, block_bytes) = match data_type {
        DataType::IQ4_NL => (32, 18),
        DataType::IQ4_XS => (256, 136),
        DataType::IQ3_XXS => (256, 98),
        DataType::IQ3_S => (256, 110),
        DataType::IQ2_XXS => (256, 66),
        DataType::IQ2_XS => (256, 74),
        DataType::IQ2_S => (256, 82),
        DataType::IQ1_S => (256, 50),
        DataType::IQ1_M => (256, 56),
        _ => {
            return Err(Error::msg(
                ErrorCode::Unsupported,
                format!("{name} is not an IQ type"),
            ))
        }
    };
    if n_per_row == 0 || n_per_row % block_elems != 0 {
        return invalid(format!(
            "{name}: a row of {n_per_row} values is not a whole number of {block_elems}-value blocks"
        ));
    }
    if src.len() % n_per_row != 0 {
        return invalid(format!(
            "{name}: {} values are not whole rows of {n_per_row}",
            src.len()
        ));
    }
    let rows = src.len() / n_per_row;
    let row_bytes = n_per_row / block_elems * block_bytes;
    let need = rows.checked_mul(row_bytes);
    if need != Some(dst.len()) {
        return invalid(format!(
            "{name}: {rows} rows of {n_per_row} values need {} bytes, the output holds {}",
            need.map_or_else(|| "more than addressable".to_owned(), |n| n.to_string()),
            dst.len()
        ));
    }
    if let Some(w) = importance {
        if w.len() != n_per_row {
            return invalid(format!(
                "{name}: the importance holds {} weights, a row has {n_per_row} values",
                w.len()
            ));
        }
    } else if matches!(
        data_type,
        DataType::IQ2_XXS | DataType::IQ2_XS | DataType::IQ1_S
    ) {
        return invalid(format!("{name} needs an importance matrix (as ggml does)"));
    }
    let job = Job {
        data_type,
        src,
        n_per_row,
        importance,
        row_bytes,
        first_row,
    };
    quantize_all(job, dst)?;
    Ok(dst.len())
}

/// One call's rows: the type, whole rows of `n_per_row` floats, the importance (a weight for
/// each value of a row) and the bytes of a row's blocks.
#[derive(Clone, Copy)]
struct Job<'a> {
    data_type: DataType,
    src: &'a [f32],
    n_per_row: usize,
    importance: Option<&'a [f32]>,
    row_bytes: usize,
    first_row: usize,
}

/// The row loop, compiled three times: for AVX-512, for AVX2 (the searches' lanes widen) and
/// portable; the dispatch picks one (the same bytes from each).
#[allow(unsafe_code)]
fn quantize_all(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::quant::simd::{active, Isa};
        match active() {
            // The grid searches run faster compiled for AVX2 (measured on an Intel Xeon with
            // AVX-512: their lanes are 8 wide), so only IQ4_NL and IQ4_XS take this instance.
            Isa::Avx512 if matches!(job.data_type, DataType::IQ4_NL | DataType::IQ4_XS) => {
                // SAFETY: the dispatch chose AVX-512 (F, BW, VL) only where the CPU has it.
                return unsafe { rows_avx512(job, dst) };
            }
            // SAFETY: the dispatch chose AVX2 (or AVX-512, which comes with it) only where the
            // CPU has it.
            Isa::Avx2 | Isa::Avx512 => return unsafe { rows_avx2(job, dst) },
            _ => {}
        }
    }
    rows_body(job, dst)
}

/// [`rows_body`] compiled with the target features `$features`.
macro_rules! rows_with {
    ($name:ident, $features:tt) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(unsafe_code)]
        /// # Safety
        /// The CPU must have the enabled features.
        unsafe fn $name(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
            rows_body(job, dst)
        }
    };
}
rows_with!(rows_avx512, "avx512f,avx512bw,avx512vl,avx2");
rows_with!(rows_avx2, "avx2");

#[inline(always)]
fn rows_body(job: Job<'_>, dst: &mut [u8]) -> Result<()> {
    let Job {
        data_type,
        src,
        n_per_row,
        importance,
        row_bytes,
        first_row,
    } = job;
    let name = data_type.name();
    // The types whose search can fail write a row aside first, so that a failing row leaves
    // the caller's bytes as they were.
    let fallible = !matches!(data_type, DataType::IQ4_NL | DataType::IQ4_XS);
    let mut aside = if fallible {
        vec![0u8; row_bytes]
    } else {
        Vec::new()
    };
    for (r, (x, out)) in src
        .chunks_exact(n_per_row)
        .zip(dst.chunks_exact_mut(row_bytes))
        .enumerate()
    {
        let y: &mut [u8] = if fallible { &mut aside } else { out };
        let res = match data_type {
            DataType::IQ4_NL => {
                for (b, (xb, yb)) in x.chunks_exact(32).zip(y.chunks_exact_mut(18)).enumerate() {
                    iq4_nl_block(xb, importance.map(|w| &w[32 * b..32 * b + 32]), yb);
                }
                Ok(())
            }
            DataType::IQ4_XS => {
                for (b, (xb, yb)) in x.chunks_exact(256).zip(y.chunks_exact_mut(136)).enumerate() {
                    iq4_xs_block(xb, importance.map(|w| &w[256 * b..256 * b + 256]), yb);
                }
                Ok(())
            }
            DataType::IQ2_XXS => iq2_xxs_row(x, importance.unwrap_or(&[]), y),
            DataType::IQ2_XS => iq2_xs_row(x, importance.unwrap_or(&[]), y),
            DataType::IQ2_S => iq2_s_row(x, importance, y),
            DataType::IQ3_XXS => iq3_xxs_row(x, importance, y),
            DataType::IQ3_S => iq3_s_row(x, importance, y),
            DataType::IQ1_S => iq1_s_row(src, r * n_per_row, n_per_row, importance, y),
            _ => iq1_m_row(src, r * n_per_row, n_per_row, importance, y),
        };
        if let Err(at) = res {
            return Err(no_answer(name, first_row + r, at, x));
        }
        if fallible {
            out.copy_from_slice(&aside);
        }
    }
    Ok(())
}

/// The error for a row ggml has no answer for: it names the row and the element that makes it
/// so (the first NaN or infinity in the block, else the block's largest magnitude).
fn no_answer(name: &str, row: usize, at: NoAnswer, x: &[f32]) -> Error {
    let start = at.0.min(x.len().saturating_sub(1)) / 256 * 256;
    let block = &x[start..(start + 256).min(x.len())];
    let pick = block
        .iter()
        .position(|v| !v.is_finite())
        .unwrap_or_else(|| {
            let mut best = 0;
            for (i, v) in block.iter().enumerate() {
                if v.abs() > block[best].abs() {
                    best = i;
                }
            }
            best
        });
    let e = start + pick;
    Error::msg(
        ErrorCode::InvalidArgument,
        format!(
            "{name}: row {row}, element {e} ({}): ggml finds no grid point or scale for this block (it aborts)",
            x[e]
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::iq1::{msort, sorted_pairs};
    #[cfg(target_arch = "x86_64")]
    use super::*;
    use crate::quantize::search::{f32_to_f16, nearest_int};
    #[cfg(target_arch = "x86_64")]
    use grid_search::{nearest_neighbour, nearest_neighbour_avx2};
    #[cfg(target_arch = "x86_64")]
    use grids::{Grid, Lookup, LANES};

    #[test]
    fn nearest_int_rounds_half_to_even() {
        assert_eq!(nearest_int(0.5), 0);
        assert_eq!(nearest_int(1.5), 2);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-0.5), 0);
    }

    #[test]
    fn fp16_matches_known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3C00);
        assert_eq!(f32_to_f16(-2.0), 0xC000);
        assert_eq!(f32_to_f16(65504.0), 0x7BFF);
        assert_eq!(f32_to_f16(1e6), 0x7C00);
        assert_eq!(f32_to_f16(f32::NAN) & 0x7FFF, 0x7E00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
    }

    /// The AVX2 neighbour search against the portable one, over every list of two grids: on
    /// random values and on values halfway between levels (many equal distances, where the
    /// first of the smallest must win), including lists whose last chunk is padding.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[allow(unsafe_code)]
    fn avx2_neighbour_search_matches_portable() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        fn check<const N: usize>(grid: &Grid<N>, bits: u32) {
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let (mut lists, mut ties) = (0, 0);
            for u in 0..1usize << (bits * N as u32) {
                let Some(Lookup::Off(nb)) = grid.lookup(u) else {
                    continue;
                };
                if nb.ids.is_empty() {
                    continue;
                }
                lists += 1;
                for round in 0..4 {
                    let mut xval = [0f32; N];
                    let mut w = [0f32; N];
                    for i in 0..N {
                        let r = next();
                        if round < 2 {
                            xval[i] = (2 * (r % 8)) as f32;
                            w[i] = 1.0;
                        } else {
                            xval[i] = (r >> 40) as f32 / (1u64 << 21) as f32;
                            w[i] = ((r >> 8) & 0xffff) as f32 / 4096.0;
                        }
                    }
                    let scale = if round < 2 {
                        1.0
                    } else {
                        0.5 + (next() % 64) as f32 / 32.0
                    };
                    let a = nearest_neighbour::<N>(&nb, &xval, &w, scale);
                    // SAFETY: the CPU has AVX2 (checked above).
                    let b = unsafe { nearest_neighbour_avx2::<N>(&nb, &xval, &w, scale) };
                    assert_eq!(a, b, "point {u}, round {round}");
                    ties += usize::from(round < 2 && nb.ids.len() % LANES != 0);
                }
            }
            assert!(lists > 100 && ties > 0);
        }
        check(grids::iq3_xxs(), 3);
        check(grids::iq3_s(), 3);
        check(grids::iq2_s(), 2);
    }

    /// Without NaN the sort before the split search takes a shortcut; it must leave glibc's
    /// merge sort's order, ties (and both zeros) included.
    #[test]
    fn sorted_pairs_match_glibc_order() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for round in 0..2000 {
            let mut xb = [0f32; 32];
            for v in &mut xb {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *v = match round % 3 {
                    0 => (s % 7) as f32 - 3.0,
                    1 => [0.0, -0.0, 1.5, -1.5][(s % 4) as usize],
                    _ => (s >> 40) as f32 / 1e6 - 8.0,
                };
            }
            let mut want = [(0f32, 0u8); 32];
            for j in 0..32 {
                want[j] = (xb[j], j as u8);
            }
            let mut tmp = [(0f32, 0u8); 32];
            msort(&mut want, &mut tmp);
            let got = sorted_pairs::<32>(&xb);
            let ids = |p: &[(f32, u8)]| p.iter().map(|q| q.1).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&want), "round {round}");
            let got16 = sorted_pairs::<16>(&xb[..16]);
            let mut want16 = [(0f32, 0u8); 16];
            for j in 0..16 {
                want16[j] = (xb[j], j as u8);
            }
            msort(&mut want16, &mut tmp);
            assert_eq!(ids(&got16), ids(&want16), "round {round}");
        }
    }

    #[test]
    fn msort_is_stable_and_keeps_nan_where_glibc_does() {
        let mut b = [(2.0, 0u8), (1.0, 1), (2.0, 2), (f32::NAN, 3), (0.0, 4)];
        let mut t = [(0f32, 0u8); 5];
        msort(&mut b, &mut t);
        let order: Vec<u8> = b.iter().map(|p| p.1).collect();
        // [2,1] -> [1,2]; [2,NaN,0] -> [2] + [NaN,0] -> (NaN vs 0: NaN kept) [NaN,0] ->
        // 2 vs NaN: take 2; then NaN, 0 -> [2,NaN,0]; merge [1,2] with [2,NaN,0].
        assert_eq!(order, vec![1, 0, 2, 3, 4]);
    }
}
