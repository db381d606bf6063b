//! `make install`, and programs outside the tree built against what it installs.
//!
//! `make install PREFIX=<a temporary prefix>` (the release library) is run once per test process;
//! the installed library must be stripped, with its debug information in
//! `lib/.debug/libgguf.so.<version>.debug`, which the library's `.gnu_debuglink` names (with its
//! CRC) and whose build ID is the library's;
//! then an outside C program and an outside C++ program (`tests/install/consumer.c`,
//! `consumer.cpp`) are built against that prefix only, through pkg-config (`--cflags --libs`, and
//! `--static` linked to `libgguf.a`) and through CMake (`find_package(gguf REQUIRED)`, the
//! imported targets `gguf::gguf` and `gguf::gguf_static`), and run on the bundled sample. Each
//! checks that the header's version macros, the linked library's `gguf_library_version()`,
//! Cargo.toml's version and the package metadata's version agree.
//!
//! Nothing is installed globally, and nothing installed globally is used: pkg-config searches the
//! prefix only (`PKG_CONFIG_LIBDIR`), CMake must report the prefix's package directory, and
//! `ldd` must show each dynamically linked program loading the prefix's `libgguf.so.<major>`.
//! The installed inspector (`bin/gguf-inspect`) must run from the prefix alone too.
//! `cmake` and `pkg-config` must be on PATH (`.ci/run` installs them); the tests fail without.

mod common;

use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, run, show};
use gguf::MappedFile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MAJOR: &str = env!("CARGO_PKG_VERSION_MAJOR");
const MINOR: &str = env!("CARGO_PKG_VERSION_MINOR");
const PATCH: &str = env!("CARGO_PKG_VERSION_PATCH");

fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

fn sample() -> PathBuf {
    manifest_dir().join("testdata/sample.gguf")
}

/// A fresh scratch directory of this process: `target/tmp/install/<pid>/<name>`.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("install")
        .join(std::process::id().to_string())
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The cargo target directory holding this test executable (`<it>/<profile>/deps/<test>`, or
/// `<it>/<triple>/<profile>/deps/<test>`): the one marked by `CACHEDIR.TAG`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .expect("the test executable lies in a cargo target directory")
        .to_path_buf()
}

/// `make TARGET VARS...` in the repository, isolated from an outer make (`make test`) and told
/// where cargo builds (the Makefile assumes `target/`).
fn make(args: &[String]) -> Output {
    let target = target_dir();
    let mut cmd = Command::new(std::env::var("MAKE").unwrap_or_else(|_| "make".into()));
    cmd.current_dir(manifest_dir())
        .arg("--no-print-directory")
        .args(args)
        .arg(format!("RELEASE={}", target.join("release").display()))
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL");
    // Without the variables cargo set for this test (as tests/common's lib_dir): build scripts
    // that watch them (ring's) would see them change and rebuild, and the release library that
    // `make` built would be built again.
    common::without_cargo_test_env(&mut cmd);
    run(&mut cmd)
}

/// The prefix `make install` installed into, once per test process.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let prefix = scratch("prefix");
        make(&["install".into(), format!("PREFIX={}", prefix.display())]);
        prefix
    })
}

/// The names of an ELF file's sections (`readelf -S -W`).
fn elf_sections(file: &Path) -> Vec<String> {
    let out = run(tool("readelf").args(["-S", "-W"]).arg(file));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.trim_start().strip_prefix('[')?.split_once(']')?;
            rest.split_whitespace()
                .next()
                .filter(|n| n.starts_with('.'))
                .map(String::from)
        })
        .collect()
}

/// The bytes of section `name` of an ELF file (`objcopy --dump-section`).
fn dump_section(file: &Path, name: &str) -> Vec<u8> {
    let dir = scratch(&format!("section{name}"));
    let out = dir.join("section");
    run(tool("objcopy")
        .arg("--dump-section")
        .arg(format!("{name}={}", out.display()))
        .arg(file)
        .arg(dir.join("copy")));
    std::fs::read(&out).unwrap()
}

/// The GNU build ID of an ELF file (`readelf -n`), as hex.
fn build_id(file: &Path) -> String {
    let out = run(tool("readelf").arg("-n").arg(file));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(String::from))
        .unwrap_or_else(|| panic!("{} has no build ID", file.display()))
}

