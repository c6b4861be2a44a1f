//! loom models of the per-process state word (`src/process/state/`)
//! together with the process's event queue: every event pushed is seen by a
//! later step, and the process is queued exactly once.
//!
//! The queue is a [`Mailbox`], as in the scheduler's process slot
//! (`src/sched/core/table.rs`), popped as the worker pops it (`pop_with` into a
//! node cache, `src/sched/worker/step.rs`). Its `pop` contract (one consumer
//! at a time, successive consumers ordered by some synchronization) is kept
//! by the state word alone: only the thread whose `start` moved the process
//! to Running pops. A `Mailbox` has no `is_empty` for other threads and
//! frees or recycles the node each pop releases, so these models also check
//! that a pop during a push's mid-link window (it returns `None`) strands
//! nothing: the producer's notify follows its link.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test state`
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{AfterStep, Notify, Park, Start, StateWord, Wake};
use stepsched::mpsc::{Mailbox, NodeCache};
use stepsched::process::Lifecycle;

/// A process slot in miniature: the state word and the event queue.
struct Proc {
    state: StateWord,
    events: Mailbox<u32>,
    /// How many times someone queued the process.
    queued: AtomicUsize,
}

impl Proc {
    /// A process that a worker is stepping (Running), generation returned.
    fn running() -> (Arc<Proc>, u32) {
        let (p, generation) = Proc::ready();
        assert_eq!(p.state.start(), Start::Step { last: false });
        (p, generation)
    }

    /// A process queued to run (Ready), not yet started; generation returned.
    fn ready() -> (Arc<Proc>, u32) {
        let p = Proc {
            state: StateWord::new(),
            events: Mailbox::new(),
            queued: AtomicUsize::new(0),
        };
        let generation = p.state.activate();
        (Arc::new(p), generation)
    }

    /// The worker's step, run while notifiers may still push: the events
    /// its drain sees (`collect_events`: `pop_with` into the worker's node
    /// cache until `None`).
    fn step_events(&self) -> Vec<u32> {
        let mut nodes = NodeCache::new();
        // SAFETY: the caller moved the process to Running (or every other
        // thread has joined): it is the mailbox's only consumer, ordered
        // after the previous one by the state word's CASes.
        std::iter::from_fn(|| unsafe { self.events.pop_with(&mut nodes) }).collect()
    }

    /// A notifier from outside the workers (`deliver_remote`): push the
    /// event in a new node, then wake. Returns whether it queued the process.
    fn deliver(&self, generation: u32, event: u32, kind: Wake) -> bool {
        self.events.push(event);
        self.wake(generation, kind)
    }

    /// A notifier on a worker (a send from a step): push the event in a node
    /// from the worker's cache, then wake. Returns whether it queued it.
    fn deliver_with(&self, g: u32, event: u32, kind: Wake, nodes: &mut NodeCache<u32>) -> bool {
        self.events.push_with(event, nodes);
        self.wake(g, kind)
    }

    fn wake(&self, generation: u32, kind: Wake) -> bool {
        let queued = self.state.notify(generation, kind) == Notify::Schedule;
        if queued {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    /// The worker's end of step.
    fn end_step(&self, park: Park) {
        if self.state.end_step(park) == AfterStep::Requeue {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// After every thread joined: the next step (if queued) drains events.
    fn next_step_events(&self) -> Vec<u32> {
        // All other threads have joined: this is the only consumer.
        self.step_events()
    }
}

/// A completion arriving while the step runs sets the wakeup bit; the
/// worker's Running -> Blocked transition sees it (or the notifier sees
/// Blocked): exactly one party queues the process, and its next step sees
/// the event.
#[test]
fn wakeup_bit_set_while_running() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let notifier = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 7, Wake::Completion))
        };
        p.end_step(Park::Wait);
        notifier.join().unwrap();
        assert_eq!(p.queued.load(Ordering::Relaxed), 1, "queued exactly once");
        assert_eq!(p.state.load().lifecycle(), Lifecycle::Ready);
        assert_eq!(p.next_step_events(), vec![7]);
    });
}

