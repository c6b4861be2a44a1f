//! A slot's figures for the process dump ([`Figures`], [`TimerCount`],
//! [`QueueCounts`]), and the dump's read of one slot ([`Entry::read`]).
//!
//! Every process slot of the table (`table.rs`) carries, besides its state
//! word, its process's step count, the worker that last ran it, the coarse
//! time of its last transition and its pending-timer count, and (opt-in)
//! two event counters. The
//! holder of the process and the parties that make its transitions write
//! them; `Scheduler::processes` (`dump.rs`) reads them from any thread,
//! without a lock and without waiting for anyone. This file holds both
//! sides, so that the loom model of the dump (`loom-tests/tests/dump.rs`)
//! runs the code the scheduler runs; the table and the dump are not built
//! under loom (the models reach this file through `crate::__internals`).
//!
//! # The incarnation rule
//!
//! A slot is reused; its state word's generation tells its processes
//! (*incarnations*) apart. An entry must never pair one incarnation's PID
//! with a figure written for another. The read is: the state word
//! (Acquire), the figures (each Acquire), the state word again; the entry
//! is dropped if the generation changed. Two directions:
//!
//! - **No later figure under an earlier PID.** Every figure of an
//!   incarnation is stored with Release after (in happens-before) the
//!   `free` that bumped the generation to it: by its creator (`reset`,
//!   before `activate`), by its workers (which took it through the state
//!   word's CASes; the timer count's `publish` too), or by a sender that
//!   read its generation (`count_push`).
//!   A load that returns such a value synchronises with its store, so the
//!   `free` happens before the second state load, which (read-read
//!   coherence) returns the new generation or a later one: dropped.
//! - **No earlier figure under a later PID.** A new incarnation's step
//!   count and stamp are reset (`reset`) before `activate` publishes it with
//!   a Release CAS; the first state load (Acquire) that returns the new
//!   generation synchronises with that CAS, so the figure loads return the
//!   resets or later values. Its last worker is reported only once it has
//!   run: a step counted (`count_step`'s Release follows `ran_on`'s store
//!   in the worker's program order) or the state Running (`ran_on` comes
//!   before the `start` CAS the state load read). The timer count needs no
//!   reset: whoever held the previous incarnation last published 0 before
//!   the `free` (`close`), so that 0, too, happens before `activate`. The
//!   queued counters are never reset (below), so they have no such
//!   direction.
//!
//! Within one incarnation an entry is not one instant: its fields are read
//! one after the other while the process moves on.
//!
//! loom: `loom-tests/tests/dump.rs` runs one incarnation's end, the slot's
//! reuse and the next incarnation's first step against this read, and fails
//! when any of these orderings is weakened.
//!
//! # Queued events
//!
//! A mailbox has no length (its consumer side is the holder's alone), so
//! the slot counts events pushed (`Shared::deliver`, the only pusher, just
//! before its push) and events drained (the holder, once per drain, after
//! its pops). See [`QueueCounts::queued`] for why the difference never
//! underflows and never under-reports. Neither counter is reset when the
//! slot is reused: events that reach the mailbox after their process ended
//! stay in it, counted, until the next holder drains them, so a reset would
//! let the counts disagree with the mailbox.

use crate::process::state::{Lifecycle, Snapshot, StateWord};
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// A slot's step count, last worker and stamp. `repr(C)`: the three keep
/// the order and place they had as `Slot`'s own fields (after the state
/// word; see `Slot`'s layout note).
#[repr(C)]
#[derive(Debug)]
pub struct Figures {
    /// Steps the process has run. Written (a load and a Release store, not
    /// an RMW) only by the party holding the process, whose hold the state
    /// word's CASes order after the previous holder's; read (Acquire) by
    /// [`Entry::read`].
    steps: AtomicU64,
    /// The coarse clock value at the last lifecycle transition, stored
    /// (Release) by the party that made it: the creator, the worker at start
    /// and end of a step, the notifier or terminator that made it Ready.
    /// Read (Acquire) by [`Entry::read`].
    changed_at: AtomicU64,
    /// The worker that last ran the process: where remote wakeups send it
    /// (a hint: Relaxed loads), and what the dump reports (Release store by
    /// the worker, Acquire load by [`Entry::read`]).
    last_worker: AtomicUsize,
}

impl Figures {
    /// Zero steps, stamp 0, worker 0.
    pub fn new() -> Self {
        Figures {
            steps: AtomicU64::new(0),
            changed_at: AtomicU64::new(0),
            last_worker: AtomicUsize::new(0),
        }
    }

    /// Resets the figures for a new process, stamped `now`. By its creator,
    /// after the slot's `free` and before its `activate` (module docs).
    #[inline]
    pub fn reset(&self, now: u64) {
        // Release: as in `stamp`, for the dump: this store follows the
        // slot's free, which bumped the generation (a dump that reads this 0
        // under the previous generation then sees the bump). That `activate`
        // publishes it to a dump that sees the new process is the CAS's own
        // Release.
        self.steps.store(0, Ordering::Release);
        self.stamp(now);
    }

