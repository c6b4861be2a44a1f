//! Behaviour and stress tests for the global run queue (`GlobalQueue`,
//! `src/sched/core/global.rs`, reached through the crate's hidden `__internals`).
//!
//! Sizes shrink under Miri (`cfg!(miri)`); a normal run takes a second or two.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use stepsched::__internals::{GlobalQueue, Take, BATCH};
use stepsched::deque::Worker;

#[test]
fn take_moves_one_plus_batch_onto_a_local_deque() {
    let global = GlobalQueue::new();
    (0..40u32).for_each(|i| global.push(Box::new(i)));
    let local = Worker::new();
    let first = match global.take_batch_into(&local) {
        Take::Taken { first, moved } => {
            assert_eq!(moved, BATCH);
            first
        }
        other => panic!("expected a batch, got {other:?}"),
    };
    assert_eq!(*first, 0);
    assert_eq!(local.len(), BATCH);
    // The deque's owner end is LIFO, so the batch comes back newest first.
    let mut back: Vec<u32> = std::iter::from_fn(|| local.pop()).map(|b| *b).collect();
    back.reverse();
    assert_eq!(back, (1..=BATCH as u32).collect::<Vec<_>>());
}

#[test]
fn empty_queue_takes_nothing_and_calls_no_sink() {
    let global = GlobalQueue::<u8>::new();
    assert_eq!(global.take_batch(|_| panic!("sink called")), Take::Empty);
    assert!(global.take_one().is_empty());
}

/// Two producers and two consumers; every item is taken exactly once, and
/// each consumer sees each producer's items in increasing order (the token
/// serialises takes, so FIFO order is global).
#[test]
fn stress_two_producers_two_consumers_exactly_once() {
    let per_producer: u32 = if cfg!(miri) { 100 } else { 300_000 };
    let global = GlobalQueue::new();
    let producers_done = AtomicBool::new(false);
    let per_consumer = thread::scope(|s| {
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut got: Vec<(u32, u32)> = Vec::new();
                    loop {
                        let done = producers_done.load(Ordering::Acquire);
                        let mut batch = Vec::with_capacity(BATCH);
                        match global.take_batch(|item| batch.push(item)) {
                            Take::Taken { first, moved } => {
                                assert_eq!(moved, batch.len());
                                got.push(first);
                                got.extend(batch);
                            }
                            // Done was read before this empty take, so
                            // nothing more will come.
                            Take::Empty if done => break,
                            _ => thread::yield_now(),
                        }
                    }
                    got
                })
            })
            .collect();
        let producers: Vec<_> = (0..2u32)
            .map(|p| {
                let global = &global;
                s.spawn(move || (0..per_producer).for_each(|i| global.push((p, i))))
            })
            .collect();
        producers.into_iter().for_each(|h| h.join().unwrap());
        producers_done.store(true, Ordering::Release);
        consumers
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut seen = vec![vec![false; per_producer as usize]; 2];
    for got in &per_consumer {
        let mut last = [None::<u32>; 2];
        for &(p, i) in got {
            let p = p as usize;
            assert!(last[p] < Some(i), "consumer saw producer {p} out of order");
            last[p] = Some(i);
            assert!(!seen[p][i as usize], "item ({p}, {i}) taken twice");
            seen[p][i as usize] = true;
        }
    }
    assert!(seen.iter().flatten().all(|&s| s), "an item was lost");
    assert!(global.is_empty());
}
