//! The walk over the tensor infos of a large file on two threads.
//!
//! Infos differ in size (names do), so where the second half of them starts is known only once
//! the first half has been walked. This thread walks the first part; a second thread starts at
//! a position found by looking, past an estimate of where that part ends, for infos that look
//! right. Its infos are used only if this thread's walk lands exactly on that position: then
//! they are what one walk would have read (the same code, from the same position), so what a
//! file is accepted or refused for does not depend on the split. Otherwise (no such position,
//! a walk that steps over it, an info the fast walk leaves to the general path) the ordinary
//! walk reads the rest.
//!
//! Names are indexed in file order on this thread (the index is one table): those of its own
//! part while the second thread still walks, then the second thread's.

use super::{decode_tensor_info_le64, NameIndexing, Walk, FAST_TYPES};
use crate::platform;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// From how many tensor infos the walk is split: below this, starting a thread costs more
/// than the part of the walk it takes, or saves too little to be worth its variance (measured
/// with the walk specialized by dimension count: 10000 infos opened no faster split, 12000 as
/// fast, 16000 and 20000 8 to 12% faster).
pub(super) const SPLIT_FROM: usize = 16384;

/// This thread's share of the infos: a little under half, as it also indexes their names while
/// the second thread walks, plus [`HEAD_START`].
const OWN_SHARE: (usize, usize) = (7, 16);

/// Infos more that this thread walks, as the second thread starts later (tens of µs).
const HEAD_START: usize = 1500;

/// Infos walked before the split, to estimate their size.
const PROBE: usize = 64;

/// Infos the second thread walks between notes of where it stands: if it went on past the
/// last info, what it read up to the last note before that is used.
const CHUNK: usize = 256;

/// How far past the estimate a position is looked for (infos are mostly under 100 bytes).
const SEARCH: usize = 4096;

/// Where the second thread's walk stood after a chunk.
#[derive(Clone, Copy)]
struct Mark {
    /// Infos accepted so far.
    accepted: usize,
    /// Where the next info starts.
    pos: usize,
    /// The walk's end of data so far ([`Walk::run_le64`]).
    prev_end: u64,
}

/// The second thread's walk, with the marks it left.
struct Tail<'a> {
    walk: Walk<'a>,
    marks: Vec<Mark>,
}

