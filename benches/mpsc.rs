//! Criterion benches of `stepsched::mpsc` and the global run queue, one
//! scenario each (throughput is per item moved from producer to consumer):
//!
//! - `mpsc/push_pop_1000`: one thread pushes 1000 `u64`s then pops them all.
//!   After the first round the queue's blocks are recycled through its spare
//!   slot (a 1000-item backlog allocates and frees a few blocks per round),
//!   so this is nearly the queue's own cost without cross-core transfers.
//! - `mpsc/1_producer_1_consumer`, `mpsc/2_producers_1_consumer`: producers
//!   push `u64`s as fast as they can while one consumer pops, spinning on
//!   `None` (yielding every 64 misses). The queue is unbounded, so the number measured includes any
//!   backlog the consumer drains at the end. The `..._handle` variants push
//!   through a `Producer` handle, which now pushes exactly as `Queue::push`
//!   (kept to show that).
//! - `mailbox/push_pop_with_cache_1000`: the same round on a `Mailbox`
//!   with a `NodeCache` of 1024 nodes, so after the first round every push
//!   takes a cached node and every pop returns one: compare with
//!   `mpsc/push_pop_1000` for the queue operations alone (two words, no
//!   padding, nodes from a private stack instead of shared blocks).
//! - `mailbox/push_pop_1000`: the same without a cache: one `malloc` per
//!   push and one `free` per pop, what a mailbox costs when the caller keeps
//!   no nodes.
//! - `global/1_producer_2_consumers`: one producer pushes while two
//!   consumers `take_batch` (1 + 16) into a local `Vec`, yielding on a miss.
//! - `global/push_take_batch_1000`: one thread pushes 1000 then takes them
//!   back in batches: the token's cost without contention.
//!
//! Held constant: item type (`u64`), a fresh queue per sample for the
//! threaded scenarios (threads are spawned per sample; criterion's sample
//! sizes make that cost negligible). The file runs in under a minute:
//! `cargo bench -p stepsched-benches --bench mpsc`.

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stepsched::__internals::{GlobalQueue, Take};
use stepsched::mpsc::{Mailbox, NodeCache, Queue};

const ROUND: u64 = 1000;

/// Moves `items` from `producers` threads to this thread; returns the time
/// from the start signal until the consumer has everything.
fn mpsc_run(producers: u64, items: u64, handle: bool) -> Duration {
    let q = Queue::new();
    let start = Barrier::new(producers as usize + 1);
    let per = items.div_ceil(producers);
    thread::scope(|s| {
        for _ in 0..producers {
            s.spawn(|| {
                start.wait();
                if handle {
                    let mut tx = q.producer();
                    (0..per).for_each(|i| tx.push(i));
                } else {
                    (0..per).for_each(|i| q.push(i));
                }
            });
        }
        start.wait();
        let begin = Instant::now();
        let mut left = per * producers;
        let mut misses = 0u32;
        while left > 0 {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.pop() } {
                Some(v) => {
                    black_box(v);
                    left -= 1;
                }
                // Spin, but yield now and then so that a producer sharing
                // this core can run (small or busy machines).
                None => {
                    misses = misses.wrapping_add(1);
                    if misses % 64 == 0 {
                        thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
        }
        begin.elapsed()
    })
}

/// One producer, two consumers taking batches from the global queue.
fn global_run(items: u64) -> Duration {
    let global = GlobalQueue::new();
    let start = Barrier::new(3);
    let taken = std::sync::atomic::AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                start.wait();
                let mut local = Vec::with_capacity(32);
                while taken.load(std::sync::atomic::Ordering::Relaxed) < items {
                    match global.take_batch(|v| local.push(v)) {
                        Take::Taken { first, moved } => {
                            black_box(first);
                            local.drain(..).for_each(|v| {
                                black_box(v);
                            });
                            taken.fetch_add(1 + moved as u64, std::sync::atomic::Ordering::Relaxed);
                        }
                        _ => thread::yield_now(),
                    }
                }
            });
        }
        start.wait();
        let begin = Instant::now();
        (0..items).for_each(|i| global.push(i));
        while taken.load(std::sync::atomic::Ordering::Relaxed) < items {
            std::hint::spin_loop();
        }
        begin.elapsed()
    })
}

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("mpsc");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(ROUND));
    g.bench_function("push_pop_1000", |b| {
        let q = Queue::new();
        b.iter(|| {
            (0..ROUND).for_each(|i| q.push(i));
            // SAFETY: this thread is the only consumer.
            while let Some(v) = unsafe { q.pop() } {
                black_box(v);
            }
        });
    });
    g.finish();

    let mut g = c.benchmark_group("mailbox");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(ROUND));
    g.bench_function("push_pop_with_cache_1000", |b| {
        let m = Mailbox::new();
        let mut cache = NodeCache::with_limit(1024);
        b.iter(|| {
            (0..ROUND).for_each(|i| m.push_with(i, &mut cache));
            // SAFETY: this thread is the only consumer.
            while let Some(v) = unsafe { m.pop_with(&mut cache) } {
                black_box(v);
            }
        });
    });
    g.bench_function("push_pop_1000", |b| {
        let m = Mailbox::new();
        b.iter(|| {
            (0..ROUND).for_each(|i| m.push(i));
            // SAFETY: this thread is the only consumer.
            while let Some(v) = unsafe { m.pop() } {
                black_box(v);
            }
        });
    });
    g.finish();

    let mut g = c.benchmark_group("global");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(ROUND));
    g.bench_function("push_take_batch_1000", |b| {
        let global = GlobalQueue::new();
        let mut local = Vec::with_capacity(32);
        b.iter(|| {
            (0..ROUND).for_each(|i| global.push(i));
            while let Take::Taken { first, .. } = global.take_batch(|v| local.push(v)) {
                black_box(first);
                local.clear();
            }
        });
    });
    g.finish();
}

fn threaded(c: &mut Criterion) {
    let mut g = c.benchmark_group("mpsc");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(1));
    for (name, producers) in [("1_producer_1_consumer", 1), ("2_producers_1_consumer", 2)] {
        g.bench_function(name, |b| b.iter_custom(|n| mpsc_run(producers, n, false)));
        let with_handle = format!("{name}_handle");
        g.bench_function(with_handle, |b| {
            b.iter_custom(|n| mpsc_run(producers, n, true))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("global");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(1));
    g.bench_function("1_producer_2_consumers", |b| b.iter_custom(global_run));
    g.finish();
}

criterion_group!(benches, single_thread, threaded);
criterion_main!(benches);
