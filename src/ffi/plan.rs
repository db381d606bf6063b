//! Upload plans from C: the model's tensor data as page-aligned views under a size limit, every
//! tensor inside one view, for zero-copy GPU buffers (Metal), pinned host ranges (CUDA) and
//! direct I/O (absolute file offsets).

use super::boundary::guard;
use super::handle::{GGUFFile, GGUFFileImpl};
use crate::error::{ErrorCode, Result};
use crate::file::GgufFile;
use crate::format::align_up;
use crate::plan::Plan;
use crate::source::{page_size, Source};
use std::ffi::c_void;

/// `GGUFPlacement::view` of a tensor too large for any view under the plan's limit.
pub const GGUF_NO_VIEW: u64 = 0xFFFF_FFFF_FFFF_FFFF;

/// A page-aligned range of one shard's mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFView {
    /// First byte of the view: a multiple of the plan's `page_size`, except where that page
    /// would start before the shard's memory; the view then starts with it, at the shard's
    /// `base`. That happens for memory lent to `gguf_open_memory`, and for a mapping (which
    /// starts on a system page) when `page_size` is larger than the system's page.
    pub data: *const c_void,
    /// Length in bytes: at most the plan's `max_view_size`. The view ends on a multiple of the
    /// page size or where the shard's memory ends (the mapping's last page, or the lent
    /// buffer's end), so its length is a multiple of the page size unless it starts or ends
    /// at the edge of the shard's memory.
    pub size: u64,
    /// Absolute offset of `data` in the shard's file (for `pread`, `O_DIRECT`, cuFile).
    pub file_offset: u64,
    /// The shard whose mapping holds the view.
    pub shard: u32,
}

/// Where a tensor lies in an upload plan.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFPlacement {
    /// Index of the view holding the whole tensor, or `GGUF_NO_VIEW` if the tensor (rounded out
    /// to whole pages) is larger than the limit: it is reported, never split.
    pub view: u64,
    /// Offset of the tensor's first byte inside that view.
    pub offset: u64,
}

/// An upload plan. Owned by the handle; valid until `gguf_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GGUFUploadPlan {
    /// The page size the views are aligned to.
    pub page_size: u64,
    /// The largest view allowed (the requested maximum rounded down to whole pages).
    pub max_view_size: u64,
    /// Number of views.
    pub n_views: u64,
    /// The views, shard by shard, in file order. Views may overlap where a tensor straddles the
    /// page on which one view ends and the next begins.
    pub views: *const GGUFView,
    /// Number of placements: `gguf_tensor_count(file)`.
    pub n_tensors: u64,
    /// One placement per tensor, indexed like `gguf_get_tensor_by_index`.
    pub placements: *const GGUFPlacement,
    /// Number of tensors placed in no view (`view == GGUF_NO_VIEW`).
    pub n_oversized: u64,
}

/// A plan and the arrays its pointers point into.
pub(crate) struct PlanRecords {
    plan: GGUFUploadPlan,
    _views: Box<[GGUFView]>,
    _placements: Box<[GGUFPlacement]>,
}

/// How many bytes from the start of a shard's memory the handle may hand out: the whole
/// system pages of a mapping (the kernel maps the last page whole, zero past the end of the
/// file), or exactly the bytes lent to `gguf_open_memory`.
pub(super) fn memory_len(file: &GgufFile<Source>) -> u64 {
    let len = file.file_size();
    match file.source() {
        Source::Lent(_) | Source::Embedded { .. } | Source::Positioned { .. } => len,
        Source::Mapped(..) | Source::Copied(_) => align_up(len, page_size()).unwrap_or(len),
    }
}

fn build(f: &GGUFFileImpl, max_view_size: u64, page: u64) -> Result<PlanRecords> {
    if f.model.shards().iter().any(|s| !s.source().in_memory()) {
        return Err(f.error(
            ErrorCode::Unsupported,
            "upload plans are views of memory, and this handle reads tensor data by position \
             (gguf_is_mapped is false): load it with gguf_read_tensors"
                .into(),
        ));
    }
    let system_page = page_size();
    let page = if page == 0 { system_page } else { page };
    let mut views = Vec::new();
    let mut placements = vec![
        GGUFPlacement {
            view: GGUF_NO_VIEW,
            offset: 0,
        };
        f.model.tensor_count()
    ];
    let mut max_view = 0;
    for (shard, (file, &first)) in f
        .model
        .shards()
        .iter()
        .zip(f.model.shard_starts())
        .enumerate()
    {
        let base = file.bytes().as_ptr() as u64;
        let mapped = memory_len(file);
        let tensors: Vec<(u64, u64)> = (0..file.tensor_count())
            .filter_map(|i| file.tensor_at(i))
            .map(|t| (base + t.file_offset, t.size))
            .collect();
        let plan = Plan::new(&tensors, base..base + mapped, page, max_view_size)?;
        max_view = plan.max_view_len;
        let first_view = views.len() as u64;
        for v in &plan.views {
            views.push(GGUFView {
                data: v.start as *const c_void,
                size: v.len,
                file_offset: v.start - base,
                shard: crate::size::shard_no(shard),
            });
        }
        for (local, p) in plan.placements.iter().enumerate() {
            if let Some(view) = p.view {
                placements[first + local] = GGUFPlacement {
                    view: first_view + view as u64,
                    offset: p.offset_in_view,
                };
            }
        }
    }
    if f.model.shards().is_empty() || max_view == 0 {
        // No shard ran the plan: check the parameters the same way.
        max_view = Plan::new(&[], 0..0, page, max_view_size)?.max_view_len;
    }
    let views = views.into_boxed_slice();
    let placements = placements.into_boxed_slice();
    let plan = GGUFUploadPlan {
        page_size: page,
        max_view_size: max_view,
        n_views: views.len() as u64,
        views: views.as_ptr(),
        n_tensors: placements.len() as u64,
        placements: placements.as_ptr(),
        n_oversized: placements.iter().filter(|p| p.view == GGUF_NO_VIEW).count() as u64,
    };
    Ok(PlanRecords {
        plan,
        _views: views,
        _placements: placements,
    })
}

/// Plans the upload of every tensor's data: page-aligned views of at most `max_view_size` bytes
/// (e.g. Metal's `maxBufferLength`; `UINT64_MAX` for no limit) such that every tensor lies
/// wholly inside at least one view. `page_size` is a power of two, or 0 for the system's page
/// size. Each view can be wrapped without copying (`newBufferWithBytesNoCopy`,
/// `cudaHostRegister`) or read from the file at its `file_offset`; each tensor's placement
/// gives its view and its offset there. A tensor too large for any view is reported
/// (`GGUF_NO_VIEW`, counted in `n_oversized`), never split. Owned by the handle, valid until
/// `gguf_close`; each call makes a new plan. NULL if `file` is NULL, or `page_size` is not a
/// power of two, or `max_view_size` is smaller than a page (GGUF_ERROR_CODE_INVALID_ARGUMENT).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gguf_plan_upload(
    file: GGUFFile,
    max_view_size: u64,
    page_size: u64,
) -> *const GGUFUploadPlan {
    guard(std::ptr::null(), || {
        // SAFETY: `file` is NULL or a live handle (the header's contract).
        let f = unsafe { GGUFFileImpl::from_ptr(file)? };
        let records = build(f, max_view_size, page_size).map_err(|e| f.about(e))?;
        Ok(&f.plans.push(records).plan as *const GGUFUploadPlan)
    })
}
