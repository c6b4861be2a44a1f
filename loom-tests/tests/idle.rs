//! loom models of the park/wake protocol (`src/sched/idle.rs`, README in
//! `src/sched/`): work published while a worker goes to sleep is never left
//! with every worker asleep.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test idle`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::sched::idle::Idle;

/// The worker side: register, re-check, and sleep only if nothing is there.
/// Returns once it has seen the work.
fn worker(idle: &Idle, work: &AtomicBool, spinning: bool) {
    let mut spinning = spinning;
    loop {
        // Relaxed is enough for the model's queue: the protocol's fences
        // order it (a real queue's own Acquire only adds to that).
        if work.load(Ordering::Relaxed) {
            if spinning {
                let _ = idle.stop_spinning();
            }
            return;
        }
        idle.prepare_park(0, spinning);
        spinning = false;
        if work.load(Ordering::Relaxed) {
            idle.cancel_park(0);
            return;
        }
        idle.park(0);
    }
}

/// The publisher side, on a thread of its own: publish the work, then wake
/// a worker if none is spinning.
fn publish(idle: &Arc<Idle>, work: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let (idle, work) = (idle.clone(), work.clone());
    thread::spawn(move || {
        work.store(true, Ordering::Relaxed);
        idle.notify_one();
    })
}

/// A push racing a worker going to sleep is never lost: loom reports a
/// deadlock if the worker parks for good.
#[test]
fn park_races_with_push() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let work = Arc::new(AtomicBool::new(false));
        let publisher = publish(&idle, &work);
        worker(&idle, &work, false);
        publisher.join().unwrap();
        assert_eq!(idle.counts(), (0, 0));
    });
}

/// The publisher sees a spinner and does not wake anyone; the spinner then
/// gives up and goes to sleep: its own re-check must find the work.
#[test]
fn spinner_going_to_sleep_is_not_skipped() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        assert!(idle.try_start_spinning());
        let work = Arc::new(AtomicBool::new(false));
        let publisher = publish(&idle, &work);
        worker(&idle, &work, true);
        publisher.join().unwrap();
        assert_eq!(idle.counts(), (0, 0));
    });
}

/// Two publishers and one sleeper: the sleeper is woken (once or twice,
/// harmlessly) and the bookkeeping ends balanced.
#[test]
fn two_publishers_one_sleeper() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let work = Arc::new(AtomicBool::new(false));
        let publishers: Vec<_> = (0..2).map(|_| publish(&idle, &work)).collect();
        worker(&idle, &work, false);
        for p in publishers {
            p.join().unwrap();
        }
        assert_eq!(idle.counts(), (0, 0));
    });
}
