//! Helpers shared by the integration tests that drive external processes (`tests/c_api.rs`,
//! `tests/header.rs`, `tests/inspect.rs`): running a command, and building this profile's
//! `libgguf.so` / `libgguf.a` for C programs to link against.
//!
//! Each test binary that uses it declares `mod common;` and compiles its own copy, so an item
//! one of them leaves unused would warn there: hence `dead_code` is allowed module-wide.

#![allow(dead_code)]

pub mod raw;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The C compiler: `$CC`, else `cc`.
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
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
    if !target_dir.join("CACHEDIR.TAG").exists() {
        // `--target <triple>` puts artifacts in <target>/<triple>/<profile>.
        let triple = target_dir.file_name().and_then(|n| n.to_str()).unwrap();
        flags.extend(["--target".to_string(), triple.to_string()]);
        let target_dir = target_dir.parent().expect("target dir");
        flags.extend(["--target-dir".to_string(), target_dir.display().to_string()]);
    } else {
        flags.extend(["--target-dir".to_string(), target_dir.display().to_string()]);
    }
    (dir, flags)
}

/// Builds the cdylib and staticlib in this test's profile (once per test process: `cargo test`
/// builds only the rlib, and would leave a stale `libgguf.so` / `libgguf.a` behind) and returns
/// the directory holding them.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let (dir, flags) = profile_dir_and_flags();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run(Command::new(cargo).args(&flags).current_dir(manifest_dir()));
        for lib in ["libgguf.so", "libgguf.a"] {
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
