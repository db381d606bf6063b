//! Opening from sources read by position: the header read in growing prefixes gives
//! exactly the parse (and the errors) of the whole file, sources that break their contract are
//! refused clearly, file descriptors at an offset, and tensor data read into caller buffers.

mod common;

use common::raw::{file, kv, le_u64, tensor_info, with_data};
use common::values::outcome;
use gguf::ffi::*;
use gguf::load::{self, LoadOptions};
use gguf::read_at::{FileAt, ReadAt};
use gguf::source;
use gguf::{
    ByteOrder, DataType, ErrorCode, GgufFile, MetadataValue, Model, OpenOptions, ValueType, Writer,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes in memory read by position, counting the reads; `declared` may say more than it has
/// (a source that ends early), and reads from `fail_at` on fail.
struct Mem {
    bytes: Vec<u8>,
    declared: u64,
    reads: AtomicU64,
    read_bytes: AtomicU64,
    fail_at: Option<u64>,
}

impl Mem {
    fn new(bytes: Vec<u8>) -> Mem {
        let declared = bytes.len() as u64;
        Mem {
            bytes,
            declared,
            reads: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            fail_at: None,
        }
    }
}

impl ReadAt for Mem {
    fn len(&self) -> u64 {
        self.declared
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> gguf::Result<usize> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if self.fail_at.is_some_and(|at| offset >= at) {
            return Err(gguf::Error::new(gguf::ErrorKind::FileUnusable {
                message: format!("the test source fails at offset {offset}"),
            }));
        }
        let start = (offset as usize).min(self.bytes.len());
        let n = dst.len().min(self.bytes.len() - start);
        dst[..n].copy_from_slice(&self.bytes[start..start + n]);
        self.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn describe(&self) -> String {
        "<test source>".to_string()
    }

    fn parallel(&self) -> bool {
        true
    }
}

fn through_reader(bytes: &[u8], first_chunk: u64) -> String {
    let source = Arc::new(Mem::new(bytes.to_vec()));
    outcome(&source::parse_source_from(source, first_chunk))
}

/// Corrupt files: each rule of the format broken by hand, every truncation and many byte
/// mutations of valid files in every layout.
fn corpus() -> Vec<Vec<u8>> {
    let mut files = vec![
        b"GGML\x03\0\0\0".to_vec(),
        b"GGU".to_vec(),
        file(1 << 63, 0, &[]),
        file(0, u64::MAX, &[]),
        file(0, 3, &kv("a", 0, &[1])),
        file(0, 1, &[&le_u64(u64::MAX)[..], b"k", &[0; 8]].concat()),
        file(0, 1, &kv("", 0, &[1, 0, 0, 0, 0])),
        file(0, 2, &[kv("a", 0, &[1]), kv("a", 0, &[2])].concat()),
        file(0, 1, &kv("a", 13, &[0; 8])),
        file(0, 1, &kv("a", 7, &[2])),
        file(
            0,
            1,
            &kv(
                "a",
                9,
                &[&4u32.to_le_bytes()[..], &le_u64(1 << 62)].concat(),
            ),
        ),
        with_data(file(1, 0, &tensor_info("t", &[4], 0, 0)), 8),
        with_data(file(1, 0, &tensor_info("t", &[4], 0, 3)), 64),
        with_data(file(1, 0, &tensor_info("t", &[4, 1, 1, 1, 1], 0, 0)), 64),
        with_data(file(1, 0, &tensor_info("t", &[4], 99, 0)), 64),
        with_data(file(1, 0, &tensor_info("t", &[3], 8, 0)), 64),
        with_data(
            file(
                2,
                0,
                &[tensor_info("t", &[4], 0, 0), tensor_info("t", &[4], 0, 32)].concat(),
            ),
            64,
        ),
        with_data(
            file(
                2,
                0,
                &[tensor_info("t", &[8], 0, 0), tensor_info("u", &[4], 0, 0)].concat(),
            ),
            64,
        ),
    ];
    for version in 1..=3 {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let bytes = common::rich_file(version, order, 20);
            for cut in (0..bytes.len()).step_by(3) {
                files.push(bytes[..cut].to_vec());
            }
            files.push(bytes);
        }
    }
    let base = common::rich_file(3, ByteOrder::Little, 20);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..common::rounds(3000) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut m = base.clone();
        let at = (x % m.len() as u64) as usize;
        m[at] = match (x >> 32) % 4 {
            0 => 0xff,
            1 => 0,
            2 => m[at].wrapping_add(1),
            _ => (x >> 40) as u8,
        };
        files.push(m);
    }
    files
}

#[test]
fn every_rule_gives_the_same_error_through_a_reader_as_through_memory() {
    let mut refused = 0;
    for bytes in corpus() {
        let expected = outcome(&GgufFile::from_bytes(&bytes[..]));
        refused += usize::from(!expected.starts_with("ok"));
        for chunk in [1, 5, 64, 1 << 18] {
            assert_eq!(
                through_reader(&bytes, chunk),
                expected,
                "first chunk {chunk}, file of {} bytes",
                bytes.len()
            );
        }
    }
    assert!(refused > 500, "the corpus breaks rules: {refused} refused");
}

#[test]
fn a_big_header_is_read_in_logarithmically_many_reads_and_not_much_past_its_end() {
    // A 262144-token vocabulary (about 3.4 MB of header) and 16 MiB of tensor data.
    let mut w = Writer::new();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        MetadataValue::Array(
            ValueType::String,
            (0..262_144)
                .map(|i| MetadataValue::string(format!("token-{i}")))
                .collect(),
        ),
    )
    .unwrap();
    w.add_tensor("big", &[4 << 20], DataType::F32, vec![7; 16 << 20])
        .unwrap();
    let bytes = w.to_bytes().unwrap();
    let header_end = GgufFile::from_bytes(&bytes[..]).unwrap().data_offset();
    let source = Arc::new(Mem::new(bytes.clone()));
    let f = source::parse_source(source.clone()).unwrap();
    assert_eq!(f.data_offset(), header_end);
    assert_eq!(f.file_size(), bytes.len() as u64);
    assert!(!f.has_data());
    let read = source.read_bytes.load(Ordering::Relaxed);
    let reads = source.reads.load(Ordering::Relaxed);
    // 256 KiB doubled until past the header: at most the header plus the last chunk.
    assert!(
        read >= header_end,
        "read {read} of a {header_end}-byte header"
    );
    assert!(
        read <= 2 * header_end,
        "read {read} bytes for a {header_end}-byte header"
    );
    let doublings = (header_end / source::FIRST_CHUNK).ilog2() as u64 + 2;
    assert!(
        reads <= doublings,
        "{reads} reads, expected at most {doublings}"
    );
}

