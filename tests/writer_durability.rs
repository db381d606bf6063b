//! The writer never loses a file: every output is written to a temporary file beside the
//! destination and renamed over it, so that a failure (file size limit, full file system, an
//! I/O error, the process killed at any instant) leaves the destination exactly as it was.
//! These tests use the Rust API (`Writer`, `TensorStream`); `c_tests/test_writer.c` covers the
//! same through the C functions, which wrap it.
//!
//! * In-place editing (`Writer::from_model` then `Writer::write_file` over the source) for
//!   every kind of model: mapped, read into memory (`OpenOptions::read`), lent memory, a split
//!   model gathered over its first shard. The new file reads back right and the old model keeps
//!   reading the old contents until dropped.
//! * A file size limit (`RLIMIT_FSIZE`, SIGXFSZ ignored: writes fail with EFBIG) in a child
//!   process, always run: `Writer::write_file` and streaming fail, the destination keeps its old
//!   bytes, no temporary file remains, the writer can write again to another path, and a
//!   streaming failure sticks (same code and message) until another file is begun.
//! * A full 1 MiB tmpfs (`mount -t tmpfs`), run where mounting is permitted (root with
//!   CAP_SYS_ADMIN); where it is refused the test says so on stderr and the file size limit test
//!   above is the one that always asserts.
//! * `kill -9` of a child streaming a file: at fixed points (after the header, after a tensor,
//!   before `finish`) and at random instants of a loop of complete writes. The destination is
//!   always the old bytes (or absent) or a complete new file, and the only other files are the
//!   recognisable temporary ones.
//! * Exact path bytes (`caf\xe9.gguf`, through the C API, whose paths are bytes), the old
//!   permissions kept, a symbolic link kept.

mod common;

use gguf::ffi::*;
use gguf::source::Source;
use gguf::{DataType, ErrorCode, GgufFile, MetadataValue, Model, OpenOptions, Writer};
use std::ffi::{CStr, CString, OsStr};
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// Set in a child process: the name of the scenario it runs.
const CHILD: &str = "GGUF_DURABILITY_CHILD";
const DEST: &str = "GGUF_DURABILITY_DEST";
const STAGE: &str = "GGUF_DURABILITY_STAGE";

// ---------------------------------------------------------------------------------------------
// Helpers.

/// A fresh, empty directory for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("writer_durability")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The bytes of tensor `i` of a model of version `version`.
fn tensor_data(version: u32, i: usize, size: usize) -> Vec<u8> {
    (0..size)
        .map(|j| {
            (j as u32)
                .wrapping_mul(31)
                .wrapping_add(i as u32 * 7 + version) as u8
        })
        .collect()
}

/// Tensor sizes: small ones (inside the header's pages) and large ones (several pages).
const SIZES: [usize; 4] = [16, 3 << 20, 64, 1 << 20];

/// A model whose key `edit.n` is `version`, with a vocabulary and the tensors of `SIZES`.
fn model(version: u32) -> Writer {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    w.add_metadata("edit.n", MetadataValue::U32(version))
        .unwrap();
    let tokens = (0..1000)
        .map(|i| MetadataValue::string(format!("tok{i}")))
        .collect();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        MetadataValue::Array(gguf::ValueType::String, tokens),
    )
    .unwrap();
    for (i, &size) in SIZES.iter().enumerate() {
        w.add_tensor(
            format!("t.{i}"),
            &[size as u64],
            DataType::I8,
            tensor_data(version, i, size),
        )
        .unwrap();
    }
    w
}

/// Checks that `path` holds model `version` exactly (read with the Rust reader).
fn check_model(path: &Path, version: u32) {
    let f = GgufFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        f.get("edit.n").and_then(|v| v.as_u64()),
        Some(version as u64)
    );
    assert_eq!(f.tensor_count(), SIZES.len());
    for (i, &size) in SIZES.iter().enumerate() {
        let t = f.tensor(format!("t.{i}")).unwrap();
        assert!(
            t.data == tensor_data(version, i, size),
            "{}: tensor {i}",
            path.display()
        );
    }
    for key in ["split.no", "split.count", "split.tensors.count"] {
        assert!(f.get(key).is_none(), "{}: {key}", path.display());
    }
}

