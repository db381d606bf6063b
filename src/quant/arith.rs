//! The arithmetic the scalar kernels run a block with: plain IEEE operations, or the same with
//! x86's NaN results, chosen per block by its scales.

/// The arithmetic a kernel runs a block with. A block whose scales are all finite cannot make a
/// NaN: finite operands give a NaN only through an infinity, and where a product can overflow
/// (Q8_K's f32 scale, MXFP4's 2^127) nothing is added to it, while the f16-scaled sums stay far
/// below the f32 range. So it runs with the plain operations, which the compiler vectorises; a
/// block with a NaN or infinite scale runs with [`mul`], [`add`] and [`sub`], which make each
/// NaN as x86 does. Both give ggml's bits on every platform.
pub trait Arith {
    /// `a * b`.
    fn mul(a: f32, b: f32) -> f32;
    /// `a + b`.
    fn add(a: f32, b: f32) -> f32;
    /// `a - b`.
    fn sub(a: f32, b: f32) -> f32;
}

/// IEEE operations as the CPU does them: for blocks whose scales are finite.
pub struct Plain;

impl Arith for Plain {
    #[inline(always)]
    fn mul(a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(a: f32, b: f32) -> f32 {
        a - b
    }
}

/// IEEE operations with x86's NaN results: for blocks with a non-finite scale.
pub struct X86Nan;

impl Arith for X86Nan {
    #[inline(always)]
    fn mul(a: f32, b: f32) -> f32 {
        mul(a, b)
    }
    #[inline(always)]
    fn add(a: f32, b: f32) -> f32 {
        add(a, b)
    }
    #[inline(always)]
    fn sub(a: f32, b: f32) -> f32 {
        sub(a, b)
    }
}

/// Runs `$block::<Plain>($args)` when every scale in `$scales` is finite, else
/// `$block::<X86Nan>($args)`.
macro_rules! by_scales {
    ([$($scale:expr),+], $block:ident($($arg:expr),*)) => {
        if $($scale.is_finite())&&+ {
            $block::<$crate::quant::arith::Plain>($($arg),*)
        } else {
            $block::<$crate::quant::arith::X86Nan>($($arg),*)
        }
    };
}
pub(crate) use by_scales;

/// Block `b` (exactly one block) and its output `y` as arrays, so the compiler sees their sizes.
#[inline(always)]
pub(crate) fn fixed<'a, const B: usize, const E: usize>(
    b: &'a [u8],
    y: &'a mut [f32],
) -> (&'a [u8; B], &'a mut [f32; E]) {
    (
        b.try_into().expect("whole blocks"),
        y.try_into().expect("whole blocks"),
    )
}

/// x86's NaN for an invalid operation (0 times infinity, infinity minus infinity): negative.
pub(super) const DEFAULT_NAN: u32 = 0xFFC0_0000;

/// The result of an operation that gave NaN, as x86 (SSE) gives it: the first operand's NaN,
/// quieted, else the second's, else the default NaN.
#[cold]
#[inline(never)]
fn nan_result(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        f32::from_bits(a.to_bits() | 0x0040_0000)
    } else if b.is_nan() {
        f32::from_bits(b.to_bits() | 0x0040_0000)
    } else {
        f32::from_bits(DEFAULT_NAN)
    }
}

/// `a * b`, with a NaN result as x86 makes it.
#[inline(always)]
pub fn mul(a: f32, b: f32) -> f32 {
    let r = a * b;
    if r.is_nan() {
        nan_result(a, b)
    } else {
        r
    }
}

/// `a + b`, with a NaN result as x86 makes it.
#[inline(always)]
pub fn add(a: f32, b: f32) -> f32 {
    let r = a + b;
    if r.is_nan() {
        nan_result(a, b)
    } else {
        r
    }
}

/// `a - b`, with a NaN result as x86 makes it.
#[inline(always)]
pub fn sub(a: f32, b: f32) -> f32 {
    let r = a - b;
    if r.is_nan() {
        nan_result(a, b)
    } else {
        r
    }
}
