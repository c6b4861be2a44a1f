//! loom models of monitors and links (`src/sched/links/mod.rs`): the crate's
//! own bookkeeping (`Links`, `links::unanswered`) against its real state
//! word and mailbox, in the order the scheduler runs them:
//!
//! - a sender (`Shared::deliver_signal`): check the state word (refused if
//!   Complete or another generation), push the item, `notify`; a refusal,
//!   or a notify that finds the process ended (the push raced the end), is
//!   answered at once (`unanswered`: `Down`/`Exit` with `NoProc`);
//! - the closing worker (`Local::close`): `complete`, drain the mailbox
//!   (a signal of its own generation goes into its `Links`, another
//!   generation's is answered), then `farewell` to every watcher and link;
//! - the slot's next holder (`collect_events`): a stale request found in
//!   the mailbox is answered too;
//! - the watcher's own `receive`, which passes a `Down` once per monitor
//!   and none after a `demonitor`;
//! - a worker that claims a waiting receiver (`Local::send_signal`): the
//!   signal is decided in its body (`Links::receive_handed`), but an exit
//!   from a process not among its links goes into its mailbox instead.
//!
//! The worker's glue (`worker/signals.rs`, `worker/step.rs`) is not built
//! under loom, so its sequence is restated here step by step, as
//! `state.rs` and `handoff.rs` restate the worker's; the decisions are the
//! crate's code.
//!
//! Run (a few seconds in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test links
//! ```
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::{AtomicBool as StdAtomicBool, Ordering as StdOrdering};
use stepsched::__internals::{
    unanswered, AfterStep, Links, Notify, Park, Received, Signal, Start, StateWord, Wake,
};
use stepsched::mpsc::Mailbox;
use stepsched::process::Lifecycle;
use stepsched::process::{ExitReason, Pid};

/// A process slot in miniature: state word, mailbox of (generation,
/// signal), and the body's `Links` (a loom cell: only the holder touches
/// it, so two holders at once fail the model as a data race).
struct Slot {
    index: u32,
    state: StateWord,
    events: Mailbox<(u32, Signal)>,
    links: UnsafeCell<Links>,
}

/// Where the sender learns its request found no process.
enum Sent {
    Queued,
    /// Refused or raced: the answer owed (if any), to push to its receiver.
    Unanswered(Option<(Pid, Signal)>),
}

impl Slot {
    /// A Running process (its worker holds it) in slot `index`.
    fn running(index: u32) -> (Arc<Slot>, Pid) {
        let slot = Slot {
            index,
            state: StateWord::new(),
            events: Mailbox::new(),
            links: UnsafeCell::new(Links::default()),
        };
        let generation = slot.state.activate();
        assert_eq!(slot.state.start(), Start::Step { last: false });
        let pid = pid(index, generation);
        (Arc::new(slot), pid)
    }

    /// `Shared::deliver_signal` to `to` (whose slot this is).
    fn deliver(&self, to: Pid, signal: Signal, kind: Wake) -> Sent {
        let now = self.state.load();
        let live = !matches!(now.lifecycle(), Lifecycle::Complete | Lifecycle::Free);
        if now.generation() != to.generation() || !live {
            return Sent::Unanswered(unanswered(to, signal));
        }
        let answer = unanswered(to, signal.clone());
        self.events.push((to.generation(), signal));
        match self.state.notify(to.generation(), kind) {
            Notify::Finished | Notify::Stale => Sent::Unanswered(answer),
            Notify::Sweep => {
                self.sweep();
                Sent::Unanswered(answer)
            }
            Notify::Schedule | Notify::Nothing => Sent::Queued,
        }
    }

    /// `Shared::sweep`, for a sender whose notify found the slot freed: its
    /// mailbox popped until `end_sweep` finds no late mark. A late signal
    /// is dropped: its sender answers it (`shared/late.rs`).
    fn sweep(&self) {
        loop {
            // SAFETY: sweeping: the notify's `Sweep` made us the only
            // consumer until `end_sweep`.
            while unsafe { self.events.pop() }.is_some() {}
            if self.state.end_sweep() {
                break;
            }
        }
    }

    /// `Local::free_slot`: the free, with a drain again while it finds the
    /// word marked late (the late signals dropped, as their senders answer
    /// them).
    fn free_slot(&self) {
        while self.state.free().is_err() {
            // SAFETY: still Complete, still the closer's.
            while unsafe { self.events.pop() }.is_some() {}
        }
    }

