//! Side-by-side: `flood`, messages pushed from outside through a
//! 1,000-message bounded queue to one consumer, in two shapes; the time per
//! accepted message.
//!
//! `retry`: one outside thread pushes N messages, retrying on "full" (with
//! `thread::yield_now`, the same for both), until every message is
//! accepted; and how far the resident set grew.
//!
//! - stepsched: a process submitted with
//!   `SpawnOptions::new().mailbox_capacity(1000)`, sent to with
//!   `Scheduler::send` (retried on `SendError::Full`); it sums what it
//!   receives and ends at N.
//! - tokio: `mpsc::channel(1000)` and `try_send` (retried on
//!   `TrySendError::Full`), a task receiving and summing until N.
//!
//! `blocking`: S outside threads (`SENDERS`, default 2) each push their
//! share of the N messages, and fall back to a blocking send with a
//! timeout when the queue is full; the main thread waits for the
//! consumer's end (a join), and the sum is checked.
//!
//! - stepsched: a scheduler built with `Builder::mailbox_capacity(1000)`,
//!   the consumer submitted joinable; `Scheduler::send`, then
//!   `Scheduler::blocking_send_timeout` (10 s) on `SendError::Full`.
//! - tokio: `mpsc::channel(1000)`; `try_send`, then
//!   `Handle::block_on(send_timeout(..))` on `TrySendError::Full`.
//! - Go (`benches/peers/go/flood.go`, if `go` is on `PATH`, built once
//!   into `/tmp`, run once a round with `GOMAXPROCS=2`): S goroutines and
//!   a `chan uint64` of capacity 1,000;
//!   `select { case ch <- v: default: <a send racing a 10 s timer> }`.
//!
//! Both Rust sides on 2 worker threads, same allocator (the system's); the
//! systems alternate round by round. `blocking` prints the peers' times
//! over stepsched's as a ratio of the medians and as the median of each
//! round's own ratio (steadier when the machine's state changes between
//! rounds).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin flood              # 10M, 5 rounds
//! SCALE=0.01 ROUNDS=1 cargo run --release -p stepsched-peers --bin flood   # smoke run
//! SHAPES=blocking SIDES=stepsched cargo run --release -p stepsched-peers --bin flood
//! ```
//!
//! `SHAPES` (`retry`, `blocking`; both by default) and `SIDES`
//! (`stepsched`, `tokio`, `go`; all by default) run only those: one side
//! alone under callgrind or strace.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Process, SpawnOptions, Status, StepOutput};
use stepsched::sched::{Scheduler, SendError};

const WORKERS: usize = 2;
const CAPACITY: u32 = 1_000;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or(default),
        Err(_) => default,
    }
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// Sums until it has `n` messages.
struct Sink {
    n: u64,
    seen: u64,
    sum: u64,
}

