//! The scheduler's phase word, and the Dekker pair that keeps a process
//! created during shutdown from being lost (docs/ARCHITECTURE.md, trap 8:
//! check, then act, across a phase change).
//!
//! Phases only move forward: RUNNING, STOPPING (`shutdown` began: no new
//! processes, cancels sent), FORCING (its timeout passed: every process a
//! worker starts is closed), EXITING (workers exit).
//!
//! A creator runs the user's `init` before it takes a slot, and that can
//! take any time; a shutdown that runs meanwhile finds nothing live and may
//! stop the workers. So the creator, after making its process Ready in the
//! table and before queueing it, calls [`Phase::admits`]; shutdown moves
//! the phase with [`Phase::advance`] before it scans the table. Each side
//! writes, then a SeqCst fence, then reads the other's word:
//!
//! - creator: activate the slot (its state word), fence, load the phase;
//! - shutdown: raise the phase, fence, load every slot's state word (and
//!   the live count).
//!
//! In the fences' total order one comes first. If the creator's does,
//! shutdown's scan sees the slot Ready (it sends it `Cancel::Shutdown`, and
//! waits for it); if shutdown's does, the creator reads STOPPING and
//! withdraws the process, handing it back. Both may happen (the withdrawn
//! process's cancel stays in its mailbox and is dropped by the
//! stranded-events report); neither missing is impossible. loom:
//! `loom-tests/tests/phase.rs`. Built under loom; the model reaches it
//! through `crate::__internals`.

use crate::sync::{fence, AtomicUsize, Ordering};

/// Accepting work.
pub const RUNNING: usize = 0;
/// `shutdown` started: no new processes; cancels sent.
pub const STOPPING: usize = 1;
/// The shutdown timeout passed: every process a worker starts is closed.
pub(crate) const FORCING: usize = 2;
/// Workers exit.
pub const EXITING: usize = 3;

/// The phase word. See the [module docs](self).
#[derive(Debug)]
pub struct Phase(AtomicUsize);

impl Phase {
    /// RUNNING.
    pub fn new() -> Self {
        Phase(AtomicUsize::new(RUNNING))
    }

    /// The current phase.
    #[inline]
    pub fn get(&self) -> usize {
        // Relaxed: a reader acts on the number alone (refuses, closes by
        // force, exits); it reads nothing shutdown wrote through it. Where
        // a read must follow a write on the other side, the fences of
        // `advance` and `admits` order it; the workers' exit is joined.
        // (An Acquire here, paired with a Release in `advance`, would carry
        // nothing: the ordering-mutation run and the loom models find no
        // read that needs them.)
        self.0.load(Ordering::Relaxed)
    }

    /// Moves the phase forward to `phase` (never back), then fences: the
    /// shutdown half of the Dekker pair (module docs). What the caller
    /// reads next sees every process whose creator [`admits`](Self::admits)
    /// returned true.
    pub fn advance(&self, phase: usize) {
        // Relaxed: see `get`; the RMW keeps the phase monotonic, the fence
        // below orders it against the creators.
        self.0.fetch_max(phase, Ordering::Relaxed);
        // SeqCst fence: pairs with the fence in `admits` (module docs).
        fence(Ordering::SeqCst);
    }

    /// Whether a process the caller has just published (made Ready in the
    /// table, not yet queued) may be queued: false once shutdown has begun,
    /// and then the caller withdraws it. The creator half of the Dekker
    /// pair (module docs).
    #[inline]
    pub fn admits(&self) -> bool {
        // SeqCst fence: pairs with the fence in `advance`. On x86 it follows
        // the activating CAS, a locked instruction, so the store buffer is
        // already drained.
        fence(Ordering::SeqCst);
        self.get() == RUNNING
    }
}

impl Default for Phase {
    fn default() -> Self {
        Self::new()
    }
}