impl Tail<'_> {
    /// Walks from `pos` until the buffers are full, an info is left to the general path, or
    /// `stop` is set; notes where it stands after each chunk.
    fn run(&mut self, mut pos: usize, stop: &AtomicBool) {
        let quota = self.walk.tensors.capacity();
        // Zeroed here, on this thread, not on the one that waits for it.
        self.walk.tensors.resize(quota, 0);
        self.walk.hashes.resize(quota, 0);
        loop {
            let upto = (self.walk.accepted + CHUNK).min(quota);
            pos = self.walk.run_le64::<true>(pos, usize::MAX, upto);
            self.marks.push(Mark {
                accepted: self.walk.accepted,
                pos,
                prev_end: self.walk.prev_end,
            });
            if self.walk.accepted < upto || upto == quota || stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
}

/// Whether this machine runs two threads at once (asked once).
fn two_cores() -> bool {
    // 0: not asked yet; else the count of threads, at least 1.
    static CPUS: AtomicUsize = AtomicUsize::new(0);
    let mut n = CPUS.load(Ordering::Relaxed);
    if n == 0 {
        n = std::thread::available_parallelism().map_or(1, |n| n.get());
        CPUS.store(n, Ordering::Relaxed);
    }
    n > 1
}

/// The first position from `from` (looking at most [`SEARCH`] bytes on) where three infos in a
/// row decode and look right for the fast walk: a name of 1 to 255 bytes, 1 to 4 dimensions,
/// a type the fast walk knows, a first dimension that is whole blocks, an aligned offset. A
/// guess only: the walk that lands there, or does not, decides.
fn find_infos(bytes: &[u8], from: usize, alignment: u64) -> Option<usize> {
    let looks_right = |at: usize| {
        let raw = decode_tensor_info_le64(bytes, at)?;
        let t = FAST_TYPES[usize::try_from(raw.type_id.min(64)).unwrap_or(64)];
        let right = (1..256).contains(&raw.name.len)
            && (1..=4).contains(&raw.n_dims)
            && t.block_mask != u64::MAX
            && raw.dims[0] & t.block_mask == 0
            && raw.offset % alignment == 0;
        right.then_some(raw.end)
    };
    let end = from.saturating_add(SEARCH).min(bytes.len());
    (from..end).find(|&at| {
        looks_right(at)
            .and_then(looks_right)
            .and_then(looks_right)
            .is_some()
    })
}

/// Sets its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Waits until `done` is set: spinning first (waking a sleeping thread costs tens of µs), then
/// yielding, in case the other thread waits for this one's processor.
fn wait_for(done: &AtomicBool) {
    let mut spins = 0u32;
    while !done.load(Ordering::Acquire) {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Who walks the second part: not decided yet, the second thread (which started in time), or
/// this one (the second thread had not started when this one got there).
const UNCLAIMED: u8 = 0;
const SECOND: u8 = 1;
const FIRST: u8 = 2;

impl Walk<'_> {
    /// Walks from the info at `pos` (the first; nothing accepted yet) on two threads, and
    /// indexes the names walked into `names`; returns where the walk stands, and the caller
    /// walks on from there (over every info, if the walk could not be split).
    pub(super) fn split(&mut self, pos: usize, count: usize, names: &mut NameIndexing) -> usize {
        let two = two_cores();
        #[cfg(test)]
        let two = two || tests::FORCE.get();
        if cfg!(target_family = "wasm") || !two {
            return pos;
        }
        let start = pos;
        let pos = self.run_le64::<true>(pos, usize::MAX, PROBE);
        if self.accepted < PROBE {
            return pos;
        }
        // Infos are at least 24 bytes.
        let per_info = (pos - start) / PROBE;
        let left = count - PROBE;
        let (share, of) = OWN_SHARE;
        let own = (left / of * share + HEAD_START).min(left);
        let guess = pos.saturating_add(per_info.saturating_mul(own));
        let Some(sync) = find_infos(self.bytes, guess, self.alignment) else {
            return pos;
        };
        #[cfg(test)]
        let sync = sync + usize::from(tests::MISS.get());
        // Room for the infos estimated to lie after `sync`, and a sixteenth more; if that is
        // too few, the ordinary walk reads the rest.
        let after = left.saturating_sub((sync - pos) / per_info);
        let quota = (after + after / 16 + PROBE).min(count);
        let tail = Mutex::new(Tail {
            // Allocated here (reused memory, as the other buffers), zeroed by the thread.
            walk: Walk::new(
                self.bytes,
                self.size,
                self.layout,
                self.alignment,
                self.hasher,
                Vec::with_capacity(quota),
                Vec::with_capacity(quota),
            ),
            marks: Vec::with_capacity(quota / CHUNK + 1),
        });
        let (done, stop) = (AtomicBool::new(false), AtomicBool::new(false));
        let claim = AtomicU8::new(UNCLAIMED);
        // (A test has the second thread start too late.)
        #[cfg(test)]
        let late = tests::ALONE.get();
        #[cfg(not(test))]
        let late = false;
        let second = || {
            // Set however the walk ends, a panic included (then the lock is poisoned, and the
            // walk not used).
            let _done = SetOnDrop(&done);
            if late {
                return;
            }
            let claimed =
                claim.compare_exchange(UNCLAIMED, SECOND, Ordering::Acquire, Ordering::Relaxed);
            if claimed.is_err() {
                return;
            }
            if let Ok(mut tail) = tail.lock() {
                tail.run(sync, &stop);
            }
        };
        platform::with_workers(1, &second, || {
            let mut pos = self.run_le64::<true>(pos, sync, count);
            // An info the fast walk leaves to the general path (one with no elements, say):
            // read as the ordinary walk reads it. If it is refused, the ordinary walk meets
            // it again and reports it.
            while pos < sync && self.accepted < count {
                match self.accept_general(pos) {
                    Ok(next) => pos = self.run_le64::<true>(next, sync, count),
                    Err(_) => break,
                }
            }
            let claim_first =
                || claim.compare_exchange(UNCLAIMED, FIRST, Ordering::Relaxed, Ordering::Relaxed);
            if pos != sync || self.accepted == count {
                // Not to be used: the second thread is kept from starting, or stopped.
                let _ = claim_first();
                stop.store(true, Ordering::Relaxed);
                return pos;
            }
            self.index_names(names);
            // A thread started late (its processor asleep, or busy) would make this one wait
            // longer than walking on alone. (Tests wait, so that what they check does not
            // depend on when the thread starts.)
            #[cfg(test)]
            let may_go_alone = !tests::FORCE.get() || late;
            #[cfg(not(test))]
            let may_go_alone = true;
            if may_go_alone && claim_first().is_ok() {
                return pos;
            }
            wait_for(&done);
            match tail.lock() {
                Ok(tail) => self.adopt(&tail, sync, count, names).unwrap_or(pos),
                Err(_) => pos,
            }
        })
    }

    /// Indexes the names of the infos accepted since the last call.
    fn index_names(&self, names: &mut NameIndexing) {
        let (bytes, layout) = (self.bytes, self.layout);
        let name_of = |k: usize| super::tensor_name(bytes, self.tensors[k], layout);
        names.add(&self.hashes[names.done..self.accepted], |j, k| {
            name_of(j) == name_of(k)
        });
    }

    /// Takes the second thread's infos that start at `sync` (where this walk now stands), up
    /// to its last mark within the `count` infos: their positions, their names into the
    /// index, their data ranges; returns where the walk then stands.
    fn adopt(
        &mut self,
        tail: &Tail<'_>,
        sync: usize,
        count: usize,
        names: &mut NameIndexing,
    ) -> Option<usize> {
        let first = decode_tensor_info_le64(self.bytes, sync)?.offset;
        let i = self.accepted;
        let mark = *tail.marks.iter().rev().find(|m| m.accepted <= count - i)?;
        let n = mark.accepted;
        self.tensors[i..i + n].copy_from_slice(&tail.walk.tensors[..n]);
        self.accepted = i + n;
        let (bytes, layout) = (self.bytes, self.layout);
        let name_of = |k: usize| super::tensor_name(bytes, self.tensors[k], layout);
        names.add(&tail.walk.hashes[..n], |j, k| name_of(j) == name_of(k));
        // The second walk's ends were followed from its first info; the two follow on if that
        // one's data start at or after this walk's last end.
        self.prev_end = if n == 0 {
            self.prev_end
        } else if first >= self.prev_end {
            mark.prev_end
        } else {
            u64::MAX
        };
        self.max_end = self.max_end.max(self.prev_end);
        #[cfg(test)]
        tests::TAKEN.set(tests::TAKEN.get() + n);
        Some(mark.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{file, general_outcome, outcome};
    use super::SPLIT_FROM;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to split the walk even on a machine that runs one thread at a time.
        pub(super) static FORCE: Cell<bool> = const { Cell::new(false) };
        /// Set by a test to have this thread walk the second part too, as when the second
        /// thread starts late.
        pub(super) static ALONE: Cell<bool> = const { Cell::new(false) };
        /// Set by a test to start the second walk one byte past the infos it found.
        pub(super) static MISS: Cell<bool> = const { Cell::new(false) };
        /// Infos taken from second walks on this thread.
        pub(super) static TAKEN: Cell<usize> = const { Cell::new(0) };
    }

    /// A tensor info: name, dimensions, type, offset.
    type Info = (String, Vec<u64>, u32, u64);

    /// A change to the `i`-th info.
    type Edit = Box<dyn Fn(usize, &mut Info)>;

    /// The name of the `i`-th tensor of [`experts`].
    fn name(i: usize) -> String {
        format!("blk.{}.ffn_up_exps.{}.weight", i / 128, i % 128)
    }

    /// A file of `n` tensors named like an expert model's, each 32 bytes of F32 (in order),
    /// with `edit` applied to the infos first.
    fn experts(n: usize, edit: impl Fn(usize, &mut Info)) -> Vec<u8> {
        let infos: Vec<Info> = (0..n)
            .map(|i| {
                let mut info = (name(i), vec![8], 0, 32 * i as u64);
                edit(i, &mut info);
                info
            })
            .collect();
        let infos: Vec<(&str, &[u64], u32, u64)> = infos
            .iter()
            .map(|(name, dims, ty, offset)| (name.as_str(), &dims[..], *ty, *offset))
            .collect();
        file(&infos, 32 * n)
    }

    /// Whether opening `bytes` with the walk split gives what the general path gives, how
    /// many infos the second walk gave, and whether the file opened.
    fn split_outcome(bytes: &[u8]) -> (bool, usize, bool) {
        FORCE.set(true);
        TAKEN.set(0);
        let split = outcome(bytes);
        let taken = TAKEN.get();
        FORCE.set(false);
        (split == general_outcome(bytes), taken, split.is_ok())
    }

    const N: usize = SPLIT_FROM + 7000;

    #[test]
    fn a_split_walk_reads_what_one_walk_reads() {
        // The data after the infos are zeros, which read as infos too: the second walk goes
        // past the last one, and only what lies within the count is taken.
        let (same, taken, opened) = split_outcome(&experts(N, |_, _| {}));
        assert!(same && opened);
        assert!(taken > N / 3 && taken < N, "{taken} of {N}");
    }

    #[test]
    fn a_split_walk_refuses_what_one_walk_refuses() {
        let cases: [(&str, Edit); 7] = [
            // A name given twice: both in the first part, both in the second, one in each.
            (
                "duplicate first",
                Box::new(|i, t| {
                    if i == 900 {
                        t.0 = name(5)
                    }
                }),
            ),
            (
                "duplicate second",
                Box::new(|i, t| {
                    if i == N - 3 {
                        t.0 = name(N - 200)
                    }
                }),
            ),
            (
                "duplicate across",
                Box::new(|i, t| {
                    if i == N - 10 {
                        t.0 = name(256)
                    }
                }),
            ),
            // A malformed info in the second part is reported before a duplicate in the first.
            (
                "malformed after duplicate",
                Box::new(|i, t| {
                    if i == 900 {
                        t.0 = name(5)
                    }
                    if i == N - 100 {
                        t.3 += 4
                    }
                }),
            ),
            // An info the fast walk leaves to the general path, in each part.
            (
                "no elements",
                Box::new(|i, t| {
                    if i == 1000 || i == N - 1000 {
                        t.1 = vec![0]
                    }
                }),
            ),
            // Data out of order, across the parts and inside the second.
            (
                "out of order",
                Box::new(|i, t| t.3 = 32 * (N - 1 - i) as u64),
            ),
            (
                "overlap",
                Box::new(|i, t| {
                    if i == N - 2000 {
                        t.3 = 64
                    }
                }),
            ),
        ];
        for (what, edit) in cases {
            let (same, taken, opened) = split_outcome(&experts(N, edit));
            assert!(same, "{what}");
            let opens = what == "no elements" || what == "out of order";
            assert_eq!(opened, opens, "{what}");
            assert!(taken > 0, "{what}: the walk was not split");
        }
    }

    #[test]
    fn a_second_walk_from_the_wrong_place_is_not_used() {
        MISS.set(true);
        let (same, taken, opened) = split_outcome(&experts(N, |_, _| {}));
        MISS.set(false);
        assert!(same && opened);
        assert_eq!(taken, 0);
    }

    #[test]
    fn a_second_thread_that_starts_late_is_not_waited_for() {
        ALONE.set(true);
        let (same, taken, opened) = split_outcome(&experts(N, |_, _| {}));
        ALONE.set(false);
        assert!(same && opened);
        assert_eq!(taken, 0);
    }

    #[test]
    fn a_split_walk_reads_changed_files_as_one_walk_does() {
        let base = experts(N, |_, _| {});
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..12 {
            let mut bytes = base.clone();
            for _ in 0..1 + round % 3 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let at =
                    24 + usize::try_from(rng % (base.len() as u64 - 32 * N as u64 - 24)).unwrap();
                bytes[at] = (rng >> 40).to_le_bytes()[0];
            }
            assert!(split_outcome(&bytes).0, "round {round}");
        }
    }
}
