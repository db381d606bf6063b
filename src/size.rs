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

/// The most bytes one buffer in memory may span: `isize::MAX` (Rust's bound on any object: the
/// whole address space of a 32-bit target), and on 64-bit targets 2^48 bytes (256 TiB), as much
/// as the user address space of x86-64, AArch64, POWER, RISC-V and LoongArch processes holds
/// unless a process asks the kernel for more. A size or count from outside (a caller's argument,
/// a file's or a source's) whose buffer would pass it is refused before any slice of it is built
/// or any memory is asked for: no real buffer can be that long.
pub(crate) const MAX_BUFFER: u64 = if usize::BITS > 48 {
    1 << 48
} else {
    isize::MAX as u64
};

/// `bytes` as the length of a buffer in memory, or `None` when it passes [`MAX_BUFFER`].
#[inline]
pub(crate) fn buffer_len(bytes: u64) -> Option<usize> {
    if bytes <= MAX_BUFFER {
        usize::try_from(bytes).ok()
    } else {
        None
    }
}
