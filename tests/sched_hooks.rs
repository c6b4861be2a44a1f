//! Proves that a panicking hook abandons only its own call
//! (docs/ARCHITECTURE.md, trap 9: user code in a callback): for each of
//! `on_undelivered`, `on_complete`, `on_park`,
//! `on_unpark`, `on_thread_start` and `on_thread_stop`, a hook that panics
//! every time it runs leaves the scheduler whole. Each test checks that joins
//! return the outcome the process produced, that every process completes,
//! that messages still flow afterwards, that `shutdown` reports nothing
//! stuck and no timeout, that every worker thread reached its stop hook (no
//! worker died), and that `Stats::hook_panics` counts exactly the hook calls.
//!
//! A panic that unwound the worker would break each differently:
//! `on_undelivered` would leave its process Running forever (join hangs,
//! shutdown reports `stuck: 1`), `on_complete` would lose the joiner's
//! outcome, `on_park` would leave a dead worker registered as a sleeper
//! that swallows the next wakeup, `on_unpark` and `on_thread_start` would
//! kill the worker a wakeup or the pool depends on.
//!
//! ```text
//! cargo test --test sched_hooks
//! ```

mod common;
use common::{wait_until, ThreadStops};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Outcome, Pid, Process, Status, StepOutput};
use stepsched::sched::{Builder, JoinHandle, Scheduler};

/// On method "wait": finishes with the first message it receives. On any
/// other method: sends `n` to each PID of its input, then finishes with `n`.
struct Job {
    n: u64,
    to: Vec<Pid>,
    wait: bool,
}

impl Process for Job {
    type Input = (u64, Vec<Pid>);
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, method: &str, (n, to): (u64, Vec<Pid>)) -> Result<(), String> {
        (self.n, self.to, self.wait) = (n, to, method == "wait");
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if !self.wait {
            for &to in &self.to {
                out.send(to, self.n);
            }
            out.done(self.n);
            return Ok(());
        }
        match events.pop() {
            Some(Event::Message(n)) => out.done(n),
            Some(other) => return Err(format!("unexpected {other:?}")),
            None => out.set_status(Status::Idle),
        }
        Ok(())
    }
}

fn job() -> Job {
    Job {
        n: 0,
        to: Vec::new(),
        wait: false,
    }
}

/// Counts the calls of a hook that panics every time it runs.
#[derive(Clone, Default)]
struct Panicky(Arc<AtomicUsize>);

impl Panicky {
    fn hit(&self, hook: &str) -> ! {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("{hook} hook fails on purpose");
    }

    fn calls(&self) -> u64 {
        self.0.load(Ordering::SeqCst) as u64
    }
}

/// Joins with a 60 s bound: a liveness guard that turns a lost outcome into
/// a failure, not a timing claim.
fn join(handle: JoinHandle<Job>, what: &str) -> Outcome<Job> {
    match handle.join_timeout(Duration::from_secs(60)) {
        Ok(outcome) => outcome,
        Err(_) => panic!("{what}: join hung (the outcome was lost)"),
    }
}

fn builder(stops: &ThreadStops) -> Builder<Job> {
    // A hook that panics prints through the panic hook of `std`; that is
    // expected noise in this file's output.
    Scheduler::<Job>::builder()
        .workers(2)
        .on_thread_stop(stops.hook())
}

/// Runs `n` processes that finish with their index, and checks each join.
fn run_jobs(scheduler: &Scheduler<Job>, n: u64, what: &str) {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            scheduler
                .submit_joinable(job(), "run", (i, Vec::new()))
                .unwrap()
        })
        .collect();
    for (i, handle) in (0..n).zip(handles) {
        assert_eq!(join(handle, what), Ok(i), "{what}: process {i}");
    }
}

/// A message sent from a step and one sent from outside both reach their
/// waiting processes.
fn messages_flow(scheduler: &Scheduler<Job>, what: &str) {
    let waiter = (scheduler.submit_joinable(job(), "wait", (0, Vec::new()))).unwrap();
    let outside = (scheduler.submit_joinable(job(), "wait", (0, Vec::new()))).unwrap();
    let sender = scheduler.submit_joinable(job(), "run", (41, vec![waiter.pid()]));
    scheduler.send(outside.pid(), 42).unwrap();
    assert_eq!(join(sender.unwrap(), what), Ok(41), "{what}: sender");
    assert_eq!(join(waiter, what), Ok(41), "{what}: message from a step");
    assert_eq!(join(outside, what), Ok(42), "{what}: message from outside");
}

/// Shuts down and checks the report, that both workers stopped normally and
/// that nothing is left live.
fn shutdown_cleanly(scheduler: &Scheduler<Job>, stops: &ThreadStops, what: &str) {
    let report = scheduler.shutdown(Duration::from_secs(60));
    assert_eq!(report.stuck, 0, "{what}: {report:?}");
    assert!(!report.timed_out, "{what}: {report:?}");
    assert_eq!(scheduler.live(), 0, "{what}");
    assert_eq!(stops.sorted(), [0, 1], "{what}: a worker thread died");
}