/// The version of the model at `path`, checking every byte of it.
fn version_of(path: &Path) -> u32 {
    let f = GgufFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v = f.get("edit.n").and_then(|v| v.as_u64()).unwrap() as u32;
    drop(f);
    check_model(path, v);
    v
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn last_error() -> String {
    // SAFETY: gguf_last_error never returns NULL; the string lives until the next failing call.
    unsafe { CStr::from_ptr(gguf_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// The names in `dir` other than those given, sorted.
fn others(dir: &Path, known: &[&OsStr]) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !known.contains(&n.as_os_str()))
        .map(|n| n.as_bytes().to_vec())
        .collect();
    names.sort();
    names
}

/// Whether `name` is a temporary file of the writer for destination `dest_name`.
fn is_temp(name: &[u8], dest_name: &str) -> bool {
    name.starts_with(format!(".{dest_name}.gguf-tmp-").as_bytes())
}

/// Reads key `key` (a UINT32) through the C API.
fn c_u32(f: GGUFFile, key: &str) -> u32 {
    // SAFETY: `f` is a live handle; the record lives as long as it.
    unsafe {
        let kv = gguf_get_metadata(f, c(key).as_ptr());
        assert!(!kv.is_null(), "{key}: {}", last_error());
        (*kv).value.u32
    }
}

/// The command that runs this test binary's scenario `name` in a child process.
fn child(name: &str) -> Command {
    let mut cmd = common::this_test_binary();
    cmd.args([
        &common::test_path(module_path!(), name),
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, name);
    cmd
}

fn in_child(name: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|n| n == name)
}

// ---------------------------------------------------------------------------------------------
// In-place editing, for every kind of handle.

#[derive(Clone, Copy, Debug)]
enum Kind {
    Mapped,
    Read,
    Memory,
    Split,
}

fn edit_in_place(kind: Kind) {
    let dir = fresh_dir(&format!("in_place_{kind:?}"));
    let path = match kind {
        Kind::Split => {
            let shards = model(1).into_shards(1).unwrap();
            let n = shards.len();
            for (i, s) in shards.into_iter().enumerate() {
                s.write_file(dir.join(Writer::shard_path("m", i, n)))
                    .unwrap();
            }
            dir.join(Writer::shard_path("m", 0, n))
        }
        _ => {
            let p = dir.join("model.gguf");
            model(1).write_file(&p).unwrap();
            p
        }
    };
    let src: Arc<Model<Source>> = Arc::new(
        match kind {
            Kind::Mapped | Kind::Split => Model::open(&path, OpenOptions::default()),
            Kind::Read => Model::open(
                &path,
                OpenOptions {
                    read: true,
                    ..OpenOptions::default()
                },
            ),
            Kind::Memory => {
                let memory: &'static [u8] = Vec::leak(std::fs::read(&path).unwrap());
                GgufFile::from_bytes(Source::Lent(memory))
                    .and_then(|f| Model::single(f, "<memory>".to_string()))
            }
        }
        .unwrap_or_else(|e| panic!("{kind:?}: {e}")),
    );
    if let Kind::Split = kind {
        assert_eq!(src.shards().len(), SIZES.len());
    }
    let mut w = Writer::from_model(&src).unwrap();
    w.set_metadata("edit.n", MetadataValue::U32(2)).unwrap();
    // Each tensor's new contents: version 2's bytes for tensor 1, the old ones elsewhere.
    w.write_file(&path)
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    drop(w);
    // The new file: the key changed, every tensor as it was, no split keys.
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.get("edit.n").and_then(|v| v.as_u64()), Some(2));
    assert_eq!(
        f.get("tokenizer.ggml.tokens")
            .and_then(|v| v.as_array())
            .map(|a| a.len()),
        Some(1000)
    );
    for (i, &size) in SIZES.iter().enumerate() {
        assert!(
            f.tensor(format!("t.{i}")).unwrap().data == tensor_data(1, i, size),
            "{kind:?}: new file, tensor {i}"
        );
    }
    for key in ["split.no", "split.count", "split.tensors.count"] {
        assert!(f.get(key).is_none(), "{kind:?}: {key}");
    }
    // The old model still reads the old contents, every byte of every tensor.
    assert_eq!(
        src.first().get("edit.n").and_then(|v| v.as_u64()),
        Some(1),
        "{kind:?}: old model"
    );
    for (i, &size) in SIZES.iter().enumerate() {
        assert!(
            src.tensor(format!("t.{i}")).unwrap().info.data == tensor_data(1, i, size),
            "{kind:?}: old model, tensor {i}"
        );
    }
    drop(src);
    // No temporary file is left.
    let shards: Vec<String> = (0..SIZES.len())
        .map(|i| Writer::shard_path("m", i, SIZES.len()))
        .collect();
    let mut known: Vec<&OsStr> = shards.iter().map(OsStr::new).collect();
    known.push(OsStr::new("model.gguf"));
    assert_eq!(others(&dir, &known), Vec::<Vec<u8>>::new());
}

#[test]
fn in_place_edit_of_a_mapped_file() {
    edit_in_place(Kind::Mapped);
}

#[test]
fn in_place_edit_of_a_file_read_into_memory() {
    edit_in_place(Kind::Read);
}

#[test]
fn in_place_edit_of_a_file_opened_from_memory() {
    edit_in_place(Kind::Memory);
}

#[test]
fn in_place_edit_of_a_split_model_over_its_first_shard() {
    edit_in_place(Kind::Split);
}

/// The Rust API's editor: a file's metadata copied, a key changed, the tensors copied from the
/// mapping, written over the file the mapping is of.
#[test]
fn in_place_edit_from_rust() {
    let dir = fresh_dir("in_place_rust");
    let path = dir.join("model.gguf");
    model(1).write_file(&path).unwrap();
    let old = GgufFile::open(&path).unwrap();
    let mut w = Writer::new();
    w.copy_metadata_from(&old).unwrap();
    w.set_metadata("edit.n", MetadataValue::U32(2)).unwrap();
    common::add_tensors_from(&mut w, &old);
    w.write_file(&path).unwrap();
    assert_eq!(old.get("edit.n").and_then(|v| v.as_u64()), Some(1));
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.get("edit.n").and_then(|v| v.as_u64()), Some(2));
    for (i, &size) in SIZES.iter().enumerate() {
        assert!(old.tensor(format!("t.{i}")).unwrap().data == tensor_data(1, i, size));
        assert!(f.tensor(format!("t.{i}")).unwrap().data == tensor_data(1, i, size));
    }
}

