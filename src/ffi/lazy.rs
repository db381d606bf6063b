//! The handle's lazily filled, shared state: a write-once box (array caches) and an append-only
//! list (upload plans), both made of `once_cell::race::OnceBox`, with no unsafe code here.
//!
//! `std::sync::OnceLock` and `Mutex` would do, but their synchronisation lives in std's
//! non-generic code, which ThreadSanitizer cannot see unless std itself is rebuilt
//! instrumented. `OnceBox` is generic, so its atomics are compiled into this crate and the
//! concurrency test under TSan (`make tsan`) checks the real thing. Racing first callers of
//! `get_or_init` may each build a value; exactly one is published and every caller gets it.

pub(crate) use once_cell::race::OnceBox;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bucket `k` holds `2^k` slots: 64 buckets have room for more values than a `usize` counts.
const BUCKETS: usize = usize::BITS as usize;

/// A list that only grows: each pushed value stays at its address until the list is dropped.
/// Value `i` lives in bucket `floor(log2(i + 1))`; a bucket is allocated when first reached and
/// never moves, and each slot is written once.
pub(crate) struct AppendList<T> {
    len: AtomicUsize,
    buckets: [OnceBox<Box<[OnceBox<T>]>>; BUCKETS],
}

impl<T> Default for AppendList<T> {
    fn default() -> Self {
        AppendList {
            len: AtomicUsize::new(0),
            buckets: std::array::from_fn(|_| OnceBox::new()),
        }
    }
}

impl<T> AppendList<T> {
    /// Adds `value` and returns it where it will stay.
    pub fn push(&self, value: T) -> &T {
        // Only uniqueness matters here: the value is published by its slot's `OnceBox`.
        let index = self.len.fetch_add(1, Ordering::Relaxed);
        let bucket = (usize::BITS - 1 - (index + 1).leading_zeros()) as usize;
        let first = (1usize << bucket) - 1;
        let slots = self.buckets[bucket]
            .get_or_init(|| Box::new((0..=first).map(|_| OnceBox::new()).collect()));
        // The index is this call's alone, so the slot is empty and `value` is what it gets.
        slots[index - first].get_or_init(|| Box::new(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_and_returns_the_same_value() {
        let cell = OnceBox::new();
        let a = cell.get_or_init(|| Box::new(vec![1, 2, 3])) as *const Vec<i32>;
        let b = cell.get_or_init(|| unreachable!("already built")) as *const Vec<i32>;
        assert_eq!(a, b);
    }

    #[test]
    fn racing_threads_all_get_the_published_value() {
        let cell = OnceBox::new();
        let seen: Vec<usize> = std::thread::scope(|s| {
            let cell = &cell;
            let threads: Vec<_> = (0..8)
                .map(|i| s.spawn(move || cell.get_or_init(|| Box::new(i)) as *const i32 as usize))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|&p| p == seen[0]));
    }

    #[test]
    fn appended_values_stay_put() {
        let list = AppendList::default();
        // Held across later pushes, which fill seven buckets.
        let values: Vec<&String> = (0..100).map(|i| list.push(format!("value {i}"))).collect();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(**v, format!("value {i}"));
        }
        let mut addresses: Vec<*const String> = values.iter().map(|v| *v as *const _).collect();
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 100);
    }

    #[test]
    fn racing_pushes_each_keep_their_value() {
        let list = AppendList::default();
        let pushed: Vec<Vec<(usize, &usize)>> = std::thread::scope(|s| {
            let list = &list;
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    s.spawn(move || {
                        (0..200)
                            .map(|i| (t * 1000 + i, list.push(t * 1000 + i)))
                            .collect()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut addresses = Vec::new();
        for (want, got) in pushed.iter().flatten() {
            assert_eq!(want, *got);
            addresses.push(*got as *const usize);
        }
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 8 * 200);
        assert_eq!(list.len.load(Ordering::Relaxed), 8 * 200);
    }
}
