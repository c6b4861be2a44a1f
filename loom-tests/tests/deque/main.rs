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

mod handles;
mod last_items;
mod stale;
