//! Platforms without files or memory maps (wasm32): memory lent by the caller and the writer to
//! memory work; opening a file reports unsupported (std has no file system there).

use super::common::{io_error, Paging};
use super::std_files;
use crate::error::{Error, ErrorCode, Result};
use memmap2::Mmap;
use std::fs::File;
use std::path::Path;

const NO_FILE_SYSTEM: &str = "this platform has no file system: use gguf_open_memory";

fn unsupported() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Unsupported, NO_FILE_SYSTEM)
}

/// The clock the host gives ([`set_clock`]): std's `SystemTime::now` panics on
/// wasm32-unknown-unknown.
static CLOCK: std::sync::OnceLock<fn() -> Option<i64>> = std::sync::OnceLock::new();

/// Sets the clock (seconds since 1970, UTC) where the platform has none, as the npm package's
/// module does with JavaScript's; false if one was already set.
pub fn set_clock(clock: fn() -> Option<i64>) -> bool {
    CLOCK.set(clock).is_ok()
}

/// The host's clock, or `None` where it gave none.
pub fn unix_time() -> Option<i64> {
    CLOCK.get().and_then(|clock| clock())
}

pub fn open_nonblocking(_path: &Path) -> std::io::Result<File> {
    Err(unsupported())
}

pub fn clear_nonblocking(_file: &File) -> std::io::Result<()> {
    Ok(())
}

pub fn special_kind(_meta: &std::fs::Metadata) -> Option<&'static str> {
    None
}

pub fn is_out_of_memory(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::OutOfMemory
}

pub fn map_limits() -> String {
    "the address space is exhausted".to_string()
}

/// No file is ever replaced here (there is no file system): nothing to add.
pub fn replace_advice(_e: &std::io::Error) -> Option<&'static str> {
    None
}

/// There are no processes (std's `process::id` panics here); temporary files are not made
/// anyway, as there is no file system.
pub fn process_id() -> u32 {
    0
}

/// The WebAssembly page is 64 KiB.
pub fn page_size() -> u64 {
    65536
}

fn no_maps() -> Error {
    Error::msg(
        ErrorCode::Unsupported,
        "this platform has no memory maps: paging advice, populate and lock are unsupported",
    )
}

pub fn lock(_map: &Mmap, _size: u64) -> Result<()> {
    Err(no_maps())
}

pub fn populate(_map: &Mmap) -> Result<()> {
    Err(no_maps())
}

pub fn advise(_map: &Mmap, _advice: Paging, _start: usize, _len: usize) -> Result<()> {
    Err(no_maps())
}

pub fn read_at(_file: &File, _buf: &mut [u8], _offset: u64) -> std::io::Result<usize> {
    Err(unsupported())
}

pub fn dup_for_reading(_fd: i32, name: &str) -> Result<File> {
    Err(io_error(&format!("cannot use {name}"), unsupported()))
}

pub fn open_direct(_file: &File) -> Option<File> {
    None
}

pub fn direct_alignment() -> usize {
    1
}

pub fn will_need(_file: &File, _offset: u64, _len: u64) {}

/// No storage reservation here: the file grows as it is written.
pub fn preallocate(_file: &File, _len: u64) {}

/// No early writeback here: the flush on commit writes everything.
pub fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

/// The temporary file's name: `.<name>.gguf-tmp-<pid>-<random>` (`std_files`).
pub fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    std_files::temp_name(name, process_id())
}

pub use super::std_files::{copy_permissions, create_exclusive, reopen_mapped, sync_dir};
