//! Side-by-side: the `stepsched` scheduler against tokio's multi-thread
//! runtime, both with 2 worker threads, on the five scenarios of issue 4:
//!
//! | scenario         | size (SCALE=1)              | one op       |
//! |------------------|-----------------------------|--------------|
//! | `spawn_many`     | 1,000,000 trivial tasks     | a task       |
//! | `chained_spawn`  | depth 100,000               | a spawn      |
//! | `yield_many`     | 1,000 tasks × 1,000 yields  | a yield      |
//! | `ping_pong`      | 1,000,000 round trips       | a round trip |
//! | `fan_out_fan_in` | 10,000 workers × 100 rounds | a round      |
//!
//! Shapes (the same for both systems):
//!
//! - `spawn_many`: the main thread submits N processes (tokio:
//!   `Handle::spawn`s N tasks) that each finish at once, and waits for the
//!   last completion on a condvar latch (stepsched: the `on_complete` hook
//!   counts; tokio: each task counts).
//! - `chained_spawn`: one process spawns the next (`StepOutput::spawn`;
//!   tokio: `tokio::spawn` inside the task), D deep. tokio's clock stops
//!   when the last task runs (as in tokio's own bench); stepsched's when all
//!   D + 1 completion hooks have run (the sum of their depths is checked).
//! - `yield_many`: P processes each return `Status::Continue` K times
//!   (tokio: `yield_now().await` K times), submitted from the main thread.
//! - `ping_pong`: two processes send a counter back and forth (tokio: two
//!   tasks over a pair of `unbounded_channel`s), R round trips.
//! - `fan_out_fan_in`: W idle worker processes, created before the clock
//!   starts (tokio: W tasks, each with its own unbounded channel). The clock
//!   covers a coordinator that sends one message to every worker and waits
//!   for W replies, rounds times; tearing the workers down is not timed.
//!
//! Every scenario checks its result (completions, a sum carried through the
//! run), so a broken run cannot look fast. The runtime or scheduler is built
//! once per scenario, outside the clock; the two systems alternate round by
//! round, so a drift of the machine hits both. Printed: the median time per
//! op of each system and `tokio / stepsched` (above 1: stepsched faster).
//!
//! Then, for stepsched alone (tokio beside it where the measure applies):
//! bytes per idle process (RSS growth over 100,000 idle processes), heap
//! allocations per message (a counting global allocator, on only while
//! measuring), CPU used by an idle scheduler over one second, and the wake-up
//! latency of a message to an idle process on a parked scheduler.
//!
//! ```text
//! GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
//!   cargo run --release -p stepsched-peers --bin scheduler           # full sizes, 5 rounds
//! SCALE=0.01 ROUNDS=1 cargo run --release -p stepsched-peers --bin scheduler   # smoke run
//! STEPSCHED_TRACE=65536 cargo run --release -p stepsched-peers --bin scheduler   # tracer on
//! STEPSCHED_ONLY=1 SCALE=0.2 cargo run --release -p stepsched-peers --bin scheduler  # no tokio
//! SCENARIOS=yield_many,ping_pong cargo run --release -p stepsched-peers --bin scheduler  # some
//! ```
//!
//! `SCALE` multiplies N, D, the yields per task, the round trips and the
//! fan-out rounds (each at least 1; the 1,000 yielding tasks and the 10,000
//! fan-out workers stay). `ROUNDS` (default 5) is the number of timed rounds
//! per scenario and system, after one untimed warm-up round each. The
//! resource figures use fixed sizes (100,000 idle processes, 100,000
//! messages); the wake-up latency takes 1,000 × `SCALE` samples (100 at
//! least, 1,000 at most).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

#[path = "../../../common/workloads.rs"]
mod workloads;
use workloads::{Fan, FanInput, FanMsg, FanOutput, Latch, Link, Pinger, Yielder};

/// Memory per idle process, allocations per message, idle CPU, wake-up
/// latency.
#[path = "scheduler/resources.rs"]
mod resources;
use resources::{idle_child, resources, IDLE_CHILD};

