//! loom models of the late drains (`shared/late.rs`), the shutdown drain
//! and the stranded-events report (`Shared::report_stranded`, `Drop for
//! Shared`): deliveries racing the close of their process, phase EXITING,
//! and a creator withdrawing its process.
//!
//! **The claim.** Every event a `deliver` accepted (returned `Ok`) is
//! reported exactly once: by the close of its process (its drain, or its
//! second drain when its `free` finds the word marked late), by the late
//! sender's own sweep of the freed slot, by shutdown's drain
//! (`report_stranded`, after EXITING and the workers' join; it drains a
//! withdrawn process's slot, which no sweep may touch), or by the drain in
//! `Drop for Shared` (a push that came after shutdown's drain); an event it refused is handed back and never reported. A late
//! push is reported by the time its sender and the closer have both
//! returned, with no later drain (models d and e). The stranded-events report drops the cancels the scheduler
//! made itself (`Cancel::Shutdown`, the only cancel that travels in a
//! mailbox): shutdown's cancel to a withdrawn process is never reported
//! (the close reports what it drains, cancels included, as
//! `worker/step.rs` does). Each drain is then the mailbox's only consumer,
//! even while a late sender (one that read the phase before EXITING) is
//! still pushing: an MPSC queue's producers may race its consumer, its
//! consumers may not race each other.
//!
//! **What runs.** The real loom-built pieces: the phase word ([`Phase`]),
//! the state word ([`StateWord`]), the process's [`Mailbox`] and the dump's
//! queued counters ([`QueueCounts`]). The scheduler's front (`Shared`,
//! `Scheduler`, the table) is not built under loom, so a small driver,
//! [`Sched`], calls them in the order the scheduler does:
//!
//! - [`Sched::deliver`] is `Shared::deliver` (`admit`: the phase, then the
//!   slot's generation and lifecycle; then `push`: `count_push`, the push,
//!   the notify);
//! - [`Sched::close`] is `Local::close` (`worker/step.rs`): `complete`, the
//!   drain of the mailbox (every event reported), `count_drained`, `free`,
//!   and `Table::remove`'s Release store of the closed count;
//! - [`Sched::report_stranded`] is `Shared::report_stranded` (and, run after
//!   every other thread has joined, `Drop for Shared`);
//! - [`Sched::create_and_withdraw`] is `Shared::withdraw` with
//!   `Table::insert` before it (`created` taken, `activate`,
//!   `Phase::admits`) and `Table::withdraw` after (`free`, `created` given
//!   back);
//! - the shutdown thread is `Scheduler::shutdown`: the scan, the wait for
//!   `live() == 0` (`Table::live`: the closed count Acquire, `created`
//!   Relaxed), `set_phase(EXITING)`, the workers' join, `report_stranded`;
//!   a `join` of the other threads stands for the last `Arc<Shared>` going
//!   away, whose Release decrement and Acquire fence order every holder's
//!   pushes before `Drop`.
//!
//! The models: (a) a delivery racing EXITING and the drains, (b) the same
//! racing a close on a worker, (c) a creator withdrawing as shutdown
//! drains, (d) and (e) one or two senders racing a close, with no drain
//! after, (f) a sender racing its process's withdrawal and shutdown's
//! drain; each also checks the queued figure (`QueueCounts`: no underflow
//! after shutdown's drain, zero after the last).
//!
//! Every model tallies where its event ended in each execution (a drain,
//! or refused and why) and fails if an outcome it must reach never
//! happened, so a model loom runs blind does not pass vacuously.
//!
//! Each model's property fails if the protocol is broken: the canaries at
//! the end run the same driver with one step broken (the `Drop` drain left
//! out, the shutdown drain run before the workers' join, the old `withdraw`
//! that drained the mailbox itself, the late drains left out) and expect
//! the failure.
//!
//! Run (a few seconds in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test drain
//! ```
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize as StdUsize, Ordering as StdOrdering};
use std::sync::Arc as StdArc;

use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{Notify, Phase, QueueCounts, StateWord, Wake, EXITING, STOPPING};
use stepsched::mpsc::Mailbox;
use stepsched::process::Lifecycle;
use stepsched_loom_tests::Gate;