#[test]
fn a_panicking_on_undelivered_hook_loses_no_process_and_stops_no_worker() {
    const N: u64 = 200;
    let stops = ThreadStops::default();
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        builder(&stops)
            .on_undelivered(move |_, _| hook.hit("on_undelivered"))
            .build()
            .unwrap()
    };
    // A finished process: sends to it from a step are refused and reported
    // to `on_undelivered` by the worker, between the step and its end.
    let gone = scheduler.submit_joinable(job(), "run", (0, Vec::new()));
    let gone = gone.unwrap();
    let dead = gone.pid();
    assert_eq!(join(gone, "first"), Ok(0));
    // Each sends to the finished process and to a waiting one: the live
    // message goes to the sender's `runnext` slot, which a worker unwound by
    // the hook would lose.
    let handles: Vec<_> = (0..N)
        .map(|i| {
            let waiter = (scheduler.submit_joinable(job(), "wait", (0, Vec::new()))).unwrap();
            let to = vec![dead, waiter.pid()];
            let sender = scheduler.submit_joinable(job(), "run", (i, to)).unwrap();
            (i, sender, waiter)
        })
        .collect();
    for (i, sender, waiter) in handles {
        assert_eq!(join(sender, "sender"), Ok(i), "sender {i}");
        assert_eq!(join(waiter, "waiter"), Ok(i), "waiter {i}");
    }
    messages_flow(&scheduler, "after on_undelivered panics");
    shutdown_cleanly(&scheduler, &stops, "on_undelivered");
    let stats = scheduler.stats();
    assert_eq!(hook.calls(), N, "one undelivered message per sender");
    assert_eq!(stats.undelivered, N);
    assert_eq!(stats.hook_panics, hook.calls());
}

#[test]
fn a_panicking_on_complete_hook_still_hands_every_joiner_its_outcome() {
    const N: u64 = 500;
    let stops = ThreadStops::default();
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        builder(&stops)
            .on_complete(move |_, _| hook.hit("on_complete"))
            .build()
            .unwrap()
    };
    run_jobs(&scheduler, N, "on_complete panics");
    messages_flow(&scheduler, "after on_complete panics");
    shutdown_cleanly(&scheduler, &stops, "on_complete");
    // N jobs and the three of `messages_flow`, each completed once.
    assert_eq!(hook.calls(), N + 3);
    let stats = scheduler.stats();
    assert_eq!(stats.completed, N + 3);
    assert_eq!(stats.hook_panics, N + 3);
}

/// Waits until both workers are parked (so that the next submit must wake
/// one), then runs a few processes; repeated, so that every worker parks and
/// is woken many times with the hook panicking each time.
fn park_and_wake_rounds(scheduler: &Scheduler<Job>, what: &str) {
    for round in 0..20 {
        wait_until("both workers to park", || scheduler.stats().sleeping == 2);
        run_jobs(scheduler, 3, &format!("{what}, round {round}"));
    }
}

#[test]
fn a_panicking_on_park_hook_swallows_no_wakeup() {
    let stops = ThreadStops::default();
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        builder(&stops)
            .on_park(move |_| hook.hit("on_park"))
            .build()
            .unwrap()
    };
    park_and_wake_rounds(&scheduler, "on_park panics");
    // Work submitted later, from outside and from a step, still gets done:
    // no dead worker sits on the sleepers list.
    messages_flow(&scheduler, "after on_park panics");
    shutdown_cleanly(&scheduler, &stops, "on_park");
    let stats = scheduler.stats();
    assert!(stats.total().parks >= 20, "{stats}");
    assert!(hook.calls() >= stats.total().parks);
    assert_eq!(stats.hook_panics, hook.calls());
    assert_eq!(stats.sleeping, 0, "the sleepers list is empty after exit");
}

#[test]
fn a_panicking_on_unpark_hook_stops_no_woken_worker() {
    let stops = ThreadStops::default();
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        builder(&stops)
            .on_unpark(move |_| hook.hit("on_unpark"))
            .build()
            .unwrap()
    };
    park_and_wake_rounds(&scheduler, "on_unpark panics");
    messages_flow(&scheduler, "after on_unpark panics");
    shutdown_cleanly(&scheduler, &stops, "on_unpark");
    let stats = scheduler.stats();
    assert!(stats.total().wakeups >= 20, "{stats}");
    assert!(hook.calls() >= stats.total().wakeups);
    assert_eq!(stats.hook_panics, hook.calls());
}

#[test]
fn a_panicking_on_thread_start_hook_still_starts_every_worker() {
    let stops = ThreadStops::default();
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        builder(&stops)
            .on_thread_start(move |_| hook.hit("on_thread_start"))
            .build()
            .unwrap()
    };
    run_jobs(&scheduler, 100, "on_thread_start panicked");
    messages_flow(&scheduler, "after on_thread_start panics");
    shutdown_cleanly(&scheduler, &stops, "on_thread_start");
    assert_eq!(hook.calls(), 2, "once per worker");
    assert_eq!(scheduler.stats().hook_panics, 2);
}

#[test]
fn a_panicking_on_thread_stop_hook_is_counted_and_shutdown_completes() {
    let hook = Panicky::default();
    let scheduler = {
        let hook = hook.clone();
        Scheduler::<Job>::builder()
            .workers(2)
            .on_thread_stop(move |_| hook.hit("on_thread_stop"))
            .build()
            .unwrap()
    };
    run_jobs(&scheduler, 100, "before the stop");
    messages_flow(&scheduler, "before the stop");
    let report = scheduler.shutdown(Duration::from_secs(60));
    assert_eq!((report.stuck, report.timed_out), (0, false), "{report:?}");
    assert_eq!(hook.calls(), 2, "once per worker");
    // Counted before the worker thread exits, and the thread is joined
    // before `shutdown` returns.
    assert_eq!(scheduler.stats().hook_panics, 2);
}
