//! Helpers shared by the integration tests: running a command; building this profile's
//! `libgguf.so` / `libgguf.a` for C programs to link against; the Python interpreter with the
//! pinned reference reader (PyPI `gguf`) and its script `tests/conformance/generate.py`; ggml's
//! parser and `tests/ggml/crosscheck.c`; the C API's last error. [`canon`] is the canonical JSON
//! view of a file compared with the reference's, [`raw`] hand-built GGUF bytes, [`rng`]
//! deterministic random numbers, [`values`] metadata values and parse outcomes as compared, [`golden`]
//! recorded fingerprints.
//!
//! Each test binary that uses it declares `mod common;` and compiles its own copy, so an item
//! one of them leaves unused would warn there: hence `dead_code` is allowed module-wide.

#![allow(dead_code)]

pub mod canon;
pub mod golden;
pub mod raw;
pub mod rng;
pub mod values;

use std::ffi::{CStr, OsStr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// How many rounds a randomized test whose outcome cannot depend on the platform runs: `full`
/// on the host, and `full / GGUF_TEST_ROUNDS_DIVISOR` (at least 1) where `tools/cross.sh` sets
/// that variable, for targets tested under emulation. Tests of what can differ by platform (byte
/// order, word size, alignment, the kernels' fallbacks) keep their full counts.
pub fn rounds(full: usize) -> usize {
    let divisor = std::env::var("GGUF_TEST_ROUNDS_DIVISOR")
        .ok()
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|&d| d > 0)
        .unwrap_or(1);
    (full / divisor).max(1)
}

/// The repository root.
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// This test binary as a command, for tests that run a scenario in a child process. When
/// cross-testing, `tools/cross.sh` sets `GGUF_TEST_RUNNER` to the target's runner (`qemu-s390x-static
/// -L ...`, `wine`): the child runs through it, as cargo ran the parent (binfmt_misc, which would
/// let the kernel start a foreign binary directly, is often not set up).
pub fn this_test_binary() -> Command {
    let exe = std::env::current_exe().unwrap();
    // Under Wine the test is a Windows program itself: it starts a Windows child directly
    // (there is no `wine` inside Wine).
    if cfg!(windows) {
        return Command::new(exe);
    }
    let runner = std::env::var("GGUF_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut cmd = Command::new(program);
            cmd.args(words).arg(exe);
            cmd
        }
        None => Command::new(exe),
    }
}

/// The name libtest knows a test by, for `--exact`: `name` in a test file's own binary,
/// `FILE::name` where the file is a module of the cross-platform suite (tests/suite/main.rs).
/// `module` is the caller's `module_path!()`, whose first element is the crate.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, within)) => format!("{within}::{name}"),
        None => name.to_string(),
    }
}

/// The C compiler: `$CC`, else `cc`.
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// A command from the words of environment variable `var` (a program and its arguments), when
/// it is set and not blank.
fn command_from_env(var: &str) -> Option<Command> {
    let words = std::env::var(var).ok()?;
    let mut words = words.split_whitespace();
    let mut cmd = Command::new(words.next()?);
    cmd.args(words);
    Some(cmd)
}

/// True when the tests run for another target than the host's (`tools/cross.sh` sets
/// `GGUF_TEST_CC`): C programs are then built with that target's compiler and run with its
/// runner, and the host's sanitizers and valgrind do not apply.
pub fn cross_testing() -> bool {
    std::env::var("GGUF_TEST_CC").is_ok_and(|v| !v.trim().is_empty())
}

/// The C compiler for programs that run on the target under test: `$GGUF_TEST_CC` (the
/// target's compiler and its flags, e.g. `gcc -m32 ...` or `s390x-linux-gnu-gcc`, set by
/// `tools/cross.sh`), else [`cc`].
pub fn target_cc() -> Command {
    command_from_env("GGUF_TEST_CC").unwrap_or_else(|| Command::new(cc()))
}

/// A command running `exe`, a program built for the target under test: through the target's
/// runner (`$GGUF_TEST_RUNNER`, e.g. `qemu-s390x-static -L ...`) when set. Under Wine the test
/// binary is itself a Windows program and starts another one directly.
pub fn target_command(exe: &Path) -> Command {
    match command_from_env("GGUF_TEST_RUNNER").filter(|_| !cfg!(windows)) {
        Some(mut cmd) => {
            cmd.arg(exe);
            cmd
        }
        None => Command::new(exe),
    }
}

