//! The wording of an error met inside one metadata entry or tensor info, or while reading a part
//! of the header: which entry, by its key or name when that much was read, and that the file
//! ends early when the bytes ran out.

use crate::error::{Error, EARLY_END};
use crate::format::Layout;
use crate::reader::ByteReader;
use crate::text::quote;

/// What [`entry_error`] names.
#[derive(Clone, Copy)]
pub(super) enum Entry {
    Metadata,
    Tensor,
}

/// `e`, met while reading metadata entry or tensor info `i` of `n` that starts at `at`, saying
/// which: by its key or name when that much was read, and, when the bytes ran out, that the
/// file ends early. Kept out of the readers (and re-reading the name) so that the loops over
/// thousands of entries carry no extra state.
#[cold]
#[inline(never)]
pub(super) fn entry_error(
    e: Error,
    bytes: &[u8],
    layout: Layout,
    kind: Entry,
    (at, i, n): (usize, usize, usize),
) -> Error {
    let (what, named, field) = match kind {
        Entry::Metadata => ("metadata entry", "key", "key"),
        Entry::Tensor => ("tensor info", "tensor", "name"),
    };
    let entry = format!("{what} {} of {n} (at offset {at})", i + 1);
    let name = ByteReader::new(bytes, at, layout).string("").ok();
    if !e.is_early_end() {
        // Tensor rules already name the tensor.
        return match (kind, name) {
            (Entry::Metadata, Some(key)) => {
                e.with_context(format_args!("key {}, {entry}", quote(key.of(bytes))))
            }
            (Entry::Metadata, None) => e.with_context(entry),
            (Entry::Tensor, _) => e,
        };
    }
    match name {
        Some(name) => reading(
            e,
            format_args!("{named} {}, {entry}", quote(name.of(bytes))),
        ),
        None => reading(e, format_args!("the {field} of {entry}")),
    }
}

/// `e`, an error met while reading `what`, saying so; and, when the bytes ran out, that the
/// file ends early.
#[cold]
#[inline(never)]
pub(super) fn reading(e: Error, what: std::fmt::Arguments<'_>) -> Error {
    if e.is_early_end() {
        e.with_context(format_args!("{EARLY_END} while reading {what}"))
    } else {
        e.with_context(what)
    }
}
