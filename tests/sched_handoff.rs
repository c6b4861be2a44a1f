//! Proves the hand-off of a process between workers is sound: a process
//! parks (Idle), an outside thread sends to it right after its step ends,
//! and whichever worker takes it steps it while the worker that parked it
//! may still be returning from that step. Built for Miri, which checks that
//! no reference into the process's body outlives the hand-off (Stacked
//! Borrows' protectors, Tree Borrows), and runs natively as a stress test.
//!
//! ```text
//! cargo test --test sched_handoff
//! cargo +nightly miri test --test sched_handoff
//! ```

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::Lifecycle;
use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// Round trips per test: Miri interprets every instruction, so few.
const ROUNDS: u64 = if cfg!(miri) { 12 } else { 10_000 };

/// Counts the messages it receives, publishes the count, and parks (Idle)
/// until the next; ends with the count once it reaches `rounds`.
struct Counter {
    rounds: u64,
    seen: u64,
    published: Arc<AtomicU64>,
}

impl Process for Counter {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(n) if n == self.seen => self.seen += 1,
                other => return Err(format!("expected message {}, got {other:?}", self.seen)),
            }
        }
        // Release: pairs with the sender's Acquire load; the sender's next
        // `send` then follows this step.
        self.published.store(self.seen, Ordering::Release);
        if self.seen == self.rounds {
            out.done(self.seen);
        } else {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

/// Waits until `done` holds; the bound turns a hang into a failure.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// `processes` counters on two workers, each in a ping-pong with the test
/// thread. On odd rounds a message is sent the moment the previous step
/// published its count, racing that step's end; on even rounds, the moment
/// the process dump shows the process parked (Idle): its step has ended,
/// the worker that ran it may still be returning from it, and the message
/// makes it Ready for the other worker (idle, spinning or woken) to take.
fn ping_pong_with_outside_sender(processes: usize) {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let counters: Vec<_> = (0..processes)
        .map(|_| {
            let published = Arc::new(AtomicU64::new(0));
            let process = Counter {
                rounds: ROUNDS,
                seen: 0,
                published: Arc::clone(&published),
            };
            let handle = scheduler.submit_joinable(process, "count", ()).unwrap();
            (handle, published)
        })
        .collect();
    for round in 0..ROUNDS {
        for (handle, published) in &counters {
            let pid = handle.pid();
            // Acquire: pairs with the Release store in `Counter::step`.
            wait_for("the step before", || {
                published.load(Ordering::Acquire) >= round
            });
            if round % 2 == 0 {
                wait_for("the process to park", || {
                    let dump = scheduler.processes();
                    let me = dump.iter().find(|p| p.pid == pid);
                    me.is_some_and(|p| p.state == Lifecycle::Idle)
                });
            }
            scheduler.send(pid, round).unwrap();
        }
    }
    for (handle, _) in counters {
        assert_eq!(handle.join(), Ok(ROUNDS));
    }
    let report = scheduler.shutdown(Duration::from_secs(5));
    assert_eq!(report.forced, 0);
    assert_eq!(scheduler.stats().undelivered, 0);
}

#[test]
fn a_process_woken_from_outside_right_after_its_step_moves_between_workers_soundly() {
    ping_pong_with_outside_sender(1);
}

#[test]
fn two_processes_woken_from_outside_in_turn_move_between_workers_soundly() {
    ping_pong_with_outside_sender(2);
}
