//! Unit tests for [`Queue`]; small enough for Miri.

use super::*;
use std::cell::Cell;
use std::rc::Rc;

/// Counts its drops in a shared cell (the mailbox's tests use it too).
pub(crate) struct Counted(pub(crate) Rc<Cell<usize>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn fifo_single_thread() {
    let q = Queue::new();
    for i in 0..100 {
        q.push(i);
    }
    for i in 0..100 {
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Some(i));
    }
    // SAFETY: single consumer.
    assert_eq!(unsafe { q.try_pop() }, Err(TryPopError::Empty));
    assert!(q.is_empty());
}

#[test]
fn interleaved_push_pop_reuses_nodes() {
    // Many blocks' worth, so block installs, the spare slot (taken, and
    // refilled while full) and block reuse all run.
    // Bursts of up to two blocks and a half.
    let span = 5 * block::Slab::<usize>::NODES / 2;
    let q = Queue::new();
    let mut next_out = 0;
    for round in 0..40 {
        let burst = round * 37 % span;
        for i in 0..burst {
            q.push(round * 10_000 + i);
        }
        for i in 0..burst {
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }, Some(round * 10_000 + i));
            next_out += 1;
        }
        assert!(q.is_empty());
    }
    assert!(
        next_out > 4 * block::Slab::<usize>::NODES,
        "several blocks were recycled"
    );
}

#[test]
fn mid_link_push_is_not_empty_but_not_poppable() {
    let q = Queue::new();
    q.push(1);
    let pending = q.push_mid_link(2);
    q.push(3); // links to the pending node, which is not linked itself yet
               // SAFETY: single consumer.
    unsafe {
        assert_eq!(q.pop(), Some(1));
        assert_eq!(q.try_pop(), Err(TryPopError::Inconsistent));
        assert_eq!(q.pop(), None);
    }
    assert!(!q.is_empty());
    pending.link();
    // SAFETY: single consumer.
    unsafe {
        assert_eq!(q.pop(), Some(2));
        assert_eq!(q.pop(), Some(3));
        assert_eq!(q.try_pop(), Err(TryPopError::Empty));
    }
}

#[test]
fn mid_link_on_empty_queue() {
    let q = Queue::new();
    let pending = q.push_mid_link("x");
    assert!(!q.is_empty());
    // SAFETY: single consumer.
    assert_eq!(unsafe { q.try_pop() }, Err(TryPopError::Inconsistent));
    drop(pending); // dropping links too
                   // SAFETY: single consumer.
    assert_eq!(unsafe { q.pop() }, Some("x"));
}

#[test]
fn drop_drops_every_remaining_item_once() {
    let drops = Rc::new(Cell::new(0));
    let q = Queue::new();
    for _ in 0..10 {
        q.push(Counted(Rc::clone(&drops)));
    }
    for _ in 0..4 {
        // SAFETY: single consumer.
        drop(unsafe { q.pop() });
    }
    assert_eq!(drops.get(), 4);
    drop(q);
    assert_eq!(drops.get(), 10);
}

#[test]
fn popped_items_are_not_dropped_by_the_queue() {
    let drops = Rc::new(Cell::new(0));
    let q = Queue::new();
    q.push(Counted(Rc::clone(&drops)));
    // SAFETY: single consumer.
    let item = unsafe { q.pop() }.unwrap();
    drop(q);
    assert_eq!(drops.get(), 0);
    drop(item);
    assert_eq!(drops.get(), 1);
}

#[test]
fn debug_does_not_need_debug_items() {
    struct Opaque;
    let q = Queue::new();
    q.push(Opaque);
    assert_eq!(format!("{q:?}"), "Queue { is_empty: false, .. }");
}

#[test]
fn zero_sized_items() {
    let q = Queue::new();
    q.push(());
    q.push(());
    // SAFETY: single consumer.
    unsafe {
        assert_eq!(q.pop(), Some(()));
        assert_eq!(q.pop(), Some(()));
        assert_eq!(q.pop(), None);
    }
}

