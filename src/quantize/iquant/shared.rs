//! Helpers with ggml's exact semantics shared by the IQ quantizers: where a search has no
//! answer, and the byte and level helpers.

/// Where a search has no answer: the block (its first element, relative to the row).
pub(super) struct NoAnswer(pub(super) usize);

pub(super) fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// ggml's `best_index_int8` over the 16 IQ4 values.
#[inline(always)]
pub(super) fn best_index_int8(val: &[i8; 16], x: f32) -> usize {
    if x <= f32::from(val[0]) {
        return 0;
    }
    if x >= f32::from(val[15]) {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < f32::from(val[mav]) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - f32::from(val[mu - 1]) < f32::from(val[mu]) - x {
        mu - 1
    } else {
        mu
    }
}