const WORKERS: usize = 2;

// ---------------------------------------------------------------------------
// Counting allocator: counts allocations only while `COUNTING` is on, so the
// timed scenarios pay one uncontended load of a read-mostly flag.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; counting touches only atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[inline]
fn count() {
    // Relaxed: statistics, read after the measured run has been joined
    // through the latch (whose mutex orders them).
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by any thread while `f` runs.
fn allocations_during(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------------------
// Sizes and the report.

struct Sizes {
    spawn_many: u64,
    chain_depth: u64,
    yield_tasks: u64,
    yields: u64,
    round_trips: u64,
    fan_workers: u64,
    fan_rounds: u64,
}

impl Sizes {
    fn new(scale: f64) -> Self {
        let s = |n: f64| ((n * scale).round() as u64).max(1);
        Sizes {
            spawn_many: s(1_000_000.0),
            chain_depth: s(100_000.0),
            yield_tasks: 1_000,
            yields: s(1_000.0),
            round_trips: s(1_000_000.0),
            fan_workers: 10_000,
            fan_rounds: s(100.0),
        }
    }
}

struct Row {
    scenario: &'static str,
    size: String,
    op: &'static str,
    ops: u64,
    tokio: Vec<Duration>,
    stepsched: Vec<Duration>,
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn per_op(d: Duration, ops: u64) -> f64 {
    d.as_nanos() as f64 / ops as f64
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `rounds` timed rounds of each system, alternating.
fn compare(
    rounds: usize,
    mut tokio: impl FnMut() -> Duration,
    mut stepsched: impl FnMut() -> Duration,
) -> (Vec<Duration>, Vec<Duration>) {
    // One untimed warm-up round each: threads, table pages, queue blocks.
    let with_tokio = !stepsched_only();
    if with_tokio {
        tokio();
    }
    stepsched();
    let (mut t, mut s) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        if with_tokio {
            t.push(tokio());
        }
        s.push(stepsched());
    }
    (t, s)
}

/// Whether `STEPSCHED_ONLY` is set: run the stepsched side of each
/// scenario only and skip the resource figures (a quick tracer on/off
/// comparison; the tokio column then reads 0).
fn stepsched_only() -> bool {
    std::env::var_os("STEPSCHED_ONLY").is_some()
}

/// The builder of every timed scenario: `WORKERS` workers, and the
/// execution tracer if `STEPSCHED_TRACE` is set (to the events per worker
/// ring, e.g. 65536; the rings wrap, so any size costs the same per event);
/// every mailbox bounded if `STEPSCHED_MAILBOX_CAPACITY` is set (to the
/// capacity, large enough that nothing is refused: it measures the cost of
/// counting).
fn scenario_builder<P: Process>() -> stepsched::sched::Builder<P> {
    let mut builder = Scheduler::<P>::builder().workers(WORKERS);
    if let Ok(capacity) = std::env::var("STEPSCHED_MAILBOX_CAPACITY") {
        builder = builder.mailbox_capacity(capacity.parse().expect("STEPSCHED_MAILBOX_CAPACITY"));
    }
    match std::env::var("STEPSCHED_TRACE") {
        Ok(events) => builder.trace(events.parse().expect("STEPSCHED_TRACE: events per worker")),
        Err(_) => builder,
    }
}

fn main() {
    if let Ok(spec) = std::env::var(IDLE_CHILD) {
        return idle_child(&spec);
    }
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5usize).max(1);
    let sizes = Sizes::new(scale);
    println!(
        "GLIBC_TUNABLES={}",
        std::env::var("GLIBC_TUNABLES").unwrap_or_else(|_| "(unset: glibc defaults)".into())
    );
    println!(
        "STEPSCHED_TRACE={}",
        std::env::var("STEPSCHED_TRACE").unwrap_or_else(|_| "(unset: tracing off)".into())
    );
    println!(
        "cross-core round trip: {} ns (swings ~100 to ~500+ on a shared VM: see README, \"Measured\")",
        stepsched_peers::core_round_trip_ns()
    );
    println!(
        "stepsched vs tokio multi-thread, {WORKERS} workers each; SCALE={scale}, ROUNDS={rounds} \
         (median of rounds; ratio = tokio / stepsched, above 1 = stepsched faster)\n"
    );

    // `SCENARIOS=yield_many,ping_pong` runs only those.
    let scenarios = std::env::var("SCENARIOS").ok();
    let wanted = |name: &str| match &scenarios {
        Some(list) => list.split(',').any(|s| s == name),
        None => true,
    };
    let mut rows = Vec::new();
    if wanted("spawn_many") {
        let n = sizes.spawn_many;
        let (t, s) = spawn_many(n, rounds);
        rows.push(row("spawn_many", format!("{n} tasks"), "task", n, t, s));
    }
    if wanted("chained_spawn") {
        let d = sizes.chain_depth;
        let (t, s) = chained_spawn(d, rounds);
        rows.push(row("chained_spawn", format!("depth {d}"), "spawn", d, t, s));
    }
    if wanted("yield_many") {
        let (p, k) = (sizes.yield_tasks, sizes.yields);
        let (t, s) = yield_many(p, k, rounds);
        let size = format!("{p} x {k}");
        rows.push(row("yield_many", size, "yield", p * k, t, s));
    }
    if wanted("ping_pong") {
        let r = sizes.round_trips;
        let (t, s) = ping_pong(r, rounds);
        let size = format!("{r} round trips");
        rows.push(row("ping_pong", size, "round trip", r, t, s));
    }
    if wanted("fan_out_fan_in") {
        let (w, q) = (sizes.fan_workers, sizes.fan_rounds);
        let (t, s) = fan_out_fan_in(w, q, rounds);
        let size = format!("{w} x {q} rounds");
        rows.push(row("fan_out_fan_in", size, "round", q, t, s));
    }

    println!(
        "{:<16} {:<22} {:<11} {:>12} {:>12} {:>8}",
        "scenario", "size", "per", "tokio", "stepsched", "ratio"
    );
    for mut row in rows {
        let t = per_op(median(&mut row.tokio), row.ops);
        let s = per_op(median(&mut row.stepsched), row.ops);
        println!(
            "{:<16} {:<22} {:<11} {:>12} {:>12} {:>8.2}",
            row.scenario,
            row.size,
            row.op,
            fmt_ns(t),
            fmt_ns(s),
            t / s
        );
    }

    if !stepsched_only() {
        println!();
        resources(scale);
    }
}

fn row(
    scenario: &'static str,
    size: String,
    op: &'static str,
    ops: u64,
    tokio: Vec<Duration>,
    stepsched: Vec<Duration>,
) -> Row {
    Row {
        scenario,
        size,
        op,
        ops,
        tokio,
        stepsched,
    }
}

// ---------------------------------------------------------------------------
// spawn_many

/// Finishes in its first step.
struct Trivial;

impl Process for Trivial {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        out.done(());
        Ok(())
    }
}

fn spawn_many(n: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let handle = rt.handle().clone();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Trivial>()
        .on_complete(move |_, outcome| {
            assert!(outcome.is_ok(), "spawn_many: {outcome:?}");
            hook.hit(1);
        })
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(n);
            let start = Instant::now();
            for _ in 0..n {
                let latch = Arc::clone(&t_latch);
                handle.spawn(async move { latch.hit(1) });
            }
            let sum = t_latch.wait("tokio spawn_many");
            let took = start.elapsed();
            assert_eq!(sum, n);
            took
        },
        || {
            s_latch.arm(n);
            let start = Instant::now();
            for _ in 0..n {
                scheduler.submit(Trivial, "trivial", ()).expect("submit");
            }
            let sum = s_latch.wait("stepsched spawn_many");
            let took = start.elapsed();
            assert_eq!(sum, n);
            took
        },
    )
}

