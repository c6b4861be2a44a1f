//! loom models of the process dump's read of a slot
//! (`src/sched/observe/figures.rs`): an entry never pairs one incarnation's
//! PID with a figure written for another (the incarnation rule), and the
//! queued-events figure never underflows.
//!
//! The slot here is the table's without its body and free-list link: the
//! real state word, [`Figures`], [`TimerCount`] and [`QueueCounts`] (and, for the queued
//! figure, a real [`Mailbox`]). The writers call them in the order the
//! scheduler does (`Table::insert`, `Local::run_task`, `Local::step`,
//! `Local::close`, `Shared::deliver`); the reader is the dump's own
//! [`Entry::read`].
//!
//! **Where the read starts.** loom's DPOR remembers only the last access to
//! each atomic, and every transition of the state word is a load followed
//! by a CAS (`StateWord::update`): the writer's own load hides the reader's
//! earlier load from the race check, so on its own loom never runs a
//! transition before the reader's first load of the word (measured: every
//! entry it produced was incarnation 1's), and the direction "no earlier
//! figure under a later PID" would go unchecked (the blind spot, its minimal
//! reproduction and the audit of the other models:
//! `docs/proof/loom-limits.md`). So each model runs once per *milestone* of
//! the writer: the writer counts the milestones it passed in a
//! [`Gate`] (Relaxed stores), and the reader spins (Relaxed loads,
//! `yield_now`) until the chosen one before it reads. Relaxed on both sides,
//! the gate adds no happens-before edge: it moves where the read starts, not
//! what its loads may return (but for loom's own rule that makes spins
//! progress: after a `yield_now`, a load does not return again a store the
//! thread saw before it if a newer one exists).
//!
//! Run (a few seconds in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test dump
//! ```
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{
    AfterStep, Entry, Figures, Park, QueueCounts, Start, StateWord, TimerCount,
};
use stepsched::mpsc::Mailbox;
use stepsched::process::Lifecycle;
use stepsched_loom_tests::Gate;

/// A process slot as the dump sees it.
struct Slot {
    state: StateWord,
    figures: Figures,
    timers: TimerCount,
    counts: QueueCounts,
}

impl Slot {
    fn new() -> Arc<Slot> {
        Arc::new(Slot {
            state: StateWord::new(),
            figures: Figures::new(),
            timers: TimerCount::new(),
            counts: QueueCounts::new(),
        })
    }

    /// `Table::insert` on a free slot, stamped `now`: the figures are reset
    /// before `activate` publishes the process. Returns its generation.
    fn create(&self, now: u64) -> u32 {
        self.figures.reset(now);
        self.state.activate()
    }

    /// `Local::run_task` on worker `worker` up to the step's end: `ran_on`
    /// before `start`, then the start's stamp, and the step's count.
    fn begin_step(&self, worker: usize, now: u64) {
        self.figures.ran_on(worker);
        assert_eq!(self.state.start(), Start::Step { last: false });
        self.figures.stamp(now);
        self.figures.count_step();
    }

    /// `Local::step`'s end: stamped before the transition.
    fn end_step(&self, park: Park, now: u64) -> AfterStep {
        self.figures.stamp(now);
        self.state.end_step(park)
    }

    /// `Local::publish_timer_count`: by the holder, after a step (from
    /// `apply_timers`, before `end_step`) or in `close`; it stores only a
    /// count that changed.
    fn publish_timers(&self, pending: u32) {
        if self.timers.published() != pending {
            self.timers.publish(pending);
        }
    }

    /// `Local::close` and `Table::remove`: complete, zero the timer count
    /// (its timers cancelled), then free (the generation bump).
    fn close(&self) -> u32 {
        self.state.complete();
        self.publish_timers(0);
        self.state.free().expect("nothing is pushed in this model")
    }
}

