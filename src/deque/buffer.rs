//! The ring of slots behind a deque, and how it grows.

use crate::sync::{AtomicPtr, Ordering};
use core::ptr::{self, NonNull};

/// A power-of-two ring of atomic pointer slots, indexed by the deque's
/// wrapping `u32` positions (slot = position & mask).
///
/// Slots are atomic words so that a thief may read a slot that the owner is
/// rewriting at the same moment: the thief then loses its claim and discards
/// what it read, and no data race has happened (docs/ARCHITECTURE.md, trap
/// 2: racy slot reads).
///
/// **Which slots are initialised.** A thief reads positions from the `top`
/// it loaded up to the `bottom` it loaded. Every position in that range was
/// written in the ring the thief reads, *unless* its `top` is older than
/// the ring: a thief that loaded `top`, stalled, and then loaded a ring grown
/// meanwhile reads positions below that ring's copied range. So a ring made
/// while a [`Stealer`](super::Stealer) exists is null-filled first ([`Fill::Null`];
/// one memset), and a ring made while none exists may skip the fill
/// ([`Fill::Uninit`]): every thief created later loads a `top` no older than
/// the ring, and reads only positions written since. The first ring and the
/// growth of an owner that nobody steals from pay only for the copy.
///
/// Written by the owner only; read by the owner and thieves. A ring is never
/// modified after it has been replaced by a bigger one, and never freed while
/// a thief may read it: each ring keeps a raw pointer to the ring it
/// replaced (`retired`), and the deque frees the chain when its last handle
/// drops (or at the next growth when no `Stealer` exists). Rings double, so
/// the retired chain always holds fewer slots than the live ring: memory
/// stays within twice the live ring.
pub(super) struct Buffer {
    /// `mask + 1` slots (see above for which are initialised).
    slots: NonNull<AtomicPtr<()>>,
    mask: u32,
    /// The ring this one replaced (null for the first ring). Owned: freed by
    /// [`Buffer::free_chain`].
    retired: *mut Buffer,
}

/// How a new ring's slots start.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Fill {
    /// Every slot null: a thief with an old `top` may exist.
    Null,
    /// Left uninitialised: no thief exists (see [`Buffer`]).
    Uninit,
}

impl Buffer {
    /// The largest ring: positions are `u32` and lengths are compared as
    /// signed distances, so a ring must stay well below 2^31 slots.
    pub(super) const MAX_CAPACITY: usize = 1 << 30;

    /// Allocates a ring of `capacity` slots (`capacity` a power of two).
    pub(super) fn alloc(capacity: usize, fill: Fill, retired: *mut Buffer) -> *mut Buffer {
        assert!(
            capacity.is_power_of_two() && capacity <= Self::MAX_CAPACITY,
            "stepsched::deque: capacity {capacity} is not a power of two at most 2^30"
        );
        Box::into_raw(Box::new(Buffer {
            slots: slots::alloc(capacity, fill),
            mask: capacity as u32 - 1,
            retired,
        }))
    }

    /// The number of slots.
    #[inline]
    pub(super) fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// A copyable view of the slots.
    #[inline]
    pub(super) fn ring(&self) -> Ring {
        Ring {
            slots: self.slots,
            mask: self.mask,
        }
    }

    /// Makes a ring twice as large holding positions `top..bottom` of
    /// `this`; with `retire`, `this` becomes its retired predecessor
    /// (otherwise the caller frees `this`, and there is no thief: the new
    /// ring skips its null fill). Owner only.
    pub(super) fn grow(this: *mut Buffer, top: u32, bottom: u32, retire: bool) -> *mut Buffer {
        // SAFETY: `this` is the live ring, which only the deque's drop frees;
        // the owner calling us is alive, so the deque is.
        let old = unsafe { (*this).ring() };
        let (fill, retired) = if retire {
            (Fill::Null, this)
        } else {
            (Fill::Uninit, ptr::null_mut())
        };
        let new = Self::alloc(2 * old.capacity() as usize, fill, retired);
        // SAFETY: `new` was just allocated and is not shared yet.
        let ring = unsafe { (*new).ring() };
        let mut pos = top;
        while pos != bottom {
            // SAFETY: both rings are alive; `old` holds positions
            // `top..bottom` (the deque's live range).
            unsafe { ring.write(pos, old.read(pos)) };
            pos = pos.wrapping_add(1);
        }
        new
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
            // SAFETY: the slots came from `slots::alloc` with this capacity.
            unsafe { slots::free(ring.slots, ring.capacity() as usize) };
            this = ring.retired;
        }
    }
}

