//! loom models of an outside receiver's first step (`src/sched/outside/receiver.rs`,
//! `first_step`): its creator holds the new slot (Ready, queued nowhere)
//! and makes the step itself, `start`, a look at the mailbox, `end_step`,
//! while a thread that guessed the PID terminates it or sends to it. In
//! every interleaving the slot is queued exactly once or parked Idle with
//! nothing queued, and a queued slot is Ready, so the worker's `start`
//! (which asserts Ready) takes it.
//!
//! The glue is restated from `first_step` around the crate's own state
//! word and `Mailbox` (the scheduler is not built under loom).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test receiver`
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{AfterStep, Notify, Park, Start, StateWord, Wake};
use stepsched::mpsc::{Mailbox, NodeCache};
use stepsched::process::Lifecycle;

/// A receiver's slot in miniature.
struct Slot {
    state: StateWord,
    events: Mailbox<u32>,
    /// How many times someone queued the slot.
    queued: AtomicUsize,
}

impl Slot {
    /// Inserted: Ready, queued nowhere, its generation returned.
    fn inserted() -> (Arc<Slot>, u32) {
        let slot = Slot {
            state: StateWord::new(),
            events: Mailbox::new(),
            queued: AtomicUsize::new(0),
        };
        let generation = slot.state.activate();
        (Arc::new(slot), generation)
    }

    fn queue(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// `first_step`, restated.
    fn first_step(&self) {
        let start = self.state.start();
        assert!(!matches!(start, Start::Close), "CLOSE only when waiting");
        // SAFETY: `start` made the slot Running for us: the only consumer.
        let empty = unsafe { self.events.is_empty() };
        let park = if empty { Park::Idle } else { Park::Continue };
        match self.state.end_step(park) {
            AfterStep::Parked => {}
            AfterStep::Requeue => self.queue(),
            AfterStep::Close => {
                assert_eq!(self.state.end_step(Park::Continue), AfterStep::Requeue);
                self.queue();
            }
        }
    }

    /// After every thread joined: what the worker that takes the queued
    /// slot finds (its `start` panics unless the slot is Ready), and the
    /// events its step drains.
    fn worker_step(&self) -> (Start, Vec<u32>) {
        let start = self.state.start();
        let mut nodes = NodeCache::new();
        // SAFETY: every other thread has joined; `start` made us the holder.
        let events = std::iter::from_fn(|| unsafe { self.events.pop_with(&mut nodes) }).collect();
        (start, events)
    }
}

/// A terminate racing the creator's first step: whichever comes first,
/// the slot is queued exactly once, Ready, and the worker that takes it
/// closes it (`Start::Close`, found Idle) or gives it its last step
/// (`last`, found Ready or Running): never found Running.
#[test]
fn terminate_racing_a_receivers_first_step_queues_it_once_ready() {
    loom::model(|| {
        let (slot, g) = Slot::inserted();
        let terminator = {
            let slot = slot.clone();
            thread::spawn(move || {
                if slot.state.terminate(g) == Notify::Schedule {
                    slot.queue();
                }
            })
        };
        slot.first_step();
        terminator.join().unwrap();
        assert_eq!(
            slot.queued.load(Ordering::Relaxed),
            1,
            "queued exactly once"
        );
        assert_eq!(slot.state.load().lifecycle(), Lifecycle::Ready);
        let (start, _) = slot.worker_step();
        assert!(
            matches!(start, Start::Close | Start::Step { last: true }),
            "the worker ends it: {start:?}"
        );
    });
}

/// A message racing the creator's first step, including one whose notify
/// finds the slot still Ready and sets no bit: the slot is queued exactly
/// once and its step forwards the message, or (never both) the message is
/// not lost in a parked slot.
#[test]
fn message_racing_a_receivers_first_step_is_forwarded() {
    loom::model(|| {
        let (slot, g) = Slot::inserted();
        let sender = {
            let slot = slot.clone();
            thread::spawn(move || {
                slot.events.push(7);
                if slot.state.notify(g, Wake::Message) == Notify::Schedule {
                    slot.queue();
                }
            })
        };
        slot.first_step();
        sender.join().unwrap();
        assert_eq!(
            slot.queued.load(Ordering::Relaxed),
            1,
            "queued exactly once"
        );
        let (start, events) = slot.worker_step();
        assert_eq!(start, Start::Step { last: false });
        assert_eq!(events, vec![7]);
    });
}