// ---------------------------------------------------------------------------------------------
// Failures: a file size limit (always), a full file system (where mounting is permitted).

/// What the failure scenarios share: `dest` holds model 1 before and after every failure.
/// `fail_on` makes writes fail (lowers the limit), `allow` lets them succeed again.
fn failures_leave_everything_as_it_was(
    dir: &Path,
    fail_on: &dyn Fn(),
    allow: &dyn Fn(),
    expected_message: &str,
) {
    let dest = dir.join("model.gguf");
    let old = std::fs::read(&dest).unwrap();
    let unchanged = |what: &str| {
        assert!(
            std::fs::read(&dest).unwrap() == old,
            "{what}: the destination changed"
        );
        assert_eq!(
            others(dir, &[OsStr::new("model.gguf"), OsStr::new("other.gguf")]),
            Vec::<Vec<u8>>::new(),
            "{what}: files left"
        );
    };

    // The Rust writer.
    fail_on();
    let e = model(2).write_file(&dest).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(e.to_string().contains(expected_message), "{e}");
    assert!(e.to_string().contains("model.gguf"), "{e}");
    unchanged("Writer::write_file");

    // A writer whose data is in memory: fails, changes nothing, and writes elsewhere later.
    let big: Vec<Vec<u8>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &s)| tensor_data(2, i, s))
        .collect();
    let mut w = Writer::new();
    w.set_metadata("edit.n", MetadataValue::U32(2)).unwrap();
    for (i, data) in big.iter().enumerate() {
        w.add_tensor(
            format!("t.{i}"),
            &[data.len() as u64],
            DataType::I8,
            data.clone(),
        )
        .unwrap();
    }
    let e = w.write_file(&dest).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(e.to_string().contains(expected_message), "{e}");
    unchanged("Writer::write_file of a writer kept");
    allow();
    let other = dir.join("other.gguf");
    w.write_file(&other)
        .unwrap_or_else(|e| panic!("the writer is reusable after a failure: {e}"));
    let f = GgufFile::open(&other).unwrap();
    assert_eq!(f.get("edit.n").and_then(|v| v.as_u64()), Some(2));
    assert!(f.tensor("t.1").unwrap().data == big[1]);
    drop(f);
    std::fs::remove_file(&other).unwrap();

    // Streaming: the first failure sticks, the temporary file goes, the destination stays.
    fail_on();
    let mut stream = w.begin_file(&dest).unwrap();
    stream.write_tensor_data(&big[0]).unwrap();
    let e = stream.write_tensor_data(&big[1]).unwrap_err();
    let code = e.code();
    let message = e.to_string();
    assert_eq!(code, ErrorCode::Io);
    assert!(message.contains(expected_message), "{message}");
    unchanged("a failed stream");
    allow();
    // A retry of the failed tensor, the next one, and finish: all fail the same way.
    for (i, data) in [(1, &big[1]), (2, &big[2])] {
        let e = stream
            .write_tensor_data(data)
            .expect_err(&format!("tensor {i} after a failure"));
        assert_eq!(e.code(), code);
        assert_eq!(e.to_string(), message);
    }
    let e = stream.finish().unwrap_err();
    assert_eq!(e.code(), code);
    assert_eq!(e.to_string(), message);
    let e = stream.finish().unwrap_err();
    assert_eq!(e.to_string(), message);
    unchanged("after retries");
    // A new file starts afresh.
    let mut stream = w.begin_file(&dest).unwrap();
    for data in &big {
        stream.write_tensor_data(data).unwrap();
    }
    stream.finish().unwrap();
    let f = GgufFile::open(&dest).unwrap();
    assert_eq!(f.get("edit.n").and_then(|v| v.as_u64()), Some(2));
    for (i, data) in big.iter().enumerate() {
        assert!(f.tensor(format!("t.{i}")).unwrap().data == &data[..]);
    }
}

