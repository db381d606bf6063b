//! Upload plans: the tensor data of one file cut into page-aligned views no longer than a limit,
//! such that every tensor lies wholly inside one of them. This is what Metal's
//! `newBufferWithBytesNoCopy` (page-aligned pointer, page-multiple length, a maximum buffer
//! size) and CUDA's `cudaHostRegister` (page-aligned ranges) need, computed once, here.

use crate::error::{Error, ErrorCode, Result};
use crate::format::align_up;
use crate::model::Model;
use crate::source::Source;
use std::ops::Range;

/// A page-aligned range of addresses (or offsets: the plan works on any linear space).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Where the view starts: a multiple of the page size, unless clamped to the start of the
    /// bounds.
    pub start: u64,
    /// Length in bytes: a multiple of the page size, unless clamped to the end of the bounds.
    pub len: u64,
}

/// Where a tensor lies in a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The view holding the whole tensor, or `None` for a tensor larger than the limit allows
    /// (it is reported, never split).
    pub view: Option<usize>,
    /// Offset of the tensor's first byte inside that view.
    pub offset_in_view: u64,
}

/// A plan over one file: its views, and each tensor's placement (in the file's tensor order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The page size the plan aligns to.
    pub page_size: u64,
    /// The longest view allowed (rounded down to a page multiple).
    pub max_view_len: u64,
    /// The views, in file order. Consecutive views may overlap by at most the tensors that
    /// straddle their boundary's pages.
    pub views: Vec<View>,
    /// One placement per tensor, in the order the tensors were given.
    pub placements: Vec<Placement>,
}

impl Plan {
    /// Plans views over tensors given as (start, size) pairs, inside `bounds` (the addresses
    /// the views may cover: a mapping, whose last page the kernel maps whole). Views start at a
    /// page boundary, or at `bounds.start` where the page boundary would fall before it.
    pub fn new(
        tensors: &[(u64, u64)],
        bounds: Range<u64>,
        page_size: u64,
        max_view_len: u64,
    ) -> Result<Plan> {
        if !page_size.is_power_of_two() {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!("the page size must be a power of two, found {page_size}"),
            ));
        }
        let max = max_view_len / page_size * page_size;
        if max == 0 {
            return Err(Error::msg(
                ErrorCode::InvalidArgument,
                format!(
                    "the maximum view length {max_view_len} is smaller than a page ({page_size} bytes)"
                ),
            ));
        }
        let floor = |x: u64| (x / page_size * page_size).max(bounds.start);
        let ceil = |x: u64| align_up(x, page_size).unwrap_or(u64::MAX).min(bounds.end);

        let mut order: Vec<usize> = (0..tensors.len()).collect();
        order.sort_unstable_by_key(|&i| tensors[i].0);
        let mut views: Vec<View> = Vec::new();
        let mut placements = vec![
            Placement {
                view: None,
                offset_in_view: 0,
            };
            tensors.len()
        ];
        for i in order {
            let (start, size) = tensors[i];
            let (first_page, end) = (floor(start), ceil(start + size));
            if end - first_page > max {
                continue; // Larger than any view may be: left unplaced, for the caller to see.
            }
            let fits_last = views
                .last()
                .is_some_and(|v| end.max(v.start + v.len) - v.start <= max);
            if fits_last {
                let v = views.last_mut().expect("checked above");
                v.len = end.max(v.start + v.len) - v.start;
            } else if end > first_page {
                views.push(View {
                    start: first_page,
                    len: end - first_page,
                });
            } else {
                // An empty tensor on a page boundary starts the view: give it the page there
                // (the last one, at the end of the bounds), never a view of 0 bytes, which
                // Metal and CUDA refuse to wrap.
                let first = floor(start.min(bounds.end.saturating_sub(1)));
                views.push(View {
                    start: first,
                    len: ceil(first + 1) - first,
                });
            }
            let index = views.len() - 1;
            placements[i] = Placement {
                view: Some(index),
                offset_in_view: start - views[index].start,
            };
        }
        Ok(Plan {
            page_size,
            max_view_len: max,
            views,
            placements,
        })
    }

    /// The tensors (by position) that no view could hold.
    pub fn oversized(&self) -> impl Iterator<Item = usize> + '_ {
        self.placements
            .iter()
            .enumerate()
            .filter(|(_, p)| p.view.is_none())
            .map(|(i, _)| i)
    }
}