    /// `Local::send_requests` for a step's requests to `to` (`Shared::
    /// push_signal` each, then one `notify_signals`): each is checked and
    /// pushed (or answered at once if refused), then one notify for all
    /// that were pushed. The answers owed: to the refused requests, and to
    /// the pushed ones if the notify raced the end.
    fn deliver_batch(&self, to: Pid, signals: Vec<Signal>) -> Vec<(Pid, Signal)> {
        let mut answers = Vec::new();
        let mut owed = Vec::new();
        let mut pushed = false;
        for signal in signals {
            let now = self.state.load();
            let live = !matches!(now.lifecycle(), Lifecycle::Complete | Lifecycle::Free);
            if now.generation() != to.generation() || !live {
                answers.extend(unanswered(to, signal));
                continue;
            }
            owed.extend(unanswered(to, signal.clone()));
            self.events.push((to.generation(), signal));
            pushed = true;
        }
        if pushed {
            match self.state.notify(to.generation(), Wake::Message) {
                Notify::Finished | Notify::Stale => answers.extend(owed),
                Notify::Sweep => {
                    self.sweep();
                    answers.extend(owed);
                }
                Notify::Schedule | Notify::Nothing => {}
            }
        }
        answers
    }

    /// The holder's drain (`collect_events`): a signal of generation `me`
    /// goes to the body, another generation's is answered (its answers
    /// returned, to push). Returns what `receive` said.
    fn drain(&self, me: Pid) -> (Vec<Received>, Vec<(Pid, Signal)>) {
        self.drain_as(me, false)
    }

    /// [`drain`](Self::drain), or `close`'s if `ending`: a signal of
    /// generation `me` then goes to `Links::receive_ending` (an exit only
    /// unlinks; nothing is received for a step).
    fn drain_as(&self, me: Pid, ending: bool) -> (Vec<Received>, Vec<(Pid, Signal)>) {
        let mut received = Vec::new();
        let mut answers = Vec::new();
        // SAFETY: the caller holds the process (Running or Complete, not
        // yet freed; or every other thread has joined): the only consumer.
        while let Some((generation, signal)) = unsafe { self.events.pop() } {
            if generation == me.generation() && ending {
                // SAFETY: as above: we hold the body.
                self.links
                    .with_mut(|l| unsafe { &mut *l }.receive_ending(signal));
            } else if generation == me.generation() {
                // SAFETY: as above: we hold the body.
                received.push(self.links.with_mut(|l| unsafe { &mut *l }.receive(signal)));
            } else {
                let stale = pid(self.index, generation);
                answers.extend(unanswered(stale, signal));
            }
        }
        (received, answers)
    }

    /// `close`: complete, drain, then the farewell signals to send. An
    /// exit drained here ends nothing: the process is told with the
    /// `reason` it was closed with (`Local::farewell` tells `Linked` only
    /// for a `killed_by` set before the close, which no model here sets).
    fn close(&self, me: Pid, reason: ExitReason) -> Vec<(Pid, Signal)> {
        self.state.complete();
        let (_, mut out) = self.drain_as(me, true);
        // SAFETY: we hold the process (Complete, not yet freed).
        let links = self.links.with_mut(|l| core::mem::take(unsafe { &mut *l }));
        assert_eq!(links.killed_by(), None, "an exit drained at close ended it");
        // As the worker's `farewell`: a `Down` to each watcher, then an
        // `Exit` to each linked process.
        for &watcher in links.watchers() {
            out.push((watcher, Signal::Down(me, reason.clone())));
        }
        for &linked in links.linked() {
            out.push((linked, Signal::exit(me, reason.clone())));
        }
        out
    }

    /// The holder's own request, from its step's effects.
    fn request(&self, f: impl FnOnce(&mut Links) -> Option<(Pid, Signal)>) -> (Pid, Signal) {
        // SAFETY: the caller holds the process.
        self.links
            .with_mut(|l| f(unsafe { &mut *l }))
            .expect("the request changes something")
    }
}

fn pid(index: u32, generation: u32) -> Pid {
    Pid::from_raw((generation as u64) << 32 | index as u64)
}

/// The `Down`s that `received` passes to steps, about `target`.
fn downs(received: &[Received], target: Pid) -> usize {
    (received.iter())
        .filter(|r| matches!(r, Received::Down(p, _) if *p == target))
        .count()
}

