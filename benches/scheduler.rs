//! Criterion benches of the scheduler, one scenario each, the shapes of
//! tokio's `benches/rt_multi_threaded.rs` at smaller sizes (the side-by-side
//! run against tokio at issue 4's sizes is `stepsched-peers --bin scheduler`):
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
//! checked. `cargo bench --bench scheduler` runs in about a minute.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;
const SPAWN_MANY: u64 = 10_000;
const CHAIN_DEPTH: u64 = 10_000;
const YIELD_PROCESSES: u64 = 100;
const YIELDS: u64 = 100;
const ROUND_TRIPS: u64 = 10_000;
const FAN_WORKERS: u64 = 1_000;
const FAN_ROUNDS: u64 = 10;

/// Counts completions (summing a value each); the bench thread waits for a
/// target count.
#[derive(Default)]
struct Latch {
    hits: AtomicU64,
    sum: AtomicU64,
    target: AtomicU64,
    failures: AtomicU64,
    lock: Mutex<()>,
    opened: Condvar,
}

impl Latch {
    fn arm(&self, target: u64) {
        self.hits.store(0, Ordering::SeqCst);
        self.sum.store(0, Ordering::SeqCst);
        self.target.store(target, Ordering::SeqCst);
    }

    fn hit(&self, value: u64) {
        self.sum.fetch_add(value, Ordering::Relaxed);
        // AcqRel: the last hit sees every earlier hit's sum.
        if self.hits.fetch_add(1, Ordering::AcqRel) + 1 == self.target.load(Ordering::Relaxed) {
            // Taking the lock orders the notify after the waiter's check.
            let _guard = self.lock.lock().unwrap();
            self.opened.notify_all();
        }
    }

    /// A process ended without its output (checked by `wait`).
    fn fail(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.hit(0);
    }

    /// Waits for the target; returns the sum. Panics after 60 s, or if a
    /// process failed.
    fn wait(&self) -> u64 {
        let mut guard = self.lock.lock().unwrap();
        while self.hits.load(Ordering::Acquire) < self.target.load(Ordering::Relaxed) {
            let (next, timeout) = self
                .opened
                .wait_timeout(guard, Duration::from_secs(60))
                .unwrap();
            assert!(!timeout.timed_out(), "completions lost: run hangs");
            guard = next;
        }
        drop(guard);
        assert_eq!(self.failures.load(Ordering::Relaxed), 0, "a process failed");
        self.sum.load(Ordering::Acquire)
    }
}

/// A scheduler whose `on_complete` hook hits `latch` with the output.
/// (Its workers must not panic: a hook runs on a worker thread.)
fn scheduler<P>(latch: &Arc<Latch>) -> Scheduler<P>
where
    P: Process<Output = u64>,
{
    let hook = Arc::clone(latch);
    Scheduler::builder()
        .workers(WORKERS)
        .on_complete(move |_, outcome| match outcome {
            Ok(value) => hook.hit(*value),
            Err(_) => hook.fail(),
        })
        .build()
        .expect("scheduler starts")
}

/// Finishes in its first step (output 1); with a depth, spawns the next
/// link first (output: the depth it had, so only the last link gives 0).
struct Link(u64);

impl Process for Link {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, depth: u64) -> Result<(), ()> {
        self.0 = depth;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if self.0 > 0 {
            out.spawn(Link(0), "link", self.0 - 1).map_err(|_| ())?;
        }
        out.done(1);
        Ok(())
    }
}

fn spawn_many(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Link>(&latch);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(SPAWN_MANY));
    group.bench_function("spawn_many", |b| {
        b.iter(|| {
            latch.arm(SPAWN_MANY);
            for _ in 0..SPAWN_MANY {
                scheduler.submit(Link(0), "trivial", 0).unwrap();
            }
            assert_eq!(latch.wait(), SPAWN_MANY);
        })
    });
    group.finish();
}

fn chained_spawn(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Link>(&latch);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(CHAIN_DEPTH));
    group.bench_function("chained_spawn", |b| {
        b.iter(|| {
            latch.arm(CHAIN_DEPTH + 1);
            scheduler.submit(Link(0), "link", CHAIN_DEPTH).unwrap();
            assert_eq!(latch.wait(), CHAIN_DEPTH + 1);
        })
    });
    group.finish();
}

/// Continues `left` times, then finishes with the number of continues.
struct Yielder {
    left: u64,
    yielded: u64,
}

