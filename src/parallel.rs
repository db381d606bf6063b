//! Work spread over the threads a caller asked for, in one shape: how many threads a call runs on
//! ([`thread_count`]: 0 means one per core; never more than [`MAX_THREADS`]), and one runner
//! in two forms:
//!
//! - [`run`]: units taken one at a time from a shared cursor by threads started for the call,
//!   while the calling thread handles each result as it arrives (to report progress, say);
//! - [`split_mut`]: a buffer cut into consecutive parts of whole items, one per thread, the
//!   calling thread converting parts too.
//!
//! Threads are started by `platform::with_workers` and joined before the call returns: none
//! outlives it, the calling thread is not registered with Rust's runtime (a C caller's leak
//! checker would report that), and a thread started inside a C API call is inside it too (a
//! panic there prints nothing). A panic on a thread is caught and reported as an error
//! ([`ErrorCode::Internal`]), and the first error stops the units not yet started.

use crate::error::{Error, ErrorCode, Result};
use crate::platform;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Most threads one call of the library runs on, whatever it asks for: a bound on the resources
/// one call takes (each thread has its own stack). Larger requests run on this many.
pub const MAX_THREADS: usize = 1024;

/// How many threads a call asking for `requested` runs on: `requested`, or for 0 as many as the
/// machine runs at once (1 where that is unknown), at most [`MAX_THREADS`].
pub fn thread_count(requested: u32) -> usize {
    let n = match requested {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => usize::try_from(n).unwrap_or(MAX_THREADS),
    };
    n.min(MAX_THREADS)
}

