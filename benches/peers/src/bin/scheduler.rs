//! Side-by-side: the `stepsched` scheduler against tokio's multi-thread
//! runtime, both with the same worker threads (2 unless `WORKERS` says), on
//! five scenarios:
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
//! WORKERS=8 RESOURCES=off cargo run --release -p stepsched-peers --bin scheduler  # 8 workers each
//! SCENARIOS=yield_many,ping_pong cargo run --release -p stepsched-peers --bin scheduler  # some
//! ```
//!
//! `SCALE` multiplies N, D, the yields per task, the round trips and the
//! fan-out rounds (each at least 1; the 1,000 yielding tasks and the 10,000
//! fan-out workers stay). `ROUNDS` (default 5) is the number of timed rounds
//! per scenario and system, after one untimed warm-up round each. The
//! resource figures use fixed sizes (100,000 idle processes, 100,000
//! messages); the wake-up latency takes 1,000 × `SCALE` samples (100 at
//! least, 1,000 at most). `WORKERS` (default 2) is both systems' worker
//! count; `RESOURCES=off` skips the resource figures (the scaling sweep,
//! `benches/peers/sweep.sh`, sets both).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use stepsched::process::Process;
use stepsched::sched::Scheduler;

#[path = "../../../common/workloads.rs"]
mod workloads;

/// Memory per idle process, allocations per message, idle CPU, wake-up
/// latency.
#[path = "scheduler/resources.rs"]
mod resources;
use resources::{idle_child, resources, IDLE_CHILD};

/// The five scenarios, each on both systems.
#[path = "scheduler/scenarios.rs"]
mod scenarios;
use scenarios::{chained_spawn, fan_out_fan_in, ping_pong, spawn_many, yield_many};

use stepsched_peers::workers;

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
        .worker_threads(workers())
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

/// The builder of every timed scenario: `workers()` workers, and the
/// execution tracer if `STEPSCHED_TRACE` is set (to the events per worker
/// ring, e.g. 65536; the rings wrap, so any size costs the same per event);
/// every mailbox bounded if `STEPSCHED_MAILBOX_CAPACITY` is set (to the
/// capacity, large enough that nothing is refused: it measures the cost of
/// counting); latency figures recorded if `STEPSCHED_RECORD_LATENCY` is
/// set (`Builder::record_latency`: it measures the cost of timing steps).
fn scenario_builder<P: Process>() -> stepsched::sched::Builder<P> {
    let mut builder = Scheduler::<P>::builder().workers(workers());
    if std::env::var_os("STEPSCHED_RECORD_LATENCY").is_some() {
        builder = builder.record_latency(true);
    }
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
        "cross-core round trip: {} (swings several-fold on a shared VM: see docs/benchmarks.md)",
        stepsched_peers::core_round_trip()
    );
    println!(
        "stepsched vs tokio multi-thread, {} workers each; SCALE={scale}, ROUNDS={rounds} \
         (median of rounds; ratio = tokio / stepsched, above 1 = stepsched faster)\n",
        workers()
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

    // `RESOURCES=off` (the scaling sweep) skips the resource figures.
    if !stepsched_only() && std::env::var("RESOURCES").map_or(true, |v| v != "off") {
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
