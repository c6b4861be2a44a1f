//! Side-by-side: message round-trip latency between two processes while
//! blocking calls run (`blocking_mix`), against the same round
//! trips with none (`blocking_mix_off`); stepsched with a
//! `Builder::blocking_handler`, tokio with `spawn_blocking`, both with 2
//! worker threads and the default blocking pool (512 threads, 10 s
//! keep-alive).
//!
//! | scenario           | size (SCALE=1)                                 |
//! |--------------------|------------------------------------------------|
//! | `blocking_mix`     | 10,000 round trips, 1,000 blocking 50 ms calls |
//! | `blocking_mix_off` | 10,000 round trips, no blocking call           |
//!
//! Shapes (the same for both systems):
//!
//! - the blocking load: 1,000 processes (tokio: tasks) each yield one
//!   command to a blocking handler that sleeps 50 ms (tokio: each awaits a
//!   `spawn_blocking` of the same sleep). The round trips start once all
//!   1,000 calls are dispatched (stepsched: the pool holds 1,000, busy or
//!   queued; tokio: every task has called `spawn_blocking`), so thread
//!   start-up on dispatch is outside the measure, and the calls (about
//!   100 ms of them, on 512 threads) outlast the round trips;
//! - the round trips: a `ping` process sends `(me, i)` to `pong`, which
//!   sends it back (tokio: two tasks over a pair of unbounded channels);
//!   `ping` reads the clock before each send and when the reply arrives:
//!   one sample per round trip.
//!
//! Printed per scenario and system: p50, p99, max and mean of the samples
//! of every timed round together, and for `blocking_mix` how many blocking
//! calls were still in flight when the last round trip ended (0 would mean
//! the load was over before the measure, and the row is not what it
//! claims). Last, `blocking_mix`'s p99 over `blocking_mix_off`'s for each
//! system (the target for stepsched: at most 2).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin blocking                  # full size, 5 rounds
//! SCALE=0.01 ROUNDS=1 cargo run --release -p stepsched-peers --bin blocking   # smoke run
//! STEPSCHED_ONLY=1 cargo run --release -p stepsched-peers --bin blocking      # no tokio
//! ```
//!
//! `SCALE` multiplies the round trips (at least 1); the 1,000 blocking calls
//! stay. `ROUNDS` (default 5) timed rounds per scenario and system, after
//! one untimed warm-up round each; the systems alternate round by round.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::{Command, Event, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;
/// Blocking calls in flight during `blocking_mix`.
const BLOCKERS: usize = 1_000;
/// How long each blocking call sleeps.
const BLOCK_FOR: Duration = Duration::from_millis(50);
/// How long a run may take before it is called hung.
const HANG: Duration = Duration::from_secs(120);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// Polls `done` every 100 µs; panics after [`HANG`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: hung");
        std::thread::sleep(Duration::from_micros(100));
    }
}

// ---------------------------------------------------------------------------
// stepsched

/// The one command: sleep [`BLOCK_FOR`] on the blocking pool.
struct Sleep;

impl Command for Sleep {
    fn kind(&self) -> &'static str {
        "sleep"
    }
}

/// A blocker yields one `Sleep` and finishes when it completes; `Ping`
/// times `trips` round trips to the `Pong` it is kicked with, then stops it.
enum Mix {
    Blocker,
    Ping {
        trips: u64,
        sent: Instant,
        samples: Vec<u64>,
    },
    Pong,
}

/// Sent by `ping` to stop `pong`.
const STOP: u64 = u64::MAX;

