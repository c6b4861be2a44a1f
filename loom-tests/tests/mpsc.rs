//! loom models of `stepsched::mpsc::Queue`.
//!
//! Run (under a second per model in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test mpsc
//! ```
//!
//! Under loom a block holds two nodes (`Slab::MIN_NODES` in
//! `src/mpsc/block.rs`), so even these small models cross block boundaries:
//! producers install blocks (racing to do so), the consumer finishes blocks
//! and hands them back through the spare slot, and producers reuse them.

#![cfg(loom)]

use std::sync::atomic::{AtomicBool as StdAtomicBool, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::mpsc::{Queue, TryPopError};
use stepsched_loom_tests::Gate;

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
/// says the item is there (docs/ARCHITECTURE.md, trap 4). After a successful
/// pop of the
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

/// The queue is never empty here: `a` and `b` are queued at the start, `c`
/// is pushed before the consumer takes `b`, and `d` after. With two nodes
/// per block (loom), popping `a` and `b` releases both nodes of the first
/// block, the initial stub's, and `d`'s push finds `c` in its block's last
/// node, so it installs the first block again and `head` becomes the
/// initial stub's node. An observer asking `is_empty` may read that stub as
/// `tail` before the pops and `head` after `d`'s push: the same address, so
/// it must notice the pops in between (pop-generation invariant) and answer
/// `false`. Caveat: in our runs loom did not reach that interleaving (with
/// the generation check removed this model still passed; the observer is
/// the spawning thread, see the next model, which does reach it), so the
/// model covers the other interleavings; the unit test
/// `mpsc::tests::is_empty_sees_through_a_reused_stub` stages the reuse
/// inside one `is_empty` call and fails without the check. Why loom does
/// not reach it: the observer's first load is never preceded by a pop (the
/// load-then-CAS blind spot, `docs/proof/loom-limits.md`); loom with that
/// fixed, or this model gated, fails it for another reason (a fresh `tail`
/// with a stale `head`): see
/// `is_empty_reading_a_fresh_tail_and_a_stale_head_says_empty` below.
#[test]
fn is_empty_is_not_fooled_by_a_reused_stub() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        q.push('a');
        q.push('b');
        let c_pushed = Arc::new(AtomicBool::new(false));
        let b_popped = Arc::new(AtomicBool::new(false));
        let producer = {
            let (q, c_pushed, b_popped) = (q.clone(), c_pushed.clone(), b_popped.clone());
            thread::spawn(move || {
                q.push('c');
                c_pushed.store(true, Ordering::Release);
                while !b_popped.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                q.push('d');
            })
        };
        let consumer = {
            let (q, c_pushed, b_popped) = (q.clone(), c_pushed.clone(), b_popped.clone());
            thread::spawn(move || {
                // SAFETY: the only consumer until it is joined.
                assert_eq!(unsafe { q.pop() }, Some('a'));
                while !c_pushed.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // SAFETY: as above.
                assert_eq!(unsafe { q.pop() }, Some('b'));
                b_popped.store(true, Ordering::Release);
            })
        };
        assert!(!q.is_empty(), "is_empty said empty while c or d was queued");
        producer.join().unwrap();
        consumer.join().unwrap();
        // SAFETY: the only consumer now.
        unsafe {
            assert_eq!(q.pop(), Some('c'));
            assert_eq!(q.pop(), Some('d'));
        }
    });
}

/// A producer pushing through a `Producer` handle while the consumer pops:
/// item 0 (queued first) and the producer's three span three blocks (two
/// nodes each under loom, the stub taking the first), and the third is the
/// first block again whenever the consumer finished it in time and put it
/// in the spare slot. Nothing is lost, duplicated or reordered,
/// and loom sees no racy access to a node of a reused block: the block is
/// reused only after its last node was linked and popped (block-done).
#[test]
fn blocks_are_reused_only_after_their_last_node_is_linked_and_popped() {
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

/// One item is queued, so `head` is the last node of the first block; two
/// producers then push at once, and both find the block full. Each brings a
/// block (allocated, or the spare one) and CASes `head` to its first node;
/// the loser puts its block back as the spare and claims the node after
/// the winner's. The consumer pops meanwhile. Every item arrives exactly
/// once, and dropping the queue then frees what is left (Miri checks the
/// frees in the unit tests).
#[test]
fn two_producers_race_to_install_the_next_block() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        q.push(0u8);
        let producers: Vec<_> = [1u8, 2]
            .into_iter()
            .map(|i| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.push(i))
            })
            .collect();
        let mut got = Vec::new();
        for _ in 0..2 {
            // SAFETY: this thread is the only consumer.
            got.extend(unsafe { q.pop() });
        }
        producers.into_iter().for_each(|h| h.join().unwrap());
        // SAFETY: this thread is the only consumer.
        got.extend(std::iter::from_fn(|| unsafe { q.pop() }));
        assert_eq!(got[0], 0);
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
        assert!(q.is_empty());
    });
}

