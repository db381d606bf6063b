//! Plain element types: F32, F16, BF16 (as ggml converts them), and F64 and the integer types
//! (ggml has no converter for them: each value rounded to the nearest float).
//!
//! Values are moved as bits wherever they are not computed, so that a signalling NaN in an F32
//! or BF16 tensor comes out with the same bits (as ggml's bit shift gives for BF16).

use super::half::f16_bits_to_f32_bits;

/// F32: the bits as stored.
pub fn f32_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        *d = f32::from_bits(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    }
}

/// F32 from a big-endian file.
pub fn f32_be(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        *d = f32::from_bits(u32::from_be_bytes([s[0], s[1], s[2], s[3]]));
    }
}

/// F16: [`super::half::f16_to_f32`] of each element.
pub fn f16_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *d = f32::from_bits(f16_bits_to_f32_bits(u16::from_le_bytes([s[0], s[1]])));
    }
}

/// F16 from a big-endian file.
pub fn f16_be(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *d = f32::from_bits(f16_bits_to_f32_bits(u16::from_be_bytes([s[0], s[1]])));
    }
}

/// BF16: the 16 bits become the high half of the f32 (NaNs unchanged, as ggml shifts them).
pub fn bf16_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *d = f32::from_bits(u32::from(u16::from_le_bytes([s[0], s[1]])) << 16);
    }
}

/// BF16 from a big-endian file.
pub fn bf16_be(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *d = f32::from_bits(u32::from(u16::from_be_bytes([s[0], s[1]])) << 16);
    }
}

/// F64: rounded to the nearest f32 (infinity beyond its range; a NaN stays NaN).
pub fn f64_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(8).zip(dst.iter_mut()) {
        let bytes: [u8; 8] = s.try_into().unwrap_or_default();
        let v = f64::from_le_bytes(bytes);
        *d = if v.is_nan() {
            // As x86 narrows a NaN (Rust leaves the payload unspecified): sign, quiet bit and
            // the payload's top 22 bits, so every platform gives the same bits.
            let bits = v.to_bits();
            let sign = if v.is_sign_negative() { 0x8000_0000 } else { 0 };
            let payload = u32::try_from((bits >> 29) & 0x003F_FFFF).unwrap_or_default();
            f32::from_bits(sign | 0x7FC0_0000 | payload)
        } else {
            // Rounding to the nearest f32 is the definition.
            #[allow(clippy::cast_possible_truncation)]
            let narrowed = v as f32;
            narrowed
        };
    }
}

/// I8: exact.
pub fn i8(src: &[u8], dst: &mut [f32]) {
    for (&s, d) in src.iter().zip(dst.iter_mut()) {
        *d = f32::from(s as i8);
    }
}

/// I16: exact.
pub fn i16_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *d = f32::from(i16::from_le_bytes([s[0], s[1]]));
    }
}

/// I32: rounded to the nearest f32 (ties to even).
pub fn i32_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        *d = i32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f32;
    }
}

/// I64: rounded to the nearest f32 (ties to even).
pub fn i64_le(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(8).zip(dst.iter_mut()) {
        let bytes: [u8; 8] = s.try_into().unwrap_or_default();
        *d = i64::from_le_bytes(bytes) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_definitions() {
        let mut out = [0f32; 3];
        let src: Vec<u8> = [16_777_217i64, -3, i64::MAX]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        i64_le(&src, &mut out);
        assert_eq!(out, [16_777_216.0, -3.0, 9.223_372e18]);
        let src: Vec<u8> = [0.1f64, 1e300, f64::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        f64_le(&src, &mut out);
        assert_eq!(out[0], 0.1f32);
        assert_eq!(out[1], f32::INFINITY);
        assert!(out[2].is_nan());
        let mut two = [0f32; 2];
        bf16_le(&[0x01, 0xFF, 0x80, 0x3F], &mut two);
        assert_eq!(two[0].to_bits(), 0xFF01_0000);
        assert_eq!(two[1], 1.0);
        i8(&[0xFF, 0x7F], &mut two);
        assert_eq!(two, [-1.0, 127.0]);
    }
}