/// One view of a model's plan: a range of one shard's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelView {
    /// The view's first byte, as an address.
    pub start: u64,
    /// The view's length in bytes.
    pub len: u64,
    /// Where the view starts in its shard's file.
    pub file_offset: u64,
    /// The shard (0 for a file that is not split).
    pub shard: usize,
}

/// An upload plan of every tensor of a model: [`Plan`] run on each shard's memory, the views
/// numbered across shards and the placements indexed as the model's tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelPlan {
    /// The page size the views are aligned to.
    pub page_size: u64,
    /// The largest view length allowed (the limit rounded down to whole pages).
    pub max_view_len: u64,
    /// Every view, shard by shard.
    pub views: Vec<ModelView>,
    /// One placement per tensor of the model, its view numbered in `views`.
    pub placements: Vec<Placement>,
}

impl Plan {
    /// Plans the upload of every tensor of `model`: page-aligned views of at most
    /// `max_view_len` bytes of each shard's memory (`page_size` 0: the system's page size).
    /// A model whose tensor data is read by position has no memory to plan (Unsupported).
    pub fn for_model(
        model: &Model<Source>,
        max_view_len: u64,
        page_size: u64,
    ) -> Result<ModelPlan> {
        if model.shards().iter().any(|s| !s.source().in_memory()) {
            return Err(Error::msg(
                ErrorCode::Unsupported,
                "upload plans are views of memory, and this handle reads tensor data by position \
                 (gguf_is_mapped is false): load it with gguf_read_tensors",
            ));
        }
        let page = if page_size == 0 {
            crate::source::page_size()
        } else {
            page_size
        };
        let mut views = Vec::new();
        let mut placements = vec![
            Placement {
                view: None,
                offset_in_view: 0,
            };
            model.tensor_count()
        ];
        let mut max_view = 0;
        for (shard, (file, &first)) in model.shards().iter().zip(model.shard_starts()).enumerate() {
            let base = file.bytes().as_ptr() as u64;
            let tensors: Vec<(u64, u64)> = (0..file.tensor_count())
                .filter_map(|i| file.tensor_at(i))
                .map(|t| (base + t.file_offset, t.size))
                .collect();
            let bounds = base..base + crate::source::memory_len(file);
            let plan = Plan::new(&tensors, bounds, page, max_view_len)?;
            max_view = plan.max_view_len;
            let first_view = views.len();
            views.extend(plan.views.iter().map(|v| ModelView {
                start: v.start,
                len: v.len,
                file_offset: v.start - base,
                shard,
            }));
            for (local, p) in plan.placements.iter().enumerate() {
                if let Some(view) = p.view {
                    placements[first + local] = Placement {
                        view: Some(first_view + view),
                        offset_in_view: p.offset_in_view,
                    };
                }
            }
        }
        if model.shards().is_empty() || max_view == 0 {
            // No shard ran the plan: check the parameters the same way.
            max_view = Plan::new(&[], 0..0, page, max_view_len)?.max_view_len;
        }
        Ok(ModelPlan {
            page_size: page,
            max_view_len: max_view,
            views,
            placements,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// Checks every invariant a caller relies on.
    fn check(tensors: &[(u64, u64)], limit: u64, plan: &Plan) {
        for v in &plan.views {
            assert!(v.len > 0, "{v:?}");
            assert_eq!(v.start % PAGE, 0, "{v:?}");
            assert!(v.len <= plan.max_view_len, "{v:?}");
            assert!(v.start + v.len <= limit, "{v:?}");
            assert!(v.len % PAGE == 0 || v.start + v.len == limit, "{v:?}");
        }
        for (&(start, size), p) in tensors.iter().zip(&plan.placements) {
            match p.view {
                Some(i) => {
                    let v = plan.views[i];
                    assert_eq!(v.start + p.offset_in_view, start);
                    assert!(
                        start + size <= v.start + v.len,
                        "tensor {start}+{size} in {v:?}"
                    );
                }
                None => {
                    let pages = align_up(start + size, PAGE).unwrap() - start / PAGE * PAGE;
                    assert!(pages > plan.max_view_len, "placeable tensor left out");
                }
            }
        }
    }

    #[test]
    fn packs_tensors_into_views_under_the_limit() {
        // 40 tensors of 100 KiB from an unaligned data section start.
        let tensors: Vec<(u64, u64)> = (0..40).map(|i| (1000 + i * 102_400, 102_400)).collect();
        let limit = align_up(1000 + 40 * 102_400, PAGE).unwrap();
        let plan = Plan::new(&tensors, 0..limit, PAGE, 1 << 20).unwrap();
        check(&tensors, limit, &plan);
        assert!(
            plan.views.len() >= 4 && plan.views.len() <= 6,
            "{:?}",
            plan.views
        );
        assert_eq!(plan.oversized().count(), 0);
    }

    #[test]
    fn a_tensor_over_the_limit_is_reported_not_split() {
        let tensors = [(0, 4096), (4096, 3 << 20), (4096 + (3 << 20), 10)];
        let limit = 8 << 20;
        let plan = Plan::new(&tensors, 0..limit, PAGE, 1 << 20).unwrap();
        check(&tensors, limit, &plan);
        assert_eq!(plan.oversized().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn out_of_order_and_empty_tensors() {
        let tensors = [(81_920, 0), (8192, 100), (0, 5000), (12_288, 70_000)];
        let plan = Plan::new(&tensors, 0..90_000, PAGE, 32_768).unwrap();
        check(&tensors, 90_000, &plan);
    }

    #[test]
    fn empty_tensors_on_a_page_boundary_get_a_page() {
        // Alone, before an oversized tensor, and at the very end of the bounds.
        for (tensors, limit) in [
            (vec![(8192, 0)], 16_384),
            (vec![(8192, 0), (8192, 3 << 20)], 8 << 20),
            (vec![(16_384, 0)], 16_384),
        ] {
            let plan = Plan::new(&tensors, 0..limit, PAGE, 1 << 20).unwrap();
            check(&tensors, limit, &plan);
            assert!(plan.views.iter().all(|v| v.len == PAGE), "{:?}", plan.views);
        }
    }

    #[test]
    fn one_view_when_the_limit_allows() {
        let tensors: Vec<(u64, u64)> = (0..10).map(|i| (64 + i * 1000, 1000)).collect();
        let plan = Plan::new(&tensors, 0..16_384, PAGE, u64::MAX).unwrap();
        check(&tensors, 16_384, &plan);
        assert_eq!(
            plan.views,
            vec![View {
                start: 0,
                len: 12_288
            }]
        );
    }

    proptest::proptest! {
        #[test]
        fn every_plan_keeps_its_invariants(
            sizes in proptest::collection::vec(0u64..300_000, 0..40),
            gap in 0u64..5000,
            start in 0u64..10_000,
            max_pages in 1u64..64,
        ) {
            let mut tensors = Vec::new();
            let mut at = start;
            for size in sizes {
                tensors.push((at, size));
                at = align_up(at + size + gap, 32).unwrap();
            }
            let limit = align_up(at, PAGE).unwrap();
            let plan = Plan::new(&tensors, 0..limit, PAGE, max_pages * PAGE).unwrap();
            check(&tensors, limit, &plan);
        }
    }

    #[test]
    fn views_never_start_before_the_bounds() {
        // A buffer at an unaligned address: the first view starts at the buffer.
        let tensors = [(10_000 + 64, 5000), (10_000 + 8192, 100)];
        let plan = Plan::new(&tensors, 10_000..30_000, PAGE, 1 << 20).unwrap();
        assert_eq!(plan.views[0].start, 10_000);
        assert!(plan.views.iter().all(|v| v.start + v.len <= 30_000));
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Plan::new(&[], 0..0, 3000, 1 << 20).is_err());
        assert!(Plan::new(&[], 0..0, PAGE, 100).is_err());
    }
}