/// A message racing Running -> Idle: exactly one queue, event seen.
#[test]
fn message_races_running_to_idle() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let notifier = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 1, Wake::Message))
        };
        p.end_step(Park::Idle);
        notifier.join().unwrap();
        assert_eq!(p.queued.load(Ordering::Relaxed), 1);
        assert_eq!(p.next_step_events(), vec![1]);
    });
}

/// A message does not wake a process that waits for completions, in any
/// interleaving; the completion that follows wakes it exactly once, and its
/// next step sees both events in order.
#[test]
fn message_waits_for_the_completion_that_wakes_blocked() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let notifier = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 1, Wake::Message))
        };
        p.end_step(Park::Wait);
        notifier.join().unwrap();
        assert_eq!(
            p.queued.load(Ordering::Relaxed),
            0,
            "a message alone never wakes Blocked"
        );
        assert_eq!(p.state.load().lifecycle(), Lifecycle::Blocked);
        p.deliver(g, 2, Wake::Completion);
        assert_eq!(p.queued.load(Ordering::Relaxed), 1);
        assert_eq!(p.next_step_events(), vec![1, 2]);
    });
}

/// Two completions racing each other and the end of the step: the process
/// is queued exactly once and its next step sees both.
#[test]
fn two_completions_race() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let notifiers: Vec<_> = [10, 20]
            .into_iter()
            .map(|e| {
                let p = p.clone();
                thread::spawn(move || p.deliver(g, e, Wake::Completion))
            })
            .collect();
        p.end_step(Park::Wait);
        for n in notifiers {
            n.join().unwrap();
        }
        assert_eq!(p.queued.load(Ordering::Relaxed), 1);
        let mut seen = p.next_step_events();
        seen.sort_unstable();
        assert_eq!(seen, vec![10, 20]);
    });
}

/// Terminate racing the end of a step: a process that wanted to wait is
/// closed (by the worker if it saw the flag, or queued to be closed), and a
/// queued process is queued exactly once.
#[test]
fn terminate_races_end_of_step() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let terminator = {
            let p = p.clone();
            thread::spawn(move || p.state.terminate(g))
        };
        let after = p.state.end_step(Park::Idle);
        let told = terminator.join().unwrap();
        match (after, told) {
            // Worker saw the flag first: it closes the process itself.
            (AfterStep::Close, Notify::Nothing) => {}
            // Worker parked first: the terminator queued it to be closed.
            (AfterStep::Parked, Notify::Schedule) => {
                assert_eq!(p.state.start(), Start::Close);
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    });
}

/// A shutdown with no grace (`Scheduler::shutdown` with a zero timeout)
/// sends no cancels: its forced scan (`close_waiting`: load the word, then
/// `terminate` that generation) is what reaches a process a creator made
/// Ready just before. If the creator then saw the shutdown and withdraws
/// it (`Shared::withdraw`: `start`, `complete`, the slot freed), the scan
/// must never queue it: only a worker's queue would hold a process nobody
/// may step. And if the creator keeps it, the scan either queues it to be
/// closed or leaves the terminate flag for its first `start`.
#[test]
fn forced_scan_racing_a_withdraw_never_queues_the_withdrawn_process() {
    for withdraws in [true, false] {
        loom::model(move || {
            let (p, _) = Proc::ready();
            let scanner = {
                let p = p.clone();
                thread::spawn(move || {
                    let generation = p.state.load().generation();
                    p.state.terminate(generation)
                })
            };
            if withdraws {
                let _ = p.state.start();
                p.state.complete();
                p.state.free().expect("a terminate pushes nothing");
                let told = scanner.join().unwrap();
                assert_ne!(told, Notify::Schedule, "a withdrawn process queued");
            } else {
                // The creator queues it; a worker starts it.
                let started = p.state.start();
                let told = scanner.join().unwrap();
                match (started, told) {
                    // The scan came first: the start is the last step's.
                    (Start::Step { last: true }, Notify::Nothing) => {}
                    // The start came first: the flag ends the step.
                    (Start::Step { last: false }, Notify::Nothing) => {
                        assert_eq!(p.state.end_step(Park::Idle), AfterStep::Close);
                    }
                    other => panic!("unexpected outcome {other:?}"),
                }
            }
        });
    }
}

