//! Vectorised dequantization kernels, chosen at run time by CPU detection: AVX-512 or AVX2 on
//! x86-64 (`x86/`), NEON on aarch64 (`neon.rs`, NEON being part of the aarch64 baseline); the
//! portable scalar kernels everywhere else and for the types without a vector kernel. Each
//! vector kernel gives the scalar kernel's output bit for bit (tests/simd.rs). On Intel's
//! AVX-512 cores most types take their AVX2 kernel, faster there ([`chosen`]).
//!
//! `GGUF_SIMD` in the environment (read once) caps the choice: `scalar` forces the portable
//! kernels, `avx2` keeps x86-64 from AVX-512. [`set_isa`] does the same from code (the tests).

#![allow(unsafe_code)]

use crate::types::DataType;
use std::sync::atomic::{AtomicU8, Ordering};

pub use isa::{Isa, Kernel};

mod isa;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Whether this CPU runs `isa`'s kernels.
pub fn available(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => true,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => x86::has(isa),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => true,
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// The best instruction set this CPU has.
fn detect() -> Isa {
    let best = [Isa::Avx512, Isa::Avx2, Isa::Neon]
        .into_iter()
        .find(|i| available(*i))
        .unwrap_or(Isa::Scalar);
    let cap = std::env::var("GGUF_SIMD").ok();
    match cap
        .as_deref()
        .and_then(|c| Isa::ALL.into_iter().find(|i| i.name() == c))
    {
        Some(cap) if (cap as u8) < (best as u8) && available(cap) => cap,
        Some(Isa::Scalar) => Isa::Scalar,
        _ => best,
    }
}

/// The instruction set in use: 0 until first asked.
static ACTIVE: AtomicU8 = AtomicU8::new(0);

/// The instruction set the dispatch uses now.
pub fn active() -> Isa {
    match Isa::from_u8(ACTIVE.load(Ordering::Relaxed)) {
        Some(isa) => isa,
        None => {
            let isa = detect();
            ACTIVE.store(isa as u8, Ordering::Relaxed);
            isa
        }
    }
}

/// Makes the dispatch use `isa` from now on (for every thread); `false`, changing nothing, if
/// this CPU lacks it.
pub fn set_isa(isa: Isa) -> bool {
    if !available(isa) {
        return false;
    }
    ACTIVE.store(isa as u8, Ordering::Relaxed);
    true
}

/// The vector kernel of `isa` for `dtype`: `None` for the scalar set, for a set this CPU lacks,
/// or for a type with no vector kernel there.
pub fn kernel(isa: Isa, dtype: DataType) -> Option<Kernel> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => x86::kernel(isa, dtype),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => neon::kernel(dtype),
        _ => {
            let _ = dtype;
            None
        }
    }
}

/// The vector kernel the dispatch uses for `dtype` when `isa` is active: `isa`'s own
/// ([`kernel`]), or where a narrower set's kernel of that type runs faster on this CPU's
/// vendor, that one (x86-64: on Intel's AVX-512 cores, AVX2 kernels for most types). `None`
/// where [`kernel`] gives none.
pub fn chosen(isa: Isa, dtype: DataType) -> Option<Kernel> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => x86::chosen(isa, dtype),
        _ => kernel(isa, dtype),
    }
}

/// The vector kernel the dispatch uses for `dtype`, if any.
pub fn best(dtype: DataType) -> Option<Kernel> {
    chosen(active(), dtype)
}
