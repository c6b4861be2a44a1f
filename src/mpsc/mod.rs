//! Multi-producer, single-consumer FIFO queues: Vyukov's node-based queue
//! with a stub node, in two builds.
//!
//! - [`Queue`] is for a few hot, shared queues (a worker's inject queue, the
//!   global run queue): its producer and consumer halves sit on cache lines
//!   of their own, its nodes sit in blocks of up to a few hundred that are
//!   recycled a block at a time, and any thread may ask
//!   [`Queue::is_empty`]. It costs 384 bytes plus two blocks (4 KiB each
//!   for word-sized items) when idle.
//! - [`Mailbox`] is for very many mostly idle queues (one per process): two
//!   words plus the stub node. It keeps no nodes itself; the caller passes a
//!   thread-local [`NodeCache`] to `push_with` and `pop_with`, so a worker
//!   that receives and sends messages reuses the same nodes across all the
//!   mailboxes it touches. See [`Mailbox`] for what it gives up. Its
//!   nodes, when a cache has none, come from blocks the crate maps itself
//!   and gives back whole (`pool.rs`), not from malloc.
//!
//! Both run the same list operations (`list.rs`); what follows describes
//! them and `Queue`'s additions.
//!
//! # Guarantees
//!
//! - **FIFO per producer.** Items from one producer arrive in the order it
//!   pushed them; items from different producers arrive in the order their
//!   pushes took `head`.
//! - **Wait-free push, from any thread.** A [`Queue::push`] claims the next
//!   node of a shared block with one CAS (retried only when another push
//!   won, at most 8 times), then writes the item and the link with two
//!   plain stores; a push that loses 8 CASes in a row swaps `head` into a
//!   block of its own, which cannot fail. The allocator is called once per
//!   block (about 250 word-sized items), not per push. A [`Mailbox`] push is
//!   Vyukov's exactly: one swap and one store.
//! - **A pop never waits.** `pop` (one consumer at a time, hence `unsafe`)
//!   returns `None` while a producer is preempted between taking `head` and
//!   linking its node, and `try_pop` then says
//!   [`TryPopError::Inconsistent`] rather than [`TryPopError::Empty`]: the
//!   item is there, and becomes reachable when that producer runs again. A
//!   caller must not treat `Inconsistent` as idle.
//! - **`is_empty` from any thread, never falsely empty.**
//!   [`Queue::is_empty`] is `false` from the moment a push takes `head`,
//!   mid-link included, so a worker that checks it before parking cannot
//!   sleep on an item.
//! - **Nothing lost at drop.** Dropping a queue drops every remaining item
//!   exactly once.
//! - **No allocation per message in a mailbox.** A [`Mailbox`]'s nodes come
//!   from the caller's [`NodeCache`], so a worker that receives and sends
//!   reuses the same nodes across every mailbox it touches.
//!
//! # How it works
//!
//! The algorithm is D. Vyukov's *Intrusive MPSC node-based queue*
//! (1024cores.net, "Non-intrusive MPSC node-based queue" on the same site is
//! the variant closest to this one). The queue is a singly linked list from
//! the oldest node (`tail`, owned by the consumer) to the newest (`head`,
//! shared by producers). The node at `tail` is always a *stub*: its item has
//! already been taken (or it never had one), so the list is never empty and
//! neither side ever has to special-case a null end.
//!
//! - **push** (any thread): fill a node, `swap` it into `head`, then store
//!   it into the previous head's `next`. One swap and one store; no loop.
//!   (A `Queue` first tries a CAS that claims the next node of a shared
//!   block, a bounded number of times, and only then swaps; below.)
//! - **pop** (one thread at a time): read the stub's `next`. If it is set,
//!   that node becomes the new stub, its item is moved out and the old stub
//!   is released. If it is null, the queue is empty, or a producer is
//!   between its swap and its store (below).
//!
//! We depart from the original in three places, each explained where it
//! lives: a `Queue`'s nodes sit side by side in blocks that are recycled
//! whole (`block.rs`), and so its push swings `head` with a CAS to the node
//! after the old head (which claims that node) instead of swapping in a
//! node it brought, then writes the item and links (a push that loses the
//! CAS 8 times in a row swaps in the first node of a block of its own, so
//! pushing stays wait-free); the consumer publishes
//! its position so that any thread can ask [`Queue::is_empty`]; and the
//! transient state is named ([`TryPopError::Inconsistent`]). A
//! [`Mailbox`] pushes exactly as Vyukov does: fill, swap, link.
//!
//! # Where the time goes
//!
//! A `Queue` push is one CAS of `head` (retried only if another push won,
//! at most 8 times) and two plain stores (item, link); a pop is two loads and three plain
//! stores, none on the producers' line. Consecutive pushes fill consecutive
//! nodes, so the consumer misses about once per cache line of nodes rather
//! than once per item, and the allocator is called about once per block
//! only while a backlog grows.
//!
//! With one producer and a consumer that keeps up, the consumer polls the
//! stub's `next`, on the line the producer writes its next link and item
//! to, so each push waits for that line to come back (most of the push's
//! time is at its CAS, which drains those stores). `SegQueue` pays the
//! same round trip on its tail index, which is why with one producer this
//! queue gains much less over it than with two. Beating
//! it by more would take a consumer that reads in batches, which a linked
//! list with this `pop` and `is_empty` does not allow.
//!
//! # The mid-link window (docs/ARCHITECTURE.md, trap 4)
//!
//! A producer preempted after its swap (or CAS) and before its link leaves
//! an item that is in the queue but unreachable: the stub's `next` is still
//! null while `head` already points past it. No other thread can finish the link
//! for it, so [`Queue::try_pop`] does not wait: it returns
//! [`TryPopError::Inconsistent`] (and [`Queue::pop`] returns `None`).
//! [`Queue::is_empty`] compares `head` with the stub rather than following
//! links, so it reports *not empty* during the window: a worker that checks
//! `is_empty` before parking will not sleep on that item.
//!
//! For the lost-wakeup protocol (docs/ARCHITECTURE.md, trap 5) the write that
//! counts is
//! the producer's swap or CAS of `head` and the read that counts is
//! `is_empty`'s load of `head`. With the protocol's SeqCst fences (producer: push, fence,
//! read the sleepers; worker: announce, fence, `is_empty`), either the
//! worker sees the swap, mid-link or not, or the producer sees the
//! announcement and wakes it.
//!
//! # Invariants
//!
//! - **stub-alive**: the node at `tail` is never released while it is the
//!   stub; a node is released only after the consumer read a non-null
//!   `next` from it, so no producer can still be about to link to it.
//! - **block-done** (`block.rs`): a block is reused or freed only when all
//!   its nodes have been claimed and released, or skipped (never to be
//!   claimed in this life).
//! - **published-before-linked**: a node's null `next` is written before the
//!   swap or CAS that makes it `head` (AcqRel), and its item before the link
//!   to it (in a `Mailbox` also before the swap); the link is a Release
//!   store that the consumer reads with Acquire, so the consumer sees the
//!   item whole.
//! - **pop-generation**: the consumer bumps `popped` after moving `tail` and
//!   before releasing the old stub. A reader that sees the same generation
//!   before and after comparing `tail` with `head` knows the stub it read
//!   was not released, reused and pushed again in between (no ABA in
//!   `is_empty`).
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use std::thread;
//! use stepsched::mpsc::Queue;
//!
//! let q = Arc::new(Queue::new());
//! let producers: Vec<_> = (0..2)
//!     .map(|p| {
//!         let q = Arc::clone(&q);
//!         thread::spawn(move || (0..100).for_each(|i| q.push((p, i))))
//!     })
//!     .collect();
//! producers.into_iter().for_each(|h| h.join().unwrap());
//!
//! let mut last = [None, None];
//! // SAFETY: this thread is the only consumer.
//! while let Some((p, i)) = unsafe { q.pop() } {
//!     assert!(last[p] < Some(i), "per-producer order");
//!     last[p] = Some(i);
//! }
//! assert_eq!(last, [Some(99), Some(99)]);
//! assert!(q.is_empty());
//! ```

