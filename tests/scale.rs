//! Scale: a file whose tensor data spans more than 1 TiB (sparse: only the header and the last
//! tensor's bytes are written) opens like a small one, with offsets above 4 GiB everywhere, and
//! opening never touches the data section (counted in page faults). In a 32-bit process, which
//! cannot map such a file, opening it fails with an error that says so.

use gguf::ffi::*;
use gguf::{DataType, MappedFile, MetadataValue as V, ValueType, Writer};
use std::ffi::CString;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

// Used by the 64-bit tests only (a 32-bit process maps neither file).
#[cfg(target_pointer_width = "64")]
const GIB: u64 = 1 << 30;

/// Dimensions of a 512 GiB F32 tensor (2^37 elements).
const DIMS_512_GIB: [u64; 2] = [1 << 27, 1 << 10];
/// Dimensions of a 3 GiB F32 tensor.
#[cfg(target_pointer_width = "64")]
const DIMS_3_GIB: [u64; 2] = [3 << 18, 1 << 10];

/// Writes the sparse file: a vocabulary, two huge F32 tensors of `huge` dimensions, then small
/// tensors after them whose bytes are written. Returns its path and the small tensors' names
/// and bytes.
fn sparse_model(name: &str, huge: [u64; 2]) -> (PathBuf, Vec<(String, Vec<u8>)>) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scale");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    let tokens = (0..20_000).map(|i| V::string(format!("tok{i}"))).collect();
    w.add_metadata("tokenizer.ggml.tokens", V::Array(ValueType::String, tokens))
        .unwrap();
    w.add_tensor_info("huge.0", &huge, DataType::F32).unwrap();
    w.add_tensor_info("huge.1", &huge, DataType::F32).unwrap();
    let small: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| (format!("tail.{i}"), (0..64u8).map(|b| b ^ i).collect()))
        .collect();
    for (n, data) in &small {
        w.add_tensor_info(n, &[data.len() as u64 / 4], DataType::F32)
            .unwrap();
    }
    let header = w.header_bytes().unwrap();
    let offsets = w.tensor_offsets().unwrap();
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&header).unwrap();
    for ((_, data), offset) in small.iter().zip(&offsets[2..]) {
        f.seek(SeekFrom::Start(header.len() as u64 + offset))
            .unwrap();
        f.write_all(data).unwrap();
    }
    (path, small)
}

#[cfg(target_pointer_width = "64")]
#[test]
fn a_terabyte_of_tensor_data_opens_with_offsets_above_4_gib() {
    let (path, small) = sparse_model("1tib.gguf", DIMS_512_GIB);
    opens_with_tails_above(&path, &small, 512 * GIB, 1 << 40);
}

/// The same at a size an emulator can map (qemu-user keeps state for every page it maps): the
/// small tensors lie above 6 GiB.
#[cfg(target_pointer_width = "64")]
#[test]
fn six_gib_of_tensor_data_opens_with_offsets_above_4_gib() {
    let (path, small) = sparse_model("6gib.gguf", DIMS_3_GIB);
    opens_with_tails_above(&path, &small, 3 * GIB, 6 * GIB);
}

/// Opens the sparse file through the Rust and C APIs: the huge tensors have `huge_size` bytes,
/// the small ones lie above file offset `above` and read back as written.
#[cfg(target_pointer_width = "64")]
fn opens_with_tails_above(
    path: &std::path::Path,
    small: &[(String, Vec<u8>)],
    huge_size: u64,
    above: u64,
) {
    let size = std::fs::metadata(path).unwrap().len();
    assert!(size > above, "the sparse file is {size} bytes");

    let f = MappedFile::open(path).unwrap();
    let huge = f.tensor("huge.1").unwrap();
    assert_eq!(huge.size, huge_size);
    assert!(huge.offset >= huge_size);
    for (name, data) in small {
        let t = f.tensor(name).unwrap();
        assert!(t.file_offset > above, "{name} at {}", t.file_offset);
        assert_eq!(t.data, &data[..]);
    }

    // The same through the C API.
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: the handle is used only below and closed at the end.
    unsafe {
        let h = gguf_open(c_path.as_ptr());
        assert!(!h.is_null());
        assert_eq!(gguf_file_size(h), size);
        for (name, data) in small {
            let n = CString::new(name.as_str()).unwrap();
            let info = gguf_get_tensor(h, n.as_ptr());
            assert!((*info).file_offset > above);
            assert_eq!((*info).file_offset, gguf_data_offset(h) + (*info).offset);
            let bytes = std::slice::from_raw_parts(gguf_tensor_data(h, info).cast::<u8>(), 64);
            assert_eq!(bytes, &data[..]);
        }
        gguf_close(h);
    }
}

/// A 32-bit address space cannot hold the map: a map of the file (`MappedFile`) is refused up
/// front, naming its size and the reason, instead of a failed mmap's "Cannot allocate memory"
/// (or a size truncated to 32 bits); the C API opens it without mapping.
#[cfg(target_pointer_width = "32")]
#[test]
fn a_terabyte_of_tensor_data_is_refused_clearly_in_a_32_bit_address_space() {
    let (path, _) = sparse_model("1tib.gguf", DIMS_512_GIB);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 1 << 40, "the sparse file is {size} bytes");
    let want = format!("the file is {size} bytes, more than a 32-bit address space can map");

    let Err(e) = MappedFile::open(&path) else {
        panic!("a {size}-byte file was mapped in a 32-bit address space")
    };
    assert_eq!(e.code(), gguf::ErrorCode::OutOfMemory, "{e}");
    assert!(e.to_string().contains(&want), "{e}");

    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the message is copied before the next call.
    unsafe {
        let h = gguf_open(c_path.as_ptr());
        assert!(!h.is_null());
        assert!(!gguf_is_mapped(h));
        assert_eq!(gguf_file_size(h), size);
        gguf_close(h);
    }
}

#[cfg(all(target_pointer_width = "64", target_os = "linux"))]
/// Minor page faults of this process so far (field 10 of /proc/self/stat).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) is parenthesised and may hold spaces: count from after it.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(7).unwrap().parse().unwrap()
}

// Needs the 1 TiB file mapped: 64-bit only (the 32-bit refusal is tested above). Page faults
// are counted in /proc/self/stat: Linux only.
#[cfg(all(target_pointer_width = "64", target_os = "linux"))]
#[test]
fn opening_never_touches_the_data_section() {
    let (path, _) = sparse_model("faults.gguf", DIMS_512_GIB);
    let header_pages = MappedFile::open(&path)
        .unwrap()
        .data_offset()
        .div_ceil(4096);
    let before = minor_faults();
    let f = MappedFile::open(&path).unwrap();
    let faults = minor_faults() - before;
    println!("opening faulted {faults} pages; the header is {header_pages} pages");
    // The header's pages, and a few for the allocator and the stack; touching even one
    // megabyte of the data section would cost 256 more.
    assert!(
        faults <= header_pages + 64,
        "opening faulted {faults} pages; the header is {header_pages} pages"
    );
    drop(f);
}