/// Pushes `answers` meant for `w` into its mailbox (as `deliver_signal`
/// does; `w` is live in these models, so nothing is refused).
fn post(w: &Slot, w_pid: Pid, answers: Vec<(Pid, Signal)>) {
    for (to, signal) in answers {
        assert_eq!(to, w_pid, "an answer goes to the requester");
        assert!(matches!(
            w.deliver(to, signal, Wake::Completion),
            Sent::Queued
        ));
    }
}

/// `monitor(t)` from W's step races T's end: W gets exactly one `Down`
/// (T's reason if T's close drained the request, `NoProc` if the request
/// was refused or raced the end), without waiting for the slot to be
/// reused; the next holder's answer to a leftover request is dropped.
/// Treating a raced notify (`Finished`) as queued fails this model.
#[test]
fn monitor_racing_the_targets_end_yields_exactly_one_down() {
    loom::model(|| {
        let (w, w_pid) = Slot::running(0);
        let (t, t_pid) = Slot::running(1);
        let watcher = {
            let (w, t) = (Arc::clone(&w), Arc::clone(&t));
            thread::spawn(move || {
                let (to, signal) = w.request(|l| l.monitor(w_pid, t_pid));
                if let Sent::Unanswered(answer) = t.deliver(to, signal, Wake::Message) {
                    post(&w, w_pid, answer.into_iter().collect());
                }
            })
        };
        let farewell = t.close(t_pid, ExitReason::Done);
        post(&w, w_pid, farewell);
        watcher.join().unwrap();
        // Without the slot's reuse: a request pushed after T's drain must
        // have been answered by its sender (the slot may never be reused).
        let (received, _) = w.drain(w_pid);
        assert_eq!(downs(&received, t_pid), 1, "{received:?}");
        // With it: the next holder answers a leftover again (stale), and
        // the duplicate is dropped by `receive`.
        t.free_slot();
        let (_, stale_answers) = t.drain(pid(1, u32::MAX));
        post(&w, w_pid, stale_answers);
        let (received, _) = w.drain(w_pid);
        assert_eq!(downs(&received, t_pid), 0, "{received:?}");
    });
}

/// W monitors T (registered on both sides); W's step demonitors T while
/// T ends. No `Down` passes to a step of W after that step, whatever the
/// order.
#[test]
fn demonitor_racing_the_end_lets_no_down_through() {
    loom::model(|| {
        let (w, w_pid) = Slot::running(0);
        let (t, t_pid) = Slot::running(1);
        let _ = w.request(|l| l.monitor(w_pid, t_pid));
        // SAFETY: no other thread yet: T's holder registers W.
        let _ = t
            .links
            .with_mut(|l| unsafe { &mut *l }.receive(Signal::Monitor(w_pid)));
        let watcher = {
            let (w, t) = (Arc::clone(&w), Arc::clone(&t));
            thread::spawn(move || {
                let (to, signal) = w.request(|l| l.demonitor(w_pid, t_pid));
                let _ = t.deliver(to, signal, Wake::Message);
                // W's next step.
                let (received, _) = w.drain(w_pid);
                downs(&received, t_pid)
            })
        };
        let farewell = t.close(
            t_pid,
            ExitReason::Failed(stepsched::process::Summary::new("x")),
        );
        post(&w, w_pid, farewell);
        let seen = watcher.join().unwrap();
        let (received, _) = w.drain(w_pid);
        assert_eq!(seen + downs(&received, t_pid), 0);
    });
}

/// A and B, linked, fail at the same moment: each sends the other an
/// exit, which is refused, raced, or drained by the other's close (and
/// ignored there), or left for the slot's next holder, which owes no
/// answer. Nothing is answered twice, nothing is lost, no body is
/// touched by two threads.
#[test]
fn two_linked_processes_ending_together() {
    loom::model(|| {
        let (a, a_pid) = Slot::running(0);
        let (b, b_pid) = Slot::running(1);
        let _ = a.request(|l| l.link(a_pid, b_pid));
        let _ = b.request(|l| l.link(b_pid, a_pid));
        let end = |me: Arc<Slot>, me_pid: Pid, other: Arc<Slot>| {
            move || {
                let mut sent = 0;
                for (to, signal) in me.close(me_pid, ExitReason::Terminated) {
                    assert!(matches!(signal, Signal::ExitPlain(p, _) if p == me_pid));
                    match other.deliver(to, signal, Wake::Completion) {
                        Sent::Queued => sent += 1,
                        Sent::Unanswered(answer) => assert!(answer.is_none()),
                    }
                }
                sent
            }
        };
        let ta = thread::spawn(end(Arc::clone(&a), a_pid, Arc::clone(&b)));
        let tb = thread::spawn(end(Arc::clone(&b), b_pid, Arc::clone(&a)));
        let queued = ta.join().unwrap() + tb.join().unwrap();
        assert!(queued <= 2);
        // Both closed: whatever their drains missed is found by the next
        // holders, stale, and owes no answer.
        for s in [&a, &b] {
            s.free_slot();
            let (received, answers) = s.drain(pid(s.index, u32::MAX));
            assert!(received.is_empty() && answers.is_empty());
        }
    });
}