#[test]
fn two_producers_keep_their_order() {
    let n: usize = if cfg!(miri) { 50 } else { 20_000 };
    let q = std::sync::Arc::new(Queue::new());
    let handles: Vec<_> = (0..2)
        .map(|p| {
            let q = std::sync::Arc::clone(&q);
            std::thread::spawn(move || (0..n).for_each(|i| q.push((p, i))))
        })
        .collect();
    let mut next = [0usize; 2];
    while next != [n, n] {
        // SAFETY: this thread is the only consumer.
        match unsafe { q.pop() } {
            Some((p, i)) => {
                assert_eq!(i, next[p], "producer {p} out of order");
                next[p] += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert!(q.is_empty());
}

#[test]
fn producer_handle_mixed_with_push_keeps_order() {
    let q = Queue::new();
    let mut expected = 0;
    for round in 0..30 {
        let mut tx = q.producer();
        for i in 0..(round * 11 % 70) {
            tx.push(round * 1000 + i);
            if i % 3 == 0 {
                q.push(round * 1000 + i + 500); // plain pushes mixed in
            }
        }
        // SAFETY: single consumer.
        let got: Vec<_> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
        let mine: Vec<_> = got.iter().copied().filter(|v| v % 1000 < 500).collect();
        assert_eq!(
            mine,
            (0..(round * 11 % 70))
                .map(|i| round * 1000 + i)
                .collect::<Vec<_>>()
        );
        expected += got.len();
    }
    assert!(
        expected > 4 * block::Slab::<usize>::NODES,
        "several blocks were used"
    );
}

#[test]
fn producer_handles_on_two_threads() {
    let n: usize = if cfg!(miri) { 80 } else { 20_000 };
    let q = Queue::new();
    std::thread::scope(|s| {
        for p in 0..2 {
            let q = &q;
            s.spawn(move || {
                let mut tx = q.producer();
                (0..n).for_each(|i| tx.push((p, i)));
            });
        }
        let mut next = [0usize; 2];
        while next != [n, n] {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.pop() } {
                Some((p, i)) => {
                    assert_eq!(i, next[p]);
                    next[p] += 1;
                }
                None => std::thread::yield_now(),
            }
        }
    });
}

/// Dropping a queue frees a block in each state it can be in: back in the
/// spare slot, partly released, and partly claimed (`head`'s). Miri's leak
/// check and its use-after-free detection make this test the proof.
#[test]
fn drop_frees_blocks_in_every_state() {
    let nodes = block::Slab::<u32>::NODES as u32;
    let q = Queue::new();
    // The stub takes the first block's first node, so 2 * NODES items fill
    // the rest of it, a second block, and one node of a third.
    (0..2 * nodes).for_each(|i| q.push(i));
    for i in 0..=nodes {
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Some(i));
    }
    assert!(
        !q.spare.load(Ordering::Relaxed).is_null(),
        "the first block was finished and kept as the spare"
    );
    drop(q);
}

/// The ABA that the pop-generation invariant prevents, staged inside one
/// `is_empty` call: after it reads the stub (the first block's first node),
/// the first block is emptied and reused until `head` is that same node
/// again, while items stay queued throughout. `tail` then read equals `head`,
/// and only the changed pop count tells `is_empty` to answer `false`.
#[test]
fn is_empty_sees_through_a_reused_stub() {
    let n = block::Slab::<usize>::NODES;
    let q = Queue::new();
    let first_stub = q.consumer.tail.load(Ordering::Relaxed);
    // The rest of the first block, and the second block's first node.
    (0..n).for_each(|i| q.push(i));
    let empty = q.is_empty_pausing(|| {
        // Release every node of the first block but its last.
        for i in 0..n - 1 {
            // SAFETY: this thread is the only consumer.
            assert_eq!(unsafe { q.pop() }, Some(i));
        }
        // Fill the second block, so that its last node is `head`.
        (n..2 * n - 1).for_each(|i| q.push(i));
        // Releases the first block's last node: the block goes to `spare`.
        // SAFETY: this thread is the only consumer.
        assert_eq!(unsafe { q.pop() }, Some(n - 1));
        // Installs the first block again: `head` is its first node.
        q.push(2 * n - 1);
        assert_eq!(q.producers.head.load(Ordering::Relaxed), first_stub);
    });
    assert!(!empty, "is_empty was fooled by a reused stub");
    // SAFETY: single consumer.
    let rest: Vec<_> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
    assert_eq!(rest, (n..2 * n).collect::<Vec<_>>());
}

/// The claim's bounded way out: a push that lost its CAS attempts swaps
/// `head` to a block of its own. Order is kept, the nodes it skipped in the
/// old block are counted, and the old block is still recycled exactly when
/// its last claimed node is released (block-done, skip-published). Miri
/// checks that no block leaks or is freed early.
#[test]
fn a_push_that_swaps_in_its_own_block_skips_the_rest_of_the_old_one() {
    let q = Queue::new();
    let first_block = block::Slab::<u32>::block_of(q.producers.head.load(Ordering::Relaxed));
    // The first block: the stub, then 0 and 1.
    q.push(0u32);
    q.push(1);
    q.push_mid_link_fresh(2).link();
    let head = q.producers.head.load(Ordering::Relaxed);
    assert_ne!(
        block::Slab::<u32>::block_of(head),
        first_block,
        "2 is in a new block"
    );
    // The next push claims the new block's second node as usual.
    q.push(3);
    let after = q.producers.head.load(Ordering::Relaxed);
    assert_eq!(after, head.wrapping_add(1));
    for i in 0..2 {
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Some(i));
        assert!(q.spare.load(Ordering::Relaxed).is_null(), "recycled early");
    }
    // Releases the node of 1, the first block's last claimed node.
    // SAFETY: single consumer.
    assert_eq!(unsafe { q.pop() }, Some(2));
    assert_eq!(
        q.spare.load(Ordering::Relaxed),
        first_block,
        "skipped block recycled"
    );
    // SAFETY: single consumer.
    assert_eq!(unsafe { q.pop() }, Some(3));
    // SAFETY: single consumer.
    assert_eq!(unsafe { q.pop() }, None);
    assert!(q.is_empty());
    // The recycled block comes back, reset, for the next block boundary.
    (4..4 + block::Slab::<u32>::NODES as u32).for_each(|i| q.push(i));
    // SAFETY: single consumer.
    let rest: Vec<_> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
    assert_eq!(
        rest,
        (4..4 + block::Slab::<u32>::NODES as u32).collect::<Vec<_>>()
    );
}

