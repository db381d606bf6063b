//! Every vector kernel (src/quant/simd) against ggml's own `to_float` and against the portable
//! scalar kernel, bit for bit, on random blocks and on blocks whose scales are special (zero,
//! subnormal, largest finite, infinity, quiet and signalling NaN, both signs), for each
//! instruction set this CPU has; and the switch that forces the scalar fallback.

mod common;
// ggml's prebuilt library is an x86-64 Linux one: the comparison with ggml runs there; the
// comparison with the scalar kernels (themselves checked against ggml's recorded outputs on
// every platform, tests/dequant.rs) runs everywhere.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[path = "ggml/dl.rs"]
mod ggml_dl;

use common::rng::Rng;
use gguf::quant::simd::{self, Isa};
use gguf::quant::{dequantize, scalar_kernel};
use gguf::DataType;

/// The byte offsets of each type's f16 scale fields in its block (ggml's block structs).
/// MXFP4's E8M0 exponent takes every value in a block set of its own.
fn scale_fields(dtype: DataType) -> &'static [usize] {
    use DataType::*;
    match dtype {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL | IQ4_XS | Q2_0 | IQ1_S | IQ2_XXS | IQ2_XS | IQ2_S
        | IQ3_XXS | IQ3_S => &[0],
        TQ1_0 => &[52],
        Q4_1 | Q5_1 | Q4_K | Q5_K => &[0, 2],
        Q2_K => &[80, 82],
        Q3_K => &[108],
        Q6_K => &[208],
        TQ2_0 => &[64],
        _ => &[],
    }
}

/// f16 bit patterns worth a test: zeros, subnormals, largest finite, infinities, NaNs.
const SPECIAL_F16: [u16; 10] = [
    0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01,
];

/// Test inputs for `dtype`: random blocks (any bit pattern, NaN scales included), then blocks
/// with each special value in each scale field (the float types: every element special).
fn inputs(dtype: DataType) -> Vec<Vec<u8>> {
    let bytes = dtype.block_bytes() as usize;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(dtype.id()));
    let blocks = 4096 / dtype.block_elems() as usize + 3; // odd tails for the element types
    let mut out = vec![rng.bytes(blocks * bytes)];
    match dtype {
        DataType::F16 | DataType::BF16 => {
            let mut v = Vec::new();
            for h in SPECIAL_F16
                .iter()
                .chain(&[0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x0080])
            {
                v.extend_from_slice(&h.to_le_bytes());
            }
            out.push(v);
        }
        DataType::IQ1_M => {
            // The f16 scale is the top nibbles of the four scale words (bytes 49, 51, 53, 55).
            let mut v = rng.bytes(SPECIAL_F16.len() * bytes);
            for (i, h) in SPECIAL_F16.iter().enumerate() {
                for k in 0..4 {
                    let at = i * bytes + 48 + 2 * k + 1;
                    v[at] = (v[at] & 0x0f) | ((((h >> (4 * k)) & 0xf) as u8) << 4);
                }
            }
            out.push(v);
        }
        DataType::MXFP4 => {
            let mut v = rng.bytes(256 * bytes);
            for e in 0..256 {
                v[e * bytes] = e as u8;
            }
            out.push(v);
        }
        _ => {
            for &at in scale_fields(dtype) {
                let mut v = rng.bytes(SPECIAL_F16.len() * bytes);
                for (i, h) in SPECIAL_F16.iter().enumerate() {
                    v[i * bytes + at..i * bytes + at + 2].copy_from_slice(&h.to_le_bytes());
                }
                out.push(v);
            }
            // Every pair of special values in the two scales (d and m or dmin): which NaN
            // comes out when both are NaN depends on the order of the operations.
            if let [a, b] = scale_fields(dtype) {
                let n = SPECIAL_F16.len();
                let mut v = rng.bytes(n * n * bytes);
                for (i, ha) in SPECIAL_F16.iter().enumerate() {
                    for (j, hb) in SPECIAL_F16.iter().enumerate() {
                        let blk = (i * n + j) * bytes;
                        v[blk + a..blk + a + 2].copy_from_slice(&ha.to_le_bytes());
                        v[blk + b..blk + b + 2].copy_from_slice(&hb.to_le_bytes());
                    }
                }
                out.push(v);
            }
        }
    }
    out
}