/// T ends and its slot is reused by a new process T' while W's monitor
/// of T is in flight. The request never registers with T' (a stale PID
/// never yields a `Down` about a newer process), and W gets exactly one
/// `Down`, about T.
#[test]
fn a_monitor_on_a_slot_being_reused() {
    loom::model(|| {
        let (w, w_pid) = Slot::running(0);
        let (t, t_pid) = Slot::running(1);
        let watcher = {
            let (w, t) = (Arc::clone(&w), Arc::clone(&t));
            thread::spawn(move || {
                let (to, signal) = w.request(|l| l.monitor(w_pid, t_pid));
                if let Sent::Unanswered(answer) = t.deliver(to, signal, Wake::Message) {
                    post(&w, w_pid, answer.into_iter().collect());
                }
            })
        };
        // T's worker: close T, free the slot, start T' in it and run its
        // first step's drain.
        let mut to_w = t.close(t_pid, ExitReason::Done);
        t.free_slot();
        // `Table::insert` passes over a slot a late sender is sweeping;
        // with one slot here, T's worker waits for the sweep instead.
        let generation = loop {
            match t.state.try_activate() {
                Some(generation) => break generation,
                None => thread::yield_now(),
            }
        };
        assert_eq!(t.state.start(), Start::Step { last: false });
        let t2 = pid(1, generation);
        let (received, answers) = t.drain(t2);
        assert!(received.is_empty(), "a request for T reached T'");
        to_w.extend(answers);
        post(&w, w_pid, to_w);
        watcher.join().unwrap();
        // T' ends: its close finds what its first drain missed.
        let late = t.close(t2, ExitReason::Done);
        post(&w, w_pid, late);
        let (received, _) = w.drain(w_pid);
        assert_eq!(downs(&received, t_pid), 1, "{received:?}");
        assert_eq!(downs(&received, t2), 0, "a Down about the newer process");
    });
}

/// W, trapping exits, links T and monitors it in one step: the two
/// requests go to T together, pushed under one notify
/// (`Shared::push_signal`, `notify_signals`), while T ends. Each is
/// answered exactly once: two `Down`s about T (the monitor's, and the trapped exit's),
/// with T's reason if T's close drained the requests, `NoProc` if they
/// were refused or raced the end, and W holds no link or monitor
/// afterwards. Notifying after the first push (the second unannounced)
/// fails this model: a request pushed after T's drain, under a notify
/// that found T live, is answered by no one.
#[test]
fn requests_pushed_under_one_notify_racing_the_end_are_answered_once_each() {
    loom::model(|| {
        let (w, w_pid) = Slot::running(0);
        let (t, t_pid) = Slot::running(1);
        // SAFETY: no other thread yet.
        w.links.with_mut(|l| unsafe { &mut *l }.trap_exits(true));
        let watcher = {
            let (w, t) = (Arc::clone(&w), Arc::clone(&t));
            thread::spawn(move || {
                let (to, link) = w.request(|l| l.link(w_pid, t_pid));
                let (_, monitor) = w.request(|l| l.monitor(w_pid, t_pid));
                let answers = t.deliver_batch(to, vec![link, monitor]);
                post(&w, w_pid, answers);
            })
        };
        let farewell = t.close(t_pid, ExitReason::Done);
        post(&w, w_pid, farewell);
        watcher.join().unwrap();
        let (received, _) = w.drain(w_pid);
        assert_eq!(downs(&received, t_pid), 2, "{received:?}");
        // The next holder of T's slot answers leftovers again (stale):
        // the duplicates are dropped.
        t.free_slot();
        let (_, stale_answers) = t.drain(pid(1, u32::MAX));
        post(&w, w_pid, stale_answers);
        let (received, _) = w.drain(w_pid);
        assert_eq!(downs(&received, t_pid), 0, "{received:?}");
        // SAFETY: every other thread has joined.
        let counts = w.links.with(|l| unsafe { &*l }.counts());
        assert_eq!(counts, (0, 0, 0), "a request left unanswered");
    });
}

