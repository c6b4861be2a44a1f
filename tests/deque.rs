//! Sequential semantics of `stepsched::deque`, through the public API only.
//!
//! Everything here runs on one thread, so every answer is exact: LIFO `pop`,
//! FIFO `steal`, the batch size and order of `steal_half_into`, growth that
//! keeps order across wrap-around, `len`/`is_empty`/`capacity`, stealing after
//! the `Worker` is gone, and drop accounting (every item dropped exactly once
//! when the last handle goes). Miri runs this file (`cargo +nightly miri test
//! --test deque`), so sizes shrink under `cfg!(miri)`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use stepsched::deque::{Pointer, Steal, Stealer, Worker, MAX_STEAL};

/// `full` normally, a much smaller size under Miri (which is ~1000x slower).
fn size(full: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        full
    }
}

/// The batch `steal_half_into` must claim from `n` queued items.
fn expected_batch(n: usize) -> usize {
    n.div_ceil(2).min(MAX_STEAL)
}

fn push_range(range: std::ops::Range<usize>, w: &Worker<Box<usize>>) {
    for i in range {
        w.push(Box::new(i));
    }
}

fn pop_all(w: &Worker<Box<usize>>) -> Vec<usize> {
    std::iter::from_fn(|| w.pop().map(|b| *b)).collect()
}

fn steal_one(s: &Stealer<Box<usize>>) -> Option<usize> {
    match s.steal() {
        Steal::Success(b) => Some(*b),
        Steal::Empty => None,
        Steal::Retry => panic!("steal returned Retry with no concurrent operation"),
    }
}

fn steal_all(s: &Stealer<Box<usize>>) -> Vec<usize> {
    std::iter::from_fn(|| steal_one(s)).collect()
}

// ---------------------------------------------------------------------------
// Handle traits.

#[test]
fn handles_have_the_documented_auto_traits() {
    fn send<X: Send>() {}
    fn send_sync_clone<X: Send + Sync + Clone>() {}
    send::<Worker<Box<u8>>>();
    send::<Worker<Arc<u8>>>();
    send_sync_clone::<Stealer<Box<u8>>>();
    send_sync_clone::<Stealer<Arc<u8>>>();

    // `Worker` must be `!Sync`: if it were `Sync`, both impls below would
    // apply and the call would be ambiguous, which does not compile.
    trait AmbiguousIfSync<A> {
        fn check() {}
    }
    impl<X: ?Sized> AmbiguousIfSync<()> for X {}
    impl<X: ?Sized + Sync> AmbiguousIfSync<u8> for X {}
    <Worker<Box<u8>> as AmbiguousIfSync<_>>::check();
}

// ---------------------------------------------------------------------------
// Order.

#[test]
fn owner_pops_newest_first() {
    let w = Worker::new();
    push_range(0..10, &w);
    assert_eq!(pop_all(&w), (0..10).rev().collect::<Vec<_>>());
    assert!(w.pop().is_none());
    assert!(w.is_empty());
}

#[test]
fn thief_steals_oldest_first() {
    let w = Worker::new();
    push_range(0..10, &w);
    let s = w.stealer();
    assert_eq!(steal_all(&s), (0..10).collect::<Vec<_>>());
    assert_eq!(s.steal(), Steal::Empty);
    assert!(w.pop().is_none());
}

#[test]
fn pop_and_steal_meet_in_the_middle() {
    let w = Worker::new();
    push_range(0..6, &w);
    let s = w.stealer();
    assert_eq!(steal_one(&s), Some(0));
    assert_eq!(w.pop().map(|b| *b), Some(5));
    assert_eq!(steal_one(&s), Some(1));
    assert_eq!(w.pop().map(|b| *b), Some(4));
    assert_eq!(steal_one(&s), Some(2));
    assert_eq!(w.pop().map(|b| *b), Some(3));
    assert_eq!(s.steal(), Steal::Empty);
    assert!(w.pop().is_none());
}