    /// Records a lifecycle transition at `now` (coarse clock). By the party
    /// that made the transition.
    #[inline]
    pub fn stamp(&self, now: u64) {
        // Release: pairs with the Acquire load in `Entry::read`: a dump that
        // reads a stamp of a later incarnation of this slot then sees its
        // generation bump when it re-reads the state word (and drops the
        // entry). A plain `mov` on x86_64.
        self.changed_at.store(now, Ordering::Release);
    }

    /// Counts a step. Only the worker holding the process calls this.
    #[inline]
    pub fn count_step(&self) {
        // Relaxed load: one writer at a time, and successive holders are
        // ordered by the state word's AcqRel CASes (start after the previous
        // end_step), so this reads our own process's last count.
        let steps = self.steps.load(Ordering::Relaxed);
        // Release: pairs with the Acquire load in `Entry::read`, as in
        // `stamp`; and a dump that sees this count sees our `ran_on` before
        // it (it reports the last worker once a step is counted).
        self.steps.store(steps + 1, Ordering::Release);
    }

    /// Records that worker `worker` runs the process. By that worker, before
    /// its `start` CAS.
    #[inline]
    pub fn ran_on(&self, worker: usize) {
        // Release: pairs with the Acquire load in `Entry::read` (as `stamp`);
        // remote wakeups read it Relaxed, as a hint (`last_worker_hint`).
        self.last_worker.store(worker, Ordering::Release);
    }

    /// The worker that last ran the process, as a hint for where to send a
    /// wakeup (0 before its first step).
    #[inline]
    pub fn last_worker_hint(&self) -> usize {
        // Relaxed: a placement hint; any worker may run any process.
        self.last_worker.load(Ordering::Relaxed)
    }
}

impl Default for Figures {
    fn default() -> Self {
        Self::new()
    }
}

/// A slot's queued-events counters (module docs). `repr(C)`: `pushed`
/// first, where `Slot`'s layout note wants it.
#[repr(C)]
#[derive(Debug)]
pub struct QueueCounts {
    /// Events ever pushed into the slot's mailbox, wrapping: bumped (one
    /// RMW) by `Shared::deliver`, the only pusher, just before its push.
    pushed: AtomicU32,
    /// Events ever taken out of the mailbox, wrapping: stored (a load and a
    /// Release store, not an RMW) by the holder of the process once per
    /// drain, in [`count_drained`](QueueCounts::count_drained).
    drained: AtomicU32,
}

impl QueueCounts {
    /// Nothing pushed, nothing drained.
    pub fn new() -> Self {
        QueueCounts {
            pushed: AtomicU32::new(0),
            drained: AtomicU32::new(0),
        }
    }

    /// Counts an event about to be pushed into the mailbox. Called by
    /// `Shared::deliver` only, before the push: an event is counted before
    /// any consumer can pop it.
    #[inline]
    pub fn count_push(&self) {
        // Release: pairs with the Acquire load in `queued`: a dump that
        // counts a push made for a later incarnation of this slot (whose
        // sender read the new generation, Acquire, before this RMW) then
        // sees that generation when it re-reads the state word, and drops
        // the entry (the incarnation rule). The count itself needs no
        // ordering: the push that follows in program order publishes the
        // event, and with it this increment, to the consumer (see `queued`).
        self.pushed.fetch_add(1, Ordering::Release);
    }

    /// Records that the caller took `n` events out of the mailbox. Only the
    /// party holding the process calls it (the worker running or closing
    /// it, or `report_stranded` after the workers exited), once per drain,
    /// after its pops.
    #[inline]
    pub fn count_drained(&self, n: u32) {
        if n == 0 {
            return;
        }
        // Relaxed load: one writer at a time, ordered after the previous
        // one by the state word's CASes (as in `count_step`).
        let drained = self.drained.load(Ordering::Relaxed);
        // Release: pairs with the Acquire load in `queued`, so a dump that
        // sees this count also sees the pushes of the events it covers
        // (no underflow; see `queued`).
        self.drained
            .store(drained.wrapping_add(n), Ordering::Release);
    }

    /// Events in the mailbox, as far as the counters know: pushes counted
    /// minus pops counted, read without touching the mailbox itself.
    ///
    /// It never underflows and never under-reports. `drained` is read
    /// first (Acquire): every event it covers was popped by an Acquire load
    /// of the link its producer stored (Release) after `count_push`, so that
    /// increment happens before the holder's Release store of `drained`,
    /// and hence before our later load of `pushed`, which (coherence) sees
    /// it or a newer value. So the result is at least the number of events
    /// in the mailbox at the first load; it may exceed it by pushes counted
    /// but still in flight, and by events the holder has popped but not yet
    /// counted (it counts once per drain). Wrapping arithmetic is exact
    /// while fewer than 2^32 events are queued.
    pub fn queued(&self) -> u32 {
        // Acquire: pairs with the Release store in `count_drained` (above).
        let drained = self.drained.load(Ordering::Acquire);
        // Acquire: pairs with the Release RMW in `count_push` (the
        // incarnation rule).
        let pushed = self.pushed.load(Ordering::Acquire);
        pushed.wrapping_sub(drained)
    }
}

