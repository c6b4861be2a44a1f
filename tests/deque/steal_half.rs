//! `steal_half_into`: how many items a batch takes, their order in the
//! destination, and the destination's growth; `steal_half_into_with`'s look
//! at the whole batch, and a look that panics.

use super::*;

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
