//! loom models of the global run queue (`GlobalQueue`, `src/sched/core/global.rs`).
//!
//! Run (5 to 10 seconds per model in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test global_queue
//! ```
//!
//! The consumer token is also checked indirectly: if two consumers could pop
//! at once, loom would report their concurrent access to the MPSC queue's
//! consumer-private `UnsafeCell`.

#![cfg(loom)]

use std::sync::atomic::{AtomicBool as StdAtomicBool, Ordering as StdOrdering};

use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{GlobalQueue, Take};
use stepsched_loom_tests::Gate;

/// Drains what a take returned into `got`, in order.
fn collect(take: Take<u32>, batch: Vec<u32>, got: &mut Vec<u32>) {
    if let Take::Taken { first, moved } = take {
        assert_eq!(moved, batch.len());
        got.push(first);
        got.extend(batch);
    }
}

/// Takes a batch from `global` and returns what it got, in order (nothing
/// unless the take returned `Taken`).
fn take_batch(global: &GlobalQueue<u32>) -> Vec<u32> {
    let mut batch = Vec::new();
    let take = global.take_batch(|i| batch.push(i));
    let mut got = Vec::new();
    collect(take, batch, &mut got);
    got
}

/// Two consumers take a batch each while a producer pushes. Every item is
/// taken exactly once, each batch is in FIFO order, and a consumer that
/// finds the token held gets `Busy` instead of waiting.
#[test]
fn two_consumers_take_batches_while_a_producer_pushes() {
    loom::model(|| {
        let global = Arc::new(GlobalQueue::new());
        global.push(0);
        let producer = {
            let global = Arc::clone(&global);
            thread::spawn(move || {
                global.push(1);
                global.push(2);
            })
        };
        let consumer = {
            let global = Arc::clone(&global);
            thread::spawn(move || take_batch(&global))
        };
        let mine = take_batch(&global);

        producer.join().unwrap();
        let theirs = consumer.join().unwrap();
        for got in [&mine, &theirs] {
            assert!(
                got.windows(2).all(|w| w[0] < w[1]),
                "batch out of order: {got:?}"
            );
        }
        let mut all: Vec<u32> = mine.into_iter().chain(theirs).collect();
        // No take is running now, so nothing is Busy and nothing mid-link.
        while let Some(i) = global.take_one().first() {
            all.push(i);
        }
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2]);
    });
}

/// The same with two producers pushing one item each, so the consumers also
/// meet two concurrent pushes (and their mid-link windows) at the queue's
/// head. Each item is taken exactly once.
#[test]
fn two_consumers_take_batches_while_two_producers_push() {
    loom::model(|| {
        let global = Arc::new(GlobalQueue::new());
        let producers: Vec<_> = [1, 2]
            .into_iter()
            .map(|i| {
                let global = Arc::clone(&global);
                thread::spawn(move || global.push(i))
            })
            .collect();
        let consumer = {
            let global = Arc::clone(&global);
            thread::spawn(move || take_batch(&global))
        };
        let mut all = take_batch(&global);
        producers.into_iter().for_each(|h| h.join().unwrap());
        all.extend(consumer.join().unwrap());
        while let Some(i) = global.take_one().first() {
            all.push(i);
        }
        all.sort_unstable();
        assert_eq!(all, [1, 2]);
    });
}

/// Items nobody took are dropped with the queue, and taken ones are not
/// dropped again (loom reports leaked `Arc`s; `strong_count` catches a
/// double drop).
///
/// The take starts from the beginning, or once the producer has pushed one
/// or both items (a [`Gate`]; `docs/proof/loom-limits.md`): a push claims
/// `head` with a load then a CAS, and loom alone never ran a push before
/// the take's first read of `head`, so in all its runs (1 execution) the
/// take found the queue empty and "taken ones are not dropped again" went
/// unchecked. Gated, the take returns nothing, one item or two across the
/// runs (asserted below).
#[test]
fn dropping_the_global_queue_drops_untaken_items_once() {
    static TOOK: [StdAtomicBool; 3] = [const { StdAtomicBool::new(false) }; 3];
    for start in 0..=2 {
        loom::model(move || drop_against_take(start));
    }
    for (held, took) in TOOK.iter().enumerate() {
        assert!(
            took.load(StdOrdering::Relaxed),
            "no run took {held} item(s) before the drop"
        );
    }

    fn drop_against_take(start: usize) {
        let token = Arc::new(());
        let global = Arc::new(GlobalQueue::new());
        let gate = Gate::new();
        let producer = {
            let (global, token, gate) = (global.clone(), token.clone(), gate.clone());
            thread::spawn(move || {
                global.push(token.clone());
                gate.pass(1);
                global.push(token);
                gate.pass(2);
            })
        };
        gate.wait(start);
        let mut taken = Vec::new();
        let first = global.take_batch(|t| taken.push(t)).first();
        producer.join().unwrap();
        drop(Arc::try_unwrap(global).expect("the producer's handle was dropped"));
        let held = taken.len() + usize::from(first.is_some());
        assert_eq!(Arc::strong_count(&token), 1 + held);
        TOOK[held].store(true, StdOrdering::Relaxed);
    }
}
