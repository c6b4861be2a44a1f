//! The long-step monitor: a thread that notices a step running too long
//! (Go's `sysmon`), reports it, asks it to yield, and gets the work queued
//! behind it stolen.
//!
//! # Steps cannot be preempted
//!
//! A step is a plain Rust call on a worker thread; nothing can interrupt it
//! safely (Go 1.14 preempts goroutines with signals because its compiler
//! records where a goroutine may stop; Rust code offers no such points). A
//! step that runs for 50 ms holds its worker for 50 ms. What the scheduler
//! can do, and this module does:
//!
//! 1. **Report it.** The callback given to
//!    [`Builder::long_step_monitor`](crate::sched::Builder::long_step_monitor)
//!    receives a [`LongStep`] (PID, worker, elapsed time) once per step that
//!    runs longer than the threshold.
//! 2. **Ask it to yield** (cooperative preemption, as Go did before 1.14):
//!    the monitor raises a preemption request for that step, which the step
//!    reads with [`StepOutput::should_yield`](crate::process::StepOutput::should_yield)
//!    (one Relaxed load) and answers by saving its progress and returning
//!    [`Status::Continue`](crate::process::Status::Continue). A long
//!    computation written as a loop that polls `should_yield` every so often
//!    never holds a worker much longer than the threshold.
//! 3. **Free the work behind it.** While the step overruns, every tick in
//!    which the stuck worker's deque or inject queue holds work wakes a
//!    parked worker if none is spinning, so that the work is stolen
//!    (docs/ARCHITECTURE.md, trap 6: a long step). Processes in the stuck
//!    worker's private `runnext`
//!    slot and *continue* FIFO cannot be stolen; they wait for the step.
//!
//! # What a worker pays
//!
//! When a monitor runs, each worker publishes its step in a [`StepWatch`] on
//! a cache line of its own: at the start of a step it stores the PID and an
//! odd step sequence number, at the end the next (even) number — three
//! plain stores (`mov` on x86_64; Release costs nothing there) to a line
//! only it writes. It reads no clock. Without a monitor it skips them (one
//! predictable branch on a configuration flag). The monitor reads them as a
//! seqlock (number, PID, number again), so a PID it reports is the PID of
//! the step it timed; the orderings that promise this are argued in
//! `watch.rs` and checked by the loom model `loom-tests/tests/watch.rs`.
//! The monitor keeps the time itself, like `sysmon`: it samples each
//! worker's sequence every `period` (threshold / 4, at least 1 ms) and
//! remembers when it first saw each odd value; a value still current
//! `threshold` later is a long step. So the
//! reported `elapsed` is a lower bound: the step began up to one period
//! before the monitor first saw it. Its reads pull the line into the shared
//! state once per period, which costs the worker one cache miss per period.
//!
//! A preemption request names the step it is for (the monitor stores the
//! step's sequence number into `preempt`; `should_yield` compares it with
//! its own), so a request that lands just after its step ended is ignored
//! by the next step and no one has to clear it.

use crate::process::{Pid, Process};
use crate::sched::observe::watch::StepWatch;
use crate::sched::shared::Shared;
use crate::sync::{Condvar, Mutex};
use core::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default threshold of the long-step monitor: 10 ms, Go's `sysmon`
/// preemption threshold (`forcePreemptNS`).
pub const DEFAULT_LONG_STEP_THRESHOLD: Duration = Duration::from_millis(10);

/// A step that has run longer than the monitor's threshold, as passed to the
/// callback of [`Builder::long_step_monitor`](crate::sched::Builder::long_step_monitor).
///
/// Non-exhaustive: details may be added in a minor release, so it is read
/// field by field, not built or destructured whole outside this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongStep {
    /// The process whose step it is.
    pub pid: Pid,
    /// The index of the worker running it.
    pub worker: usize,
    /// How long the step had run when the monitor noticed, at least (the
    /// step began up to one monitor period earlier).
    pub elapsed: Duration,
}

/// The callback of the long-step monitor.
pub(crate) type LongStepHook = Box<dyn Fn(LongStep) + Send + Sync>;

/// The monitor's settings, from the builder.
pub(crate) struct MonitorConfig {
    pub(crate) threshold: Duration,
    pub(crate) on_long_step: LongStepHook,
}

