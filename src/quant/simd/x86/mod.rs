//! x86-64 kernels: AVX2 (with F16C, `avx2.rs`) and AVX-512 (F, BW, VL, `avx512.rs`), each
//! bit-identical to the scalar kernel of its type: the same integer values, converted to float
//! exactly, then the scalar code's multiplies and adds in its order (never fused: ggml
//! multiplies, then adds). The block kernels are written once (`generic.rs`) over each set's
//! lane helpers; what every set uses lies in `shared.rs`; outputs larger than the last-level
//! cache are streamed out (`stream.rs`).
//!
//! This file detects the sets and dispatches, from one list of kernels (`kernels!`): every
//! per-type table is made from it. The kernels are `unsafe` only because of their
//! `target_feature`: [`kernel`] and [`chosen`] hand out their safe wrappers only after detecting
//! the set.

// The AVX-512 intrinsics are stable from Rust 1.89: build.rs sets `gguf_avx512` only then.
#![allow(clippy::incompatible_msrv)]

use super::isa::{Isa, Kernel};
use crate::types::DataType;

mod avx2;
#[cfg(gguf_avx512)]
mod avx512;
mod generic;
mod shared;
mod stream;

/// Whether this CPU runs the kernels of `isa`.
pub(super) fn has(isa: Isa) -> bool {
    match isa {
        Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c"),
        #[cfg(gguf_avx512)]
        Isa::Avx512 => {
            has(Isa::Avx2)
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
        }
        _ => false,
    }
}

/// Whether this CPU is Intel's (CPUID leaf 0 names "GenuineIntel"), asked once.
#[cfg(gguf_avx512)]
fn intel() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| {
        // SAFETY: CPUID leaf 0 exists on every x86-64 CPU (newer compilers call this safe).
        #[allow(unused_unsafe)]
        let r = unsafe { core::arch::x86_64::__cpuid(0) };
        [r.ebx, r.edx, r.ecx] == [0x756e_6547, 0x4965_6e69, 0x6c65_746e]
    })
}

