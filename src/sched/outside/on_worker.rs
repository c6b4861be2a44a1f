//! Refusing a blocking wait on a worker thread.
//!
//! A worker that blocks in [`Receiver::recv`](crate::sched::Receiver::recv),
//! [`JoinHandle::join`](crate::sched::JoinHandle::join),
//! [`JoinSet::blocking_join_next`](crate::sched::JoinSet::blocking_join_next),
//! [`Scheduler::blocking_call`](crate::sched::Scheduler::blocking_call) or
//! [`Scheduler::blocking_send_timeout`](crate::sched::Scheduler::blocking_send_timeout)
//! holds itself while it waits, and what it waits for (a reply, an end, a
//! drain) may need that very worker to run: a one-worker scheduler would
//! never get out. So every blocking wait of the crate panics when it is
//! called on a worker thread of any stepsched scheduler, as tokio's do
//! inside a runtime, whether or not it would have had to wait: the rule
//! does not depend on timing. The panic is that of the step or the handler
//! that called it (the process fails with it, the worker goes on).
//!
//! A worker marks its thread once, when it starts ([`mark`]); the threads
//! of the blocking pool (`blocking_handler`) are not marked and may block.
//! Any scheduler's worker is refused, not only the one the wait is for:
//! a join handle or a join set does not know its scheduler, and blocking
//! one scheduler's worker on another's progress only moves the deadlock.

use std::cell::Cell;

std::thread_local! {
    /// Set on a scheduler's worker thread for its whole life.
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as a worker: the first thing a worker does.
pub(crate) fn mark() {
    ON_WORKER.with(|on| on.set(true));
}

/// Whether the calling thread is a worker of a scheduler.
pub(crate) fn on_worker() -> bool {
    ON_WORKER.with(Cell::get)
}

/// Panics if the calling thread is a worker (module docs). `what` names
/// the blocking method, `instead` what to do instead.
#[inline]
#[track_caller]
pub(crate) fn refuse_blocking(what: &str, instead: &str) {
    if on_worker() {
        refused(what, instead);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn refused(what: &str, instead: &str) -> ! {
    let thread = std::thread::current();
    panic!(
        "Cannot block the current thread from within a stepsched scheduler: `{what}` was \
         called on worker thread `{}`, which it would hold while what it waits for may need \
         that very worker; {instead}",
        thread.name().unwrap_or("<unnamed>")
    );
}
