//! Prefetching: the lines a worker is about to miss on, asked for ahead
//! (`sync::prefetch_write`), so that the misses of many processes overlap
//! instead of coming one after the other. Two places touch many processes'
//! lines in a row, each line last written on another core:
//!
//! - a step that sends to many (`apply_sends`): each delivery CASes the
//!   target's state word and swaps its mailbox head (the slot's first
//!   line), then links the newest node of that mailbox;
//! - a steal (`Local::steal`): the thief is about to run up to
//!   [`MAX_STEAL`] processes that the victim woke, each of which starts by
//!   CASing its state word, reads its body and pops its mailbox's stub.
//!
//! Hints only: nothing here reads what the lines hold, but for the mailbox
//! addresses the second pass needs (see each function). What it bought is
//! in `src/sched/worker/README.md`, "Prefetching".

use crate::deque::MAX_STEAL;
use crate::process::{Pid, Process};
use crate::sched::core::table::Task;
use crate::sched::shared::Shared;
use crate::sync::prefetch_write;

/// How far ahead of the delivery in progress `apply_sends` asks for a
/// target's slot line.
const SLOT_AHEAD: usize = 16;

/// How far ahead it asks for the target's newest mailbox node, whose
/// address is in the slot line asked for `SLOT_AHEAD - NODE_AHEAD`
/// deliveries earlier.
const NODE_AHEAD: usize = 8;

/// How many sends a step must make for `apply_sends` to call
/// [`warm_sends`]: with fewer, no delivery is `NODE_AHEAD` ahead of
/// another.
pub(super) const WARM_FROM: usize = NODE_AHEAD;

/// Called before each delivery of a step's sends, with the sends not yet
/// delivered (`pending[0]` is the next): asks for the lines of the
/// deliveries [`SLOT_AHEAD`] and [`NODE_AHEAD`] ahead.
#[inline]
pub(super) fn warm_sends<P: Process>(shared: &Shared<P>, pending: &[(Pid, P::Message)]) {
    if let Some(&(pid, _)) = pending.get(SLOT_AHEAD) {
        if let Some(slot) = shared.core.table.get(pid.key()) {
            prefetch_write(slot);
        }
    }
    if let Some(&(pid, _)) = pending.get(NODE_AHEAD) {
        if let Some(slot) = shared.core.table.get(pid.key()) {
            slot.events.prefetch_newest();
        }
    }
}

/// Called with the tasks a steal took, before any is pushed onto the
/// thief's deque (`Stealer::steal_half_into_with`): asks for each slot's
/// first line (state word, mailbox) and its body's first line, then, in a
/// second pass that finds them arriving, for each mailbox's stub.
pub(super) fn warm_stolen<P: Process>(tasks: &[Task<P>]) {
    debug_assert!(tasks.len() <= MAX_STEAL);
    for task in tasks {
        let slot = task.slot();
        prefetch_write(slot);
        prefetch_write(slot.body.get());
    }
    for task in tasks {
        // SAFETY: the tasks are ours (the steal's claim won them, and none
        // is yet where another thief could take it), so no one can start
        // these processes and pop their mailboxes meanwhile.
        unsafe { task.slot().events.prefetch_stub() };
    }
}
