//! The handles' auto traits, the order of `pop` (newest first) and `steal`
//! (oldest first), `len` and `is_empty` after every operation, and stealing
//! after the `Worker` is gone.

use super::*;

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
