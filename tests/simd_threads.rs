//! `gguf_tensor_to_float_parallel`: the same floats as `gguf_tensor_to_float` for any number of
//! threads and any row range, and the same refusals, checked before any row is converted.

mod common;

use gguf::ffi;
use gguf::{DataType, ErrorCode, Writer};
use std::ffi::CString;

fn random_bytes(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Small bytes: finite f16 scales and values.
            (x >> 8) as u8 & 0x3b
        })
        .collect()
}

#[test]
fn parallel_conversion_equals_the_single_threaded_one() {
    let mut w = Writer::new();
    // 96 rows of 4096 Q4_K elements; 37 rows of 8192 F16; one row of 64 Q8_0.
    let q = DataType::Q4_K;
    w.add_tensor("q", &[4096, 96], q, random_bytes(96 * 16 * 144, 1))
        .unwrap();
    w.add_tensor(
        "h",
        &[8192, 37],
        DataType::F16,
        random_bytes(37 * 8192 * 2, 2),
    )
    .unwrap();
    w.add_tensor("s", &[64], DataType::Q8_0, random_bytes(2 * 34, 3))
        .unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("simd_threads");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("t-{}.gguf", std::process::id()));
    w.write_file(&path).unwrap();
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings, outputs sized for the rows asked; closed at the end.
    unsafe {
        let f = ffi::open::gguf_open(c_path.as_ptr());
        assert!(!f.is_null(), "{}", common::last_error());
        for name in [c"q", c"h", c"s"] {
            let t = ffi::gguf_get_tensor(f, name.as_ptr());
            let row = (*t).dims[0];
            let rows = (*t).n_elements / row;
            let mut want = vec![0f32; (*t).n_elements as usize];
            assert!(ffi::gguf_tensor_to_float(f, t, 0, rows, want.as_mut_ptr()));
            for threads in [1, 2, 3, 7, 0] {
                for (first, n) in [(0, rows), (1, rows - 1), (rows / 3, rows / 2), (rows, 0)] {
                    let mut got = vec![f32::NAN; (n * row) as usize];
                    assert!(
                        ffi::gguf_tensor_to_float_parallel(
                            f,
                            t,
                            first,
                            n,
                            got.as_mut_ptr(),
                            threads
                        ),
                        "{}",
                        common::last_error()
                    );
                    let want = &want[(first * row) as usize..((first + n) * row) as usize];
                    let same = got
                        .iter()
                        .zip(want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{name:?}: rows {first}+{n} on {threads} threads differ"
                    );
                }
            }
            let mut out = vec![0f32; (rows * row) as usize];
            assert!(!ffi::gguf_tensor_to_float_parallel(
                f,
                t,
                1,
                rows,
                out.as_mut_ptr(),
                4
            ));
            assert_eq!(
                ffi::gguf_last_error_code(),
                ErrorCode::InvalidArgument as u32
            );
            assert!(
                common::last_error().contains("past the end"),
                "{}",
                common::last_error()
            );
            assert!(!ffi::gguf_tensor_to_float_parallel(
                f,
                t,
                u64::MAX,
                2,
                out.as_mut_ptr(),
                4
            ));
            assert_eq!(
                ffi::gguf_last_error_code(),
                ErrorCode::InvalidArgument as u32
            );
            assert!(!ffi::gguf_tensor_to_float_parallel(
                f,
                t,
                0,
                1,
                std::ptr::null_mut(),
                4
            ));
            assert_eq!(ffi::gguf_last_error_code(), ErrorCode::NullArgument as u32);
        }
        let t = ffi::gguf_get_tensor(f, c"q".as_ptr());
        let mut out = vec![0f32; 4096];
        assert!(!ffi::gguf_tensor_to_float_parallel(
            std::ptr::null_mut(),
            t,
            0,
            1,
            out.as_mut_ptr(),
            2
        ));
        assert_eq!(ffi::gguf_last_error_code(), ErrorCode::NullArgument as u32);
        ffi::gguf_close(f);
    }
    let _ = std::fs::remove_file(&path);
}

/// The Rust functions behind them: `load::tensor_to_float_parallel` gives the floats of
/// `load::tensor_to_float`, which are `quant::dequantize`'s, for mapped data and for data read
/// by position, and refuses what they refuse: rows past the end, a range that overflows, a
/// buffer of the wrong length, an index past the last tensor.
#[test]
fn the_rust_functions_convert_on_threads_as_on_one() {
    use gguf::{load, quant, Model, OpenOptions};
    let mut w = Writer::new();
    let bytes = random_bytes(40 * 16 * 144, 4);
    w.add_tensor("q", &[4096, 40], DataType::Q4_K, bytes.clone())
        .unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("simd_threads");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("r-{}.gguf", std::process::id()));
    w.write_file(&path).unwrap();
    let mut want = vec![0f32; 40 * 4096];
    quant::dequantize(DataType::Q4_K, &bytes, &mut want).unwrap();
    for no_map in [false, true] {
        let options = OpenOptions {
            no_map,
            ..OpenOptions::default()
        };
        let model = Model::open(&path, options).unwrap();
        let mut one = vec![f32::NAN; 40 * 4096];
        load::tensor_to_float(&model, 0, 0, 40, &mut one).unwrap();
        assert!(one
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        for threads in [0, 1, 3, 100_000] {
            for (first, n) in [(0, 40), (7, 19), (40, 0)] {
                let mut got = vec![f32::NAN; n * 4096];
                load::tensor_to_float_parallel(
                    &model,
                    0,
                    first as u64,
                    n as u64,
                    &mut got,
                    threads,
                )
                .unwrap();
                let want = &want[first * 4096..(first + n) * 4096];
                assert!(
                    got.iter()
                        .zip(want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "rows {first}+{n} on {threads} threads differ"
                );
            }
        }
        let mut out = vec![0f32; 2 * 4096];
        for (first, n, said) in [(39, 2, "past the end"), (u64::MAX, 2, "overflow")] {
            let e = load::tensor_to_float_parallel(&model, 0, first, n, &mut out, 4).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument);
            assert!(e.to_string().contains(said), "{e}");
        }
        let e = load::tensor_to_float(&model, 0, 0, 1, &mut out).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("holds 8192 floats"), "{e}");
        let e = load::tensor_to_float(&model, 1, 0, 1, &mut out).unwrap_err();
        assert!(e.to_string().contains("past the end (1 tensors)"), "{e}");
    }
    let _ = std::fs::remove_file(&path);
}
