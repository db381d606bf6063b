//! Tensor values against ggml's own dequantizers (`ggml_get_type_traits(t)->to_float`, and
//! `dequantize_row_q8_K`, which the traits do not list), loaded from the pinned
//! `libggml-base.so` (npm `@node-llama-cpp/linux-x64` 3.22.1, `make ggml`; `GGUF_GGML_LIB_DIR`
//! points elsewhere) into this process. Every output is compared as bits (`f32::to_bits`).
//!
//! That build converts every type of the format but F32 (its bits, unchanged), F64, the integer
//! types and Q8_1: those have no ggml converter and are checked by their plain definition here.
//! NVFP4, Q1_0 and Q2_0 are new in ggml but present in this build, so they are compared too.
//!
//! Per type: random blocks (every byte random, so about 1 in 32 f16 scales is an infinity or a
//! NaN), then blocks whose scale fields hold each special value (zero, negative zero, the
//! smallest and largest subnormals, the largest finite, infinities, quiet and signalling NaNs
//! with payloads); every F16 and BF16 bit pattern; every tensor of the bundled sample and of a
//! model written with one tensor of every type, through `gguf_tensor_to_float`.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;
#[path = "dequant/inputs.rs"]
mod inputs;

use common::{ggml_dir, manifest_dir};
use ggml_dl::Lib;
use gguf::{DataType, Writer};
use inputs::{cases, fingerprint, Rng};
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::OnceLock;

type ToFloat = unsafe extern "C" fn(*const c_void, *mut f32, i64);

/// ggml's converter of each type id, where it has one.
struct Ggml {
    to_float: Vec<Option<ToFloat>>,
}

fn ggml() -> &'static Ggml {
    static GGML: OnceLock<Ggml> = OnceLock::new();
    GGML.get_or_init(|| {
        let lib = Lib::open(&ggml_dir().join("libggml-base.so"));
        // SAFETY: the library stays loaded for the process, so the function pointers stay
        // valid.
        unsafe {
            let traits = lib.sym("ggml_get_type_traits");
            let traits: unsafe extern "C" fn(u32) -> *const u8 = std::mem::transmute(traits);
            let mut to_float = vec![None; 64];
            for t in DataType::ALL {
                // struct ggml_type_traits: type_name, blck_size, blck_size_interleave,
                // type_size, is_quantized, to_float, ... (checked against our table first).
                let p = traits(t.id());
                let word = |i: usize| (p.add(8 * i) as *const u64).read_unaligned();
                assert_eq!(word(1), t.block_elems(), "{t:?}: ggml's block size");
                assert_eq!(word(3), t.block_bytes(), "{t:?}: ggml's block bytes");
                let type_name = CStr::from_ptr(word(0) as usize as *const c_char);
                let mut f = word(5) as usize as *mut c_void;
                if f.is_null() {
                    f = lib.find(&format!("dequantize_row_{}", type_name.to_str().unwrap()));
                }
                if !f.is_null() {
                    to_float[t.id() as usize] =
                        Some(std::mem::transmute::<*mut c_void, ToFloat>(f));
                }
            }
            Ggml { to_float }
        }
    })
}

/// The types ggml has no converter for: checked by definition instead.
const NO_GGML: [DataType; 7] = [
    DataType::F32,
    DataType::F64,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::Q8_1,
];

/// ggml's floats for `src` (whole blocks of `t`).
fn theirs(t: DataType, src: &[u8]) -> Vec<f32> {
    let n = src.len() as u64 / t.block_bytes() * t.block_elems();
    let mut out = vec![0f32; n as usize];
    let f = ggml().to_float[t.id() as usize].unwrap_or_else(|| panic!("ggml converts no {t:?}"));
    // SAFETY: `src` holds n / block_elems whole blocks and `out` n floats, as ggml expects.
    unsafe { f(src.as_ptr().cast(), out.as_mut_ptr(), n as i64) };
    out
}

