//! Tensor values: every data type converted to `f32`, bit for bit as ggml's own dequantizers
//! compute them (`dequantize_row_*`, `ggml_get_type_traits(t)->to_float`), on every platform.
//!
//! - [`blocks`](crate::quant::blocks): each type's block layout, defined once.
//! - One file per family of types: `float`, `legacy`, `kquant`, `iquant`, `ternary`, `fp4`
//!   (Q1_0 and Q2_0 live in `legacy`, beside Q4_0 whose shape they share).
//! - [`dequantize`](crate::quant::dequantize): the dispatch over whole blocks, with checked
//!   lengths.
//! - `simd`: the vector kernels (AVX2, AVX-512, NEON) the dispatch prefers, chosen at run time.
//! - `validate`: the NaN and infinity checks of ggml's `ggml_validate_row_data`.
//!
//! Exactness: the kernels follow ggml's order of operations (a multiply, then an add; never a
//! fused multiply-add, which Rust does not contract on its own) and ggml's half to single
//! conversion. A block whose scales are finite runs plain arithmetic
//! ([`Plain`](crate::quant::Plain)); a block with a NaN or infinite scale makes each NaN by x86's
//! rules ([`X86Nan`](crate::quant::X86Nan)), so it gives the same bits on Arm and s390x as ggml
//! gives on x86-64 (`by_scales!` picks).

mod arith;
pub mod blocks;
pub mod float;
pub mod fp4;
mod half;
pub mod iquant;
pub mod kquant;
pub mod legacy;
mod scalar;
pub mod simd;
#[rustfmt::skip]
pub mod tables;
pub mod ternary;
pub mod validate;

use crate::error::{Error, ErrorCode, Result};
use crate::format::ByteOrder;
use crate::types::DataType;

pub use arith::{add, mul, sub, Arith, Plain, X86Nan};
pub use half::{f16_bits_to_f32_bits, f16_to_f32};
pub use scalar::{scalar_kernel, Kernel};

/// The kernel used for `dtype`: the fastest this CPU runs (vector kernels replace scalar ones
/// per type here), else the scalar one.
pub fn kernel(dtype: DataType) -> Kernel {
    simd::best(dtype).unwrap_or_else(|| scalar_kernel(dtype))
}

/// The name of a data type id that was removed from the format (ggml keeps the ids reserved).
pub fn removed_type_name(id: u32) -> Option<&'static str> {
    Some(match id {
        4 => "Q4_2",
        5 => "Q4_3",
        31 => "Q4_0_4_4",
        32 => "Q4_0_4_8",
        33 => "Q4_0_8_8",
        36 => "IQ4_NL_4_4",
        37 => "IQ4_NL_4_8",
        38 => "IQ4_NL_8_8",
        _ => return None,
    })
}

/// The data type with this id, or an error naming a removed type or saying the id is unknown.
pub fn data_type(id: u32) -> Result<DataType> {
    DataType::from_id(id).ok_or_else(|| match removed_type_name(id) {
        Some(name) => Error::msg(
            ErrorCode::Unsupported,
            format!(
                "data type {id} ({name}) was removed from the format; its values cannot be read"
            ),
        ),
        None => Error::msg(
            ErrorCode::InvalidArgument,
            format!("unknown data type {id}"),
        ),
    })
}

/// Number of blocks in `n_elements` elements of `dtype`, or an error when it is not whole blocks.
pub fn whole_blocks(dtype: DataType, n_elements: u64) -> Result<u64> {
    let per = dtype.block_elems();
    if n_elements % per != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{n_elements} elements of {} are not whole blocks (a block holds {per} elements)",
                dtype.name()
            ),
        ));
    }
    Ok(n_elements / per)
}

/// The lengths of the two buffers a conversion of `n_elements` elements of `dtype` uses: the
/// bytes of their blocks, and the floats they give. Refused (`InvalidArgument`) when
/// `n_elements` is not whole blocks, or when either buffer would take more bytes than one buffer
/// in this process's memory can (2^48 bytes on 64-bit targets, 2^31 - 1 on 32-bit ones): no
/// caller can hold such a buffer, so no slice of that length is ever made.
pub fn buffer_lengths(dtype: DataType, n_elements: u64) -> Result<(usize, usize)> {
    let n_blocks = whole_blocks(dtype, n_elements)?;
    let bytes = u128::from(n_blocks) * u128::from(dtype.block_bytes());
    let floats = u128::from(n_elements) * std::mem::size_of::<f32>() as u128;
    let fits = |b: u128| u64::try_from(b).ok().and_then(crate::size::buffer_len);
    match (fits(bytes), fits(floats), usize::try_from(n_elements)) {
        (Some(bytes), Some(_), Ok(n)) => Ok((bytes, n)),
        _ => Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{n_elements} elements of {} do not fit in this process's memory: they take                  {bytes} bytes and give {floats} bytes of floats, and one buffer holds at most {}",
                dtype.name(),
                crate::size::MAX_BUFFER
            ),
        )),
    }
}

