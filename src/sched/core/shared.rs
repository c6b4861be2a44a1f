//! The core's part of the shared state: the run queues every worker takes
//! from, the idle protocol, the phase, the clock that stamps the slots, and
//! the process table. Each feature room keeps its own part beside it in
//! [`Shared`](crate::sched::shared::Shared).

use crate::deque::Stealer;
use crate::padded::CachePadded;
use crate::process::state::Wake;
use crate::process::{Pid, Process};
use crate::sched::core::clock::CoarseClock;
use crate::sched::core::depot::Depot;
use crate::sched::core::global::GlobalQueue;
use crate::sched::core::idle::Idle;
use crate::sched::core::phase::{self, Phase};
use crate::sched::core::table::{Envelope, Slot, Table, Task};
use crate::sched::observe::histogram::Latency;
use crate::sched::observe::stats::{Counter, Counters};
use crate::sched::observe::watch::StepWatch;

/// What a worker exposes to the others.
pub(crate) struct Remote<P: Process> {
    pub(crate) stealer: Stealer<Task<P>>,
    /// Processes woken from outside with affinity to this worker. Its token
    /// lets other workers take from it too, so a worker stuck in a long step
    /// does not hold them (docs/ARCHITECTURE.md, trap 6: a long step).
    pub(crate) inject: GlobalQueue<Task<P>>,
    pub(crate) counters: Counters,
    /// The worker's current step, for the long-step monitor.
    pub(crate) watch: CachePadded<StepWatch>,
    /// The worker's latency histograms, if recorded
    /// (`Builder::record_latency`); written by the worker only.
    pub(crate) latency: Option<Box<Latency>>,
    /// Steps per kind run by this worker, if counted (empty otherwise;
    /// `observe/kind_counts.rs`); written by the worker only.
    pub(crate) kind_steps: Box<[Counter]>,
}

/// The core's shared state.
pub(crate) struct Core<P: Process> {
    /// One per worker, by index.
    pub(crate) remotes: Box<[Remote<P>]>,
    /// New submissions from outside the workers.
    pub(crate) global: GlobalQueue<Task<P>>,
    pub(crate) idle: Idle,
    /// Free mailbox nodes for senders outside the workers (`depot.rs`).
    /// Padded: outside senders write its line on every send, and `phase`
    /// is read on every delivery.
    pub(crate) depot: CachePadded<Depot<Envelope<P>>>,
    pub(crate) phase: Phase,
    /// Stamps process slots at each transition (see `clock.rs`).
    pub(crate) clock: CoarseClock,
    /// Last: dropped after every queue that points into it.
    pub(crate) table: Table<P>,
}

impl<P: Process> Core<P> {
    /// The current phase (`phase.rs`).
    pub(crate) fn phase(&self) -> usize {
        self.phase.get()
    }

    /// Moves the phase forward (see `phase.rs`: the shutdown half of the
    /// pair that keeps a process created during shutdown from being lost).
    pub(crate) fn set_phase(&self, phase: usize) {
        self.phase.advance(phase);
    }

    /// For a worker's signal to `pid`: its slot, if the process waits and
    /// is now claimed for the caller ([`StateWord::claim`]: Ready, the
    /// caller's to queue, nothing pushed), else `None` (then
    /// [`Shared::deliver_signal`]).
    ///
    /// Not through `Shared::admit`: the claim checks the generation
    /// and the lifecycle itself, and its CAS alone acquires the body (an
    /// Acquire load before it would hide a weakened CAS from the model).
    ///
    /// [`StateWord::claim`]: crate::process::state::StateWord::claim
    /// [`Shared::deliver_signal`]: crate::sched::shared::Shared::deliver_signal
    #[inline]
    pub(crate) fn claim(&self, pid: Pid, kind: Wake) -> Option<&Slot<P>> {
        if self.phase() == phase::EXITING {
            // Refused by `deliver_signal`, which answers it.
            return None;
        }
        let slot = self.table.get(pid.key())?;
        if !slot.state.claim(pid.generation(), kind) {
            return None;
        }
        slot.stamp_ready(&self.clock);
        Some(slot)
    }

    /// Queues a Ready process from outside the workers.
    pub(crate) fn schedule_remote(&self, task: Task<P>) {
        // An affinity hint (a Relaxed load); any worker may take it from there.
        let worker = task.slot().figures.last_worker_hint() % self.remotes.len();
        self.remotes[worker].inject.push(task);
        self.idle.notify_one();
    }

    /// Whether any queue a worker could take from looks non-empty.
    pub(crate) fn has_visible_work(&self) -> bool {
        !self.global.is_empty()
            || self
                .remotes
                .iter()
                .any(|r| !r.inject.is_empty() || !r.stealer.is_empty())
    }
}