/// The directory of C programs built ahead for the target under test, when the test binary
/// cannot build them itself: `$GGUF_TEST_C_PROGRAMS` (set by `tools/cross.sh` for Windows, where
/// a test binary under Wine can start a Linux compiler but never learns its exit status).
pub fn prebuilt_c_programs() -> Option<PathBuf> {
    std::env::var_os("GGUF_TEST_C_PROGRAMS")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// The libraries [`lib_dir`] holds for C programs: shared (with, on Windows, its import
/// library) and static.
pub const fn c_libraries() -> &'static [&'static str] {
    if cfg!(windows) {
        &["gguf.dll", "libgguf.dll.a", "libgguf.a"]
    } else if cfg!(target_os = "macos") {
        &["libgguf.dylib", "libgguf.a"]
    } else {
        &["libgguf.so", "libgguf.a"]
    }
}

/// A process's exit status, stdout and stderr, for an assertion message.
pub fn show(output: &Output) -> String {
    format!(
        "status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `cmd` to completion and panics, showing its output, unless it exits with status 0.
pub fn run(cmd: &mut Command) -> Output {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "command failed: {cmd:?}\n{}",
        show(&output)
    );
    output
}

/// The directory holding this test's profile's artifacts (`target/debug`, `target/release`...),
/// found from the test executable (`<it>/deps/<test>-<hash>`), and the cargo arguments that
/// build the library in that profile.
fn profile_dir_and_flags() -> (PathBuf, Vec<String>) {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lies in <target>/<profile>/deps")
        .to_path_buf();
    let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
    let mut flags = vec!["build".to_string(), "--lib".to_string()];
    match profile {
        "debug" => {}
        "release" => flags.push("--release".into()),
        other => flags.extend(["--profile".to_string(), other.to_string()]),
    }
    let target_dir = dir.parent().expect("target dir");
    // `--target <triple>` puts artifacts in <target>/<triple>/<profile>, and cargo marks
    // <target> with CACHEDIR.TAG: a build that mistook <target>/<triple> for the target directory
    // would put the host's libgguf where the target's belongs.
    let outer = target_dir.parent().expect("target dir");
    if outer.join("CACHEDIR.TAG").exists() {
        let triple = target_dir.file_name().and_then(|n| n.to_str()).unwrap();
        flags.extend(["--target".to_string(), triple.to_string()]);
        flags.extend(["--target-dir".to_string(), outer.display().to_string()]);
    } else {
        flags.extend(["--target-dir".to_string(), target_dir.display().to_string()]);
    }
    (dir, flags)
}

/// Removes from `cmd`'s environment the variables cargo set for this test (the package's name,
/// version and manifest, `OUT_DIR`), for a cargo or make run inside a test.
pub fn without_cargo_test_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_"]
            .iter()
            .any(|p| name.starts_with(p))
            || name == "OUT_DIR"
        {
            cmd.env_remove(&name);
        }
    }
}

/// Builds the cdylib and staticlib in this test's profile (once per test process: `cargo test`
/// builds only the rlib, and would leave a stale `libgguf.so` / `libgguf.a` behind) and returns
/// the directory holding them.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let (dir, flags) = profile_dir_and_flags();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        // Build scripts that watch cargo's variables (ring's) would otherwise see them change
        // and rebuild, here and again at the next `cargo test`.
        without_cargo_test_env(&mut cmd);
        run(cmd.args(&flags).current_dir(manifest_dir()));
        for lib in c_libraries() {
            assert!(dir.join(lib).is_file(), "{} was not built", lib);
        }
        dir
    })
}

