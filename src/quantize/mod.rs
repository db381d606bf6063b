//! Floats to ggml's tensor types, byte for byte as `ggml_quantize_chunk` writes them.
//!
//! Every type that function quantizes: F32, F16, BF16, Q1_0, Q2_0, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
//! MXFP4, NVFP4, Q2_K to Q6_K, TQ1_0, TQ2_0 and the IQ types. Rows are independent: a row's
//! bytes depend on that row (and the importance weights) only, so [`quantize_parallel`] splits
//! rows among threads and writes what one thread writes. Importance weights (one per value of a
//! row, an importance matrix's column) steer the searches of the types whose ggml quantizer takes
//! them; the others ignore them, as ggml does.

/// A type's entry point (`$name`) running its row function (`$rows`, `#[inline(always)]`): the same code compiled for the widest vectors this CPU has (the
/// lanes of the searches fill them; no fused multiply-add either way), chosen by
/// `crate::quant::simd::active` (so `GGUF_SIMD=scalar` gives the baseline build).
macro_rules! entry {
    ($($name:ident => $rows:ident),* $(,)?) => {$(
        #[allow(unsafe_code)]
        pub(crate) fn $name(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
            #[cfg(target_arch = "x86_64")]
            {
                use crate::quant::simd::{active, Isa};
                /// # Safety
                /// The CPU has AVX-512 (F, BW, VL) and AVX2.
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
                unsafe fn wide(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
                    $rows(x, imp, y)
                }
                /// # Safety
                /// The CPU has AVX2.
                #[target_feature(enable = "avx2")]
                unsafe fn avx2(x: &[f32], imp: Option<&[f32]>, y: &mut [u8]) {
                    $rows(x, imp, y)
                }
                match active() {
                    // SAFETY: `active` names an instruction set only when this CPU has it.
                    Isa::Avx512 => return unsafe { wide(x, imp, y) },
                    // SAFETY: as above.
                    Isa::Avx2 => return unsafe { avx2(x, imp, y) },
                    _ => {}
                }
            }
            $rows(x, imp, y)
        }
    )*};
}

mod float;
mod fp4;
pub(crate) mod iquant;
mod kquant;
mod legacy;
pub(crate) mod search;
mod ternary;

use crate::error::{Error, ErrorCode, Result};
use crate::parallel;
use crate::types::DataType;

/// One row of a non-IQ type: `(row, importance, the row's blocks)`.
type RowKernel = fn(&[f32], Option<&[f32]>, &mut [u8]);

/// How a type is quantized.
#[derive(Clone, Copy)]
enum Path {
    Rows(RowKernel),
    Iq,
}

fn path(data_type: DataType) -> Option<Path> {
    use DataType as T;
    let k: RowKernel = match data_type {
        T::F32 => float::f32,
        T::F16 => float::f16,
        T::BF16 => float::bf16,
        T::Q1_0 => legacy::q1_0,
        T::Q2_0 => legacy::q2_0,
        T::Q4_0 => legacy::q4_0,
        T::Q4_1 => legacy::q4_1,
        T::Q5_0 => legacy::q5_0,
        T::Q5_1 => legacy::q5_1,
        T::Q8_0 => legacy::q8_0,
        T::MXFP4 => fp4::mxfp4,
        T::NVFP4 => fp4::nvfp4,
        T::Q2_K => kquant::q2_k,
        T::Q3_K => kquant::q3_k,
        T::Q4_K => kquant::q4_k,
        T::Q5_K => kquant::q5_k,
        T::Q6_K => kquant::q6_k,
        T::TQ1_0 => ternary::tq1_0,
        T::TQ2_0 => ternary::tq2_0,
        T::IQ2_XXS
        | T::IQ2_XS
        | T::IQ2_S
        | T::IQ3_XXS
        | T::IQ3_S
        | T::IQ1_S
        | T::IQ1_M
        | T::IQ4_NL
        | T::IQ4_XS => return Some(Path::Iq),
        // Types with no quantizer: every type is named, so a new one must be placed here.
        T::Q8_1 | T::Q8_K | T::I8 | T::I16 | T::I32 | T::I64 | T::F64 => return None,
    };
    Some(Path::Rows(k))
}

/// Whether `data_type` can be quantized (`ggml_quantize_chunk` has a quantizer for it).
pub fn can_quantize(data_type: DataType) -> bool {
    path(data_type).is_some()
}

/// Whether quantizing to `data_type` needs importance weights (ggml's
/// `ggml_quantize_requires_imatrix`: IQ2_XXS, IQ2_XS and IQ1_S).
pub fn requires_importance(data_type: DataType) -> bool {
    matches!(
        data_type,
        DataType::IQ2_XXS | DataType::IQ2_XS | DataType::IQ1_S
    )
}

/// The bytes `n_rows` rows of `n_per_row` values take as `data_type`: an error when the type
/// cannot be quantized, the row is not a whole number of the type's blocks (or empty), or the
/// size overflows.
pub fn output_bytes(data_type: DataType, n_rows: u64, n_per_row: u64) -> Result<u64> {
    let row = row_bytes(data_type, n_per_row)?;
    n_rows.checked_mul(row).ok_or_else(|| {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{n_rows} rows of {n_per_row} values as {} take more than 2^64 bytes",
                data_type.name()
            ),
        )
    })
}