/// A stale PID never wakes the next process in the slot.
#[test]
fn stale_notify_after_reuse_is_refused() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let old = {
            let p = p.clone();
            thread::spawn(move || {
                let told = p.state.notify(g, Wake::Message);
                if told == Notify::Sweep {
                    // Freed, not reused: the late notifier's sweep (it
                    // pushed nothing here, so there is nothing to pop).
                    while !p.state.end_sweep() {}
                }
                told
            })
        };
        p.state.complete();
        while p.state.free().is_err() {}
        // `Table::insert` passes over a slot being swept; with one slot
        // here, it waits for the sweep.
        let g2 = loop {
            match p.state.try_activate() {
                Some(generation) => break generation,
                None => thread::yield_now(),
            }
        };
        let verdict = old.join().unwrap();
        assert_ne!(g, g2);
        assert_ne!(
            verdict,
            Notify::Schedule,
            "an old PID must not queue anything"
        );
        assert_eq!(p.state.start(), Start::Step { last: false });
    });
}

/// The store-buffer race between a notifier and the start of a step: the
/// notifier pushes, then reads the state word; the worker starts the step
/// (Ready -> Running), then drains the queue. If the notifier's read were a
/// plain load that saw Ready, and the worker's drain missed the push, the
/// step would end Idle with the message queued and nobody to wake it (the
/// lost wakeup once seen in the ping-pong bench). The notifier's RMW on the
/// word rules that out: either the step sees the message, or the process
/// is queued again.
///
/// Kills: the notify's `fetch_add(0)` turned into a load (the
/// notify-writes invariant in `src/process/state/`): "lost".
#[test]
fn message_to_a_queued_process_is_seen_by_its_step_or_wakes_it() {
    loom::model(|| {
        let (p, g) = Proc::ready();
        let notifier = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 1, Wake::Message))
        };
        assert_eq!(p.state.start(), Start::Step { last: false });
        let seen = p.step_events();
        p.end_step(Park::Idle);
        notifier.join().unwrap();
        if seen.is_empty() {
            assert_eq!(p.queued.load(Ordering::Relaxed), 1, "message lost");
            assert_eq!(p.next_step_events(), vec![1]);
        } else {
            // Seen; a notify that came after the drain may still have left
            // MESSAGED, and a spurious extra step is allowed.
            assert_eq!(seen, vec![1]);
            assert!(p.queued.load(Ordering::Relaxed) <= 1);
        }
    });
}

/// The same race when the wakeup bit is already set: a second message to a
/// running process whose first message already set MESSAGED. The worker's
/// next step (queued by that bit) must see the second message too, or the
/// second notify must leave a bit for it.
///
/// Kills: the notify's `fetch_add(0)` turned into a load (the
/// notify-writes invariant in `src/process/state/`): "lost".
#[test]
fn second_message_while_the_bit_is_set_is_not_lost() {
    loom::model(|| {
        let (p, g) = Proc::running();
        // The first message: sets MESSAGED while the step runs.
        p.deliver(g, 1, Wake::Message);
        let notifier = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 2, Wake::Message))
        };
        // End of the running step (requeued by the bit), then the next step.
        p.end_step(Park::Idle);
        assert_eq!(p.queued.load(Ordering::Relaxed), 1);
        assert_eq!(p.state.start(), Start::Step { last: false });
        let seen = p.step_events();
        p.end_step(Park::Idle);
        notifier.join().unwrap();
        if seen == vec![1] {
            assert_eq!(p.queued.load(Ordering::Relaxed), 2, "message 2 lost");
            assert_eq!(p.next_step_events(), vec![2]);
        } else {
            assert_eq!(seen, vec![1, 2]);
        }
    });
}

/// A message to a Blocked process wakes nothing; the completion that
/// follows from another thread wakes it, and the step it runs must see
/// both (the mailbox keeps order, so a message whose link is not visible
/// would hide the completion behind it too).
///
/// Kills: the notify's `fetch_add(0)` turned into a load (the
/// notify-writes invariant in `src/process/state/`): "lost".
#[test]
fn message_then_completion_to_blocked_are_both_seen() {
    loom::model(|| {
        let (p, g) = Proc::running();
        p.end_step(Park::Wait);
        let messenger = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 1, Wake::Message))
        };
        let completer = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 2, Wake::Completion))
        };
        completer.join().unwrap();
        assert_eq!(p.queued.load(Ordering::Relaxed), 1);
        assert_eq!(p.state.start(), Start::Step { last: false });
        let mut seen = p.step_events();
        seen.sort_unstable();
        p.end_step(Park::Idle);
        messenger.join().unwrap();
        if !seen.contains(&1) || !seen.contains(&2) {
            assert_eq!(p.queued.load(Ordering::Relaxed), 2, "an event was lost");
        }
    });
}