/// The scheduler's own `Cancel::Shutdown`, as an event id.
const CANCEL: usize = 0;
/// The events a model sends: `CANCEL` and two messages.
const EVENTS: usize = 3;

/// `table::Envelope`: an event and the generation it was sent to.
#[derive(Debug)]
struct Envelope {
    generation: u32,
    event: usize,
}

/// How the driver runs the protocol; [`Protocol::REAL`] is the scheduler's.
/// The other values break one step, for the canaries.
#[derive(Clone, Copy)]
struct Protocol {
    /// `Drop for Shared` drains the mailboxes again.
    drop_drains: bool,
    /// `shutdown` waits for `live() == 0` and joins the workers before
    /// `report_stranded` (else it drains as soon as it set EXITING).
    join_before_drain: bool,
    /// `withdraw` pops the mailbox itself (the code before this model).
    withdraw_drains: bool,
    /// A late push is drained at once: the closer drains again when its
    /// `free` finds the word marked late, and a sender whose notify found
    /// the slot freed sweeps it (`shared/late.rs`). Without it the event
    /// waits for a drain of shutdown or for the slot's next process.
    late_drains: bool,
}

impl Protocol {
    const REAL: Protocol = Protocol {
        drop_drains: true,
        join_before_drain: true,
        withdraw_drains: false,
        late_drains: true,
    };
}

/// `Shared` in miniature: the phase, one process slot, the table's counts,
/// and what `on_undelivered` saw.
struct Sched {
    phase: Phase,
    state: StateWord,
    events: Mailbox<Envelope>,
    counts: QueueCounts,
    /// `Table::created`: Relaxed RMWs (`insert`, `withdraw`).
    created: AtomicU64,
    /// `Table::closed`: Release store by the closing worker, Acquire load
    /// by `live()`.
    closed: AtomicU64,
    /// How many times `on_undelivered` got each event. Relaxed: read only
    /// after every thread has joined.
    reported: [AtomicUsize; EVENTS],
    /// Which drain reported the last event (a [`By`]), for the coverage
    /// tally. Relaxed, as `reported`.
    by: AtomicUsize,
    /// The generation of the PID the last report named (`Pid::new(index,
    /// envelope.generation)`). Relaxed, as `reported`.
    to: AtomicU32,
}

/// Where an event ended: one of the drains, or handed back (and why). The
/// models tally these across executions and fail if one they must reach
/// never happened (a model loom runs blind passes vacuously).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    Close = 0,
    Shutdown = 1,
    Drop = 2,
    Withdraw = 3,
    RefusedExiting = 4,
    RefusedEnded = 5,
    /// Not an end: (c)'s scan saw the creator's process and sent it
    /// `Cancel::Shutdown`.
    ScanCancelled = 6,
    /// The closer's second drain, after its `free` found the word late.
    Late = 7,
    /// The late sender's sweep of the freed slot.
    Sweep = 8,
}

impl By {
    /// The drain a report's `by` names.
    fn drain(by: usize) -> By {
        [
            By::Close,
            By::Shutdown,
            By::Drop,
            By::Withdraw,
            By::RefusedExiting,
            By::RefusedEnded,
            By::ScanCancelled,
            By::Late,
            By::Sweep,
        ][by]
    }
}

/// The tally of [`By`] over one `loom::model` run (std atomics: outside the
/// model).
#[derive(Default)]
struct Tally([StdUsize; 9]);

impl Tally {
    fn count(&self, by: By) {
        self.0[by as usize].fetch_add(1, StdOrdering::Relaxed);
    }

    /// Panics unless every outcome in `must` happened in some execution.
    fn assert_reached(&self, must: &[By]) {
        let counts: Vec<usize> = self
            .0
            .iter()
            .map(|c| c.load(StdOrdering::Relaxed))
            .collect();
        // Shown with `--nocapture`: executions by outcome, in `By` order.
        eprintln!("outcomes: {counts:?}");
        for by in must {
            assert!(
                counts[*by as usize] > 0,
                "no execution ended with {by:?}: {counts:?} (close, shutdown, drop, withdraw, refused at EXITING, refused as ended, scan cancelled, late, sweep)"
            );
        }
    }
}