/// One table of the kernel list: `$name(dtype)`, the kernel of that column for `dtype` (a safe
/// wrapper of the listed `unsafe fn`, streaming its output where the type's mode says so), `None`
/// for the types with none; an exhaustive match over the types, so that a new type must be
/// placed in the list.
macro_rules! column {
    ($(#[$m:meta])* $name:ident: [$($t:ident => $k:expr, $mode:ident;)*] none: $($none:ident)|*) => {
        $(#[$m])*
        fn $name(dtype: DataType) -> Option<Kernel> {
            use DataType::*;
            let k: Kernel = match dtype {
                $($t => {
                    fn direct(x: &[u8], y: &mut [f32]) {
                        // SAFETY: only `kernel` and `chosen` call this table, after `has` of the
                        // instruction set whose kernels the column lists (see `kernels!`).
                        unsafe { $k(x, y) }
                    }
                    fn k(x: &[u8], y: &mut [f32]) {
                        if stream::$mode(y.len()) {
                            let t = DataType::$t;
                            let bytes = crate::size::in_memory(t.block_bytes());
                            let elems = crate::size::in_memory(t.block_elems());
                            // SAFETY: as `direct`'s; every set listed brings AVX.
                            return unsafe { stream::convert(bytes, elems, direct, x, y) };
                        }
                        direct(x, y)
                    }
                    k
                })*
                $($none)|* => return None,
            };
            Some(k)
        }
    };
}

/// The kernel list: the types with no vector kernel, then each other type once, with its AVX2
/// kernel, its AVX-512 kernel, the kernel [`chosen`] takes on Intel's AVX-512 cores, and its
/// output mode: `nt` where a conversion of 32 MiB of floats or more writes them by streaming
/// stores (`stream.rs`; Q8_0, Q4_K and BF16, whose kernels run at the speed of memory there:
/// 64 MiB of Q4_K on an Intel Xeon, 0.92x ggml by the AVX2 kernel, 1.70x streamed), `plain` where
/// no conversion does. From it come the three tables `avx2_kernel`, `avx512_kernel` and
/// `intel_kernel`.
///
/// The Intel column: there most types take their AVX2 kernel, which runs faster than the
/// AVX-512 one on Intel's cores, since they fuse two of their three vector ports into one for a
/// 512-bit operation: kernels whose work is widening and converting 16 bytes at a time issue as
/// many operations at either width, on fewer ports at 512 bits. Measured on an Intel Xeon with
/// AVX-512 FP16 (output in L2: 5 to 27% faster; BENCHMARKS.md, Tensor values). Those AVX2
/// kernels prefetch their output where it is larger than L2 (`pw256`, and `PW` of `v256`). On
/// AMD's Zen 4, which runs a 512-bit operation as two 256-bit halves on all four ports, the
/// AVX-512 column stays.
macro_rules! kernels {
    (none: $($none:ident)|*; $($t:ident => $avx2:expr, $avx512:expr, $intel:expr, $mode:ident;)*) => {
        column!(
            /// The AVX2 kernel of `dtype` (the caller has checked `has(Isa::Avx2)`).
            avx2_kernel: [$($t => $avx2, $mode;)*] none: $($none)|*
        );
        column!(
            /// The AVX-512 kernel of `dtype` (the caller has checked `has(Isa::Avx512)`).
            #[cfg(gguf_avx512)]
            avx512_kernel: [$($t => $avx512, $mode;)*] none: $($none)|*
        );
        column!(
            /// The kernel of `dtype` on Intel's AVX-512 cores (the caller has checked
            /// `has(Isa::Avx512)`, which brings AVX2, F16C and PRFCHW).
            #[cfg(gguf_avx512)]
            intel_kernel: [$($t => $intel, $mode;)*] none: $($none)|*
        );
    };
}

use avx2::kernels as a2;
#[cfg(gguf_avx512)]
use avx2::pw256;
use avx2::v256;
#[cfg(gguf_avx512)]
use avx512::kernels as a5;

kernels! {
    // The types with no vector kernel.
    none: F32 | Q8_1 | Q8_K | I8 | I16 | I32 | I64 | F64 | NVFP4 | Q1_0;
    // type    AVX2                  AVX-512               Intel AVX-512 cores   output > LLC
    F16     => a2::f16,              a5::f16,              a2::f16,              plain;
    BF16    => a2::bf16,             a5::bf16,             v256::bf16::<true>,   nt;
    Q8_0    => v256::q8_0::<false>,  v256::q8_0::<false>,  v256::q8_0::<true>,   nt;
    Q4_K    => v256::q4_k::<false>,  v256::q4_k::<false>,  v256::q4_k::<true>,   nt;
    Q4_0    => a2::q4_0,             a5::q4_0,             pw256::q4_0,          plain;
    Q4_1    => a2::q4_1,             a5::q4_1,             pw256::q4_1,          plain;
    Q5_0    => a2::q5_0,             a5::q5_0,             pw256::q5_0,          plain;
    Q5_1    => a2::q5_1,             a5::q5_1,             pw256::q5_1,          plain;
    Q5_K    => a2::q5_k,             a5::q5_k,             a5::q5_k,             plain;
    Q6_K    => a2::q6_k,             a5::q6_k,             pw256::q6_k,          plain;
    Q2_K    => a2::q2_k,             a5::q2_k,             pw256::q2_k,          plain;
    Q3_K    => a2::q3_k,             a5::q3_k,             pw256::q3_k,          plain;
    IQ4_NL  => a2::iq4_nl,           a5::iq4_nl,           pw256::iq4_nl,        plain;
    IQ4_XS  => a2::iq4_xs,           a5::iq4_xs,           pw256::iq4_xs,        plain;
    MXFP4   => a2::mxfp4,            a5::mxfp4,            pw256::mxfp4,         plain;
    TQ2_0   => a2::tq2_0,            a5::tq2_0,            pw256::tq2_0,         plain;
    TQ1_0   => a2::tq1_0,            a5::tq1_0,            pw256::tq1_0,         plain;
    Q2_0    => a2::q2_0,             a5::q2_0,             pw256::q2_0,          plain;
    IQ1_S   => a2::iq1_s,            a5::iq1_s,            pw256::iq1_s,         plain;
    IQ1_M   => a2::iq1_m,            a5::iq1_m,            a5::iq1_m,            plain;
    IQ2_XXS => a2::iq2_xxs,          a5::iq2_xxs,          a5::iq2_xxs,          plain;
    IQ2_XS  => a2::iq2_xs,           a5::iq2_xs,           pw256::iq2_xs,        plain;
    IQ2_S   => a2::iq2_s,            a5::iq2_s,            a5::iq2_s,            plain;
    IQ3_XXS => a2::iq3_xxs,          a5::iq3_xxs,          a5::iq3_xxs,          plain;
    IQ3_S   => a2::iq3_s,            a5::iq3_s,            a5::iq3_s,            plain;
}

/// The kernel the dispatch uses for `dtype` under `isa`: `isa`'s own ([`kernel`]), except on
/// Intel's AVX-512 CPUs, where it is the list's Intel column.
pub(super) fn chosen(isa: Isa, dtype: DataType) -> Option<Kernel> {
    #[cfg(gguf_avx512)]
    if isa == Isa::Avx512 && has(isa) && intel() {
        return intel_kernel(dtype);
    }
    kernel(isa, dtype)
}

/// The kernel of `isa` for `dtype`, if this CPU has `isa` and there is one.
pub(super) fn kernel(isa: Isa, dtype: DataType) -> Option<Kernel> {
    if !has(isa) {
        return None;
    }
    match isa {
        Isa::Avx2 => avx2_kernel(dtype),
        #[cfg(gguf_avx512)]
        Isa::Avx512 => avx512_kernel(dtype),
        _ => None,
    }
}
