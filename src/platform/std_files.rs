//! The atomic-write steps where the operating system offers nothing beyond std (Windows, and
//! platforms without files): the temporary file's name, its exclusive creation, its permissions,
//! and no reopening check or directory sync. Unix has its own (`unix.rs`: owner, mode, inode,
//! directory fsync). The per-OS files use these; nothing here uses them.

use std::fs::File;
use std::path::Path;

/// The name of the temporary file an output is written to before it replaces `name`:
/// `.<name>.gguf-tmp-<pid>-<random>`, `pid` the process's id as the platform knows it.
pub fn temp_name(name: &std::ffi::OsStr, pid: u32) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let mut out = std::ffi::OsString::from(".");
    out.push(name);
    out.push(format!(".gguf-tmp-{pid}-{random:016x}"));
    out
}

/// Creates the file at `path` for writing, failing if it exists.
pub fn create_exclusive(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Gives `file` the permissions of the file `old` describes.
pub fn copy_permissions(file: &File, old: &std::fs::Metadata) -> std::io::Result<()> {
    file.set_permissions(old.permissions())
}

/// Whether the path still names the file mapped cannot be told here: `None`.
pub fn reopen_mapped(_path: &Path, _mapped: &File) -> Option<File> {
    None
}

/// No directory sync here: the rename is as durable as the file system makes it.
pub fn sync_dir(_dest: &Path) -> std::io::Result<()> {
    Ok(())
}