impl Process for Sink {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            if let Event::Message(v) = event {
                self.sum = self.sum.wrapping_add(v);
                self.seen += 1;
            }
        }
        if self.seen == self.n {
            out.done(self.sum);
        } else {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

/// One round: ns per accepted message, refusals.
fn stepsched_round(scheduler: &Scheduler<Sink>, n: u64) -> (f64, u64) {
    let sink = Sink { n, seen: 0, sum: 0 };
    let options = SpawnOptions::new().mailbox_capacity(CAPACITY);
    let pid = scheduler.submit_with(sink, "", (), options).unwrap();
    let start = Instant::now();
    let mut refused = 0;
    for i in 0..n {
        let mut message = i;
        loop {
            match scheduler.send(pid, message) {
                Ok(()) => break,
                Err(SendError::Full(m)) => {
                    refused += 1;
                    message = m;
                    thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    while scheduler.live() != 0 {
        thread::yield_now();
    }
    (start.elapsed().as_nanos() as f64 / n as f64, refused)
}

fn tokio_round(rt: &tokio::runtime::Runtime, n: u64) -> (f64, u64) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CAPACITY as usize);
    let done = rt.spawn(async move {
        let (mut seen, mut sum) = (0u64, 0u64);
        while seen < n {
            let v = rx.recv().await.unwrap();
            sum = sum.wrapping_add(v);
            seen += 1;
        }
        sum
    });
    let start = Instant::now();
    let mut refused = 0;
    for i in 0..n {
        let mut message = i;
        loop {
            match tx.try_send(message) {
                Ok(()) => break,
                Err(tokio::sync::mpsc::error::TrySendError::Full(m)) => {
                    refused += 1;
                    message = m;
                    thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    rt.block_on(done).unwrap();
    (start.elapsed().as_nanos() as f64 / n as f64, refused)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The `retry` shape, both systems alternating.
fn retry(n: u64, rounds: usize, side: &dyn Fn(&str) -> bool) {
    println!("flood retry: {n} messages through a {CAPACITY}-message queue, 1 sender, {rounds} rounds, median");

    let before = rss_kib();
    let scheduler = side("stepsched").then(|| {
        Scheduler::<Sink>::builder()
            .workers(WORKERS)
            .build()
            .unwrap()
    });
    let rt = side("tokio").then(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .build()
            .unwrap()
    });
    if let Some(scheduler) = &scheduler {
        stepsched_round(scheduler, n / 10);
    }
    if let Some(rt) = &rt {
        tokio_round(rt, n / 10);
    }
    let warm = rss_kib();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut our_refused, mut their_refused) = (0, 0);
    for _ in 0..rounds {
        if let Some(scheduler) = &scheduler {
            let (ns, r) = stepsched_round(scheduler, n);
            ours.push(ns);
            our_refused += r;
        }
        if let Some(rt) = &rt {
            let (ns, r) = tokio_round(rt, n);
            theirs.push(ns);
            their_refused += r;
        }
    }
    let after = rss_kib();
    let ours = (!ours.is_empty()).then(|| median(ours));
    let theirs = (!theirs.is_empty()).then(|| median(theirs));
    if let Some(ours) = ours {
        println!(
            "flood stepsched {ours:8.1} ns/accepted  ({} refusals a round)",
            our_refused / rounds as u64
        );
    }
    if let Some(theirs) = theirs {
        println!(
            "flood tokio     {theirs:8.1} ns/accepted  ({} refusals a round)",
            their_refused / rounds as u64
        );
    }
    if let (Some(ours), Some(theirs)) = (ours, theirs) {
        println!("flood ratio tokio/stepsched {:.2}", theirs / ours);
    }
    println!(
        "rss: {before} KiB at start, {warm} KiB warm, {after} KiB after the rounds ({:+} KiB once warm)",
        after as i64 - warm as i64
    );
    if let Some(scheduler) = scheduler {
        scheduler.shutdown(std::time::Duration::from_secs(1));
    }
}

/// How long a blocking send may wait for room before the round fails.
const BLOCKING_TIMEOUT: Duration = Duration::from_secs(10);

/// The messages of sender `k` of `senders`: every `senders`-th from `k`.
fn share(n: u64, k: usize, senders: usize) -> impl Iterator<Item = u64> {
    (k as u64..n).step_by(senders)
}

/// One `blocking` round: ns per accepted message, fallbacks to the
/// blocking send.
fn stepsched_blocking_round(scheduler: &Scheduler<Sink>, n: u64, senders: usize) -> (f64, u64) {
    let sink = Sink { n, seen: 0, sum: 0 };
    let join = scheduler.submit_joinable(sink, "", ()).unwrap();
    let pid = join.pid();
    let fallbacks = AtomicU64::new(0);
    let start = Instant::now();
    thread::scope(|s| {
        for k in 0..senders {
            let fallbacks = &fallbacks;
            s.spawn(move || {
                let mut mine = 0;
                for i in share(n, k, senders) {
                    match scheduler.send(pid, i) {
                        Ok(()) => {}
                        Err(SendError::Full(m)) => {
                            mine += 1;
                            scheduler
                                .blocking_send_timeout(pid, m, BLOCKING_TIMEOUT)
                                .expect("no room within the timeout");
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                fallbacks.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    let sum = join.join().expect("the sink failed");
    let took = start.elapsed();
    assert_eq!(sum, n * (n - 1) / 2, "stepsched flood: the sum");
    (
        took.as_nanos() as f64 / n as f64,
        fallbacks.load(Ordering::Relaxed),
    )
}

fn tokio_blocking_round(rt: &tokio::runtime::Runtime, n: u64, senders: usize) -> (f64, u64) {
    use tokio::sync::mpsc::error::TrySendError;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CAPACITY as usize);
    let done = rt.spawn(async move {
        let (mut seen, mut sum) = (0u64, 0u64);
        while seen < n {
            let v = rx.recv().await.unwrap();
            sum = sum.wrapping_add(v);
            seen += 1;
        }
        sum
    });
    let handle = rt.handle();
    let fallbacks = AtomicU64::new(0);
    let start = Instant::now();
    thread::scope(|s| {
        for k in 0..senders {
            let (fallbacks, tx) = (&fallbacks, tx.clone());
            s.spawn(move || {
                let mut mine = 0;
                for i in share(n, k, senders) {
                    match tx.try_send(i) {
                        Ok(()) => {}
                        Err(TrySendError::Full(m)) => {
                            mine += 1;
                            handle
                                .block_on(tx.send_timeout(m, BLOCKING_TIMEOUT))
                                .expect("no room within the timeout");
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                fallbacks.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    let sum = rt.block_on(done).unwrap();
    let took = start.elapsed();
    assert_eq!(sum, n * (n - 1) / 2, "tokio flood: the sum");
    (
        took.as_nanos() as f64 / n as f64,
        fallbacks.load(Ordering::Relaxed),
    )
}

/// The Go program, built once; `None` without `go` on `PATH`.
fn build_go() -> Option<String> {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/go/flood.go");
    let binary = "/tmp/stepsched-peers-flood-go".to_string();
    let built = Command::new("go")
        .args(["build", "-o", &binary, source])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !built {
        println!("flood go: not run (`go build {source}` failed or `go` is not on PATH)");
    }
    built.then_some(binary)
}

/// One round of the Go program (after its own warm-up round): ns per
/// accepted message, fallbacks.
fn go_blocking_round(binary: &str, n: u64, senders: usize) -> (f64, u64) {
    let output = Command::new(binary)
        .args([n.to_string(), senders.to_string()])
        .env("GOMAXPROCS", WORKERS.to_string())
        .output()
        .expect("run the Go program");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "go flood failed: {text}");
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("go flood: no `{name}` line in {text:?}"))
    };
    (field("round_ns ") as f64 / n as f64, field("fallbacks "))
}

/// The `blocking` shape, the systems alternating.
fn blocking(n: u64, rounds: usize, senders: usize, side: &dyn Fn(&str) -> bool) {
    println!(
        "flood blocking: {n} messages through a {CAPACITY}-message queue, {senders} senders, {rounds} rounds, median"
    );
    let scheduler = side("stepsched").then(|| {
        Scheduler::<Sink>::builder()
            .workers(WORKERS)
            .mailbox_capacity(CAPACITY)
            .build()
            .unwrap()
    });
    let rt = side("tokio").then(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .enable_time()
            .build()
            .unwrap()
    });
    let go = if side("go") { build_go() } else { None };
    if let Some(scheduler) = &scheduler {
        stepsched_blocking_round(scheduler, n / 10, senders);
    }
    if let Some(rt) = &rt {
        tokio_blocking_round(rt, n / 10, senders);
    }
    let mut figures: [(&str, Vec<f64>, u64); 3] = [
        ("stepsched", vec![], 0),
        ("tokio", vec![], 0),
        ("go", vec![], 0),
    ];
    for _ in 0..rounds {
        let mut add = |i: usize, (ns, fallbacks): (f64, u64)| {
            figures[i].1.push(ns);
            figures[i].2 += fallbacks;
        };
        if let Some(scheduler) = &scheduler {
            add(0, stepsched_blocking_round(scheduler, n, senders));
        }
        if let Some(rt) = &rt {
            add(1, tokio_blocking_round(rt, n, senders));
        }
        if let Some(go) = &go {
            add(2, go_blocking_round(go, n, senders));
        }
    }
    let paired = |i: usize| -> Option<f64> {
        let (ours, theirs) = (&figures[0].1, &figures[i].1);
        (!ours.is_empty() && ours.len() == theirs.len())
            .then(|| median(theirs.iter().zip(ours).map(|(t, o)| t / o).collect()))
    };
    let paired = [None, paired(1), paired(2)];
    let mut medians = [None; 3];
    for (i, (name, v, fallbacks)) in figures.into_iter().enumerate() {
        if v.is_empty() {
            continue;
        }
        let ns = median(v);
        medians[i] = Some(ns);
        println!(
            "flood blocking {name:<9} {ns:8.1} ns/accepted  ({} blocking fallbacks a round)",
            fallbacks / rounds as u64
        );
    }
    if let Some(ours) = medians[0] {
        for (name, ns) in [("tokio", medians[1]), ("go", medians[2])] {
            if let Some(ns) = ns {
                println!("flood blocking ratio {name}/stepsched {:.2}", ns / ours);
            }
        }
    }
    for (name, ratio) in [("tokio", paired[1]), ("go", paired[2])] {
        if let Some(ratio) = ratio {
            println!("flood blocking ratio {name}/stepsched, median of rounds {ratio:.2}");
        }
    }
    if let Some(scheduler) = scheduler {
        let stats = scheduler.stats();
        let sum = |f: fn(&stepsched::sched::WorkerStats) -> u64| -> u64 {
            stats.workers.iter().map(f).sum()
        };
        println!(
            "flood blocking stepsched stats: steps {} parks {} wakeups {} steals {} spins {}",
            sum(|w| w.steps),
            sum(|w| w.parks),
            sum(|w| w.wakeups),
            sum(|w| w.steals),
            sum(|w| w.spins),
        );
        scheduler.shutdown(Duration::from_secs(1));
    }
}

fn main() {
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5usize).max(1);
    let senders: usize = env_or("SENDERS", 2usize).max(1);
    let n = ((10_000_000.0 * scale) as u64).max(1_000);
    let shapes = std::env::var("SHAPES").unwrap_or_else(|_| "retry,blocking".into());
    let sides = std::env::var("SIDES").unwrap_or_else(|_| "stepsched,tokio,go".into());
    let side = |name: &str| sides.split(',').any(|s| s.trim() == name);
    let shape = |name: &str| shapes.split(',').any(|s| s.trim() == name);
    if shape("retry") {
        retry(n, rounds, &side);
    }
    if shape("blocking") {
        blocking(n, rounds, senders, &side);
    }
}