/// The error for a panic on a thread running `what` (a bug of the library's).
#[cold]
fn panicked(what: &str) -> Error {
    Error::msg(ErrorCode::Internal, format!("a {what} thread panicked"))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing is left half-done under these locks: a poisoned one is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Units handed out once each, in order, to whichever thread asks next, until none is left or
/// the work is stopped.
struct Queue<U> {
    slots: Vec<Mutex<Option<U>>>,
    next: AtomicUsize,
    stop: AtomicBool,
}

impl<U> Queue<U> {
    fn new(units: Vec<U>) -> Queue<U> {
        Queue {
            slots: units.into_iter().map(|u| Mutex::new(Some(u))).collect(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }

    fn take(&self) -> Option<U> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            // Each thread stops at the first index past the end: the cursor moves at most
            // `slots.len()` plus the number of threads.
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if let Some(unit) = lock(self.slots.get(i)?).take() {
                return Some(unit);
            }
        }
    }

    /// Runs `work` on units until none is left, the work is stopped, or a unit fails (which
    /// stops it for every thread). `state` is made once, on the thread, before its first unit.
    /// Every result, a panic's included, goes to `report`.
    fn drain<S, T>(
        &self,
        what: &str,
        state: &impl Fn() -> S,
        work: &impl Fn(&mut S, U) -> Result<T>,
        report: &impl Fn(Result<T>),
    ) {
        let mut mine = None;
        while let Some(unit) = self.take() {
            let r = catch_unwind(AssertUnwindSafe(|| {
                work(mine.get_or_insert_with(state), unit)
            }))
            .unwrap_or_else(|_| Err(panicked(what)));
            let failed = r.is_err();
            if failed {
                self.stop.store(true, Ordering::Relaxed);
            }
            report(r);
            if failed {
                break;
            }
        }
    }
}

/// What the threads have done and the calling thread has not yet seen.
struct Reports<T> {
    results: Vec<T>,
    error: Option<Error>,
}

/// [`Reports`], and a signal to the calling thread when they change. (A mutex and a condition
/// variable rather than a channel: a channel's blocking receive registers the calling thread
/// with Rust's runtime, which a C caller's leak checker reports.)
struct Board<T> {
    reports: Mutex<Reports<T>>,
    changed: Condvar,
}

impl<T> Board<T> {
    fn new() -> Board<T> {
        Board {
            reports: Mutex::new(Reports {
                results: Vec::new(),
                error: None,
            }),
            changed: Condvar::new(),
        }
    }

    fn post(&self, r: Result<T>) {
        let mut g = lock(&self.reports);
        match r {
            Ok(t) => g.results.push(t),
            Err(e) => {
                // The first error is the one reported.
                g.error.get_or_insert(e);
            }
        }
        self.changed.notify_one();
    }

    /// Waits for results or an error; moves the results into `batch` (empty) or returns the
    /// error.
    fn wait(&self, batch: &mut Vec<T>) -> Result<()> {
        let mut g = lock(&self.reports);
        while g.results.is_empty() && g.error.is_none() {
            g = self.changed.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(e) = g.error.take() {
            return Err(e);
        }
        std::mem::swap(&mut g.results, batch);
        Ok(())
    }
}

/// Sets the stop flag when dropped: the threads take no new unit once the calling thread has
/// stopped waiting for them, even by a panic.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` once on each of `units` and hands the results to `done` on the calling thread.
///
/// On one thread (`threads` at most 1, or a single unit) the calling thread runs every unit in
/// order, calling `done` after each. Otherwise `threads` threads (at most [`MAX_THREADS`] and
/// the number of units) are started for the call, each taking the next unit from a shared
/// cursor and running it with its own `state` (made by `state` on that thread: a scratch
/// buffer, say), while the calling thread waits and calls `done` with the results of the units
/// finished since its last call (at least one). If no thread can be started, the calling thread
/// runs every unit first. Every thread started is joined before this returns.
///
/// The first error, a unit's or `done`'s, stops the units not yet started and is returned; a
/// panic on a started thread is returned as an [`ErrorCode::Internal`] error saying that a
/// `what` thread panicked.
pub fn run<U: Send, S, T: Send>(
    units: Vec<U>,
    threads: usize,
    what: &str,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, U) -> Result<T> + Sync,
    mut done: impl FnMut(&[T]) -> Result<()>,
) -> Result<()> {
    let n = units.len();
    let threads = threads.min(n).min(MAX_THREADS);
    if threads <= 1 {
        let mut mine = state();
        for unit in units {
            let t = work(&mut mine, unit)?;
            done(std::slice::from_ref(&t))?;
        }
        return Ok(());
    }
    let queue = Queue::new(units);
    let board = Board::new();
    let worker = || queue.drain(what, &state, &work, &|r| board.post(r));
    platform::with_workers(threads, &worker, || {
        let _stop = StopOnDrop(&queue.stop);
        let mut batch = Vec::new();
        let mut seen = 0;
        while seen < n {
            board.wait(&mut batch)?;
            seen += batch.len();
            done(&batch)?;
            batch.clear();
        }
        Ok(())
    })
}

/// Cuts `out` into up to `parts` consecutive pieces, each a whole number of items of `item`
/// elements (as equal as can be; the last also takes any elements past the last whole item),
/// and runs `work(first_item, piece)` on each. With more than one piece, threads are started
/// for all but one (at most [`MAX_THREADS`] pieces in all, at most one per item) and the
/// calling thread takes pieces too, from the same cursor as they; with one, the calling thread
/// runs `work(0, out)`. Every thread started is joined before this returns.
///
/// The first error stops the pieces not yet started and is returned (pieces already done stay
/// written); a panic while running a piece is returned as an [`ErrorCode::Internal`] error
/// saying that a `what` thread panicked.
pub fn split_mut<T: Send>(
    out: &mut [T],
    item: usize,
    parts: usize,
    what: &str,
    work: impl Fn(usize, &mut [T]) -> Result<()> + Sync,
) -> Result<()> {
    let items = out.len().checked_div(item).unwrap_or(0);
    let parts = parts.min(items).min(MAX_THREADS);
    if parts <= 1 {
        return work(0, out);
    }
    let pieces = cut(out, item, items, parts);
    let queue = Queue::new(pieces);
    let failure = Mutex::new(None);
    let report = |r: Result<()>| {
        if let Err(e) = r {
            lock(&failure).get_or_insert(e);
        }
    };
    let piece = |_: &mut (), (first, piece): (usize, &mut [T])| work(first, piece);
    let worker = || queue.drain(what, &|| (), &piece, &report);
    platform::with_workers(parts - 1, &worker, worker);
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `out` cut into `parts` pieces of whole items (`items` of them, `item` elements each), each
/// with the index of its first item: piece `k` starts at item `items * k / parts`.
fn cut<T>(out: &mut [T], item: usize, items: usize, parts: usize) -> Vec<(usize, &mut [T])> {
    let start = |k: usize| {
        let at = items as u128 * k as u128 / parts as u128;
        usize::try_from(at).unwrap_or(items) // never above `items`
    };
    let mut pieces = Vec::with_capacity(parts);
    let mut rest = out;
    for k in 0..parts {
        let (first, next) = (start(k), start(k + 1));
        let len = if k + 1 == parts {
            rest.len()
        } else {
            (next - first) * item
        };
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(len);
        pieces.push((first, piece));
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicU32;
    use std::thread::ThreadId;

    fn fail(k: usize) -> Error {
        Error::msg(ErrorCode::Io, format!("unit {k} failed"))
    }

    #[test]
    fn thread_counts_are_capped() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(thread_count(0), cores.min(MAX_THREADS));
        assert_eq!(thread_count(1), 1);
        assert_eq!(thread_count(7), 7);
        assert_eq!(thread_count(1024), MAX_THREADS);
        assert_eq!(thread_count(100_000), MAX_THREADS);
        assert_eq!(thread_count(u32::MAX), MAX_THREADS);
    }

    /// Every unit runs once, on at most the threads asked for and never on the calling thread
    /// (which sees every result, in batches); each thread's state is made once.
    #[test]
    fn every_unit_runs_once_and_its_result_reaches_the_calling_thread() {
        const N: usize = 2000;
        let runs: Vec<AtomicU32> = (0..N).map(|_| AtomicU32::new(0)).collect();
        let threads = Mutex::new(HashSet::<ThreadId>::new());
        let states = AtomicU32::new(0);
        let caller = std::thread::current().id();
        let mut seen = vec![false; N];
        let mut calls = 0;
        run(
            (0..N).collect(),
            4,
            "test",
            || {
                states.fetch_add(1, Ordering::Relaxed);
                0usize
            },
            |mine, k| {
                *mine += 1;
                runs[k].fetch_add(1, Ordering::Relaxed);
                lock(&threads).insert(std::thread::current().id());
                Ok(k)
            },
            |batch| {
                assert_eq!(std::thread::current().id(), caller);
                assert!(!batch.is_empty());
                calls += 1;
                for &k in batch {
                    assert!(!std::mem::replace(&mut seen[k], true), "{k} reported twice");
                }
                Ok(())
            },
        )
        .unwrap();
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
        assert!(seen.iter().all(|&s| s));
        assert!(calls >= 1);
        let threads = threads.into_inner().unwrap();
        assert!(!threads.contains(&caller));
        assert!(!threads.is_empty() && threads.len() <= 4, "{threads:?}");
        let states = states.load(Ordering::Relaxed);
        assert!(states >= 1 && states as usize <= threads.len(), "{states}");
    }

    /// One thread, or one unit: everything on the calling thread, `done` after each unit.
    #[test]
    fn one_thread_runs_on_the_calling_thread_in_order() {
        let caller = std::thread::current().id();
        for (units, threads) in [(5, 1), (5, 0), (1, 8)] {
            let mut order = Vec::new();
            run(
                (0..units).collect(),
                threads,
                "test",
                || (),
                |(), k| {
                    assert_eq!(std::thread::current().id(), caller);
                    Ok(k)
                },
                |batch| {
                    order.extend_from_slice(batch);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(order, (0..units).collect::<Vec<_>>());
        }
        // No unit: nothing runs, and that is success.
        run(
            Vec::<u8>::new(),
            8,
            "test",
            || (),
            |(), _| Ok(()),
            |_| panic!(),
        )
        .unwrap();
    }

    /// The threads started are at most MAX_THREADS, however many are asked for.
    #[test]
    fn a_request_for_more_threads_than_the_cap_runs_on_the_cap() {
        let threads = Mutex::new(HashSet::<ThreadId>::new());
        let arrived = AtomicUsize::new(0);
        let units = 3 * MAX_THREADS;
        run(
            (0..units).collect(),
            100_000,
            "test",
            || (),
            |(), _| {
                lock(&threads).insert(std::thread::current().id());
                // Each thread waits (briefly) for many others to start, so that more than the
                // cap would be seen if more were started.
                arrived.fetch_add(1, Ordering::Relaxed);
                let t0 = std::time::Instant::now();
                while arrived.load(Ordering::Relaxed) < MAX_THREADS
                    && t0.elapsed() < std::time::Duration::from_millis(200)
                {
                    std::thread::yield_now();
                }
                Ok(())
            },
            |_| Ok(()),
        )
        .unwrap();
        let n = threads.into_inner().unwrap().len();
        assert!(n > 1 && n <= MAX_THREADS, "{n} threads");
        // The same cap for the split form: at most MAX_THREADS pieces.
        let mut out = vec![0usize; 2 * MAX_THREADS + 5];
        let pieces = AtomicUsize::new(0);
        split_mut(&mut out, 1, usize::MAX, "test", |_, piece| {
            pieces.fetch_add(1, Ordering::Relaxed);
            piece.fill(1);
            Ok(())
        })
        .unwrap();
        assert_eq!(pieces.load(Ordering::Relaxed), MAX_THREADS);
        assert!(out.iter().all(|&v| v == 1));
    }

    /// A failing unit stops the units not yet started, and its error is the one returned; so
    /// does an error of `done` (a cancelled load).
    #[test]
    fn an_error_stops_the_rest_and_is_returned() {
        const N: usize = 10_000;
        for threads in [1, 3] {
            let ran = AtomicUsize::new(0);
            let e = run(
                (0..N).collect(),
                threads,
                "test",
                || (),
                |(), k| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    if k == 20 {
                        return Err(fail(k));
                    }
                    Ok(())
                },
                |_| Ok(()),
            )
            .unwrap_err();
            assert_eq!(e.code(), ErrorCode::Io);
            assert!(e.to_string().contains("unit 20 failed"), "{e}");
            let ran = ran.load(Ordering::Relaxed);
            assert!(ran > 20 - threads && ran < 1000, "{ran} units ran");
        }
        // `done` stops the work at its first call; each unit takes a millisecond, so the rest
        // would take a third of a second.
        let ran = AtomicUsize::new(0);
        let e = run(
            (0..1000).collect(),
            3,
            "test",
            || (),
            |(), _: usize| {
                ran.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
                Ok(())
            },
            |_| Err(Error::msg(ErrorCode::Cancelled, "stopped")),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Cancelled);
        let ran = ran.load(Ordering::Relaxed);
        assert!(ran < 100, "{ran} units ran");
    }

    /// A panic on a thread is an error, not a lost thread or a calling thread left waiting.
    #[test]
    fn a_panic_on_a_thread_is_returned_as_an_internal_error() {
        let e = run(
            (0..100).collect(),
            2,
            "test",
            || (),
            |(), k: usize| {
                if k == 7 {
                    panic!("unit 7 panics");
                }
                Ok(())
            },
            |_| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(e.to_string().contains("a test thread panicked"), "{e}");
        // A panic making a thread's state, too.
        let e = run(
            (0..100).collect(),
            2,
            "test",
            || panic!("no state"),
            |(), _: usize| Ok(()),
            |_| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        let mut out = vec![0u8; 100];
        let e = split_mut(&mut out, 10, 4, "conversion", |first, _| {
            assert!(first != 5, "piece at 5 panics");
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(
            e.to_string().contains("a conversion thread panicked"),
            "{e}"
        );
    }

    /// Pieces are consecutive, of whole items, as equal as can be, the last taking the rest;
    /// each is handed to `work` once, with its first item.
    #[test]
    fn split_cuts_whole_items_and_runs_each_piece_once() {
        for (len, item, parts) in [
            (100, 10, 3),
            (103, 10, 4),
            (7, 1, 7),
            (40, 4, 100),
            (5, 2, 2),
        ] {
            let mut out = vec![usize::MAX; len];
            let firsts = Mutex::new(Vec::new());
            split_mut(&mut out, item, parts, "test", |first, piece| {
                lock(&firsts).push((first, piece.len()));
                for (j, v) in piece.iter_mut().enumerate() {
                    assert_eq!(*v, usize::MAX, "written twice");
                    *v = first * item + j;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(out, (0..len).collect::<Vec<_>>(), "{len} {item} {parts}");
            let mut firsts = firsts.into_inner().unwrap();
            firsts.sort_unstable();
            let items = len / item;
            assert_eq!(firsts.len(), parts.min(items));
            for pair in firsts.windows(2) {
                let (a, la) = pair[0];
                assert_eq!(a * item + la, pair[1].0 * item);
                // As equal as can be: a piece has the floor or ceiling of items / parts.
                assert!(
                    la / item == items / firsts.len() || la / item == items.div_ceil(firsts.len())
                );
            }
        }
        // One item, one part, or no item: the calling thread runs it all as one piece.
        let caller = std::thread::current().id();
        for (len, item, parts) in [(10, 10, 8), (10, 1, 1), (3, 4, 8), (0, 1, 8), (5, 0, 8)] {
            let mut out = vec![0u8; len];
            let calls = AtomicUsize::new(0);
            split_mut(&mut out, item, parts, "test", |first, piece| {
                assert_eq!(std::thread::current().id(), caller);
                assert_eq!((first, piece.len()), (0, len));
                calls.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
            assert_eq!(calls.load(Ordering::Relaxed), 1);
        }
    }

    /// A failing piece's error is returned, whichever thread ran it; the others still run or
    /// stop, and nothing is lost.
    #[test]
    fn a_failing_piece_is_returned() {
        for failing in [0, 13, 63] {
            let mut out = vec![0u32; 64];
            let e = split_mut(&mut out, 1, 64, "test", |first, piece| {
                if first == failing {
                    return Err(fail(first));
                }
                piece.fill(1);
                Ok(())
            })
            .unwrap_err();
            assert_eq!(e.code(), ErrorCode::Io);
            assert!(
                e.to_string().contains(&format!("unit {failing} failed")),
                "{e}"
            );
            assert_eq!(out[failing], 0);
        }
    }
}