#[test]
fn pop_on_fresh_deque_is_none_and_steal_is_empty() {
    let w: Worker<Box<usize>> = Worker::new();
    assert!(w.pop().is_none());
    let s = w.stealer();
    assert_eq!(s.steal(), Steal::Empty);
    let dest = Worker::new();
    assert_eq!(s.steal_half_into(&dest), Steal::Empty);
    assert!(dest.is_empty());
}

#[test]
fn deque_is_reusable_after_emptying_from_either_end() {
    let w = Worker::with_capacity(2);
    let s = w.stealer();
    for round in 0..size(50, 10) {
        let base = round * 3;
        push_range(base..base + 3, &w);
        if round % 2 == 0 {
            assert_eq!(pop_all(&w), vec![base + 2, base + 1, base]);
        } else {
            assert_eq!(steal_all(&s), vec![base, base + 1, base + 2]);
        }
        assert!(w.is_empty() && s.is_empty());
    }
}

#[test]
fn cloned_stealers_share_one_deque() {
    let w = Worker::new();
    push_range(0..4, &w);
    let a = w.stealer();
    let b = a.clone();
    let c = w.stealer();
    assert_eq!(steal_one(&a), Some(0));
    assert_eq!(steal_one(&b), Some(1));
    assert_eq!(steal_one(&c), Some(2));
    assert_eq!(b.len(), 1);
    assert_eq!(steal_one(&a), Some(3));
    assert!(a.is_empty() && b.is_empty() && c.is_empty());
}

// ---------------------------------------------------------------------------
// steal_half_into: batch size and order.

#[test]
fn steal_half_into_takes_ceil_half_capped_at_max_steal() {
    assert_eq!(MAX_STEAL, 32);
    for n in [1, 2, 3, 4, 5, 6, 7, 31, 62, 63, 64, 65, 66, 100, 200] {
        let w = Worker::new();
        push_range(0..n, &w);
        let s = w.stealer();
        let dest = Worker::new();
        let k = expected_batch(n);

        // The thief gets the oldest item of the batch.
        assert_eq!(
            s.steal_half_into(&dest).success().map(|b| *b),
            Some(0),
            "n = {n}"
        );
        assert_eq!(
            dest.len(),
            k - 1,
            "n = {n}: dest holds the rest of the batch"
        );
        assert_eq!(w.len(), n - k, "n = {n}: victim keeps the rest");
        assert_eq!(s.len(), n - k, "n = {n}");

        // dest received items 1..k oldest first, so its owner pops the newest
        // of the batch first.
        assert_eq!(pop_all(&dest), (1..k).rev().collect::<Vec<_>>(), "n = {n}");
        // The victim still has k..n in order.
        assert_eq!(steal_all(&s), (k..n).collect::<Vec<_>>(), "n = {n}");
    }
}

#[test]
fn steal_half_into_spot_checks() {
    for (n, k) in [(1, 1), (2, 1), (3, 2), (4, 2), (9, 5), (100, 32)] {
        let w = Worker::new();
        push_range(0..n, &w);
        let dest = Worker::new();
        assert!(w.stealer().steal_half_into(&dest).is_success());
        assert_eq!(dest.len() + 1, k, "n = {n}");
    }
}

#[test]
fn steal_half_into_dest_is_fifo_for_its_own_thieves() {
    let w = Worker::new();
    push_range(0..10, &w);
    let dest = Worker::new();
    assert_eq!(
        w.stealer().steal_half_into(&dest).success().map(|b| *b),
        Some(0)
    );
    // dest's thieves see the batch oldest first.
    assert_eq!(steal_all(&dest.stealer()), vec![1, 2, 3, 4]);
}

#[test]
fn steal_half_into_appends_above_what_dest_already_holds() {
    let w = Worker::new();
    push_range(0..6, &w);
    let dest = Worker::with_capacity(1);
    push_range(100..103, &dest);
    assert_eq!(
        w.stealer().steal_half_into(&dest).success().map(|b| *b),
        Some(0)
    );
    // dest: [100, 101, 102, 1, 2] bottom-most last.
    assert_eq!(dest.len(), 5);
    assert_eq!(pop_all(&dest), vec![2, 1, 102, 101, 100]);
}

