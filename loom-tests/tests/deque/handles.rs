//! The handles' lifetimes: stealing after the `Worker` is dropped, every item
//! dropped once when the last handles drop with items queued, and a thief
//! dropping its `Stealer` while the owner grows the buffer.

use super::*;

models! {
    /// The owner pops once and drops its `Worker` on its own thread while a
    /// thief steals: the deque lives on for the thief, and whichever handle
    /// drops last drops the remaining items, each exactly once.
    fn steal_after_worker_dropped<T>() [Id => steal_after_worker_dropped] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..3);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let mut got = steal(&s);
            got.extend(steal_half(&s));
            got
            // `s` (possibly the last handle) drops here, with what is left.
        });
        let owner = thread::spawn(move || {
            let got = pop(&w);
            drop(w);
            got
        });
        let mut got = owner.join().unwrap();
        got.extend(thief.join().unwrap());
        // Items nobody took were dropped with the deque.
        let delivered = got.len();
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), delivered, "an item was delivered twice");
        assert!(got.iter().all(|&id| id < 3));
        assert_all_dropped(3);
    }

    /// Leak check: handles drop on different threads while items sit in a
    /// twice-grown victim ring and in a thief's own deque; every item is
    /// dropped exactly once, by whichever handle goes last, and every
    /// retired ring is freed (loom and Miri-free runs would show a leak of
    /// the loom atomics inside them).
    fn no_leak_when_last_handles_drop_with_items_queued<T>() [
        Id => no_leak_when_last_handles_drop_with_items_queued,
        Boxed => no_leak_when_last_handles_drop_with_items_queued_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..4);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let dest = Worker::with_capacity(1);
            // Keep the rest of the batch queued in `dest`; drop both full.
            let first = s.steal_half_into(&dest).success().map(T::redeem);
            drop(s);
            drop(dest);
            first.into_iter().count()
        });
        let owner_got = pop(&w).len();
        drop(w);
        let thief_got = thief.join().unwrap();
        assert!(owner_got + thief_got <= 4);
        assert_all_dropped(4);
    }

    /// A thief steals and drops its (last) `Stealer` while the owner pushes
    /// into a full ring: if the owner sees no stealer left it frees the old
    /// ring at once, so the thief's reads of that ring must happen before
    /// (the Acquire load of the stealer count in `grow` pairs with the
    /// Release decrement in `Stealer::drop`).
    fn thief_drops_while_owner_grows<T>() [
        Id => thief_drops_while_owner_grows,
        Boxed => thief_drops_while_owner_grows_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..2);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let got = steal_half(&s);
            drop(s);
            got
        });
        push(&w, 2..4); // grows (ring of 2 is full unless the thief took one)
        let mut delivered = thief.join().unwrap();
        delivered.extend(drain(&w));
        assert_exactly_once(w, delivered, 4);
    }
}