/// Ours, through the C API.
fn ours(t: DataType, src: &[u8]) -> Vec<f32> {
    let n = src.len() as u64 / t.block_bytes() * t.block_elems();
    let mut out = vec![0f32; n as usize];
    // SAFETY: as documented: src holds the blocks, out n floats.
    let ok =
        unsafe { gguf::ffi::gguf_dequantize(t.id(), src.as_ptr().cast(), n, out.as_mut_ptr()) };
    assert!(ok, "{}", common::last_error());
    out
}

/// Asserts the bits agree, naming the first difference and its block.
fn same_bits(t: DataType, what: &str, src: &[u8], ours: &[f32], theirs: &[f32]) {
    assert_eq!(ours.len(), theirs.len());
    if let Some(i) = (0..ours.len()).find(|&i| ours[i].to_bits() != theirs[i].to_bits()) {
        let block = i / t.block_elems() as usize;
        let bytes = t.block_bytes() as usize;
        let b = &src[block * bytes..(block + 1) * bytes];
        panic!(
            "{t:?} {what}: element {i} (block {block}): ours {:#010x} ({}), ggml {:#010x} ({}); \
             block {b:02x?}",
            ours[i].to_bits(),
            ours[i],
            theirs[i].to_bits(),
            theirs[i]
        );
    }
}

fn check(t: DataType, what: &str, src: &[u8]) {
    same_bits(t, what, src, &ours(t, src), &theirs(t, src));
}

#[test]
fn every_type_matches_ggml_on_random_and_special_blocks() {
    for t in DataType::ALL {
        if NO_GGML.contains(&t) {
            continue;
        }
        for (case, blocks) in cases(t) {
            check(t, case, &blocks);
        }
    }
}

/// ggml's outputs on the shared cases have the fingerprints `tests/data/dequant-golden.tsv`
/// records (which `dequant.rs` checks this build reproduces on every platform). With
/// `GGUF_UPDATE_GOLDEN=1` the file is rewritten from ggml's outputs instead.
#[test]
fn golden_fingerprints_are_ggml_s() {
    let mut lines = vec![
        "# Fingerprints (FNV-1a of the f32 bits) of ggml's outputs on tests/dequant/inputs.rs's \
         cases; tests/dequant_ggml.rs writes them (GGUF_UPDATE_GOLDEN=1) and checks them."
            .to_string(),
    ];
    for t in DataType::ALL {
        if NO_GGML.contains(&t) {
            continue;
        }
        for (case, blocks) in cases(t) {
            lines.push(format!(
                "{}\t{case}\t{:016x}",
                t.name(),
                fingerprint(&theirs(t, &blocks))
            ));
        }
    }
    let text = lines.join("\n") + "\n";
    let path = manifest_dir().join("tests/data/dequant-golden.tsv");
    if std::env::var_os("GGUF_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        text,
        "tests/data/dequant-golden.tsv is not ggml's: GGUF_UPDATE_GOLDEN=1 cargo test --test \
         dequant_ggml rewrites it"
    );
}

#[test]
fn every_f16_and_bf16_bit_pattern_matches_ggml() {
    let all: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    check(DataType::F16, "every pattern", &all);
    check(DataType::BF16, "every pattern", &all);
}