impl MonitorConfig {
    /// How often the monitor samples: a quarter of the threshold, so a long
    /// step is noticed at most 25 % late, and at least 1 ms, so a tiny
    /// threshold does not turn the monitor into a spinning thread.
    pub(crate) fn period(&self) -> Duration {
        (self.threshold / 4).max(Duration::from_millis(1))
    }
}

/// What the monitor remembers about one worker between ticks.
#[derive(Clone, Copy)]
struct Seen {
    seq: u64,
    /// When this `seq` was first observed.
    since: Instant,
    reported: bool,
}

/// The stop signal the scheduler gives its monitor.
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// The running monitor thread; [`Monitor::stop`] ends and joins it.
pub(crate) struct Monitor {
    stop: Arc<Stop>,
    thread: JoinHandle<()>,
}

impl Monitor {
    /// Starts the monitor thread over `shared`'s workers.
    pub(crate) fn start<P: Process>(
        shared: Arc<Shared<P>>,
        config: MonitorConfig,
    ) -> std::io::Result<Monitor> {
        let stop = Arc::new(Stop {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("stepsched-monitor".to_owned())
            .spawn(move || run(&shared, &config, &signal))?;
        Ok(Monitor { stop, thread })
    }

    /// Stops the monitor and waits for its thread to end.
    pub(crate) fn stop(self) {
        *self.stop.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.wake.notify_all();
        // The thread catches the callback's panics; nothing else panics.
        let _ = self.thread.join();
    }
}

impl fmt::Debug for Monitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Monitor").finish_non_exhaustive()
    }
}

/// The monitor thread's body: sample every worker each period until
/// stopped.
fn run<P: Process>(shared: &Shared<P>, config: &MonitorConfig, stop: &Stop) {
    let period = config.period();
    let start = Instant::now();
    let mut seen = vec![
        Seen {
            seq: 0,
            since: start,
            reported: false,
        };
        shared.core.remotes.len()
    ];
    loop {
        {
            let stopped = stop.stopped.lock().unwrap_or_else(|e| e.into_inner());
            // Checks the flag before waiting, so a stop that came while we
            // sampled is not slept through.
            let (stopped, _) = stop
                .wake
                .wait_timeout_while(stopped, period, |stopped| !*stopped)
                .unwrap_or_else(|e| e.into_inner());
            if *stopped {
                return;
            }
        } // the callback below runs without the lock: `stop` never waits on it
        let now = Instant::now();
        shared.core.clock.refresh();
        for (worker, (remote, seen)) in shared.core.remotes.iter().zip(&mut seen).enumerate() {
            let (seq, pid) = remote.watch.sample();
            if seq != seen.seq {
                *seen = Seen {
                    seq,
                    since: now,
                    reported: false,
                };
                continue;
            }
            let Some(pid) = pid else { continue };
            let elapsed = now - seen.since;
            if elapsed < config.threshold {
                continue;
            }
            if !seen.reported {
                seen.reported = true;
                remote.watch.request_yield(seq);
                let long = LongStep {
                    pid,
                    worker,
                    elapsed,
                };
                // A panicking callback must not end the monitor: the panic
                // hook has reported it; go on watching.
                let _ = catch_unwind(AssertUnwindSafe(|| (config.on_long_step)(long)));
            }
            // Work the stuck worker cannot run: get it stolen (trap 6).
            if !remote.stealer.is_empty() || !remote.inject.is_empty() {
                shared.core.idle.notify_one();
            }
        }
    }
}

/// A worker's handle on its own [`StepWatch`]: the step sequence number
/// lives in the worker, so publishing costs no load.
pub(crate) struct StepClock {
    seq: u64,
}

impl StepClock {
    pub(crate) fn new() -> Self {
        StepClock { seq: 0 }
    }

    /// Starts a step of `pid`; returns its (odd) sequence number.
    #[inline(never)]
    pub(crate) fn begin(&mut self, watch: &StepWatch, pid: Pid) -> u64 {
        self.seq += 1;
        watch.begin(self.seq, pid);
        self.seq
    }

    /// Ends the current step.
    #[inline(never)]
    pub(crate) fn end(&mut self, watch: &StepWatch) {
        self.seq += 1;
        watch.end(self.seq);
    }
}
