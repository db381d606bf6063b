//! Many threads share one handle, call every getter and race the lazy array builders and the
//! upload plans: every thread must see the same pointers and values, and a plan of its own per
//! call. CI also runs this under ThreadSanitizer (`make tsan`); it has its own `main` (no libtest
//! harness) so that TSan sees no thread but the test's own. Several threads also open a file of
//! many tensors at once.

use gguf::ffi::*;
use gguf::{DataType, MetadataValue as V, ValueType, Writer};
use std::ffi::{CStr, CString};
use std::sync::Barrier;

const THREADS: usize = 8;
const ROUNDS: usize = 20;

fn model() -> Vec<u8> {
    let mut w = Writer::new();
    let n: u32 = 5000;
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    w.add_metadata(
        "tokens",
        V::Array(
            ValueType::String,
            (0..n).map(|i| V::string(format!("tok{i}"))).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "scores",
        V::Array(
            ValueType::Float32,
            (0..n).map(|i| V::F32(i as f32)).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "types",
        V::Array(ValueType::Int32, (0..n).map(|i| V::I32(i as i32)).collect()),
    )
    .unwrap();
    w.add_metadata(
        "ids",
        V::Array(
            ValueType::Uint64,
            (0..n).map(|i| V::U64(i as u64)).collect(),
        ),
    )
    .unwrap();
    for i in 0..64 {
        w.add_tensor(
            format!("blk.{i}.w"),
            &[32, 2],
            DataType::Q8_0,
            vec![i as u8; 68],
        )
        .unwrap();
    }
    w.to_bytes().unwrap()
}

/// What one thread observed: the pointers it was handed.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    strings: usize,
    scores: usize,
    types: usize,
    ids: usize,
    tensors: Vec<usize>,
    data: Vec<usize>,
}

/// What one thread observed, and the upload plans it made (a new one per call).
fn reader(file: usize, barrier: &Barrier) -> (Seen, Vec<usize>) {
    let h = file as GGUFFile;
    let key = |k: &str| CString::new(k).unwrap();
    let (tokens, scores, types, ids) = (key("tokens"), key("scores"), key("types"), key("ids"));
    barrier.wait();
    let mut seen = None;
    let mut plans = Vec::new();
    for round in 0..ROUNDS {
        // SAFETY: `h` is a live handle for the whole test; keys are NUL-terminated.
        unsafe {
            let mut n = 0;
            let strings = gguf_get_string_array(h, tokens.as_ptr(), &mut n);
            assert_eq!(n, 5000);
            assert_eq!(CStr::from_ptr(*strings.add(4999)).to_bytes(), b"tok4999");
            let mut len = 0;
            let s = gguf_get_array_string(h, tokens.as_ptr(), (round * 211) as u64 % n, &mut len);
            assert_eq!(
                std::slice::from_raw_parts(s.cast::<u8>(), len as usize),
                format!("tok{}", (round * 211) % 5000).as_bytes()
            );
            let f = gguf_get_float_array(h, scores.as_ptr(), &mut n);
            assert_eq!(*f.add(1234), 1234.0);
            let t = gguf_get_int32_array(h, types.as_ptr(), &mut n);
            assert_eq!(*t.add(77), 77);
            let u = gguf_get_uint64_array(h, ids.as_ptr(), &mut n);
            assert_eq!(*u.add(4321), 4321);
            assert!(gguf_get_int32_array(h, scores.as_ptr(), &mut n).is_null());
            assert_eq!(gguf_last_error_code(), gguf::ErrorCode::WrongType as u32);
            let mut tensors = Vec::new();
            let mut data = Vec::new();
            for i in 0..gguf_tensor_count(h) {
                let info = gguf_get_tensor_by_index(h, i);
                assert!(std::ptr::eq(gguf_get_tensor(h, (*info).name), info));
                let d = gguf_tensor_data(h, info).cast::<u8>();
                assert_eq!(*d, i as u8);
                tensors.push(info as usize);
                data.push(d as usize);
            }
            // Each call appends a plan to the handle's list, racing the other threads.
            let plan = gguf_plan_upload(h, 1 << 20, 4096);
            assert!(!plan.is_null());
            assert_eq!((*plan).n_tensors, gguf_tensor_count(h));
            plans.push(plan as usize);
            for i in 0..gguf_metadata_count(h) {
                let kv = gguf_get_metadata_by_index(h, i);
                assert!(std::ptr::eq(gguf_get_metadata(h, (*kv).key), kv));
            }
            let now = Seen {
                strings: strings as usize,
                scores: f as usize,
                types: t as usize,
                ids: u as usize,
                tensors,
                data,
            };
            match &seen {
                None => seen = Some(now),
                Some(first) => assert_eq!(first, &now, "pointers changed between calls"),
            }
        }
    }
    (seen.unwrap(), plans)
}

fn threads_share_one_handle() {
    let bytes = model();
    // SAFETY: `bytes` outlives the handle, closed below after every thread joined.
    let h = unsafe { gguf_open_memory(bytes.as_ptr().cast(), bytes.len()) };
    assert!(!h.is_null());
    let barrier = Barrier::new(THREADS);
    let file = h as usize;
    let (seen, plans): (Vec<Seen>, Vec<Vec<usize>>) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| s.spawn(|| reader(file, &barrier)))
            .collect();
        handles.into_iter().map(|t| t.join().unwrap()).unzip()
    });
    for other in &seen[1..] {
        assert_eq!(&seen[0], other, "threads were handed different pointers");
    }
    // Every plan is its own and still intact after the others were made.
    let mut plans: Vec<usize> = plans.into_iter().flatten().collect();
    for &p in &plans {
        // SAFETY: plans live until `gguf_close`, below.
        let plan = unsafe { &*(p as *const GGUFUploadPlan) };
        assert_eq!((plan.n_tensors, plan.page_size), (64, 4096));
    }
    plans.sort_unstable();
    plans.dedup();
    assert_eq!(
        plans.len(),
        THREADS * ROUNDS,
        "two calls were handed one plan"
    );
    // SAFETY: every thread has finished with the handle.
    unsafe { gguf_close(h) };
}