mod block;
mod cache;
mod error;
mod list;
mod mailbox;
mod node;
pub(crate) mod pool;
mod producer;

pub use cache::NodeCache;
pub use error::TryPopError;
#[cfg(any(test, fuzzing))]
pub(crate) use list::MidLink;
pub use mailbox::Mailbox;
pub use producer::Producer;

use core::fmt;
use core::marker::PhantomData;

use crate::padded::CachePadded;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use block::{Header, Slab};
use node::Node;

/// A multi-producer, single-consumer FIFO queue (see the [module
/// docs](self) for the algorithm).
///
/// `push` and `is_empty` may be called from any thread; `pop` from any thread
/// too, but never by two threads at once, which is why it is `unsafe`.
/// [`Queue::producer`] returns a pushing handle for code written against
/// one; it pushes exactly as `push` does.
///
/// # Examples
///
/// ```
/// use stepsched::mpsc::Queue;
///
/// let q = Queue::new();
/// q.push("a");
/// q.push("b");
/// // SAFETY: this thread is the only consumer.
/// unsafe {
///     assert_eq!(q.pop(), Some("a"));
///     assert_eq!(q.pop(), Some("b"));
///     assert_eq!(q.pop(), None);
/// }
/// ```
pub struct Queue<T> {
    /// Written by every producer; read by the consumer only when `try_pop`
    /// finds no successor, and by `is_empty`.
    producers: CachePadded<ProducerSide<T>>,
    /// Written only by the consumer; read by `is_empty` from any thread.
    consumer: CachePadded<ConsumerSide<T>>,
    /// One recycled block, or null (`block.rs`): filled by the consumer
    /// once per block it finishes, taken by the producer that finds `head`
    /// at its block's last node. On a line of its own so that neither side's
    /// hot line moves when it changes hands.
    spare: CachePadded<AtomicPtr<Header>>,
    /// The queue owns `T`s (for drop check).
    _owns: PhantomData<T>,
}