/// The claim's bounded way out under contention: a producer that loses its
/// CAS (under loom after one failure) swaps `head` into a block of its own
/// and records the rest of the old block as skipped. Three pushes from two
/// producers cross the two-node blocks while the consumer pops, so the
/// skipped block must be recycled exactly when its last claimed node is
/// released and then reused by a later push: recycled early, its reset
/// would clear a live link and lose an item; never recycled, the second
/// block boundary would allocate (checked through the order and count of
/// what arrives, and by Miri on the unit tests for leaks).
#[test]
fn a_producer_that_loses_its_claim_swaps_in_its_own_block() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        let producers: Vec<_> = [[1u8, 2], [3, 4]]
            .into_iter()
            .map(|items| {
                let q = Arc::clone(&q);
                thread::spawn(move || items.into_iter().for_each(|i| q.push(i)))
            })
            .collect();
        let mut got = Vec::new();
        for _ in 0..3 {
            // SAFETY: this thread is the only consumer.
            got.extend(unsafe { q.pop() });
        }
        producers.into_iter().for_each(|h| h.join().unwrap());
        // Enough pushes to cross two more block boundaries, reusing the
        // spare each time.
        (5..=8).for_each(|i| q.push(i));
        // SAFETY: this thread is the only consumer.
        got.extend(std::iter::from_fn(|| unsafe { q.pop() }));
        let firsts: Vec<_> = got.iter().filter(|&&i| i == 1 || i == 2).collect();
        assert_eq!(firsts, [&1, &2], "producer order");
        let seconds: Vec<_> = got.iter().filter(|&&i| i == 3 || i == 4).collect();
        assert_eq!(seconds, [&3, &4], "producer order");
        assert_eq!(got[got.len() - 4..], [5, 6, 7, 8]);
        assert_eq!(got.len(), 8);
        assert!(q.is_empty());
    });
}

/// The pop-generation invariant, reached without spin loops: `1`, `2` and
/// `3` are queued before the threads start (the stub is the first block's
/// first node, `head` the second block's last); the consumer (this thread)
/// pops `1` and `2`, which finishes the first block and makes it the spare,
/// and a producer pushes `4`, which installs the first block again whenever
/// it finds it in the spare slot: `head` is then the initial stub's node.
/// `3` is queued from before the observer starts until after it is joined,
/// so its `is_empty` must answer `false`; it can be fooled only by pairing
/// the old stub (as `tail`) with the reused node (as `head`) while both of
/// its pop counts agree. The observer is a spawned thread, not this one:
/// with `is_empty` on the spawning thread (as in
/// `is_empty_is_not_fooled_by_a_reused_stub`) loom ran only 51 executions,
/// every one reading the initial `popped` and `tail`, and the model passed
/// with the generation check removed (we did not find out why). As written
/// it runs about 4,900 executions (under a second) and fails without the
/// generation check.
///
/// Kills (each checked by weakening the line and running this model):
/// - `src/mpsc/mod.rs::Queue::is_empty_pausing::head.load#0:Acquire->Relaxed`:
///   the observer reads the reused node as `head` but its second pop count
///   stale (0);
/// - `src/mpsc/mod.rs::Queue::is_empty_pausing::popped.load#0:Acquire->Relaxed`
///   and `src/mpsc/mod.rs::Queue::pop_or_stub::popped.store#0:Release->Relaxed`:
///   the observer reads the final pop count (2) first, then the initial stub
///   as `tail` (nothing orders it after the pops), then the reused node as
///   `head`, whose Acquire makes the second count 2 as well.
#[test]
fn is_empty_is_false_while_an_item_stays_queued_across_a_stub_reuse() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        (1u8..=3).for_each(|i| q.push(i));
        let observer = {
            let q = Arc::clone(&q);
            thread::spawn(move || assert!(!q.is_empty(), "is_empty said empty while 3 was queued"))
        };
        let producer = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.push(4))
        };
        // SAFETY: this thread is the only consumer.
        unsafe {
            assert_eq!(q.pop(), Some(1));
            assert_eq!(q.pop(), Some(2));
        }
        observer.join().unwrap();
        producer.join().unwrap();
        // SAFETY: the only consumer.
        let rest: Vec<_> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
        assert_eq!(rest, [3, 4]);
    });
}

/// `is_empty` never answers `true` while an item is queued to a caller
/// that read the consumer's latest `tail` (a case the audit of the models
/// in `docs/proof/loom-limits.md` asks for). `a` and `b` are queued; one
/// thread pushes `c`, then pops `a` and `b` as the consumer. The observer,
/// started once `b` is popped (a [`Gate`], which orders nothing), must not
/// find the queue empty: with a Relaxed `tail` (the pop's store and
/// `is_empty`'s load) its `tail` load could read the pop of `b` and its
/// `head` load `b`'s claim, older than `c`'s, and `popped` 0 twice: `true`
/// with `c` queued (allowed by C++ and by Arm, not by x86). The Release /
/// Acquire pair on `tail` makes `c`'s claim visible to the `head` load.
///
/// `is_empty_is_not_fooled_by_a_reused_stub` above claims the same thing
/// and passed with the Relaxed pair only because loom never ran its pops
/// before the observer's first load (the load-then-CAS blind spot).
#[test]
fn is_empty_reading_a_fresh_tail_and_a_stale_head_says_empty() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        q.push('a');
        q.push('b');
        let gate = Gate::new();
        let worker = {
            let (q, gate) = (q.clone(), gate.clone());
            thread::spawn(move || {
                q.push('c');
                // SAFETY: the only consumer until it is joined.
                assert_eq!(unsafe { q.pop() }, Some('a'));
                // SAFETY: as above.
                assert_eq!(unsafe { q.pop() }, Some('b'));
                gate.pass(1);
            })
        };
        gate.wait(1);
        assert!(!q.is_empty(), "is_empty said empty while c was queued");
        worker.join().unwrap();
        // SAFETY: the only consumer now.
        assert_eq!(unsafe { q.pop() }, Some('c'));
    });
}