/// `Local::send_signal` since a worker may claim a waiting process: the
/// farewell's `Down` to W is handed straight to W's body if W waits
/// (`StateWord::claim`: Idle -> Ready, the sender's to run), else pushed
/// and notified as before. W's step, meanwhile, writes its `Links` and
/// parks (`end_step`). Whichever way, W sees the `Down` exactly once, and
/// no two threads hold W's body at once. A claim that does not acquire
/// (its CAS weakened to Relaxed) fails this model: the claimer writes
/// W's `Links` with no order after the step's write before the park.
///
/// T's worker is the spawned thread. With the roles the other way round
/// (W's park on the spawned thread, a load then a CAS, and the claim's
/// first load on the main thread), loom never ran the park before the
/// claim, and the model passed with the CAS weakened: the blind spot of
/// `docs/proof/loom-limits.md`. So the model counts, outside loom, the
/// ways the `Down` went, and fails if one was never explored: claimed;
/// pushed to a parked W (the notify schedules it); pushed to a running W
/// (its park sees the wakeup and runs it again).
#[test]
fn a_signal_handed_to_a_parking_process_is_received_once() {
    static WENT: [StdAtomicBool; 3] = [const { StdAtomicBool::new(false) }; 3];
    let went = |way: usize| WENT[way].store(true, StdOrdering::Relaxed);
    loom::model(move || {
        let (w, w_pid) = Slot::running(0);
        let (t, t_pid) = Slot::running(1);
        let other = pid(2, 1);
        let _ = w.request(|l| l.monitor(w_pid, t_pid));
        // SAFETY: no other thread yet: T's holder registers W.
        let _ = t
            .links
            .with_mut(|l| unsafe { &mut *l }.receive(Signal::Monitor(w_pid)));
        // T's worker: T ends; its farewell goes to W.
        let closer = {
            let w = Arc::clone(&w);
            thread::spawn(move || {
                let mut seen = 0;
                for (to, signal) in t.close(t_pid, ExitReason::Done) {
                    assert_eq!(to, w_pid);
                    if w.state.claim(to.generation(), Wake::Completion) {
                        // Claimed: the signal goes to W's body, and this
                        // worker runs W.
                        // SAFETY: claimed: we hold W until we queue it.
                        let r = w.links.with_mut(|l| unsafe { &mut *l }.receive(signal));
                        seen += w.run(w_pid, vec![r]);
                        went(0);
                        continue;
                    }
                    w.events.push((to.generation(), signal));
                    match w.state.notify(to.generation(), Wake::Completion) {
                        Notify::Schedule => {
                            seen += w.run(w_pid, Vec::new());
                            went(1);
                        }
                        Notify::Nothing => went(2),
                        Notify::Finished | Notify::Stale | Notify::Sweep => unreachable!("W lives"),
                    }
                }
                seen
            })
        };
        // W's worker: the end of W's step (a write to its body), then the
        // park; if a wakeup came during the step, it runs W again.
        let _ = w.request(|l| l.monitor(w_pid, other));
        let mut seen = match w.state.end_step(Park::Idle) {
            AfterStep::Parked => 0,
            AfterStep::Requeue => w.run(w_pid, Vec::new()),
            AfterStep::Close => unreachable!("nothing terminates W"),
        };
        seen += closer.join().unwrap();
        assert_eq!(seen, 1, "W saw T's Down {seen} times");
        // SAFETY: every other thread has joined.
        assert!(unsafe { w.events.pop() }.is_none(), "a Down left behind");
    });
    for (way, went) in ["claimed", "pushed to a parked W", "pushed to a running W"]
        .iter()
        .zip(&WENT)
    {
        assert!(went.load(StdOrdering::Relaxed), "never explored: {way}");
    }
}

impl Slot {
    /// A worker that holds `me` (queued, Ready) runs it: `start`, then its
    /// events (`handed`, what a claimer received for it, and its
    /// mailbox's); returns how many `Down`s its step sees.
    fn run(&self, me: Pid, handed: Vec<Received>) -> usize {
        assert_eq!(self.state.start(), Start::Step { last: false });
        let (mut received, answers) = self.drain(me);
        assert!(answers.is_empty());
        received.extend(handed);
        (received.iter())
            .filter(|r| matches!(r, Received::Down(..)))
            .count()
    }
}

