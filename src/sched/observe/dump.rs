//! The process dump: [`Scheduler::processes`](crate::sched::Scheduler::processes) and [`ProcessInfo`].
//!
//! A dump must never stop the world, nor wait for a worker (tokio's task
//! dump once deadlocked with its workers). This one reads only atomics:
//! for every slot of the process table, its state word, step count,
//! last worker, the coarse time of its last transition and its pending
//! timer count (and the monitor and link counts, Relaxed figures that may
//! lag by a step). It never waits for a worker (the one lock it takes, the
//! registry's, for a named process only, is held only for map operations) and never touches
//! a process's `Body`, which belongs
//! to the worker running it. The price is that an entry is not one instant:
//! its fields are read one after the other while the process moves on.
//!
//! An entry never mixes two processes of one slot (the *incarnation
//! rule*): the state word is read before and after the figures, and an
//! entry whose generation changed in between is dropped; every figure is
//! stored with Release by whoever changes it and loaded with Acquire, so a
//! figure of a later process brings its slot's generation bump with it, and
//! a new process's figures are reset before `activate` publishes it. The
//! read and the writers' stores are in `figures.rs` (`Entry::read`, with the
//! argument), built under loom too: `loom-tests/tests/dump.rs` models a
//! slot's reuse against the read.
//!
//! Queued events come from two counters per slot rather than from the
//! [`Mailbox`](crate::mpsc::Mailbox), which has no length (its consumer side
//! is the running worker's alone, so another thread cannot even ask whether
//! it is empty without racing the consumer that frees its nodes). If the
//! builder asked for it (`Builder::count_queued_events`; off by default),
//! the one delivery path counts each event just before pushing it (an
//! atomic RMW per event, on the slot the push and the state-word notify
//! already write), and the worker counts the events it drained once per
//! step (a load and a store, no RMW). See `QueueCounts::queued` in
//! `figures.rs` for why the figure never underflows. The counters are never reset: an event that
//! lands after its process ended stays counted until whoever next holds
//! the slot drains (and reports) it, which is exactly what the mailbox
//! holds.

use crate::process::state::Lifecycle;
use crate::process::{Name, Pid};
use std::time::Duration;

/// One live process, as seen by [`Scheduler::processes`](crate::sched::Scheduler::processes).
///
/// Non-exhaustive: figures may be added in a minor release, so it is read
/// field by field, not built or destructured whole outside this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// Its PID.
    pub pid: Pid,
    /// Its lifecycle state when read: `Ready`, `Running`, `Blocked` or
    /// `Idle` (ended and free slots are not listed).
    pub state: Lifecycle,
    /// Steps it has run.
    pub steps: u64,
    /// The worker that last ran (or is running) it; `None` before its first
    /// step.
    pub last_worker: Option<usize>,
    /// Time since its last state change: when it was created, was woken,
    /// or a step started or ended. Coarse: to the millisecond, and the
    /// scheduler's clock may lag by as long as a worker takes for 488 steps
    /// (see `src/sched/core/clock.rs`).
    pub since_change: Duration,
    /// Events (messages, completions, cancels) sent to it and not yet taken
    /// by a worker for a step. A snapshot, not a bound: while the process is
    /// being sent to or stepped it may be momentarily high, by events still
    /// being pushed and by events its worker is taking at that moment (the
    /// worker counts them once per step); it is never below what the
    /// mailbox held when the entry was read, and never underflows. Events
    /// queued for an earlier process in the same slot (sent just as it
    /// ended, to be reported as undelivered) are counted until a worker
    /// drains them. `None` unless the scheduler was built with
    /// [`Builder::count_queued_events`](crate::sched::Builder::count_queued_events),
    /// since counting costs an RMW per event.
    pub queued: Option<u32>,
    /// Processes it monitors ([`StepOutput::monitor`](crate::process::StepOutput::monitor)),
    /// `monitored_by` processes that monitor it, and `links` the processes
    /// linked with it. Stored by the worker holding the process when they
    /// change and read here without synchronising: a figure, which may lag
    /// by a step (a monitor set on an idle process counts once it has
    /// registered it, at once; on a waiting one, at its next step).
    /// Saturates at 2^21 - 1.
    pub monitors: u32,
    /// See [`monitors`](Self::monitors).
    pub monitored_by: u32,
    /// See [`monitors`](Self::monitors).
    pub links: u32,
    /// Timers it has pending: set with
    /// [`wake_after`](crate::process::StepOutput::wake_after) or
    /// [`wake_at`](crate::process::StepOutput::wake_at), and command
    /// timeouts, not yet fired nor cancelled (`send_after` messages to it
    /// are not counted). As of its last step.
    pub timers: u32,
    /// Its registered name, if any
    /// ([`Scheduler::register`](crate::sched::Scheduler::register)). Read
    /// under the registry's lock, which a worker takes only to register or
    /// unregister a name, for named processes only.
    pub name: Option<Name>,
}