/// A directory for the executables test `test` builds in this profile:
/// `target/tmp/<test>/bin/<profile>` (`target/tmp` is shared by all profiles).
pub fn bin_dir(test: &str) -> PathBuf {
    let profile = lib_dir().file_name().expect("profile directory");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(test)
        .join("bin")
        .join(profile);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles and links into `exe` with `cmd` (a compiler command lacking only `-o`): the output
/// goes to a per-process name beside `exe` and is then renamed, so that concurrent test runs
/// never overwrite a binary another one is running.
pub fn link_aside(cmd: &mut Command, exe: &Path) {
    let name = exe.file_name().expect("file name").to_string_lossy();
    let part = exe.with_file_name(format!(".{name}.{}", std::process::id()));
    run(cmd.arg("-o").arg(&part));
    std::fs::rename(&part, exe).unwrap();
}

/// The flags every C test program is compiled with.
pub const CFLAGS: &[&str] = &[
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fno-omit-frame-pointer",
    "-g",
    "-pthread",
];

/// Added to [`CFLAGS`] for the sanitizer runs (valgrind runs use plain builds).
pub const SANITIZE: &[&str] = &["-fsanitize=address,undefined", "-fno-sanitize-recover=all"];

/// What a Rust staticlib needs on Linux (`cargo rustc --lib --crate-type staticlib -- --print
/// native-static-libs` prints it).
pub const STATIC_NATIVE_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// Against libgguf.so, with ASan and UBSan.
    Shared,
    /// Against libgguf.a, with ASan and UBSan.
    Static,
    /// Against libgguf.so, without sanitizers, for valgrind.
    Plain,
}