fn set_file_size_limit(limit: libc::rlim_t) {
    let r = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads one rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &r) }, 0);
}

/// Run in a child process: writes over `$DEST/model.gguf` with a 1 MiB file size limit.
#[test]
fn child_file_size_limit() {
    if !in_child("child_file_size_limit") {
        return;
    }
    // SAFETY: ignoring SIGXFSZ makes writes past the limit fail with EFBIG instead of killing.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let dir = PathBuf::from(std::env::var_os(DEST).unwrap());
    failures_leave_everything_as_it_was(
        &dir,
        &|| set_file_size_limit(1 << 20),
        &|| set_file_size_limit(libc::RLIM_INFINITY),
        "File too large",
    );
    println!("child_file_size_limit: ok");
}

#[test]
fn a_file_size_limit_changes_nothing() {
    let dir = fresh_dir("file_size_limit");
    model(1).write_file(dir.join("model.gguf")).unwrap();
    let out = child("child_file_size_limit")
        .env(DEST, &dir)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("child_file_size_limit: ok"), "{text}");
}

/// A 1 MiB tmpfs: the file system fills up. Mounting needs root, which CI has: as root a failed
/// mount fails the test.
#[test]
fn a_full_file_system_changes_nothing() {
    let dir = fresh_dir("full_fs");
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&dir)
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        other => {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            // As root (CI, the developers' machines) the mount must work: a test that passes
            // without running would hide a regression.
            assert!(!root, "mounting a 1 MiB tmpfs failed as root: {other:?}");
            eprintln!(
                "a_full_file_system_changes_nothing: not root, so no tmpfs can be mounted \
                 ({other:?}); the file size limit test covers the failure paths"
            );
            return;
        }
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&dir);
    // A small old file fits; the new one (4 MiB) does not.
    let mut small = Writer::new();
    small
        .add_metadata("edit.n", MetadataValue::U32(1))
        .unwrap()
        .add_tensor("t", &[4], DataType::I8, vec![1, 2, 3, 4])
        .unwrap();
    small.write_file(dir.join("model.gguf")).unwrap();
    let dest = dir.join("model.gguf");
    let old = std::fs::read(&dest).unwrap();
    let e = model(2).write_file(&dest).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(e.to_string().contains("No space left"), "{e}");
    assert!(std::fs::read(&dest).unwrap() == old);
    assert_eq!(
        others(&dir, &[OsStr::new("model.gguf")]),
        Vec::<Vec<u8>>::new()
    );
    // Streaming: sticky, and nothing left.
    let data: Vec<Vec<u8>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &s)| tensor_data(2, i, s))
        .collect();
    let mut w = Writer::new();
    for (i, d) in data.iter().enumerate() {
        w.add_tensor_info(format!("t.{i}"), &[d.len() as u64], DataType::I8)
            .unwrap();
    }
    let mut stream = w.begin_file(&dest).unwrap();
    stream.write_tensor_data(&data[0][..16]).unwrap();
    let message = stream.write_tensor_data(&data[1]).unwrap_err().to_string();
    assert!(message.contains("No space left"), "{message}");
    let again = stream.write_tensor_data(&data[1]).unwrap_err();
    assert_eq!(again.to_string(), message);
    assert_eq!(stream.finish().unwrap_err().to_string(), message);
    drop(stream);
    assert!(std::fs::read(&dest).unwrap() == old);
    assert_eq!(
        others(&dir, &[OsStr::new("model.gguf")]),
        Vec::<Vec<u8>>::new()
    );
}