struct ProducerSide<T> {
    /// The newest node (the stub when the queue is empty). CAS'd by every
    /// push, which claims the node after it (`block.rs`); never written by
    /// the consumer.
    head: AtomicPtr<Node<T>>,
}

struct ConsumerSide<T> {
    /// The stub. Stored only by the consumer; loaded by the consumer
    /// (its own writes) and by `is_empty`, all Relaxed: `is_empty` orders
    /// its load through `popped` (see `is_empty_pausing`).
    tail: AtomicPtr<Node<T>>,
    /// Successful pops so far, wrapping (pop-generation invariant). Stored
    /// only by the consumer; loaded by `is_empty`.
    popped: AtomicUsize,
}

// SAFETY: the queue hands each `T` from the pushing thread to the popping
// thread, so `T: Send` is required and sufficient; the raw node pointers are
// owned by the queue and only dereferenced under the invariants above.
unsafe impl<T: Send> Send for Queue<T> {}
// SAFETY: shared access allows `push` (moves a `T` in from any thread) and
// `pop` (moves it out on another thread, serialised by the caller's `unsafe`
// promise). No `&T` is ever shared, so `T: Sync` is not needed.
unsafe impl<T: Send> Sync for Queue<T> {}

impl<T> Queue<T> {
    /// Creates an empty queue (one allocation: a block, whose first node is
    /// the stub).
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::<u32>::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn new() -> Self {
        let stub = Slab::<T>::first(Slab::<T>::alloc());
        Queue {
            producers: CachePadded(ProducerSide {
                head: AtomicPtr::new(stub),
            }),
            consumer: CachePadded(ConsumerSide {
                tail: AtomicPtr::new(stub),
                popped: AtomicUsize::new(0),
            }),
            spare: CachePadded(AtomicPtr::new(core::ptr::null_mut())),
            _owns: PhantomData,
        }
    }

