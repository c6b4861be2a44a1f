//! Capacity and growth: `with_capacity` rounding, growth from one slot, and
//! growth that keeps the order when the ring has wrapped.

use super::*;

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
