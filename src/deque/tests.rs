//! Unit tests that look inside the deque (the ring, `head`'s halves).
//! Public behaviour is tested in `tests/deque/`; both run under Miri.

use super::*;
use crate::sync::{Arc, AtomicUsize, Ordering};

/// An item that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn invalidations<T: Pointer>(w: &Worker<T>) -> u32 {
    (w.inner.head.load(Ordering::Relaxed) >> 32) as u32
}

#[test]
fn pop_far_from_top_leaves_claims_valid() {
    let w = Worker::new();
    for i in 0..(MAX_STEAL * 2) {
        w.push(Box::new(i));
    }
    let before = invalidations(&w);
    // 64 items: popping positions 63..=32 is at least REACH above top = 0.
    for expect in (MAX_STEAL..MAX_STEAL * 2).rev() {
        assert_eq!(w.pop().map(|b| *b), Some(expect));
    }
    assert_eq!(invalidations(&w), before, "a far pop must not fail claims");
    // Position 31 is within REACH of top: that pop must invalidate.
    assert_eq!(w.pop().map(|b| *b), Some(MAX_STEAL - 1));
    assert_eq!(invalidations(&w), before + 1);
}

#[test]
fn stale_top_seen_still_invalidates_near_pops() {
    let w = Worker::new();
    let s = w.stealer();
    for i in 0..40 {
        w.push(Box::new(i));
    }
    // Thieves advance top to 32 behind the owner's back: top_seen stays 0.
    let mine = Worker::new();
    assert_eq!(s.steal_half_into(&mine).map(|b| *b), Steal::Success(0));
    assert_eq!(s.len(), 20);
    let before = invalidations(&w);
    // Position 39 looks far from top_seen = 0 but is 19 above the real top.
    assert_eq!(w.pop().map(|b| *b), Some(39));
    assert_eq!(invalidations(&w), before + 1);
}

#[test]
fn empty_pop_touches_no_atomic_state() {
    let w = Worker::<Box<u8>>::new();
    let head = w.inner.head.load(Ordering::Relaxed);
    assert!(w.pop().is_none());
    assert_eq!(w.inner.head.load(Ordering::Relaxed), head);
}

#[test]
fn growth_keeps_order_across_a_wrapped_ring() {
    let w = Worker::with_capacity(4);
    let s = w.stealer();
    // Move top and bottom so that the live range wraps the ring.
    for i in 0..3 {
        w.push(Box::new(i));
    }
    for i in 0..3 {
        assert_eq!(s.steal().map(|b| *b), Steal::Success(i));
    }
    for i in 3..7 {
        w.push(Box::new(i)); // positions 3..7 wrap slots 3, 0, 1, 2
    }
    assert_eq!(w.capacity(), 4);
    w.push(Box::new(7)); // full: grows to 8
    assert_eq!(w.capacity(), 8);
    for i in 3..8 {
        assert_eq!(s.steal().map(|b| *b), Steal::Success(i));
    }
    assert!(s.steal().is_empty());
}

#[test]
fn retired_rings_are_kept_and_freed() {
    let drops = Arc::new(AtomicUsize::new(0));
    let w = Worker::with_capacity(1);
    let s = w.stealer();
    for _ in 0..100 {
        w.push(Box::new(Counted(drops.clone())));
    }
    assert_eq!(w.capacity(), 128);
    drop(w);
    // The stealer keeps the deque (and every retired ring) alive.
    for _ in 0..10 {
        assert!(s.steal().is_success());
    }
    assert_eq!(drops.load(Ordering::Relaxed), 10);
    drop(s);
    assert_eq!(drops.load(Ordering::Relaxed), 100);
}

#[test]
fn positions_wrap_around_u32() {
    let w = Worker::with_capacity(2);
    let s = w.stealer();
    // Start just below the wrap point of the u32 positions.
    let start = u32::MAX - 3;
    w.inner.head.store(u64::from(start), Ordering::Relaxed);
    w.inner.owner.bottom.store(start, Ordering::Relaxed);
    w.top_seen.set(start);
    for i in 0..8 {
        w.push(Box::new(i));
    }
    assert_eq!(w.len(), 8);
    assert_eq!(s.steal().map(|b| *b), Steal::Success(0));
    let mine = Worker::new();
    assert_eq!(s.steal_half_into(&mine).map(|b| *b), Steal::Success(1));
    assert_eq!(mine.len(), 3);
    for expect in (5..8).rev() {
        assert_eq!(w.pop().map(|b| *b), Some(expect));
    }
    assert!(w.pop().is_none());
    assert_eq!(mine.pop().map(|b| *b), Some(4));
}

#[test]
fn growth_without_stealers_frees_old_rings_and_later_thieves_read_only_written_slots() {
    let drops = Arc::new(AtomicUsize::new(0));
    let w = Worker::with_capacity(2);
    // Grown with no stealer: rings skip the null fill and old ones are freed.
    for _ in 0..40 {
        w.push(Box::new(Counted(drops.clone())));
    }
    assert_eq!(w.capacity(), 64);
    // A thief made now reads only positions written since (Miri checks that
    // no uninitialised slot is read).
    let s = w.stealer();
    let mine = Worker::new();
    assert!(s.steal_half_into(&mine).is_success());
    assert_eq!(mine.len() + 1, 20);
    drop(s);
    // Alone again: this growth frees the chain, including the ring the
    // stealer read from.
    for _ in 0..40 {
        w.push(Box::new(Counted(drops.clone())));
    }
    assert_eq!(w.capacity(), 64);
    for _ in 0..30 {
        w.push(Box::new(Counted(drops.clone())));
    }
    assert_eq!(w.capacity(), 128);
    assert_eq!(w.len(), 40 - 20 + 70);
    drop(w);
    drop(mine);
    assert_eq!(drops.load(Ordering::Relaxed), 110);
}

/// A thief's last `Stealer` drops while the owner grows: the owner may then
/// free the old ring at once, so the thief's reads must be ordered before the
/// free. Under Miri, a missing Acquire in `grow` is a data race between the
/// thief's slot read and the deallocation.
#[test]
fn last_stealer_dropping_during_growth() {
    let rounds = if cfg!(miri) { 20 } else { 2_000 };
    for _ in 0..rounds {
        let w = Worker::with_capacity(2);
        w.push(Box::new(0));
        w.push(Box::new(1));
        let s = w.stealer();
        let thief = std::thread::spawn(move || {
            let got = s.steal().success().map(|b| *b);
            drop(s);
            got
        });
        for i in 2..6 {
            w.push(Box::new(i));
        }
        let mut seen: Vec<i32> = thief.join().unwrap().into_iter().collect();
        while let Some(b) = w.pop() {
            seen.push(*b);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
    }
}