/// CRC-32 (IEEE, reflected), the checksum `.gnu_debuglink` carries.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Runs a tool the tests need, failing with a hint when it is not installed.
fn tool(name: &str) -> Command {
    let found = Command::new(name).arg("--version").output();
    assert!(
        found.map(|o| o.status.success()).unwrap_or(false),
        "`{name}` is needed by the install tests and is not on PATH (apt-get install {name})"
    );
    Command::new(name)
}

/// pkg-config looking at the prefix only: a gguf.pc installed elsewhere is never seen.
fn pkg_config(args: &[&str]) -> Vec<String> {
    let dir = prefix().join("lib/pkgconfig");
    let out = run(tool("pkg-config")
        .args(args)
        .arg("gguf")
        .env("PKG_CONFIG_PATH", &dir)
        .env("PKG_CONFIG_LIBDIR", &dir));
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// What the consumers print about the sample, from the Rust reader.
fn expected_output() -> String {
    let f = MappedFile::open(sample()).unwrap();
    let arch = f.get("general.architecture").unwrap();
    let arch = String::from_utf8(arch.as_bytes().unwrap().to_vec()).unwrap();
    let t = f.tensors().next().unwrap();
    let dims: Vec<String> = t.dims[..t.n_dims as usize]
        .iter()
        .map(u64::to_string)
        .collect();
    let tokens = f.get("tokenizer.ggml.tokens").unwrap();
    let tokens = tokens.as_array().unwrap();
    let first = tokens.strings().unwrap().next().unwrap().to_vec();
    format!(
        "library {VERSION}\narchitecture {arch}\nmetadata {}\ntensors {}\ntensor0 {} {} {} data\n\
         vocab {} {}\nok\n",
        f.metadata_count(),
        f.tensor_count(),
        String::from_utf8(t.name.to_vec()).unwrap(),
        t.dtype.name(),
        dims.join("x"),
        tokens.len(),
        String::from_utf8(first).unwrap(),
    )
}

/// The shared objects `exe` loads, as `ldd` resolves them: (name, path).
fn loaded_libraries(exe: &Path) -> Vec<(String, String)> {
    let out = run(Command::new("ldd").arg(exe).env_remove("LD_LIBRARY_PATH"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            let path = rest.split(" (").next().unwrap_or("").trim();
            Some((name.to_string(), path.to_string()))
        })
        .collect()
}

/// Runs a consumer on the sample and checks its output; then checks which libgguf it loads:
/// the prefix's `libgguf.so.<major>` (`shared`) or none (linked statically).
fn check_consumer(exe: &Path, shared: bool) {
    let out = Command::new(exe)
        .arg(sample())
        .arg(VERSION)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    assert!(out.status.success(), "{}: {}", exe.display(), show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected_output(),
        "{}",
        exe.display()
    );
    let libs = loaded_libraries(exe);
    let gguf: Vec<&(String, String)> = libs.iter().filter(|(n, _)| n.contains("gguf")).collect();
    if shared {
        let want = prefix().join(format!("lib/libgguf.so.{MAJOR}"));
        assert_eq!(
            gguf,
            [&(format!("libgguf.so.{MAJOR}"), want.display().to_string())],
            "{} does not load the installed library",
            exe.display()
        );
    } else {
        assert!(
            gguf.is_empty(),
            "{} is linked statically yet loads {gguf:?}",
            exe.display()
        );
    }
}

#[test]
fn the_header_and_the_library_carry_the_cargo_version() {
    let header = std::fs::read_to_string(manifest_dir().join("include/gguf.h")).unwrap();
    let define = |name: &str| {
        header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("include/gguf.h does not define {name}"))
            .trim()
            .to_string()
    };
    assert_eq!(define("LIBGGUF_VERSION"), format!("\"{VERSION}\""));
    assert_eq!(define("LIBGGUF_VERSION_MAJOR"), MAJOR);
    assert_eq!(define("LIBGGUF_VERSION_MINOR"), MINOR);
    assert_eq!(define("LIBGGUF_VERSION_PATCH"), PATCH);
    let linked = unsafe { std::ffi::CStr::from_ptr(gguf::ffi::gguf_library_version()) };
    assert_eq!(linked.to_str().unwrap(), VERSION);
}