impl Default for QueueCounts {
    fn default() -> Self {
        Self::new()
    }
}

/// A slot's pending-timer count, for the dump: how many timers and command
/// timeouts its process has pending (`Body::timers().len()`), as of the
/// holder's last change.
///
/// One writer at a time: the party holding the process, in
/// [`publish`](TimerCount::publish) (`Local::publish_timer_count`), after
/// each step that changed its timers (by the step's timer operations, or
/// by its events: a timer's that fired, a command's completion that
/// cancelled its timeout), and with 0 by `close` before the slot is freed,
/// so a new incarnation starts at 0 with no reset of its own.
/// Read (Acquire) by [`Entry::read`], under the incarnation rule (module
/// docs).
#[derive(Debug)]
pub struct TimerCount {
    pending: AtomicU32,
}

impl TimerCount {
    /// No timer pending.
    pub fn new() -> Self {
        TimerCount {
            pending: AtomicU32::new(0),
        }
    }

    /// Publishes that the process has `n` timers pending. Only the party
    /// holding the process calls it: the worker after a step that changed
    /// its timers, and `close` (with 0) before the slot is freed.
    #[inline]
    pub fn publish(&self, n: u32) {
        // Release: pairs with the Acquire load in `Entry::read`, as in
        // `Figures::stamp`: a count of a later incarnation (stored by its
        // holder, after the `free` that bumped the generation to it) brings
        // that bump with it, so the dump's re-read of the state word sees
        // the new generation and drops the entry (the incarnation rule's
        // first direction). The second needs nothing here: the previous
        // holder's 0 precedes the slot's `free` in its program order, and
        // `activate`'s Release CAS publishes it with the new process. A
        // plain `mov` on x86_64.
        self.pending.store(n, Ordering::Release);
    }

    /// The count last published, for the party holding the process (to
    /// skip a store that would change nothing).
    #[inline]
    pub fn published(&self) -> u32 {
        // Relaxed: only the holder writes it, and successive holders are
        // ordered by the state word's CASes (as in `count_step`), so this
        // reads the caller's own last store or its predecessor's.
        self.pending.load(Ordering::Relaxed)
    }
}

impl Default for TimerCount {
    fn default() -> Self {
        Self::new()
    }
}

/// One slot as the dump reads it: a live process's state and figures, all
/// of one incarnation (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The state word at the first read: the PID's generation, and the
    /// lifecycle the dump reports.
    pub state: Snapshot,
    /// Steps the process has run.
    pub steps: u64,
    /// The worker that last ran (or is running) it, as stored by `ran_on`;
    /// `None` before its first step.
    pub last_worker: Option<usize>,
    /// The coarse time of its last transition.
    pub changed_at: u64,
    /// Timers it has pending ([`TimerCount`]).
    pub timers: u32,
    /// Events in its mailbox ([`QueueCounts::queued`]), if `counts` was
    /// given.
    pub queued: Option<u32>,
}

impl Entry {
    /// Reads the slot whose state word is `state`: `None` if it holds no
    /// live process (Free or Complete), or if its process ended while it
    /// was read (the generation changed). `timers`: the slot's pending-timer
    /// count; `counts`: its queued counters, if the scheduler maintains
    /// them.
    pub fn read(
        state: &StateWord,
        figures: &Figures,
        timers: &TimerCount,
        counts: Option<&QueueCounts>,
    ) -> Option<Entry> {
        // Acquire (inside `load`): pairs with the Release half of the CAS
        // that wrote it; for a new incarnation, `activate`, so the loads
        // below see its `reset` (the second direction in the module docs).
        let before = state.load();
        if matches!(before.lifecycle(), Lifecycle::Free | Lifecycle::Complete) {
            return None;
        }
        // Acquire: pairs with the Release stores in `reset`, `count_step`,
        // `ran_on`, `stamp` and `TimerCount::publish`: a value of a later
        // incarnation brings its `free` with it, and the re-read below sees
        // the new generation (the first direction in the module docs).
        let steps = figures.steps.load(Ordering::Acquire);
        let worker = figures.last_worker.load(Ordering::Acquire);
        let changed_at = figures.changed_at.load(Ordering::Acquire);
        let pending = timers.pending.load(Ordering::Acquire);
        // Acquire loads inside (see `QueueCounts::queued`).
        let queued = counts.map(QueueCounts::queued);
        let after = state.load();
        if after.generation() != before.generation() {
            return None; // it ended while we read: do not mix incarnations
        }
        Some(Entry {
            state: before,
            steps,
            last_worker: (steps > 0 || before.lifecycle() == Lifecycle::Running).then_some(worker),
            changed_at,
            timers: pending,
            queued,
        })
    }
}
