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

/// `publishers` threads publish work while one worker (of `workers`; it
/// starts out registered as spinning if `spinning`) looks for it: the
/// worker must find it (loom reports a deadlock if it parks for good), and
/// the idle counts must end balanced.
fn publishers_vs_worker(workers: usize, publishers: usize, spinning: bool) {
    loom::model(move || {
        let idle = Arc::new(Idle::new(workers));
        if spinning {
            assert!(idle.try_start_spinning());
        }
        let work = Arc::new(AtomicBool::new(false));
        let publishers: Vec<_> = (0..publishers).map(|_| publish(&idle, &work)).collect();
        worker(&idle, &work, spinning);
        for p in publishers {
            p.join().unwrap();
        }
        assert_eq!(idle.counts(), (0, 0));
    });
}

/// A push racing a worker going to sleep is never lost.
#[test]
fn park_races_with_push() {
    publishers_vs_worker(1, 1, false);
}

/// The publisher sees a spinner and does not wake anyone; the spinner then
/// gives up and goes to sleep: its own re-check must find the work.
#[test]
fn spinner_going_to_sleep_is_not_skipped() {
    publishers_vs_worker(2, 1, true);
}

/// Two publishers and one sleeper: the sleeper is woken (once or twice,
/// harmlessly) and the bookkeeping ends balanced.
#[test]
fn two_publishers_one_sleeper() {
    publishers_vs_worker(1, 2, false);
}