impl Sched {
    fn new() -> Arc<Sched> {
        Arc::new(Sched {
            phase: Phase::new(),
            state: StateWord::new(),
            events: Mailbox::new(),
            counts: QueueCounts::new(),
            created: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            reported: [0, 0, 0].map(AtomicUsize::new),
            by: AtomicUsize::new(usize::MAX),
            to: AtomicU32::new(0),
        })
    }

    /// A process in its last step on a worker (Running): created (counted
    /// live) and started. Returns its generation.
    fn running() -> (Arc<Sched>, u32) {
        let s = Sched::new();
        s.created.fetch_add(1, Ordering::Relaxed);
        let generation = s.state.activate();
        let _ = s.state.start();
        (s, generation)
    }

    /// `Shared::deliver` (`admit`, then `push`): `Err` hands the event back
    /// with the refusal (`RefusedExiting` or `RefusedEnded`).
    fn deliver(&self, generation: u32, event: usize, kind: Wake) -> Result<(), (By, usize)> {
        self.deliver_with(generation, event, kind, Protocol::REAL)
    }

    /// [`deliver`](Self::deliver) under `protocol`.
    fn deliver_with(
        &self,
        generation: u32,
        event: usize,
        kind: Wake,
        protocol: Protocol,
    ) -> Result<(), (By, usize)> {
        // `admit`: the phase first (a Relaxed load in `Phase::get`).
        if self.phase.get() == EXITING {
            return Err((By::RefusedExiting, event));
        }
        let now = self.state.load();
        if now.generation() != generation
            || matches!(now.lifecycle(), Lifecycle::Free | Lifecycle::Complete)
        {
            return Err((By::RefusedEnded, event));
        }
        // `push`: counted before the push (the queued figure), then pushed,
        // then notified. A notify that finds the slot freed makes us its
        // sweeper (`notify_pushed`); Finished leaves the event to the
        // closer's second drain, Stale to the slot's next holder.
        self.counts.count_push();
        self.events.push(Envelope { generation, event });
        if self.state.notify(generation, kind) == Notify::Sweep && protocol.late_drains {
            self.sweep(By::Sweep);
        }
        Ok(())
    }

    /// `Shared::sweep`: drains the freed slot's mailbox until `end_sweep`
    /// finds no late mark, reporting as `by`.
    fn sweep(&self, by: By) {
        loop {
            // SAFETY: sweeping (the notify's `Sweep`, or `try_sweep`).
            unsafe { self.drain(|e| self.report_unless_cancel(&e, by)) };
            if self.state.end_sweep() {
                break;
            }
        }
    }

    /// `take_late`'s filter: the scheduler's own cancels are dropped.
    fn report_unless_cancel(&self, envelope: &Envelope, by: By) {
        if envelope.event != CANCEL {
            self.report(envelope, by);
        }
    }

    /// `Shared::undelivered` of what `envelope` holds, by the drain `by`.
    fn report(&self, envelope: &Envelope, by: By) {
        self.reported[envelope.event].fetch_add(1, Ordering::Relaxed);
        self.by.store(by as usize, Ordering::Relaxed);
        self.to.store(envelope.generation, Ordering::Relaxed);
    }

    /// Pops the mailbox empty, handing each event to `each`, and counts the
    /// drain (`count_drained`).
    ///
    /// # Safety
    ///
    /// The caller is the mailbox's only consumer.
    unsafe fn drain(&self, mut each: impl FnMut(Envelope)) {
        let mut drained = 0;
        // SAFETY: the caller's contract.
        while let Some(envelope) = unsafe { self.events.pop() } {
            drained += 1;
            each(envelope);
        }
        self.counts.count_drained(drained);
    }

    /// `Local::close`: the worker holding the process (Running) ends it,
    /// reports what its mailbox holds, frees the slot and counts the close.
    fn close(&self) {
        self.close_with(Protocol::REAL);
    }