/// A copyable view of a ring: where its slots are, and the mask. Valid as
/// long as the `Buffer` it came from; the owner caches the live one.
#[derive(Clone, Copy)]
pub(super) struct Ring {
    slots: NonNull<AtomicPtr<()>>,
    mask: u32,
}

// SAFETY: a `Ring` points at atomic slots in a `Buffer` that lives as long as
// any handle of its deque; atomics may be used from any thread, so moving the
// view (with its `Worker`) to another thread is sound.
unsafe impl Send for Ring {}

impl Ring {
    /// The number of slots.
    #[inline]
    pub(super) fn capacity(self) -> u32 {
        self.mask + 1
    }

    /// Reads the slot of position `pos`.
    ///
    /// # Safety
    ///
    /// The ring must be alive, and the slot initialised (see [`Buffer`]).
    #[inline]
    pub(super) unsafe fn read(self, pos: u32) -> *mut () {
        // SAFETY: `pos & mask` is below the capacity; the caller vouches for
        // the ring and the slot.
        let slot = unsafe { self.slots.add((pos & self.mask) as usize).as_ref() };
        // Relaxed: the caller has already acquired what makes this slot's
        // content visible (`bottom` or the ring pointer for thieves; program
        // order for the owner).
        slot.load(Ordering::Relaxed)
    }

    /// Writes the slot of position `pos`. Owner only.
    ///
    /// # Safety
    ///
    /// The ring must be alive.
    #[inline]
    pub(super) unsafe fn write(self, pos: u32, item: *mut ()) {
        // SAFETY: as in `read`; writing initialises the slot.
        let slot = unsafe { self.slots.add((pos & self.mask) as usize).as_ptr() };
        // Relaxed: published to thieves by the owner's Release store of
        // `bottom` that follows (push), or of the ring pointer (grow).
        // SAFETY: in bounds and alive (above); `AtomicPtr::store` through a
        // raw pointer does not assume the old value is initialised.
        unsafe { (*slot).store(item, Ordering::Relaxed) };
    }
}

/// Slot storage. Plain memory in std builds; under loom each slot must be a
/// loom object made by `AtomicPtr::new`, so every ring is null-filled there.
mod slots {
    use super::Fill;
    use crate::sync::AtomicPtr;
    use core::ptr::NonNull;

    #[cfg(not(loom))]
    pub(super) fn alloc(capacity: usize, fill: Fill) -> NonNull<AtomicPtr<()>> {
        use std::alloc::{alloc, alloc_zeroed, handle_alloc_error};
        let layout = layout(capacity);
        // SAFETY: `capacity >= 1`, so the layout is not zero-sized. All-zero
        // bits are a valid null `AtomicPtr` (it has the layout of `*mut ()`).
        let raw = unsafe {
            match fill {
                Fill::Null => alloc_zeroed(layout),
                Fill::Uninit => alloc(layout),
            }
        };
        NonNull::new(raw.cast()).unwrap_or_else(|| handle_alloc_error(layout))
    }

    /// # Safety
    ///
    /// `slots` came from `alloc(capacity, _)` and is not used again.
    #[cfg(not(loom))]
    pub(super) unsafe fn free(slots: NonNull<AtomicPtr<()>>, capacity: usize) {
        // SAFETY: allocated by `alloc` above with this layout; `AtomicPtr`
        // needs no drop.
        unsafe { std::alloc::dealloc(slots.as_ptr().cast(), layout(capacity)) };
    }

    #[cfg(not(loom))]
    fn layout(capacity: usize) -> std::alloc::Layout {
        std::alloc::Layout::array::<AtomicPtr<()>>(capacity).expect("ring size overflows")
    }

    #[cfg(loom)]
    pub(super) fn alloc(capacity: usize, _fill: Fill) -> NonNull<AtomicPtr<()>> {
        let slots: Box<[AtomicPtr<()>]> = (0..capacity)
            .map(|_| AtomicPtr::new(core::ptr::null_mut()))
            .collect();
        NonNull::new(Box::into_raw(slots).cast()).expect("Box is non-null")
    }

    /// # Safety
    ///
    /// As the std version.
    #[cfg(loom)]
    pub(super) unsafe fn free(slots: NonNull<AtomicPtr<()>>, capacity: usize) {
        let raw = core::ptr::slice_from_raw_parts_mut(slots.as_ptr(), capacity);
        // SAFETY: made by `Box::into_raw` of a slice of `capacity` slots.
        drop(unsafe { Box::from_raw(raw) });
    }
}
