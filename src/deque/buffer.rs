//! The ring of slots behind a deque, and how it grows.

use crate::sync::{AtomicPtr, Ordering};
use core::ptr;

/// A power-of-two ring of atomic pointer slots, indexed by the deque's
/// wrapping `u32` positions (slot = position & mask).
///
/// Slots are atomic words so that a thief may read a slot that the owner is
/// rewriting at the same moment: the thief then loses its claim and discards
/// what it read, and no data race has happened (DESIGN.md, trap 2). Every
/// slot is initialised (to null or an item) when the ring is made, so a
/// thief with a stale position never reads uninitialised memory.
///
/// Written by the owner only; read by the owner and thieves. A ring is never
/// modified after it has been replaced by a bigger one, and never freed while
/// the deque lives: each ring keeps a raw pointer to the ring it replaced
/// (`retired`), and the deque frees the whole chain when its last handle
/// drops. Rings double, so the retired chain always holds fewer slots than
/// the live ring: memory stays within twice the live ring.
pub(super) struct Buffer {
    slots: Box<[AtomicPtr<()>]>,
    mask: u32,
    /// The ring this one replaced (null for the first ring). Owned: freed by
    /// [`Buffer::free_chain`].
    retired: *mut Buffer,
}

impl Buffer {
    /// The largest ring: positions are `u32` and lengths are compared as
    /// signed distances, so a ring must stay well below 2^31 slots.
    pub(super) const MAX_CAPACITY: usize = 1 << 30;

    /// Allocates a ring of `capacity` null slots (`capacity` a power of two).
    pub(super) fn alloc(capacity: usize) -> *mut Buffer {
        Self::alloc_with(capacity, ptr::null_mut(), |_| ptr::null_mut())
    }

    fn alloc_with(
        capacity: usize,
        retired: *mut Buffer,
        mut init: impl FnMut(u32) -> *mut (),
    ) -> *mut Buffer {
        assert!(
            capacity.is_power_of_two() && capacity <= Self::MAX_CAPACITY,
            "stepsched::deque: capacity {capacity} is not a power of two at most 2^30"
        );
        // One pass writes every slot exactly once: no separate zeroing pass.
        let slots = (0..capacity as u32)
            .map(|slot| AtomicPtr::new(init(slot)))
            .collect();
        Box::into_raw(Box::new(Buffer {
            slots,
            mask: capacity as u32 - 1,
            retired,
        }))
    }

    /// The number of slots.
    #[inline]
    pub(super) fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// Reads the slot of position `pos`.
    #[inline]
    pub(super) fn read(&self, pos: u32) -> *mut () {
        // Relaxed: the caller has already acquired what makes this slot's
        // content visible (`bottom` for thieves; program order for the owner).
        self.slot(pos).load(Ordering::Relaxed)
    }

    /// Writes the slot of position `pos`. Owner only.
    #[inline]
    pub(super) fn write(&self, pos: u32, item: *mut ()) {
        // Relaxed: published to thieves by the owner's Release store of
        // `bottom` that follows (push), or of the ring pointer (grow).
        self.slot(pos).store(item, Ordering::Relaxed);
    }

    #[inline]
    fn slot(&self, pos: u32) -> &AtomicPtr<()> {
        // `mask + 1 == slots.len()`, so the index is always in bounds and the
        // compiler drops the bounds check.
        &self.slots[(pos & self.mask) as usize]
    }

    /// Makes a ring twice as large holding positions `top..bottom` of `self`,
    /// with `self` as its retired predecessor. Owner only.
    pub(super) fn grow(this: *mut Buffer, top: u32, bottom: u32) -> *mut Buffer {
        // SAFETY: `this` is the live ring, which only the deque's drop frees;
        // the owner calling us is alive, so the deque is.
        let old = unsafe { &*this };
        let capacity = 2 * old.capacity() as usize;
        let new_mask = capacity as u32 - 1;
        let len = bottom.wrapping_sub(top);
        Self::alloc_with(capacity, this, |slot| {
            // The position in `top..top + capacity` that lands on `slot`.
            let pos = top.wrapping_add(slot.wrapping_sub(top) & new_mask);
            if pos.wrapping_sub(top) < len {
                old.read(pos)
            } else {
                ptr::null_mut()
            }
        })
    }

    /// Frees `this` and every ring it retired.
    ///
    /// # Safety
    ///
    /// `this` must come from [`Buffer::alloc`] or [`Buffer::grow`], be the
    /// newest ring of its chain, and no one may use any ring of the chain
    /// again. Items still in the slots are not dropped (the deque does that).
    pub(super) unsafe fn free_chain(mut this: *mut Buffer) {
        while !this.is_null() {
            // SAFETY: every ring in the chain was made by `Box::into_raw` and
            // is owned by exactly one pointer (the deque's, or the retired
            // link of the ring that replaced it); the caller gives up all.
            let ring = unsafe { Box::from_raw(this) };
            this = ring.retired;
        }
    }
}
