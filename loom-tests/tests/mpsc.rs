//! loom models of `stepsched::mpsc::Queue`.
//!
//! Run (under a second per model in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test mpsc
//! ```
//!
//! Under loom the queue recycles nodes after every pop (`PUBLISH_BATCH` is 1
//! and `SPARE_MAX` 2 in `src/mpsc/node.rs`), so even these small models walk
//! the hand-back of nodes from consumer to producers.

#![cfg(loom)]

use std::sync::atomic::{AtomicBool as StdAtomicBool, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::mpsc::{Queue, TryPopError};

/// Two producers push concurrently with a consumer popping; after the joins
/// the rest is drained. Every item arrives exactly once and each producer's
/// items arrive in the order it pushed them.
#[test]
fn two_producers_one_consumer_lose_nothing_and_keep_order() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        let producers: Vec<_> = [(1u8, 2u8), (2, 2)]
            .into_iter()
            .map(|(id, count)| {
                let q = Arc::clone(&q);
                thread::spawn(move || (0..count).for_each(|i| q.push((id, i))))
            })
            .collect();
        let mut got = Vec::new();
        for _ in 0..3 {
            // SAFETY: this thread is the only consumer.
            if let Some(item) = unsafe { q.pop() } {
                got.push(item);
            }
        }
        producers.into_iter().for_each(|h| h.join().unwrap());
        // Every push has completed, so nothing can be mid-link any more.
        // SAFETY: this thread is the only consumer.
        while let Some(item) = unsafe { q.pop() } {
            got.push(item);
        }
        let from = |id| got.iter().filter(move |(p, _)| *p == id).map(|(_, i)| *i);
        assert_eq!(from(1).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(from(2).collect::<Vec<_>>(), [0, 1]);
        assert!(q.is_empty());
    });
}

/// Set when some execution saw the mid-link window, so the model is known to
/// reach it (not reset between executions on purpose).
static SAW_MID_LINK: StdAtomicBool = StdAtomicBool::new(false);

/// A producer pushes one item while the consumer pops and then asks
/// `is_empty`. When the pop lands in the window between the producer's swap
/// and its link, it gets `Inconsistent` (not `Empty`), and `is_empty` still
/// says the item is there (DESIGN.md trap 4). After a successful pop of the
/// only item the queue is empty.
#[test]
fn is_empty_is_false_while_a_push_is_mid_link() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        let producer = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.push(7u32))
        };
        // SAFETY: this thread is the only consumer.
        let first = unsafe { q.try_pop() };
        let empty = q.is_empty();
        match first {
            Err(TryPopError::Inconsistent) => {
                SAW_MID_LINK.store(true, StdOrdering::Relaxed);
                assert!(!empty, "is_empty missed an item whose push is mid-link");
            }
            Ok(7) => assert!(empty, "the only item was popped"),
            Ok(other) => panic!("popped {other}, never pushed"),
            Err(TryPopError::Empty) => {}
        }
        producer.join().unwrap();
        if first.is_err() {
            // SAFETY: this thread is the only consumer.
            assert_eq!(unsafe { q.pop() }, Some(7));
        }
        assert!(q.is_empty());
    });
    assert!(
        SAW_MID_LINK.load(StdOrdering::Relaxed),
        "the model never reached the mid-link window"
    );
}

/// The queue is never empty here: `a` is queued at the start, `b` is pushed
/// before the consumer takes `a`, and `c` reuses the stub the consumer just
/// recycled. An observer asking `is_empty` may read the stub before the pop
/// and `head` after `c`'s push: the same address, so it must notice the pop
/// in between (pop-generation invariant) and answer `false`.
#[test]
fn is_empty_is_not_fooled_by_a_recycled_stub() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        q.push('a');
        let b_pushed = Arc::new(AtomicBool::new(false));
        let a_popped = Arc::new(AtomicBool::new(false));
        let producer = {
            let (q, b_pushed, a_popped) = (q.clone(), b_pushed.clone(), a_popped.clone());
            thread::spawn(move || {
                q.push('b');
                b_pushed.store(true, Ordering::Release);
                while !a_popped.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                q.push('c');
            })
        };
        let consumer = {
            let (q, b_pushed, a_popped) = (q.clone(), b_pushed.clone(), a_popped.clone());
            thread::spawn(move || {
                while !b_pushed.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // SAFETY: the only consumer until it is joined.
                assert_eq!(unsafe { q.pop() }, Some('a'));
                a_popped.store(true, Ordering::Release);
            })
        };
        assert!(!q.is_empty(), "is_empty said empty while b or c was queued");
        producer.join().unwrap();
        consumer.join().unwrap();
        // SAFETY: the only consumer now.
        unsafe {
            assert_eq!(q.pop(), Some('b'));
            assert_eq!(q.pop(), Some('c'));
        }
    });
}

/// A producer pushing through a `Producer` handle takes the chains of nodes
/// the consumer recycles while it pops (every pop publishes under loom), and
/// gives what it did not use back when the handle drops: nothing is lost,
/// duplicated or reordered, and loom sees no racy access to a reused node.
#[test]
fn producer_handle_reuses_nodes_the_consumer_recycles() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        q.push(0u8);
        let producer = {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                let mut tx = q.producer();
                (1..=3).for_each(|i| tx.push(i));
            })
        };
        let mut got = Vec::new();
        for _ in 0..2 {
            // SAFETY: this thread is the only consumer.
            got.extend(unsafe { q.pop() });
        }
        producer.join().unwrap();
        // SAFETY: this thread is the only consumer.
        got.extend(std::iter::from_fn(|| unsafe { q.pop() }));
        assert_eq!(got, [0, 1, 2, 3]);
    });
}

/// Items still queued when the queue is dropped are dropped with it, and
/// popped ones are not dropped twice: loom fails the model if any
/// `loom::sync::Arc` leaks, and `strong_count` catches a double drop.
#[test]
fn dropping_the_queue_drops_every_remaining_item_once() {
    loom::model(|| {
        let token = Arc::new(());
        let q = Arc::new(Queue::new());
        let producer = {
            let (q, token) = (q.clone(), token.clone());
            thread::spawn(move || {
                q.push(token.clone());
                q.push(token);
            })
        };
        // SAFETY: this thread is the only consumer.
        let popped = unsafe { q.pop() };
        producer.join().unwrap();
        let queue = Arc::try_unwrap(q).expect("the producer's handle was dropped");
        drop(queue);
        assert_eq!(Arc::strong_count(&token), 1 + usize::from(popped.is_some()));
    });
}
