//! Upload plans from C: the model's tensor data as page-aligned views under a size limit, every
//! tensor inside one view, for zero-copy GPU buffers (Metal), pinned host ranges (CUDA) and
//! direct I/O (absolute file offsets).

use super::boundary::{guard, try_from};
use super::handle::{GGUFFile, GGUFFileImpl};
use super::records::PlanRecords;
pub use super::records::{GGUFPlacement, GGUFUploadPlan, GGUFView, GGUF_NO_VIEW};
use crate::error::Result;
use crate::plan::Plan;
use std::ffi::c_void;

fn build(f: &GGUFFileImpl, max_view_size: u64, page: u64) -> Result<PlanRecords> {
    let plan = Plan::for_model(&f.model, max_view_size, page)?;
    let views: Box<[GGUFView]> = plan
        .views
        .iter()
        .map(|v| GGUFView {
            data: v.start as *const c_void,
            size: v.len,
            file_offset: v.file_offset,
            shard: crate::size::shard_no(v.shard),
        })
        .collect();
    let placements: Box<[GGUFPlacement]> = plan
        .placements
        .iter()
        .map(|p| match p.view {
            Some(view) => GGUFPlacement {
                view: view as u64,
                offset: p.offset_in_view,
            },
            None => GGUFPlacement {
                view: GGUF_NO_VIEW,
                offset: 0,
            },
        })
        .collect();
    let plan = GGUFUploadPlan {
        page_size: plan.page_size,
        max_view_size: plan.max_view_len,
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
/// size (4 KiB on Windows x64, 16 KiB on Apple silicon). On Windows, pass 65536 for views that
/// are mapped again on their own (`MapViewOfFile` at `file_offset`): a view of a file mapping
/// must start on the allocation granularity, 64 KiB, not merely on a page. Each view can be wrapped without copying (`newBufferWithBytesNoCopy`,
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
        let f = unsafe { try_from(file)? };
        let records = build(f, max_view_size, page_size).map_err(|e| f.about(e))?;
        Ok(&f.plans.push(records).plan as *const GGUFUploadPlan)
    })
}