    /// Appends `item`. Callable from any thread; wait-free.
    ///
    /// One CAS of `head`, on the producers' own cache line, claims the node
    /// and links it in, then two plain stores write the item and the link.
    /// The CAS fails only when another push claimed a node in between; after
    /// a few such failures in a row (8) the push stops competing and swaps
    /// `head` to a block of its own, which cannot fail, so every push ends
    /// in a bounded number of steps. Once per block (254 pushes for a
    /// word-sized item) it also takes the spare block or allocates one.
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::new();
    /// q.push(1);
    /// assert!(!q.is_empty());
    /// ```
    pub fn push(&self, item: T) {
        let (prev, node) = self.claim(item);
        // SAFETY: `(prev, node)` comes from one claim and is linked once.
        unsafe { list::link(prev, node) };
    }

    /// The first half of a push: claims a node (`block.rs`) and moves `item`
    /// into it. Returns the old head and the node, which the caller must
    /// link exactly once (until then the push is mid-link).
    #[inline]
    fn claim(&self, item: T) -> (*mut Node<T>, *mut Node<T>) {
        let (prev, node) = Slab::claim(&self.producers.head, &self.spare);
        // SAFETY: the claim made `node` ours until we link it, and its item
        // slot is empty; the consumer reads it only after the Release link
        // (published-before-linked).
        unsafe { (*node).value.with_mut(|slot| (*slot).write(item)) };
        (prev, node)
    }

