//! The mailbox's unit tests; small enough for Miri.

use super::*;
use crate::mpsc::tests::Counted;
use std::cell::Cell;
use std::rc::Rc;

#[test]
fn is_two_words() {
    assert_eq!(
        core::mem::size_of::<Mailbox<u64>>(),
        2 * core::mem::size_of::<usize>()
    );
    assert_eq!(
        core::mem::size_of::<Mailbox<[u64; 8]>>(),
        2 * core::mem::size_of::<usize>()
    );
}

#[test]
fn fifo_with_and_without_cache() {
    let m = Mailbox::new();
    let mut cache = NodeCache::new();
    for i in 0..100 {
        if i % 2 == 0 {
            m.push(i);
        } else {
            m.push_with(i, &mut cache);
        }
    }
    for i in 0..100 {
        // SAFETY: single consumer.
        let got = unsafe {
            if i % 3 == 0 {
                m.pop()
            } else {
                m.pop_with(&mut cache)
            }
        };
        assert_eq!(got, Some(i));
    }
    // SAFETY: single consumer.
    unsafe {
        assert_eq!(m.try_pop(), Err(TryPopError::Empty));
        assert_eq!(m.try_pop_with(&mut cache), Err(TryPopError::Empty));
        assert_eq!(m.pop(), None);
    }
}

#[test]
fn two_producers_keep_their_order() {
    let n: usize = if cfg!(miri) { 50 } else { 20_000 };
    let m = Mailbox::new();
    let mut cache = NodeCache::new();
    std::thread::scope(|s| {
        for p in 0..2 {
            let m = &m;
            s.spawn(move || {
                let mut cache = NodeCache::with_limit(8);
                (0..n).for_each(|i| m.push_with((p, i), &mut cache));
            });
        }
        let mut next = [0usize; 2];
        while next != [n, n] {
            // SAFETY: this thread is the only consumer.
            match unsafe { m.pop_with(&mut cache) } {
                Some((p, i)) => {
                    assert_eq!(i, next[p], "producer {p} out of order");
                    next[p] += 1;
                }
                None => std::thread::yield_now(),
            }
        }
    });
    // SAFETY: single consumer.
    assert_eq!(unsafe { m.try_pop() }, Err(TryPopError::Empty));
}

#[test]
fn mid_link_push_blocks_the_items_behind_it() {
    let m = Mailbox::new();
    let mut cache = NodeCache::new();
    m.push(1);
    let pending = m.push_mid_link(2, &mut cache);
    m.push_with(3, &mut cache); // links to the pending node
                                // SAFETY: single consumer.
    unsafe {
        assert_eq!(m.pop_with(&mut cache), Some(1));
        assert_eq!(m.try_pop_with(&mut cache), Err(TryPopError::Inconsistent));
        assert_eq!(m.try_pop(), Err(TryPopError::Inconsistent));
        assert_eq!(m.pop(), None);
    }
    pending.link();
    // SAFETY: single consumer.
    unsafe {
        assert_eq!(m.pop_with(&mut cache), Some(2));
        assert_eq!(m.pop(), Some(3));
        assert_eq!(m.try_pop(), Err(TryPopError::Empty));
    }
}

#[test]
fn drop_drops_every_remaining_item_once() {
    let drops = Rc::new(Cell::new(0));
    let mut cache = NodeCache::new();
    let m = Mailbox::new();
    for i in 0..10 {
        let item = Counted(Rc::clone(&drops));
        if i % 2 == 0 {
            m.push(item);
        } else {
            m.push_with(item, &mut cache);
        }
    }
    for _ in 0..4 {
        // SAFETY: single consumer.
        drop(unsafe { m.pop_with(&mut cache) });
    }
    assert_eq!(drops.get(), 4);
    // SAFETY: single consumer.
    let kept = unsafe { m.pop() }.unwrap();
    drop(m);
    assert_eq!(drops.get(), 9, "the popped item is not the mailbox's");
    drop(kept);
    assert_eq!(drops.get(), 10);
}

/// A worker's pattern: pop from one mailbox, push into the other, with
/// one cache. Nodes are conserved: the cache plus the mailboxes' nodes
/// (one stub each, one node per item) stay constant, so no node was
/// allocated or freed after the cache was primed.
#[test]
fn nodes_travel_between_mailboxes_through_one_cache() {
    let (a, b) = (Mailbox::new(), Mailbox::new());
    let mut cache = NodeCache::new();
    (0..8).for_each(|i| a.push(i));
    let nodes = |cache: &NodeCache<u32>, items: usize| cache.len() + items + 2;
    // Priming: the first pop releases `a`'s original stub into the cache.
    // SAFETY: this thread is the only consumer of both.
    let first = unsafe { a.pop_with(&mut cache) }.unwrap();
    b.push_with(first, &mut cache);
    let total = nodes(&cache, 8);
    assert_eq!(total, 10);
    for round in 0..50 {
        let (from, to) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        // SAFETY: this thread is the only consumer of both.
        while let Some(v) = unsafe { from.pop_with(&mut cache) } {
            to.push_with(v + 1, &mut cache);
            assert_eq!(nodes(&cache, 8), total, "a node was allocated or freed");
        }
    }
    let mut all: Vec<u32> = Vec::new();
    // SAFETY: this thread is the only consumer of both.
    all.extend(std::iter::from_fn(|| unsafe { a.pop_with(&mut cache) }));
    // SAFETY: as above.
    all.extend(std::iter::from_fn(|| unsafe { b.pop_with(&mut cache) }));
    assert_eq!(all.len(), 8);
    assert_eq!(
        cache.len(),
        total - 2,
        "every item node is back in the cache"
    );
}

#[test]
fn cache_limit_is_respected() {
    let m = Mailbox::new();
    (0..10).for_each(|i| m.push(i));
    let mut small = NodeCache::with_limit(3);
    let mut none = NodeCache::with_limit(0);
    for i in 0..10 {
        let cache = if i < 5 { &mut small } else { &mut none };
        // SAFETY: single consumer.
        assert_eq!(unsafe { m.pop_with(cache) }, Some(i));
    }
    assert_eq!((small.len(), none.len()), (3, 0));
    (0..4).for_each(|i| m.push_with(i, &mut small)); // three reused, one new
    assert!(small.is_empty());
}

#[test]
fn new_with_takes_the_stub_from_the_cache() {
    let mut cache = NodeCache::new();
    let m = Mailbox::new();
    m.push(0u8);
    // SAFETY: single consumer.
    unsafe { m.pop_with(&mut cache) };
    assert_eq!(cache.len(), 1);
    let other = Mailbox::new_with(&mut cache);
    assert!(cache.is_empty());
    other.push_with(1, &mut cache);
    // SAFETY: single consumer.
    assert_eq!(unsafe { other.pop() }, Some(1));
}

#[test]
fn zero_sized_items() {
    let m = Mailbox::new();
    let mut cache = NodeCache::new();
    m.push(());
    m.push_with((), &mut cache);
    // SAFETY: single consumer.
    unsafe {
        assert_eq!(m.pop_with(&mut cache), Some(()));
        assert_eq!(m.pop(), Some(()));
        assert_eq!(m.pop(), None);
    }
}

#[test]
fn debug_does_not_need_debug_items() {
    struct Opaque;
    let m = Mailbox::new();
    m.push(Opaque);
    assert_eq!(format!("{m:?}"), "Mailbox { .. }");
    let cache = NodeCache::<Opaque>::with_limit(5);
    assert_eq!(format!("{cache:?}"), "NodeCache { len: 0, limit: 5 }");
}