    /// [`close`](Self::close) under `protocol`: `Local::free_slot` drains
    /// again while `free` says `Late`.
    fn close_with(&self, protocol: Protocol) {
        self.state.complete();
        // SAFETY: we hold the process (Complete, not yet freed).
        unsafe { self.drain(|e| self.report(&e, By::Close)) };
        while self.state.free().is_err() {
            if protocol.late_drains {
                // SAFETY: still Complete, still ours.
                unsafe { self.drain(|e| self.report_unless_cancel(&e, By::Late)) };
            }
        }
        // `Table::remove`: Release, pairs with the Acquire in `live`.
        self.closed.store(1, Ordering::Release);
    }

    /// `Shared::report_stranded`, run by `by` (shutdown or `Drop`): reports
    /// what is left in the mailbox, but the scheduler's own cancels.
    ///
    /// # Safety
    ///
    /// As `report_stranded`: the caller is the mailbox's only consumer.
    unsafe fn report_stranded(&self, by: By) {
        // `Shared::left_to_a_sweep`: shutdown's drain claims a freed slot,
        // as a late sender would, or leaves it to the one sweeping it; a
        // withdrawn process's slot no sweeper holds, so it drains it
        // itself. `Drop`'s is alone.
        if by != By::Drop && self.left_to_a_sweep(by) {
            return;
        }
        // SAFETY: the caller's contract.
        unsafe { self.drain(|e| self.report_unless_cancel(&e, by)) };
    }

    /// `Shared::left_to_a_sweep`: `true` if the slot is freed and either
    /// swept here (claimed first) or held by a sweeper.
    fn left_to_a_sweep(&self, by: By) -> bool {
        let now = self.state.load();
        if now.lifecycle() != Lifecycle::Free || now.is_withdrawn() {
            return false;
        }
        if self.state.try_sweep() {
            self.sweep(by);
            return true;
        }
        let now = self.state.load();
        now.lifecycle() == Lifecycle::Free && !now.is_withdrawn()
    }

    /// `Table::live`: the closed count first (Acquire), then `created`.
    fn live(&self) -> u64 {
        let closed = self.closed.load(Ordering::Acquire);
        self.created.load(Ordering::Relaxed).saturating_sub(closed)
    }

    /// `shutdown`'s wait for `live() == 0` (with no timeout: in these
    /// models every live process ends).
    fn wait_until_nothing_live(&self) {
        while self.live() != 0 {
            thread::yield_now();
        }
    }

    /// A creator whose `init` began before STOPPING: `Table::insert`, the
    /// phase check that refuses it, and `Shared::withdraw` with
    /// `Table::withdraw`. Returns whether it was admitted (never, here).
    /// It passes `gate`'s milestones 1 (Ready), 2 (Running), 3 (Complete)
    /// and 4 (Free again).
    fn create_and_withdraw(&self, protocol: Protocol, gate: &Gate) -> bool {
        self.created.fetch_add(1, Ordering::Relaxed);
        // `Table::insert` passes over a slot being swept for another; with
        // one slot here, the creator waits for the sweep to end instead.
        while self.state.try_activate().is_none() {
            thread::yield_now();
        }
        gate.pass(1);
        if self.phase.admits() {
            return true;
        }
        let _ = self.state.start();
        gate.pass(2);
        self.state.complete();
        gate.pass(3);
        if protocol.withdraw_drains {
            // The old `withdraw`: events sent to it meanwhile, reported (but
            // the scheduler's cancel). This pop races the shutdown drain.
            // SAFETY: none; that is what the canary shows.
            unsafe {
                self.drain(|e| {
                    if e.event != CANCEL {
                        self.report(&e, By::Withdraw);
                    }
                })
            };
        }
        // `Table::withdraw`: freed and marked swept for good, so no late
        // sender's sweep races the drains.
        self.state.free_withdrawn();
        gate.pass(4);
        // `Table::withdraw`: Relaxed, gives back the place.
        self.created.fetch_sub(1, Ordering::Relaxed);
        false
    }

    fn reported(&self, event: usize) -> usize {
        self.reported[event].load(Ordering::Relaxed)
    }
}

/// `Drop for Shared`'s drain, unless the protocol under test leaves it out.
/// Called once every other party has let go.
fn drop_drain(s: &Sched, protocol: Protocol) {
    if protocol.drop_drains {
        // SAFETY: `Drop`: every other party has let go (the caller's
        // contract).
        unsafe { s.report_stranded(By::Drop) };
    }
}

