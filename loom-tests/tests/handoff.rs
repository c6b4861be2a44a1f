//! loom models of the hand-off of a process between workers (the
//! scheduler's `run_task`: `start`, the step, `end_step`, and a notifier
//! that queues it again), with the process body as a loom cell: the state
//! word alone must order one holder's writes to the body before the next
//! holder's reads. The run queue is reduced to a flag with the queues'
//! Release push and Acquire take; the edge from worker A's body write to
//! worker B's read runs through A's `end_step` (Release), the notifier's
//! CAS that reads it (Acquire), and the queue.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test handoff`
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{AfterStep, Notify, Park, Start, StateWord, Wake};
use stepsched::mpsc::Mailbox;
use stepsched::process::Lifecycle;

/// A slot in miniature: state word, mailbox, body.
struct Slot {
    state: StateWord,
    events: Mailbox<u32>,
    /// The process body: written by whoever holds the process (Running).
    body: UnsafeCell<u64>,
    /// The run queue, reduced to "someone queued it".
    queued: AtomicBool,
}

impl Slot {
    /// A process started by the first worker (Running), generation returned.
    fn running() -> (Arc<Slot>, u32) {
        let slot = Slot {
            state: StateWord::new(),
            events: Mailbox::new(),
            body: UnsafeCell::new(0),
            queued: AtomicBool::new(false),
        };
        let generation = slot.state.activate();
        assert_eq!(slot.state.start(), Start::Step { last: false });
        (Arc::new(slot), generation)
    }

    /// A step by the holder: reads its events and writes the body.
    fn step(&self, value: u64) -> usize {
        let mut seen = 0;
        // SAFETY: the caller holds the process (Running): the only consumer.
        while unsafe { self.events.pop() }.is_some() {
            seen += 1;
        }
        // loom checks that this write does not race the other holder's.
        self.body.with_mut(|b| {
            // SAFETY: the caller holds the process.
            unsafe { *b = value }
        });
        seen
    }
}

/// Worker A ends a step Idle; an outside sender's message wakes the
/// process and queues it; worker B takes it and steps it. B's step must
/// see A's body write (no data race on the cell) and the message; if A's
/// end of step saw the message first, A requeues it itself and steps again.
/// Weakening the Release half of `end_step`'s CAS, or the Acquire half of
/// the notifier's (`StateWord::update`, `notify`), is a loom causality
/// error on the body here.
#[test]
fn body_written_before_end_step_is_seen_by_the_worker_that_starts_it_next() {
    loom::model(|| {
        let (slot, generation) = Slot::running();
        let sender = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || {
                slot.events.push(7);
                if slot.state.notify(generation, Wake::Message) == Notify::Schedule {
                    // Release: as the run queues' push.
                    slot.queued.store(true, Ordering::Release);
                }
            })
        };
        let worker_b = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || {
                // Acquire: as the run queues' take.
                if !slot.queued.load(Ordering::Acquire) {
                    return None;
                }
                assert_eq!(slot.state.start(), Start::Step { last: false });
                let seen = slot.step(2);
                // SAFETY: we hold the process.
                let body = slot.body.with(|b| unsafe { *b });
                assert_eq!(body, 2);
                let _ = slot.state.end_step(Park::Idle);
                Some(seen)
            })
        };
        // Worker A: its step, then the end of step.
        let mut seen = slot.step(1);
        if slot.state.end_step(Park::Idle) == AfterStep::Requeue {
            // Woken during its step: A queues it on itself and runs it again.
            assert_eq!(slot.state.start(), Start::Step { last: false });
            seen += slot.step(1);
            let _ = slot.state.end_step(Park::Idle);
        }
        sender.join().unwrap();
        let b = worker_b.join().unwrap();
        // Every thread is joined: we are the mailbox's only consumer.
        let mut left = 0;
        // SAFETY: as above.
        while unsafe { slot.events.pop() }.is_some() {
            left += 1;
        }
        assert_eq!(
            seen + b.unwrap_or(0) + left,
            1,
            "the message was lost or seen twice"
        );
        if left == 1 {
            // Not seen yet: then the process must be queued to see it.
            assert_eq!(
                slot.state.load().lifecycle(),
                Lifecycle::Ready,
                "a message is queued for a process nobody will run"
            );
        }
    });
}
