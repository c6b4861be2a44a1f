//! Behaviour and stress tests for `stepsched::mpsc::Mailbox` and
//! `NodeCache`.
//!
//! Sizes shrink under Miri (`cfg!(miri)`); a normal run takes a few seconds.

mod common;
use common::drops::Counted;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;

use stepsched::mpsc::{Mailbox, NodeCache, TryPopError};

/// Items each stress producer sends.
const STRESS_ITEMS: u64 = if cfg!(miri) { 200 } else { 1_000_000 };

/// How many items a stress producer may have unacknowledged: bounds the
/// nodes in flight, so that the caches reach a steady state and nodes really
/// circulate between threads.
const WINDOW: u64 = if cfg!(miri) { 16 } else { 256 };

#[test]
fn smoke_fifo() {
    let m = Mailbox::new();
    let mut cache = NodeCache::new();
    (0..1000).for_each(|i| m.push_with(i, &mut cache));
    for i in 0..1000 {
        // SAFETY: the test thread is the only consumer.
        assert_eq!(unsafe { m.pop_with(&mut cache) }, Some(i));
    }
    // SAFETY: as above.
    assert_eq!(unsafe { m.try_pop() }, Err(TryPopError::Empty));
    assert_eq!(cache.len(), NodeCache::<i32>::DEFAULT_LIMIT);
}

#[test]
fn strings_survive_the_trip() {
    let m = Mailbox::new();
    let words = ["alpha", "beta", "gamma"].map(String::from);
    words.iter().cloned().for_each(|w| m.push(w));
    // SAFETY: the test thread is the only consumer.
    let out: Vec<String> = std::iter::from_fn(|| unsafe { m.pop() }).collect();
    assert_eq!(out, words);
}

#[test]
fn destructors_run_once_after_concurrent_pushes() {
    let drops = AtomicUsize::new(0);
    let per_producer = if cfg!(miri) { 50 } else { 10_000 };
    let m = Mailbox::new();
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut cache = NodeCache::new();
                (0..per_producer).for_each(|_| m.push_with(Counted(&drops), &mut cache));
            });
        }
        let mut cache = NodeCache::new();
        let mut popped = 0;
        while popped < per_producer {
            // SAFETY: this thread is the only consumer.
            if unsafe { m.pop_with(&mut cache) }.is_some() {
                popped += 1;
            }
        }
    });
    assert_eq!(drops.load(Ordering::Relaxed), per_producer);
    drop(m);
    assert_eq!(drops.load(Ordering::Relaxed), 3 * per_producer);
}

#[test]
fn consumer_and_its_cache_may_change_threads_between_pops() {
    let m = Mailbox::new();
    (0..100).for_each(|i| m.push(i));
    let mut cache = NodeCache::with_limit(10);
    let mut expected = 0;
    for _ in 0..4 {
        // The scope's join orders each consumer after the previous one; the
        // cache moves with it (it is `Send`).
        let (got, back) = thread::scope(|s| {
            s.spawn(|| {
                let mut cache = cache;
                // SAFETY: one consumer at a time, ordered by the join.
                let got: Vec<_> = (0..25)
                    .map(|_| unsafe { m.pop_with(&mut cache) }.unwrap())
                    .collect();
                (got, cache)
            })
            .join()
            .unwrap()
        });
        cache = back;
        assert_eq!(got, (expected..expected + 25).collect::<Vec<_>>());
        expected += 25;
    }
    assert_eq!(cache.len(), 10);
}

/// `producers` threads each send `STRESS_ITEMS` `(producer, seq)` pairs into
/// one inbox, with a cache of their own; the consumer pops them with its
/// cache, checks that each producer's sequence arrives complete and in
/// order, and acknowledges into the producer's own return mailbox, taking
/// the nodes the inbox released. Producers pop acknowledgements into their
/// caches and send their next items with those nodes, so in steady state the
/// nodes go round between threads and almost nothing is allocated.
fn stress(producers: usize) {
    let inbox = Mailbox::new();
    // Acknowledgements have the items' type, so that their nodes are
    // interchangeable: `(producer, items received so far)`.
    let acks: Vec<Mailbox<(usize, u64)>> = (0..producers).map(|_| Mailbox::new()).collect();
    let start = Barrier::new(producers + 1);
    thread::scope(|s| {
        for (p, ack) in acks.iter().enumerate() {
            let (inbox, start) = (&inbox, &start);
            s.spawn(move || {
                let mut cache = NodeCache::new();
                let mut acked = 0;
                start.wait();
                for seq in 0..STRESS_ITEMS {
                    while seq - acked >= WINDOW {
                        // SAFETY: this thread is `ack`'s only consumer.
                        match unsafe { ack.pop_with(&mut cache) } {
                            Some((_, upto)) => acked = upto,
                            None => thread::yield_now(),
                        }
                    }
                    inbox.push_with((p, seq), &mut cache);
                }
            });
        }
        let mut cache = NodeCache::new();
        let mut next = vec![0u64; producers];
        start.wait();
        let mut left = STRESS_ITEMS * producers as u64;
        while left > 0 {
            // SAFETY: this thread is the inbox's only consumer.
            let Some((p, seq)) = (unsafe { inbox.pop_with(&mut cache) }) else {
                thread::yield_now();
                continue;
            };
            assert_eq!(seq, next[p], "producer {p}: lost, duplicated or reordered");
            next[p] += 1;
            left -= 1;
            if next[p] % (WINDOW / 4) == 0 {
                acks[p].push_with((p, next[p]), &mut cache);
            }
        }
        assert!(next.iter().all(|&n| n == STRESS_ITEMS));
    });
    // SAFETY: every thread has been joined; this is the only consumer.
    assert_eq!(unsafe { inbox.try_pop() }, Err(TryPopError::Empty));
}

#[test]
fn stress_two_producers_with_caches() {
    stress(2);
}

#[test]
fn stress_three_producers_with_caches() {
    stress(3);
}