/// Checks the claim for `event`, sent to `generation` with result `sent`,
/// once every party has finished: accepted and reported exactly once (to
/// the PID it was sent to), or refused and never reported; and the queued
/// figure back to zero. Tallies where it ended.
fn assert_once_or_refused(
    s: &Sched,
    (generation, event): (u32, usize),
    sent: Result<(), (By, usize)>,
    tally: &Tally,
) {
    match sent {
        Ok(()) => match s.reported(event) {
            1 => {
                assert_eq!(s.to.load(Ordering::Relaxed), generation, "reported to");
                tally.count(By::drain(s.by.load(Ordering::Relaxed)));
            }
            0 => panic!("event {event} accepted and lost"),
            n => panic!("event {event} accepted and reported {n} times"),
        },
        Err((why, back)) => {
            assert_eq!(back, event, "the refused event is handed back");
            assert_eq!(s.reported(event), 0, "a refused event was reported");
            tally.count(why);
        }
    }
    assert_eq!(s.counts.queued(), 0, "the queued figure after every drain");
}

/// (a) A sender (a completer, or a timer firing: a completion) delivers to
/// a process that is ending, while shutdown closes it (the worker's close,
/// ordered before shutdown by the worker's join, here on the same thread),
/// sets EXITING, drains, and lets go (`Drop`). The sender's phase read, its push and its
/// notify land anywhere in that: it is refused (EXITING, or the process
/// already Complete), or its event is reported by the close, by shutdown's
/// drain, or (pushed after the close's drain) by the close's second drain or
/// the sender's sweep: exactly once.
#[test]
fn delivery_racing_exiting_is_reported_once_by_a_drain_or_refused() {
    let tally = model_delivery_racing_exiting(Protocol::REAL);
    tally.assert_reached(&[
        By::Close,
        By::Shutdown,
        By::Late,
        By::Sweep,
        By::RefusedExiting,
        By::RefusedEnded,
    ]);
}

fn model_delivery_racing_exiting(protocol: Protocol) -> StdArc<Tally> {
    let tally = StdArc::new(Tally::default());
    let seen = StdArc::clone(&tally);
    loom::model(move || {
        let (s, generation) = Sched::running();
        let sender = {
            let s = Arc::clone(&s);
            thread::spawn(move || s.deliver(generation, 1, Wake::Completion))
        };
        s.close();
        s.wait_until_nothing_live();
        s.phase.advance(EXITING);
        // SAFETY: the worker is done (its close ran on this thread).
        unsafe { s.report_stranded(By::Shutdown) };
        // The dump after shutdown: at most the one event in flight.
        assert!(s.counts.queued() <= 1, "queued figure underflowed");
        let sent = sender.join().unwrap();
        drop_drain(&s, protocol);
        assert_once_or_refused(&s, (generation, 1), sent, &seen);
    });
    tally
}

/// (b) A sender of a message (`Scheduler::send`, a step's send) racing a
/// worker that closes the process on its own thread (its close drains the
/// mailbox) and shutdown, which waits for `live() == 0` (the close's
/// Release count), sets EXITING, joins the worker and drains: the event is
/// reported once, by whichever drain comes after its push (the close,
/// shutdown's, the close's second one or the sender's sweep), or it is
/// refused. The
/// drains pop one mailbox on three threads: loom checks that the closed
/// count, the join and the last `Arc` order them.
///
/// Fails with a causality violation on the mailbox's `tail` if shutdown
/// drains right after EXITING, before the wait and the join
/// (`canary_draining_before_the_join_races_the_close`).
#[test]
fn delivery_racing_close_and_exiting_is_reported_once_or_refused() {
    let tally = model_delivery_racing_close(Protocol::REAL);
    tally.assert_reached(&[
        By::Close,
        By::Shutdown,
        By::Late,
        By::Sweep,
        By::RefusedExiting,
        By::RefusedEnded,
    ]);
}

