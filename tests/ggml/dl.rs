//! Loading the pinned ggml and llama.cpp libraries at run time ([`Lib`]), and ggml's value
//! functions from `libggml-base.so` (`common::ggml_dir`): each type's `to_float` (from
//! `ggml_get_type_traits`) and `ggml_validate_row_data`. Shared by the tests that call into
//! ggml or libllama (`#[path]`; x86-64 Linux, as the prebuilt libraries are).

#![allow(dead_code)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

/// A shared library loaded for the rest of the process (never closed, so the addresses of its
/// symbols stay valid).
#[derive(Clone, Copy)]
pub struct Lib(*mut c_void);

impl Lib {
    /// Loads `path`; panics naming it when it cannot.
    pub fn open(path: &Path) -> Lib {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; the library stays loaded for the process.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "cannot load {}", path.display());
        Lib(h)
    }

    /// The address of `name`, or null where the library has no such symbol.
    pub fn find(self, name: &str) -> *mut c_void {
        let c = CString::new(name).unwrap();
        // SAFETY: a handle dlopen returned and a NUL-terminated name.
        unsafe { libc::dlsym(self.0, c.as_ptr()) }
    }

    /// The address of `name`; panics naming it where the library has no such symbol.
    pub fn sym(self, name: &str) -> *mut c_void {
        let p = self.find(name);
        assert!(!p.is_null(), "{name} is not in the library");
        p
    }
}

/// ggml's `struct ggml_type_traits` (ggml.h), the fields up to `to_float`.
#[repr(C)]
struct TypeTraits {
    type_name: *const c_char,
    blck_size: i64,
    blck_size_interleave: i64,
    type_size: usize,
    is_quantized: bool,
    to_float: Option<unsafe extern "C" fn(*const c_void, *mut f32, i64)>,
}

/// The loaded library's entry points.
pub struct Ggml {
    traits: unsafe extern "C" fn(u32) -> *const TypeTraits,
    validate: unsafe extern "C" fn(u32, *const c_void, usize) -> bool,
}

// SAFETY: plain function pointers into a library that is never unloaded.
unsafe impl Sync for Ggml {}
unsafe impl Send for Ggml {}

/// ggml, loaded once.
pub fn ggml(dir: &Path) -> &'static Ggml {
    static G: OnceLock<Ggml> = OnceLock::new();
    G.get_or_init(|| {
        let lib = Lib::open(&dir.join("libggml-base.so"));
        type TraitsFn = unsafe extern "C" fn(u32) -> *const TypeTraits;
        type ValidateFn = unsafe extern "C" fn(u32, *const c_void, usize) -> bool;
        // SAFETY: the symbols have these C signatures (ggml.h, ggml-quants.h).
        unsafe {
            Ggml {
                traits: std::mem::transmute::<*mut c_void, TraitsFn>(
                    lib.sym("ggml_get_type_traits"),
                ),
                validate: std::mem::transmute::<*mut c_void, ValidateFn>(
                    lib.sym("ggml_validate_row_data"),
                ),
            }
        }
    })
}

impl Ggml {
    /// ggml's name for type `id`, and its block elements and bytes.
    pub fn type_info(&self, id: u32) -> (String, u64, u64) {
        // SAFETY: ggml returns a pointer to its static traits table for any id below its count.
        let t = unsafe { &*(self.traits)(id) };
        let name = if t.type_name.is_null() {
            String::new()
        } else {
            // SAFETY: a static NUL-terminated name.
            unsafe { CStr::from_ptr(t.type_name) }
                .to_string_lossy()
                .into_owned()
        };
        (name, t.blck_size as u64, t.type_size as u64)
    }

    /// ggml's floats for `n` elements of type `id` in `src`, or `None` if it has no converter.
    pub fn to_float(&self, id: u32, src: &[u8], n: usize) -> Option<Vec<f32>> {
        // SAFETY: as in type_info.
        let t = unsafe { &*(self.traits)(id) };
        let f = t.to_float?;
        assert_eq!(
            src.len() as u64,
            n as u64 / t.blck_size as u64 * t.type_size as u64
        );
        let mut out = vec![0f32; n];
        // SAFETY: src holds n elements' blocks, out n floats.
        unsafe { f(src.as_ptr().cast(), out.as_mut_ptr(), n as i64) };
        Some(out)
    }

    /// `ggml_validate_row_data(id, data)` (its complaints go to stderr).
    pub fn validate(&self, id: u32, data: &[u8]) -> bool {
        // SAFETY: data.len() readable bytes.
        unsafe { (self.validate)(id, data.as_ptr().cast(), data.len()) }
    }
}
