//! Thieves working from a stale view: pushes (with and without growth) racing
//! steals, a thief whose `top` or buffer is old while the owner pops and
//! pushes again into the same slots, and the two `bottom` stores of `pop`
//! (its decrement and its undo) that a thief must read.

use super::*;

models! {
    /// The owner pushes past a capacity-1 ring twice (it grows to 2, then
    /// 4) while a thief steals twice: the thief may read a retired ring and
    /// must still get each item at most once, whole.
    fn push_with_growth_vs_steal<T>() [
        Id => push_with_growth_vs_steal,
        Boxed => push_with_growth_vs_steal_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..1);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let mut got = steal(&s);
            got.extend(steal(&s));
            got
        });
        push(&w, 1..3);
        let mut got = thief.join().unwrap();
        got.extend(drain(&w));
        assert_exactly_once(w, got, 3);
        assert_all_dropped(3);
    }

    /// `steal_half_into` against a growing ring: the claim reads two slots
    /// that the owner's growth is copying.
    fn push_with_growth_vs_steal_half_into<T>() [Id => push_with_growth_vs_steal_half_into] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..2);
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        push(&w, 2..4); // the first of these grows the ring to 4
        let mut got = thief.join().unwrap();
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }

    /// The deque starts empty; the owner pushes two items while a thief
    /// calls `steal` then `steal_half_into`. A thief that sees an item must
    /// see it whole: without Release on the `bottom` store in `push`, it
    /// reads a null slot (`Id`) or a stale payload (`Box`).
    fn thief_takes_items_pushed_concurrently<T>() [
        Id => thief_takes_items_pushed_concurrently,
        Boxed => thief_takes_items_pushed_concurrently_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(2);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let mut got = steal(&s);
            got.extend(steal_half(&s));
            got
        });
        push(&w, 0..2);
        let mut got = thief.join().unwrap();
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// docs/ARCHITECTURE.md, trap 1 (a steal racing a pop), scaled to a
    /// reach of 2. Four items; a thief reads
    /// `top = 0` and `bottom = 4` and prepares to claim items 0 and 1.
    /// Meanwhile the owner pops 3, 2 and 1 (only the last is within reach
    /// of `top`) and pushes a new item 4 into position 1. If the thief's CAS
    /// then succeeded, item 1 would be delivered twice or item 4 lost.
    fn stale_thief_vs_pop_then_push<T>() [Id => stale_thief_vs_pop_then_push] {
        let w: Worker<T> = Worker::with_capacity(4);
        push(&w, 0..4);
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.extend(pop(&w));
        }
        push(&w, 4..5);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 5);
        assert_all_dropped(5);
    }

    /// Trap 1 with growth: a thief reads a full capacity-2 ring; the owner
    /// pops the newest item and pushes two, the second of which grows the
    /// ring. The thief's claim, read from the retired ring, must fail or
    /// still be exact.
    fn stale_thief_vs_pop_then_push_with_growth<T>() [Id => stale_thief_vs_pop_then_push_with_growth] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..2);
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = pop(&w);
        push(&w, 2..4);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }

    /// The owner's cached `top` is stale: two items were stolen before the
    /// race, so its first pop looks far from `top` by the cache but must
    /// re-check against the real `top`, and its second pop is within reach
    /// of the thief's concurrent claim.
    fn pop_with_stale_cached_top_vs_steal_half_into<T>() [
        Id => pop_with_stale_cached_top_vs_steal_half_into
    ] {
        let w: Worker<T> = Worker::with_capacity(8);
        push(&w, 0..5);
        let s = w.stealer();
        let mut got = steal(&s);
        got.extend(steal(&s)); // top = 2; the owner has not looked
        let thief = thread::spawn(move || steal_half(&s));
        got.extend(pop(&w));
        got.extend(pop(&w));
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 5);
        assert_all_dropped(5);
    }

    /// The smallest trap-1 shape, with a plain `steal`: the owner pops the
    /// item the thief has read and pushes a new one into the same slot.
    fn stale_steal_vs_pop_then_push_same_slot<T>() [Id => stale_steal_vs_pop_then_push_same_slot] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..1);
        let s = w.stealer();
        let thief = thread::spawn(move || steal(&s));
        let mut got = pop(&w);
        push(&w, 1..2);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// The pop's `bottom` store: push, push, pop on the owner against one
    /// `steal`, capacity 2. The thief loads `head` before the pop's RMW,
    /// then reads `bottom == 1` *from the pop's own store*, reads slot 0 and
    /// wins its CAS before the pop's RMW. That store must be Release: with
    /// Relaxed it does not carry the push of item 0, so the thief's slot
    /// read is unordered (a null slot for `Id`, a stale payload for `Box`).
    fn thief_reads_bottom_from_pops_store<T>() [
        Id => thief_reads_bottom_from_pops_store,
        Boxed => thief_reads_bottom_from_pops_store_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(2);
        let s = w.stealer();
        let thief = thread::spawn(move || steal(&s));
        push(&w, 0..2);
        let mut got = pop(&w);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// The pop that finds the deque emptied by a thief and restores
    /// `bottom`, then a push into the next slot and a second pop, against a
    /// second steal: exactly once across the undo. (A thief that reads the
    /// restored `bottom` with a stale `head` reads slots before its CAS
    /// fails; loom's null-filled slots hide that read, so the undo store's
    /// Release is defended under Miri instead:
    /// `thief_reading_the_pops_undo_store_sees_the_pushed_slot` in
    /// `tests/deque_weak_memory.rs`.)
    fn thief_reads_bottom_from_pops_undo_store<T>() [
        Id => thief_reads_bottom_from_pops_undo_store,
        Boxed => thief_reads_bottom_from_pops_undo_store_payload
    ] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..1);
        let (s1, s2) = (w.stealer(), w.stealer());
        let thief = thread::spawn(move || {
            let mut got = steal(&s1);
            got.extend(steal(&s2));
            got
        });
        let mut got = pop(&w);
        push(&w, 1..2);
        got.extend(pop(&w));
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// tokio's `loom_queue` `basic` model, ported (written anew for this
    /// deque): two rounds of push, push, pop on a capacity-2 ring, so round
    /// 2 pushes into the slots where round 1's items were, against a thief
    /// that steals throughout. A thief that reads a stale slot pointer and
    /// wins its CAS delivers one item twice and loses another.
    fn two_rounds_reuse_slots_vs_thief<T>() [
        Id => two_rounds_reuse_slots_vs_thief
    ] {
        let w: Worker<T> = Worker::with_capacity(2);
        let s = w.stealer();
        let thief = thread::spawn(move || {
            let mut got = steal(&s);
            got.extend(steal(&s));
            got
        });
        let mut got = Vec::new();
        for round in 0..2 {
            push(&w, 2 * round..2 * round + 2);
            got.extend(pop(&w));
        }
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }
}