fn model_delivery_racing_close(protocol: Protocol) -> StdArc<Tally> {
    let tally = StdArc::new(Tally::default());
    let seen = StdArc::clone(&tally);
    loom::model(move || {
        let (s, generation) = Sched::running();
        let worker = {
            let s = Arc::clone(&s);
            thread::spawn(move || s.close())
        };
        let sender = {
            let s = Arc::clone(&s);
            thread::spawn(move || s.deliver(generation, 1, Wake::Message))
        };
        let worker = if protocol.join_before_drain {
            s.wait_until_nothing_live();
            s.phase.advance(EXITING);
            worker.join().unwrap();
            None
        } else {
            // Broken: as if phase EXITING alone made shutdown the only
            // consumer.
            s.phase.advance(EXITING);
            Some(worker)
        };
        // SAFETY: the worker has exited (with the real protocol).
        unsafe { s.report_stranded(By::Shutdown) };
        assert!(s.counts.queued() <= 1, "queued figure underflowed");
        if let Some(worker) = worker {
            worker.join().unwrap();
        }
        let sent = sender.join().unwrap();
        drop_drain(&s, protocol);
        assert_once_or_refused(&s, (generation, 1), sent, &seen);
    });
    tally
}

/// (c) A creator whose `init` began before STOPPING inserts its process
/// (Ready) while shutdown, already STOPPING, scans the slot (and, if it sees
/// the process Ready, sends it `Cancel::Shutdown`), waits for `live() == 0`,
/// sets EXITING and drains. The creator's `admits` refuses it and it
/// withdraws the process. The slot it took held an event stranded there by
/// the slot's previous process (pushed after that process's close drained
/// it). The stranded event is reported exactly once, by shutdown's drain
/// (which drains a withdrawn slot itself: no sweep may take it), the
/// scheduler's cancel never.
///
/// Why `withdraw` leaves the mailbox to the drains: shutdown does not wait
/// for a creator it did not count (the `created` it bumps in `insert` may
/// be invisible to `live()`, and when it is visible the Relaxed decrement
/// in `Table::withdraw` orders nothing), so a `withdraw` that popped the
/// mailbox itself would race `report_stranded`'s pop: two consumers of one
/// MPSC queue (a data race on its `tail`; an event reported twice, or a
/// node freed under the other). The canary
/// (`canary_a_withdraw_that_drains_races_the_shutdown_drain`) is that
/// `withdraw`.
///
/// **Where the scan starts.** The scan's load of the state word comes before
/// the creator's `activate`, a load then a CAS: loom's DPOR never runs that
/// CAS before the scan's load (`docs/proof/loom-limits.md`), so ungated no
/// execution had the scan see the creator's process. The scan waits for one
/// of the creator's milestones ([`Gate`]: 0, at once; 1 Ready; 2 Running;
/// 3 Complete; 4 Free), one `loom::model` each, and the tally checks that
/// some execution sent the cancel.
#[test]
fn creator_withdrawing_as_shutdown_drains_leaves_the_mailbox_to_the_drain() {
    let tally = model_creator_withdrawing(Protocol::REAL);
    tally.assert_reached(&[By::Shutdown, By::ScanCancelled]);
}

fn model_creator_withdrawing(protocol: Protocol) -> StdArc<Tally> {
    let tally = StdArc::new(Tally::default());
    for milestone in 0..=4 {
        let seen = StdArc::clone(&tally);
        model_creator_withdrawing_from(protocol, milestone, seen);
    }
    tally
}

