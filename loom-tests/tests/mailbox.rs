#![cfg(loom)]
//! loom models of `stepsched::mpsc::Mailbox` with `NodeCache`s.
//!
//! Run (a few seconds in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test mailbox
//! ```
//!
//! Node memory is loom-checked: each node's item is a loom `UnsafeCell` and
//! its link a loom atomic, so a node handed from one thread to another
//! without a happens-before edge (a reuse racing with the producer that
//! last linked it, or with the consumer that last read it) fails the model
//! as a data race.

use loom::sync::Arc;
use loom::thread;
use stepsched::mpsc::{Mailbox, NodeCache};

/// Two producers, each pushing through its own cache, race a consumer that
/// pops through a third; after the joins the rest is drained. Every item
/// arrives exactly once and each producer's items in the order it pushed
/// them.
#[test]
fn two_producers_with_caches_lose_nothing_and_keep_order() {
    loom::model(|| {
        let m = Arc::new(Mailbox::new());
        let producers: Vec<_> = [(1u8, 2u8), (2, 1)]
            .into_iter()
            .map(|(id, count)| {
                let m = Arc::clone(&m);
                thread::spawn(move || {
                    let mut cache = NodeCache::new();
                    (0..count).for_each(|i| m.push_with((id, i), &mut cache));
                })
            })
            .collect();
        let mut cache = NodeCache::new();
        let mut got = Vec::new();
        for _ in 0..2 {
            // SAFETY: this thread is the only consumer.
            got.extend(unsafe { m.pop_with(&mut cache) });
        }
        producers.into_iter().for_each(|h| h.join().unwrap());
        // Every push has completed, so nothing can be mid-link any more.
        // SAFETY: this thread is the only consumer.
        got.extend(std::iter::from_fn(|| unsafe { m.pop_with(&mut cache) }));
        let from = |id| got.iter().filter(move |(p, _)| *p == id).map(|(_, i)| *i);
        assert_eq!(from(1).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(from(2).collect::<Vec<_>>(), [0]);
        assert_eq!(cache.len(), 3, "every released node went to the cache");
    });
}

/// The worker pattern under contention. A producer pushes two items into
/// mailbox `a`; the consumer pops from `a` into its cache and at once pushes
/// what it got into mailbox `b` with the node `a` released, while `a`'s
/// producer may still be linking its second push (into the node that just
/// became `a`'s stub) and another producer pushes into `b`, possibly
/// linking into the recycled node. The reuse is safe (no data race on the
/// node, nothing lost or reordered): the released node's last producer
/// finished with it before the consumer read its `next`.
#[test]
fn node_recycled_into_another_mailbox_while_a_producer_links() {
    loom::model(|| {
        let a = Arc::new(Mailbox::new());
        let b = Arc::new(Mailbox::new());
        let to_a = {
            let a = Arc::clone(&a);
            thread::spawn(move || {
                let mut cache = NodeCache::new();
                a.push_with(1u32, &mut cache);
                a.push_with(2, &mut cache);
            })
        };
        let to_b = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.push_with(10u32, &mut NodeCache::new()))
        };
        let mut cache = NodeCache::new();
        let mut moved = Vec::new();
        // SAFETY: this thread is the only consumer of `a` and of `b`.
        if let Some(x) = unsafe { a.pop_with(&mut cache) } {
            b.push_with(x + 100, &mut cache);
            moved.push(x);
        }
        // SAFETY: as above.
        let early = unsafe { b.pop_with(&mut cache) };
        to_a.join().unwrap();
        to_b.join().unwrap();
        // SAFETY: as above.
        let rest_a: Vec<_> = std::iter::from_fn(|| unsafe { a.pop_with(&mut cache) }).collect();
        // SAFETY: as above.
        let rest_b = std::iter::from_fn(|| unsafe { b.pop_with(&mut cache) });
        let got_b: Vec<_> = early.into_iter().chain(rest_b).collect();

        let all_a: Vec<_> = moved.iter().copied().chain(rest_a).collect();
        assert_eq!(all_a, [1, 2], "a: lost, duplicated or reordered");
        let mut expected_b: Vec<_> = moved.iter().map(|x| x + 100).collect();
        expected_b.push(10);
        let mut sorted_b = got_b.clone();
        sorted_b.sort_unstable();
        expected_b.sort_unstable();
        assert_eq!(sorted_b, expected_b, "b: lost or duplicated");
    });
}

/// Items still queued when a mailbox is dropped are dropped with it, popped
/// ones are not dropped twice, and a node that went through a cache into
/// the other mailbox is freed once: loom fails the model if a
/// `loom::sync::Arc` leaks, and `strong_count` catches a double drop.
#[test]
fn dropping_mailboxes_drops_every_remaining_item_once() {
    loom::model(|| {
        let token = Arc::new(());
        let a = Arc::new(Mailbox::new());
        let b = Mailbox::new();
        let producer = {
            let (a, token) = (Arc::clone(&a), Arc::clone(&token));
            thread::spawn(move || {
                let mut cache = NodeCache::new();
                a.push_with(Arc::clone(&token), &mut cache);
                a.push_with(token, &mut cache);
            })
        };
        let mut cache = NodeCache::with_limit(1);
        // SAFETY: this thread is the only consumer of `a`.
        let popped = unsafe { a.pop_with(&mut cache) };
        if let Some(t) = &popped {
            b.push_with(Arc::clone(t), &mut cache);
        }
        producer.join().unwrap();
        let a = Arc::try_unwrap(a).expect("the producer's handle was dropped");
        drop((a, b, cache));
        assert_eq!(Arc::strong_count(&token), 1 + usize::from(popped.is_some()));
    });
}