// ---------------------------------------------------------------------------------------------
// kill -9.

/// Streams model `version` to `dest`; `pause(stage)` is called after the header (0), after
/// each tensor (1 to 4) and after finish (5).
fn stream_model(dest: &Path, version: u32, sync: bool, pause: &dyn Fn(usize)) {
    let data: Vec<Vec<u8>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &s)| tensor_data(version, i, s))
        .collect();
    let mut w = Writer::new();
    w.set_sync(sync);
    w.set_metadata("edit.n", MetadataValue::U32(version))
        .unwrap();
    for (i, d) in data.iter().enumerate() {
        w.add_tensor_info(format!("t.{i}"), &[d.len() as u64], DataType::I8)
            .unwrap();
    }
    let mut stream = w.begin_file(dest).unwrap();
    pause(0);
    for (i, d) in data.iter().enumerate() {
        stream.write_tensor_data(d).unwrap();
        pause(i + 1);
    }
    stream.finish().unwrap_or_else(|e| panic!("{e}"));
    pause(SIZES.len() + 1);
}

/// Run in a child: streams to `$DEST` and, at stage `$STAGE`, says so and waits to be killed;
/// with `$STAGE` = `loop`, writes versions 2, 3, ... until killed.
#[test]
fn child_stream_until_killed() {
    if !in_child("child_stream_until_killed") {
        return;
    }
    let dest = PathBuf::from(std::env::var_os(DEST).unwrap());
    let stage = std::env::var(STAGE).unwrap();
    if stage == "loop" {
        println!("<child ready>");
        for version in 2.. {
            stream_model(&dest, version, version % 2 == 0, &|_| {});
        }
    }
    let stop: usize = stage.parse().unwrap();
    stream_model(&dest, 2, true, &|at| {
        if at == stop {
            println!("<child ready>");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
        }
    });
}

/// Starts the child at `stage`, waits for it to say it is there, kills it with SIGKILL.
fn kill_at(dest: &Path, stage: &str, delay: std::time::Duration) {
    let mut proc = child("child_stream_until_killed")
        .env(DEST, dest)
        .env(STAGE, stage)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(proc.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .expect("the child ended before it was ready")
            .unwrap();
        // libtest may print the test's name on the same line.
        if line.ends_with("<child ready>") {
            break;
        }
    }
    std::thread::sleep(delay);
    proc.kill().unwrap(); // SIGKILL
    let status = proc.wait().unwrap();
    assert!(!status.success());
}

/// Removes the temporary files a killed writer left; fails on any other stray file.
fn only_temp_files_remain(dir: &Path, dest_name: &str) -> usize {
    let mut temps = 0;
    let known = [OsStr::new("model.gguf"), OsStr::new("new.gguf")];
    for name in others(dir, &known) {
        assert!(
            is_temp(&name, dest_name),
            "a file that is not a recognisable temporary file: {}",
            String::from_utf8_lossy(&name)
        );
        std::fs::remove_file(dir.join(OsStr::from_bytes(&name))).unwrap();
        temps += 1;
    }
    temps
}

#[test]
fn kill_9_at_fixed_points_leaves_the_old_file() {
    let dir = fresh_dir("kill_fixed");
    let dest = dir.join("model.gguf");
    model(1).write_file(&dest).unwrap();
    let old = std::fs::read(&dest).unwrap();
    for stage in ["0", "1", "2", "4"] {
        kill_at(&dest, stage, std::time::Duration::ZERO);
        assert!(
            std::fs::read(&dest).unwrap() == old,
            "killed at stage {stage}: the destination changed"
        );
        assert_eq!(
            only_temp_files_remain(&dir, "model.gguf"),
            1,
            "killed at stage {stage}: the partial file is under a temporary name"
        );
    }
    // And a new destination stays absent.
    let fresh = dir.join("new.gguf");
    kill_at(&fresh, "3", std::time::Duration::ZERO);
    assert!(!fresh.exists());
    assert_eq!(only_temp_files_remain(&dir, "new.gguf"), 1);
    // Killed after finish: the new file is complete.
    kill_at(&dest, "5", std::time::Duration::ZERO);
    check_model(&dest, 2);
    assert_eq!(only_temp_files_remain(&dir, "model.gguf"), 0);
}