    /// Removes the oldest item, or returns `None` if there is none or the
    /// next one is still being linked by a producer (see
    /// [`TryPopError::Inconsistent`]). Never waits.
    ///
    /// # Safety
    ///
    /// At most one thread may be inside `pop` or [`Queue::try_pop`] on this
    /// queue at a time. Which thread that is may change, provided the calls
    /// are ordered by some synchronization (a lock, a token, a join).
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::new();
    /// q.push(7);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { q.pop() }, Some(7));
    /// ```
    pub unsafe fn pop(&self) -> Option<T> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub() }.ok()
    }

    /// Removes the oldest item, or says why there is none. Never waits.
    ///
    /// Telling [`TryPopError::Empty`] from [`TryPopError::Inconsistent`]
    /// costs one read of the producers' cache line on a miss; [`Queue::pop`]
    /// skips it, which matters to a consumer that spins on an empty queue.
    ///
    /// # Safety
    ///
    /// The same as [`Queue::pop`]: calls to `pop` and `try_pop` never
    /// overlap.
    ///
    /// ```
    /// use stepsched::mpsc::{Queue, TryPopError};
    ///
    /// let q = Queue::new();
    /// q.push('x');
    /// // SAFETY: this thread is the only consumer.
    /// unsafe {
    ///     assert_eq!(q.try_pop(), Ok('x'));
    ///     assert_eq!(q.try_pop(), Err(TryPopError::Empty));
    /// }
    /// ```
    pub unsafe fn try_pop(&self) -> Result<T, TryPopError> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub() }
            .map_err(|stub| list::classify_miss(&self.producers.head, stub))
    }

    /// The one pop routine: the oldest item, or the stub whose `next` was
    /// null.
    ///
    /// # Safety
    ///
    /// As [`Queue::pop`].
    #[inline]
    unsafe fn pop_or_stub(&self) -> Result<T, *mut Node<T>> {
        // Relaxed: only the consumer stores `tail`, and the caller's contract
        // orders us after the previous consumer.
        let stub = self.consumer.tail.load(Ordering::Relaxed);
        // SAFETY: `stub` is the current stub and we are the only consumer
        // (our caller's contract); we store `next` as the stub right below.
        let Some((item, next)) = (unsafe { list::take_next(stub) }) else {
            return Err(stub);
        };
        // Release pairs with the Acquire load of `tail` in `is_empty`: a
        // reader that sees this pop's `tail` sees every push this thread
        // saw before it (it may have pushed them itself), so it cannot pair
        // this fresh `tail` with a `head` older than those pushes. Killed
        // without it: loom model
        // `is_empty_reading_a_fresh_tail_and_a_stale_head_says_empty`.
        self.consumer.tail.store(next, Ordering::Release);
        let popped = self.consumer.popped.load(Ordering::Relaxed);
        // Release pairs with the first Acquire load of `popped` in
        // `is_empty` (pop-generation): a reader that sees the new count also
        // sees the new `tail`. Killed without it: loom model
        // `is_empty_is_false_while_an_item_stays_queued_across_a_stub_reuse`.
        self.consumer
            .popped
            .store(popped.wrapping_add(1), Ordering::Release);
        // SAFETY: the old stub is no longer reachable by producers (its
        // `next` was set: stub-alive) nor by the consumer, and we are the
        // only consumer (the `pop` contract), so its block count is ours.
        if let Some(block) = unsafe { Slab::release(stub) } {
            // SAFETY: `release` hands over a finished block (block-done);
            // its nodes' items were all taken.
            unsafe { block::put_spare::<T>(&self.spare, block) };
        }
        Ok(item)
    }

    /// Returns `true` if the queue holds no item. Callable from any thread.
    ///
    /// It is `false` whenever a completed push's item has not been popped,
    /// and also while a push is between its swap and its link (the item is
    /// coming, see [`TryPopError::Inconsistent`]). With no push in progress
    /// it is `true` exactly when `pop` would return `None`. If a pop runs
    /// concurrently it may answer `false`, which is correct for the instant
    /// before that pop took its item.
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::new();
    /// assert!(q.is_empty());
    /// q.push(());
    /// assert!(!q.is_empty());
    /// // SAFETY: this thread is the only consumer.
    /// unsafe { q.pop() };
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.is_empty_pausing(|| ())
    }

    /// [`Queue::is_empty`], running `pause` between its loads of `tail` and
    /// `head`: the window in which a stub can be released, reused and pushed
    /// again. `is_empty` passes a no-op; a unit test stages the reuse there.
    #[inline]
    fn is_empty_pausing(&self, pause: impl FnOnce()) -> bool {
        // What `true` guarantees (pop-generation): every push whose claim
        // of `head` is no later, in `head`'s modification order, than the
        // value we read (a push that happens before the call, or one the
        // SeqCst fences of docs/ARCHITECTURE.md's trap 5 put there) was
        // popped: our load
        // of `tail` read a store made by its pop or a later one. Suppose a
        // push `x` was not: `stub` precedes `x`'s node in the list, so
        // `head == stub`, read after `x`'s claim, is that address claimed
        // again (a node is claimed once per life of its block). The block
        // had to be finished first, by a pop after the one that stored
        // `stub` into `tail`, which stored its count before its Release
        // swap in `put_spare`. From there to the new claim every step
        // synchronizes: the producer that reinstalls the block takes it
        // with an Acquire swap (or, if it was freed and its memory
        // allocated again, the free follows an Acquire swap of `spare` and
        // the allocator orders it before the allocation), the installing
        // CAS or swap of `head` is Release, and every later write of `head`
        // is an AcqRel RMW. So our Acquire load of `head` makes that count
        // visible to the second load of `popped`, which then reads at least
        // it. `before == after` means the first load read such a count too,
        // from a pop that stored a `tail` past `stub` before its Release
        // store of `popped`; its Acquire makes that `tail` store visible,
        // and our load of `tail` cannot read the older store of `stub`
        // (coherence). Contradiction. (`popped` wraps after 2^64 pops,
        // which one call does not outlast.)
        //
        // Hence the orderings. `popped` (first load): Acquire, pairs with the
        // Release store in `pop_or_stub`. `head`: Acquire, pairs with the
        // producers' AcqRel CAS or swap. Both are killed by the loom model
        // `is_empty_is_false_while_an_item_stays_queued_across_a_stub_reuse`.
        // `tail`: Acquire, pairs with the Release store in `pop_or_stub`.
        // The argument above covers pushes ordered before our `head` load;
        // without this edge a push that the popping thread saw (say, made)
        // before the pop whose `tail` we read could still be missing from
        // a stale `head`, and the queue would read empty with that item in
        // it (loom `is_empty_reading_a_fresh_tail_and_a_stale_head_says_empty`:
        // push c, pop a and b, on one thread; the observer reads the `tail`
        // after b and a `head` before c). These were weakened once because
        // mutation found no checker that needed them: the model that needs
        // them hid in loom's blind spot (`docs/proof/loom-limits.md`).
        // The second `popped`: Relaxed, ordered after `head` by its
        // Acquire, and nothing after it reads shared memory.
        let before = self.consumer.popped.load(Ordering::Acquire);
        let stub = self.consumer.tail.load(Ordering::Acquire);
        pause();
        let head = self.producers.head.load(Ordering::Acquire);
        if head != stub {
            return false;
        }
        // Same stub and no pop in between: `stub` was not released, reused
        // and pushed again, so `head == stub` means no push claimed a node
        // since `stub` became the stub, and the queue was empty when we read
        // `tail`.
        self.consumer.popped.load(Ordering::Relaxed) == before
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue::new()
    }
}

