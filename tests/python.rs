//! The Python package (`python/`, import `libgguf`): runs its unittest suite
//! (`python/tests/test_libgguf.py`, which compares it with the reference reader, PyPI `gguf`)
//! against the library of this test's profile, freshly built.
//!
//! The interpreter is `$GGUF_PYTHON`, else `<repo>/.venv/bin/python` (`make venv`); it needs
//! numpy and the pinned gguf (`common::reference_python`). Without one the test fails, never
//! skips. The layout of every C structure the package declares with ctypes is measured here and
//! handed over in `GGUF_FFI_LAYOUT`, so a change to the C API that the package does not follow
//! fails this test.

mod common;

use gguf::ffi::{
    GGUFArray, GGUFMemoryEstimate, GGUFMemoryParams, GGUFMetadataKV, GGUFPlacement, GGUFShardInfo,
    GGUFSpecialTokens, GGUFString, GGUFTensorInfo, GGUFUploadPlan, GGUFUrlOptions, GGUFValue,
    GGUFView,
};
use serde_json::{json, Map, Value as Json};
use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

/// One structure's size, alignment and field offsets.
macro_rules! layout {
    ($ty:ty { $($field:ident),* }) => {{
        #[allow(unused_mut)] // GGUFValue lists no fields
        let mut fields = Map::new();
        $(fields.insert(
            stringify!($field).trim_start_matches("r#").to_string(),
            json!(offset_of!($ty, $field)),
        );)*
        json!({"size": size_of::<$ty>(), "align": align_of::<$ty>(), "fields": fields})
    }};
}

/// The layout of every structure `python/libgguf/_native.py` declares.
fn ffi_layout() -> Json {
    json!({
        // A union: every member at offset 0; its size and alignment are what matter.
        "GGUFValue": layout!(GGUFValue {}),
        "GGUFMetadataKV": layout!(GGUFMetadataKV {
            key, r#type, value, array_len, array_data, key_len, str_len, array_type,
            array_bytes, index
        }),
        "GGUFString": layout!(GGUFString { data, len }),
        "GGUFArray": layout!(GGUFArray { elem_type, count, data }),
        "GGUFTensorInfo": layout!(GGUFTensorInfo {
            name, n_elements, n_dims, dims, offset, dtype, size_bytes, file_offset, name_len,
            index, shard
        }),
        "GGUFView": layout!(GGUFView { data, size, file_offset, shard }),
        "GGUFPlacement": layout!(GGUFPlacement { view, offset }),
        "GGUFUploadPlan": layout!(GGUFUploadPlan {
            page_size, max_view_size, n_views, views, n_tensors, placements, n_oversized
        }),
        "GGUFShardInfo": layout!(GGUFShardInfo {
            path, file_size, data_offset, alignment, version, tensor_count, first_tensor, base
        }),
        "GGUFSpecialTokens": layout!(GGUFSpecialTokens {
            bos, eos, eot, eom, unk, sep, pad, mask, nl, fim_pre, fim_suf, fim_mid, fim_pad,
            fim_rep, fim_sep, add_bos, add_eos
        }),
        "GGUFUrlOptions": layout!(GGUFUrlOptions {
            bearer_token, timeout_ms, max_redirects, deadline_ms
        }),
        "GGUFMemoryParams": layout!(GGUFMemoryParams {
            size, n_ctx, n_batch, n_ubatch, n_seq_max, type_k, type_v, flash_attn, n_gpu_layers,
            swa_full, kv_unified, offload_kqv
        }),
        "GGUFMemoryEstimate": layout!(GGUFMemoryEstimate {
            size, weights, k, v, recurrent, output, compute, total, n_ctx, n_ctx_seq, n_ctx_swa,
            n_ubatch, cpu, gpu, weights_mapped
        }),
    })
}

#[test]
fn python_package_matches_the_reference() {
    let py = common::reference_python();
    let root = common::manifest_dir();
    let lib = common::lib_dir().join(if cfg!(target_os = "macos") {
        "libgguf.dylib"
    } else {
        "libgguf.so"
    });
    let mut pythonpath = std::ffi::OsString::from(root.join("python"));
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(old);
    }
    let out = Command::new(py)
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(root.join("python/tests"))
        .current_dir(&root)
        .env("LIBGGUF_PATH", &lib)
        .env("PYTHONPATH", pythonpath)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("GGUF_FFI_LAYOUT", ffi_layout().to_string())
        .output()
        .expect("run python -m unittest");
    let report = common::show(&out);
    assert!(
        out.status.success(),
        "the Python package's tests failed ({} with LIBGGUF_PATH={}):\n{report}",
        py.display(),
        lib.display()
    );
    // unittest reports on stderr; a run that collected nothing would also "succeed".
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("test_random_files") && stderr.contains("\nOK"),
        "unexpected unittest report:\n{report}"
    );
    assert!(
        !stderr.contains("skipped 'GGUF_FFI_LAYOUT"),
        "the layout check was skipped:\n{report}"
    );
}
