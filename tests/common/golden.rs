//! Recorded fingerprints: the FNV-1a digest, and the tab-separated tables under `tests/data/`
//! that hold them.

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The rows of a tab-separated table, each split at its tabs; lines starting with `#` are
/// comments.
pub fn tsv_rows(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
}
