//! A tour of stepsched: a small service in a few seconds.
//!
//! ```text
//! cargo run --release --example tour          # 10,000 sessions
//! cargo run --release --example tour -- 0.1   # a tenth of the sessions
//! ```
//!
//! What runs, all as processes of one type ([`Node`]) on one scheduler:
//!
//! - **sessions** (10,000, submitted from the main thread). Each makes 60
//!   requests, one after another. A request is a message to a **router**
//!   (4); the router replies. With the reply in hand the session yields a
//!   command: a `cache` lookup, which its handler completes inline on the
//!   worker, or an `io` read, which its handler passes to an **io thread**
//!   (a plain `std` thread) that completes it 0.1–0.9 ms later from there; a
//!   few reads fail, as devices do. Now and then a session spawns a **job**
//!   (a child process, `StepOutput::spawn`) that computes for a few steps
//!   (`Status::Continue`) and messages its result back. One request in 20
//!   the session first "thinks" for 1 ms: it sleeps on a timer
//!   (`StepOutput::wake_after`), no thread held. Cache lookups are yielded
//!   with a 1 s timeout (`yield_command_timeout`), which the inline
//!   completion always beats: each timeout is set, then cancelled.
//! - **routers** count what they route and report it in batches to a
//!   **counter**, which adds everything up when the routers stop.
//!
//! The counts are deterministic: the run ends by checking every one of
//! them (and that nothing was undelivered), so nothing can be lost quietly.
//! It prints what ran, throughput, latency percentiles, the longest a
//! ready process waited for a worker and the mailbox high-water mark
//! (both sampled with `Scheduler::processes`, every 10 ms), the scheduler's
//! counters and its shutdown report.
//!
//! The files: this one holds the plan (which request does what) and
//! `main`; `nodes.rs` the process type and its four roles; `io.rs` the io
//! thread; `measure.rs` the latency histograms and the ready-wait sampling.

use std::hint::black_box;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::sched::Scheduler;

use io::{io_thread, IoRequest};
use measure::{rate, ReadyWait, DUMP_EVERY, IO_LATENCY, REQUEST_RTT, STEP_TIME};
use nodes::{Cmd, Counter, Msg, Node, Router, Session, Tally};

mod io;
mod measure;
mod nodes;

