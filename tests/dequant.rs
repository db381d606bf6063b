//! Tensor values on any platform (no ggml, no C compiler, no Python: these run on the cross
//! targets too, scalar path included): every type reproduces ggml's recorded output
//! fingerprints (`tests/data/dequant-golden.tsv`, which `dequant_ggml.rs` checks are ggml's),
//! and big-endian files convert the types whose big-endian layout is defined and refuse the
//! others by name.

mod common;
#[path = "dequant/inputs.rs"]
mod inputs;

use gguf::ffi::{gguf_close, gguf_get_tensor, gguf_open_memory, gguf_tensor_to_float};
use gguf::quant::{self, blocks};
use gguf::{ByteOrder, DataType, Writer};
use inputs::{cases, fingerprint, golden, Rng};

#[test]
fn every_type_gives_ggml_s_recorded_bits() {
    let golden = golden();
    let mut checked = 0;
    for t in DataType::ALL {
        for (case, src) in cases(t) {
            let Some(&(_, _, want)) = golden.iter().find(|g| g.0 == t.name() && g.1 == case) else {
                continue; // no ggml converter: see types_without_ggml_converter
            };
            let n = src.len() / t.block_bytes() as usize * t.block_elems() as usize;
            let mut out = vec![0f32; n];
            quant::dequantize(t, &src, &mut out).unwrap();
            assert_eq!(fingerprint(&out), want, "{t:?} {case}");
            // The portable kernel gives the same bits as whichever kernel this CPU runs.
            let mut scalar = vec![0f32; n];
            quant::scalar_kernel(t)(&src, &mut scalar);
            assert_eq!(fingerprint(&scalar), want, "{t:?} {case}: scalar kernel");
            checked += 1;
        }
    }
    assert_eq!(checked, golden.len());
    assert_eq!(checked, 2 * (DataType::ALL.len() - 7));
}

/// Opens `bytes` through the C API and converts tensor `name` whole.
fn to_float(bytes: &[u8], name: &str, n: usize) -> Result<Vec<f32>, String> {
    let name = std::ffi::CString::new(name).unwrap();
    let mut out = vec![0f32; n];
    // SAFETY: the buffer outlives the handle, which is closed before returning; `out` has room
    // for the tensor's n elements.
    unsafe {
        let f = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
        assert!(!f.is_null());
        let t = gguf_get_tensor(f, name.as_ptr());
        assert!(!t.is_null());
        let rows = (*t).n_elements / (*t).dims[0];
        let ok = gguf_tensor_to_float(f, t, 0, rows, out.as_mut_ptr());
        let error = std::ffi::CStr::from_ptr(gguf::ffi::gguf_last_error())
            .to_string_lossy()
            .into_owned();
        gguf_close(f);
        if ok {
            Ok(out)
        } else {
            Err(error)
        }
    }
}

/// `data` of type `t` as a big-endian file stores it: every element of a plain type, and every
/// multi-byte scale field of a block, byte-reversed.
fn to_big_endian(t: DataType, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    for block in out.chunks_exact_mut(t.block_bytes() as usize) {
        for f in blocks::fields(t) {
            let swap = match f.kind {
                blocks::FieldKind::F16 | blocks::FieldKind::F32 => true,
                // BF16's one field is the element itself.
                blocks::FieldKind::Bytes => t == DataType::BF16,
                _ => false,
            };
            if swap {
                block[f.offset..f.offset + f.len].reverse();
            }
        }
    }
    out
}

#[test]
fn big_endian_files_convert_the_types_with_a_defined_layout() {
    let mut rng = Rng(0xB16E);
    let (mut little, mut big) = (Writer::new(), Writer::new());
    big.set_byte_order(ByteOrder::Big);
    let mut sizes = Vec::new();
    for t in DataType::ALL {
        let dims = [t.block_elems() * 2, 2];
        let data = rng.bytes(t.tensor_bytes(&dims).unwrap() as usize);
        let name = format!("t.{}", t.name());
        big.add_tensor(&name, &dims, t, to_big_endian(t, &data))
            .unwrap();
        little.add_tensor(&name, &dims, t, data).unwrap();
        sizes.push((t, name, (dims[0] * dims[1]) as usize));
    }
    let (little, big) = (little.to_bytes().unwrap(), big.to_bytes().unwrap());
    let mut converted = 0;
    for (t, name, n) in sizes {
        let want = to_float(&little, &name, n).unwrap();
        match to_float(&big, &name, n) {
            Ok(got) => {
                assert!(quant::big_endian_defined(t), "{t:?} converted");
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{t:?}");
                converted += 1;
            }
            Err(e) => {
                assert!(!quant::big_endian_defined(t), "{t:?}: {e}");
                assert!(
                    e.contains(&format!(
                        "{} values cannot be read from a big-endian",
                        t.name()
                    )) && e.contains(&format!("tensor '{name}'")),
                    "{e}"
                );
            }
        }
    }
    assert_eq!(converted, 9);
}

#[test]
fn removed_and_unknown_types_are_named() {
    let mut out = [0f32; 32];
    for (id, name) in [
        (4, "Q4_2"),
        (5, "Q4_3"),
        (31, "Q4_0_4_4"),
        (38, "IQ4_NL_8_8"),
    ] {
        // SAFETY: 18 readable bytes and room for 32 floats; the call fails before reading.
        let ok = unsafe {
            gguf::ffi::gguf_dequantize(id, [0u8; 18].as_ptr().cast(), 32, out.as_mut_ptr())
        };
        assert!(!ok);
        let e = quant::data_type(id).unwrap_err().to_string();
        assert!(
            e.contains(name) && e.contains("removed from the format"),
            "{e}"
        );
    }
    let e = quant::data_type(43).unwrap_err().to_string();
    assert!(e.contains("unknown data type 43"), "{e}");
}