/// Threads that each open a file of 20000 tensors,
/// at once, and look tensors up.
fn threads_open_large_files() {
    const N: usize = 20_000;
    let mut w = Writer::new();
    for i in 0..N {
        w.add_tensor(
            format!("blk.{}.ffn_up.{}.weight", i / 64, i % 64),
            &[8],
            DataType::F32,
            vec![0; 32],
        )
        .unwrap();
    }
    let bytes = w.to_bytes().unwrap();
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        // Joined here, not left to the scope: TSan does not see the scope's own joins.
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (bytes, barrier) = (&bytes, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for round in 0..3 {
                        // SAFETY: `bytes` outlives the handle, closed below.
                        let h = unsafe { gguf_open_memory(bytes.as_ptr().cast(), bytes.len()) };
                        assert!(!h.is_null());
                        // SAFETY: `h` is open.
                        assert_eq!(unsafe { gguf_tensor_count(h) }, N as u64);
                        let i = (t * 997 + round * 7919) % N;
                        let name = CString::new(format!("blk.{}.ffn_up.{}.weight", i / 64, i % 64))
                            .unwrap();
                        // SAFETY: `h` is open, `name` is NUL-terminated.
                        let info = unsafe { gguf_get_tensor(h, name.as_ptr()) };
                        assert!(!info.is_null());
                        // SAFETY: tensor infos live until `gguf_close`, their names too.
                        let (found, offset) =
                            unsafe { (CStr::from_ptr((*info).name), (*info).offset) };
                        // The writer lays the 32-byte tensors out one after another.
                        assert_eq!((found, offset), (name.as_c_str(), 32 * i as u64));
                        // SAFETY: no other thread uses `h`.
                        unsafe { gguf_close(h) };
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
}

fn main() {
    threads_share_one_handle();
    threads_open_large_files();
    println!("concurrency: 2 passed, 0 failed");
}