/// Model (c) with shutdown's scan starting after the creator's milestone
/// `milestone` (0: at once).
fn model_creator_withdrawing_from(protocol: Protocol, milestone: usize, seen: StdArc<Tally>) {
    loom::model(move || {
        // Dropped by hand at the end: a canary's panic (two consumers
        // caught inside a pop) leaks it instead, so the mailbox's drop does
        // not touch the cell loom found raced while the panic unwinds.
        let s = core::mem::ManuallyDrop::new(Sched::new());
        // The slot's previous process: closed, then a late sender's event
        // (message 2) landed after the close's drain; the slot is free.
        let old = s.state.activate();
        let _ = s.state.start();
        s.state.complete();
        s.counts.count_push();
        s.events.push(Envelope {
            generation: old,
            event: 2,
        });
        let _ = s.state.free();
        // Shutdown has begun; the creator checked the phase before.
        s.phase.advance(STOPPING);
        let gate = Gate::new();
        let creator = {
            let (s, gate) = (Arc::clone(&s), Arc::clone(&gate));
            thread::spawn(move || s.create_and_withdraw(protocol, &gate))
        };
        // The scan: a live process gets `Cancel::Shutdown`.
        gate.wait(milestone);
        let now = s.state.load();
        if !matches!(now.lifecycle(), Lifecycle::Free | Lifecycle::Complete) {
            // Accepted or refused, it must never be reported.
            let _ = s.deliver(now.generation(), CANCEL, Wake::Completion);
            seen.count(By::ScanCancelled);
        }
        s.wait_until_nothing_live();
        s.phase.advance(EXITING);
        // SAFETY: no worker; `withdraw` never pops (with the real protocol).
        unsafe { s.report_stranded(By::Shutdown) };
        let admitted = creator.join().unwrap();
        assert!(!admitted, "admitted after STOPPING");
        drop_drain(&s, protocol);
        assert_eq!(s.reported(CANCEL), 0, "the scheduler's cancel reported");
        assert_once_or_refused(&s, (old, 2), Ok(()), &seen);
        assert_eq!(s.state.load().lifecycle(), Lifecycle::Free);
        drop(core::mem::ManuallyDrop::into_inner(s));
    });
}

/// (d) A sender racing the close of its target on a worker, with no
/// shutdown after: its push may come after the close's drain (or be
/// mid-link there), and its notify then finds the process Complete (it
/// marks the word late, the closer's `free` fails and the closer drains
/// again) or the slot freed (it takes the slot's mailbox and sweeps it). The
/// event is reported exactly once by the time both have returned, with no
/// drain of shutdown or `Drop` after them, and the slot is left free for
/// reuse (no sweep held).
///
/// Fails with "accepted and lost" without the second drain and the sweep
/// (`canary_without_the_late_drains_a_push_after_the_close_waits_for_a_later_drain`).
#[test]
fn a_push_that_races_its_process_end_is_reported_before_the_slot_is_reused() {
    let tally = model_push_racing_end(Protocol::REAL, 1);
    tally.assert_reached(&[By::Close, By::Late, By::Sweep, By::RefusedEnded]);
}

/// (e) As (d) with two senders: one sweeps, the other may mark the sweep
/// late (the sweeper goes round again) or the closer's word late. Each
/// event is reported once.
#[test]
fn two_pushes_racing_their_process_end_are_each_reported_once() {
    let tally = model_push_racing_end(Protocol::REAL, 2);
    tally.assert_reached(&[By::Close, By::Late, By::Sweep]);
}

fn model_push_racing_end(protocol: Protocol, senders: usize) -> StdArc<Tally> {
    let tally = StdArc::new(Tally::default());
    let seen = StdArc::clone(&tally);
    let mut builder = loom::model::Builder::new();
    if senders > 1 {
        // Four threads: the bound keeps the run to seconds.
        builder.preemption_bound = Some(2);
    }
    builder.check(move || {
        let (s, generation) = Sched::running();
        let sent: Vec<_> = (1..=senders)
            .map(|event| {
                let s = Arc::clone(&s);
                thread::spawn(move || s.deliver_with(generation, event, Wake::Message, protocol))
            })
            .collect();
        s.close_with(protocol);
        let sent: Vec<_> = sent.into_iter().map(|h| h.join().unwrap()).collect();
        // No drain of shutdown or `Drop`: the late drains alone.
        for (event, sent) in sent.into_iter().enumerate() {
            match sent {
                Ok(()) => {
                    let reported = s.reported(event + 1);
                    assert!(reported != 0, "event {} accepted and lost", event + 1);
                    assert_eq!(reported, 1, "event {} reported twice", event + 1);
                }
                Err((why, _)) => seen.count(why),
            }
        }
        if senders == 1 && s.reported(1) == 1 {
            seen.count(By::drain(s.by.load(Ordering::Relaxed)));
        } else if senders > 1 {
            // Which drain reported the last one: enough for the coverage.
            if s.reported(1) + s.reported(2) != 0 {
                seen.count(By::drain(s.by.load(Ordering::Relaxed)));
            }
        }
        assert_eq!(s.counts.queued(), 0, "the queued figure after the drains");
        assert!(s.state.try_activate().is_some(), "the slot is left swept");
    });
    tally
}

