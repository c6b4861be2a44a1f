#![cfg(loom)]
//! loom models of `stepsched::deque`: each proves exactly-once delivery for
//! one interleaving family, named after it.
//!
//! Run (a few seconds in all; the build takes longer):
//!
//! ```text
//! cd /work/main   # the workspace root
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test deque
//! ```
//!
//! Without `LOOM_MAX_PREEMPTIONS` the models default to a bound of 3 (see
//! [`model`]); an unbounded search of the larger models takes hours.
//!
//! Under `cfg(loom)` the deque shrinks its steal reach to 2, so
//! `steal_half_into` takes `min(ceil(n / 2), 2)` items and small models reach
//! both the pop that may collide with a claim and the pop that cannot. The
//! models never assume a batch larger than 2.
//!
//! Every model collects the ids delivered to every party (owner pops,
//! steals, thieves' own deques, and what is left after the threads join),
//! asserts that each pushed id appears exactly once, and, after every handle
//! is gone, that every item was dropped exactly once. Models run with two
//! item types ([`Ticket`]):
//!
//! - [`Id`], an id encoded in the pointer bits and never dereferenced, so a
//!   stale or duplicated slot read shows up as a clean assertion failure (a
//!   duplicate id, or `take` finding a null slot) rather than a use after
//!   free that crashes the whole test binary;
//! - `Box<Payload>`, a real heap item with a `loom` cell written after it is
//!   made and read by whoever receives it, so a delivery that is not ordered
//!   after the push (a missing Release on `bottom`, or a grown ring published
//!   without Release) is a loom causality error.

use std::cell::Cell;
use std::ptr::NonNull;

use loom::cell::UnsafeCell;
use loom::thread;

use stepsched::deque::{Pointer, Stealer, Worker};

/// Runs `f` under loom, with a preemption bound of 3 unless the environment
/// (`LOOM_MAX_PREEMPTIONS`) sets one.
fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

std::thread_local! {
    /// Items dropped in the current execution. loom runs every simulated
    /// thread of a model on the test's own OS thread, so one thread-local
    /// counter sees them all, and parallel tests do not share it.
    static DROPS: Cell<usize> = const { Cell::new(0) };
}

fn count_drop() {
    DROPS.with(|d| d.set(d.get() + 1));
}

fn reset_drops() {
    DROPS.with(|d| d.set(0));
}

fn assert_all_dropped(n: usize) {
    assert_eq!(DROPS.with(Cell::get), n, "leak or double drop");
}

/// An item a model can push and recognise when it comes back.
trait Ticket: Pointer + 'static {
    fn issue(id: usize) -> Self;
    /// Checks the item and returns its id (the item is dropped).
    fn redeem(self) -> usize;
}

/// An id carried in the pointer bits (`id + 1`, never null); never
/// dereferenced.
struct Id(usize);

// SAFETY: `into_raw` forgets `self` and encodes its id in a non-null
// pointer that nobody dereferences; `from_raw` rebuilds the same `Id`, so
// each `Id` is reclaimed once and its drop counted once.
unsafe impl Pointer for Id {
    fn into_raw(self) -> NonNull<()> {
        let raw = (self.0 + 1) as *mut ();
        std::mem::forget(self);
        NonNull::new(raw).expect("id + 1 is not null")
    }

    unsafe fn from_raw(p: NonNull<()>) -> Self {
        Id(p.as_ptr() as usize - 1)
    }
}

impl Drop for Id {
    fn drop(&mut self) {
        count_drop();
    }
}

impl Ticket for Id {
    fn issue(id: usize) -> Self {
        Id(id)
    }

    fn redeem(self) -> usize {
        self.0
    }
}

/// A heap item whose payload the pusher writes and the receiver reads.
struct Payload {
    id: usize,
    cell: UnsafeCell<usize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        count_drop();
    }
}

impl Ticket for Box<Payload> {
    fn issue(id: usize) -> Self {
        let item = Box::new(Payload {
            id,
            cell: UnsafeCell::new(0),
        });
        item.cell.with_mut(|p| {
            // SAFETY: the item is not shared yet.
            unsafe { *p = id + 1000 }
        });
        item
    }

    fn redeem(self) -> usize {
        let payload = self.cell.with(|p| {
            // SAFETY: we own the item; loom checks that the pusher's write
            // happens before this read.
            unsafe { *p }
        });
        assert_eq!(
            payload,
            self.id + 1000,
            "item {} has a stale payload",
            self.id
        );
        self.id
    }
}

/// Pushes items `ids` onto `w`.
fn push<T: Ticket>(w: &Worker<T>, ids: std::ops::Range<usize>) {
    for id in ids {
        w.push(T::issue(id));
    }
}

/// Pops until `None` (at most 16 items, more than any model pushes, so a
/// deque that invents items fails the count instead of looping), returning
/// the ids in pop order.
fn drain<T: Ticket>(w: &Worker<T>) -> Vec<usize> {
    std::iter::from_fn(|| w.pop().map(T::redeem))
        .take(16)
        .collect()
}

/// One `pop`, as a list of zero or one ids.
fn pop<T: Ticket>(w: &Worker<T>) -> Vec<usize> {
    w.pop().map(T::redeem).into_iter().collect()
}