/// Incarnation 1 (generation 0) is created (stamp 1000) and runs two steps
/// on worker 1 (stamps 1001 to 1003; its first step sets 2 timers), the
/// second still running, before the race. Then one thread closes it (its
/// timer count zeroed) and frees the slot, creates incarnation 2
/// (generation 1, stamp 2000), sends it one event (its `count_push`), and
/// runs its first step on worker 2 (stamps 2001, 2002; it sets 1 timer and
/// parks Idle), while the dump reads the slot once: from the start, or once
/// the writer has passed milestone 1 to 4 (freed the slot, created
/// incarnation 2, begun its step and published its timer count, ended the
/// step). Every figure names its incarnation: a generation-0 entry must be
/// exactly incarnation 1's running second step (2 steps, worker 1, stamp
/// 1003, no event queued, 2 timers or its close's 0); a generation-1 entry
/// must hold only incarnation 2's values (at most 1 step, worker 2 once
/// reported, a stamp from 2000 on, at most 1 event, at most 1 timer: never
/// incarnation 1's 2, and its own 1 once Idle).
///
/// Kills these ordering mutants (each weakened by hand or by
/// `cargo xtask mutate`, the model fails with the assertion below):
///
/// - `src/process/state/transitions.rs::StateWord::load::0.load#0:Acquire->Relaxed`:
///   the dump's first read sees generation 1 but the figure loads miss its
///   reset and return incarnation 1's (stamp 1003, 2 steps, worker 1; from
///   milestone 2 on);
/// - in `src/sched/observe/figures.rs`, `Entry::read`'s `steps`, `last_worker` and
///   `changed_at` loads (Acquire->Relaxed), and their partners
///   `Figures::reset::steps.store`, `Figures::count_step::steps.store`,
///   `Figures::ran_on::last_worker.store` and
///   `Figures::stamp::changed_at.store` (Release->Relaxed): the dump reads
///   a figure of incarnation 2 (a reset 0 steps, 1 step, worker 2, stamp
///   2000 on) and its re-read of the state word still returns generation
///   0, so the entry is kept; `count_step`'s also (from milestone 2 on) by
///   a generation-1 entry that reads 1 step but worker 1 (the step's count
///   no longer carries its `ran_on`);
/// - `QueueCounts::count_push::pushed.fetch_add#0:Release->Relaxed` and
///   `QueueCounts::queued::pushed.load#0:Acquire->Relaxed`: a
///   generation-0 entry counts the event sent to incarnation 2;
/// - `TimerCount::publish::pending.store#0:Release->Relaxed` and
///   `Entry::read::pending.load#0:Acquire->Relaxed`: a generation-0 entry
///   (incarnation 1's running step) shows incarnation 2's 1 timer (from
///   the start: the writer's `published` load before its store does not
///   hide the dump's load here, measured by weakening each by hand).
#[test]
fn an_entry_never_pairs_a_pid_with_another_incarnations_figures() {
    for start in 0..=4 {
        loom::model(move || reuse_against_one_read(start));
    }
}