#[test]
fn kill_9_at_random_instants_leaves_a_whole_file() {
    let dir = fresh_dir("kill_random");
    let dest = dir.join("model.gguf");
    model(1).write_file(&dest).unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut x = seed | 1;
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..12 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = std::time::Duration::from_micros(x % 400_000);
        kill_at(&dest, "loop", delay);
        let version = version_of(&dest);
        seen.insert(version);
        only_temp_files_remain(&dir, "model.gguf");
        let _ = round;
    }
    eprintln!("kill -9 at random instants (seed {seed}): versions seen {seen:?}");
}

// ---------------------------------------------------------------------------------------------
// Paths, permissions, links.

#[test]
fn paths_are_the_callers_exact_bytes() {
    let dir = fresh_dir("exact_paths");
    let mut expected: Vec<Vec<u8>> = Vec::new();
    // SAFETY: every pointer is live while used.
    unsafe {
        let w = gguf_writer_new();
        assert!(gguf_writer_set_uint32(w, c("edit.n").as_ptr(), 7));
        for name in [&b"caf\xe9.gguf"[..], b"caf\xe8.gguf"] {
            let p = dir.join(OsStr::from_bytes(name));
            assert!(
                gguf_writer_write_file(w, c_path(&p).as_ptr()),
                "{}",
                last_error()
            );
            expected.push(name.to_vec());
        }
        let streamed = dir.join(OsStr::from_bytes(b"\xff\xfe streamed.gguf"));
        assert!(gguf_writer_begin_file(w, c_path(&streamed).as_ptr()));
        assert!(gguf_writer_finish(w));
        expected.push(b"\xff\xfe streamed.gguf".to_vec());
        // Messages show such bytes escaped.
        let missing = dir.join(OsStr::from_bytes(b"no\xe9/x.gguf"));
        assert!(!gguf_writer_write_file(w, c_path(&missing).as_ptr()));
        assert!(last_error().contains("no\\xe9/x.gguf"), "{}", last_error());
        gguf_writer_free(w);
        // And the reader opens them by the same bytes.
        let f = gguf_open(c_path(&dir.join(OsStr::from_bytes(b"caf\xe9.gguf"))).as_ptr());
        assert!(!f.is_null(), "{}", last_error());
        assert_eq!(c_u32(f, "edit.n"), 7);
        gguf_close(f);
    }
    let rust = dir.join(OsStr::from_bytes(b"r\xe9.gguf"));
    model(1).write_file(&rust).unwrap();
    expected.push(b"r\xe9.gguf".to_vec());
    expected.sort();
    assert_eq!(others(&dir, &[]), expected);
}

#[test]
fn an_existing_files_permissions_are_kept() {
    let dir = fresh_dir("permissions");
    let dest = dir.join("model.gguf");
    model(1).write_file(&dest).unwrap();
    for mode in [0o640, 0o604, 0o755] {
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).unwrap();
        model(2).write_file(&dest).unwrap();
        let got = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode);
    }
    // The owner is kept where the process may set it (root); otherwise the writer owns it.
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            std::os::unix::fs::chown(&dest, Some(1234), Some(2345)).unwrap();
        }
        let before = std::fs::metadata(&dest).unwrap();
        model(1).write_file(&dest).unwrap();
        let after = std::fs::metadata(&dest).unwrap();
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        assert_eq!(after.mode() & 0o7777, 0o755);
    }
    // A new file: 0666 less the umask, so never executable.
    let fresh = dir.join("new.gguf");
    model(1).write_file(&fresh).unwrap();
    let got = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777;
    assert_eq!(got & 0o111, 0, "{got:o}");
    assert_eq!(got & 0o600, 0o600, "{got:o}");
}

#[test]
fn a_symbolic_link_stays_a_link() {
    let dir = fresh_dir("symlink");
    let target = dir.join("real.gguf");
    model(1).write_file(&target).unwrap();
    let link = dir.join("link.gguf");
    std::os::unix::fs::symlink("real.gguf", &link).unwrap();
    model(2).write_file(&link).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    check_model(&target, 2);
}

/// A directory, or a path in a missing directory: refused, nothing created, writer unchanged.
#[test]
fn refused_destinations_create_nothing() {
    let dir = fresh_dir("refused");
    let e = model(1).write_file(&dir).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    let e = model(1).write_file(dir.join("missing/x.gguf")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    assert!(e.to_string().contains("missing/x.gguf"), "{e}");
    assert_eq!(others(&dir, &[]), Vec::<Vec<u8>>::new());
}