#[test]
fn make_install_lays_out_the_library_header_and_package_files() {
    let prefix = prefix();
    let lib = prefix.join("lib");
    let real = format!("libgguf.so.{VERSION}");
    let soname = format!("libgguf.so.{MAJOR}");
    assert!(lib.join(&real).is_file());
    assert_eq!(
        std::fs::read_link(lib.join(&soname)).unwrap(),
        Path::new(&real)
    );
    assert_eq!(
        std::fs::read_link(lib.join("libgguf.so")).unwrap(),
        Path::new(&soname)
    );
    assert!(lib.join("libgguf.a").is_file());
    assert_eq!(
        std::fs::read(prefix.join("include/gguf.h")).unwrap(),
        std::fs::read(manifest_dir().join("include/gguf.h")).unwrap()
    );
    for f in ["ggufConfig.cmake", "ggufConfigVersion.cmake"] {
        assert!(
            lib.join("cmake/gguf").join(f).is_file(),
            "{f} is not installed"
        );
    }

    // The soname is set when install.sh links the library.
    let out = run(tool("readelf").args(["-d"]).arg(lib.join(&real)));
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(
        dynamic.contains(&format!("Library soname: [{soname}]")),
        "{real} has no soname {soname}:\n{dynamic}"
    );

    // Stripped, its debug information in lib/.debug/ (named by .gnu_debuglink, same build ID).
    let sections = elf_sections(&lib.join(&real));
    for section in &sections {
        assert!(
            !section.starts_with(".debug") && section != ".symtab",
            "{real} is not stripped: it has {section} (sections: {sections:?})"
        );
    }
    let debug_name = format!("{real}.debug");
    let debug_file = lib.join(".debug").join(&debug_name);
    assert!(
        debug_file.is_file(),
        "the debug information {} is not installed",
        debug_file.display()
    );
    let debug_sections = elf_sections(&debug_file);
    for section in [".debug_info", ".debug_line", ".symtab"] {
        assert!(
            debug_sections.iter().any(|s| s == section),
            "{} has no {section}: {debug_sections:?}",
            debug_file.display()
        );
    }
    let link = dump_section(&lib.join(&real), ".gnu_debuglink");
    let name_end = link
        .iter()
        .position(|&b| b == 0)
        .expect("a NUL-terminated name");
    assert_eq!(
        std::str::from_utf8(&link[..name_end]).unwrap(),
        debug_name,
        "the .gnu_debuglink of {real} names another file"
    );
    // The name, NUL-padded to 4 bytes, then the CRC-32 of the debug file in the ELF's byte order
    // (little-endian: this test runs on x86-64 Linux only, as `make install` does).
    let crc = u32::from_le_bytes(link[link.len() - 4..].try_into().unwrap());
    assert_eq!(link.len(), (name_end + 1).next_multiple_of(4) + 4);
    assert_eq!(
        crc,
        crc32(&std::fs::read(&debug_file).unwrap()),
        "the .gnu_debuglink CRC does not match {}",
        debug_file.display()
    );
    let id = build_id(&lib.join(&real));
    assert_eq!(
        build_id(&debug_file),
        id,
        "the debug file belongs to another build"
    );
    // The installed library is the one `make` built in target/release (same build ID), not a
    // build of its own.
    assert_eq!(
        build_id(&target_dir().join("release/libgguf.so")),
        id,
        "make install did not install the library make built"
    );

    // gguf.pc: version, flags, the static link's system libraries.
    assert_eq!(pkg_config(&["--modversion"]), [VERSION]);
    let inc = format!("-I{}", prefix.join("include").display());
    let libdir = format!("-L{}", lib.display());
    assert_eq!(pkg_config(&["--cflags"]), [inc]);
    assert_eq!(pkg_config(&["--libs"]), [libdir.clone(), "-lgguf".into()]);
    let statics = pkg_config(&["--static", "--libs"]);
    assert_eq!(
        statics,
        [
            &libdir,
            "-lgguf",
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl"
        ]
    );
}

