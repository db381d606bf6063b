//! Batched and single reads, and tensor values, held to the reader's standard against a hostile
//! caller or source: a tensor listed twice, sources declaring sizes close to 2^64 with tensors at
//! the very top (every size rounded by checked arithmetic: these run in debug builds, where an
//! overflow panics), headers read by position up to the limit and refused past it with one
//! clear message, and conversions to floats refused when their buffers could not be in memory.

mod common;

use common::last_error;
use common::raw::{file, kv, le_u64, tensor_info};
use gguf::ffi::*;
use gguf::load::{self, LoadOptions};
use gguf::read_at::ReadAt;
use gguf::{DataType, ErrorCode, Model};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A source of `len` bytes (up to 2^64 - 1): `head` first, then, at every later offset `o`, the
/// byte [`filler`]`(o)`: nothing but the header is stored.
struct Synthetic {
    head: Vec<u8>,
    len: u64,
    read_bytes: AtomicU64,
}

/// The byte a [`Synthetic`] source holds at `offset` past its head.
fn filler(offset: u64) -> u8 {
    (offset % 251) as u8
}

/// [`filler`] over 251 + 64 KiB bytes: any run of it is a slice of this.
fn filler_table() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..251 + (64 << 10)).map(|i| filler(i as u64)).collect())
}

impl Synthetic {
    fn new(head: Vec<u8>, len: u64) -> Arc<Synthetic> {
        Arc::new(Synthetic {
            head,
            len,
            read_bytes: AtomicU64::new(0),
        })
    }

    fn expected(&self, at: u64, len: u64) -> Vec<u8> {
        (at..at + len).map(filler).collect()
    }
}

impl ReadAt for Synthetic {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> gguf::Result<usize> {
        let n = (dst.len() as u64).min(self.len.saturating_sub(offset)) as usize;
        let mut done = 0;
        while done < n {
            let at = offset + done as u64;
            let rest = &mut dst[done..n];
            let part = match usize::try_from(at).ok().and_then(|a| self.head.get(a..)) {
                Some(head) if !head.is_empty() => {
                    let k = head.len().min(rest.len());
                    rest[..k].copy_from_slice(&head[..k]);
                    k
                }
                _ => {
                    let k = rest.len().min(64 << 10);
                    let from = (at % 251) as usize;
                    rest[..k].copy_from_slice(&filler_table()[from..from + k]);
                    k
                }
            };
            done += part;
        }
        self.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn describe(&self) -> String {
        "<synthetic>".to_string()
    }

