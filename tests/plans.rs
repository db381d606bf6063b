//! Upload plans through the C API, as properties over random models: any tensor sizes and
//! alignment, opened as a mapping, read into memory (`GGUF_OPEN_FLAG_READ`) or lent at an
//! unaligned address (`gguf_open_memory`), planned with any limit and page size. Every plan must
//! keep the header's promises (`GGUFView`, `GGUFPlacement`, `gguf_contains`); c_tests/
//! test_plan_metal.c checks the same on fixed files from C.

use gguf::ffi::*;
use gguf::{DataType, Writer};
use proptest::prelude::*;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a model is opened.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Mapped,
    Read,
    /// Lent at this offset into a heap buffer (so at an address no page boundary starts).
    Lent(usize),
}

fn system_page() -> u64 {
    gguf::source::page_size()
}

/// The bytes of a model of I8 tensors of these sizes, with this alignment.
fn model(sizes: &[u64], alignment: u32) -> Vec<u8> {
    let mut w = Writer::new();
    w.set_alignment(alignment).unwrap();
    for (k, &size) in sizes.iter().enumerate() {
        let data = (0..size).map(|j| (k as u64 * 13 + j * 5) as u8).collect();
        w.add_tensor(format!("t.{k}"), &[size], DataType::I8, data)
            .unwrap();
    }
    w.to_bytes().unwrap()
}

fn write(bytes: &[u8]) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plans");
    std::fs::create_dir_all(&dir).unwrap();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}-{n}.gguf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Checks every promise of a plan of `h` made with (`max`, `page`). `lent`: memory handle.
///
/// # Safety
/// `h` is a live handle.
unsafe fn check_plan(h: GGUFFile, max: u64, page: u64, lent: bool) -> Result<(), TestCaseError> {
    // SAFETY: `h` is live; every pointer read below was returned by it.
    unsafe {
        let plan = gguf_plan_upload(h, max, page);
        let page = if page == 0 { system_page() } else { page };
        if max < page {
            prop_assert!(plan.is_null());
            prop_assert_eq!(
                gguf_last_error_code(),
                gguf::ErrorCode::InvalidArgument as u32
            );
            return Ok(());
        }
        prop_assert!(!plan.is_null());
        let plan = &*plan;
        prop_assert_eq!(plan.page_size, page);
        prop_assert_eq!(plan.max_view_size, max / page * page);
        let shard = &*gguf_get_shard(h, 0);
        let lo = shard.base as u64;
        let hi = lo
            + if lent {
                shard.file_size
            } else {
                shard.file_size.next_multiple_of(system_page())
            };
        let views = if plan.n_views == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(plan.views, plan.n_views as usize)
        };
        for v in views {
            let (start, end) = (v.data as u64, v.data as u64 + v.size);
            prop_assert!(start >= lo && end <= hi, "{v:?} outside {lo:#x}..{hi:#x}");
            prop_assert!(v.size > 0 && v.size <= plan.max_view_size, "{v:?}");
            prop_assert!(
                start % page == 0 || (start == lo && (lent || page > system_page())),
                "{v:?} starts off a page"
            );
            prop_assert!(end % page == 0 || end == hi, "{v:?} ends off a page");
            prop_assert_eq!(v.file_offset, start - lo);
            prop_assert_eq!(v.shard, 0);
            prop_assert!(gguf_contains(h, v.data, v.size));
        }
        prop_assert!(views.windows(2).all(|w| w[0].data < w[1].data));
        let n = gguf_tensor_count(h);
        prop_assert_eq!(plan.n_tensors, n);
        let mut oversized = 0;
        for k in 0..n {
            let info = &*gguf_get_tensor_by_index(h, k);
            let p = &*plan.placements.add(k as usize);
            let data = gguf_tensor_data(h, info) as u64;
            let first = (data / page * page).max(lo);
            let last = (data + info.size_bytes).next_multiple_of(page).min(hi);
            let fits = last - first <= plan.max_view_size;
            if p.view == GGUF_NO_VIEW {
                prop_assert!(!fits, "tensor {k} ({} bytes) left out", info.size_bytes);
                oversized += 1;
                continue;
            }
            prop_assert!(fits);
            let v = &views[p.view as usize];
            prop_assert_eq!(v.data as u64 + p.offset, data);
            prop_assert!(p.offset + info.size_bytes <= v.size);
            prop_assert_eq!(v.file_offset + p.offset, info.file_offset);
        }
        prop_assert_eq!(plan.n_oversized, oversized);
        // Just past the memory is outside it.
        prop_assert!(!gguf_contains(h, shard.base.cast(), hi - lo + 1));
        gguf_clear_error();
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_plan_keeps_the_headers_promises(
        sizes in proptest::collection::vec(prop_oneof![Just(0u64), 0u64..100, 0u64..20_000, 0u64..300_000], 0..24),
        alignment in prop_oneof![Just(32u32), Just(1), Just(64), Just(4096), Just(65536)],
        mode in prop_oneof![
            Just(Mode::Mapped),
            Just(Mode::Read),
            (1usize..4096).prop_map(Mode::Lent),
        ],
        limits in proptest::collection::vec(
            (1u64..80, prop_oneof![Just(0u64), Just(1), Just(512), Just(4096), Just(16384), Just(65536)]),
            1..4,
        ),
    ) {
        let bytes = model(&sizes, alignment);
        let path = write(&bytes);
        let c_path = CString::new(path.to_str().unwrap()).unwrap();
        let mut lent = Vec::new();
        // SAFETY: the handle is used only below, while `lent` (its memory, if lent) lives, and
        // closed before either goes.
        unsafe {
            let h = match mode {
                Mode::Mapped => gguf_open(c_path.as_ptr()),
                Mode::Read => gguf_open_ex(c_path.as_ptr(), OpenFlag::Read as u32),
                Mode::Lent(at) => {
                    lent = vec![0u8; at + bytes.len()];
                    lent[at..].copy_from_slice(&bytes);
                    gguf_open_memory(lent[at..].as_ptr().cast(), bytes.len())
                }
            };
            prop_assert!(!h.is_null());
            let is_lent = matches!(mode, Mode::Lent(_));
            let mut result = Ok(());
            for &(units, page) in &limits {
                // Limits in units of 16 KiB, plus a few odd bytes, and none at all.
                let max = units * 16384 + units % 3;
                result = result.and(check_plan(h, max, page, is_lent));
                result = result.and(check_plan(h, u64::MAX, page, is_lent));
            }
            gguf_close(h);
            drop(lent);
            std::fs::remove_file(&path).unwrap();
            result?;
        }
    }
}
