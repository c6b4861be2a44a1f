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

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

#[path = "../../../common/workloads.rs"]
mod workloads;
use workloads::{Fan, FanInput, FanMsg, FanOutput, Latch, Link, Pinger, Yielder, HANG};

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

// ---------------------------------------------------------------------------
// Resources: memory per idle process, allocations per message, idle CPU,
// wake-up latency.

/// Waits for messages; finishes on `Stop`. Records the latency of each
/// `Stamp` (sent → the start of the step that receives it).
#[derive(Default)]
struct Sleeper {
    latencies: Vec<u64>,
}

enum SleeperMsg {
    Stamp(Instant),
    Stop,
}

impl Process for Sleeper {
    type Input = ();
    type Message = SleeperMsg;
    type Command = NoCommand;
    type Reply = ();
    type Output = Vec<u64>;
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let now = Instant::now();
        for event in events.drain(..) {
            match event {
                Event::Message(SleeperMsg::Stamp(sent)) => {
                    self.latencies.push((now - sent).as_nanos() as u64);
                }
                Event::Message(SleeperMsg::Stop) => {
                    out.done(core::mem::take(&mut self.latencies));
                    return Ok(());
                }
                _ => {}
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

fn resources(scale: f64) {
    println!("stepsched resources (tokio beside it where the measure applies):");
    bytes_per_idle_process(100_000);
    allocations_per_message();
    idle_cpu();
    let samples = ((1_000.0 * scale.min(1.0)).round() as usize).max(100);
    wake_latency(samples);
}

/// Resident set size in bytes (`/proc/self/statm`, field 2, in pages).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm resident field");
    pages * page_size()
}

/// The kernel page size, from the first mapping in `/proc/self/smaps`.
fn page_size() -> u64 {
    std::fs::read_to_string("/proc/self/smaps")
        .ok()
        .and_then(|smaps| {
            let line = smaps.lines().find(|l| l.starts_with("KernelPageSize:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(4096)
}

/// The environment variable that makes this binary a child measuring one
/// system's idle-task memory (a fresh process, so that neither system
/// reuses heap the other freed).
const IDLE_CHILD: &str = "STEPSCHED_PEERS_IDLE_CHILD";

fn bytes_per_idle_process(n: u64) {
    let measure = |system: &str| -> f64 {
        let exe = std::env::current_exe().expect("current exe");
        let out = std::process::Command::new(exe)
            .env(IDLE_CHILD, format!("{system}:{n}"))
            .output()
            .expect("child runs");
        assert!(out.status.success(), "{system} idle child: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{system} idle child said {text:?}"))
    };
    let stepsched = measure("stepsched");
    let tokio = measure("tokio");
    println!(
        "  bytes per idle process     {stepsched:>8.0} B   (RSS growth over {n} idle processes, \
         each a fresh child process; tokio task waiting on its own unbounded channel: {tokio:.0} B)"
    );
}

/// In the child: RSS growth per idle process (stepsched) or per task waiting
/// on its own unbounded channel (tokio), in bytes.
fn idle_child(spec: &str) {
    let (system, n) = spec.split_once(':').expect("system:n");
    let n: u64 = n.parse().expect("n");
    let per = match system {
        "stepsched" => stepsched_idle_bytes(n),
        "tokio" => tokio_idle_bytes(n),
        other => panic!("unknown system {other}"),
    };
    println!("{per}");
}

fn stepsched_idle_bytes(n: u64) -> f64 {
    let done = Arc::new(Latch::default());
    let hook = Arc::clone(&done);
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(WORKERS)
        .on_complete(move |_, outcome| hook.hit(outcome.as_ref().map_or(1, |_| 0)))
        .build()
        .expect("scheduler");
    // Warm-up: the threads' buffers and the first table page (a few slots,
    // so that the measured processes need slots never used before).
    const WARM: u64 = 64;
    done.arm(WARM);
    let warm: Vec<Pid> = (0..WARM)
        .map(|_| scheduler.submit(Sleeper::default(), "sleep", ()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    for pid in warm {
        scheduler.send(pid, SleeperMsg::Stop).unwrap();
    }
    assert_eq!(done.wait("idle warm-up"), 0);

    let mut pids: Vec<Pid> = Vec::with_capacity(n as usize);
    let before = rss_bytes();
    done.arm(n);
    pids.extend((0..n).map(|_| scheduler.submit(Sleeper::default(), "sleep", ()).unwrap()));
    // Wait until every one has run its first step and gone Idle.
    let deadline = Instant::now() + HANG;
    while scheduler.stats().total().steps < WARM + n {
        assert!(Instant::now() < deadline, "idle processes never stepped");
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = rss_bytes();
    assert_eq!(scheduler.live() as u64, n);
    // The PID list is ours, not the scheduler's: take it out.
    let pid_bytes = (pids.capacity() * std::mem::size_of::<Pid>()) as u64;
    let per = after.saturating_sub(before).saturating_sub(pid_bytes) as f64 / n as f64;
    for pid in pids {
        scheduler.send(pid, SleeperMsg::Stop).unwrap();
    }
    assert_eq!(done.wait("idle processes"), 0);
    per
}

fn tokio_idle_bytes(n: u64) -> f64 {
    use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
    let rt = tokio_runtime();
    let done = Arc::new(Latch::default());
    let spawn = |senders: &mut Vec<UnboundedSender<u64>>| {
        let (tx, mut rx) = unbounded_channel::<u64>();
        senders.push(tx);
        let done = Arc::clone(&done);
        rt.spawn(async move {
            let mut got = 0;
            while let Some(v) = rx.recv().await {
                got += v;
            }
            done.hit(got);
        });
    };
    const WARM: u64 = 64;
    done.arm(WARM);
    let mut warm = Vec::new();
    (0..WARM).for_each(|_| spawn(&mut warm));
    std::thread::sleep(Duration::from_millis(20));
    drop(warm);
    done.wait("tokio idle warm-up");

    let mut senders = Vec::with_capacity(n as usize);
    let before = rss_bytes();
    done.arm(n);
    (0..n).for_each(|_| spawn(&mut senders));
    std::thread::sleep(Duration::from_millis(200)); // every task polled once
    let after = rss_bytes();
    let sender_bytes = (senders.capacity() * std::mem::size_of::<UnboundedSender<u64>>()) as u64;
    let per = after.saturating_sub(before).saturating_sub(sender_bytes) as f64 / n as f64;
    drop(senders);
    done.wait("tokio idle tasks");
    per
}

fn allocations_per_message() {
    const TRIPS: u64 = 50_000; // 100,000 messages
    let latch = Arc::new(Latch::default());
    let scheduler = pinger_scheduler(&latch);
    stepsched_ping_pong(&scheduler, &latch, TRIPS); // warm-up
    latch.arm(2);
    let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
    let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
    let allocs = allocations_during(|| {
        scheduler.send(a, (b, 2 * TRIPS)).unwrap();
        assert_eq!(latch.wait("allocations ping_pong"), 2 * TRIPS + 1);
    });
    drop(scheduler);

    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    tokio_ping_pong(&rt, &t_latch, TRIPS); // warm-up
    let t_allocs = allocations_during(|| {
        tokio_ping_pong(&rt, &t_latch, TRIPS);
    });
    drop(rt);
    let messages = (2 * TRIPS) as f64;
    println!(
        "  allocations per message    {:>8.4}     (ping-pong of {} messages after warm-up; \
         tokio unbounded mpsc incl. its 2 tasks and channels: {:.4})",
        allocs as f64 / messages,
        2 * TRIPS,
        t_allocs as f64 / messages
    );
}

/// CPU time of this process's threads whose name starts with `prefix`, in
/// nanoseconds (`/proc/self/task/*/schedstat`, field 1). Panics unless it
/// finds `WORKERS` such threads.
fn thread_cpu_ns(prefix: &str) -> u64 {
    let (mut total, mut threads) = (0, 0);
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = task.expect("task entry").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        threads += 1;
        let schedstat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
        total += schedstat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .expect("schedstat field 1");
    }
    assert_eq!(threads, WORKERS, "threads named {prefix}*");
    total
}

/// utime + stime of the whole process from `/proc/self/stat`, in clock
/// ticks (usually 10 ms each).
fn process_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 overall, so 12 and 13 after it.
    let rest = &stat[stat.rfind(')').expect("stat comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn idle_cpu() {
    let window = Duration::from_secs(1);
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(WORKERS)
        .thread_name(|i| format!("ss-idle-{i}"))
        .build()
        .expect("scheduler");
    std::thread::sleep(Duration::from_millis(100)); // let the start-up spin end
    let (threads0, ticks0) = (thread_cpu_ns("ss-idle-"), process_cpu_ticks());
    std::thread::sleep(window);
    let (threads1, ticks1) = (thread_cpu_ns("ss-idle-"), process_cpu_ticks());
    let stats = scheduler.stats();
    drop(scheduler);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("tk-idle")
        .enable_all()
        .build()
        .expect("tokio runtime");
    std::thread::sleep(Duration::from_millis(100));
    let t0 = thread_cpu_ns("tk-idle");
    std::thread::sleep(window);
    let t1 = thread_cpu_ns("tk-idle");
    drop(rt);
    let pct = |ns: u64| ns as f64 / window.as_nanos() as f64 * 100.0;
    println!(
        "  idle scheduler CPU         {:>8.4} % of one core over {window:?} (worker threads' \
         schedstat, after {:.0} µs in their first 100 ms; whole process utime+stime: {} ticks; \
         parks {}, wakeups {}; tokio: {:.4} %)",
        pct(threads1 - threads0),
        threads0 as f64 / 1e3,
        ticks1 - ticks0,
        stats.total().parks,
        stats.total().wakeups,
        pct(t1 - t0)
    );
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at] as f64
}

fn wake_latency(samples: usize) {
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(WORKERS)
        .build()
        .expect("scheduler");
    let sleeper = scheduler
        .submit_joinable(Sleeper::default(), "sleep", ())
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..samples {
        // Both workers parked before each send.
        let deadline = Instant::now() + HANG;
        while scheduler.stats().sleeping < WORKERS {
            assert!(Instant::now() < deadline, "workers never parked");
            std::thread::sleep(Duration::from_micros(500));
        }
        scheduler
            .send(sleeper.pid(), SleeperMsg::Stamp(Instant::now()))
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    scheduler.send(sleeper.pid(), SleeperMsg::Stop).unwrap();
    let mut lat = sleeper.join().expect("sleeper");
    assert_eq!(lat.len(), samples);
    lat.sort_unstable();
    drop(scheduler);

    // tokio: a task waiting on an unbounded channel, same spacing.
    let rt = tokio_runtime();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let waiter = rt.spawn(async move {
        let mut lat = Vec::new();
        while let Some(sent) = rx.recv().await {
            lat.push(sent.elapsed().as_nanos() as u64);
        }
        lat
    });
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..samples {
        tx.send(Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(tx);
    let mut t_lat = rt.block_on(waiter).expect("tokio waiter");
    assert_eq!(t_lat.len(), samples);
    t_lat.sort_unstable();
    println!(
        "  wake-up latency p50 / p99  {} / {}   (send from outside to the start of the \
         receiving step, both workers parked, {samples} samples; tokio: {} / {})",
        fmt_ns(percentile(&lat, 0.5)),
        fmt_ns(percentile(&lat, 0.99)),
        fmt_ns(percentile(&t_lat, 0.5)),
        fmt_ns(percentile(&t_lat, 0.99)),
    );
}