// ---------------------------------------------------------------------------
// chained_spawn (processes: `Link`, in `benches/common/workloads.rs`, as are
// `Yielder`, `Pinger`, `Fan` and `Latch`)

fn tokio_chain(latch: Arc<Latch>, left: u64) {
    if left == 0 {
        latch.hit(1);
    } else {
        tokio::spawn(async move { tokio_chain(latch, left - 1) });
    }
}

fn chained_spawn(depth: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Link>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("chained_spawn failed")))
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(1);
            let start = Instant::now();
            let latch = Arc::clone(&t_latch);
            rt.spawn(async move { tokio_chain(latch, depth) });
            t_latch.wait("tokio chained_spawn");
            start.elapsed()
        },
        || {
            // Every link completes (the last one may finish on another
            // worker before its ancestors' hooks have run): wait for all.
            s_latch.arm(depth + 1);
            let start = Instant::now();
            scheduler.submit(Link(0), "link", depth).expect("submit");
            let sum = s_latch.wait("stepsched chained_spawn");
            let took = start.elapsed();
            assert_eq!(sum, depth * (depth + 1) / 2, "the sum of the links' depths");
            took
        },
    )
}

// ---------------------------------------------------------------------------
// yield_many

fn yield_many(tasks: u64, yields: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let handle = rt.handle().clone();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Yielder>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("yield_many failed")))
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(tasks);
            let start = Instant::now();
            for _ in 0..tasks {
                let latch = Arc::clone(&t_latch);
                handle.spawn(async move {
                    let mut done = 0;
                    for _ in 0..yields {
                        tokio::task::yield_now().await;
                        done += 1;
                    }
                    latch.hit(done);
                });
            }
            let sum = t_latch.wait("tokio yield_many");
            let took = start.elapsed();
            assert_eq!(sum, tasks * yields);
            took
        },
        || {
            s_latch.arm(tasks);
            let start = Instant::now();
            for _ in 0..tasks {
                let yielder = Yielder::default();
                scheduler.submit(yielder, "yield", yields).expect("submit");
            }
            let sum = s_latch.wait("stepsched yield_many");
            let took = start.elapsed();
            assert_eq!(sum, tasks * yields);
            took
        },
    )
}