/// C program `c_tests/PROGRAM.c` built for `link` (in test `test`'s [`bin_dir`]): compiled here
/// with the target's C compiler ([`target_cc`]), or, on Windows, the one `tools/cross.sh` built
/// ahead (`PROGRAM-shared.exe` through the DLL's
/// import library, `PROGRAM-static.exe` against `libgguf.a`). The sanitizers are the host's
/// (cross compilers and emulators lack them): other targets build without.
pub fn compile_c_program(test: &str, program: &str, link: Link) -> PathBuf {
    if let Some(dir) = prebuilt_c_programs() {
        let exe = dir.join(format!("{program}-{link:?}.exe").to_lowercase());
        assert!(
            exe.is_file(),
            "{} was not built ahead (tools/cross.sh builds c_tests/ for Windows)",
            exe.display()
        );
        return exe;
    }
    let root = manifest_dir();
    let lib = lib_dir();
    let exe = bin_dir(test).join(format!("{program}-{link:?}").to_lowercase());
    let mut cmd = target_cc();
    cmd.args(CFLAGS);
    if !matches!(link, Link::Plain) && !cross_testing() {
        cmd.args(SANITIZE);
    }
    // -Ic_tests for check.h, the helpers every program includes (a quoted include finds it next
    // to the .c file anyway; the flag says where it comes from).
    cmd.arg(format!("-I{}", root.join("include").display()))
        .arg(format!("-I{}", root.join("c_tests").display()))
        .arg(root.join("c_tests").join(format!("{program}.c")));
    match link {
        Link::Shared | Link::Plain => {
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lgguf")
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        Link::Static => {
            cmd.arg(lib.join("libgguf.a")).args(STATIC_NATIVE_LIBS);
        }
    }
    link_aside(&mut cmd, &exe);
    exe
}

/// A small file of every kind of part, written by `gguf::Writer` in `version` and `order`:
/// scalar, string, array of `tokens` strings and nested-array metadata, a Q8_0 and an F32
/// tensor.
pub fn rich_file(version: u32, order: gguf::ByteOrder, tokens: usize) -> Vec<u8> {
    let mut w = gguf::Writer::new();
    w.set_version(version).unwrap().set_byte_order(order);
    w.add_metadata("general.architecture", gguf::MetadataValue::string("llama"))
        .unwrap();
    w.add_metadata("n", gguf::MetadataValue::U32(7)).unwrap();
    w.add_metadata(
        "tokens",
        gguf::MetadataValue::Array(
            gguf::ValueType::String,
            (0..tokens)
                .map(|i| gguf::MetadataValue::string(format!("tok{i}")))
                .collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "nested",
        gguf::MetadataValue::Array(
            gguf::ValueType::Array,
            vec![gguf::MetadataValue::Array(
                gguf::ValueType::Int8,
                vec![gguf::MetadataValue::I8(-1)],
            )],
        ),
    )
    .unwrap();
    w.add_tensor("a", &[32, 2], gguf::DataType::Q8_0, vec![1; 68])
        .unwrap();
    w.add_tensor("b", &[5], gguf::DataType::F32, (0..20).collect())
        .unwrap();
    w.to_bytes().unwrap()
}

/// A file of `n` F32 tensors of `elems` elements each, written by `gguf::Writer`, and the
/// tensors' bytes (tensor k's byte i is `i ^ (k + 1)`, truncated to a byte).
pub fn model_file(n: usize, elems: u64) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut w = gguf::Writer::new();
    w.add_metadata("general.architecture", gguf::MetadataValue::string("test"))
        .unwrap();
    let mut data = Vec::new();
    for k in 0..n {
        let bytes: Vec<u8> = (0..elems * 4).map(|i| (i as u8) ^ (k as u8 + 1)).collect();
        w.add_tensor(
            format!("t{k}"),
            &[elems],
            gguf::DataType::F32,
            bytes.clone(),
        )
        .unwrap();
        data.push(bytes);
    }
    (w.to_bytes().unwrap(), data)
}

/// Adds every tensor of `f` to `w`: name, shape, type and a copy of its data.
pub fn add_tensors_from<S: AsRef<[u8]>>(w: &mut gguf::Writer, f: &gguf::GgufFile<S>) {
    for t in f.tensors() {
        w.add_tensor(
            t.name,
            &t.dims[..t.n_dims as usize],
            t.dtype,
            t.data.to_vec(),
        )
        .unwrap();
    }
}

/// The version of the reference reader (PyPI `gguf`) pinned in
/// `tests/conformance/requirements.txt`.
pub fn pinned_reference_version() -> String {
    let reqs = std::fs::read_to_string(manifest_dir().join("tests/conformance/requirements.txt"))
        .expect("read tests/conformance/requirements.txt");
    reqs.lines()
        .find_map(|l| l.trim().strip_prefix("gguf=="))
        .expect("requirements.txt pins gguf==VERSION")
        .trim()
        .to_string()
}

/// The Python interpreter with numpy and the pinned reference reader
/// ([`pinned_reference_version`]) installed: `$GGUF_PYTHON` when set and it has them, else
/// `<repo>/.venv/bin/python` (`make venv`). Found once per test process. Panics, naming every
/// interpreter tried and why it would not do, when neither has them: the tests that need it
/// fail, never skip.
pub fn reference_python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let pinned = pinned_reference_version();
        let mut candidates = Vec::new();
        if let Some(p) = std::env::var_os("GGUF_PYTHON").filter(|p| !p.is_empty()) {
            candidates.push(PathBuf::from(p));
        }
        candidates.push(manifest_dir().join(".venv/bin/python"));
        let probe = "import numpy, gguf, importlib.metadata as m; print(m.version('gguf'))";
        let mut tried = Vec::new();
        for py in candidates {
            match Command::new(&py).args(["-c", probe]).output() {
                Ok(o) if o.status.success() => {
                    let version = String::from_utf8_lossy(&o.stdout).trim().to_string();
                    if version == pinned {
                        if !tried.is_empty() {
                            eprintln!("using {}; {}", py.display(), tried.join("; "));
                        }
                        return py;
                    }
                    tried.push(format!(
                        "{}: has gguf {version}, not the pinned {pinned}",
                        py.display()
                    ));
                }
                Ok(o) => tried.push(format!(
                    "{}: cannot import numpy and gguf ({}): {}",
                    py.display(),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => tried.push(format!("{}: cannot run it: {e}", py.display())),
            }
        }
        panic!(
            "this test needs Python 3 with numpy and the reference reader (PyPI gguf=={pinned}): \
             run `make venv` (creates .venv from tests/conformance/requirements.txt) or point \
             GGUF_PYTHON at an interpreter that has them. Tried:\n  {}",
            tried.join("\n  ")
        );
    })
}

/// Runs the reference script `tests/conformance/generate.py` with `args` under
/// [`reference_python`]; panics, showing its output, unless it exits with status 0.
pub fn run_reference<I, A>(args: I) -> Output
where
    I: IntoIterator<Item = A>,
    A: AsRef<OsStr>,
{
    let mut cmd = Command::new(reference_python());
    cmd.arg(manifest_dir().join("tests/conformance/generate.py"))
        .args(args);
    run(&mut cmd)
}

