//! Concurrent deque tests sized for Miri, whose weak-memory emulation lets a
//! load return an older store where the C++ memory model allows it (as a
//! weakly ordered CPU would). x86 never shows these interleavings, so the
//! natively run stress tests (`tests/deque_stress.rs`) cannot fail on them;
//! here Miri reports a slot read that is not ordered after the push that
//! wrote it as "using uninitialized data" (rings start uninitialised).
//!
//! Run: `cargo +nightly miri test --test deque_weak_memory` (CI runs it with
//! several `-Zmiri-many-seeds`). Natively it is a short smoke test.
//!
//! The shape is crossbeam-deque's `stress` test, written anew: an owner that
//! pushes and pops at random on a small ring while thieves steal until it
//! is done; every item is received exactly once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use stepsched::deque::{Steal, Stealer, Worker};

/// Owner operations per run: small under Miri (~1000x slower).
const OPS: usize = if cfg!(miri) { 200 } else { 100_000 };
const THIEVES: usize = 2;

/// xorshift32, seeded per run: the owner's push/pop choices.
fn next(rng: &mut u32) -> u32 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 17;
    *rng ^= *rng << 5;
    *rng
}

/// Marks an item received; panics if it already was.
fn receive(seen: &[AtomicUsize], item: usize) {
    let before = seen[item].fetch_add(1, Ordering::Relaxed);
    assert_eq!(before, 0, "item {item} received twice");
}

fn thief(s: Stealer<Box<usize>>, seen: Arc<Vec<AtomicUsize>>, done: Arc<AtomicBool>) {
    let dest = Worker::with_capacity(1);
    let mut turn = 0u32;
    loop {
        // Alternate single steals and batch steals: both read slots.
        turn = turn.wrapping_add(1);
        let got = if turn % 2 == 0 {
            s.steal()
        } else {
            s.steal_half_into(&dest)
        };
        match got {
            Steal::Success(item) => receive(&seen, *item),
            Steal::Retry => {}
            // Acquire: pairs with the owner's Release store of `done`.
            Steal::Empty if done.load(Ordering::Acquire) => break,
            Steal::Empty => thread::yield_now(),
        }
        while let Some(item) = dest.pop() {
            receive(&seen, *item);
        }
    }
}

/// The owner pushes and pops at random (more pushes than pops) on a
/// capacity-2 ring, so positions reuse slots all the time and the pop's
/// `bottom` stores, both the decrement and the undo when thieves emptied
/// the deque, are read by thieves in every state.
#[test]
fn thieves_never_read_unwritten_slots() {
    let seen: Arc<Vec<AtomicUsize>> = Arc::new((0..OPS).map(|_| AtomicUsize::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let w = Worker::with_capacity(2);
    let thieves: Vec<_> = (0..THIEVES)
        .map(|_| {
            let (s, seen, done) = (w.stealer(), Arc::clone(&seen), Arc::clone(&done));
            thread::spawn(move || thief(s, seen, done))
        })
        .collect();
    let mut rng = 0x9E37_79B9u32;
    let mut pushed = 0;
    while pushed < OPS {
        if next(&mut rng) % 3 == 0 {
            if let Some(item) = w.pop() {
                receive(&seen, *item);
            }
        } else {
            w.push(Box::new(pushed));
            pushed += 1;
        }
    }
    while let Some(item) = w.pop() {
        receive(&seen, *item);
    }
    // Release: pairs with the thieves' Acquire load; the deque is empty.
    done.store(true, Ordering::Release);
    for t in thieves {
        t.join().expect("a thief panicked");
    }
    for (item, count) in seen.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "item {item} lost");
    }
}

/// The smallest shape of a pop's `bottom` store left Relaxed (the deque's
/// remedy for docs/ARCHITECTURE.md, trap 1), repeated: a fresh ring of
/// capacity 2, a thief stealing once, and the owner's push A, push B, pop.
/// The thief may read `bottom == 1` from the pop's own store and then slot
/// 0: that store must carry push A.
#[test]
fn thief_reading_the_pops_bottom_sees_the_pushed_slot() {
    let rounds = if cfg!(miri) { 30 } else { 2_000 };
    for _ in 0..rounds {
        let w: Worker<Box<usize>> = Worker::with_capacity(2);
        let s = w.stealer();
        let thief = thread::spawn(move || s.steal().success().map(|b| *b));
        w.push(Box::new(0));
        w.push(Box::new(1));
        let mut got: Vec<usize> = w.pop().map(|b| *b).into_iter().collect();
        got.extend(thief.join().expect("the thief panicked"));
        while let Some(item) = w.pop() {
            got.push(*item);
        }
        got.sort_unstable();
        assert_eq!(got, vec![0, 1]);
    }
}