const SESSIONS: u32 = 10_000;
const REQUESTS: u32 = 60;
const ROUTERS: u32 = 4;
/// A router reports to the counter every this many requests.
const TALLY_EVERY: u64 = 64;
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
    });
    let hook_totals = Arc::clone(&totals);
    let scheduler = Scheduler::<Node>::builder()
        // For the mailbox high-water mark (see `ReadyWait`).
        .count_queued_events(true)
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
        "stepsched tour: {sessions} sessions x {REQUESTS} requests, {ROUTERS} routers, 1 counter, \
         an io thread; {workers} workers\n"
    );

    // The long-lived processes, then the sessions.
    let start = Instant::now();
    let counter = Node::Counter(Counter {
        counted: 0,
        routers_done: 0,
    });
    let counter = scheduler
        .submit_joinable(counter, "counter", ())
        .expect("submit");
    let routers: Vec<_> = (0..ROUTERS)
        .map(|_| {
            let router = Node::Router(Router {
                counter: counter.pid(),
                routed: 0,
                messages: 0,
            });
            scheduler
                .submit_joinable(router, "router", ())
                .expect("submit")
        })
        .collect();
    for id in 0..sessions {
        let session = Node::Session(Session::new(id, routers[(id % ROUTERS) as usize].pid()));
        scheduler.submit(session, "session", ()).expect("submit");
    }

    // Wait for the sessions, then stop the routers; the counter follows.
    let mut ready_wait = ReadyWait::default();
    let mut wait_for = |what: &str, done: &dyn Fn(&Tally) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut tally = totals.tally.lock().unwrap();
        while !done(&tally.0) {
            if let Some(failure) = &tally.1 {
                panic!("{failure}");
            }
            assert!(
                Instant::now() < deadline,
                "{what} stuck: {tally:?}\n{}",
                scheduler.stats()
            );
            tally = totals.changed.wait_timeout(tally, DUMP_EVERY).unwrap().0;
            // Not under the lock: the completion hook takes it.
            drop(tally);
            ready_wait.sample(&scheduler);
            tally = totals.tally.lock().unwrap();
        }
    };
    wait_for("sessions", &|t| t.sessions == u64::from(sessions));
    for router in &routers {
        scheduler
            .send(router.pid(), Msg::Stop)
            .expect("router alive");
    }
    for router in routers {
        router.join().expect("router");
    }
    counter.join().expect("counter");
    // A job's completion hook may still run after its parent finished.
    wait_for("jobs", &|t| {
        t.processes == t.sessions + t.jobs + u64::from(ROUTERS) + 1
    });
    let elapsed = start.elapsed();
    io_tx.send(IoRequest::Stop).expect("io thread runs");
    let io_completed = io.join().expect("io thread");
    let stats = scheduler.stats();
    let report = scheduler.shutdown(Duration::from_secs(1));
    let (tally, failure) = totals.tally.lock().unwrap().clone();

    // What ran.
    let steps = stats.total().steps;
    let commands = tally.cache + tally.io;
    println!("ran");
    println!(
        "  {} sessions, {} routers, 1 counter, {} jobs spawned by sessions: {} processes",
        tally.sessions, ROUTERS, tally.jobs, tally.processes
    );
    println!(
        "  {} requests routed; {} messages between processes (+{ROUTERS} stops from main)",
        tally.routed, tally.messages
    );
    println!(
        "  {commands} commands: {} cache (completed inline), {} io (completed by the io thread, \
         {} of them failed)",
        tally.cache, tally.io, tally.io_errors
    );
    println!("  {steps} steps, {} in jobs", tally.job_steps);
    println!(
        "  {} sleeps of 1 ms on a timer; timers fired {}, cancelled {} (the cache lookups' \
         1 s timeouts), late {}",
        tally.sleeps, stats.timers.fired, stats.timers.cancelled, stats.timers.late
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
    println!(
        "{}",
        STEP_TIME.row("step", "wall time inside Process::step, every step")
    );
    println!(
        "{}",
        REQUEST_RTT.row(
            "request",
            "session -> router -> the session's step that sees the reply"
        )
    );
    println!(
        "{}",
        IO_LATENCY.row(
            "io command",
            "yield -> the step that sees the completion (device delay 0.1-0.9 ms)"
        )
    );
    println!("{}", ready_wait.row());
    println!();
    println!("scheduler stats (before shutdown)");
    println!("{stats}");
    println!();
    println!("shutdown: {report:?}");

    // Every count, against the plan.
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
    expected.job_steps = expected.jobs * u64::from(JOB_STEPS + 1);
    expected.processes = expected.sessions + expected.jobs + u64::from(ROUTERS) + 1;
    let tallies: u64 = per_router.iter().map(|n| n / TALLY_EVERY + 1).sum();
    // Request and reply per request, a result per job, the routers' tallies.
    expected.messages = 2 * expected.requests + expected.jobs + tallies;
    assert_eq!(failure, None, "every process finished with its output");
    assert_eq!(tally, expected, "counts against the plan");
    assert_eq!(io_completed, expected.io, "reads the io thread completed");
    assert_eq!(stats.completed, expected.processes, "processes that ended");
    assert_eq!(
        stats.submitted,
        expected.processes - expected.jobs,
        "submitted from main"
    );
    assert_eq!(
        (stats.live, stats.undelivered, stats.unknown_tags),
        (0, 0, 0)
    );
    assert_eq!(report.cancelled + report.forced + report.stuck, 0);
    println!("\nall counts check out");
}
