//! The shared state ([`Inner`]), the owner's [`Worker`] and the thieves'
//! [`Stealer`]. The protocol is described in the module docs (`mod.rs`).

use super::buffer::{Buffer, Fill, Ring};
use super::taken::Taken;
use super::{Pointer, Steal, MAX_STEAL};
use crate::padded::CachePadded;
use crate::sync::{Arc, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

/// How far above `top` a claim can reach: the most items one steal takes.
///
/// A pop at least this far above `top` cannot collide with any claim in
/// flight, so it leaves `head` unchanged (see "Which pops invalidate" in the
/// module docs). Under loom it is shrunk to 2 so that small models reach both
/// the colliding and the non-colliding pop; this is the only loom-specific
/// size in the deque.
#[cfg(not(loom))]
const REACH: u32 = MAX_STEAL as u32;
#[cfg(loom)]
const REACH: u32 = 2;

/// The low 32 bits of `head` are `top`; one unit of the high half is added by
/// every pop that invalidates the claims in flight.
const INVALIDATE: u64 = 1 << 32;

/// The default initial capacity of [`Worker::new`].
const DEFAULT_CAPACITY: usize = 64;

/// State shared by the owner and every thief. Lives until the last handle
/// ([`Worker`] or [`Stealer`]) drops.
pub(super) struct Inner<T: Pointer> {
    /// `top` (low 32 bits, the position of the oldest item) plus an
    /// invalidation count (high 32 bits; a carry out of `top` lands there).
    /// Thieves claim items with one CAS that adds the batch size; the owner
    /// joins its modification order with one RMW per pop, adding
    /// [`INVALIDATE`] when the pop may collide with a claim and 0 otherwise.
    /// Every write is an RMW that adds a positive amount or nothing, so the
    /// word never repeats a value until 2^64 has been added in all.
    pub(super) head: CachePadded<AtomicU64>,
    /// What the owner writes and thieves read, on one line of its own.
    pub(super) owner: CachePadded<OwnerSide>,
    /// How many [`Stealer`]s exist: a growth that reads 0 frees the old ring
    /// at once. Not `Arc::strong_count`: that is a Relaxed load, and the
    /// Acquire fence that would complete it is invisible to ThreadSanitizer,
    /// which then reports the free as racing the last thief's read. Written
    /// only when a `Stealer` is made or dropped.
    stealers: AtomicUsize,
    _items: PhantomData<T>,
}

/// The owner's half of the shared state. Both fields are written only by
/// the owner and read by thieves (and the owner); one cache line serves both.
pub(super) struct OwnerSide {
    /// One past the newest item.
    pub(super) bottom: AtomicU32,
    /// The live ring. Replaced only when the owner grows it.
    buffer: AtomicPtr<Buffer>,
}

// SAFETY: `Inner` owns the queued items (each a `T: Send`) through raw
// pointers. Items only move between threads, one owner at a time (the
// protocol hands each to exactly one popper or thief), and are never shared,
// so `T: Send` is enough for both `Send` and `Sync`.
unsafe impl<T: Pointer> Send for Inner<T> {}
// SAFETY: see the `Send` impl: shared access to `Inner` is only through its
// atomics; no `&T` is ever handed out.
unsafe impl<T: Pointer> Sync for Inner<T> {}

impl<T: Pointer> Inner<T> {
    /// The live ring, for a thief. Valid while the caller's handle lives:
    /// a ring is freed only when `Inner` drops, or by a growth that finds no
    /// `Stealer` in existence.
    #[inline]
    fn ring(&self) -> Ring {
        // Acquire: pairs with the Release store in `Worker::grow`, so the
        // slots copied into a new ring are visible before we read them.
        let ring = self.owner.buffer.load(Ordering::Acquire);
        // SAFETY: as above; the caller holds a handle.
        unsafe { (*ring).ring() }
    }

    /// `bottom - top` as seen now; exact when nothing runs concurrently.
    fn len(&self) -> usize {
        // Relaxed loads: a racy snapshot is all `len` promises.
        let top = self.head.load(Ordering::Relaxed) as u32;
        let bottom = self.owner.bottom.load(Ordering::Relaxed);
        // Negative while the owner is inside `pop` on an emptied deque.
        (bottom.wrapping_sub(top) as i32).max(0) as usize
    }
}

impl<T: Pointer> Drop for Inner<T> {
    fn drop(&mut self) {
        // Relaxed loads: `Arc` gives the last handle exclusive access, with
        // the Acquire that makes every other handle's writes visible.
        let top = self.head.load(Ordering::Relaxed) as u32;
        let bottom = self.owner.bottom.load(Ordering::Relaxed);
        let ring = self.owner.buffer.load(Ordering::Relaxed);
        // SAFETY: the live ring is valid until `free_chain` below.
        let slots = unsafe { (*ring).ring() };
        let mut pos = top;
        while pos != bottom {
            // SAFETY: positions `top..bottom` hold items no one has taken
            // (the owner is gone, so no pop is mid-way), each once; the ring
            // is alive and those slots were written.
            drop(unsafe { take::<T>(slots.read(pos)) });
            pos = pos.wrapping_add(1);
        }
        // SAFETY: `ring` heads the chain; no handle is left to use it.
        unsafe { Buffer::free_chain(ring) };
    }
}

/// Turns a claimed slot back into its item.
///
/// # Safety
///
/// `raw` must have been read from a position the caller has won (by its pop
/// or by a successful claim), so that no one else takes the same item.
#[inline]
unsafe fn take<T: Pointer>(raw: *mut ()) -> T {
    let raw = NonNull::new(raw).expect("stepsched::deque: won a slot that holds no item");
    // SAFETY: a non-null slot value is a pointer made by `T::into_raw` in
    // `push`; the caller's claim makes this the only `from_raw` for it.
    unsafe { T::from_raw(raw) }
}

/// The owner's end of a deque: pushes and pops at the bottom (LIFO).
///
/// There is one `Worker` per deque. It is `Send` but not `Sync`: its methods
/// take `&self` yet must only run on one thread at a time, which the missing
/// `Sync` guarantees.
///
/// # Examples
///
/// ```
/// use stepsched::deque::Worker;
///
/// let w = Worker::new();
/// w.push(Box::new(1));
/// w.push(Box::new(2));
/// assert_eq!(w.pop().map(|b| *b), Some(2));
/// assert_eq!(w.pop().map(|b| *b), Some(1));
/// assert!(w.pop().is_none());
/// ```
pub struct Worker<T: Pointer> {
    pub(super) inner: Arc<Inner<T>>,
    /// A lower bound on `top` (top only grows), kept by the owner so that
    /// most pushes and the empty check of `pop` need not read `head`, the
    /// line thieves write. `Cell` also makes `Worker` `!Sync`.
    pub(super) top_seen: Cell<u32>,
    /// The live ring's slots, cached by the owner (the only one who replaces
    /// the ring) so that push and pop skip the `Arc` -> ring -> slice chase.
    ring: Cell<Ring>,
}

impl<T: Pointer> Worker<T> {
    /// Creates an empty deque with room for 64 items before it first grows.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// Creates an empty deque whose ring starts with exactly the smallest
    /// power of two at least `max(min, 1)` slots.
    ///
    /// ```
    /// use stepsched::deque::Worker;
    /// let w = Worker::<Box<u8>>::with_capacity(5);
    /// assert_eq!(w.capacity(), 8);
    /// ```
    ///
    /// # Panics
    ///
    /// If that power of two exceeds 2^30.
    pub fn with_capacity(min: usize) -> Self {
        let capacity = min.max(1).checked_next_power_of_two().unwrap_or(usize::MAX);
        // No `Stealer` exists yet: the first ring needs no null fill.
        let buffer = Buffer::alloc(capacity, Fill::Uninit, core::ptr::null_mut());
        // SAFETY: just allocated; freed only when `Inner` drops.
        let ring = unsafe { (*buffer).ring() };
        let inner = Inner {
            head: CachePadded(AtomicU64::new(0)),
            owner: CachePadded(OwnerSide {
                bottom: AtomicU32::new(0),
                buffer: AtomicPtr::new(buffer),
            }),
            stealers: AtomicUsize::new(0),
            _items: PhantomData,
        };
        Worker {
            inner: Arc::new(inner),
            top_seen: Cell::new(0),
            ring: Cell::new(ring),
        }
    }

    /// Pushes an item at the bottom. Never fails: a full ring grows.
    ///
    /// Uses no atomic read-modify-write: a store of the slot, and a Release
    /// store of `bottom`.
    pub fn push(&self, item: T) {
        let inner = &*self.inner;
        // Relaxed: only this thread writes `bottom`.
        let bottom = inner.owner.bottom.load(Ordering::Relaxed);
        let mut ring = self.ring.get();
        if bottom.wrapping_sub(self.top_seen.get()) >= ring.capacity() {
            // Acquire: pairs with the thieves' Release CAS, so their reads of
            // the slots we are about to reuse happen before our writes.
            let top = inner.head.load(Ordering::Acquire) as u32;
            self.top_seen.set(top);
            if bottom.wrapping_sub(top) >= ring.capacity() {
                ring = self.grow(top, bottom);
            }
        }
        debug_assert!(bottom.wrapping_sub(self.top_seen.get()) < ring.capacity());
        // SAFETY: the cached ring is the live one, which outlives `self`.
        unsafe { ring.write(bottom, item.into_raw().as_ptr()) };
        // Release: publishes the slot just written (and any grown ring) to
        // thieves, whose Acquire load of `bottom` pairs with it.
        inner
            .owner
            .bottom
            .store(bottom.wrapping_add(1), Ordering::Release);
    }

    #[cold]
    fn grow(&self, top: u32, bottom: u32) -> Ring {
        let owner = &self.inner.owner;
        // With no `Stealer` in existence no thief can be reading the old
        // ring, and none can appear until this thread makes one: free it now
        // instead of retiring it. (Only the owner creates stealers, and a
        // count of 0 means no clone exists either.)
        //
        // Acquire: pairs with the Release decrement in `Stealer::drop`, so
        // the last thief's reads of the old ring happen before the free
        // below. Killed without it, by Miri (tests/deque_weak_memory.rs):
        // `a_ring_freed_by_a_lone_owner_is_not_read_after_the_free`.
        let alone = self.inner.stealers.load(Ordering::Acquire) == 0;
        // Relaxed: the owner reads its own last store.
        let old = owner.buffer.load(Ordering::Relaxed);
        let new = Buffer::grow(old, top, bottom, !alone);
        // Release: pairs with the Acquire in `Inner::ring`: a thief that
        // sees the new ring sees the items copied into it. The old ring stays
        // readable (it is retired, not freed) for thieves that loaded it.
        owner.buffer.store(new, Ordering::Release);
        if alone {
            // SAFETY: `old` (with every ring it retired) is no longer the
            // live ring, and no thief exists to read it (see above).
            unsafe { Buffer::free_chain(old) };
        }
        // SAFETY: `new` is live until `Inner` drops.
        let ring = unsafe { (*new).ring() };
        self.ring.set(ring);
        ring
    }

    /// Pops the newest item, or `None` if the deque is empty.
    ///
    /// Returns `None` only if the deque was empty at the pop's linearization
    /// point (a thief may have taken the last item first).
    pub fn pop(&self) -> Option<T> {
        let inner = &*self.inner;
        // Relaxed: only this thread writes `bottom`.
        let bottom = inner.owner.bottom.load(Ordering::Relaxed);
        if bottom == self.top_seen.get() {
            // top_seen <= top <= bottom: the deque is empty, no atomics needed.
            return None;
        }
        let pos = bottom.wrapping_sub(1);
        // Release: pairs with the thieves' Acquire load of `bottom` in
        // `claim`. A thief can read this very value (its `head` load came
        // before our RMW below) and then reads the slots below it, so the
        // store must carry the pushes that wrote them, as `push`'s does;
        // with Relaxed it reads a slot unordered (uninitialised memory, or
        // a stale item whose claim may still win; loom:
        // `thief_reads_bottom_from_pops_store`, Miri's weak memory:
        // `tests/deque_weak_memory.rs`). That thieves reading
        // `head` after the RMW in `reserve` see the lowered value is the
        // RMW's own Release (see there). A plain `mov` on x86_64.
        inner.owner.bottom.store(pos, Ordering::Release);
        let top = self.reserve(pos);
        self.top_seen.set(top);
        if (pos.wrapping_sub(top) as i32) < 0 {
            // Thieves took everything: top == bottom. Undo the decrement.
            // Release, as for the decrement: a thief whose `head` is older
            // than the claims that emptied the deque reads this value and
            // then slots below it, before its CAS fails; without Release
            // those reads are unordered with the pushes that wrote them
            // (uninitialised memory under Miri: the test
            // `thieves_never_read_unwritten_slots` in
            // `tests/deque_weak_memory.rs`).
            inner.owner.bottom.store(bottom, Ordering::Release);
            return None;
        }
        // SAFETY: `reserve` proved that no claim covers `pos`, and the
        // lowered `bottom` keeps later claims below it: the item is ours.
        let item = unsafe { take(self.ring.get().read(pos)) };
        Some(item)
    }

    /// Joins `head`'s modification order before taking position `pos`, and
    /// returns the `top` read there. Afterwards no claim can cover `pos`.
    ///
    /// Only claims that start within [`REACH`] below `pos` can cover it, so a
    /// pop that far above `top` adds 0 (claims in flight stay valid); a pop
    /// nearer adds [`INVALIDATE`], failing every claim whose view predates it.
    #[inline]
    fn reserve(&self, pos: u32) -> u32 {
        let head = &self.inner.head;
        if pos.wrapping_sub(self.top_seen.get()) as i32 >= REACH as i32 {
            // AcqRel RMW adding nothing: Release publishes the lowered
            // `bottom` to every thief that reads `head` after us (all later
            // writes to `head` are RMWs, so they carry our release sequence);
            // Acquire pairs with the thieves' Release CAS (their slot reads
            // happen before we reuse slots). Reading the latest `top` bounds
            // the stale claims: one that started before us and succeeds after
            // us saw `head` unchanged, so it starts at `top` and ends at most
            // `top + REACH <= pos`.
            let top = head.fetch_add(0, Ordering::AcqRel) as u32;
            if pos.wrapping_sub(top) as i32 >= REACH as i32 {
                return top;
            }
        }
        // AcqRel, as above; the added count makes every CAS whose `head` was
        // read before this point fail, and every thief reading after it sees
        // the lowered `bottom`, so no claim covers `pos`.
        head.fetch_add(INVALIDATE, Ordering::AcqRel) as u32
    }

    /// The number of items; exact when no thief runs concurrently.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the deque holds no items; exact when no thief runs
    /// concurrently.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of slots in the current ring (it doubles when full).
    pub fn capacity(&self) -> usize {
        self.ring.get().capacity() as usize
    }

    /// Creates a thief's handle for this deque.
    ///
    /// ```
    /// use stepsched::deque::{Steal, Worker};
    /// let w = Worker::new();
    /// let s = w.stealer();
    /// w.push(Box::new('a'));
    /// assert_eq!(s.steal().map(|b| *b), Steal::Success('a'));
    /// ```
    pub fn stealer(&self) -> Stealer<T> {
        // Relaxed: the owner reads its own increment in `grow`; no data is
        // published by making a handle.
        self.inner.stealers.fetch_add(1, Ordering::Relaxed);
        Stealer {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Pointer> Default for Worker<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Pointer> fmt::Debug for Worker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// A thief's handle: steals from the top (the oldest items).
///
/// `Clone`, `Send` and `Sync`; it keeps the deque alive, so it may go on
/// stealing after the [`Worker`] is dropped.
pub struct Stealer<T: Pointer> {
    inner: Arc<Inner<T>>,
}

/// A claim that won: its items, oldest first.
struct Batch {
    /// `items[..len]` are initialised.
    items: [MaybeUninit<*mut ()>; MAX_STEAL],
    len: usize,
}

impl Batch {
    /// The claimed slot values, oldest first.
    #[inline]
    fn items(&self) -> &[*mut ()] {
        // SAFETY: `claim` initialised `items[..len]`, and `MaybeUninit<U>`
        // has the layout of `U`.
        unsafe { &*(&self.items[..self.len] as *const [MaybeUninit<*mut ()>] as *const [*mut ()]) }
    }
}

impl<T: Pointer> Stealer<T> {
    /// Steals the oldest item.
    ///
    /// Returns [`Steal::Retry`] only if a concurrent pop or steal changed the
    /// deque between this thief's look and its claim.
    pub fn steal(&self) -> Steal<T> {
        match self.claim(1) {
            // SAFETY: the claim won position `top`, whose item it read.
            Steal::Success(batch) => Steal::Success(unsafe { take(batch.items()[0]) }),
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }

    /// Steals half of the items (rounded up, at most [`MAX_STEAL`]) with one
    /// successful CAS: returns the oldest and pushes the rest onto `dest`,
    /// oldest first.
    ///
    /// ```
    /// use stepsched::deque::{Steal, Worker};
    /// let victim = Worker::new();
    /// for i in 0..5 {
    ///     victim.push(Box::new(i));
    /// }
    /// let mine = Worker::new();
    /// let got = victim.stealer().steal_half_into(&mine);
    /// assert_eq!(got.map(|b| *b), Steal::Success(0));
    /// assert_eq!(mine.len(), 2); // ceil(5 / 2) = 3 taken: 0 returned, 1 and 2 moved
    /// assert_eq!(victim.len(), 2);
    /// ```
    pub fn steal_half_into(&self, dest: &Worker<T>) -> Steal<T> {
        self.steal_half_into_with(dest, |_| {})
    }

    /// [`steal_half_into`](Self::steal_half_into), showing `look` the items
    /// taken, oldest first (the first is the one returned), once all of them
    /// are the caller's and before any goes onto `dest`, where other thieves
    /// could take it: a thief can start fetching what they point to before
    /// it runs them. Should `look` panic, the items taken are dropped, each
    /// once, and none is pushed.
    ///
    /// ```
    /// use stepsched::deque::{Steal, Worker};
    /// let victim = Worker::new();
    /// for i in 0..5 {
    ///     victim.push(Box::new(i));
    /// }
    /// let mine = Worker::new();
    /// let mut seen = Vec::new();
    /// let got = victim
    ///     .stealer()
    ///     .steal_half_into_with(&mine, |items| seen.extend(items.iter().map(|b| **b)));
    /// assert_eq!(got.map(|b| *b), Steal::Success(0));
    /// assert_eq!(seen, [0, 1, 2]);
    /// assert_eq!(mine.len(), 2);
    /// ```
    pub fn steal_half_into_with(&self, dest: &Worker<T>, look: impl FnOnce(&[T])) -> Steal<T> {
        match self.claim(REACH) {
            Steal::Success(batch) => {
                let mut taken = Taken::new();
                for &raw in batch.items() {
                    // SAFETY: the claim won every position of the batch.
                    taken.push(unsafe { take(raw) });
                }
                look(taken.as_slice());
                let oldest = taken.next().expect("a claim is never empty");
                for item in taken {
                    dest.push(item);
                }
                Steal::Success(oldest)
            }
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }

    /// Claims `min(ceil(len / 2), limit)` of the oldest items with one CAS.
    fn claim(&self, limit: u32) -> Steal<Batch> {
        let inner = &*self.inner;
        // Acquire: pairs with the Release of the owner's pop RMW (directly or
        // through the thieves' CASes that follow it): a thief that reads
        // `head` after a pop sees that pop's lowered `bottom` below.
        let head = inner.head.load(Ordering::Acquire);
        let top = head as u32;
        // Acquire: pairs with the Release store in `push`: the slots below
        // the `bottom` we read hold their items.
        let bottom = inner.owner.bottom.load(Ordering::Acquire);
        let len = bottom.wrapping_sub(top) as i32;
        if len <= 0 {
            return Steal::Empty;
        }
        let count = (len as u32).div_ceil(2).min(limit);
        // Loaded after `bottom`: the ring is the one `bottom` was published
        // with, or a newer one holding the same positions (see `grow`).
        let ring = inner.ring();
        let mut batch = Batch {
            items: [const { MaybeUninit::uninit() }; MAX_STEAL],
            len: count as usize,
        };
        for (i, item) in batch.items[..batch.len].iter_mut().enumerate() {
            // SAFETY: our handle keeps the ring alive, and positions from
            // the `top` we loaded are initialised in any ring made since we
            // existed (see `Buffer`).
            item.write(unsafe { ring.read(top.wrapping_add(i as u32)) });
        }
        // Release on success: our slot reads happen before the owner's next
        // RMW (Acquire), so the owner reuses those slots only after we read
        // them. Relaxed on failure: we keep nothing from this attempt.
        match inner.head.compare_exchange(
            head,
            head.wrapping_add(u64::from(count)),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => Steal::Success(batch),
            Err(_) => Steal::Retry,
        }
    }

    /// The number of items, as of a racy snapshot.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the deque looked empty, as of a racy snapshot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Pointer> Clone for Stealer<T> {
    fn clone(&self) -> Self {
        // Relaxed: as `Arc`'s increment: `self` keeps the count above 0
        // until the clone is counted (its own decrement comes later in this
        // thread, so later in the count's modification order).
        self.inner.stealers.fetch_add(1, Ordering::Relaxed);
        Stealer {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Pointer> Drop for Stealer<T> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire load in `Worker::grow`: this
        // thief's reads of a ring happen before a growth that reads 0 frees
        // it. Killed without it, by Miri (tests/deque_weak_memory.rs):
        // `a_ring_freed_by_a_lone_owner_is_not_read_after_the_free`.
        self.inner.stealers.fetch_sub(1, Ordering::Release);
    }
}

impl<T: Pointer> fmt::Debug for Stealer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stealer")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}