/// X links T while T's step collects its events and parks waiting for a
/// completion (`Park::Wait`: Blocked), then X fails. The request wakes as
/// a message does, so it may wait in T's mailbox, T Blocked, when X's
/// exit (a completion's wake) claims T (`Local::send_signal`). Whichever
/// way, T is ended by that exit exactly once, after registering the link,
/// and holds no link afterwards. The claimer decides in T's body only an
/// exit from a process among T's links (`Links::receive_handed`), and
/// pushes any other into T's mailbox, behind the request. Deciding every
/// claimed exit in the body (`receive`) fails this model: the exit finds
/// no link and is dropped, and the request, collected after it, links T
/// to X, gone. The model fails too if a way the exit can go was never
/// explored: decided in the body (T had collected the request); given
/// back and pushed behind the request; pushed to a running T.
#[test]
fn an_exit_claiming_a_process_comes_after_its_senders_link_request() {
    static WENT: [StdAtomicBool; 3] = [const { StdAtomicBool::new(false) }; 3];
    let went = |way: usize| WENT[way].store(true, StdOrdering::Relaxed);
    loom::model(move || {
        let (t, t_pid) = Slot::running(0);
        let (x, x_pid) = Slot::running(1);
        let linker = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                // X's step: `link(T)`. A request cannot claim T, Running or
                // Blocked, with a message's wake: pushed and notified.
                let (to, link) = x.request(|l| l.link(x_pid, t_pid));
                assert!(!t.state.claim(to.generation(), Wake::Message));
                assert!(matches!(t.deliver(to, link, Wake::Message), Sent::Queued));
                // X fails: its close, and its farewell's exit to T.
                let mut received = Vec::new();
                for (to, exit) in x.close(x_pid, ExitReason::Terminated) {
                    assert_eq!(to, t_pid);
                    if t.state.claim(to.generation(), Wake::Completion) {
                        // SAFETY: claimed: we hold T until we run it.
                        let handed = t
                            .links
                            .with_mut(|l| unsafe { &mut *l }.receive_handed(exit));
                        match handed {
                            Ok(r) => {
                                received.push(r);
                                went(0);
                            }
                            Err(exit) => {
                                // Held: pushed with no notify, then run.
                                t.events.push((to.generation(), exit));
                                went(1);
                            }
                        }
                        received.extend(t.collect_run(t_pid));
                        continue;
                    }
                    t.events.push((to.generation(), exit));
                    match t.state.notify(to.generation(), Wake::Completion) {
                        Notify::Schedule => received.extend(t.collect_run(t_pid)),
                        // Running: its park sees the wakeup.
                        Notify::Nothing => went(2),
                        Notify::Finished | Notify::Stale | Notify::Sweep => unreachable!("T lives"),
                    }
                }
                received
            })
        };
        // T's worker: the collection of T's step, then its park; a wakeup
        // during the step runs it again.
        let (mut received, answers) = t.drain(t_pid);
        assert!(answers.is_empty());
        match t.state.end_step(Park::Wait) {
            AfterStep::Parked => {}
            AfterStep::Requeue => received.extend(t.collect_run(t_pid)),
            AfterStep::Close => unreachable!("nothing terminates T"),
        }
        received.extend(linker.join().unwrap());
        let kills = (received.iter())
            .filter(|r| matches!(r, Received::Kill(p) if *p == x_pid))
            .count();
        assert_eq!(kills, 1, "T ended {kills} times by X's exit: {received:?}");
        // SAFETY: every other thread has joined.
        let counts = t.links.with(|l| unsafe { &*l }.counts());
        assert_eq!(counts, (0, 0, 0), "T linked to X, gone");
        // SAFETY: as above.
        assert!(unsafe { t.events.pop() }.is_none(), "an exit left behind");
    });
    for (way, went) in [
        "decided in the body",
        "pushed behind the request",
        "pushed to a running T",
    ]
    .iter()
    .zip(&WENT)
    {
        assert!(went.load(StdOrdering::Relaxed), "never explored: {way}");
    }
}

impl Slot {
    /// A worker that holds `me` (queued, Ready) runs it: `start`, then the
    /// collection of its mailbox; returns what `receive` said.
    fn collect_run(&self, me: Pid) -> Vec<Received> {
        assert_eq!(self.state.start(), Start::Step { last: false });
        let (received, answers) = self.drain(me);
        assert!(answers.is_empty());
        received
    }
}
