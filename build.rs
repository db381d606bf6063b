//! With the `header` feature (`make header`, the drift test in tests/header.rs): generates the C
//! header from `src/ffi` with cbindgen into `$OUT_DIR/gguf.h`; `GGUF_UPDATE_HEADER=1` also
//! rewrites the committed `include/gguf.h`. Without it, nothing: building the library, alone or
//! as a dependency, does not compile cbindgen.

fn main() {
    avx512_cfg();
    #[cfg(feature = "header")]
    header::generate();
    #[cfg(not(feature = "header"))]
    println!("cargo:rerun-if-changed=build.rs");
}

/// `cfg(gguf_avx512)` when the compiler has the AVX-512 intrinsics (stable since Rust 1.89; the
/// crate builds from 1.82, with the AVX2 kernels only): src/quant/simd/x86/.
fn avx512_cfg() {
    println!("cargo:rustc-check-cfg=cfg(gguf_avx512)");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    if minor.is_some_and(|m| m >= 89) {
        println!("cargo:rustc-cfg=gguf_avx512");
    }
}

#[cfg(feature = "header")]
mod header {
    use std::path::PathBuf;

    pub fn generate() {
        println!("cargo:rerun-if-changed=src");
        println!("cargo:rerun-if-changed=cbindgen.toml");
        println!("cargo:rerun-if-env-changed=GGUF_UPDATE_HEADER");
        let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("gguf.h");
        let mut config =
            cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
        // The version macros come from Cargo.toml, the one place the version is written.
        let version = |part: &str| std::env::var(format!("CARGO_PKG_VERSION_{part}")).unwrap();
        // Appended to cbindgen.toml's own text (the export macro).
        let api = config.after_includes.take().unwrap_or_default();
        config.after_includes = Some(format!(
            "{api}\n\n/* The version of this header; gguf_library_version() gives the linked library's. */\n\
             #define LIBGGUF_VERSION_MAJOR {}\n#define LIBGGUF_VERSION_MINOR {}\n\
             #define LIBGGUF_VERSION_PATCH {}\n#define LIBGGUF_VERSION \"{}\"",
            version("MAJOR"),
            version("MINOR"),
            version("PATCH"),
            std::env::var("CARGO_PKG_VERSION").unwrap()
        ));
        let header = cbindgen::Builder::new()
            .with_crate(&root)
            .with_config(config)
            .generate()
            .expect("cbindgen could not generate the header");
        header.write_to_file(&out);
        if std::env::var_os("GGUF_UPDATE_HEADER").is_some() {
            header.write_to_file(root.join("include/gguf.h"));
        }
    }
}