// ---------------------------------------------------------------------------
// ping_pong

fn pinger_scheduler(latch: &Arc<Latch>) -> Scheduler<Pinger> {
    let hook = Arc::clone(latch);
    scenario_builder::<Pinger>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("ping_pong failed")))
        .build()
        .expect("scheduler")
}

/// One stepsched ping-pong of `trips` round trips; returns the time from the
/// first send to both processes' end.
fn stepsched_ping_pong(scheduler: &Scheduler<Pinger>, latch: &Latch, trips: u64) -> Duration {
    latch.arm(2);
    let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
    let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
    let start = Instant::now();
    // `a` receives 2R, sends 2R-1 to `b`, ...: 2R messages between them.
    scheduler.send(a, (b, 2 * trips)).unwrap();
    let received = latch.wait("stepsched ping_pong");
    let took = start.elapsed();
    assert_eq!(received, 2 * trips + 1, "the kick from outside + 2R");
    took
}

/// One tokio ping-pong over two unbounded channels.
fn tokio_ping_pong(rt: &tokio::runtime::Runtime, latch: &Arc<Latch>, trips: u64) -> Duration {
    use tokio::sync::mpsc::unbounded_channel;
    latch.arm(2);
    let (to_b, mut b_rx) = unbounded_channel::<u64>();
    let (to_a, mut a_rx) = unbounded_channel::<u64>();
    let start = Instant::now();
    let pong = Arc::clone(latch);
    rt.spawn(async move {
        let mut received = 0;
        while let Some(n) = b_rx.recv().await {
            received += 1;
            to_a.send(n).unwrap();
        }
        pong.hit(received);
    });
    let ping = Arc::clone(latch);
    rt.spawn(async move {
        let mut received = 0;
        for i in 0..trips {
            to_b.send(i).unwrap();
            let back = a_rx.recv().await.unwrap();
            assert_eq!(back, i);
            received += 1;
        }
        ping.hit(received);
    });
    let received = latch.wait("tokio ping_pong");
    let took = start.elapsed();
    assert_eq!(received, 2 * trips);
    took
}

