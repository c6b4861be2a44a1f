//! A tour of stepsched: a small service in a few seconds.
//!
//! ```text
//! cargo run --release --example tour          # 10,000 sessions
//! cargo run --release --example tour -- 0.1   # a tenth of the sessions
//! ```
//!
//! What runs, all as kinds of one process type ([`Node`], a `kinds!` enum)
//! on one scheduler:
//!
//! - a **supervisor** (`stepsched::supervisor::Supervisor`, one of the
//!   kinds) starts a **counter** and 4 **routers**, in that order, each
//!   registered under its name (`counter`, `router-0`..) as it is spawned
//!   (`ChildSpec::name`). Each traps exits.
//! - **sessions** (10,000, submitted from the main thread once the names
//!   are taken). Each makes 60 requests, one after another. A request is
//!   a call (`StepOutput::call`, with a timeout) to its router, found by
//!   name (`StepOutput::whereis`); the router answers with
//!   `StepOutput::reply`, and the session gets one `Event::Reply`. With
//!   the reply in hand the session yields a command: a `cache` lookup,
//!   which its handler completes inline on the worker, or an `io` read,
//!   which its handler passes to an **io thread** (a plain `std` thread)
//!   that completes it 0.1–0.9 ms later from there; a few reads fail, as
//!   devices do. Now and then a session spawns a **job** (a child,
//!   `StepOutput::spawn_kind`) that computes for a few steps
//!   (`Status::Continue`) and messages its result back. One request in 20
//!   the session first "thinks" for 1 ms: it sleeps on a timer
//!   (`StepOutput::wake_after`), no thread held. Cache lookups are yielded
//!   with a 1 s timeout (`yield_command_timeout`), which the inline
//!   completion always beats: each timeout is set, then cancelled.
//! - routers count what they route and report it in batches to the
//!   counter, by name. When the sessions are done, main sends the
//!   supervisor an exit (`Scheduler::exit`, `ExitReason::Shutdown`); the
//!   supervisor stops its children in reverse start order, so each router sends its
//!   last batch and ends before the counter is stopped and ends with the
//!   sum.
//!
//! The counts are deterministic: the run ends by checking every one of
//! them (and that nothing was undelivered), so nothing can be lost
//! quietly. It prints what ran, throughput, latency percentiles (step
//! time and schedule latency from the scheduler's own figures,
//! `Builder::record_latency`; a call's round trip and an io command's
//! latency measured by the sessions), the processes and steps of each
//! kind (`Builder::count_kinds`), the scheduler's counters and its
//! shutdown report.
//!
//! The files: this one holds the plan (which request does what) and
//! `main`; `nodes.rs` the process type and its kinds; `io.rs` the io
//! thread; `measure.rs` what the sessions measure.

use std::hint::black_box;
use std::iter;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{ExitReason, Pid, ProcessError};
use stepsched::sched::{Scheduler, ShutdownReport, Stats};
use stepsched::supervisor::{ChildSpec, Strategy, Supervisor, SupervisorSpec};

use io::{io_thread, IoRequest};
use measure::{rate, row, snapshot, IO_LATENCY, REQUEST_RTT};
use nodes::{Cmd, Counter, Node, Router, Session, Tally};

mod io;
mod measure;
mod nodes;

const SESSIONS: u32 = 10_000;
const REQUESTS: u32 = 60;
const ROUTERS: u32 = 4;
/// The names the supervised servers take.
const COUNTER: &str = "counter";
const ROUTER_NAMES: [&str; ROUTERS as usize] = ["router-0", "router-1", "router-2", "router-3"];
/// A router reports to the counter every this many requests.
const TALLY_EVERY: u64 = 64;
/// How long a session's call waits for its router's reply: far longer
/// than any reply takes, so a call that times out fails the run.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Steps of computing a job takes (each returns `Status::Continue`).
const JOB_STEPS: u32 = 4;
/// Rounds of [`work`] a step does: a stand-in for parsing and logic.
const WORK: u32 = 1_000;

// ---------------------------------------------------------------------------
// The plan: which request does what. Pure functions, so that `main` can
// compute the expected counts the processes must report.

fn uses_io(session: u32, request: u32) -> bool {
    (session + request) % 3 == 0
}

fn io_fails(session: u32, request: u32) -> bool {
    uses_io(session, request) && (session * 7 + request) % 101 == 0
}