impl<T> Drop for Queue<T> {
    fn drop(&mut self) {
        // Relaxed, here and for `head` and `spare` below: `&mut self` is
        // exclusive, and whatever handed it to us (a join, the last `Arc`)
        // already ordered every other thread's pushes and pops before it.
        let stub = self.consumer.tail.load(Ordering::Relaxed);
        // Every block is fully used except `head`'s, so each is freed by the
        // release of its last node in the list; `head`'s block once its
        // unused nodes are counted too, which we do first.
        let head = self.producers.head.load(Ordering::Relaxed);
        // SAFETY: exclusive access; `head` is still in the list, unreleased.
        unsafe { Slab::<T>::release_unused(head) };
        let free = |block: Option<*mut Header>| {
            if let Some(block) = block {
                // SAFETY: exclusive access; a finished block holds no items.
                unsafe { Slab::<T>::dealloc(block) };
            }
        };
        let release = |node| {
            // SAFETY: `drop_list` hands each node over once, owned and
            // empty, and we have exclusive access.
            free(unsafe { Slab::release(node) })
        };
        // SAFETY: `&mut self`: no other thread can push or pop, so every push
        // has completed and we own every node; `stub` is the current stub.
        unsafe { list::drop_list(stub, release) };
        let spare = self.spare.load(Ordering::Relaxed);
        // SAFETY: exclusive access; the spare block holds no items.
        free((!spare.is_null()).then_some(spare));
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("is_empty", &self.is_empty())
            .finish_non_exhaustive()
    }
}

#[cfg(any(test, fuzzing))]
impl<T> Queue<T> {
    /// Performs the first half of a push and returns the second half
    /// (see [`MidLink`]).
    pub(crate) fn push_mid_link(&self, item: T) -> MidLink<'_, T> {
        let (prev, node) = self.claim(item);
        // SAFETY: `(prev, node)` comes from one claim, linked by the
        // `MidLink` alone.
        unsafe { MidLink::from_claim(prev, node) }
    }

    /// As [`Queue::push_mid_link`], but the claim takes the bounded way out
    /// that a push takes after losing `CLAIM_TRIES` CASes: it swaps `head`
    /// to a block of its own and skips the rest of the current block.
    pub(crate) fn push_mid_link_fresh(&self, item: T) -> MidLink<'_, T> {
        let (prev, node) = Slab::claim_fresh_for_test(&self.producers.head, &self.spare);
        // SAFETY: the claim made `node` ours, with an empty item slot.
        unsafe { (*node).value.with_mut(|slot| (*slot).write(item)) };
        // SAFETY: `(prev, node)` comes from one claim, linked by the
        // `MidLink` alone.
        unsafe { MidLink::from_claim(prev, node) }
    }
}

#[cfg(test)]
pub(crate) mod tests;