#[test]
fn repeated_steal_half_into_shrinks_by_the_expected_batches() {
    let n = 100;
    let w = Worker::new();
    push_range(0..n, &w);
    let s = w.stealer();
    let dest = Worker::new();
    let mut left = n;
    let mut next = 0;
    let mut batches = Vec::new();
    while let Steal::Success(first) = s.steal_half_into(&dest) {
        let k = expected_batch(left);
        assert_eq!(*first, next);
        let mut rest = pop_all(&dest);
        rest.reverse();
        assert_eq!(rest, (next + 1..next + k).collect::<Vec<_>>());
        batches.push(k);
        next += k;
        left -= k;
        assert_eq!(w.len(), left);
    }
    assert_eq!(left, 0);
    assert_eq!(batches, vec![32, 32, 18, 9, 5, 2, 1, 1]);
}

#[test]
fn steal_half_into_own_deque_chains_between_workers() {
    // Items can travel victim -> a -> b and keep their relative order.
    let victim = Worker::new();
    push_range(0..8, &victim);
    let a = Worker::new();
    let b = Worker::new();
    assert_eq!(
        victim.stealer().steal_half_into(&a).success().map(|x| *x),
        Some(0)
    ); // a = [1, 2, 3]
    assert_eq!(
        a.stealer().steal_half_into(&b).success().map(|x| *x),
        Some(1)
    ); // b = [2]
    assert_eq!(pop_all(&b), vec![2]);
    assert_eq!(pop_all(&a), vec![3]);
    assert_eq!(pop_all(&victim), vec![7, 6, 5, 4]);
}

#[test]
fn steal_half_into_its_own_worker_moves_the_batch_to_the_bottom() {
    // Legal if odd: the thief's destination is the victim itself. The batch
    // leaves the top and comes back at the bottom, oldest first.
    let w = Worker::new();
    push_range(0..6, &w);
    let s = w.stealer();
    assert_eq!(s.steal_half_into(&w).success().map(|b| *b), Some(0));
    // Before: [0 1 2 3 4 5]; claimed 0, 1, 2; after: [3 4 5 1 2].
    assert_eq!(w.len(), 5);
    assert_eq!(steal_all(&s), vec![3, 4, 5, 1, 2]);
}

#[test]
fn steal_half_into_grows_a_small_dest() {
    let w = Worker::new();
    push_range(0..64, &w);
    let dest = Worker::with_capacity(1);
    assert_eq!(dest.capacity(), 1);
    assert!(w.stealer().steal_half_into(&dest).is_success());
    assert_eq!(dest.len(), MAX_STEAL - 1);
    assert!(dest.capacity() >= MAX_STEAL - 1);
    assert_eq!(pop_all(&dest), (1..MAX_STEAL).rev().collect::<Vec<_>>());
}

#[test]
fn steal_half_into_with_shows_the_whole_batch_before_dest_gets_any() {
    for n in [1, 2, 5, 64, 100] {
        let w = Worker::new();
        push_range(0..n, &w);
        let dest = Worker::new();
        push_range(1000..1003, &dest); // already there: not shown
        let k = expected_batch(n);
        let mut seen = Vec::new();
        let got = w.stealer().steal_half_into_with(&dest, |batch| {
            // Shown while dest still holds only what it had.
            assert_eq!(dest.len(), 3, "n = {n}");
            seen.extend(batch.iter().map(|b| **b));
        });
        assert_eq!(got.success().map(|b| *b), Some(0), "n = {n}");
        assert_eq!(seen, (0..k).collect::<Vec<_>>(), "n = {n}: oldest first");
        assert_eq!(dest.len(), 3 + k - 1, "n = {n}");
        assert_eq!(w.len(), n - k, "n = {n}");
    }
    // Nothing to take: `look` is not called.
    let w: Worker<Box<usize>> = Worker::new();
    let got = w
        .stealer()
        .steal_half_into_with(&Worker::new(), |_| panic!("shown an empty batch"));
    assert!(got.is_empty());
}

