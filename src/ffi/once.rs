//! A write-once box for the handle's lazy caches, built on one atomic pointer.
//!
//! `std::sync::OnceLock` would do, but its synchronisation lives in std's non-generic code,
//! which ThreadSanitizer cannot see unless std itself is rebuilt instrumented; with this cell
//! every synchronising operation is compiled into this crate, so the concurrency test under
//! TSan checks the real thing. Racing first callers may each build a value; exactly one is
//! published and every caller gets that one.

use std::sync::atomic::{AtomicPtr, Ordering};

pub(crate) struct OnceBox<T> {
    ptr: AtomicPtr<T>,
}

impl<T> Default for OnceBox<T> {
    fn default() -> Self {
        OnceBox {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl<T> OnceBox<T> {
    /// The published value, building and publishing one with `build` if there is none yet.
    pub fn get_or_init(&self, build: impl FnOnce() -> T) -> &T {
        let current = self.ptr.load(Ordering::Acquire);
        if !current.is_null() {
            // SAFETY: a non-null pointer was published below from `Box::into_raw` and is only
            // freed by `drop`, which cannot run while `&self` is borrowed.
            return unsafe { &*current };
        }
        let fresh = Box::into_raw(Box::new(build()));
        match self.ptr.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: `fresh` is now published and lives until `drop`, as above.
            Ok(_) => unsafe { &*fresh },
            Err(winner) => {
                // SAFETY: `fresh` came from `Box::into_raw` above and was never published.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: `winner` is the published pointer, as above.
                unsafe { &*winner }
            }
        }
    }
}

impl<T> Drop for OnceBox<T> {
    fn drop(&mut self) {
        let published = *self.ptr.get_mut();
        if !published.is_null() {
            // SAFETY: the pointer came from `Box::into_raw` and `&mut self` proves no borrow of
            // the value remains.
            drop(unsafe { Box::from_raw(published) });
        }
    }
}

// SAFETY: the cell hands out `&T` to any thread and drops `T` on the dropping thread: that is
// exactly what `Sync + Send` on `T` permit.
unsafe impl<T: Send + Sync> Sync for OnceBox<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for OnceBox<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_and_returns_the_same_value() {
        let cell = OnceBox::default();
        let a = cell.get_or_init(|| vec![1, 2, 3]) as *const Vec<i32>;
        let b = cell.get_or_init(|| unreachable!("already built")) as *const Vec<i32>;
        assert_eq!(a, b);
    }

    #[test]
    fn racing_threads_all_get_the_published_value() {
        let cell = OnceBox::default();
        let seen: Vec<usize> = std::thread::scope(|s| {
            let cell = &cell;
            let threads: Vec<_> = (0..8)
                .map(|i| s.spawn(move || cell.get_or_init(|| i) as *const i32 as usize))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|&p| p == seen[0]));
    }
}
