//! Scheduler tests that need its insides: a submit stopped half way.

use super::*;
use crate::process::{NoCommand, StepOutput};
use std::sync::atomic::{AtomicBool, AtomicUsize};

/// On method "hold": its first step waits (busy, on its worker) until the
/// test opens the gate; any process finishes with 7.
struct Gated {
    started: Arc<AtomicUsize>,
    gate: Arc<AtomicBool>,
    hold: bool,
}

impl Process for Gated {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u32;
    type Error = ();

    fn init(&mut self, method: &str, _: ()) -> Result<(), ()> {
        self.hold = method == "hold";
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if self.hold {
            // Release/Acquire (std atomics, test only): the counter is a
            // rendezvous with the test thread, the gate its answer.
            self.started
                .fetch_add(1, std::sync::atomic::Ordering::Release);
            while !self.gate.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
        out.done(7);
        Ok(())
    }
}

/// Polls `done` every millisecond; the 60 s bound turns a hang into a
/// failure and is no timing claim.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Issue 9, defect 6. A producer preempted between its swap and its link
/// leaves the global queue "not empty" to `is_empty` but untakeable
/// (`Take::Inconsistent`). Both workers are awake (they were running the
/// two held steps), so one may spin and the other may not: it goes to park,
/// its re-check sees the queue non-empty and it withdraws. Before the fix
/// it went straight back to park, a hot loop through the sleepers lock:
/// 146,000-193,000 cancelled parks in the 50 ms hold (yielding after each
/// withdrawal alone still let 6,600-13,000 through). Now a worker yields
/// after each of its first 16 withdrawals in a row; then, finding nothing
/// it can take, it backs off asleep until the producer's notify: 32 in all. The bound asserted is a
/// count, not a time: a slow machine only lowers it. The stalled process
/// must then run once linked: the back-off loses no wakeup.
#[test]
#[cfg_attr(miri, ignore)] // wall-clock hold; Miri would take minutes
fn a_half_done_push_makes_idle_workers_back_off_not_spin_on_the_sleepers_lock() {
    let scheduler = Scheduler::<Gated>::builder().workers(2).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(AtomicBool::new(false));
    let gated = || Gated {
        started: Arc::clone(&started),
        gate: Arc::clone(&gate),
        hold: false,
    };
    // Both workers busy, each in a held step.
    let held: Vec<_> = (0..2)
        .map(|_| scheduler.submit_joinable(gated(), "hold", ()).unwrap())
        .collect();
    wait_for("both held steps", || {
        started.load(std::sync::atomic::Ordering::Acquire) == 2
    });

    // A submit stopped after its claim: the first half of `submit_inner`.
    let shared = &*scheduler.shared;
    let cell = Arc::new(JoinCell::new());
    let joiner = crate::sched::join::Joiner::One(Arc::clone(&cell));
    let slot = (shared.create(gated(), "run", (), Some(joiner), Default::default(), None))
        .unwrap_or_else(|_| panic!("create"));
    let stalled = JoinHandle::new(slot.pid(), cell);
    let pending = shared.global.push_mid_link(Task::new(slot));

    let before = scheduler.stats().total().parks_cancelled;
    gate.store(true, std::sync::atomic::Ordering::Release);
    std::thread::sleep(Duration::from_millis(50));
    let cancelled = scheduler.stats().total().parks_cancelled - before;

    // The producer resumes: link, then the wake rule's notify.
    pending.link();
    shared.idle.notify_one();
    for handle in held {
        assert_eq!(
            handle.join_timeout(Duration::from_secs(60)).ok(),
            Some(Ok(7))
        );
    }
    let outcome = stalled.join_timeout(Duration::from_secs(60));
    assert_eq!(
        outcome.ok(),
        Some(Ok(7)),
        "the stalled submit runs once linked"
    );
    let report = scheduler.shutdown(Duration::from_secs(60));
    assert_eq!((report.stuck, report.timed_out), (0, false));
    eprintln!("cancelled parks during the 50 ms half-done push: {cancelled}");
    assert!(
        cancelled < 500,
        "{cancelled} cancelled parks in the hold: idle workers loop hot on a half-done push"
    );
}