/// A fresh-block push left mid-link, then dropped with the queue: the
/// skipped block and the new one are both freed once.
#[test]
fn drop_frees_a_skipped_block_with_a_push_mid_link() {
    let q = Queue::new();
    q.push(String::from("a"));
    let link = q.push_mid_link_fresh(String::from("b"));
    link.link();
    q.push(String::from("c"));
    drop(q);
}

/// The two owners that hand a block to the spare slot at once: the consumer
/// with a block it just finished (its last writes are the `released` counts)
/// and a producer with a block it took for a claim and did not install (in
/// `Slab::claim`). Whichever swap comes second frees the other's block, so
/// it must be ordered after the other's last writes to it: the Acquire half
/// of the swap in `put_spare`. Natively a smoke test; under Miri (`cargo
/// +nightly miri test --lib mpsc::tests::put_spare`) the free is a data
/// race with those writes when the swap is only Release, which kills
/// `src/mpsc/block.rs::put_spare::spare.swap#0:AcqRel->Release` (checked:
/// Miri reports the consumer's free of the producer's block racing with the
/// writes of its `alloc`; loom cannot see it, because under loom a claim
/// makes one CAS attempt and never puts a block back).
#[test]
fn put_spare_orders_the_previous_owners_writes_before_the_free() {
    use std::sync::Arc;
    use std::thread;

    type S = block::Slab<u64>;
    /// The header as a `Send` address (the block is handed over by the
    /// thread that owns it, which is what the test is about).
    struct Block(*mut block::Header);
    // SAFETY: only the owning thread uses the block; ownership moves through
    // `spare` (or the join at the end).
    unsafe impl Send for Block {}

    let spare = Arc::new(AtomicPtr::new(core::ptr::null_mut()));
    let consumer = {
        let spare = Arc::clone(&spare);
        thread::spawn(move || {
            let block = S::alloc();
            let first = S::first(block);
            // Every node released, as the consumer does one pop at a time;
            // the last release hands the block over.
            let mut done = None;
            for i in 0..S::NODES {
                // SAFETY: the block is ours; each node is released once and
                // holds no item.
                done = unsafe { S::release(first.wrapping_add(i)) };
            }
            assert_eq!(done, Some(block), "the last release finishes the block");
            // SAFETY: the block is ours, finished and empty.
            unsafe { block::put_spare::<u64>(&spare, block) };
        })
    };
    let producer = {
        let spare = Arc::clone(&spare);
        thread::spawn(move || {
            let block = Block(S::alloc());
            // SAFETY: a fresh block, ours, empty (a claim that did not
            // install it puts it back the same way).
            unsafe { block::put_spare::<u64>(&spare, block.0) };
        })
    };
    consumer.join().unwrap();
    producer.join().unwrap();
    // One of the two blocks was freed by the second swap; the other is left.
    let left = spare.load(Ordering::Relaxed);
    assert!(!left.is_null());
    // SAFETY: the threads are joined; the spare block is ours and empty.
    unsafe { S::dealloc(left) };
}