#[test]
fn steal_half_into_with_a_panicking_look_drops_the_batch_once_and_pushes_none() {
    let n = 10;
    let tally = Tally::new(n);
    let w = Worker::new();
    counted(&w, &tally, 0..n);
    let dest = Worker::new();
    let s = w.stealer();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.steal_half_into_with(&dest, |_| panic!("look panics"))
    }));
    assert!(result.is_err());
    assert!(dest.is_empty(), "nothing pushed");
    assert_eq!(w.len(), n - expected_batch(n), "the batch left the victim");
    // The batch (ids 0..5) was dropped by the unwinding, once each; the
    // rest are still queued.
    let dropped = tally.dropped();
    assert_eq!(&dropped[..expected_batch(n)], &[1; 5]);
    assert!(dropped[expected_batch(n)..].iter().all(|&d| d == 0));
    drop((w, s, dest));
    tally.assert_each_dropped_once();
}

// ---------------------------------------------------------------------------
// Capacity and growth.

#[test]
fn with_capacity_rounds_up_to_a_power_of_two() {
    for (min, cap) in [(0, 1), (1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (1000, 1024)] {
        let w: Worker<Box<u8>> = Worker::with_capacity(min);
        assert_eq!(w.capacity(), cap, "with_capacity({min})");
    }
    let w: Worker<Box<u8>> = Worker::new();
    assert!(w.capacity().is_power_of_two());
}

#[test]
fn capacity_one_grows_on_the_second_push() {
    let w = Worker::with_capacity(1);
    w.push(Box::new(0usize));
    assert_eq!(w.capacity(), 1);
    w.push(Box::new(1));
    assert_eq!(w.capacity(), 2);
    w.push(Box::new(2));
    assert_eq!(w.capacity(), 4);
    assert_eq!(pop_all(&w), vec![2, 1, 0]);
}

#[test]
fn growth_keeps_order_when_the_ring_has_wrapped() {
    // Interleave pushes and steals so `top` moves and the live window wraps
    // around the ring several times before each growth.
    let w = Worker::with_capacity(1);
    let s = w.stealer();
    let mut model = VecDeque::new();
    let mut next = 0usize;
    let mut last_cap = w.capacity();
    let mut grew = 0;
    for round in 0..size(2000, 200) {
        // Push two, take one: the deque slowly fills, wrapping as it goes.
        for _ in 0..2 {
            w.push(Box::new(next));
            model.push_back(next);
            next += 1;
        }
        if round % 3 == 2 {
            assert_eq!(w.pop().map(|b| *b), model.pop_back());
        } else {
            assert_eq!(steal_one(&s), model.pop_front());
        }
        let cap = w.capacity();
        assert!(cap.is_power_of_two() && cap >= w.len(), "cap {cap}");
        assert!(cap >= last_cap, "capacity never shrinks");
        if cap > last_cap {
            grew += 1;
        }
        last_cap = cap;
        assert_eq!(w.len(), model.len());
    }
    assert!(grew >= 5, "the ring grew only {grew} times");
    // Drain half from each end and compare.
    while !model.is_empty() {
        assert_eq!(steal_one(&s), model.pop_front());
        assert_eq!(w.pop().map(|b| *b), model.pop_back());
    }
    assert!(w.is_empty());
}

#[test]
fn growth_from_a_wrapped_full_ring_keeps_order() {
    // Capacity 4, window at slots 2,3,0,1 when full; the fifth push grows.
    let w = Worker::with_capacity(4);
    let s = w.stealer();
    push_range(0..3, &w);
    assert_eq!(steal_all(&s).len(), 3); // top = bottom = 3
    push_range(10..14, &w); // slots 3, 0, 1, 2: wrapped and full
    assert_eq!(w.capacity(), 4);
    w.push(Box::new(14)); // grows
    assert_eq!(w.capacity(), 8);
    assert_eq!(steal_one(&s), Some(10));
    push_range(15..20, &w);
    assert_eq!(w.capacity(), 16);
    assert_eq!(steal_all(&s), (11..20).collect::<Vec<_>>());
}

#[test]
fn many_growths_then_pop_everything() {
    let n = size(100_000, 2_000);
    let w = Worker::with_capacity(1);
    push_range(0..n, &w);
    assert_eq!(w.len(), n);
    let cap = w.capacity();
    assert!(
        cap.is_power_of_two() && cap >= n,
        "capacity {cap} for {n} items"
    );
    let s = w.stealer();
    assert_eq!(s.len(), n);
    assert_eq!(steal_one(&s), Some(0));
    assert_eq!(pop_all(&w), (1..n).rev().collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------
// len / is_empty.

#[test]
fn len_and_is_empty_track_every_operation() {
    let w = Worker::with_capacity(2);
    let s = w.stealer();
    let dest = Worker::new();
    let check = |n: usize| {
        assert_eq!(w.len(), n);
        assert_eq!(s.len(), n);
        assert_eq!(w.is_empty(), n == 0);
        assert_eq!(s.is_empty(), n == 0);
    };
    check(0);
    push_range(0..5, &w);
    check(5);
    let _ = w.pop();
    check(4);
    let _ = s.steal();
    check(3);
    let _ = s.steal_half_into(&dest); // takes 2
    check(1);
    assert_eq!(dest.len(), 1);
    assert!(!dest.is_empty());
    let _ = w.pop();
    check(0);
    assert!(w.pop().is_none());
    check(0);
}

// ---------------------------------------------------------------------------
// The deque outlives its Worker.

#[test]
fn stealers_keep_stealing_after_the_worker_drops() {
    let w = Worker::with_capacity(1);
    push_range(0..10, &w);
    let s = w.stealer();
    let s2 = s.clone();
    drop(w);
    assert_eq!(s.len(), 10);
    let dest = Worker::new();
    assert_eq!(s2.steal_half_into(&dest).success().map(|b| *b), Some(0));
    assert_eq!(pop_all(&dest), vec![4, 3, 2, 1]);
    assert_eq!(steal_one(&s), Some(5));
    drop(s2);
    assert_eq!(steal_all(&s), vec![6, 7, 8, 9]);
    assert_eq!(s.steal(), Steal::Empty);
    assert!(s.is_empty());
}

// ---------------------------------------------------------------------------
// Drop accounting.

/// Counts drops per id, so a double drop and a leak are both visible.
struct Tally(Vec<AtomicUsize>);

impl Tally {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Tally((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }

    fn dropped(&self) -> Vec<usize> {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }

    fn assert_each_dropped_once(&self) {
        let d = self.dropped();
        for (id, &times) in d.iter().enumerate() {
            assert_eq!(times, 1, "item {id} dropped {times} times");
        }
    }
}

struct Counted {
    id: usize,
    tally: Arc<Tally>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.tally.0[self.id].fetch_add(1, Ordering::Relaxed);
    }
}

fn counted(w: &Worker<Box<Counted>>, tally: &Arc<Tally>, ids: std::ops::Range<usize>) {
    for id in ids {
        w.push(Box::new(Counted {
            id,
            tally: tally.clone(),
        }));
    }
}

#[test]
fn dropping_the_worker_drops_every_queued_item_once() {
    let n = size(1000, 100);
    let tally = Tally::new(n);
    let w = Worker::with_capacity(1);
    counted(&w, &tally, 0..n);
    assert!(w.capacity() >= n, "grew several times");
    assert!(tally.dropped().iter().all(|&d| d == 0));
    drop(w);
    tally.assert_each_dropped_once();
}

#[test]
fn drops_after_partial_steals_and_pops_in_a_grown_wrapped_ring() {
    let n = size(600, 60);
    let tally = Tally::new(n);
    let w = Worker::with_capacity(2);
    let s = w.stealer();
    let dest = Worker::with_capacity(1);
    let mut next = 0;
    // Fill, steal a bit, pop a bit, so live items wrap around and the ring grows.
    while next < n {
        let end = (next + 7).min(n);
        counted(&w, &tally, next..end);
        next = end;
        drop(s.steal().success()); // dropped here, once
        drop(w.pop());
        if next % 5 == 0 {
            drop(s.steal_half_into(&dest).success());
        }
    }
    let left_in_w = w.len();
    let left_in_dest = dest.len();
    assert!(left_in_w > 0 && left_in_dest > 0);
    let stolen_dropped = tally.dropped().iter().filter(|&&d| d == 1).count();
    assert_eq!(stolen_dropped + left_in_w + left_in_dest, n);
    drop(w);
    // The stealer still holds the deque: nothing more is dropped yet.
    assert_eq!(
        tally.dropped().iter().filter(|&&d| d == 1).count(),
        stolen_dropped
    );
    drop(s);
    drop(dest);
    tally.assert_each_dropped_once();
}

#[test]
fn last_handle_drops_items_whichever_handle_it_is() {
    // Stealer dropped first, Worker last.
    let tally = Tally::new(10);
    let w = Worker::with_capacity(1);
    counted(&w, &tally, 0..10);
    let s = w.stealer();
    let s2 = s.clone();
    drop(s);
    drop(s2);
    assert!(tally.dropped().iter().all(|&d| d == 0));
    drop(w);
    tally.assert_each_dropped_once();

    // Worker first, then one of several stealers last.
    let tally = Tally::new(10);
    let w = Worker::with_capacity(1);
    counted(&w, &tally, 0..10);
    let s = w.stealer();
    let s2 = s.clone();
    drop(w);
    drop(s);
    assert!(tally.dropped().iter().all(|&d| d == 0));
    drop(s2);
    tally.assert_each_dropped_once();
}

#[test]
fn delivered_items_are_not_dropped_by_the_deque() {
    let tally = Tally::new(4);
    let w = Worker::new();
    counted(&w, &tally, 0..4);
    let s = w.stealer();
    let a = w.pop().unwrap();
    let b = s.steal().success().unwrap();
    drop(w);
    drop(s);
    // Items 1 and 2 were dropped with the deque; 0 and 3 are still ours.
    assert_eq!(tally.dropped(), vec![0, 1, 1, 0]);
    assert_eq!((a.id, b.id), (3, 0));
    drop(a);
    drop(b);
    tally.assert_each_dropped_once();
}

// ---------------------------------------------------------------------------
// Pointer types.

#[test]
fn zero_sized_items_in_boxes() {
    let n = size(1000, 100);
    let w: Worker<Box<()>> = Worker::with_capacity(1);
    for _ in 0..n {
        w.push(Box::new(()));
    }
    assert_eq!(w.len(), n);
    let s = w.stealer();
    let dest = Worker::new();
    let mut got = 0;
    while let Steal::Success(()) = s.steal_half_into(&dest).map_unit() {
        got += 1;
        while dest.pop().is_some() {
            got += 1;
        }
        if w.pop().is_some() {
            got += 1;
        }
    }
    assert_eq!(got, n);
    assert!(w.is_empty());
    // And a ZST deque dropped with items in it.
    let w: Worker<Box<()>> = Worker::with_capacity(1);
    for _ in 0..10 {
        w.push(Box::new(()));
    }
    drop(w);
}

/// Discards the payload, keeping the variant (ZST boxes carry no value).
trait MapUnit {
    fn map_unit(self) -> Steal<()>;
}

impl<T> MapUnit for Steal<T> {
    fn map_unit(self) -> Steal<()> {
        match self {
            Steal::Empty => Steal::Empty,
            Steal::Success(_) => Steal::Success(()),
            Steal::Retry => Steal::Retry,
        }
    }
}

#[test]
fn arc_items_keep_their_identity_and_counts() {
    let shared = Arc::new(7u64);
    let w = Worker::with_capacity(1);
    // The same allocation queued several times: the deque must not care.
    for _ in 0..5 {
        w.push(shared.clone());
    }
    assert_eq!(Arc::strong_count(&shared), 6);
    let s = w.stealer();
    let stolen = s.steal().success().unwrap();
    assert!(Arc::ptr_eq(&stolen, &shared));
    let popped = w.pop().unwrap();
    assert!(Arc::ptr_eq(&popped, &shared));
    drop((stolen, popped));
    assert_eq!(Arc::strong_count(&shared), 4);
    drop(w);
    assert_eq!(Arc::strong_count(&shared), 4, "the stealer keeps the deque");
    drop(s);
    assert_eq!(Arc::strong_count(&shared), 1);
}

#[test]
fn distinct_arcs_come_back_in_order() {
    let arcs: Vec<Arc<usize>> = (0..20).map(Arc::new).collect();
    let w = Worker::with_capacity(2);
    for a in &arcs {
        w.push(a.clone());
    }
    let s = w.stealer();
    let dest = Worker::new();
    let first = s.steal_half_into(&dest).success().unwrap();
    assert!(Arc::ptr_eq(&first, &arcs[0]));
    let batch: Vec<usize> = std::iter::from_fn(|| dest.pop().map(|a| *a)).collect();
    assert_eq!(batch, (1..10).rev().collect::<Vec<_>>());
    assert_eq!(*w.pop().unwrap(), 19);
    drop(first);
    drop((w, s, dest));
    assert!(arcs.iter().all(|a| Arc::strong_count(a) == 1));
}

#[test]
fn pointer_round_trips_for_box_and_arc() {
    let raw = Box::new(41u32).into_raw();
    // SAFETY: `raw` came from `Box::<u32>::into_raw` just above, used once.
    let back = unsafe { <Box<u32> as Pointer>::from_raw(raw) };
    assert_eq!(*back, 41);

    let a = Arc::new(5u8);
    let raw = a.clone().into_raw();
    assert_eq!(Arc::strong_count(&a), 2);
    // SAFETY: `raw` came from `Arc::<u8>::into_raw` just above, used once.
    let back = unsafe { <Arc<u8> as Pointer>::from_raw(raw) };
    assert!(Arc::ptr_eq(&a, &back));
    drop(back);
    assert_eq!(Arc::strong_count(&a), 1);
}

// ---------------------------------------------------------------------------
// A sequential soak against a VecDeque model, all operations mixed.

#[test]
fn random_sequences_match_a_vecdeque_model() {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..size(200, 10) {
        let w = Worker::with_capacity((next() % 4) as usize);
        let s = w.stealer();
        let dest = Worker::with_capacity(1);
        let mut model = VecDeque::new();
        let mut dest_model = VecDeque::new();
        let mut id = 0usize;
        for _ in 0..size(300, 100) {
            match next() % 8 {
                0..=2 => {
                    w.push(Box::new(id));
                    model.push_back(id);
                    id += 1;
                }
                3 => assert_eq!(w.pop().map(|b| *b), model.pop_back()),
                4 => assert_eq!(steal_one(&s), model.pop_front()),
                5 => {
                    let k = expected_batch(model.len());
                    let got = s.steal_half_into(&dest).success().map(|b| *b);
                    assert_eq!(got, model.pop_front());
                    for _ in 1..k {
                        dest_model.push_back(model.pop_front().unwrap());
                    }
                }
                6 => assert_eq!(dest.pop().map(|b| *b), dest_model.pop_back()),
                _ => {
                    assert_eq!(w.len(), model.len());
                    assert_eq!(dest.len(), dest_model.len());
                }
            }
        }
        assert_eq!(
            pop_all(&dest),
            dest_model.into_iter().rev().collect::<Vec<_>>()
        );
        assert_eq!(steal_all(&s), model.into_iter().collect::<Vec<_>>());
    }
}
