//! Tensor value validation: the NaNs and infinities that ggml's `ggml_validate_row_data` refuses
//! (every value of a float tensor; the scales of a quantized block), found at memory speed and
//! reported with the first bad element or block.
//!
//! Which fields ggml checks was read off ggml itself (tests/validate_ggml.rs plants a NaN and an
//! infinity in every field of every type and compares verdicts): the f16 scales `d` (and `m` or
//! `dmin`), Q8_K's f32 `d`, IQ1_M's scale assembled from the top nibbles of its four `scales`
//! words, MXFP4's E8M0 exponent (0xFF is NaN), and an F64 value as the f32 it rounds to (so a
//! finite double beyond the f32 range is refused too). Types without a float field (the integer types,
//! NVFP4, whose scales ggml does not check) always pass. One difference: ggml refuses every Q8_1
//! row as an unknown type; here Q8_1's two f16 fields (`d`, `s`) are checked like the others.

use crate::error::{Error, ErrorKind, Result};
use crate::format::ByteOrder;
use crate::quant::blocks::{self, Field, FieldKind};
use crate::types::DataType;

/// What is checked for a data type.
enum Check {
    /// Every element: a float of this kind.
    Floats(Float),
    /// The float fields of every block (from `blocks::fields`).
    Blocks,
    /// IQ1_M: the f16 scale spread over the top nibbles of the four `scales` words.
    Iq1m,
    /// Nothing (integers; NVFP4, whose E4M3 scales ggml does not check).
    Nothing,
}

/// The float element types.
#[derive(Clone, Copy)]
enum Float {
    F16,
    Bf16,
    F32,
    F64,
}

/// The checks for `dtype`. The quantized types' scale fields are read from the block layouts
/// (`crate::quant::blocks`): every F16, F32 and E8M0 field; the exceptions are spelled here.
fn check_for(dtype: DataType) -> Check {
    use DataType::*;
    match dtype {
        F32 => Check::Floats(Float::F32),
        F16 => Check::Floats(Float::F16),
        BF16 => Check::Floats(Float::Bf16),
        F64 => Check::Floats(Float::F64),
        I8 | I16 | I32 | I64 | NVFP4 => Check::Nothing,
        IQ1_M => Check::Iq1m,
        _ => Check::Blocks,
    }
}

/// Whether an f16's exponent is all ones (NaN or infinity), and which.
#[inline(always)]
fn f16_bad(h: u16) -> bool {
    h & 0x7c00 == 0x7c00
}
#[inline(always)]
fn f32_bad(w: u32) -> bool {
    w & 0x7f80_0000 == 0x7f80_0000
}
/// ggml checks an F64 value as the float it rounds to: beyond the float range is infinite.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // rounding to f32 is the point
fn f64_bad(w: u64) -> bool {
    !(f64::from_bits(w) as f32).is_finite()
}

/// An element or field that failed: its index, the byte offset of its bytes, what it is and
/// whether it is a NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadValue {
    /// `element` or `block`.
    pub what: &'static str,
    /// Element or block index.
    pub index: u64,
    /// The block's field (`d`, `dmin`, ...), empty for an element.
    pub field: &'static str,
    /// Offset of the bad bytes from the start of the data.
    pub byte: u64,
    /// NaN (else infinity).
    pub nan: bool,
}

impl BadValue {
    /// The error for tensor `tensor` (quoted) whose data starts at `data_offset` in its file.
    pub fn error(self, tensor: String, data_type: DataType, data_offset: u64) -> Error {
        Error::at(
            data_offset.saturating_add(self.byte),
            ErrorKind::BadValue {
                tensor,
                data_type,
                what: self.what,
                index: self.index,
                field: self.field,
                found: if self.nan { "NaN" } else { "infinity" },
                byte: self.byte,
            },
        )
    }
}

/// Reads a `u16`, `u32` or `u64` in the file's byte order.
macro_rules! word {
    ($t:ty, $bytes:expr, $order:expr) => {{
        let b = $bytes.try_into().unwrap_or_default();
        match $order {
            ByteOrder::Little => <$t>::from_le_bytes(b),
            ByteOrder::Big => <$t>::from_be_bytes(b),
        }
    }};
}

/// Bytes scanned at once before looking for the exact position: large enough for the scan to
/// run as wide vector compares, small enough to stay in L1.
const CHUNK: usize = 4096;

