//! The instruction sets the vector kernels are written for, and a kernel's signature.

/// A kernel: whole blocks in (file layout, little-endian), their floats out.
pub type Kernel = fn(&[u8], &mut [f32]);

/// An instruction set the kernels are written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// The portable scalar kernels.
    Scalar = 1,
    /// x86-64 AVX2 with F16C.
    Avx2 = 2,
    /// x86-64 AVX-512 (F, BW, VL), with AVX2 and F16C.
    Avx512 = 3,
    /// aarch64 NEON.
    Neon = 4,
}

impl Isa {
    /// Every instruction set, best last.
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon];

    /// The lower-case name (`GGUF_SIMD`'s values).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }

    pub(super) fn from_u8(v: u8) -> Option<Isa> {
        Isa::ALL.into_iter().find(|i| *i as u8 == v)
    }
}