fn ping_pong(trips: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let scheduler = pinger_scheduler(&s_latch);
    compare(
        rounds,
        || tokio_ping_pong(&rt, &t_latch, trips),
        || stepsched_ping_pong(&scheduler, &s_latch, trips),
    )
}

// ---------------------------------------------------------------------------
// fan_out_fan_in

fn fan_out_fan_in(workers: u64, fan_rounds: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_coord = Arc::new(Latch::default());
    let t_workers = Arc::new(Latch::default());
    let s_coord = Arc::new(Latch::default());
    let s_workers = Arc::new(Latch::default());
    let (coord_hook, workers_hook) = (Arc::clone(&s_coord), Arc::clone(&s_workers));
    let scheduler = scenario_builder::<Fan>()
        .on_complete(move |_, outcome| match outcome {
            Ok(FanOutput::Coordinator(n)) => coord_hook.hit(*n),
            Ok(FanOutput::Worker(n)) => workers_hook.hit(*n),
            Err(e) => panic!("fan_out_fan_in: {e}"),
        })
        .build()
        .expect("scheduler");
    let settle = Duration::from_millis(20);
    compare(
        rounds,
        || {
            use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
            t_coord.arm(1);
            t_workers.arm(workers);
            let (reply_tx, mut reply_rx) = unbounded_channel::<u64>();
            let mut txs: Vec<UnboundedSender<u64>> = Vec::with_capacity(workers as usize);
            for _ in 0..workers {
                let (tx, mut rx) = unbounded_channel::<u64>();
                txs.push(tx);
                let reply = reply_tx.clone();
                let done = Arc::clone(&t_workers);
                rt.spawn(async move {
                    let mut served = 0;
                    while let Some(round) = rx.recv().await {
                        served += 1;
                        let _ = reply.send(round);
                    }
                    done.hit(served);
                });
            }
            drop(reply_tx);
            std::thread::sleep(settle); // every worker task waits on recv
            let start = Instant::now();
            let coord = Arc::clone(&t_coord);
            rt.spawn(async move {
                let mut replies = 0;
                for round in 0..fan_rounds {
                    for tx in &txs {
                        tx.send(round).unwrap();
                    }
                    for _ in 0..txs.len() {
                        assert_eq!(reply_rx.recv().await, Some(round));
                        replies += 1;
                    }
                }
                coord.hit(replies);
                // Dropping `txs` here stops the workers (not timed).
            });
            let replies = t_coord.wait("tokio fan_out_fan_in");
            let took = start.elapsed();
            assert_eq!(replies, workers * fan_rounds);
            assert_eq!(t_workers.wait("tokio fan workers"), workers * fan_rounds);
            took
        },
        || {
            s_coord.arm(1);
            s_workers.arm(workers);
            let pids: Arc<[Pid]> = (0..workers)
                .map(|_| scheduler.submit(Fan::Worker { served: 0 }, "worker", FanInput::Worker))
                .collect::<Result<_, _>>()
                .expect("submit");
            std::thread::sleep(settle); // every worker has run its first step
            let start = Instant::now();
            let input = FanInput::Coordinator(Arc::clone(&pids), fan_rounds);
            scheduler
                .submit(Fan::Worker { served: 0 }, "coordinator", input)
                .expect("submit");
            let replies = s_coord.wait("stepsched fan_out_fan_in");
            let took = start.elapsed();
            assert_eq!(replies, workers * fan_rounds);
            for &pid in pids.iter() {
                scheduler.send(pid, FanMsg::Stop).expect("worker alive");
            }
            assert_eq!(
                s_workers.wait("stepsched fan workers"),
                workers * fan_rounds
            );
            took
        },
    )
}
