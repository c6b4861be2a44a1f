//! The process table's lock-free skeleton: [`Pages`] of slots, indexed by a
//! `u32`, and the [`FreeList`] of free indices. `table.rs` builds the
//! process table on them; they live here, generic over the slot type and
//! built in both worlds, so that the loom models in `loom-tests/tests/table.rs`
//! run the table's own code. Public (hidden) only for those models.
//!
//! Slots live in pages that are allocated on first use and never freed
//! before the `Pages` drop, so a `&S` stays valid for the table's life and
//! run queues can carry plain slot pointers. Page `k` holds
//! `FIRST_PAGE << k` slots, so an index maps to its page with one
//! leading-zeros count: lookup is O(1) and takes no lock.
//!
//! Free slots form a Treiber stack threaded through a `next_free` word of
//! each slot (the caller says where it is); its head packs a tag that every
//! push and pop bumps, so a popper whose view is stale fails its CAS instead
//! of suffering ABA.

use crate::padded::CachePadded;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// log2 of the first page's size. Under loom the pages are tiny, so that a
/// model allocates few slots (each holds loom objects) and crosses pages.
const FIRST_PAGE_BITS: u32 = if cfg!(loom) { 1 } else { 6 };
const FIRST_PAGE: u32 = 1 << FIRST_PAGE_BITS;
/// Enough pages for every `u32` index: `index + FIRST_PAGE` has at most 33
/// significant bits, and page `k` starts at bit `FIRST_PAGE_BITS + k`.
const PAGES: usize = (33 - FIRST_PAGE_BITS) as usize;

/// Slots of type `S` in pages of doubling size, allocated on first use.
pub struct Pages<S> {
    pages: [AtomicPtr<S>; PAGES],
}

impl<S> Pages<S> {
    /// No pages yet.
    pub fn new() -> Self {
        Pages {
            pages: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
        }
    }

    fn page_of(index: u32) -> (usize, usize) {
        let shifted = u64::from(index) + u64::from(FIRST_PAGE);
        let page = 63 - shifted.leading_zeros() - FIRST_PAGE_BITS;
        let offset = shifted - (u64::from(FIRST_PAGE) << page);
        (page as usize, offset as usize)
    }

    /// The slot at `index`, if its page exists.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&S> {
        let (page, offset) = Self::page_of(index);
        // Acquire: pairs with the Release CAS in `page`: the slots are
        // initialised before we read them.
        let base = self.pages[page].load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: page `page` holds `FIRST_PAGE << page` initialised slots
        // and `offset` is below that; pages live as long as `self`.
        Some(unsafe { &*base.add(offset) })
    }

    /// The slot at `index`, allocating its page if needed; `new(i)` makes
    /// the slot of index `i`.
    pub fn page(&self, index: u32, new: impl Fn(u32) -> S) -> &S {
        if let Some(slot) = self.get(index) {
            return slot;
        }
        let (page, _) = Self::page_of(index);
        let first = (FIRST_PAGE << page) - FIRST_PAGE;
        let slots: Box<[S]> = (0..FIRST_PAGE << page).map(|i| new(first + i)).collect();
        let new = Box::into_raw(slots) as *mut S;
        // Release: publishes the initialised slots (Acquire in `get`).
        // Relaxed on failure: we then reach the winner's page through
        // `get`, whose own Acquire load pairs with the winner's Release.
        // (Was Acquire; loom `two_threads_allocating_the_same_page_share_
        // the_winners` passes without it, as the argument says.)
        if let Err(_other) = self.pages[page].compare_exchange(
            core::ptr::null_mut(),
            new,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            // Another thread allocated the page first: free ours.
            let len = (FIRST_PAGE << page) as usize;
            // SAFETY: `new` came from `Box::into_raw` of a slice of `len`
            // slots just above, and was never shared.
            drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(new, len)) });
        }
        self.get(index).expect("page was just allocated")
    }
}

impl<S> Default for Pages<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Drop for Pages<S> {
    fn drop(&mut self) {
        for (page, base) in self.pages.iter().enumerate() {
            // Relaxed: the pages are being dropped; `&mut self` is exclusive.
            let base = base.load(Ordering::Relaxed);
            if !base.is_null() {
                let len = (FIRST_PAGE << page) as usize;
                // SAFETY: every page came from `Box::into_raw` of `len` slots
                // and `self` is the last user.
                drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(base, len)) });
            }
        }
    }
}

/// A Treiber stack of free slot indices, linked through each slot's
/// `next_free` word (next free index + 1, 0: none; meaningful only while
/// the slot is free). `next` tells where a slot's word is.
pub struct FreeList {
    /// `tag << 32 | (index + 1)`, `index + 1 == 0` empty.
    head: CachePadded<AtomicU64>,
}

impl FreeList {
    /// An empty list.
    pub fn new() -> Self {
        FreeList {
            head: CachePadded(AtomicU64::new(0)),
        }
    }

    /// Takes a free index, if any. `next(i)` is slot `i`'s `next_free`.
    #[inline]
    pub fn pop<'a>(&self, next: impl Fn(u32) -> &'a AtomicU32) -> Option<u32> {
        // Acquire: pairs with the Release CAS in `push_chain`, so the
        // `next_free` we read is the one written before that push.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let top = head as u32;
            if top == 0 {
                return None;
            }
            // Relaxed: ordered by the Acquire load of `head` above; if the
            // slot was popped and pushed since, the tag makes the CAS fail.
            let after = next(top - 1).load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(after);
            // Relaxed on success: the value it replaces is the one we
            // already acquired (the load above or the failed CAS below; the
            // tag makes an equal value the same write), which pairs with the
            // Release CAS of the push that freed the slot, so its last user
            // is done with it. (Was Acquire; loom `two_threads_taking_and_
            // freeing_slots_hand_each_out_once` passes without it.) Acquire
            // on failure: the retry reads `next` of the new head.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Relaxed, Ordering::Acquire)
            {
                Ok(_) => return Some(top - 1),
                Err(actual) => head = actual,
            }
        }
    }

    /// Pushes `indices` (all free, owned by the caller) as one chain, with
    /// one successful CAS. `next(i)` is slot `i`'s `next_free`.
    pub fn push_chain<'a>(&self, indices: &[u32], next: impl Fn(u32) -> &'a AtomicU32) {
        let (Some(&first), Some(&last)) = (indices.first(), indices.last()) else {
            return;
        };
        for pair in indices.windows(2) {
            // Relaxed: published by the Release CAS below.
            next(pair[0]).store(pair[1] + 1, Ordering::Relaxed);
        }
        let tail = next(last);
        // Relaxed: the CAS below validates the value we link to.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release CAS below.
            tail.store(head as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(first + 1);
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => head = actual,
            }
        }
    }
}

impl Default for FreeList {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Pages, PAGES};

    #[test]
    fn page_of_maps_indices_to_doubling_pages() {
        type P = Pages<u8>;
        assert_eq!(P::page_of(0), (0, 0));
        assert_eq!(P::page_of(63), (0, 63));
        assert_eq!(P::page_of(64), (1, 0));
        assert_eq!(P::page_of(191), (1, 127));
        assert_eq!(P::page_of(192), (2, 0));
        assert_eq!(P::page_of(u32::MAX).0, PAGES - 1);
    }
}
