//! loom model of the long-step monitor's seqlock
//! (`StepWatch`, `src/sched/observe/watch.rs`): a sample that returns a PID
//! returns the PID of the step whose sequence number it returns, never
//! another step's.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test watch`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::StepWatch;
use stepsched::process::Pid;

/// The worker runs two steps, `begin(1, A); end(2); begin(3, B); end(4)`,
/// while the monitor samples three times. Every sample that returns
/// `(seq, Some(pid))` returns step 1 with A or step 3 with B: a monitor
/// that paired a step with another's PID would report (and ask to yield)
/// the wrong process. Successive samples also never go back.
///
/// Kills these ordering mutants of `src/sched/observe/watch.rs` (each weakened by
/// hand, the model fails with the assertion below):
///
/// - `StepWatch::begin::seq.store#0:Release->Relaxed` and
///   `StepWatch::sample::seq.load#0:Acquire->Relaxed`: the monitor reads
///   sequence 1 but a PID older than the step's (the initial `<0.0>`), and
///   its re-read agrees;
/// - `StepWatch::begin::pid.store#0:Release->Relaxed` and
///   `StepWatch::sample::pid.load#0:Acquire->Relaxed`: the monitor reads
///   sequence 1, then step 3's PID B, and its re-read still returns the
///   stale 1.
///
/// `StepWatch::end`'s store needs no Release; the model passes with Relaxed
/// (the next `begin`'s Release store of `pid` orders it), so it is Relaxed
/// in the code and has no mutant.
#[test]
fn a_sample_returns_the_pid_of_its_own_step() {
    loom::model(|| {
        let a = Pid::from_raw(1 << 32 | 11);
        let b = Pid::from_raw(2 << 32 | 22);
        let watch = Arc::new(StepWatch::new());
        let worker = {
            let watch = Arc::clone(&watch);
            thread::spawn(move || {
                watch.begin(1, a);
                watch.end(2);
                watch.begin(3, b);
                watch.end(4);
            })
        };
        let mut last = 0;
        for _ in 0..3 {
            let (seq, pid) = watch.sample();
            assert!(seq >= last && seq <= 4, "sequence {seq} after {last}");
            last = seq;
            match (seq, pid) {
                (_, None) => {}
                (1, Some(pid)) => assert_eq!(pid, a, "step 1 sampled with another PID"),
                (3, Some(pid)) => assert_eq!(pid, b, "step 3 sampled with another PID"),
                (seq, Some(pid)) => panic!("PID {pid} with even sequence {seq}"),
            }
        }
        worker.join().unwrap();
        assert_eq!(watch.sample(), (4, None));
    });
}