#[test]
fn types_ggml_does_not_convert_follow_their_definition() {
    let mut rng = Rng(7);
    let raw = rng.bytes(36 * 8);
    // F32: the bits unchanged.
    let out = ours(DataType::F32, &raw);
    for (i, v) in out.iter().enumerate() {
        let bits = u32::from_le_bytes(raw[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(v.to_bits(), bits);
    }
    // Q8_1: its scale times each quant (the stored sum is ignored): Q8_0 with the sum removed.
    let out = ours(DataType::Q8_1, &raw);
    for (b, y) in raw.chunks(36).zip(out.chunks(32)) {
        let mut q8_0 = b[..2].to_vec();
        q8_0.extend_from_slice(&b[4..]);
        same_bits(
            DataType::Q8_1,
            "as Q8_0",
            b,
            y,
            &theirs(DataType::Q8_0, &q8_0),
        );
    }
    // Integers and F64: each value rounded to the nearest float.
    let out = ours(DataType::I32, &raw);
    for (i, v) in out.iter().enumerate() {
        let x = i32::from_le_bytes(raw[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(*v, x as f32);
    }
    let out = ours(DataType::I16, &raw);
    for (i, v) in out.iter().enumerate() {
        assert_eq!(
            *v,
            f32::from(i16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]))
        );
    }
    let out = ours(DataType::I64, &raw);
    for (i, v) in out.iter().enumerate() {
        let x = i64::from_le_bytes(raw[8 * i..8 * i + 8].try_into().unwrap());
        assert_eq!(*v, x as f32);
    }
    let doubles: Vec<u8> = [1.5f64, -1e-50, 3.4028234663852886e38, 1e39, -0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let out = ours(DataType::F64, &doubles);
    assert_eq!(out, [1.5, -0.0, f32::MAX, f32::INFINITY, -0.0]);
    assert!(out[1].is_sign_negative() && out[4].is_sign_negative());
}

/// Every tensor of a file, converted through `gguf_tensor_to_float` (whole tensor, and one row
/// at a time), against ggml on the same bytes. Returns how many tensors were compared.
fn check_file(path: &std::path::Path) -> usize {
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: C API calls with a NUL-terminated path; the handle is closed at the end and the
    // records and data it hands out are used only before.
    unsafe {
        use gguf::ffi::*;
        let f = gguf_open(cpath.as_ptr());
        assert!(!f.is_null(), "{}", common::last_error());
        let n = gguf_tensor_count(f);
        let mut compared = 0;
        for i in 0..n {
            let info = &*gguf_get_tensor_by_index(f, i);
            let t = DataType::from_id(info.dtype).unwrap();
            let data = std::slice::from_raw_parts(
                gguf_tensor_data(f, info).cast::<u8>(),
                info.size_bytes as usize,
            );
            let name = CStr::from_ptr(info.name).to_string_lossy().into_owned();
            let rows = info.n_elements / info.dims[0];
            let mut out = vec![0f32; info.n_elements as usize];
            assert!(
                gguf_tensor_to_float(f, info, 0, rows, out.as_mut_ptr()),
                "{name}: {}",
                common::last_error()
            );
            if rows > 1 {
                // The last row alone gives the same floats.
                let row = info.dims[0] as usize;
                let mut last = vec![0f32; row];
                assert!(gguf_tensor_to_float(
                    f,
                    info,
                    rows - 1,
                    1,
                    last.as_mut_ptr()
                ));
                assert_eq!(
                    last.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    out[out.len() - row..]
                        .iter()
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>()
                );
            }
            if NO_GGML.contains(&t) {
                same_bits(t, &name, data, &out, &ours(t, data));
            } else {
                same_bits(t, &name, data, &out, &theirs(t, data));
                compared += 1;
            }
        }
        gguf_close(f);
        compared
    }
}

#[test]
fn every_tensor_of_the_sample_matches_ggml() {
    let compared = check_file(&manifest_dir().join("testdata/sample.gguf"));
    assert!(compared > 0);
}

#[test]
fn a_model_with_every_type_matches_ggml() {
    let mut rng = Rng(0xDEC0DE);
    let mut w = Writer::new();
    for t in DataType::ALL {
        let dims = [t.block_elems() * 4, 3];
        let size = t.tensor_bytes(&dims).unwrap() as usize;
        w.add_tensor(format!("t.{}", t.name()), &dims, t, rng.bytes(size))
            .unwrap();
    }
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dequant-every-type-{}.gguf", std::process::id()));
    w.write_file(&path).unwrap();
    let compared = check_file(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(compared, DataType::ALL.len() - NO_GGML.len());
}
