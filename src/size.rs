//! Narrowing conversions whose range an earlier check guarantees, in one place so that each
//! invariant is written once (the crate warns on `clippy::cast_possible_truncation`: a 64-bit
//! size or offset is never silently cut to a 32-bit `usize`).

/// `n` as a `usize`, for a size, offset or count already checked to lie within bytes that are in
/// memory (a mapped file, a copy, lent memory), hence within the address space. Breaking that
/// invariant is a bug: this panics (the C boundary turns a panic into an error) rather than
/// truncate.
#[inline]
#[track_caller]
pub(crate) fn in_memory(n: u64) -> usize {
    usize::try_from(n).expect("a size within bytes in memory fits in usize")
}

/// `i` as a shard number for the C API: a model has at most 65535 shards (`split.count` is a
/// UINT16, checked when a split model is opened).
#[inline]
#[track_caller]
pub(crate) fn shard_no(i: usize) -> u32 {
    u32::try_from(i).expect("a model has at most 65535 shards")
}