/// Whether the session sleeps 1 ms before sending request `request`.
fn thinks(session: u32, request: u32) -> bool {
    request > 0 && (session + request) % 20 == 7
}

fn spawns_job(session: u32, request: u32) -> bool {
    session % 5 == 0 && request % 10 == 9
}

/// A simulated device latency for an io read, 100–900 µs.
fn io_delay(key: u64) -> Duration {
    Duration::from_micros(100 + (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 800)
}

/// Some deterministic CPU work (xorshift rounds).
fn work(seed: u64, rounds: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

// ---------------------------------------------------------------------------

/// The totals of every finished process (or the first failure), and a
/// signal for the main thread once the sessions are done.
struct Totals {
    tally: Mutex<(Tally, Option<String>)>,
    changed: Condvar,
    /// The supervisor, whose end `main` judges (it joins it).
    supervisor: OnceLock<Pid>,
}

impl Totals {
    /// Waits until `done` holds for the totals, or panics on a failure or
    /// after two minutes.
    fn wait_for(&self, what: &str, done: impl Fn(&Tally) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut tally = self.tally.lock().unwrap();
        while !done(&tally.0) {
            if let Some(failure) = &tally.1 {
                panic!("{failure}");
            }
            assert!(Instant::now() < deadline, "{what} stuck: {:?}", tally.0);
            tally = self
                .changed
                .wait_timeout(tally, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }
}

/// The supervised part of the service: the counter first, then the
/// routers, each restarted if it fails (`OneForOne`) and stopped in
/// reverse order.
fn service() -> SupervisorSpec<Node> {
    // Each child registered under its name at every spawn (a restart
    // takes the name again).
    let counter = ChildSpec::new(COUNTER, || (Counter::default(), ())).name(COUNTER);
    let routers = ROUTER_NAMES
        .iter()
        .enumerate()
        .map(|(i, &name)| ChildSpec::new(name, move || (Router::default(), i)).name(name));
    iter::once(counter).chain(routers).fold(
        SupervisorSpec::new(Strategy::OneForOne),
        SupervisorSpec::child,
    )
}

fn main() {
    let scale: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |s| s.parse().expect("a scale factor"));
    let sessions = ((f64::from(SESSIONS) * scale) as u32).max(ROUTERS);

    // The handlers: `cache` completes inline, `io` hands off to the io thread.
    let (io_tx, io_rx) = mpsc::channel();
    let io = thread::Builder::new()
        .name("io".into())
        .spawn(move || io_thread(io_rx))
        .expect("io thread");
    let to_io = io_tx.clone();
    let totals = Arc::new(Totals {
        tally: Mutex::new((Tally::default(), None)),
        changed: Condvar::new(),
        supervisor: OnceLock::new(),
    });
    let hook_totals = Arc::clone(&totals);
    let scheduler = Scheduler::<Node>::builder()
        // Step time and schedule latency, per worker; processes and steps
        // per kind.
        .record_latency(true)
        .count_kinds(true)
        .handler("cache", |cmd, completer| {
            let Cmd::Cache { key } = cmd else {
                unreachable!("kind names the variant")
            };
            let _ = completer.succeed(work(key, 8)); // inline, on the worker
        })
        .handler("io", move |cmd, completer| {
            let Cmd::Io { key, fail } = cmd else {
                unreachable!("kind names the variant")
            };
            to_io
                .send(IoRequest::Read {
                    key,
                    fail,
                    completer,
                })
                .expect("io thread runs");
        })
        // Runs on the worker as each process ends: keep it short.
        .on_complete(move |pid, outcome| {
            if hook_totals.supervisor.get() == Some(&pid) {
                return;
            }
            let mut totals = hook_totals.tally.lock().unwrap();
            match outcome {
                Ok(tally) => totals.0.add(tally),
                Err(e) => {
                    totals
                        .1
                        .get_or_insert_with(|| format!("process {pid:?}: {e}"));
                }
            }
            if totals.0.sessions == u64::from(sessions) || totals.1.is_some() {
                hook_totals.changed.notify_all();
            }
        })
        .build()
        .expect("worker threads start");
    let workers = scheduler.workers();
    println!(
        "stepsched tour: {sessions} sessions x {REQUESTS} requests; a supervisor of 1 counter and \
         {ROUTERS} routers; an io thread; {workers} workers\n"
    );

    // The service, then the sessions once its names are taken: the
    // supervisor starts its children, named, in its first step.
    let start = Instant::now();
    let supervisor = scheduler
        .submit_kind_joinable(Supervisor::new(), service())
        .expect("submit");
    let _ = totals.supervisor.set(supervisor.pid());
    let deadline = Instant::now() + Duration::from_secs(10);
    while iter::once(COUNTER)
        .chain(ROUTER_NAMES)
        .any(|name| scheduler.whereis(name).is_none())
    {
        assert!(
            Instant::now() < deadline,
            "names: {:?}",
            scheduler.registered()
        );
        thread::sleep(Duration::from_micros(100));
    }
    for id in 0..sessions {
        scheduler
            .submit_kind(Session::default(), id)
            .expect("submit");
    }

    // Wait for the sessions, then stop the service, in order.
    totals.wait_for("sessions", |t| t.sessions == u64::from(sessions));
    scheduler
        .exit(supervisor.pid(), ExitReason::Shutdown)
        .expect("the supervisor is live");
    let Ok(supervisor) = supervisor.join_timeout(Duration::from_secs(60)) else {
        panic!("the supervisor did not stop:\n{}", scheduler.stats());
    };
    // A job's completion hook may still run after its parent finished; the
    // The 1 is the counter.
    totals.wait_for("jobs", |t| {
        t.processes == t.sessions + t.jobs + u64::from(ROUTERS) + 1
    });
    let elapsed = start.elapsed();
    io_tx.send(IoRequest::Stop).expect("io thread runs");
    let io_completed = io.join().expect("io thread");
    let stats = scheduler.stats();
    let report = scheduler.shutdown(Duration::from_secs(1));
    let (tally, failure) = totals.tally.lock().unwrap().clone();
    assert_eq!(failure, None, "every process finished with its output");

    print_summary(&tally, &stats, &report, elapsed);
    println!(
        "\nsupervisor: stopped the routers (last started, first stopped), then the counter, and \
         ended, told to stop by `Scheduler::exit`: {supervisor:?}"
    );
    check(sessions, &tally, &stats, &report, io_completed);
    assert!(
        matches!(supervisor, Err(ProcessError::Terminated)),
        "the supervisor's end"
    );
    println!("\nall counts check out");
}

fn print_summary(tally: &Tally, stats: &Stats, report: &ShutdownReport, elapsed: Duration) {
    let steps = stats.total().steps;
    let commands = tally.cache + tally.io;
    println!("ran");
    println!(
        "  {} sessions and the {} jobs they spawned; a counter and {ROUTERS} routers under a \
         supervisor: {} processes with an output",
        tally.sessions, tally.jobs, tally.processes
    );
    println!(
        "  {} calls from sessions to routers found by name; {} requests routed; {} messages \
         between processes (requests, replies, job results, tallies)",
        tally.requests, tally.routed, tally.messages
    );
    println!(
        "  {commands} commands: {} cache (completed inline), {} io (completed by the io thread, \
         {} of them failed)",
        tally.cache, tally.io, tally.io_errors
    );
    println!(
        "  {steps} steps; workers busy in steps {:.2} s of {} x {:.2} s",
        stats.total().busy.as_secs_f64(),
        stats.workers.len(),
        elapsed.as_secs_f64()
    );
    println!(
        "  {} sleeps of 1 ms on a timer; timers fired {}, cancelled {} (the cache lookups' 1 s \
         and the calls' {} s timeouts, beaten by their answers, and the supervisor's 5 s stop \
         timers), late {}",
        tally.sleeps,
        stats.timers.fired,
        stats.timers.cancelled,
        CALL_TIMEOUT.as_secs(),
        stats.timers.late
    );
    println!();
    println!(
        "throughput over {:.2} s end to end (first submit to the counter's result)",
        elapsed.as_secs_f64()
    );
    println!(
        "  steps {}   messages {}   commands {}   requests {}",
        rate(steps, elapsed),
        rate(tally.messages, elapsed),
        rate(commands, elapsed),
        rate(tally.requests, elapsed)
    );
    println!();
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9}  (all sessions are live at once and the workers \
         saturated: latencies include queueing behind ready processes)",
        "latency", "p50", "p90", "p99", "max"
    );
    let rows = [
        (
            "step",
            stats.step_latency(),
            "wall time inside Process::step, every step (the scheduler's)",
        ),
        (
            "schedule",
            stats.schedule_latency(),
            "made Ready -> its step starts, every step (the scheduler's)",
        ),
        (
            "request",
            snapshot(&REQUEST_RTT),
            "a session's call -> its step that sees the Event::Reply",
        ),
        (
            "io command",
            snapshot(&IO_LATENCY),
            "yield -> the step that sees the completion (device delay 0.1-0.9 ms)",
        ),
    ];
    for (name, histogram, what) in rows {
        println!("{}", row(name, &histogram, what));
    }
    println!();
    println!("{:<14} {:>9} {:>11}", "kind", "started", "steps");
    for kind in &stats.kinds {
        println!("  {:<12} {:>9} {:>11}", kind.name, kind.started, kind.steps);
    }
    println!();
    println!("scheduler stats (before shutdown)");
    println!("{stats}");
    println!();
    println!("shutdown: {report:?}");
}

/// Every count, against the plan.
fn check(sessions: u32, tally: &Tally, stats: &Stats, report: &ShutdownReport, io_completed: u64) {
    let mut expected = Tally {
        sessions: u64::from(sessions),
        ..Tally::default()
    };
    let mut per_router = [0u64; ROUTERS as usize];
    for s in 0..sessions {
        for r in 0..REQUESTS {
            expected.requests += 1;
            per_router[(s % ROUTERS) as usize] += 1;
            if uses_io(s, r) {
                expected.io += 1;
                expected.io_errors += u64::from(io_fails(s, r));
            } else {
                expected.cache += 1;
            }
            if spawns_job(s, r) {
                expected.jobs += 1;
            }
            expected.sleeps += u64::from(thinks(s, r));
        }
    }
    expected.routed = expected.requests;
    expected.counted = expected.requests;
    // Sessions, jobs, routers and the counter.
    expected.processes = expected.sessions + expected.jobs + u64::from(ROUTERS) + 1;
    let tallies: u64 = per_router.iter().map(|n| n / TALLY_EVERY + 1).sum();
    // Request and reply per request, a result per job, the routers' tallies.
    expected.messages = 2 * expected.requests + expected.jobs + tallies;
    assert_eq!(*tally, expected, "counts against the plan");
    assert_eq!(io_completed, expected.io, "reads the io thread completed");

    // The scheduler's own counts: the supervisor has no output, and the
    // counter and the routers are its children, not submitted.
    assert_eq!(
        stats.completed,
        expected.processes + 1,
        "processes that ended"
    );
    assert_eq!(
        stats.submitted,
        expected.sessions + 1,
        "submitted from main: the sessions and the supervisor"
    );
    let started: Vec<_> = stats.kinds.iter().map(|k| (k.name, k.started)).collect();
    let kinds = [
        ("Sup", 1),
        ("Session", expected.sessions),
        ("Router", u64::from(ROUTERS)),
        ("Counter", 1),
        ("Job", expected.jobs),
    ];
    assert_eq!(started, kinds, "processes started per kind");
    assert!(stats.kinds.iter().all(|k| k.live == 0), "none left");
    let steps = stats.total().steps;
    let job_steps = stats
        .kinds
        .iter()
        .find(|k| k.name == "Job")
        .map(|k| k.steps);
    assert_eq!(job_steps, Some(expected.jobs * u64::from(JOB_STEPS + 1)));
    assert_eq!(stats.kinds.iter().map(|k| k.steps).sum::<u64>(), steps);
    assert_eq!(stats.step_latency().count(), steps, "every step timed");
    // The timers: every sleep fired; every timeout was cancelled by the
    // answer that beat it, and the supervisor's stop timers (one per child,
    // `Shutdown::Timeout`) by its end.
    assert_eq!(stats.timers.fired, expected.sleeps, "timers fired");
    let children = u64::from(ROUTERS) + 1;
    assert_eq!(
        stats.timers.cancelled,
        expected.cache + expected.requests + children,
        "timers cancelled"
    );
    assert_eq!(
        (stats.live, stats.undelivered, stats.unknown_tags),
        (0, 0, 0)
    );
    assert_eq!(report.cancelled + report.forced + report.stuck, 0);
}
