//! `gguf_validate_tensor` against ggml's `ggml_validate_row_data` (libggml-base.so, loaded in
//! this process): the same verdict on valid data and on data with a NaN or an infinity planted
//! at every position of a block, in every type; and, through the C API on a written file, an
//! error naming the tensor and the first bad element or block, with its offsets.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;

use gguf::ffi;
use gguf::quant::validate::find_bad_value;
use gguf::{ByteOrder, DataType, ErrorCode, Writer};
use std::ffi::CString;

/// Byte patterns planted at each offset: f16 NaN, -inf, +inf; f32 NaN and +inf; bf16 +inf; a
/// lone 0xFF (E8M0's NaN); a signalling f16 NaN.
const PLANTS: [&[u8]; 8] = [
    &[0x00, 0x7e],
    &[0x00, 0xfc],
    &[0x00, 0x7c],
    &[0x00, 0x00, 0xc0, 0x7f],
    &[0x00, 0x00, 0x80, 0x7f],
    &[0x80, 0x7f],
    &[0xff],
    &[0x01, 0x7c],
];

/// Ours and ggml's verdict on `data` of `dtype`, and ours in detail.
fn both(g: &ggml_dl::Ggml, dtype: DataType, data: &[u8]) -> (bool, bool) {
    let ours = find_bad_value(dtype, data, ByteOrder::Little).is_none();
    (ours, g.validate(dtype.id(), data))
}

#[test]
fn same_verdict_as_ggml_with_a_nan_or_infinity_planted_anywhere_in_every_type() {
    let g = ggml_dl::ggml(&common::ggml_dir());
    let mut refused = 0;
    for dtype in DataType::ALL {
        let bytes = dtype.block_bytes() as usize;
        // Enough blocks for a few vector chunks of the float types.
        let blocks = (3 * 4096 / bytes).max(5);
        let zeros = vec![0u8; blocks * bytes];
        let (ours, theirs) = both(g, dtype, &zeros);
        if dtype == DataType::Q8_1 {
            // ggml refuses every Q8_1 row ("invalid type"); valid Q8_1 data passes here.
            assert!(ours && !theirs, "Q8_1 zeros: ours {ours}, ggml {theirs}");
            continue;
        }
        assert_eq!(ours, theirs, "{} zeros", dtype.name());
        assert!(ours, "{} zeros are valid", dtype.name());
        // Plant in block 2 (past the first vector chunk for the element types: block 2049).
        let block = if bytes <= 8 { 2049.min(blocks - 1) } else { 2 };
        for plant in PLANTS {
            for at in 0..bytes {
                let start = block * bytes + at;
                let mut data = zeros.clone();
                let end = (start + plant.len()).min(data.len());
                data[start..end].copy_from_slice(&plant[..end - start]);
                let bad = find_bad_value(dtype, &data, ByteOrder::Little);
                let theirs = g.validate(dtype.id(), &data);
                assert_eq!(
                    bad.is_none(),
                    theirs,
                    "{}: {plant:02x?} at byte {at} of block {block}: ours {bad:?}, ggml {theirs}",
                    dtype.name()
                );
                if let Some(bad) = bad {
                    refused += 1;
                    // The first bad value is in the planted block (or, for a plant spanning
                    // two elements, the element it starts in or the next).
                    let elems = bytes as u64;
                    assert!(
                        bad.byte >= start as u64 && bad.byte < (start + plant.len()) as u64
                            || bad.byte / elems == start as u64 / elems,
                        "{}: planted at {start}, reported {bad:?}",
                        dtype.name()
                    );
                }
            }
        }
    }
    assert!(refused > 100, "only {refused} plants were refused");
}

#[test]
fn same_verdict_as_ggml_on_random_data_of_every_type() {
    let g = ggml_dl::ggml(&common::ggml_dir());
    let mut x = 0x1234_5678_9abc_def0u64;
    for dtype in DataType::ALL {
        if dtype == DataType::Q8_1 {
            continue; // ggml refuses it as a type (see above)
        }
        for round in 0..40 {
            let bytes = dtype.block_bytes() as usize;
            let n = (1 + round % 7) * bytes * if bytes <= 8 { 64 } else { 1 };
            let data: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly small bytes, so that many blocks are valid.
                    if x % 11 == 0 {
                        (x >> 8) as u8
                    } else {
                        (x >> 8) as u8 & 0x3f
                    }
                })
                .collect();
            let (ours, theirs) = both(g, dtype, &data);
            assert_eq!(ours, theirs, "{} round {round}", dtype.name());
        }
    }
}

#[test]
fn the_c_api_names_the_tensor_and_the_first_bad_block_and_its_offsets() {
    let mut w = Writer::new();
    w.add_tensor("good", &[64], DataType::Q4_0, vec![0; 36])
        .unwrap();
    let mut bad = vec![0u8; 5 * 210];
    bad[3 * 210 + 209] = 0x7c; // block 3's d = +inf
    w.add_tensor("blk.0.ffn", &[256 * 5], DataType::Q6_K, bad)
        .unwrap();
    let mut f16 = vec![0u8; 2 * 100];
    f16[2 * 77 + 1] = 0xfe; // element 77 = NaN
    w.add_tensor("h", &[100], DataType::F16, f16).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("validate_ggml");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("v-{}.gguf", std::process::id()));
    w.write_file(&path).unwrap();
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings; the handle is closed at the end.
    unsafe {
        let f = ffi::open::gguf_open(c_path.as_ptr());
        assert!(!f.is_null(), "{}", common::last_error());
        let good = ffi::gguf_get_tensor(f, c"good".as_ptr());
        assert!(ffi::gguf_validate_tensor(f, good));

        let t = ffi::gguf_get_tensor(f, c"blk.0.ffn".as_ptr());
        assert!(!ffi::gguf_validate_tensor(f, t));
        assert_eq!(ffi::gguf_last_error_code(), ErrorCode::BadValue as u32);
        let msg = common::last_error();
        assert!(
            msg.contains("'blk.0.ffn'") && msg.contains("block 3's d is infinity"),
            "{msg}"
        );
        assert!(msg.contains("byte 838 of the tensor's data"), "{msg}");
        assert_eq!(
            ffi::gguf_last_error_offset(),
            ((*t).file_offset + 838) as i64
        );

        let h = ffi::gguf_get_tensor(f, c"h".as_ptr());
        assert!(!ffi::gguf_validate_tensor(f, h));
        let msg = common::last_error();
        assert!(
            msg.contains("'h': element 77 is NaN") && msg.contains("byte 154"),
            "{msg}"
        );

        assert!(!ffi::gguf_validate_tensor(std::ptr::null_mut(), h));
        assert_eq!(ffi::gguf_last_error_code(), ErrorCode::NullArgument as u32);
        assert!(!ffi::gguf_validate_tensor(f, std::ptr::null()));
        ffi::gguf_close(f);
    }
    let _ = std::fs::remove_file(&path);
}
