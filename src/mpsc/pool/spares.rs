//! [`Spares`]: free blocks the pool keeps for its next blocks, instead of
//! giving each back to the system the moment its last node is freed.
//!
//! # Why
//!
//! Nodes often flow one way between threads: a process on one worker
//! sends a stream of requests or messages to a process on the other, whose
//! worker frees the nodes (its node cache full) while the sender's worker
//! carves new ones (its cache empty). Without spares each 16 KiB block
//! then costs an `mmap`, two or three `munmap`s and four page faults, and
//! each `munmap` of a block the other worker had touched makes the kernel
//! interrupt that worker to flush its TLB. In the `links` bench's `apart`
//! shape (monitor and demonitor requests from one worker to processes on
//! the other) the kernel's TLB shootdowns, mapping lock and page faults
//! are then a large part of the run (`perf stat` shows them); with a few
//! free blocks kept, the carving worker takes the block the other just
//! freed, and most of those system calls and faults go away. Any
//! thread puts the blocks it frees here; only the workers take them
//! (`take_spares_on_this_thread` in `pool.rs` says why).
//!
//! # What it keeps
//!
//! At most [`SPARE_BLOCKS`] blocks, for the whole process (256 KiB): what
//! a burst of a step's sends frees while the sender's next step carves.
//! A block freed with every place taken goes back to the system as
//! before, so the pool still returns a flood's memory (`examples/flood.rs`)
//! and keeps no more than this after it.
//!
//! # The hand-over
//!
//! A block is put here only by the thread whose `Live::give_back` took its
//! count to zero: every use of every node of it happens before that
//! (*freed after last use*, `pool.rs`). [`Spares::put`]'s Release and
//! [`Spares::take`]'s Acquire carry that on to the thread that takes it and
//! writes its new header and nodes. Built under loom for its model
//! (`loom-tests/tests/pool.rs`); the pool's static instance is not.
//!
//! The global queue's slabs keep a spare block by the same pair of
//! orderings (`block.rs`, `put_spare`), one per queue, a new spare
//! replacing the old; here there are several places, and a block that
//! finds them all taken is the one given back.

use crate::sync::{AtomicPtr, Ordering};
use core::ptr;

/// The most free blocks the pool keeps (see the module docs): 16 of 16
/// KiB. Under `strace`, the `apart` shape made 2,815 `mmap`s with none;
/// with 4, 957-1,232 (two runs); with 8, 465; with 16, 207-308.
pub(crate) const SPARE_BLOCKS: usize = 16;

/// Up to `N` free blocks, each in a place of its own (module docs). Lock-
/// free: a put is a CAS per place until one is empty, a take a load per
/// place until one is full, then a swap.
pub struct Spares<const N: usize> {
    places: [AtomicPtr<u8>; N],
}

impl<const N: usize> Spares<N> {
    /// No blocks kept.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Spares {
            places: [const { AtomicPtr::new(ptr::null_mut()) }; N],
        }
    }

    /// No blocks kept. (loom's atomics have no `const` constructor.)
    #[cfg(loom)]
    pub fn new() -> Self {
        Spares {
            places: core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// Keeps `block` if a place is empty; `false` if every place is taken,
    /// and the caller then gives the block back to the system.
    ///
    /// `block` must be free: every use of it happens before this call
    /// (module docs), and nothing uses it after.
    pub fn put(&self, block: *mut u8) -> bool {
        debug_assert!(!block.is_null());
        for place in &self.places {
            // Release: pairs with the Acquire swap in `take`, so that every
            // use of the block that happens before this put (the nodes'
            // last uses, by the count's Release/Acquire pair) happens
            // before the taker's writes into it. Killed without it: loom
            // `a_block_put_by_one_thread_is_reused_by_another_only_after_its_last_use`.
            // Relaxed on failure: the place holds another block; we read
            // nothing through it.
            if place
                .compare_exchange(ptr::null_mut(), block, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        }
        false
    }

    /// A block kept by [`put`](Self::put), now the caller's alone, or
    /// `None` if none is kept.
    pub fn take(&self) -> Option<*mut u8> {
        for place in &self.places {
            // Relaxed: a look, so that a take writes no empty place's line;
            // the swap below decides, and reads the block it takes.
            if place.load(Ordering::Relaxed).is_null() {
                continue;
            }
            // Acquire: pairs with the Release CAS in `put` (see there).
            // Killed without it: the same loom model.
            let block = place.swap(ptr::null_mut(), Ordering::Acquire);
            if !block.is_null() {
                return Some(block);
            }
        }
        None
    }
}

impl<const N: usize> Default for Spares<N> {
    fn default() -> Self {
        Spares::new()
    }
}

impl<const N: usize> core::fmt::Debug for Spares<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Spares").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Spares;

    #[test]
    fn every_block_put_is_taken_once_and_full_places_refuse() {
        // Distinct addresses to stand for blocks (never dereferenced).
        let mut memory = [0u8; 3];
        let base = memory.as_mut_ptr();
        let block = |i: usize| base.wrapping_add(i);
        let spares: Spares<2> = Spares::new();
        assert_eq!(spares.take(), None, "nothing kept yet");
        assert!(spares.put(block(0)));
        assert!(spares.put(block(1)));
        assert!(!spares.put(block(2)), "two places, both taken");
        let mut taken = [spares.take().unwrap(), spares.take().unwrap()];
        taken.sort();
        assert_eq!(taken, [block(0), block(1)]);
        assert_eq!(spares.take(), None, "each block handed out once");
        assert!(spares.put(block(2)), "a place is free again");
        assert_eq!(spares.take(), Some(block(2)));
    }
}