/// (f) A sender racing its target's withdrawal and shutdown's drain: the
/// target is a process its creator inserted (Ready) and then withdrew
/// (shutdown began during its `init`), the sender one that guessed its PID
/// and read the phase before EXITING. Its push lands before or after the
/// withdrawal and before or after shutdown's drain; a notify that finds the
/// slot withdrawn marks it late and leaves it (no sweep may take it). The
/// event is reported once: by shutdown's drain, which drains a withdrawn
/// slot itself, or by `Drop`'s; or it is refused.
///
/// Fails with "accepted and lost" without the drain in `Drop`
/// (`canary_without_the_drop_drain_a_withdrawn_slots_event_is_lost`).
#[test]
fn a_push_racing_its_process_withdrawal_is_reported_by_shutdown_or_the_drop() {
    let tally = model_push_racing_withdraw(Protocol::REAL);
    tally.assert_reached(&[By::Shutdown, By::Drop, By::RefusedExiting, By::RefusedEnded]);
}

fn model_push_racing_withdraw(protocol: Protocol) -> StdArc<Tally> {
    let tally = StdArc::new(Tally::default());
    let seen = StdArc::clone(&tally);
    loom::model(move || {
        let s = Sched::new();
        // The creator's `Table::insert`: Ready, queued nowhere.
        let generation = s.state.activate();
        s.phase.advance(STOPPING);
        let sender = {
            let s = Arc::clone(&s);
            thread::spawn(move || s.deliver(generation, 1, Wake::Message))
        };
        // Its `admits` refused it: `Table::withdraw`.
        let _ = s.state.start();
        s.state.complete();
        s.state.free_withdrawn();
        // Shutdown: nothing live, EXITING, the drain.
        s.phase.advance(EXITING);
        // SAFETY: no worker; `withdraw` never pops.
        unsafe { s.report_stranded(By::Shutdown) };
        assert!(s.counts.queued() <= 1, "queued figure underflowed");
        let sent = sender.join().unwrap();
        drop_drain(&s, protocol);
        assert_once_or_refused(&s, (generation, 1), sent, &seen);
        assert!(s.state.load().is_withdrawn(), "the slot left withdrawn");
    });
    tally
}

/// Canary: without the closer's second drain and the late sender's sweep
/// (the code before them), a push that lands after the close's drain stays
/// in the freed slot's mailbox until shutdown or the slot's next process.
/// Proves model (d) can fail.
#[test]
#[should_panic(expected = "accepted and lost")]
fn canary_without_the_late_drains_a_push_after_the_close_waits_for_a_later_drain() {
    model_push_racing_end(
        Protocol {
            late_drains: false,
            ..Protocol::REAL
        },
        1,
    );
}

/// Canary: without the drain in `Drop for Shared`, an event pushed to a
/// withdrawn process's slot (out of use, and out of reach of a sweep) after
/// shutdown's drain is lost. Proves model (f) can fail.
#[test]
#[should_panic(expected = "accepted and lost")]
fn canary_without_the_drop_drain_a_withdrawn_slots_event_is_lost() {
    model_push_racing_withdraw(Protocol {
        drop_drains: false,
        ..Protocol::REAL
    });
}

/// Canary: shutdown draining as soon as it set EXITING, before it waited
/// for the close and joined the worker (as if the phase alone made it the
/// only consumer), races the close's drain: loom reports the two consumers
/// on the mailbox's `tail`. Proves model (b) can fail.
#[test]
#[should_panic(expected = "Causality violation")]
fn canary_draining_before_the_join_races_the_close() {
    model_delivery_racing_close(Protocol {
        join_before_drain: false,
        ..Protocol::REAL
    });
}

/// Canary: a `withdraw` that pops the mailbox itself races shutdown's
/// drain. Proves model (c) can fail on that race.
#[test]
#[should_panic(expected = "Causality violation")]
fn canary_a_withdraw_that_drains_races_the_shutdown_drain() {
    model_creator_withdrawing(Protocol {
        withdraw_drains: true,
        ..Protocol::REAL
    });
}