fn reuse_against_one_read(start: usize) {
    let slot = Slot::new();
    assert_eq!(slot.create(1000), 0);
    slot.begin_step(1, 1001);
    slot.publish_timers(2); // its first step set two timers
    assert_eq!(slot.end_step(Park::Continue, 1002), AfterStep::Requeue);
    slot.begin_step(1, 1003);

    let gate = Gate::new();
    let worker = {
        let (slot, gate) = (Arc::clone(&slot), Arc::clone(&gate));
        thread::spawn(move || {
            // The second step ends the process; its worker closes it.
            assert_eq!(slot.close(), 1);
            gate.pass(1);
            assert_eq!(slot.create(2000), 1);
            // A send to the new process (`Shared::deliver`, which read its
            // generation first; program order here).
            slot.counts.count_push();
            gate.pass(2);
            slot.begin_step(2, 2001);
            slot.publish_timers(1); // its first step sets one timer
            gate.pass(3);
            assert_eq!(slot.end_step(Park::Idle, 2002), AfterStep::Parked);
            gate.pass(4);
        })
    };

    gate.wait(start);
    let entry = Entry::read(&slot.state, &slot.figures, &slot.timers, Some(&slot.counts));
    worker.join().unwrap();

    let Some(entry) = entry else { return };
    let (generation, lifecycle) = (entry.state.generation(), entry.state.lifecycle());
    match generation {
        0 => {
            assert_eq!(lifecycle, Lifecycle::Running, "{entry:?}");
            assert_eq!(entry.steps, 2, "incarnation 2's step count: {entry:?}");
            assert_eq!(
                entry.last_worker,
                Some(1),
                "incarnation 2's worker: {entry:?}"
            );
            assert_eq!(entry.changed_at, 1003, "incarnation 2's stamp: {entry:?}");
            assert_eq!(entry.queued, Some(0), "incarnation 2's event: {entry:?}");
            // Its own two timers, or the 0 its close stored after `complete`
            // (the entry's lifecycle is from the first read).
            assert!(
                matches!(entry.timers, 0 | 2),
                "incarnation 2's timer count: {entry:?}"
            );
        }
        1 => {
            assert!(entry.steps <= 1, "incarnation 1's step count: {entry:?}");
            assert!(
                matches!(entry.last_worker, None | Some(2)),
                "incarnation 1's worker: {entry:?}"
            );
            assert!(
                (2000..=2002).contains(&entry.changed_at),
                "incarnation 1's stamp: {entry:?}"
            );
            assert!(
                matches!(entry.queued, Some(0 | 1)),
                "queued figure out of range: {entry:?}"
            );
            if lifecycle != Lifecycle::Ready {
                // Running or Idle: it has run on worker 2.
                assert_eq!(entry.last_worker, Some(2), "{entry:?}");
            }
            // 0 (the close's, before the free) or its own 1, never
            // incarnation 1's 2.
            assert!(entry.timers <= 1, "incarnation 1's timer count: {entry:?}");
            if lifecycle == Lifecycle::Idle {
                // Its step was counted, and its timer published, before it
                // parked.
                assert_eq!(entry.steps, 1, "{entry:?}");
                assert_eq!(entry.timers, 1, "{entry:?}");
            }
        }
        _ => panic!("no such generation: {entry:?}"),
    }
}

/// A sender counts an event and pushes it into the mailbox (as
/// `Shared::deliver`); the holder of the process pops once and counts what
/// it drained (as `Local::collect_events`); the dump reads the queued
/// figure meanwhile (from the start, or once the holder has counted). One
/// event was ever sent, so the figure is 0 or 1: a
/// count of a drain whose push the dump does not see would wrap it to
/// `u32::MAX`.
///
/// Kills `src/sched/observe/figures.rs`'s
/// `QueueCounts::count_drained::drained.store#0:Release->Relaxed` and
/// `QueueCounts::queued::drained.load#0:Acquire->Relaxed`: the dump reads
/// the drain's count, then a `pushed` from before the sender's increment
/// (which only the push's link, then the drain's Release store, order
/// before the dump's load).
#[test]
fn the_queued_figure_never_underflows_while_events_are_drained() {
    for start in 0..=1 {
        loom::model(move || drain_against_queued(start));
    }
}

fn drain_against_queued(start: usize) {
    let slot = Slot::new();
    let mailbox = Arc::new(Mailbox::new());
    let gate = Gate::new();
    let sender = {
        let (slot, mailbox) = (Arc::clone(&slot), Arc::clone(&mailbox));
        thread::spawn(move || {
            slot.counts.count_push();
            mailbox.push(7u8);
        })
    };
    let holder = {
        let (slot, mailbox, gate) = (Arc::clone(&slot), Arc::clone(&mailbox), Arc::clone(&gate));
        thread::spawn(move || {
            // SAFETY: this thread is the mailbox's only consumer.
            let drained = unsafe { mailbox.pop() }.map_or(0, |event| {
                assert_eq!(event, 7);
                1
            });
            slot.counts.count_drained(drained);
            gate.pass(1);
        })
    };
    gate.wait(start);
    let queued = slot.counts.queued();
    assert!(queued <= 1, "queued figure {queued}: it underflowed");
    sender.join().unwrap();
    holder.join().unwrap();
}