#[test]
fn a_source_that_ends_early_or_fails_is_refused_naming_it_and_the_offset() {
    let bytes = common::rich_file(3, ByteOrder::Little, 2000);
    let header_end = GgufFile::from_bytes(&bytes[..]).unwrap().data_offset();
    // Declares more than it has, inside the header.
    let mut short = Mem::new(bytes[..100].to_vec());
    short.declared = bytes.len() as u64;
    let e = source::parse_source_from(Arc::new(short), 64)
        .err()
        .unwrap();
    assert_eq!(e.code(), ErrorCode::Io, "{e}");
    assert_eq!(e.offset(), Some(100), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("<test source>"), "{msg}");
    assert!(
        msg.contains("offset 100: the source <test source> ended early: it declared"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("declared {} bytes", bytes.len())),
        "{msg}"
    );
    // Fails outright.
    let mut failing = Mem::new(bytes.clone());
    failing.fail_at = Some(header_end / 2);
    let e = source::parse_source_from(Arc::new(failing), 64)
        .err()
        .unwrap();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(
        e.to_string().contains("the test source fails at offset"),
        "{e}"
    );
    // Fails past the header: the header parses, reading the data fails clearly.
    let mut no_data = Mem::new(bytes.clone());
    no_data.fail_at = Some(header_end);
    let model = Model::open_source("<short>", Arc::new(no_data)).unwrap();
    let mut dst = vec![0u8; 68];
    let e = load::read_tensor(&model, 0, 0, &mut dst).err().unwrap();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(
        e.to_string()
            .contains(&format!("fails at offset {header_end}")),
        "{e}"
    );
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sources");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn read_all(model: &Model<gguf::source::Source>, options: LoadOptions) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (0..model.tensor_count())
        .map(|i| vec![0xAA; model.tensor_at(i).unwrap().info.size as usize])
        .collect();
    let requests = out
        .iter_mut()
        .enumerate()
        .map(|(i, b)| (i, &mut b[..]))
        .collect();
    let mut last = 0;
    load::read_tensors(model, requests, options, &mut |done, total| {
        assert!(done >= last && done <= total);
        last = done;
        true
    })
    .unwrap();
    out
}

/// Every tensor read into one buffer laid out as the file (each tensor's address has its file
/// offset's remainder modulo 4096), so that direct reads land in place.
fn read_laid_out(model: &Model<gguf::source::Source>, options: LoadOptions) -> Vec<Vec<u8>> {
    let infos: Vec<_> = (0..model.tensor_count())
        .map(|i| model.tensor_at(i).unwrap().info)
        .collect();
    let end = infos.iter().map(|t| t.file_offset + t.size).max().unwrap() as usize;
    let mut buf = vec![0xAAu8; end + 4096];
    let skip = buf.as_ptr().align_offset(4096);
    let mut rest = &mut buf[skip..];
    let mut requests = Vec::new();
    let mut at = 0usize;
    let mut order: Vec<usize> = (0..infos.len()).collect();
    order.sort_by_key(|&i| infos[i].file_offset);
    for i in order {
        let t = &infos[i];
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(t.file_offset as usize - at);
        let (dst, tail) = tail.split_at_mut(t.size as usize);
        requests.push((i, dst));
        rest = tail;
        at = (t.file_offset + t.size) as usize;
    }
    load::read_tensors(model, requests, options, &mut |_, _| true).unwrap();
    infos
        .iter()
        .map(|t| buf[skip + t.file_offset as usize..][..t.size as usize].to_vec())
        .collect()
}