fn row_bytes(data_type: DataType, n_per_row: u64) -> Result<u64> {
    if path(data_type).is_none() {
        return Err(Error::msg(
            ErrorCode::Unsupported,
            format!(
                "{} cannot be quantized: ggml has no quantizer for it",
                data_type.name()
            ),
        ));
    }
    let block = data_type.block_elems();
    if n_per_row == 0 || n_per_row % block != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{}: a row of {n_per_row} values is not a whole number of {block}-value blocks",
                data_type.name()
            ),
        ));
    }
    (n_per_row / block)
        .checked_mul(data_type.block_bytes())
        .ok_or_else(|| {
            Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{}: a row of {n_per_row} values is too long",
                    data_type.name()
                ),
            )
        })
}

/// The checked shape of one call: the path, the bytes of a row and of all rows.
struct Plan {
    path: Path,
    row_bytes: usize,
    total: usize,
}

fn plan(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &[u8],
) -> Result<Plan> {
    let too_big = || {
        Error::msg(
            ErrorCode::InvalidArgument,
            format!("{}: the output would not fit in memory", data_type.name()),
        )
    };
    let row = row_bytes(data_type, n_per_row as u64)?;
    let path = path(data_type).ok_or_else(too_big)?; // checked by `row_bytes`
    if src.len() % n_per_row != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{}: {} values are not a whole number of {n_per_row}-value rows",
                data_type.name(),
                src.len()
            ),
        ));
    }
    match importance {
        Some(w) if w.len() != n_per_row => {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                "{}: {} importance weights for rows of {n_per_row} values (one per value of a row)",
                data_type.name(),
                w.len()
            ),
            ))
        }
        None if requires_importance(data_type) => {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "{} cannot be quantized without importance weights",
                    data_type.name()
                ),
            ))
        }
        _ => {}
    }
    let row_bytes = usize::try_from(row).map_err(|_| too_big())?;
    let n_rows = src.len() / n_per_row;
    let total = n_rows.checked_mul(row_bytes).ok_or_else(too_big)?;
    if dst.len() < total {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{}: dst holds {} bytes; {n_rows} rows of {n_per_row} values take {total}",
                data_type.name(),
                dst.len()
            ),
        ));
    }
    Ok(Plan {
        path,
        row_bytes,
        total,
    })
}

/// Quantizes whole rows (`dst` holds exactly their blocks) on this thread.
fn run_rows(
    data_type: DataType,
    p: &Plan,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
    first_row: usize,
) -> Result<()> {
    match p.path {
        Path::Rows(kernel) => {
            for (x, y) in src
                .chunks_exact(n_per_row)
                .zip(dst.chunks_exact_mut(p.row_bytes))
            {
                kernel(x, importance, y);
            }
            Ok(())
        }
        Path::Iq => {
            iquant::quantize_rows(data_type, src, n_per_row, importance, dst, first_row).map(|_| ())
        }
    }
}

/// Quantizes `src` (whole rows of `n_per_row` floats) into `data_type`'s blocks at `dst`, as
/// `ggml_quantize_chunk` does; `importance`, when given, holds `n_per_row` weights. Returns the
/// bytes written (the first ones of `dst`, which may be longer).
pub fn quantize(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
) -> Result<usize> {
    let p = plan(data_type, src, n_per_row, importance, dst)?;
    let dst = &mut dst[..p.total];
    run_rows(data_type, &p, src, n_per_row, importance, dst, 0)?;
    Ok(p.total)
}

/// [`quantize`] with the rows split among `n_threads` threads (0: one per core; see
/// [`crate::parallel::thread_count`]). The bytes are those one thread writes.
pub fn quantize_parallel(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
    n_threads: u32,
) -> Result<usize> {
    quantize_parallel_at(data_type, src, n_per_row, importance, dst, n_threads, 0)
}

/// [`quantize_parallel`] of rows that are the caller's rows from `first_row` on (a message
/// names a row by the caller's count).
pub(crate) fn quantize_parallel_at(
    data_type: DataType,
    src: &[f32],
    n_per_row: usize,
    importance: Option<&[f32]>,
    dst: &mut [u8],
    n_threads: u32,
    first_row: usize,
) -> Result<usize> {
    let p = plan(data_type, src, n_per_row, importance, dst)?;
    let dst = &mut dst[..p.total];
    let threads = parallel::thread_count(n_threads);
    // The failure one thread meets: the one at the lowest row (each part names its rows as
    // the whole call numbers them, and every part runs).
    let first_failure: std::sync::Mutex<Option<(usize, crate::error::Error)>> =
        std::sync::Mutex::new(None);
    parallel::split_mut(dst, p.row_bytes, threads, "quantize", |first, part| {
        let rows = part.len() / p.row_bytes;
        let x = &src[first * n_per_row..(first + rows) * n_per_row];
        if let Err(e) = run_rows(
            data_type,
            &p,
            x,
            n_per_row,
            importance,
            part,
            first_row + first,
        ) {
            let mut f = first_failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if f.as_ref().is_none_or(|(at, _)| first < *at) {
                *f = Some((first, e));
            }
        }
        Ok(())
    })?;
    if let Some((_, e)) = first_failure
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    Ok(p.total)
}
