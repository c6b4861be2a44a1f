//! The scheduler's phase word, and the Dekker pair that keeps a process
//! created during shutdown from being lost (issue 9, defect 2).
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
//! process's cancel is dropped with it); neither missing is impossible. loom:
//! `loom-tests/tests/phase.rs`. Built under loom, hence `#[doc(hidden)] pub`.

use crate::sync::{fence, AtomicUsize, Ordering};

/// Accepting work.
pub const RUNNING: usize = 0;
/// `shutdown` started: no new processes; cancels sent.
pub const STOPPING: usize = 1;
/// The shutdown timeout passed: every process a worker starts is closed.
pub const FORCING: usize = 2;
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
        // Acquire: pairs with the Release half of `advance`'s RMW: what
        // shutdown did before (e.g. sending cancels) is seen by a reader of
        // the new phase.
        self.0.load(Ordering::Acquire)
    }

    /// Moves the phase forward to `phase` (never back), then fences: the
    /// shutdown half of the Dekker pair (module docs). What the caller
    /// reads next sees every process whose creator [`admits`](Self::admits)
    /// returned true.
    pub fn advance(&self, phase: usize) {
        // AcqRel: Release as in `get`; Acquire so that a later phase sees
        // what the earlier one's setter did.
        self.0.fetch_max(phase, Ordering::AcqRel);
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