/// One `steal`, as a list of zero or one ids.
fn steal<T: Ticket>(s: &Stealer<T>) -> Vec<usize> {
    s.steal().success().map(T::redeem).into_iter().collect()
}

/// One `steal_half_into` a fresh deque of capacity 1: the id returned, then
/// whatever it put in that deque (popped, so newest first).
fn steal_half<T: Ticket>(s: &Stealer<T>) -> Vec<usize> {
    let dest = Worker::with_capacity(1);
    let mut got: Vec<usize> = s
        .steal_half_into(&dest)
        .success()
        .map(T::redeem)
        .into_iter()
        .collect();
    assert!(
        got.len() == 1 || dest.is_empty(),
        "steal_half_into filled dest but returned nothing"
    );
    assert!(dest.len() <= 1, "a batch under loom is at most 2 items");
    got.extend(drain(&dest));
    got
}

/// Asserts that `delivered` holds each of `0..n` exactly once, then drops
/// the owner's handle `w`.
///
/// On failure `w` is leaked rather than dropped: a deque that has handed out
/// an item twice may have `top` past `bottom`, and its drop would then walk
/// 2^32 positions instead of failing the model promptly.
fn assert_exactly_once<T: Ticket>(w: Worker<T>, mut delivered: Vec<usize>, n: usize) {
    delivered.sort_unstable();
    if delivered != (0..n).collect::<Vec<_>>() {
        std::mem::forget(w);
        panic!("not delivered exactly once: {delivered:?}, expected 0..{n}");
    }
    drop(w);
}

/// Declares each model as a module holding the generic scenario (`run`),
/// and one `#[test]` per item type that checks it under loom.
macro_rules! models {
    ($( $(#[$doc:meta])* fn $name:ident<$t:ident>() [$($ty:ident => $test:ident),+] $body:block )*) => {
        $(
            $(#[$doc])*
            mod $name {
                use super::*;

                pub(super) fn run<$t: Ticket>() {
                    reset_drops();
                    $body
                }
            }
            $(
                #[test]
                fn $test() {
                    model($name::run::<$ty>);
                }
            )+
        )*
    };
}

type Boxed = Box<Payload>;

models! {
    /// The owner pops the only item while a thief steals it: exactly one wins.
    fn pop_vs_steal_on_last_item<T>() [Id => pop_vs_steal_on_last_item] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..1);
        let s = w.stealer();
        let thief = thread::spawn(move || steal(&s));
        let mut got = pop(&w);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 1);
        assert_all_dropped(1);
    }

    /// Two thieves `steal` the only item: exactly one wins.
    fn two_steals_on_last_item<T>() [Id => two_steals_on_last_item] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..1);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal(&s1));
        let t2 = thread::spawn(move || steal(&s2));
        let mut got = t1.join().unwrap();
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 1);
        assert_all_dropped(1);
    }

    /// Three items; a thief claims the two oldest with `steal_half_into`
    /// while the owner pops twice, reaching into the claimed range (item 1).
    fn pop_vs_steal_half_into<T>() [Id => pop_vs_steal_half_into] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..3); // grows to 4 before the race
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = pop(&w);
        got.extend(pop(&w));
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 3);
        assert_all_dropped(3);
    }

    /// The owner pops its last two items while a thief's `steal_half_into`
    /// claims one of them: each pop must see the claim or fail it.
    fn pop_until_empty_vs_steal_half_into<T>() [Id => pop_until_empty_vs_steal_half_into] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..2);
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = drain(&w);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// Two thieves `steal_half_into` their own deques from one victim that
    /// holds four items, while the owner pops once: claims never overlap.
    fn two_steal_half_into_race<T>() [Id => two_steal_half_into_race] {
        let w: Worker<T> = Worker::with_capacity(4);
        push(&w, 0..4);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal_half(&s1));
        let t2 = thread::spawn(move || steal_half(&s2));
        let mut got = pop(&w);
        got.extend(t1.join().unwrap());
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }

    /// `steal` and `steal_half_into` race each other and the owner's pop
    /// over three items.
    fn steal_vs_steal_half_into_vs_pop<T>() [Id => steal_vs_steal_half_into_vs_pop] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..3);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal(&s1));
        let t2 = thread::spawn(move || steal_half(&s2));
        let mut got = pop(&w);
        got.extend(t1.join().unwrap());
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 3);
        assert_all_dropped(3);
    }

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

    /// DESIGN.md trap 1, scaled to a reach of 2. Four items; a thief reads
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

    /// Chained stealing: thief A moves a batch into its own deque while
    /// thief B steals from A's deque, so `steal_half_into`'s pushes onto
    /// the destination race a steal from it.
    fn chained_steal_from_a_thiefs_deque<T>() [Id => chained_steal_from_a_thiefs_deque] {
        let w: Worker<T> = Worker::with_capacity(4);
        push(&w, 0..4);
        let s = w.stealer();
        let dest: Worker<T> = Worker::with_capacity(1);
        let dest_stealer = dest.stealer();
        let a = thread::spawn(move || {
            let mut got: Vec<usize> = s.steal_half_into(&dest).success().map(T::redeem).into_iter().collect();
            got.extend(drain(&dest));
            got
        });
        let b = thread::spawn(move || steal(&dest_stealer));
        let mut got = a.join().unwrap();
        got.extend(b.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
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

    /// Defect 1 of issue 9: push, push, pop on the owner against one
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
