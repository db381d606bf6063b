//! IEEE half to single precision, as ggml converts.

/// IEEE half to single, as ggml converts: exact for every finite value and infinity; a NaN keeps
/// its sign and payload and comes out quiet.
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    f32::from_bits(f16_bits_to_f32_bits(h))
}

/// [`f16_to_f32`] on bits.
#[inline(always)]
pub const fn f16_bits_to_f32_bits(h: u16) -> u32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1F) as u32;
    let man = (h & 0x3FF) as u32;
    if exp == 0x1F {
        if man == 0 {
            sign | 0x7F80_0000
        } else {
            sign | 0x7FC0_0000 | (man << 13)
        }
    } else if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: normalise. The value is man * 2^-24.
            let shift = man.leading_zeros() - 21; // bring the top set bit to bit 10
            let man = (man << shift) & 0x3FF;
            let exp = 127 - 15 + 1 - shift;
            sign | (exp << 23) | (man << 13)
        }
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    }
}
