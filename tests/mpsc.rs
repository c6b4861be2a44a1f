//! Behaviour and stress tests for `stepsched::mpsc::Queue`.
//!
//! Sizes shrink under Miri (`cfg!(miri)`); a normal run takes a few seconds.

mod common;
use common::drops::Counted;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use stepsched::mpsc::{Queue, TryPopError};

/// Items each stress producer pushes.
const STRESS_ITEMS: usize = if cfg!(miri) { 200 } else { 1_000_000 };

#[test]
fn smoke_fifo() {
    let q = Queue::new();
    assert!(q.is_empty());
    for i in 0..1000 {
        q.push(i);
    }
    assert!(!q.is_empty());
    for i in 0..1000 {
        // SAFETY: the test thread is the only consumer.
        assert_eq!(unsafe { q.pop() }, Some(i));
    }
    // SAFETY: as above.
    assert_eq!(unsafe { q.try_pop() }, Err(TryPopError::Empty));
    assert!(q.is_empty());
}

#[test]
fn strings_survive_the_trip() {
    let q = Queue::new();
    let words = ["alpha", "beta", "gamma"].map(String::from);
    words.iter().cloned().for_each(|w| q.push(w));
    // SAFETY: the test thread is the only consumer.
    let out: Vec<String> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
    assert_eq!(out, words);
}

#[test]
fn destructors_run_exactly_once() {
    let drops = AtomicUsize::new(0);
    {
        let q = Queue::new();
        for _ in 0..500 {
            q.push(Counted(&drops));
        }
        for _ in 0..200 {
            // SAFETY: the test thread is the only consumer.
            let item = unsafe { q.pop() }.expect("500 were pushed");
            drop(item);
        }
        assert_eq!(drops.load(Ordering::Relaxed), 200);
    }
    assert_eq!(drops.load(Ordering::Relaxed), 500);
}

#[test]
fn destructors_run_once_after_concurrent_pushes() {
    let drops = AtomicUsize::new(0);
    let per_producer = if cfg!(miri) { 50 } else { 10_000 };
    let q = Queue::new();
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| (0..per_producer).for_each(|_| q.push(Counted(&drops))));
        }
        let mut popped = 0;
        while popped < per_producer {
            // SAFETY: this thread is the only consumer.
            if unsafe { q.pop() }.is_some() {
                popped += 1;
            }
        }
    });
    assert_eq!(drops.load(Ordering::Relaxed), per_producer);
    drop(q);
    assert_eq!(drops.load(Ordering::Relaxed), 3 * per_producer);
}

#[test]
fn consumer_may_change_threads_between_pops() {
    let q = Arc::new(Queue::new());
    (0..100).for_each(|i| q.push(i));
    let mut expected = 0;
    for _ in 0..4 {
        let q = Arc::clone(&q);
        // The join orders each consumer after the previous one.
        let got = thread::spawn(move || {
            // SAFETY: one consumer at a time, ordered by `join`.
            (0..25)
                .map(|_| unsafe { q.pop() }.unwrap())
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap();
        assert_eq!(got, (expected..expected + 25).collect::<Vec<_>>());
        expected += 25;
    }
}

/// `producers` threads push `STRESS_ITEMS` each (through a `Producer` handle
/// if `handles`); this thread pops until it has seen all of them, checking
/// that each producer's sequence arrives complete and in order.
fn stress(producers: usize, handles: bool) {
    let q = Queue::new();
    let start = Barrier::new(producers + 1);
    thread::scope(|s| {
        for p in 0..producers {
            let (q, start) = (&q, &start);
            s.spawn(move || {
                start.wait();
                if handles {
                    let mut tx = q.producer();
                    (0..STRESS_ITEMS).for_each(|i| tx.push((p, i)));
                } else {
                    (0..STRESS_ITEMS).for_each(|i| q.push((p, i)));
                }
            });
        }
        start.wait();
        let mut next = vec![0usize; producers];
        let mut remaining = producers * STRESS_ITEMS;
        let mut inconsistent = 0u64;
        while remaining > 0 {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.try_pop() } {
                Ok((p, i)) => {
                    assert_eq!(i, next[p], "producer {p}: got {i}, expected {}", next[p]);
                    next[p] += 1;
                    remaining -= 1;
                }
                Err(TryPopError::Inconsistent) => {
                    // The push behind it is mid-link, so the queue must
                    // report the item.
                    assert!(!q.is_empty());
                    inconsistent += 1;
                    thread::yield_now();
                }
                Err(TryPopError::Empty) => thread::yield_now(),
            }
        }
        assert!(next.iter().all(|&n| n == STRESS_ITEMS));
        // Informational: how often the consumer met the mid-link window.
        eprintln!("{producers} producers (handles: {handles}): {inconsistent} inconsistent pops");
    });
    assert!(q.is_empty());
    // SAFETY: all producers were joined by the scope; we are the consumer.
    assert_eq!(unsafe { q.try_pop() }, Err(TryPopError::Empty));
}

#[test]
fn stress_two_producers_one_consumer() {
    stress(2, false);
}

#[test]
fn stress_two_producer_handles_one_consumer() {
    stress(2, true);
}

#[test]
fn stress_three_producers_one_consumer() {
    stress(3, false);
}

#[test]
fn stress_four_producer_handles_one_consumer() {
    stress(4, true);
}

/// An observer thread polls `is_empty` while a producer and the consumer
/// hand items over one at a time through a phase word: the producer pushes
/// item `i` and then sets phase `2i + 1`; the consumer waits for that phase,
/// sets `2i + 2` and only then pops. So while the phase is odd an item is
/// queued, and an observer that saw the same odd phase before and after its
/// `is_empty` call must have been told "not empty".
#[test]
fn is_empty_never_misses_a_completed_push() {
    let rounds = if cfg!(miri) { 50 } else { 100_000 };
    let q = Queue::new();
    let phase = AtomicUsize::new(0);
    let checked = AtomicUsize::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..rounds {
                while phase.load(Ordering::Acquire) != 2 * i {
                    thread::yield_now();
                }
                q.push(i);
                phase.store(2 * i + 1, Ordering::Release);
            }
        });
        s.spawn(|| {
            while phase.load(Ordering::Acquire) < 2 * rounds {
                let before = phase.load(Ordering::Acquire);
                let empty = q.is_empty();
                let after = phase.load(Ordering::Acquire);
                if before == after && before % 2 == 1 {
                    assert!(!empty, "is_empty missed item {}", before / 2);
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        for i in 0..rounds {
            while phase.load(Ordering::Acquire) != 2 * i + 1 {
                thread::yield_now();
            }
            phase.store(2 * i + 2, Ordering::Release);
            loop {
                // SAFETY: this thread is the only consumer.
                if let Some(got) = unsafe { q.pop() } {
                    assert_eq!(got, i);
                    break;
                }
            }
        }
    });
    eprintln!("is_empty checked {} times", checked.load(Ordering::Relaxed));
}