    fn parallel(&self) -> bool {
        true
    }
}

/// The C read callback over a [`Synthetic`] source (`user`).
unsafe extern "C" fn synthetic_cb(
    user: *mut c_void,
    offset: u64,
    dst: *mut c_void,
    size: u64,
) -> i64 {
    // SAFETY: `user` is the test's `Synthetic`, `dst` has `size` writable bytes (the callback's
    // contract), and the sizes asked for here stay small.
    let (source, dst) = unsafe {
        (
            &*(user as *const Synthetic),
            std::slice::from_raw_parts_mut(dst.cast::<u8>(), size as usize),
        )
    };
    match source.read_at(offset, dst) {
        Ok(n) => n as i64,
        Err(_) => -1,
    }
}

/// A header with one tensor of `dims` and `dtype` whose data lies at `file_offset` of the file
/// (a multiple of 32, past the header).
fn one_tensor_header(dims: &[u64], dtype: DataType, file_offset: u64) -> Vec<u8> {
    let probe = file(1, 0, &tensor_info("t", dims, dtype as u32, 0));
    let data_offset = (probe.len() as u64).div_ceil(32) * 32;
    file(
        1,
        0,
        &tensor_info("t", dims, dtype as u32, file_offset - data_offset),
    )
}

/// The largest multiple of 32 a file size can be.
const TOP: u64 = u64::MAX / 32 * 32;

fn read_requests(
    model: &Model<gguf::source::Source>,
    requests: Vec<(usize, &mut [u8])>,
    threads: u32,
) -> gguf::Result<()> {
    let options = LoadOptions {
        threads,
        direct: false,
    };
    load::read_tensors(model, requests, options, &mut |done, total| {
        assert!(done <= total);
        true
    })
}

/// The same tensor listed twice (or three times), each time with its own buffer, fills every
/// buffer: small tensors, and ones over 8 MiB that cross the file's 8 MiB read boundaries,
/// on one thread and on several.
#[test]
fn a_tensor_listed_twice_fills_both_buffers() {
    // 3 tensors of 12 MiB: each crosses an 8 MiB boundary of the file; and 3 small ones.
    for (n, elems) in [(3, 3 << 20), (3, 1000)] {
        let (bytes, data) = common::model_file(n, elems);
        let len = bytes.len() as u64;
        let source = Synthetic::new(bytes, len);
        let model = Model::open_source("mem", source).unwrap();
        for threads in [1, 0, 3] {
            for order in [[1, 1, 0], [0, 1, 1], [2, 0, 2]] {
                let mut bufs: Vec<Vec<u8>> =
                    order.iter().map(|&k| vec![0xEE; data[k].len()]).collect();
                let requests = order
                    .iter()
                    .zip(bufs.iter_mut())
                    .map(|(&k, b)| (k, &mut b[..]))
                    .collect();
                read_requests(&model, requests, threads).unwrap();
                for (&k, b) in order.iter().zip(&bufs) {
                    assert!(
                        *b == data[k],
                        "tensor {k}, order {order:?}, {threads} threads"
                    );
                }
            }
        }
    }
}

/// A source declaring a size just under 2^64, with tensors at its very top (one ending at the
/// last byte, one of 16 MiB crossing the last 8 MiB boundaries): read whole, in parts and listed
/// twice, through the Rust API and the C API, with the bytes the source holds there.
#[test]
fn tensors_at_the_top_of_a_source_near_2_to_the_64_are_read() {
    for elems in [64u64, 16 << 20] {
        let at = TOP - elems;
        let source = Synthetic::new(one_tensor_header(&[elems], DataType::I8, at), TOP);
        let want = source.expected(at, elems);
        let model = Model::open_source("huge", source.clone()).unwrap();
        let t = model.tensor_at(0).unwrap().info;
        assert_eq!((t.file_offset, t.size), (at, elems));

        let mut one = vec![0u8; elems as usize];
        load::read_tensor(&model, 0, 0, &mut one).unwrap();
        assert!(one == want);
        let mut tail = vec![0u8; 7];
        load::read_tensor(&model, 0, elems - 7, &mut tail).unwrap();
        assert_eq!(tail, want[want.len() - 7..]);
        let e = load::read_tensor(&model, 0, elems - 6, &mut tail).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");

        for threads in [1, 0] {
            let (mut a, mut b) = (vec![0u8; elems as usize], vec![0u8; elems as usize]);
            read_requests(&model, vec![(0, &mut a[..]), (0, &mut b[..])], threads).unwrap();
            assert!(a == want && b == want, "{threads} threads");
        }

        // The same through a read callback and the C API.
        // SAFETY: the callback reads `source`, which outlives the handle.
        unsafe {
            let user = Arc::as_ptr(&source) as *mut c_void;
            let f = gguf_open_reader(Some(synthetic_cb), user, TOP, 0);
            assert!(!f.is_null(), "{}", last_error());
            let info = gguf_get_tensor_by_index(f, 0);
            let mut a = vec![0u8; elems as usize];
            let mut b = vec![0u8; elems as usize];
            let infos = [info, info];
            let dsts = [a.as_mut_ptr().cast::<c_void>(), b.as_mut_ptr().cast()];
            let ok = gguf_read_tensors(
                f,
                infos.as_ptr(),
                dsts.as_ptr(),
                2,
                0,
                0,
                None,
                std::ptr::null_mut(),
            );
            assert!(ok, "{}", last_error());
            assert!(a == want && b == want);
            let mut tail = [0u8; 5];
            assert!(gguf_read_tensor(
                f,
                info,
                elems - 5,
                tail.as_mut_ptr().cast(),
                5
            ));
            assert_eq!(tail[..], want[want.len() - 5..]);
            gguf_close(f);
        }
    }
}

/// A header is read by position up to [`gguf::source::MAX_HEADER`] bytes, however its reads grow: one
/// whose end lies past twice the bytes read so far, but under the limit, opens (reading at most
/// the limit); one that needs more than the limit is refused, saying once how much it needs.
#[test]
fn headers_are_read_up_to_the_limit_and_refused_past_it_with_one_clear_message() {
    let string = |len: u64| {
        let mut v = le_u64(len).to_vec();
        v.extend("a".repeat(len as usize).into_bytes());
        v
    };
    // A 129 MiB string, then a small key: after the string, reading twice as much would pass
    // the limit, but the header ends well before it.
    let mut body = kv("big", 8, &string(129 << 20));
    body.extend(kv("small", 8, &string(3)));
    let head = file(0, 2, &body);
    let header_len = head.len() as u64;
    let source = Synthetic::new(head, 1 << 40);
    let parsed = gguf::source::parse_source(source.clone()).unwrap();
    assert_eq!(parsed.metadata_count(), 2);
    let read = source.read_bytes.load(Ordering::Relaxed);
    assert!(
        read >= header_len && read <= gguf::source::MAX_HEADER,
        "{read} bytes read for a header of {header_len}"
    );

    // Past the limit: a 300 MiB string, known from the first read.
    let head = file(0, 1, &kv("huge", 8, &le_u64(300 << 20)));
    let source = Synthetic::new(head, 1 << 40);
    let err = match gguf::source::parse_source(source.clone()) {
        Ok(_) => panic!("a 300 MiB header was accepted"),
        Err(e) => e,
    };
    assert_eq!(err.code(), ErrorCode::OutOfMemory, "{err}");
    let msg = err.to_string();
    let needed = 24 + 8 + 4 + 4 + 8 + (300u64 << 20);
    assert!(
        msg.contains(&format!("the header needs at least {needed} bytes"))
            && msg.contains(&format!("more than the {} bytes", gguf::source::MAX_HEADER))
            && msg.contains("<synthetic>"),
        "{msg}"
    );
    assert_eq!(
        source.read_bytes.load(Ordering::Relaxed),
        gguf::source::FIRST_CHUNK
    );
}

/// Converting a tensor to floats is refused, before anything is read, when the floats (or the
/// bytes read for them) could not be in memory: a source declaring 2^62 bytes holding one F32
/// tensor of 2^59 elements and one Q4_0 tensor whose floats take 2^52 bytes.
#[test]
fn tensor_values_too_large_for_memory_are_refused_before_reading() {
    let f32_elems = 1u64 << 59;
    let q4_elems = 1u64 << 50;
    let q4_bytes = q4_elems / 32 * 18;
    let mut body = tensor_info("f", &[1 << 20, f32_elems >> 20], DataType::F32 as u32, 0);
    body.extend(tensor_info(
        "q",
        &[1 << 20, q4_elems >> 20],
        DataType::Q4_0 as u32,
        f32_elems * 4,
    ));
    let head = file(2, 0, &body);
    let data_offset = (head.len() as u64).div_ceil(32) * 32;
    let size = data_offset + f32_elems * 4 + q4_bytes;
    let source = Synthetic::new(head, size);
    // SAFETY: the callback reads `source`, which outlives the handle; `dst` is never written
    // (every call is refused).
    unsafe {
        let f = gguf_open_reader(
            Some(synthetic_cb),
            Arc::as_ptr(&source) as *mut c_void,
            size,
            0,
        );
        assert!(!f.is_null(), "{}", last_error());
        let before = source.read_bytes.load(Ordering::Relaxed);
        let mut dst = [0f32; 16];
        for k in 0..2 {
            let info = gguf_get_tensor_by_index(f, k);
            let rows = (*info).n_elements / (*info).dims[0];
            for threads in [None, Some(1), Some(4)] {
                let ok = match threads {
                    None => gguf_tensor_to_float(f, info, 0, rows, dst.as_mut_ptr()),
                    Some(n) => gguf_tensor_to_float_parallel(f, info, 0, rows, dst.as_mut_ptr(), n),
                };
                assert!(!ok);
                assert_eq!(
                    gguf_last_error_code(),
                    ErrorCode::InvalidArgument as u32,
                    "{}",
                    last_error()
                );
                assert!(last_error().contains("memory"), "{}", last_error());
            }
        }
        assert_eq!(source.read_bytes.load(Ordering::Relaxed), before);
        gguf_close(f);
    }
}