/// The instruction sets with vector kernels on this CPU.
fn vector_isas() -> Vec<Isa> {
    Isa::ALL
        .into_iter()
        .filter(|i| *i != Isa::Scalar && simd::available(*i))
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Calls `check` with every kernel `pick` gives for a type under an instruction set of this
/// CPU, and the number of elements of each of its inputs ([`inputs`]); returns how many
/// (kernel, input) pairs were checked.
fn each_kernel_input(
    pick: fn(Isa, DataType) -> Option<simd::Kernel>,
    mut check: impl FnMut(Isa, DataType, simd::Kernel, &[u8], usize),
) -> usize {
    let mut checked = 0;
    for isa in vector_isas() {
        for dtype in DataType::ALL {
            let Some(kernel) = pick(isa, dtype) else {
                continue;
            };
            for input in inputs(dtype) {
                let n = input.len() / dtype.block_bytes() as usize * dtype.block_elems() as usize;
                check(isa, dtype, kernel, &input, n);
                checked += 1;
            }
        }
    }
    checked
}

/// Panics at the first element where `got` differs from `want` in its bits, naming what gave
/// `want`.
fn assert_same_bits(isa: Isa, dtype: DataType, want: &[f32], got: &[f32], reference: &str) {
    let (w, o) = (bits(want), bits(got));
    if let Some(i) = (0..w.len()).find(|&i| w[i] != o[i]) {
        panic!(
            "{} {}: element {i} is {:#010x}, {reference} gives {:#010x}",
            isa.name(),
            dtype.name(),
            o[i],
            w[i]
        );
    }
}

/// Where there are vector kernels (x86-64, aarch64), some were checked.
fn assert_some_checked(checked: usize) {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(checked > 0, "no vector kernel was tested");
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn every_vector_kernel_matches_ggml_bit_for_bit() {
    let g = ggml_dl::ggml(&common::ggml_dir());
    let checked = each_kernel_input(simd::kernel, |isa, dtype, kernel, input, n| {
        let want = g.to_float(dtype.id(), input, n).expect("ggml converts it");
        let mut got = vec![0f32; n];
        kernel(input, &mut got);
        assert_same_bits(isa, dtype, &want, &got, "ggml");
    });
    assert!(
        checked > 0,
        "no vector kernel was tested (AVX2 is assumed of the test machine)"
    );
}

#[test]
fn every_vector_kernel_matches_the_scalar_kernel_bit_for_bit() {
    let checked = each_kernel_input(simd::kernel, |isa, dtype, kernel, input, n| {
        let mut want = vec![0f32; n];
        scalar_kernel(dtype)(input, &mut want);
        let mut got = vec![0f32; n];
        kernel(input, &mut got);
        assert_same_bits(isa, dtype, &want, &got, "the scalar kernel");
    });
    assert_some_checked(checked);
}

/// The kernel the dispatch picks for each type under each instruction set (on Intel's AVX-512
/// cores, an AVX2 kernel for most types) gives the scalar kernel's floats, wherever the output
/// lies.
#[test]
fn the_kernel_chosen_for_each_type_matches_the_scalar_kernel() {
    // The dispatch chooses a kernel for every type that has one.
    for isa in vector_isas() {
        for dtype in DataType::ALL {
            if simd::chosen(isa, dtype).is_none() {
                assert!(simd::kernel(isa, dtype).is_none(), "{}", dtype.name());
            }
        }
    }
    let checked = each_kernel_input(simd::chosen, |isa, dtype, kernel, input, n| {
        let mut want = vec![0f32; n];
        scalar_kernel(dtype)(input, &mut want);
        // At every offset of the output from a 64-byte boundary (F16 and BF16 write
        // one by one up to it).
        let mut buf = vec![0f32; n + 16];
        for off in 0..16 {
            let got = &mut buf[off..off + n];
            got.fill(0.0);
            kernel(input, got);
            assert!(
                bits(got) == bits(&want),
                "{} {}: the kernel chosen differs from the scalar kernel (output at +{off})",
                isa.name(),
                dtype.name()
            );
        }
    });
    assert_some_checked(checked);
}

/// The same with outputs larger than L2 (3 MiB of floats), where some kernels chosen work
/// piece by piece, prefetching ahead.
#[test]
fn the_kernel_chosen_for_each_type_matches_the_scalar_kernel_beyond_l2() {
    let mut checked = 0;
    for isa in vector_isas() {
        for dtype in DataType::ALL {
            let Some(kernel) = simd::chosen(isa, dtype) else {
                continue;
            };
            let (bytes, elems) = (dtype.block_bytes() as usize, dtype.block_elems() as usize);
            let blocks = (3 << 18) / elems + 3;
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(dtype.id()));
            let input = rng.bytes(blocks * bytes);
            let n = blocks * elems;
            let mut want = vec![0f32; n];
            scalar_kernel(dtype)(&input, &mut want);
            let mut got = vec![0f32; n];
            kernel(&input, &mut got);
            assert!(
                bits(&got) == bits(&want),
                "{} {}: the kernel chosen differs from the scalar kernel",
                isa.name(),
                dtype.name()
            );
            checked += 1;
        }
    }
    assert_some_checked(checked);
}

/// `GGUF_SIMD=scalar` in the environment: the dispatch uses the portable kernels, and gives the
/// same floats (run in a child process, which reads the variable when it starts converting).
#[test]
fn gguf_simd_scalar_forces_the_fallback() {
    if std::env::var_os("GGUF_SIMD_TEST_CHILD").is_some() {
        let expect = std::env::var("GGUF_SIMD").unwrap();
        assert_eq!(simd::active().name(), expect);
        let input = inputs(DataType::Q4_K).remove(0);
        let n = input.len() / 144 * 256;
        let mut out = vec![0f32; n];
        dequantize(DataType::Q4_K, &input, &mut out).unwrap();
        let mut want = vec![0f32; n];
        scalar_kernel(DataType::Q4_K)(&input, &mut want);
        assert_eq!(bits(&out), bits(&want));
        return;
    }
    for isa in vector_isas().into_iter().chain([Isa::Scalar]) {
        let out = common::run(
            common::this_test_binary()
                .args([
                    "--exact",
                    &common::test_path(module_path!(), "gguf_simd_scalar_forces_the_fallback"),
                ])
                .env("GGUF_SIMD_TEST_CHILD", "1")
                .env("GGUF_SIMD", isa.name()),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("1 passed"), "{text}");
    }
}

#[test]
fn the_dispatch_can_be_forced_to_the_fallback() {
    let best = simd::active();
    assert!(simd::set_isa(Isa::Scalar));
    assert_eq!(simd::active(), Isa::Scalar);
    assert!(simd::best(DataType::Q4_0).is_none());
    assert!(simd::set_isa(best));
    assert_eq!(simd::active(), best);
    // A set this CPU lacks is refused and changes nothing.
    if let Some(missing) = Isa::ALL.into_iter().find(|i| !simd::available(*i)) {
        assert!(!simd::set_isa(missing));
        assert_eq!(simd::active(), best);
    }
}