impl Process for Yielder {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, yields: u64) -> Result<(), ()> {
        self.left = yields;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if self.left == 0 {
            out.done(self.yielded);
        } else {
            self.left -= 1;
            self.yielded += 1;
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

fn yield_many(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Yielder>(&latch);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(YIELD_PROCESSES * YIELDS));
    group.bench_function("yield_many", |b| {
        b.iter(|| {
            latch.arm(YIELD_PROCESSES);
            for _ in 0..YIELD_PROCESSES {
                let yielder = Yielder {
                    left: 0,
                    yielded: 0,
                };
                scheduler.submit(yielder, "yield", YIELDS).unwrap();
            }
            assert_eq!(latch.wait(), YIELD_PROCESSES * YIELDS);
        })
    });
    group.finish();
}

/// Receives `(from, n)` and replies `(me, n - 1)` while `n > 0`; finishes
/// after its last message with the number it received.
#[derive(Default)]
struct Pinger {
    received: u64,
}

impl Process for Pinger {
    type Input = ();
    type Message = (Pid, u64);
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
            if let Event::Message((from, n)) = event {
                self.received += 1;
                if n > 0 {
                    out.send(from, (out.pid(), n - 1));
                }
                if n <= 1 {
                    out.done(self.received);
                    return Ok(());
                }
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

fn ping_pong(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Pinger>(&latch);
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(ROUND_TRIPS));
    group.bench_function("ping_pong", |b| {
        b.iter(|| {
            latch.arm(2);
            let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
            let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
            scheduler.send(a, (b, 2 * ROUND_TRIPS)).unwrap();
            // 2R messages between them, plus the kick.
            assert_eq!(latch.wait(), 2 * ROUND_TRIPS + 1);
        })
    });
    group.finish();
}

/// Workers reply to each request; the coordinator sends one request to every
/// worker and waits for all replies, `rounds` times, then finishes with the
/// number of replies.
enum Fan {
    Worker,
    Coordinator {
        workers: Arc<[Pid]>,
        rounds: u64,
        round: u64,
        replies: u64,
        started: bool,
    },
}

enum FanMsg {
    Request(Pid, u64),
    Reply(u64),
}

impl Process for Fan {
    type Input = Option<(Arc<[Pid]>, u64)>;
    type Message = FanMsg;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = &'static str;
    fn init(&mut self, _: &str, input: Self::Input) -> Result<(), &'static str> {
        if let Some((workers, rounds)) = input {
            *self = Fan::Coordinator {
                workers,
                rounds,
                round: 0,
                replies: 0,
                started: false,
            };
        }
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), &'static str> {
        match self {
            Fan::Worker => {
                for event in events.drain(..) {
                    match event {
                        Event::Message(FanMsg::Request(from, round)) => {
                            out.send(from, FanMsg::Reply(round));
                        }
                        Event::Cancel(_) => {
                            out.done(0); // the scheduler is dropped
                            return Ok(());
                        }
                        _ => return Err("fan worker: unexpected event"),
                    }
                }
            }
            Fan::Coordinator {
                workers,
                rounds,
                round,
                replies,
                started,
            } => {
                let mut send_round = !*started;
                *started = true;
                for event in events.drain(..) {
                    let Event::Message(FanMsg::Reply(r)) = event else {
                        return Err("fan coordinator: unexpected event");
                    };
                    if r != *round {
                        return Err("fan coordinator: a reply from another round");
                    }
                    *replies += 1;
                    if *replies == workers.len() as u64 * (*round + 1) {
                        *round += 1;
                        if *round == *rounds {
                            out.done(*replies);
                            return Ok(());
                        }
                        send_round = true;
                    }
                }
                if send_round {
                    for &worker in workers.iter() {
                        out.send(worker, FanMsg::Request(out.pid(), *round));
                    }
                }
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

fn fan_out_fan_in(c: &mut Criterion) {
    let latch = Arc::new(Latch::default());
    let scheduler = scheduler::<Fan>(&latch);
    let workers: Arc<[Pid]> = (0..FAN_WORKERS)
        .map(|_| scheduler.submit(Fan::Worker, "worker", None).unwrap())
        .collect();
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(FAN_ROUNDS));
    group.bench_function("fan_out_fan_in", |b| {
        b.iter(|| {
            latch.arm(1);
            let input = Some((Arc::clone(&workers), FAN_ROUNDS));
            scheduler.submit(Fan::Worker, "coordinator", input).unwrap();
            assert_eq!(latch.wait(), FAN_WORKERS * FAN_ROUNDS);
        })
    });
    group.finish();
    latch.arm(FAN_WORKERS);
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!((report.cancelled, report.forced), (FAN_WORKERS as usize, 0));
    assert_eq!(latch.wait(), 0);
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
