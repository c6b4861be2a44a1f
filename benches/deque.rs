//! Criterion benches of `stepsched::deque`, one scenario each:
//!
//! - `deque/push_pop_1000`: the owner pushes 1000 items then pops them all, on
//!   a deque already grown to hold them (no allocation in the loop: the items
//!   are 1000 boxes moved between a `Vec` and the deque).
//! - `deque/push_1000_fresh`: the same 1000 pushes into a fresh `Worker::new()`
//!   (64 slots), so the ring grows four times; then pops them back.
//! - `deque/steal_1_owner_1_thief`: the owner pushes while one thief `steal`s;
//!   the owner keeps at most 256 items queued and never pops. Per item moved.
//! - `deque/steal_half_1_owner_1_thief`: the same with `steal_half_into` (the
//!   thief drains its own deque by `pop`). Per item moved.
//!
//! The threaded benches use zero-sized boxes (no allocator traffic) and count
//! every item the thief receives. The whole file runs in well under a minute:
//! `cargo bench -p stepsched-benches --bench deque`.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stepsched::deque::{Steal, Stealer, Worker};

const BATCH: usize = 1000;

/// Most items the owner keeps queued in the threaded benches.
const OWNER_BOUND: usize = 256;

/// The items: boxes, because the deque stores owning pointers.
#[allow(clippy::vec_box)]
fn pool() -> Vec<Box<u64>> {
    (0..BATCH as u64).map(Box::new).collect()
}

fn owner_only(c: &mut Criterion) {
    let mut g = c.benchmark_group("deque");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(BATCH as u64));

    g.bench_function("push_pop_1000", |b| {
        let w = Worker::with_capacity(BATCH);
        let mut items = pool();
        b.iter(|| {
            for item in items.drain(..) {
                w.push(item);
            }
            while let Some(item) = w.pop() {
                items.push(black_box(item));
            }
            assert_eq!(items.len(), BATCH);
        });
    });

    g.bench_function("push_1000_fresh", |b| {
        let mut items = pool();
        b.iter(|| {
            let w = Worker::new();
            for item in items.drain(..) {
                w.push(item);
            }
            while let Some(item) = w.pop() {
                items.push(black_box(item));
            }
            assert_eq!(items.len(), BATCH);
        });
    });
    g.finish();
}

/// Runs one owner (this thread) pushing `n` items while one thief takes them
/// with `take`, and returns the time until the thief has all `n`.
/// A thief's step: one steal attempt, returning how many items it received.
type Take = fn(&Stealer<Box<()>>, &Worker<Box<()>>) -> u64;

fn owner_and_thief(n: u64, take: Take) -> Duration {
    let w: Worker<Box<()>> = Worker::with_capacity(OWNER_BOUND);
    let s = w.stealer();
    let start = Arc::new(Barrier::new(2));
    let thief = thread::spawn({
        let start = start.clone();
        move || {
            let own = Worker::with_capacity(64);
            start.wait();
            let mut got = 0;
            while got < n {
                got += take(&s, &own);
            }
            got
        }
    });
    start.wait();
    let t0 = Instant::now();
    let mut pushed = 0;
    let mut waits = 0u32;
    while pushed < n {
        if w.len() < OWNER_BOUND {
            w.push(Box::new(()));
            pushed += 1;
            waits = 0;
        } else {
            // Full: wait for the thief, yielding now and then in case it
            // shares our core.
            waits += 1;
            if waits & 63 == 0 {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let got = thief.join().unwrap();
    let elapsed = t0.elapsed();
    assert_eq!(got, n, "the thief must receive every item exactly once");
    assert!(w.is_empty());
    elapsed
}

fn take_one(s: &Stealer<Box<()>>, _own: &Worker<Box<()>>) -> u64 {
    match s.steal() {
        Steal::Success(item) => {
            black_box(item);
            1
        }
        _ => 0,
    }
}

fn take_half(s: &Stealer<Box<()>>, own: &Worker<Box<()>>) -> u64 {
    match s.steal_half_into(own) {
        Steal::Success(item) => {
            black_box(item);
            let mut got = 1;
            while let Some(item) = own.pop() {
                black_box(item);
                got += 1;
            }
            got
        }
        _ => 0,
    }
}

fn owner_and_thief_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("deque");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(1));
    g.bench_function("steal_1_owner_1_thief", |b| {
        b.iter_custom(|iters| owner_and_thief(iters, take_one));
    });
    g.bench_function("steal_half_1_owner_1_thief", |b| {
        b.iter_custom(|iters| owner_and_thief(iters, take_half));
    });
    g.finish();
}

criterion_group!(benches, owner_only, owner_and_thief_benches);
criterion_main!(benches);