/// Converts `src`, whole blocks of `dtype` laid out as in a little-endian file, into `dst`, which
/// must hold exactly as many elements as those blocks.
pub fn dequantize(dtype: DataType, src: &[u8], dst: &mut [f32]) -> Result<()> {
    check_lengths(dtype, src.len(), dst.len())?;
    kernel(dtype)(src, dst);
    Ok(())
}

/// [`dequantize`] for bytes in a file's byte order. Big-endian files are converted for the types
/// whose big-endian layout is defined (those the reference package's `gguf_convert_endian`
/// swaps: F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q6_K, MXFP4, NVFP4); others are refused.
pub fn dequantize_in_order(
    dtype: DataType,
    order: ByteOrder,
    src: &[u8],
    dst: &mut [f32],
) -> Result<()> {
    match order {
        ByteOrder::Little => dequantize(dtype, src, dst),
        ByteOrder::Big => {
            check_lengths(dtype, src.len(), dst.len())?;
            big_endian(dtype, src, dst)
        }
    }
}

/// Whether `dtype`'s values can be read from a big-endian file.
pub fn big_endian_defined(dtype: DataType) -> bool {
    use DataType::*;
    matches!(
        dtype,
        F32 | F16 | BF16 | Q4_0 | Q8_0 | Q4_K | Q6_K | MXFP4 | NVFP4
    )
}

fn big_endian(dtype: DataType, src: &[u8], dst: &mut [f32]) -> Result<()> {
    use DataType::*;
    match dtype {
        F32 => float::f32_be(src, dst),
        F16 => float::f16_be(src, dst),
        BF16 => float::bf16_be(src, dst),
        // No multi-byte field: the same bytes as in a little-endian file.
        MXFP4 | NVFP4 => kernel(dtype)(src, dst),
        Q4_0 | Q8_0 | Q4_K | Q6_K => {
            // The f16 fields are stored swapped: swap them in a copy of each block.
            let (bytes, elems) = block_geometry(dtype);
            let swaps = blocks::fields(dtype)
                .iter()
                .filter(|f| f.kind == blocks::FieldKind::F16);
            let swaps: Vec<usize> = swaps.map(|f| f.offset).collect();
            let k = kernel(dtype);
            let mut block = [0u8; 256];
            for (s, d) in src.chunks_exact(bytes).zip(dst.chunks_exact_mut(elems)) {
                let block = &mut block[..bytes];
                block.copy_from_slice(s);
                for &at in &swaps {
                    block.swap(at, at + 1);
                }
                k(block, d);
            }
        }
        _ => {
            return Err(Error::msg(
                ErrorCode::Unsupported,
                format!(
                    "{} values cannot be read from a big-endian file: its big-endian layout is \
                     not defined (only F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q6_K, MXFP4 and NVFP4 \
                     have one)",
                    dtype.name()
                ),
            ))
        }
    }
    Ok(())
}

/// Bytes and elements per block of `dtype`, as `usize` (at most 292 and 256).
pub fn block_geometry(dtype: DataType) -> (usize, usize) {
    (
        crate::size::in_memory(dtype.block_bytes()),
        crate::size::in_memory(dtype.block_elems()),
    )
}

