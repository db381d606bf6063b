//! The handle's lazily filled, shared state: a write-once box (array caches) and an append-only
//! list (upload plans), each built on atomic pointers.
//!
//! `std::sync::OnceLock` and `Mutex` would do, but their synchronisation lives in std's
//! non-generic code, which ThreadSanitizer cannot see unless std itself is rebuilt
//! instrumented; here every synchronising operation is compiled into this crate, so the
//! concurrency test under TSan checks the real thing.

use std::sync::atomic::{AtomicPtr, Ordering};

/// A value built on first use. Racing first callers may each build one; exactly one is
/// published and every caller gets that one.
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

/// A list that only grows: each pushed value stays at its address until the list is dropped.
pub(crate) struct AppendList<T> {
    head: AtomicPtr<Node<T>>,
}

struct Node<T> {
    value: T,
    next: *mut Node<T>,
}

impl<T> Default for AppendList<T> {
    fn default() -> Self {
        AppendList {
            head: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl<T> AppendList<T> {
    /// Adds `value` and returns it where it will stay.
    pub fn push(&self, value: T) -> &T {
        let node = Box::into_raw(Box::new(Node {
            value,
            next: std::ptr::null_mut(),
        }));
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            // SAFETY: `node` is ours alone until the exchange below publishes it.
            unsafe { (*node).next = head };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::AcqRel, Ordering::Acquire)
            {
                // SAFETY: published nodes live until `drop`, which `&self` keeps away.
                Ok(_) => return unsafe { &(*node).value },
                Err(current) => head = current,
            }
        }
    }
}

impl<T> Drop for AppendList<T> {
    fn drop(&mut self) {
        let mut node = *self.head.get_mut();
        while !node.is_null() {
            // SAFETY: every node came from `Box::into_raw` in `push`, is reachable once, and
            // `&mut self` proves no reference into the list remains.
            let boxed = unsafe { Box::from_raw(node) };
            node = boxed.next;
        }
    }
}

// SAFETY: as for `OnceBox`: values are handed out as `&T` and dropped by the list's owner.
unsafe impl<T: Send + Sync> Sync for AppendList<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for AppendList<T> {}

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

    #[test]
    fn appended_values_stay_put() {
        let list = AppendList::default();
        let values: Vec<*const String> = (0..100)
            .map(|i| list.push(format!("value {i}")) as *const String)
            .collect();
        for (i, v) in values.iter().enumerate() {
            // SAFETY: the list is alive and never moves its values.
            assert_eq!(unsafe { &**v }, &format!("value {i}"));
        }
    }
}