impl Process for Mix {
    type Input = ();
    type Message = (Pid, u64);
    type Command = Sleep;
    type Reply = ();
    type Output = Vec<u64>;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let me = out.pid();
        match self {
            Mix::Blocker => {
                if events.is_empty() {
                    out.yield_command(1, Sleep);
                }
                for event in events.drain(..) {
                    match event {
                        Event::Completion { result, .. } => {
                            result.map_err(|e| e.to_string())?;
                            out.done(Vec::new());
                        }
                        other => return Err(format!("blocker: {other:?}")),
                    }
                }
            }
            Mix::Ping {
                trips,
                sent,
                samples,
            } => {
                for event in events.drain(..) {
                    let Event::Message((from, i)) = event else {
                        return Err("ping: not a message".into());
                    };
                    let now = Instant::now();
                    if i != STOP {
                        // A reply (the kick from outside carries STOP).
                        samples.push(now.duration_since(*sent).as_nanos() as u64);
                    }
                    if samples.len() as u64 == *trips {
                        out.send(from, (me, STOP));
                        out.done(std::mem::take(samples));
                        return Ok(());
                    }
                    *sent = Instant::now();
                    out.send(from, (me, samples.len() as u64));
                }
            }
            Mix::Pong => {
                for event in events.drain(..) {
                    if let Event::Message((from, i)) = event {
                        if i == STOP {
                            out.done(Vec::new());
                            return Ok(());
                        }
                        out.send(from, (me, i));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One stepsched run: the round-trip samples, and the blocking calls still
/// in flight at the end.
fn stepsched_run(scheduler: &Scheduler<Mix>, blockers: usize, trips: u64) -> (Vec<u64>, usize) {
    let handles: Vec<_> = (0..blockers)
        .map(|_| {
            scheduler
                .submit_joinable(Mix::Blocker, "block", ())
                .unwrap()
        })
        .collect();
    wait_until("stepsched: blocking calls dispatched", || {
        let pool = scheduler.stats().blocking;
        pool.busy + pool.queued + handles.iter().filter(|h| h.is_finished()).count() >= blockers
    });
    let ping = Mix::Ping {
        trips,
        sent: Instant::now(),
        samples: Vec::with_capacity(trips as usize),
    };
    let ping = scheduler.submit_joinable(ping, "ping", ()).unwrap();
    let pong = scheduler.submit_joinable(Mix::Pong, "pong", ()).unwrap();
    // The kick: `ping` takes `pong` as its partner and sends the first.
    scheduler.send(ping.pid(), (pong.pid(), STOP)).unwrap();
    let samples = ping
        .join_timeout(HANG)
        .unwrap_or_else(|_| panic!("stepsched: round trips hung"))
        .expect("ping");
    let pool = scheduler.stats().blocking;
    let in_flight = pool.busy + pool.queued;
    for handle in handles.into_iter().chain([pong]) {
        match handle.join_timeout(HANG) {
            Ok(outcome) => drop(outcome.expect("blocker or pong")),
            Err(_) => panic!("stepsched: a blocker or pong hung"),
        }
    }
    assert_eq!(samples.len() as u64, trips);
    (samples, in_flight)
}

fn stepsched_scheduler() -> Scheduler<Mix> {
    Scheduler::<Mix>::builder()
        .workers(WORKERS)
        .blocking_handler("sleep", |Sleep, completer| {
            std::thread::sleep(BLOCK_FOR);
            let _ = completer.succeed(());
        })
        .build()
        .expect("scheduler")
}

// ---------------------------------------------------------------------------
// tokio

fn tokio_run(rt: &tokio::runtime::Runtime, blockers: usize, trips: u64) -> (Vec<u64>, usize) {
    use tokio::sync::mpsc::unbounded_channel;
    let dispatched = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..blockers)
        .map(|_| {
            let (dispatched, done) = (Arc::clone(&dispatched), Arc::clone(&done));
            rt.spawn(async move {
                let call = tokio::task::spawn_blocking(|| std::thread::sleep(BLOCK_FOR));
                // SeqCst (both counters): bench bookkeeping off the timed
                // path, read by the main thread; no ordering to economise.
                dispatched.fetch_add(1, Ordering::SeqCst);
                call.await.expect("spawn_blocking");
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    wait_until("tokio: blocking calls dispatched", || {
        dispatched.load(Ordering::SeqCst) == blockers
    });
    let (to_pong, mut pong_rx) = unbounded_channel::<u64>();
    let (to_ping, mut ping_rx) = unbounded_channel::<u64>();
    let pong = rt.spawn(async move {
        while let Some(i) = pong_rx.recv().await {
            to_ping.send(i).unwrap();
        }
    });
    let ping = rt.spawn(async move {
        let mut samples = Vec::with_capacity(trips as usize);
        for i in 0..trips {
            let sent = Instant::now();
            to_pong.send(i).unwrap();
            let back = ping_rx.recv().await.unwrap();
            samples.push(sent.elapsed().as_nanos() as u64);
            assert_eq!(back, i);
        }
        samples
    });
    let samples = rt.block_on(ping).expect("ping");
    let in_flight = blockers - done.load(Ordering::SeqCst);
    rt.block_on(pong).expect("pong");
    for handle in handles {
        rt.block_on(handle).expect("blocker");
    }
    (samples, in_flight)
}

// ---------------------------------------------------------------------------
// The report.

#[derive(Default)]
struct Column {
    samples: Vec<u64>,
    /// Blocking calls in flight at the end of each round.
    in_flight: Vec<usize>,
}

impl Column {
    fn add(&mut self, (samples, in_flight): (Vec<u64>, usize)) {
        self.samples.extend(samples);
        self.in_flight.push(in_flight);
    }

    fn percentile(&self, p: f64) -> f64 {
        let at = ((self.samples.len() - 1) as f64 * p).round() as usize;
        self.samples[at] as f64
    }
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn print_row(scenario: &str, system: &str, column: &mut Column) -> f64 {
    if column.samples.is_empty() {
        return 0.0;
    }
    column.samples.sort_unstable();
    let mean = column.samples.iter().sum::<u64>() as f64 / column.samples.len() as f64;
    let p99 = column.percentile(0.99);
    println!(
        "{:<17} {:<10} {:>10} {:>10} {:>10} {:>10}   {:?}",
        scenario,
        system,
        fmt_ns(column.percentile(0.5)),
        fmt_ns(p99),
        fmt_ns(*column.samples.last().unwrap() as f64),
        fmt_ns(mean),
        column.in_flight,
    );
    p99
}

fn main() {
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5usize).max(1);
    let trips = ((10_000.0 * scale).round() as u64).max(1);
    let with_tokio = std::env::var_os("STEPSCHED_ONLY").is_none();
    println!(
        "blocking_mix: round-trip latency, {WORKERS} workers, {trips} round trips per round, \
         with {BLOCKERS} blocking {BLOCK_FOR:?} calls in flight and without; \
         SCALE={scale}, ROUNDS={rounds}\n"
    );
    let scheduler = stepsched_scheduler();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("tokio runtime");

    println!(
        "{:<17} {:<10} {:>10} {:>10} {:>10} {:>10}   in flight at the end, per round",
        "scenario", "system", "p50", "p99", "max", "mean"
    );
    let mut p99 = Vec::new();
    for (scenario, blockers) in [("blocking_mix", BLOCKERS), ("blocking_mix_off", 0)] {
        let (mut s, mut t) = (Column::default(), Column::default());
        // One untimed warm-up round each, then alternate.
        stepsched_run(&scheduler, blockers, trips);
        if with_tokio {
            tokio_run(&rt, blockers, trips);
        }
        for _ in 0..rounds {
            s.add(stepsched_run(&scheduler, blockers, trips));
            if with_tokio {
                t.add(tokio_run(&rt, blockers, trips));
            }
        }
        let s99 = print_row(scenario, "stepsched", &mut s);
        let t99 = print_row(scenario, "tokio", &mut t);
        p99.push((s99, t99));
    }
    let (on, off) = (p99[0], p99[1]);
    println!(
        "\np99 blocking_mix / blocking_mix_off: stepsched {:.2}, tokio {:.2} (goal: stepsched <= 2)",
        on.0 / off.0,
        if off.1 > 0.0 { on.1 / off.1 } else { 0.0 }
    );
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!(report.forced, 0, "{report:?}");
}