/// `bin/gguf-inspect` runs from the prefix alone: it loads the prefix's library (run path
/// `$ORIGIN/../lib`) and, given no FILE, reads the sample installed in `share/libgguf/`.
#[test]
fn make_install_installs_the_inspector() {
    let prefix = prefix();
    let exe = prefix.join("bin/gguf-inspect");
    assert!(exe.is_file(), "bin/gguf-inspect is not installed");
    let installed_sample = prefix.join("share/libgguf/sample.gguf");
    assert_eq!(
        std::fs::read(&installed_sample).unwrap(),
        std::fs::read(sample()).unwrap()
    );
    // ldd shows the path as the run path builds it: `<prefix>/bin/../lib/...`.
    let want = prefix.join(format!("lib/libgguf.so.{MAJOR}"));
    let libs = loaded_libraries(&exe);
    assert!(
        libs.iter()
            .any(|(name, path)| *name == format!("libgguf.so.{MAJOR}")
                && std::fs::canonicalize(path).ok() == std::fs::canonicalize(&want).ok()),
        "{} does not load {}: {libs:?}",
        exe.display(),
        want.display()
    );
    // Run from a directory with no `testdata/`, so that only the installed sample can be read.
    let cwd = scratch("inspect-cwd");
    let inspect = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(&exe)
            .args(args)
            .current_dir(&cwd)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "gguf-inspect {args:?}: {}",
            show(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let sample = sample();
    let arch = inspect(&[
        "--metadata".as_ref(),
        "general.architecture".as_ref(),
        sample.as_ref(),
    ]);
    let f = MappedFile::open(&sample).unwrap();
    let want_arch = String::from_utf8(
        f.get("general.architecture")
            .unwrap()
            .as_bytes()
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert_eq!(arch.trim(), want_arch);
    assert_eq!(
        inspect(&["--tensors".as_ref()]),
        inspect(&["--tensors".as_ref(), sample.as_ref()])
    );
    let json = inspect(&["--json".as_ref()]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["shards"][0]["path"],
        installed_sample.display().to_string(),
        "{json}"
    );
    assert_eq!(json["tensor_count"], f.tensor_count());
}

#[test]
fn c_and_cpp_programs_build_with_pkg_config_and_run() {
    let dir = scratch("pkg-config");
    let src = manifest_dir().join("tests/install");
    let lib = prefix().join("lib");
    let package_version = format!(
        "-DGGUF_PACKAGE_VERSION=\"{}\"",
        pkg_config(&["--modversion"])[0]
    );
    let cflags = pkg_config(&["--cflags"]);
    let libs = pkg_config(&["--libs"]);
    // Static: the same flags with `--static`, libgguf.a named exactly (a bare -lgguf would find
    // libgguf.so beside it), the system libraries from Libs.private.
    let static_libs: Vec<String> = pkg_config(&["--static", "--libs"])
        .into_iter()
        .map(|f| {
            if f == "-lgguf" {
                "-l:libgguf.a".into()
            } else {
                f
            }
        })
        .collect();
    for (compiler, source, std) in [
        (cc(), "consumer.c", "-std=c99"),
        (cxx(), "consumer.cpp", "-std=c++11"),
    ] {
        for shared in [true, false] {
            let exe = dir.join(format!(
                "{}-{}",
                source.replace('.', "-"),
                if shared { "shared" } else { "static" }
            ));
            let mut cmd = Command::new(&compiler);
            cmd.args([std, "-Wall", "-Wextra", "-Werror", "-Wpedantic"])
                .args(&cflags)
                .arg(&package_version)
                .arg(src.join(source))
                .arg("-o")
                .arg(&exe);
            if shared {
                cmd.args(&libs).arg(format!("-Wl,-rpath,{}", lib.display()));
            } else {
                cmd.args(&static_libs);
            }
            run(&mut cmd);
            check_consumer(&exe, shared);
        }
    }
}

#[test]
fn c_and_cpp_programs_build_with_cmake_find_package_and_run() {
    let build = scratch("cmake");
    let out = run(tool("cmake")
        .arg("-S")
        .arg(manifest_dir().join("tests/install"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix().display()))
        .arg("-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON")
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .env_remove("MAKEFLAGS"));
    let log = String::from_utf8_lossy(&out.stdout);
    let package_dir = prefix().join("lib/cmake/gguf");
    assert!(
        log.contains(&format!("gguf_DIR={}", package_dir.display())),
        "CMake did not find the package in the prefix:\n{log}"
    );
    assert!(log.contains(&format!("gguf_VERSION={VERSION}")), "{log}");
    run(tool("cmake")
        .arg("--build")
        .arg(&build)
        .args(["--parallel", "2"])
        .env_remove("MAKEFLAGS"));
    for lang in ["c", "cpp"] {
        check_consumer(&build.join(format!("consumer_{lang}_shared")), true);
        check_consumer(&build.join(format!("consumer_{lang}_static")), false);
    }
}

#[test]
fn the_cmake_version_file_accepts_compatible_requests_only() {
    let next_minor = format!("{MAJOR}.{}", MINOR.parse::<u32>().unwrap() + 1);
    let next_major = format!("{}.0", MAJOR.parse::<u32>().unwrap() + 1);
    let cases = [
        (MAJOR.to_string(), false, true),
        (format!("{MAJOR}.{MINOR}"), false, true),
        (VERSION.to_string(), true, true),
        (next_minor, false, false),
        (next_major, false, false),
        (format!("{VERSION}.1"), true, false),
    ];
    for (i, (request, exact, ok)) in cases.into_iter().enumerate() {
        let build = scratch(&format!("cmake-version-{i}"));
        let out = tool("cmake")
            .arg("-S")
            .arg(manifest_dir().join("tests/install/version"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix().display()))
            .arg("-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON")
            .arg(format!("-DGGUF_REQUEST={request}"))
            .arg(format!("-DGGUF_EXACT={}", if exact { "ON" } else { "OFF" }))
            .output()
            .unwrap();
        assert_eq!(
            out.status.success(),
            ok,
            "find_package(gguf {request}{}) against {VERSION}: {}",
            if exact { " EXACT" } else { "" },
            show(&out)
        );
    }
}

/// `DESTDIR` staging: every file lands under the staging root with the final prefix written into
/// gguf.pc; `make uninstall` with the same variables removes all of it.
#[test]
fn destdir_staging_and_uninstall() {
    let stage = scratch("stage");
    let final_prefix = "/opt/libgguf-test";
    let vars = [
        format!("PREFIX={final_prefix}"),
        format!("DESTDIR={}", stage.display()),
    ];
    let mut install = vec!["install".to_string()];
    install.extend(vars.iter().cloned());
    make(&install);
    let root = stage.join(final_prefix.trim_start_matches('/'));
    let pc = std::fs::read_to_string(root.join("lib/pkgconfig/gguf.pc")).unwrap();
    assert!(
        pc.lines().any(|l| l == format!("prefix={final_prefix}")),
        "{pc}"
    );
    assert!(
        pc.lines().any(|l| l == format!("Version: {VERSION}")),
        "{pc}"
    );
    assert!(root.join(format!("lib/libgguf.so.{VERSION}")).is_file());
    assert!(root
        .join(format!("lib/.debug/libgguf.so.{VERSION}.debug"))
        .is_file());
    assert!(root.join("bin/gguf-inspect").is_file());
    assert!(root.join("bin/gguf-quantize").is_file());
    assert!(root.join("share/libgguf/sample.gguf").is_file());
    assert!(
        !Path::new(final_prefix).exists(),
        "DESTDIR was not honoured"
    );

    let mut uninstall = vec!["uninstall".to_string()];
    uninstall.extend(vars.iter().cloned());
    make(&uninstall);
    let mut left = Vec::new();
    let mut dirs = vec![stage.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !p.is_symlink() {
                dirs.push(p);
            } else {
                left.push(p);
            }
        }
    }
    assert!(left.is_empty(), "make uninstall left {left:?}");
}

/// The programs the tree builds (C tests, the inspector) link `target/<profile>/libgguf.so`,
/// which has no soname (only installed copies get one), so they load that file by its path:
/// `make test` always uses the fresh build, never an installed one.
#[test]
fn programs_built_in_the_tree_load_the_fresh_library() {
    let lib = lib_dir();
    let fresh = lib.join("libgguf.so");
    let exe = bin_dir("install").join("in-tree-consumer");
    let mut cmd = Command::new(cc());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", manifest_dir().join("include").display()))
        .arg(manifest_dir().join("tests/install/consumer.c"))
        .arg(format!("-L{}", lib.display()))
        .arg("-lgguf")
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    link_aside(&mut cmd, &exe);
    let libs = loaded_libraries(&exe);
    assert!(
        libs.contains(&("libgguf.so".to_string(), fresh.display().to_string())),
        "{} does not load {}: {libs:?}",
        exe.display(),
        fresh.display()
    );
    let out = Command::new(&exe)
        .arg(sample())
        .arg(VERSION)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected_output());
}