/// The pop's second `bottom` store, forced: thief A claims the one pushed item
/// before the owner pops it, so the pop always finds the deque emptied and
/// restores `bottom` (the undo store); only then does thief B try once. B
/// has no happens-before edge with the owner (the flags that sequence the
/// three are Relaxed), so Miri may give it a stale `head` (0) and the undo
/// store's `bottom` (1): it then reads slot 0 before its CAS fails, and the
/// undo store's Release is all that orders the push's slot write before
/// that read. Weakened to Relaxed, the read may see the ring's uninitialised
/// memory (Miri: UB): in about 3 rounds in 100 (measured over seeds), so
/// Miri runs 100 rounds, and each of CI's seeds almost always finds it.
#[test]
fn thief_reading_the_pops_undo_store_sees_the_pushed_slot() {
    let rounds = if cfg!(miri) { 100 } else { 2_000 };
    for _ in 0..rounds {
        let w: Worker<Box<usize>> = Worker::with_capacity(2);
        // Relaxed: these flags sequence the three threads in time only;
        // they must not order any memory themselves.
        let pushed = Arc::new(AtomicBool::new(false));
        let stolen = Arc::new(AtomicBool::new(false));
        let popped = Arc::new(AtomicBool::new(false));
        let first = {
            let (s, pushed, stolen) = (w.stealer(), Arc::clone(&pushed), Arc::clone(&stolen));
            thread::spawn(move || {
                while !pushed.load(Ordering::Relaxed) {
                    thread::yield_now();
                }
                loop {
                    // Empty while it reads an older `bottom`; it claims
                    // the item once it sees the push.
                    if let Steal::Success(item) = s.steal() {
                        stolen.store(true, Ordering::Relaxed);
                        return *item;
                    }
                    thread::yield_now();
                }
            })
        };
        let second = {
            let (s, popped) = (w.stealer(), Arc::clone(&popped));
            thread::spawn(move || {
                while !popped.load(Ordering::Relaxed) {
                    thread::yield_now();
                }
                s.steal().success().map(|b| *b)
            })
        };
        w.push(Box::new(0));
        pushed.store(true, Ordering::Relaxed);
        while !stolen.load(Ordering::Relaxed) {
            thread::yield_now();
        }
        // A claimed the item: this pop lowers `bottom`, finds it taken and
        // stores `bottom` back (the undo).
        assert!(w.pop().is_none(), "the owner popped an item a thief had");
        popped.store(true, Ordering::Relaxed);
        assert_eq!(first.join().expect("thief A panicked"), 0);
        assert_eq!(second.join().expect("thief B panicked"), None);
    }
}

/// A thief steals and drops the last `Stealer` while the owner pushes into
/// a full ring: an owner that finds no stealer left frees the old ring at
/// once instead of retiring it. The thief's reads of that ring must happen
/// before the free. The owner's `head` load may read a value older than the
/// thief's claim (Miri's weak memory lets it), so only the Acquire load of
/// the stealer count in `Worker::grow` (pairing with the Release decrement
/// in `Stealer::drop`) orders them; weaken either and Miri reports a data
/// race between the thief's slot read and the deallocation. (loom's model
/// of this shape, `thief_drops_while_owner_grows`, does not read the stale
/// `head`, so it cannot see either ordering.)
#[test]
fn a_ring_freed_by_a_lone_owner_is_not_read_after_the_free() {
    let rounds = if cfg!(miri) { 30 } else { 2_000 };
    for _ in 0..rounds {
        let w: Worker<Box<usize>> = Worker::with_capacity(2);
        w.push(Box::new(0));
        w.push(Box::new(1));
        let s = w.stealer();
        // Relaxed on both sides on purpose: the flag only makes the lone
        // owner's free likely; it must not order anything itself.
        let dropped = Arc::new(AtomicBool::new(false));
        let thief = {
            let dropped = Arc::clone(&dropped);
            thread::spawn(move || {
                let got = s.steal().success().map(|b| *b);
                drop(s);
                dropped.store(true, Ordering::Relaxed);
                got
            })
        };
        while !dropped.load(Ordering::Relaxed) {
            thread::yield_now();
        }
        w.push(Box::new(2));
        w.push(Box::new(3));
        let mut got: Vec<usize> = thief
            .join()
            .expect("the thief panicked")
            .into_iter()
            .collect();
        while let Some(item) = w.pop() {
            got.push(*item);
        }
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 3]);
    }
}
