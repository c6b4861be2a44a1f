//! Criterion benches of the scheduler, one scenario each, the shapes of
//! tokio's `benches/rt_multi_threaded.rs` at smaller sizes (the side-by-side
//! run against tokio at full sizes is `stepsched-peers --bin scheduler`):
//!
//! - `scheduler/spawn_many`: the bench thread submits 10,000 processes that
//!   finish in their first step and waits for the last completion (the
//!   `on_complete` hook counts; a condvar latch wakes the bench thread).
//!   Throughput: processes.
//! - `scheduler/chained_spawn`: each process spawns the next
//!   (`StepOutput::spawn`) and finishes, 10,000 deep. Throughput: spawns.
//! - `scheduler/yield_many`: 100 processes each return `Status::Continue`
//!   100 times. Throughput: yields.
//! - `scheduler/ping_pong`: two processes send a counter back and forth,
//!   10,000 round trips. Throughput: round trips.
//! - `scheduler/fan_out_fan_in`: a coordinator sends a request to each of
//!   1,000 idle worker processes and waits for all replies, 10 rounds; the
//!   workers are created once, outside the measurement. Throughput: rounds.
//!
//! Held constant: 2 worker threads, default tuning, one scheduler per bench
//! function built outside the measured loop, every iteration's result
//! checked. `cargo bench -p stepsched-benches --bench scheduler` runs in about
//! a minute.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stepsched::process::{Pid, Process};
use stepsched::sched::Scheduler;

#[path = "common/workloads.rs"]
mod workloads;
use workloads::{Fan, FanInput, FanMsg, FanOutput, Latch, Link, Pinger, Yielder};

const WORKERS: usize = 2;
const SPAWN_MANY: u64 = 10_000;
const CHAIN_DEPTH: u64 = 10_000;
const YIELD_PROCESSES: u64 = 100;
const YIELDS: u64 = 100;
const ROUND_TRIPS: u64 = 10_000;
const FAN_WORKERS: u64 = 1_000;
const FAN_ROUNDS: u64 = 10;

/// A scheduler whose `on_complete` hook hits `latch` with `value` of the
/// output (a failed process fails the latch: the hook runs on a worker
/// thread and must not panic).
fn scheduler<P: Process>(latch: &Arc<Latch>, value: fn(&P::Output) -> u64) -> Scheduler<P> {
    let hook = Arc::clone(latch);
    Scheduler::builder()
        .workers(WORKERS)
        .on_complete(move |_, outcome| match outcome {
            Ok(output) => hook.hit(value(output)),
            Err(_) => hook.fail(),
        })
        .build()
        .expect("scheduler starts")
}

/// The output itself, for processes that finish with a count.
fn count(output: &u64) -> u64 {
    *output
}

fn spawn_many(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    // A `Link` of depth 0 spawns nothing and finishes with 0; count hits.
    let scheduler = scheduler::<Link>(&latch, |_| 1);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(SPAWN_MANY));
    group.bench_function("spawn_many", |b| {
        b.iter(|| {
            latch.arm(SPAWN_MANY);
            for _ in 0..SPAWN_MANY {
                scheduler.submit(Link(0), "trivial", 0).unwrap();
            }
            assert_eq!(latch.wait("spawn_many"), SPAWN_MANY);
        })
    });
    group.finish();
}

fn chained_spawn(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Link>(&latch, count);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(CHAIN_DEPTH));
    group.bench_function("chained_spawn", |b| {
        b.iter(|| {
            // Every link finishes with the depth it had: 0..=CHAIN_DEPTH.
            latch.arm(CHAIN_DEPTH + 1);
            scheduler.submit(Link(0), "link", CHAIN_DEPTH).unwrap();
            let sum = CHAIN_DEPTH * (CHAIN_DEPTH + 1) / 2;
            assert_eq!(latch.wait("chained_spawn"), sum);
        })
    });
    group.finish();
}

fn yield_many(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Yielder>(&latch, count);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(YIELD_PROCESSES * YIELDS));
    group.bench_function("yield_many", |b| {
        b.iter(|| {
            latch.arm(YIELD_PROCESSES);
            for _ in 0..YIELD_PROCESSES {
                scheduler
                    .submit(Yielder::default(), "yield", YIELDS)
                    .unwrap();
            }
            // Each finishes with the number of times it continued.
            assert_eq!(latch.wait("yield_many"), YIELD_PROCESSES * YIELDS);
        })
    });
    group.finish();
}

fn ping_pong(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Pinger>(&latch, count);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(ROUND_TRIPS));
    group.bench_function("ping_pong", |b| {
        b.iter(|| {
            latch.arm(2);
            let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
            let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
            scheduler.send(a, (b, 2 * ROUND_TRIPS)).unwrap();
            // 2R messages between them, plus the kick.
            assert_eq!(latch.wait("ping_pong"), 2 * ROUND_TRIPS + 1);
        })
    });
    group.finish();
}

/// Workers reply to each request; the coordinator sends one request to every
/// worker and waits for all replies, `rounds` times, then finishes with the
/// number of replies. The workers are created once, outside the
/// measurement, and stopped after it.
fn fan_out_fan_in(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Fan>(&latch, |output| match output {
        FanOutput::Worker(served) | FanOutput::Coordinator(served) => *served,
    });
    let workers: Arc<[Pid]> = (0..FAN_WORKERS)
        .map(|_| {
            let worker = Fan::Worker { served: 0 };
            scheduler
                .submit(worker, "worker", FanInput::Worker)
                .unwrap()
        })
        .collect();
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(FAN_ROUNDS));
    group.bench_function("fan_out_fan_in", |b| {
        b.iter(|| {
            latch.arm(1);
            let input = FanInput::Coordinator(Arc::clone(&workers), FAN_ROUNDS);
            let coordinator = Fan::Worker { served: 0 };
            scheduler.submit(coordinator, "coordinator", input).unwrap();
            assert_eq!(latch.wait("fan_out_fan_in"), FAN_WORKERS * FAN_ROUNDS);
        })
    });
    group.finish();
    latch.arm(FAN_WORKERS);
    for &worker in workers.iter() {
        scheduler.send(worker, FanMsg::Stop).unwrap();
    }
    // Every worker served one request per round of every iteration.
    let served = latch.wait("fan workers");
    assert_eq!(served % (FAN_WORKERS * FAN_ROUNDS), 0);
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!((report.cancelled, report.forced), (0, 0));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = spawn_many, chained_spawn, yield_many, ping_pong, fan_out_fan_in
}
criterion_main!(benches);