/// The consumer moves between threads, as when another worker runs the
/// process's next step. A worker (here the model's main thread) runs a step
/// of the process: it drains the mailbox and ends the step Idle. Another
/// worker's step sends the process a message (`push_with` from its node
/// cache) and, if its notify queued the process, runs that next step itself
/// (as `runnext`): `start`, drain, end. The message is seen exactly once,
/// by whichever step comes after it. The two drains pop the same `Mailbox`
/// on two threads, and the second recycles the nodes the first released:
/// loom checks that the state word orders them (the `pop` contract) and
/// reports a data race on the mailbox's `tail` or a node otherwise.
///
/// Kills: the Release half of the state word's CAS removed (`update`'s
/// AcqRel -> Acquire): `end_step` no longer publishes the first drain, and
/// loom reports concurrent writes to the mailbox's `tail` cell. (The
/// notifier's own CAS need not acquire here: the `start` that follows it
/// does, reading through the notify's RMW in the release sequence.)
#[test]
fn message_to_an_idle_process_is_seen_by_the_worker_that_queues_it() {
    loom::model(|| {
        let (p, g) = Proc::running();
        let other = {
            let p = p.clone();
            thread::spawn(move || {
                let mut nodes = NodeCache::new();
                if !p.deliver_with(g, 1, Wake::Message, &mut nodes) {
                    return Vec::new();
                }
                assert_eq!(p.state.start(), Start::Step { last: false });
                let seen = p.step_events();
                p.end_step(Park::Idle);
                seen
            })
        };
        let mut seen = p.step_events();
        p.end_step(Park::Idle);
        seen.extend(other.join().unwrap());
        if p.state.load().lifecycle() == Lifecycle::Ready {
            // Requeued by the message's bit: the next step, on this worker.
            assert_eq!(p.state.start(), Start::Step { last: false });
            seen.extend(p.step_events());
            p.end_step(Park::Idle);
        }
        assert_eq!(seen, vec![1], "the message is seen exactly once");
        assert_eq!(p.state.load().lifecycle(), Lifecycle::Idle);
    });
}

/// As `message_then_completion_to_blocked_are_both_seen`, but the step that
/// the completion wakes ends as a process waiting for that completion does
/// when it did not see it: `Wait` again. If a message's push is mid-link
/// ahead of the completion, the drain stops at the message and the
/// completion is left behind it; the message's notify, which comes after
/// its link, does not wake a Blocked process. So the worker's `end_wait`
/// (`src/sched/worker/step.rs`), restated here, parks the process Idle
/// instead when its mailbox is not empty, and the notify that follows the
/// link wakes it: the completion still reaches a step.
///
/// Kills: `end_wait` parking Blocked whatever the mailbox holds (the
/// completion is lost: queued once).
#[test]
fn a_completion_behind_a_message_mid_link_reaches_a_waiting_process() {
    loom::model(|| {
        let (p, g) = Proc::running();
        p.end_step(Park::Wait);
        let messenger = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 1, Wake::Message))
        };
        let completer = {
            let p = p.clone();
            thread::spawn(move || p.deliver(g, 2, Wake::Completion))
        };
        completer.join().unwrap();
        assert_eq!(p.state.start(), Start::Step { last: false });
        let seen = p.step_events();
        let park = if seen.contains(&2) {
            Park::Idle
        } else if {
            // SAFETY: we hold the process (Running): the only consumer.
            unsafe { p.events.is_empty() }
        } {
            Park::Wait
        } else {
            Park::Idle // `end_wait`: something the drain did not see
        };
        p.end_step(park);
        messenger.join().unwrap();
        if !seen.contains(&2) {
            assert_eq!(
                p.queued.load(Ordering::Relaxed),
                2,
                "the completion was lost"
            );
        }
    });
}
