//! Drop accounting (every item dropped exactly once, whichever handle goes
//! last) and the pointer types a deque holds.

use super::*;

// ---------------------------------------------------------------------------
// Drop accounting.

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
