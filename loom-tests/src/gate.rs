//! Milestone gates: where a model's reader starts, chosen per model run.
//!
//! loom 0.7's DPOR remembers one last access per atomic, so a load that
//! another thread's load (or the writer's own load before its CAS or
//! store) follows is never raced against the later write: loom never runs
//! that write before the earlier load (`docs/proof/loom-limits.md`, and the
//! canary `tests/limits.rs`). A state word changed by load-then-CAS is the
//! common victim: a reader's first load of it always sees the value from
//! before the writer's transition.
//!
//! A [`Gate`] moves the read instead. The writer marks its milestones
//! ([`Gate::pass`], 1, 2, ... in program order, Relaxed stores); the reader
//! spins ([`Gate::wait`], Relaxed loads and `yield_now`) until the one the
//! model run chose, then reads; one `loom::model` per milestone. Relaxed on
//! both sides, the gate adds no happens-before edge: it moves where the read
//! starts, not what its loads may return. The spin ends because loom does
//! not let a load after `yield_now` return again a store the thread already
//! saw if a newer one exists.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The writer's milestones, for a reader to start after (module docs).
#[derive(Debug)]
pub struct Gate(AtomicUsize);

impl Gate {
    /// A gate no milestone has passed yet (shared between the writer and
    /// the reader).
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate(AtomicUsize::new(0)))
    }

    /// The writer passed milestone `n` (1, 2, ... in order; one writer per
    /// gate).
    pub fn pass(&self, n: usize) {
        // Relaxed: scheduling only; it must order nothing (module docs). Its
        // partner is the Relaxed load in `wait`.
        self.0.store(n, Ordering::Relaxed);
    }

    /// Spins until the writer passed milestone `n` (0: returns at once).
    pub fn wait(&self, n: usize) {
        // Relaxed: as in `pass`, whose store it reads.
        while self.0.load(Ordering::Relaxed) < n {
            thread::yield_now();
        }
    }
}