fn check_lengths(dtype: DataType, src: usize, dst: usize) -> Result<()> {
    let (bytes, elems) = block_geometry(dtype);
    if src % bytes != 0 {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{src} bytes of {} are not whole blocks (a block is {bytes} bytes)",
                dtype.name()
            ),
        ));
    }
    let n_blocks = src / bytes;
    if n_blocks.checked_mul(elems) != Some(dst) {
        return Err(Error::msg(
            ErrorCode::InvalidArgument,
            format!(
                "{n_blocks} blocks of {} hold {} elements, but the output has room for {dst}",
                dtype.name(),
                n_blocks as u64 * elems as u64
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::arith::DEFAULT_NAN;
    use super::*;

    #[test]
    fn f16_conversion_is_exact() {
        for h in 0..=u16::MAX {
            let ours = f16_to_f32(h);
            let exp = (h >> 10) & 0x1F;
            let man = f64::from(h & 0x3FF);
            let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
            let want = match exp {
                0 => sign * man * 2f64.powi(-24),
                0x1F if man == 0.0 => sign * f64::INFINITY,
                0x1F => {
                    assert!(ours.is_nan());
                    assert_eq!(ours.to_bits() & 0x0040_0000, 0x0040_0000, "quiet");
                    assert_eq!((ours.to_bits() >> 13) & 0x3FF, u32::from(h & 0x3FF) | 0x200);
                    assert_eq!(ours.is_sign_negative(), sign < 0.0);
                    continue;
                }
                e => sign * (1.0 + man / 1024.0) * 2f64.powi(i32::from(e) - 15),
            };
            assert_eq!(f64::from(ours), want, "{h:#06x}");
            assert_eq!(ours.is_sign_negative(), sign < 0.0, "{h:#06x}");
        }
    }

    #[test]
    fn nan_results_follow_x86() {
        let inf = f32::INFINITY;
        assert_eq!(mul(inf, 0.0).to_bits(), DEFAULT_NAN);
        assert_eq!(sub(inf, inf).to_bits(), DEFAULT_NAN);
        let snan = f32::from_bits(0x7F80_0001);
        let other = f32::from_bits(0xFFC0_0002);
        assert_eq!(mul(snan, other).to_bits(), 0x7FC0_0001);
        assert_eq!(add(other, snan).to_bits(), 0xFFC0_0002);
        assert_eq!(sub(2.0, snan).to_bits(), 0x7FC0_0001);
        assert_eq!(mul(3.0, 2.0), 6.0);
    }

    #[test]
    fn lengths_are_checked() {
        let mut out = [0f32; 32];
        let e = dequantize(DataType::Q4_0, &[0; 17], &mut out).unwrap_err();
        assert!(e.to_string().contains("not whole blocks"), "{e}");
        let e = dequantize(DataType::Q4_0, &[0; 36], &mut out).unwrap_err();
        assert!(e.to_string().contains("room for 32"), "{e}");
        dequantize(DataType::Q4_0, &[0; 18], &mut out).unwrap();
        let e = data_type(33).unwrap_err();
        assert!(e.to_string().contains("Q4_0_8_8"), "{e}");
        assert_eq!(e.code(), ErrorCode::Unsupported);
        assert_eq!(
            data_type(99).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn buffers_too_large_for_memory_are_refused() {
        use DataType::*;
        // Each has a buffer past what memory holds: the floats (F32, Q4_0, Q8_0, F16), or the
        // bytes and the floats (I8), or a byte count past 2^64 (Q4_0 near 2^64).
        for (dtype, n) in [
            (F32, 1u64 << 61),
            (Q4_0, u64::MAX - 31),
            (Q8_0, 1 << 63),
            (I8, 1 << 62),
            (F16, 1 << 50),
            (F32, (crate::size::MAX_BUFFER / 4) + 1),
        ] {
            let e = buffer_lengths(dtype, n).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
            assert!(e.to_string().contains("memory"), "{e}");
        }
        assert_eq!(buffer_lengths(Q4_0, 64).unwrap(), (36, 64));
        assert_eq!(buffer_lengths(F32, 0).unwrap(), (0, 0));
        let top = usize::try_from(crate::size::MAX_BUFFER / 4).unwrap();
        assert_eq!(buffer_lengths(F32, top as u64).unwrap(), (top * 4, top));
        let e = buffer_lengths(Q4_0, 33).unwrap_err();
        assert!(e.to_string().contains("not whole blocks"), "{e}");
    }

    #[test]
    fn big_endian_swaps_scales() {
        // One Q8_0 block with d = 2.0 (0x4000), stored swapped.
        let mut le = vec![0x00, 0x40];
        le.extend(0..32u8);
        let mut be = le.clone();
        be.swap(0, 1);
        let (mut a, mut b) = ([0f32; 32], [0f32; 32]);
        dequantize(DataType::Q8_0, &le, &mut a).unwrap();
        dequantize_in_order(DataType::Q8_0, ByteOrder::Big, &be, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[5], 10.0);
        let e = dequantize_in_order(DataType::Q5_0, ByteOrder::Big, &[0; 22], &mut a).unwrap_err();
        assert!(e.to_string().contains("Q5_0"), "{e}");
    }
}