/// The directory holding ggml's `libggml-base.so`: `$GGUF_GGML_LIB_DIR`, else `target/ggml`
/// (`make ggml`); panics when it is not there.
pub fn ggml_dir() -> PathBuf {
    let dir = std::env::var_os("GGUF_GGML_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("target/ggml"));
    assert!(
        dir.join("libggml-base.so").is_file(),
        "ggml's libggml-base.so is not in {}: run `make ggml` (tools/fetch-ggml.sh)",
        dir.display()
    );
    dir
}

/// llama.cpp's sources as the llama-cpp-python sdist vendors them (its tokenizer test files
/// `models/ggml-vocab-*.gguf`): `$GGUF_LLAMA_SRC_DIR`, else `target/llama.cpp`
/// (`make llama-src`); panics when they are not there.
pub fn llama_src_dir() -> PathBuf {
    let dir = std::env::var_os("GGUF_LLAMA_SRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("target/llama.cpp"));
    assert!(
        dir.join("models/ggml-vocab-llama-spm.gguf").is_file(),
        "llama.cpp's tokenizer test files are not in {}: run `make llama-src` \
         (tools/fetch-llama-src.sh)",
        dir.display()
    );
    dir
}

/// `tests/ggml/crosscheck.c` built against this profile's libgguf and ggml's `libggml-base.so`
/// (once per test process): it opens each file named on its command line with both parsers and
/// prints a line of verdicts per file.
pub fn crosscheck_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let root = manifest_dir();
        let (lib, ggml) = (lib_dir(), ggml_dir());
        let exe = bin_dir("ggml_crosscheck").join("crosscheck");
        let mut cmd = Command::new(cc());
        cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
            .arg(format!("-I{}", root.join("include").display()))
            .arg(format!("-I{}", root.join("tests/ggml").display()))
            .arg(root.join("tests/ggml/crosscheck.c"))
            .arg(format!("-L{}", lib.display()))
            .arg("-lgguf")
            .arg(format!("-L{}", ggml.display()))
            .arg("-l:libggml-base.so")
            .arg(format!("-Wl,-rpath,{}:{}", lib.display(), ggml.display()));
        link_aside(&mut cmd, &exe);
        exe
    })
}

/// The C API's message for this thread's last failure (`gguf_last_error`).
pub fn last_error() -> String {
    // SAFETY: gguf_last_error never returns NULL, and the string lives until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(gguf::ffi::last_error::gguf_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// `gguf_read_tensors` of the handle's first `n` tensors (`threads`, `flags`, `progress`,
/// user pointer NULL), each into a fresh buffer of its size filled with 0xEE first (bytes left
/// unwritten show): whether it succeeded, the tensors' records and the buffers.
///
/// # Safety
/// `h` is a live handle with at least `n` tensors.
pub unsafe fn read_tensors(
    h: gguf::ffi::GGUFFile,
    n: u64,
    threads: u32,
    flags: u32,
    progress: gguf::ffi::GGUFProgressFn,
) -> (bool, Vec<*const gguf::ffi::GGUFTensorInfo>, Vec<Vec<u8>>) {
    use gguf::ffi::{gguf_get_tensor_by_index, gguf_read_tensors, GGUFTensorInfo};
    // SAFETY: the caller's contract; every buffer holds its tensor's size and outlives the call.
    unsafe {
        let infos: Vec<*const GGUFTensorInfo> =
            (0..n).map(|k| gguf_get_tensor_by_index(h, k)).collect();
        let mut bufs: Vec<Vec<u8>> = infos
            .iter()
            .map(|&i| vec![0xEE; (*i).size_bytes as usize])
            .collect();
        let dsts: Vec<*mut std::ffi::c_void> =
            bufs.iter_mut().map(|b| b.as_mut_ptr().cast()).collect();
        let ok = gguf_read_tensors(
            h,
            infos.as_ptr(),
            dsts.as_ptr(),
            n,
            threads,
            flags,
            progress,
            std::ptr::null_mut(),
        );
        (ok, infos, bufs)
    }
}