#[test]
fn read_tensors_fills_every_buffer_from_every_kind_of_source() {
    // Small tensors (merged reads) and ones over 8 MiB (split reads).
    let (small, small_data) = common::model_file(40, 1000);
    let (big, big_data) = common::model_file(3, 3 << 20);
    for (name, bytes, data) in [
        ("small.gguf", small, small_data),
        ("big.gguf", big, big_data),
    ] {
        let path = tmp(name);
        std::fs::write(&path, &bytes).unwrap();
        let mapped = Model::open(&path, OpenOptions::default()).unwrap();
        let unmapped = Model::open(
            &path,
            OpenOptions {
                no_map: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(!unmapped.first().source().in_memory());
        let file = std::fs::File::open(&path).unwrap();
        let at = FileAt::new(file, 0, bytes.len() as u64, "fd".into());
        let from_fd = Model::open_source("fd", Arc::new(at)).unwrap();
        let from_mem = Model::open_source("mem", Arc::new(Mem::new(bytes.clone()))).unwrap();
        for model in [&mapped, &unmapped, &from_fd, &from_mem] {
            for threads in [1, 3] {
                for direct in [false, true] {
                    let got = read_all(model, LoadOptions { threads, direct });
                    assert!(got == data, "{name}: {threads} threads, direct {direct}");
                    let got = read_laid_out(model, LoadOptions { threads, direct });
                    assert!(
                        got == data,
                        "{name}: laid out, {threads} threads, direct {direct}"
                    );
                }
            }
            // One tensor, in part.
            let mut part = vec![0u8; 100];
            load::read_tensor(model, 1, 36, &mut part).unwrap();
            assert_eq!(part, data[1][36..136]);
            let too_far = load::read_tensor(model, 1, data[1].len() as u64 - 99, &mut part);
            assert_eq!(too_far.err().unwrap().code(), ErrorCode::InvalidArgument);
        }
    }
}

#[test]
fn a_progress_callback_can_cancel_the_load() {
    let (bytes, _) = common::model_file(4, 3 << 20);
    let model = Model::open_source("mem", Arc::new(Mem::new(bytes))).unwrap();
    let mut out: Vec<Vec<u8>> = (0..4).map(|_| vec![0; 12 << 20]).collect();
    let requests = out
        .iter_mut()
        .enumerate()
        .map(|(i, b)| (i, &mut b[..]))
        .collect();
    let mut calls = 0;
    let e = load::read_tensors(
        &model,
        requests,
        LoadOptions::default(),
        &mut |done, total| {
            calls += 1;
            assert_eq!(total, 4 * (12 << 20));
            done == 0
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    assert_eq!(calls, 2);
}

#[test]
fn a_split_model_opens_through_readers_with_its_keys_checked() {
    let (bytes, data) = common::model_file(6, 100);
    let whole = GgufFile::from_bytes(&bytes[..]).unwrap();
    let mut w = Writer::new();
    w.copy_metadata_from(&whole).unwrap();
    common::add_tensors_from(&mut w, &whole);
    let shards: Vec<Vec<u8>> = w
        .into_shards(2)
        .unwrap()
        .iter()
        .map(|s| s.to_bytes().unwrap())
        .collect();
    assert_eq!(shards.len(), 3);
    let sources = |order: &[usize]| -> Vec<(String, Arc<dyn ReadAt>)> {
        order
            .iter()
            .map(|&i| {
                let s: Arc<dyn ReadAt> = Arc::new(Mem::new(shards[i].clone()));
                (format!("shard{i}"), s)
            })
            .collect()
    };
    let model = Model::open_sources(sources(&[0, 1, 2])).unwrap();
    assert_eq!(model.tensor_count(), 6);
    assert_eq!(read_all(&model, LoadOptions::default()), data);
    let e = Model::open_sources(sources(&[0, 2, 1])).err().unwrap();
    assert_eq!(e.code(), ErrorCode::ShardMismatch);
    assert!(e.to_string().contains("shard2"), "{e}");
    assert!(e.message().contains("expected split.no 1, found 2"), "{e}");
    let e = Model::open_sources(sources(&[0, 1])).err().unwrap();
    assert_eq!(e.code(), ErrorCode::ShardMismatch);
    assert!(
        e.message()
            .contains("split.count is 3, but 2 shards were given"),
        "{e}"
    );
}

/// `embedded` inside a file, after `before` bytes of something else and followed by junk.
// The descriptor test that uses it is Unix's; c_tests/test_sources.c opens members through C
// runtime descriptors on every platform, Windows included.
#[cfg(unix)]
fn tar_member(embedded: &[u8], before: usize, name: &str) -> PathBuf {
    let mut outer = vec![0x5Au8; before];
    outer.extend_from_slice(embedded);
    outer.extend_from_slice(&[0xA5; 777]);
    let path = tmp(name);
    std::fs::write(&path, outer).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn a_file_inside_another_opens_from_a_descriptor_the_caller_then_closes() {
    use std::os::fd::IntoRawFd;
    let (bytes, data) = common::model_file(5, 300);
    for before in [0usize, 1000, 4096, 12345] {
        let path = tar_member(&bytes, before, &format!("member{before}.tar"));
        for flags in [0, OpenFlag::NoMap as u32] {
            let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
            let h = gguf_open_fd(fd, before as u64, bytes.len() as u64, flags);
            assert!(!h.is_null(), "{}", common::last_error());
            // SAFETY: `fd` is ours and not used again.
            assert_eq!(unsafe { libc::close(fd) }, 0);
            unsafe {
                assert_eq!(gguf_file_size(h), bytes.len() as u64);
                assert_eq!(gguf_is_mapped(h), flags == 0);
                for k in 0..5u64 {
                    let info = gguf_get_tensor_by_index(h, k);
                    let whole = GgufFile::from_bytes(&bytes[..]).unwrap();
                    assert_eq!(
                        (*info).file_offset,
                        whole.tensor_at(k as usize).unwrap().file_offset
                    );
                    let p = gguf_tensor_data(h, info);
                    if flags == 0 {
                        let got =
                            std::slice::from_raw_parts(p.cast::<u8>(), (*info).size_bytes as usize);
                        assert_eq!(got, &data[k as usize][..]);
                    } else {
                        assert!(p.is_null());
                        assert_eq!(gguf_last_error_code(), ErrorCode::Unsupported as u32);
                        assert!(common::last_error().contains("gguf_read_tensor"));
                    }
                    let mut dst = vec![0u8; (*info).size_bytes as usize];
                    assert!(gguf_read_tensor(
                        h,
                        info,
                        0,
                        dst.as_mut_ptr().cast(),
                        dst.len() as u64
                    ));
                    assert_eq!(dst, data[k as usize]);
                }
                gguf_close(h);
            }
        }
        // Length 0: to the end of the file, which here has junk after the model; that junk is
        // padding after the last tensor, so the file still opens.
        let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
        let h = gguf_open_fd(fd, before as u64, 0, 0);
        assert!(!h.is_null(), "{}", common::last_error());
        unsafe {
            assert_eq!(gguf_file_size(h), bytes.len() as u64 + 777);
            gguf_close(h);
            libc::close(fd);
        }
    }
    // Past the end, and a descriptor that is not open.
    let path = tar_member(&bytes, 10, "past.tar");
    let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
    assert!(gguf_open_fd(fd, 10, bytes.len() as u64 + 1000, 0).is_null());
    assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
    unsafe { libc::close(fd) };
    assert!(gguf_open_fd(fd, 0, 0, 0).is_null());
    assert_eq!(gguf_last_error_code(), ErrorCode::Io as u32);
    assert!(common::last_error().contains(&format!("file descriptor {fd}")));
    // A corrupt member: errors name the descriptor and offsets relative to the member.
    let mut bad = bytes.clone();
    bad[0] = b'X';
    let path = tar_member(&bad, 4000, "bad.tar");
    let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
    for flags in [0, OpenFlag::NoMap as u32] {
        assert!(gguf_open_fd(fd, 4000, bad.len() as u64, flags).is_null());
        assert_eq!(gguf_last_error_code(), ErrorCode::BadMagic as u32);
        assert_eq!(gguf_last_error_offset(), 0);
        assert!(common::last_error().contains(&format!("file descriptor {fd} at offset 4000")));
    }
    unsafe { libc::close(fd) };
}

#[test]
fn a_path_opened_without_mapping_reads_by_position() {
    let (bytes, data) = common::model_file(3, 50);
    let path = tmp("nomap.gguf");
    std::fs::write(&path, &bytes).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    unsafe {
        let h = gguf_open_ex(c.as_ptr(), OpenFlag::NoMap as u32);
        assert!(!h.is_null(), "{}", common::last_error());
        assert!(!gguf_is_mapped(h));
        let infos: Vec<*const GGUFTensorInfo> =
            (0..3).map(|k| gguf_get_tensor_by_index(h, k)).collect();
        let mut out: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 200]).collect();
        let dsts: Vec<*mut std::ffi::c_void> =
            out.iter_mut().map(|b| b.as_mut_ptr().cast()).collect();
        assert!(gguf_read_tensors(
            h,
            infos.as_ptr(),
            dsts.as_ptr(),
            3,
            0,
            0,
            None,
            std::ptr::null_mut()
        ));
        assert_eq!(out, data);
        // Unknown read flags.
        assert!(!gguf_read_tensors(
            h,
            infos.as_ptr(),
            dsts.as_ptr(),
            3,
            0,
            2,
            None,
            std::ptr::null_mut()
        ));
        assert_eq!(gguf_last_error_code(), ErrorCode::InvalidArgument as u32);
        gguf_close(h);
        let h = gguf_open(c.as_ptr());
        assert!(gguf_is_mapped(h));
        gguf_close(h);
    }
}

/// A sparse file of more than 4 GiB: a tensor of 5 GiB whose last bytes are written.
fn sparse_model() -> (PathBuf, u64, Vec<u8>) {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("sparse"))
        .unwrap();
    w.add_tensor("small", &[8], DataType::F32, vec![3; 32])
        .unwrap();
    w.add_tensor_info("huge", &[5 << 30], DataType::I8).unwrap();
    let header = w.header_bytes().unwrap();
    let offsets = w.tensor_offsets().unwrap();
    let path = tmp("sparse-5gib.gguf");
    let mut f = std::fs::File::create(&path).unwrap();
    use std::io::{Seek, SeekFrom, Write};
    f.write_all(&header).unwrap();
    f.seek(SeekFrom::Start(header.len() as u64 + offsets[0]))
        .unwrap();
    f.write_all(&[3; 32]).unwrap();
    let end = header.len() as u64 + offsets[1] + (5u64 << 30);
    let tail: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    f.seek(SeekFrom::Start(end - tail.len() as u64)).unwrap();
    f.write_all(&tail).unwrap();
    (path, end, tail)
}

/// On a 32-bit target the file is larger than the address space: it opens without mapping
/// (gguf_is_mapped says so), and its data is read by position, past 4 GiB. On a 64-bit one it
/// is mapped; the flag gives the 32-bit behaviour there too.
#[test]
fn a_file_larger_than_the_address_space_opens_without_mapping() {
    let (path, end, tail) = sparse_model();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let automatic = usize::BITS < 64;
    for flags in [0, OpenFlag::NoMap as u32] {
        unsafe {
            let h = gguf_open_ex(c.as_ptr(), flags);
            assert!(!h.is_null(), "{}", common::last_error());
            let unmapped = automatic || flags != 0;
            assert_eq!(gguf_is_mapped(h), !unmapped);
            assert_eq!(gguf_file_size(h), end);
            let huge = gguf_get_tensor(h, c"huge".as_ptr());
            assert_eq!((*huge).size_bytes, 5 << 30);
            assert!((*huge).file_offset + (*huge).size_bytes > 1 << 32);
            let mut got = vec![0u8; tail.len()];
            let at = (*huge).size_bytes - tail.len() as u64;
            assert!(gguf_read_tensor(
                h,
                huge,
                at,
                got.as_mut_ptr().cast(),
                got.len() as u64
            ));
            assert_eq!(got, tail);
            let small = gguf_get_tensor(h, c"small".as_ptr());
            let mut four = [0u8; 32];
            let dsts = [four.as_mut_ptr().cast::<std::ffi::c_void>()];
            assert!(gguf_read_tensors(
                h,
                &small,
                dsts.as_ptr(),
                1,
                0,
                1,
                None,
                std::ptr::null_mut()
            ));
            assert_eq!(four, [3; 32]);
            if unmapped {
                assert!(gguf_tensor_data(h, huge).is_null());
            }
            gguf_close(h);
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// Adjacent tensors are read together: 40 small tensors in one read, big ones in 8 MiB reads.
#[test]
fn adjacent_tensors_are_read_together() {
    let (small, data) = common::model_file(40, 1000);
    let source = Arc::new(Mem::new(small));
    let model = Model::open_source("mem", source.clone()).unwrap();
    let before = source.reads.load(Ordering::Relaxed);
    assert_eq!(read_all(&model, LoadOptions::default()), data);
    assert_eq!(source.reads.load(Ordering::Relaxed) - before, 1);

    let (big, data) = common::model_file(2, 5 << 20); // 2 tensors of 20 MiB
    let source = Arc::new(Mem::new(big));
    let model = Model::open_source("mem", source.clone()).unwrap();
    let before = source.reads.load(Ordering::Relaxed);
    assert_eq!(read_all(&model, LoadOptions::default()), data);
    let reads = source.reads.load(Ordering::Relaxed) - before;
    // 40 MiB in reads of at most 8 MiB, each cut at an 8 MiB boundary of the file.
    assert!((5..=7).contains(&reads), "{reads} reads");
}

/// Digests of tensor data read by position equal those of the mapped data (`gguf-inspect
/// --hash` over a reader or a URL).
#[test]
fn tensor_digests_read_by_position_match_the_mapped_ones() {
    let (bytes, _) = common::model_file(3, 3 << 20); // 12 MiB tensors: digested in several reads
    let path = tmp("digest.gguf");
    std::fs::write(&path, &bytes).unwrap();
    let by_path = Model::open(&path, OpenOptions::default()).unwrap();
    let by_reader = Model::open_source("mem", Arc::new(Mem::new(bytes))).unwrap();
    for alg in [gguf::DigestAlgorithm::Sha256, gguf::DigestAlgorithm::Xxh3] {
        for i in 0..3 {
            let a = load::digest_tensor(&by_path, i, alg).unwrap();
            let b = load::digest_tensor(&by_reader, i, alg).unwrap();
            let data = by_path.tensor_at(i).unwrap().info.data;
            assert_eq!(a.as_bytes(), gguf::digest::digest(alg, data).as_bytes());
            assert_eq!(a.as_bytes(), b.as_bytes());
        }
    }
}

/// A source declaring a terabyte whose header announces more than any real header holds (a
/// billion tensors; a 100 GB key): refused once the header passes `source::MAX_HEADER`, having
/// read no more than its first chunk and allocated nothing for the announced entries.
#[test]
fn a_header_claiming_gigabytes_is_refused_at_the_limit() {
    let mut many_tensors = b"GGUF".to_vec();
    many_tensors.extend(3u32.to_le_bytes());
    many_tensors.extend(1_000_000_000u64.to_le_bytes());
    many_tensors.extend(0u64.to_le_bytes());
    let mut long_key = b"GGUF".to_vec();
    long_key.extend(3u32.to_le_bytes());
    long_key.extend(0u64.to_le_bytes());
    long_key.extend(1u64.to_le_bytes());
    long_key.extend(100_000_000_000u64.to_le_bytes());
    for mut bytes in [many_tensors, long_key] {
        bytes.resize(1 << 20, 0);
        let mut mem = Mem::new(bytes);
        mem.declared = 1 << 40;
        let mem = Arc::new(mem);
        let err = match source::parse_source(mem.clone()) {
            Ok(_) => panic!("a terabyte header was accepted"),
            Err(e) => e,
        };
        assert_eq!(err.code(), ErrorCode::OutOfMemory, "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("the header needs at least")
                && msg.contains(&format!("more than the {} bytes", source::MAX_HEADER)),
            "{msg}"
        );
        assert!(msg.contains("<test source>"), "{msg}");
        // The announced sizes are known from the first chunk: nothing more is read.
        let read = mem.read_bytes.load(Ordering::Relaxed);
        assert_eq!(read, source::FIRST_CHUNK, "{read} bytes read");
    }
}

/// Tensor values and their validation read the data by position where it is not in memory: the
/// same floats, the same verdict and the same message as over the mapping (and never a verdict
/// on the empty bytes a header-only handle has in memory).
#[test]
fn values_and_validation_read_by_position_as_over_the_map() {
    let mut q8 = Vec::new();
    for block in 0..40u16 {
        // d = 0.5, then NaN (0x7e00) in block 37.
        let d: u16 = if block == 37 { 0x7e00 } else { 0x3800 };
        q8.extend(d.to_le_bytes());
        q8.extend((0..32).map(|i| (i as u8).wrapping_mul(7).wrapping_add(block as u8)));
    }
    let f16: Vec<u8> = (0..64u16)
        .flat_map(|i| (0x3c00 + i).to_le_bytes())
        .collect();
    let mut w = Writer::new();
    w.add_tensor("q8", &[32 * 8, 5], DataType::Q8_0, q8)
        .unwrap();
    w.add_tensor("h", &[64], DataType::F16, f16).unwrap();
    let path = tmp("values-by-position.gguf");
    w.write_file(&path).unwrap();
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let outcome = |flags: u32| unsafe {
        let h = gguf_open_ex(c_path.as_ptr(), flags);
        assert!(!h.is_null(), "{}", common::last_error());
        assert_eq!(gguf_is_mapped(h), flags == 0);
        let mut got = Vec::new();
        for k in 0..2u64 {
            let info = gguf_get_tensor_by_index(h, k);
            let n = (*info).n_elements as usize;
            let mut all = vec![0f32; n];
            assert!(gguf_tensor_to_float(
                h,
                info,
                0,
                n as u64 / (*info).dims[0],
                all.as_mut_ptr()
            ));
            // Rows from the middle, too.
            let row = (*info).dims[0] as usize;
            let rows = (n / row).min(2);
            let mut some = vec![0f32; rows * row];
            let first = (n / row - rows) as u64;
            assert!(gguf_tensor_to_float(
                h,
                info,
                first,
                rows as u64,
                some.as_mut_ptr()
            ));
            let valid = gguf_validate_tensor(h, info);
            let why = if valid {
                String::new()
            } else {
                common::last_error()
            };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            got.push((bits(&all), bits(&some), valid, why));
        }
        gguf_close(h);
        got
    };
    let mapped = outcome(0);
    let by_position = outcome(OpenFlag::NoMap as u32);
    assert_eq!(mapped, by_position);
    assert!(!mapped[0].2 && mapped[1].2, "{mapped:?}");
    assert!(mapped[0].3.contains("block 37"), "{}", mapped[0].3);
}

/// Every tensor of the handle `h` read with `gguf_read_tensors` (`flags`, one thread) and, one at
/// a time, with `gguf_read_tensor`; both must agree.
fn read_every_tensor(h: GGUFFile, flags: u32) -> Vec<Vec<u8>> {
    // SAFETY: `h` is a live handle; every buffer holds its tensor's size.
    unsafe {
        let (ok, infos, bufs) = common::read_tensors(h, gguf_tensor_count(h), 1, flags, None);
        assert!(ok, "{}", common::last_error());
        for (k, &info) in infos.iter().enumerate() {
            let mut one = vec![0u8; (*info).size_bytes as usize];
            let ok = gguf_read_tensor(h, info, 0, one.as_mut_ptr().cast(), one.len() as u64);
            assert!(ok, "{}", common::last_error());
            assert_eq!(one, bufs[k]);
        }
        bufs
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_descriptor_opened_with_o_direct_is_read_buffered_and_keeps_its_flag() {
    use std::os::fd::IntoRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let (bytes, data) = common::model_file(4, 3001);
    let path = tar_member(&bytes, 0, "direct.gguf");
    let outer = tar_member(&bytes, 4096 + 100, "direct.tar");
    for (path, offset) in [(&path, 0u64), (&outer, 4196)] {
        for flags in [0, OpenFlag::NoMap as u32] {
            let fd = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .unwrap()
                .into_raw_fd();
            let h = gguf_open_fd(fd, offset, bytes.len() as u64, flags);
            assert!(!h.is_null(), "{}", common::last_error());
            // SAFETY: `h` is live; `fd` is ours.
            unsafe {
                assert_eq!(gguf_is_mapped(h), flags == 0);
                assert_eq!(read_every_tensor(h, 0), data);
                assert_eq!(read_every_tensor(h, ReadFlag::Direct as u32), data);
                gguf_close(h);
                // The caller's descriptor keeps its flag.
                assert_ne!(libc::fcntl(fd, libc::F_GETFL) & libc::O_DIRECT, 0);
                libc::close(fd);
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn descriptors_that_are_not_readable_regular_files_are_refused_saying_what_they_are() {
    use std::os::fd::{AsRawFd, IntoRawFd};
    use std::os::unix::fs::OpenOptionsExt;
    let (bytes, data) = common::model_file(3, 500);
    let path = tar_member(&bytes, 0, "flags.gguf");
    let refused = |fd: i32, needle: &str| {
        for flags in [0, OpenFlag::NoMap as u32] {
            assert!(gguf_open_fd(fd, 0, 0, flags).is_null(), "{needle}");
            assert_eq!(gguf_last_error_code(), ErrorCode::Io as u32, "{needle}");
            let msg = common::last_error();
            assert!(
                msg.contains(&format!("file descriptor {fd} {needle}")),
                "{msg}"
            );
            assert!(!msg.contains("at offset"), "{msg}");
        }
    };
    let wronly = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    refused(wronly.as_raw_fd(), "is open for writing only (O_WRONLY)");
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let o_path = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(&path)
            .unwrap();
        refused(o_path.as_raw_fd(), "is an O_PATH descriptor");
    }
    // Read-write with O_APPEND, and O_NONBLOCK: read as any other.
    let before = std::fs::read(&path).unwrap();
    for custom in [libc::O_APPEND, libc::O_NONBLOCK] {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(custom == libc::O_APPEND)
            .custom_flags(custom)
            .open(&path)
            .unwrap();
        for flags in [0, OpenFlag::NoMap as u32] {
            let h = gguf_open_fd(file.as_raw_fd(), 0, 0, flags);
            assert!(!h.is_null(), "{}", common::last_error());
            assert_eq!(read_every_tensor(h, 0), data);
            // SAFETY: `h` is live.
            unsafe { gguf_close(h) };
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the file is unchanged"
        );
    }
    // A pipe (non-blocking, as a FIFO would be opened), a socket, a directory.
    let mut pipe = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: F_SETFL on a descriptor of ours.
    unsafe { libc::fcntl(pipe[0], libc::F_SETFL, libc::O_NONBLOCK) };
    refused(pipe[0], "is a FIFO (named pipe)");
    // SAFETY: ours, not used again.
    unsafe { (libc::close(pipe[0]), libc::close(pipe[1])) };
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    refused(a.as_raw_fd(), "is a socket");
    let null = std::fs::File::open("/dev/null").unwrap();
    refused(null.as_raw_fd(), "is a character device");
    let dir = std::fs::File::open(tmp("")).unwrap().into_raw_fd();
    refused(dir, "is a directory");
    // SAFETY: ours, not used again.
    unsafe { libc::close(dir) };
}

#[cfg(unix)]
#[test]
fn a_failed_descriptor_read_says_each_offset_once() {
    use std::os::fd::IntoRawFd;
    // The open file itself fails every read: it is open for writing only.
    let path = tmp("unreadable.bin");
    std::fs::write(&path, vec![0u8; 10000]).unwrap();
    for (base, name, at) in [
        (0u64, "file descriptor 9", 8160),
        (100, "file descriptor 9 at offset 100", 8260),
    ] {
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let source = FileAt::new(file, base, 9000, name.to_string())
            .file_named("file descriptor 9".to_string());
        assert_eq!(source.describe(), name);
        let e = source.read_at(8160, &mut [0u8; 16]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Io);
        assert_eq!(
            e.message(),
            format!(
                "cannot read file descriptor 9 at offset {at}: Bad file descriptor (os error 9)"
            )
        );
    }
    // Through the C API: a file truncated under a handle that reads it by position.
    let (bytes, _) = common::model_file(3, 5000);
    for offset in [0u64, 700] {
        let path = tar_member(&bytes, offset as usize, "shrinks.tar");
        let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
        let h = gguf_open_fd(fd, offset, bytes.len() as u64, OpenFlag::NoMap as u32);
        assert!(!h.is_null(), "{}", common::last_error());
        // SAFETY: `h` is live; the buffer holds the tensor.
        unsafe {
            let info = gguf_get_tensor_by_index(h, 2);
            let cut = offset + (*info).file_offset;
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(cut)
                .unwrap();
            let mut dst = vec![0u8; (*info).size_bytes as usize];
            assert!(!gguf_read_tensor(
                h,
                info,
                0,
                dst.as_mut_ptr().cast(),
                dst.len() as u64
            ));
            let msg = common::last_error();
            let name = match offset {
                0 => format!("file descriptor {fd}"),
                _ => format!("file descriptor {fd} at offset {offset}"),
            };
            let rel = (*info).file_offset;
            assert_eq!(
                msg,
                format!(
                    "gguf: {name}: offset {rel}: the source {name} ended early: it declared {} \
                     bytes, and {} more were needed",
                    bytes.len(),
                    (*info).size_bytes
                )
            );
            gguf_close(h);
            libc::close(fd);
        }
    }
}

#[cfg(unix)]
#[test]
fn the_callers_descriptor_may_be_closed_while_other_threads_read_the_handle() {
    use std::os::fd::IntoRawFd;
    let (bytes, data) = common::model_file(4, 20000);
    let path = tar_member(&bytes, 333, "closed.tar");
    for flags in [0, OpenFlag::NoMap as u32] {
        let fd = std::fs::File::open(&path).unwrap().into_raw_fd();
        let h = gguf_open_fd(fd, 333, bytes.len() as u64, flags);
        assert!(!h.is_null(), "{}", common::last_error());
        let handle = h as usize;
        let started = std::sync::Barrier::new(3);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    started.wait();
                    for _ in 0..20 {
                        assert_eq!(read_every_tensor(handle as GGUFFile, 0), data);
                    }
                });
            }
            started.wait();
            // SAFETY: `fd` is ours; the handle has its own descriptor.
            assert_eq!(unsafe { libc::close(fd) }, 0);
        });
        // SAFETY: no other thread uses `h` now.
        unsafe { gguf_close(h) };
    }
}

/// A read callback over bytes in memory that misbehaves as `mode` says, recording its calls.
struct Callback {
    bytes: Vec<u8>,
    mode: Mode,
    calls: Vec<(u64, u64, i64)>,
    /// The handle it serves, for a callback that reads it.
    handle: GGUFFile,
    /// What the read of its own handle gave: the call's result, code and message.
    reentry: Option<(bool, u32, String)>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    /// Half of every request (at least one byte).
    Half,
    /// Half of the request that reaches `.0`, all of every other.
    HalfAt(u64),
    /// One byte, then all, then one byte, ...
    Alternate,
    /// Returns this count, whatever was asked.
    Returns(i64),
    /// Returns this count from offset `.0` on.
    ReturnsFrom(u64, i64),
    /// Reads its own handle (tensor 0) once the handle exists.
    Reenter,
}

unsafe extern "C" fn callback_read(
    user: *mut std::ffi::c_void,
    offset: u64,
    dst: *mut std::ffi::c_void,
    size: u64,
) -> i64 {
    // SAFETY: `user` is the test's `Callback`, used by one call at a time.
    let cb = unsafe { &mut *user.cast::<Callback>() };
    let left = cb.bytes.len() as u64 - offset.min(cb.bytes.len() as u64);
    let all = size.min(left);
    let n = match cb.mode {
        Mode::Half => all.div_ceil(2),
        Mode::HalfAt(at) if offset <= at && at < offset + size => all.div_ceil(2),
        Mode::Alternate if cb.calls.len() % 2 == 0 => all.min(1),
        Mode::Returns(n) => {
            cb.calls.push((offset, size, n));
            return n;
        }
        // The bytes before `from`, as a short read.
        Mode::ReturnsFrom(from, _) if offset < from && offset + size > from => from - offset,
        Mode::ReturnsFrom(from, n) if offset >= from => {
            cb.calls.push((offset, size, n));
            return n;
        }
        Mode::Reenter if !cb.handle.is_null() && cb.reentry.is_none() => {
            let mut byte = 0u8;
            // SAFETY: the handle is live; one byte is written to `byte`.
            let ok = unsafe {
                let info = gguf_get_tensor_by_index(cb.handle, 0);
                gguf_read_tensor(cb.handle, info, 0, (&raw mut byte).cast(), 1)
            };
            cb.reentry = Some((ok, gguf_last_error_code(), common::last_error()));
            all
        }
        _ => all,
    };
    // SAFETY: `dst` holds `size >= n` bytes; the source holds `n` from `offset`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            cb.bytes.as_ptr().add(offset as usize),
            dst.cast::<u8>(),
            n as usize,
        )
    };
    cb.calls.push((offset, size, n as i64));
    n as i64
}

fn callback(bytes: &[u8], mode: Mode) -> Box<Callback> {
    Box::new(Callback {
        bytes: bytes.to_vec(),
        mode,
        calls: Vec::new(),
        handle: std::ptr::null_mut(),
        reentry: None,
    })
}

fn open_callback(cb: &mut Callback, size: u64) -> GGUFFile {
    gguf_open_reader(Some(callback_read), std::ptr::from_mut(cb).cast(), size, 0)
}

#[test]
fn a_read_callback_returning_less_than_asked_is_asked_again_for_the_rest() {
    // A header of about 1.3 MiB: read in several growing requests.
    let mut w = Writer::new();
    let tokens = (0..60000)
        .map(|i| MetadataValue::string(format!("token number {i}")))
        .collect();
    w.add_metadata("tokens", MetadataValue::Array(ValueType::String, tokens))
        .unwrap();
    let mut data = Vec::new();
    for k in 0..3u8 {
        let t: Vec<u8> = (0..40000u32).map(|i| (i as u8) ^ k).collect();
        w.add_tensor(format!("t{k}"), &[10000], DataType::F32, t.clone())
            .unwrap();
        data.push(t);
    }
    let bytes = w.to_bytes().unwrap();
    let header_end = GgufFile::from_bytes(&bytes[..]).unwrap().data_offset();
    assert!(header_end > 1 << 20, "{header_end}");
    for mode in [
        Mode::Half,
        Mode::HalfAt(1 << 20),
        Mode::HalfAt(header_end - 1),
        Mode::Alternate,
    ] {
        let mut cb = callback(&bytes, mode);
        let h = open_callback(&mut cb, bytes.len() as u64);
        assert!(!h.is_null(), "{mode:?}: {}", common::last_error());
        assert_eq!(read_every_tensor(h, 0), data, "{mode:?}");
        // SAFETY: `h` is live.
        unsafe { gguf_close(h) };
        // Every short answer was followed by a request for the rest, where it stopped.
        let calls = &cb.calls;
        let mut shorts = 0;
        for pair in calls.windows(2) {
            let ((offset, size, n), (next, rest, _)) = (pair[0], pair[1]);
            if (n as u64) < size && offset + (n as u64) < bytes.len() as u64 {
                shorts += 1;
                assert_eq!(
                    (next, rest),
                    (offset + n as u64, size - n as u64),
                    "{mode:?}"
                );
            }
        }
        assert!(shorts >= 1, "{mode:?}: {calls:?}");
    }
}

#[test]
fn read_callbacks_that_misbehave_are_refused_naming_the_offset() {
    let (bytes, _) = common::model_file(3, 1000);
    let cases: [(Mode, u64, ErrorCode, &str); 7] = [
        (Mode::Returns(-1), 0, ErrorCode::Io, "failed (returned -1)"),
        (Mode::Returns(-7), 0, ErrorCode::Io, "failed (returned -7)"),
        (
            Mode::Returns(i64::MIN),
            0,
            ErrorCode::Io,
            "failed (returned",
        ),
        (
            Mode::Returns(i64::MAX),
            0,
            ErrorCode::Io,
            "returned 9223372036854775807 bytes when asked",
        ),
        (Mode::ReturnsFrom(64, 0), 64, ErrorCode::Io, "ended early"),
        (
            Mode::ReturnsFrom(64, 1 << 40),
            64,
            ErrorCode::Io,
            "when asked for",
        ),
        (
            Mode::ReturnsFrom(100, -1),
            100,
            ErrorCode::Io,
            "failed (returned -1)",
        ),
    ];
    for (mode, at, code, needle) in cases {
        let mut cb = callback(&bytes, mode);
        assert!(
            open_callback(&mut cb, bytes.len() as u64).is_null(),
            "{mode:?}"
        );
        assert_eq!(gguf_last_error_code(), code as u32, "{mode:?}");
        assert_eq!(gguf_last_error_offset(), at as i64, "{mode:?}");
        let msg = common::last_error();
        assert!(
            msg.contains("<reader>") && msg.contains(needle),
            "{mode:?}: {msg}"
        );
        // Refused at the first bad answer, never asked again.
        assert_eq!(cb.calls.last().unwrap().0, at, "{mode:?}");
    }
    // Past the header: the handle opens, reading data fails the same way.
    let mut cb = callback(&bytes, Mode::Half);
    let h = open_callback(&mut cb, bytes.len() as u64);
    assert!(!h.is_null(), "{}", common::last_error());
    cb.mode = Mode::Returns(-3);
    // SAFETY: `h` is live; the buffer holds the tensor.
    unsafe {
        let info = gguf_get_tensor_by_index(h, 0);
        let mut dst = vec![0u8; (*info).size_bytes as usize];
        assert!(!gguf_read_tensor(
            h,
            info,
            0,
            dst.as_mut_ptr().cast(),
            dst.len() as u64
        ));
        assert_eq!(gguf_last_error_code(), ErrorCode::Io as u32);
        assert!(common::last_error().contains("failed (returned -3)"));
        gguf_close(h);
    }
    // A size larger than the source: ends early; size 0: nothing to read.
    let mut cb = callback(&bytes, Mode::Half);
    assert!(open_callback(&mut cb, u64::MAX).is_null());
    assert!(common::last_error().contains("ended early"));
    assert!(open_callback(&mut cb, 0).is_null());
    assert_eq!(gguf_last_error_code(), ErrorCode::Truncated as u32);
}

#[test]
fn a_read_callback_reading_its_own_handle_fails_instead_of_waiting_for_itself() {
    let (bytes, data) = common::model_file(3, 1000);
    let mut cb = callback(&bytes, Mode::Reenter);
    let h = open_callback(&mut cb, bytes.len() as u64);
    assert!(!h.is_null(), "{}", common::last_error());
    cb.handle = h;
    // The outer read works (the callback answers in full after its own read failed).
    assert_eq!(read_every_tensor(h, 0), data);
    let (ok, code, msg) = cb.reentry.clone().expect("the callback read its handle");
    assert!(!ok);
    assert_eq!(code, ErrorCode::InvalidArgument as u32, "{msg}");
    assert!(
        msg.contains(
            "the read callback of <reader> called the library to read the handle it serves"
        ),
        "{msg}"
    );
    // Another handle over the same bytes may be read from inside a callback.
    let mut other = callback(&bytes, Mode::Half);
    let h2 = open_callback(&mut other, bytes.len() as u64);
    assert!(!h2.is_null());
    let mut outer = callback(&bytes, Mode::Reenter);
    let h3 = open_callback(&mut outer, bytes.len() as u64);
    outer.handle = h2;
    assert_eq!(read_every_tensor(h3, 0), data);
    let (ok, _, msg) = outer.reentry.clone().unwrap();
    assert!(ok, "{msg}");
    // A cycle: A's callback reads B, whose callback reads A (whose lock this thread holds).
    let mut a = callback(&bytes, Mode::Reenter);
    let mut b = callback(&bytes, Mode::Reenter);
    let ha = open_callback(&mut a, bytes.len() as u64);
    let hb = open_callback(&mut b, bytes.len() as u64);
    a.handle = hb;
    b.handle = ha;
    assert_eq!(read_every_tensor(ha, 0), data);
    let (ok, code, msg) = b.reentry.clone().unwrap();
    assert!(!ok && code == ErrorCode::InvalidArgument as u32, "{msg}");
    assert!(a.reentry.clone().unwrap().0);
    // SAFETY: the handles are live and used by no other thread.
    unsafe {
        gguf_close(h);
        gguf_close(h2);
        gguf_close(h3);
        gguf_close(ha);
        gguf_close(hb);
    }
}

/// A callback that takes its time, so that another thread's read finds it running.
unsafe extern "C" fn slow_read(
    user: *mut std::ffi::c_void,
    offset: u64,
    dst: *mut std::ffi::c_void,
    size: u64,
) -> i64 {
    std::thread::sleep(std::time::Duration::from_micros(200));
    // SAFETY: as for `callback_read`; `Half` mode records nothing another thread reads.
    unsafe { callback_read(user, offset, dst, size) }
}

#[test]
fn threads_reading_one_reader_wait_for_each_other_and_are_not_taken_for_reentry() {
    let (bytes, data) = common::model_file(6, 3000);
    let mut cb = callback(&bytes, Mode::Half);
    let h = gguf_open_reader(
        Some(slow_read),
        std::ptr::from_mut(&mut *cb).cast(),
        bytes.len() as u64,
        0,
    );
    assert!(!h.is_null(), "{}", common::last_error());
    let handle = h as usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5 {
                    assert_eq!(read_every_tensor(handle as GGUFFile, 0), data);
                }
            });
        }
    });
    // SAFETY: no other thread uses `h` now.
    unsafe { gguf_close(h) };
}