/// Whether any word of `chunk` (whole words of `N` bytes) is bad. Written as a branch-free
/// reduction so that the compiler vectorises it.
#[inline(always)]
fn any_bad<const N: usize>(chunk: &[u8], order: ByteOrder, bad: impl Fn(u64) -> bool) -> bool {
    let words = chunk.chunks_exact(N);
    match (order, N) {
        (ByteOrder::Little, 2) => words.fold(false, |acc, w| {
            acc | bad(u64::from(u16::from_le_bytes([w[0], w[1]])))
        }),
        (ByteOrder::Big, 2) => words.fold(false, |acc, w| {
            acc | bad(u64::from(u16::from_be_bytes([w[0], w[1]])))
        }),
        (ByteOrder::Little, 4) => words.fold(false, |acc, w| {
            acc | bad(u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        }),
        (ByteOrder::Big, 4) => words.fold(false, |acc, w| {
            acc | bad(u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
        }),
        (ByteOrder::Little, _) => words.fold(false, |acc, w| acc | bad(word!(u64, w, order))),
        (ByteOrder::Big, _) => words.fold(false, |acc, w| acc | bad(word!(u64, w, order))),
    }
}

/// The first bad word of `data` (words of `N` bytes), if any.
fn scan<const N: usize>(
    data: &[u8],
    order: ByteOrder,
    bad: impl Fn(u64) -> bool + Copy,
    nan: impl Fn(u64) -> bool,
) -> Option<BadValue> {
    for (c, chunk) in data.chunks(CHUNK).enumerate() {
        if !any_bad::<N>(chunk, order, bad) {
            continue;
        }
        // Rare: find which word.
        for (i, w) in chunk.chunks_exact(N).enumerate() {
            let v = match N {
                2 => u64::from(word!(u16, w, order)),
                4 => u64::from(word!(u32, w, order)),
                _ => word!(u64, w, order),
            };
            if bad(v) {
                let byte = (c * CHUNK + i * N) as u64;
                return Some(BadValue {
                    what: "element",
                    index: byte / N as u64,
                    field: "",
                    byte,
                    nan: nan(v),
                });
            }
        }
    }
    None
}

/// The first value of `data` (whole blocks of `dtype`, in `order`) that ggml's
/// `ggml_validate_row_data` would refuse, or `None` when it would accept them all. A trailing
/// partial block is ignored (the caller checks sizes).
pub fn find_bad_value(dtype: DataType, data: &[u8], order: ByteOrder) -> Option<BadValue> {
    match check_for(dtype) {
        Check::Nothing => None,
        Check::Floats(Float::F16) => {
            scan::<2>(data, order, |h| h & 0x7c00 == 0x7c00, |h| h & 0x3ff != 0)
        }
        Check::Floats(Float::Bf16) => {
            scan::<2>(data, order, |h| h & 0x7f80 == 0x7f80, |h| h & 0x7f != 0)
        }
        Check::Floats(Float::F32) => scan::<4>(
            data,
            order,
            |w| w & 0x7f80_0000 == 0x7f80_0000,
            |w| w & 0x7f_ffff != 0,
        ),
        Check::Floats(Float::F64) => {
            scan::<8>(data, order, f64_bad, |w| w & 0x000f_ffff_ffff_ffff != 0)
        }
        Check::Blocks => scan_blocks(dtype, data, order),
        Check::Iq1m => scan_iq1m(data, order),
    }
}

/// The first block of `data` with a bad float field.
fn scan_blocks(dtype: DataType, data: &[u8], order: ByteOrder) -> Option<BadValue> {
    let size = usize::try_from(dtype.block_bytes()).ok()?;
    let fields: Vec<&Field> = blocks::fields(dtype)
        .iter()
        .filter(|f| matches!(f.kind, FieldKind::F16 | FieldKind::F32 | FieldKind::E8M0))
        .collect();
    // Where each field's exponent bits lie: (byte, mask), and for F32 the next byte's top bit.
    let hi = |at: usize, len: usize| match order {
        ByteOrder::Little => at + len - 1,
        ByteOrder::Big => at,
    };
    let probes: Vec<(usize, u8, Option<usize>)> = fields
        .iter()
        .map(|f| match f.kind {
            FieldKind::F16 => (hi(f.offset, 2), 0x7c, None),
            FieldKind::F32 => {
                let top = hi(f.offset, 4);
                let next = match order {
                    ByteOrder::Little => top - 1,
                    ByteOrder::Big => top + 1,
                };
                (top, 0x7f, Some(next))
            }
            _ => (f.offset, 0xff, None),
        })
        .collect();
    // Blocks scanned at once by the branch-free pass; a chunk it flags is looked at closely.
    const BLOCKS: usize = 1024;
    for (c, chunk) in data.chunks(BLOCKS * size).enumerate() {
        let flagged = probes.iter().any(|&(at, mask, next)| {
            chunk.chunks_exact(size).fold(false, |acc, b| {
                let top = b[at] & mask == mask;
                acc | match next {
                    Some(n) => top & (b[n] & 0x80 != 0),
                    None => top,
                }
            })
        });
        if flagged {
            if let Some(bad) = first_bad_block(&fields, size, chunk, order) {
                let skip = c * BLOCKS;
                return Some(BadValue {
                    index: bad.index + skip as u64,
                    byte: bad.byte + (skip * size) as u64,
                    ..bad
                });
            }
        }
    }
    None
}

/// The first block of `data` (whole blocks of `size` bytes) with a NaN or infinite field.
fn first_bad_block(
    fields: &[&Field],
    size: usize,
    data: &[u8],
    order: ByteOrder,
) -> Option<BadValue> {
    for (b, block) in data.chunks_exact(size).enumerate() {
        for field in fields {
            let at = field.offset;
            let nan = match field.kind {
                FieldKind::F16 => {
                    let h = word!(u16, &block[at..at + 2], order);
                    f16_bad(h).then_some(h & 0x3ff != 0)
                }
                FieldKind::F32 => {
                    let w = word!(u32, &block[at..at + 4], order);
                    f32_bad(w).then_some(w & 0x7f_ffff != 0)
                }
                _ => (block[at] == 0xff).then_some(true),
            };
            if let Some(nan) = nan {
                return Some(bad_block(b, size, field.name, at, nan));
            }
        }
    }
    None
}

/// The first IQ1_M block whose scale (the top nibbles of its four `scales` words) is bad.
fn scan_iq1m(data: &[u8], order: ByteOrder) -> Option<BadValue> {
    let size = usize::try_from(DataType::IQ1_M.block_bytes()).ok()?;
    let at = blocks::iq1_m::SCALES;
    for (b, block) in data.chunks_exact(size).enumerate() {
        let sc = |i: usize| word!(u16, &block[at + 2 * i..at + 2 * i + 2], order);
        let h =
            (sc(0) >> 12) | ((sc(1) >> 8) & 0x00f0) | ((sc(2) >> 4) & 0x0f00) | (sc(3) & 0xf000);
        if f16_bad(h) {
            return Some(bad_block(b, size, "scales", at, h & 0x3ff != 0));
        }
    }
    None
}

fn bad_block(b: usize, size: usize, field: &'static str, at: usize, nan: bool) -> BadValue {
    BadValue {
        what: "block",
        index: b as u64,
        field,
        byte: (b * size + at) as u64,
        nan,
    }
}

/// Checks `data` (the tensor `name`'s bytes, at `data_offset` in its file): the error names the
/// tensor and its first bad element or block.
pub fn validate(
    name: String,
    dtype: DataType,
    data: &[u8],
    order: ByteOrder,
    data_offset: u64,
) -> Result<()> {
    match find_bad_value(dtype, data, order) {
        None => Ok(()),
        Some(bad) => Err(bad.error(name, dtype, data_offset)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_bad_float_in_any_chunk() {
        let mut data = vec![0u8; 3 * CHUNK + 6];
        assert_eq!(
            find_bad_value(DataType::F16, &data, ByteOrder::Little),
            None
        );
        data[2 * CHUNK + 5] = 0x7c; // element (2*CHUNK+4)/2 = +inf
        let bad = find_bad_value(DataType::F16, &data, ByteOrder::Little).unwrap();
        assert_eq!(
            (bad.index, bad.byte, bad.nan),
            ((2 * CHUNK as u64 + 4) / 2, 2 * CHUNK as u64 + 4, false)
        );
        // The same bytes read big-endian: element +4/2 is 0x7c00 too only with its bytes swapped.
        assert_eq!(find_bad_value(DataType::F16, &data, ByteOrder::Big), None);
        data[2 * CHUNK + 4] = 0x7f;
        data[2 * CHUNK + 5] = 0x80;
        let bad = find_bad_value(DataType::F16, &data, ByteOrder::Big).unwrap();
        assert!(bad.nan);
    }

    #[test]
    fn finds_a_bad_scale_past_the_first_chunk_of_blocks_in_either_byte_order() {
        let mut data = vec![0u8; 18 * 3000];
        data[18 * 2500 + 1] = 0x7c; // Q4_0 block 2500: d = +inf (little-endian)
        let bad = find_bad_value(DataType::Q4_0, &data, ByteOrder::Little).unwrap();
        assert_eq!((bad.index, bad.byte, bad.nan), (2500, 18 * 2500, false));
        assert_eq!(find_bad_value(DataType::Q4_0, &data, ByteOrder::Big), None);
        let mut data = vec![0u8; 292 * 1500];
        data[292 * 1100..292 * 1100 + 4].copy_from_slice(&[0x7f, 0x80, 0, 1]); // Q8_K d, BE NaN
        let bad = find_bad_value(DataType::Q8_K, &data, ByteOrder::Big).unwrap();
        assert_eq!((bad.index, bad.field, bad.nan), (1100, "d", true));
        assert_eq!(
            find_bad_value(DataType::Q8_K, &data, ByteOrder::Little),
            None
        );
    }

    #[test]
    fn finds_a_bad_scale_in_a_later_block() {
        let mut data = vec![0u8; 210 * 5];
        assert_eq!(
            find_bad_value(DataType::Q6_K, &data, ByteOrder::Little),
            None
        );
        data[210 * 3 + 209] = 0x7e;
        let bad = find_bad_value(DataType::Q6_K, &data, ByteOrder::Little).unwrap();
        assert_eq!(
            (bad.what, bad.index, bad.byte, bad.nan),
            ("block", 3, 210 * 3 + 208, true)
        );
    }
}
