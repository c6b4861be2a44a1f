//! [`Mailbox`]: the compact build of the queue, one per process, with nodes
//! from a caller's [`NodeCache`].
//!
//! The design is documented on [`Mailbox`], so that it shows in the public
//! docs.

use core::fmt;
use core::marker::PhantomData;

use super::cache::NodeCache;
use super::error::TryPopError;
use super::list;
use super::node::Node;
use crate::sync::{AtomicPtr, Ordering, UnsafeCell};

/// A compact multi-producer, single-consumer FIFO queue: two words plus one
/// heap node, with nodes from a caller's [`NodeCache`].
///
/// `push` and `push_with` may be called from any thread; the `pop` family
/// from any thread too, but never by two threads at once, which is why it
/// is `unsafe`. The `_with` variants take and return nodes through a
/// thread-local [`NodeCache`].
///
/// A runtime hosting hundreds of thousands of mostly idle processes pays a
/// mailbox per process, so its size is the size of an idle process. A
/// [`Queue`](super::Queue) is 384 bytes of padded fields plus a block of
/// nodes (4 KiB for word-sized items) and a spare block, which a mailbox
/// per process cannot afford. A `Mailbox` is two words (`head`, `tail`)
/// and a stub node, and it owns no spare nodes at all.
///
/// # How it works
///
/// The list is [`Queue`](super::Queue)'s, run by the same code (`list.rs`):
/// a push swaps its node into `head` and then links the previous head to it;
/// the consumer follows the stub's `next`, moves the item out, makes that
/// node the new stub and releases the old one. What a `Mailbox` does with the
/// released node is the caller's choice:
///
/// - [`Mailbox::pop`] frees it and [`Mailbox::push`] allocates, as a plain
///   linked queue would;
/// - [`Mailbox::pop_with`] puts it into a [`NodeCache`] (or frees it if the
///   cache is full) and [`Mailbox::push_with`] takes its node from one
///   (allocating only if it is empty).
///
/// Every `Mailbox<T>` has the same node type, so one cache serves any
/// number of mailboxes. A scheduler worker keeps one: the messages it pops
/// for the process it runs refill the cache, and the messages that process
/// sends take their nodes from it, so steady-state message passing does not
/// touch the allocator.
///
/// A released node is safe to reuse anywhere at once. The consumer releases
/// the old stub only after reading a non-null `next` from it, and that store
/// was the last thing its producer did to it (**stub-alive** in the [module
/// docs](super)); the Acquire load of that `next` orders the producer's
/// accesses before whatever the consumer, or a later owner of the cache,
/// does with the node. The node keeps no trace of the mailbox it came from.
/// **cache-ownership:** a node in a [`NodeCache`] belongs to that cache
/// alone; it leaves by `push_with`, whose Release swap publishes it, or when
/// the cache is freed.
///
/// # The mid-link window (docs/ARCHITECTURE.md, trap 4)
///
/// A producer preempted between its swap and its link leaves its item, and
/// every item pushed after it, unreachable: the stub's `next` is still null.
/// No one else can finish the link, so [`Mailbox::pop`] returns `None` then
/// and [`Mailbox::try_pop`] says [`TryPopError::Inconsistent`]; the items
/// become reachable as soon as that producer runs again.
///
/// The scheduler tolerates this because every producer notifies the process
/// *after* its push has completed, link included: the notification (an RMW
/// on the process's state word) follows the link store in program order,
/// and the worker that runs the process for it acquires the state word
/// before popping, so that pop sees the link. A pop that returns `None`
/// during the window therefore strands nothing: the producer's
/// notification, and with it another pop, is still to come.
///
/// # What it gives up, and why
///
/// - **No padding.** Producers and the consumer write the same cache line.
///   A mailbox has one consumer at a time and is rarely pushed to by many
///   threads at once; for a hot shared queue use [`Queue`](super::Queue).
/// - **No `is_empty` for other threads.** `Queue::is_empty` compares `tail`
///   with `head` and needs its pop-generation word to rule out ABA: the stub
///   it read may have been released and pushed again in between. With
///   caches, that reuse is the common case (a worker pops from a mailbox and
///   its process replies into the same one), so a `Mailbox` would need that
///   third word and two more stores per pop. The scheduler does not ask:
///   producers notify instead. The consumer itself learns whether the mailbox
///   is empty or mid-link from [`Mailbox::try_pop`].
///
/// # Examples
///
/// Two producers, each with its own cache, and a consumer with a third:
///
/// ```
/// use stepsched::mpsc::{Mailbox, NodeCache};
///
/// let inbox = Mailbox::new();
/// let mut consumer_cache = NodeCache::new();
/// std::thread::scope(|s| {
///     for p in 0..2 {
///         let inbox = &inbox;
///         s.spawn(move || {
///             let mut cache = NodeCache::new();
///             (0..100).for_each(|i| inbox.push_with((p, i), &mut cache));
///         });
///     }
/// });
/// let mut last = [None, None];
/// // SAFETY: this thread is the only consumer.
/// while let Some((p, i)) = unsafe { inbox.pop_with(&mut consumer_cache) } {
///     assert!(last[p] < Some(i), "per-producer order");
///     last[p] = Some(i);
/// }
/// assert_eq!(last, [Some(99), Some(99)]);
/// assert_eq!(consumer_cache.len(), 64); // the rest was freed
/// ```
///
/// One thread, no cache:
///
/// ```
/// use stepsched::mpsc::Mailbox;
///
/// let m = Mailbox::new();
/// m.push("a");
/// m.push("b");
/// // SAFETY: this thread is the only consumer.
/// unsafe {
///     assert_eq!(m.pop(), Some("a"));
///     assert_eq!(m.pop(), Some("b"));
///     assert_eq!(m.pop(), None);
/// }
/// ```
pub struct Mailbox<T> {
    /// The newest node (the stub when the mailbox is empty). Swapped by
    /// every push; loaded by the consumer only to tell `Empty` from
    /// `Inconsistent`.
    head: AtomicPtr<Node<T>>,
    /// The stub. Read and written only by the consumer, inside the `pop`
    /// family, whose contract serialises them; and by `drop`.
    tail: UnsafeCell<*mut Node<T>>,
    /// The mailbox owns `T`s (for drop check).
    _owns: PhantomData<T>,
}

// SAFETY: the mailbox hands each `T` from the pushing thread to the popping
// thread, so `T: Send` is required and sufficient; the raw node pointers are
// owned by the mailbox and only dereferenced under the invariants above.
unsafe impl<T: Send> Send for Mailbox<T> {}
// SAFETY: shared access allows `push` (moves a `T` in from any thread) and
// `pop` (moves it out on another thread, serialised by the caller's `unsafe`
// promise, which also covers `tail`). No `&T` is ever shared, so `T: Sync`
// is not needed.
unsafe impl<T: Send> Sync for Mailbox<T> {}

impl<T> Mailbox<T> {
    /// Creates an empty mailbox (one allocation: the stub node).
    ///
    /// ```
    /// let m = stepsched::mpsc::Mailbox::<u32>::new();
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.pop() }, None);
    /// ```
    pub fn new() -> Self {
        Mailbox::with_stub(Node::alloc())
    }

    /// Creates an empty mailbox whose stub comes from `cache` (allocated only
    /// if the cache is empty).
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache};
    ///
    /// let mut cache = NodeCache::new();
    /// let first = Mailbox::<u8>::new_with(&mut cache);
    /// drop(first);
    /// ```
    pub fn new_with(cache: &mut NodeCache<T>) -> Self {
        Mailbox::with_stub(cache.take())
    }

    fn with_stub(stub: *mut Node<T>) -> Self {
        Mailbox {
            head: AtomicPtr::new(stub),
            tail: UnsafeCell::new(stub),
            _owns: PhantomData,
        }
    }

    /// Appends `item` in a newly allocated node. Callable from any thread;
    /// wait-free apart from the allocation.
    ///
    /// ```
    /// let m = stepsched::mpsc::Mailbox::new();
    /// m.push(1);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.pop() }, Some(1));
    /// ```
    pub fn push(&self, item: T) {
        // SAFETY: a new node is ours, empty, with a null `next`; our nodes
        // are alive (stub-alive).
        unsafe { list::push_node(&self.head, Node::alloc(), item) };
    }

    /// Appends `item` in a node taken from `cache`, allocating only if the
    /// cache is empty. Callable from any thread; one swap and one store.
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache};
    ///
    /// let m = Mailbox::new();
    /// let mut cache = NodeCache::new();
    /// m.push_with('x', &mut cache);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.pop_with(&mut cache) }, Some('x'));
    /// m.push_with('y', &mut cache); // reuses the node just released
    /// ```
    pub fn push_with(&self, item: T, cache: &mut NodeCache<T>) {
        // SAFETY: `take` gives a node we own, empty, with a null `next`
        // (cache-ownership); our nodes are alive (stub-alive).
        unsafe { list::push_node(&self.head, cache.take(), item) };
    }

    /// Whether no push has claimed a place after the items already popped:
    /// `false` as soon as a push has swapped `head`, even while it is still
    /// linking (the [mid-link window](Mailbox#the-mid-link-window-designmd-trap-4)),
    /// so a consumer that sees `true` knows that every push ordered before
    /// the call (by the synchronization that orders the consumers) was
    /// popped. Never waits.
    ///
    /// # Safety
    ///
    /// As [`Mailbox::pop`]: only the current consumer may ask, since the
    /// answer compares `head` with the consumer's own `tail`.
    ///
    /// ```
    /// let m = stepsched::mpsc::Mailbox::new();
    /// // SAFETY: this thread is the only consumer.
    /// assert!(unsafe { m.is_empty() });
    /// m.push(1);
    /// // SAFETY: as above.
    /// assert!(!unsafe { m.is_empty() });
    /// ```
    pub unsafe fn is_empty(&self) -> bool {
        // SAFETY: only the consumer touches `tail`, and the caller's
        // contract makes us the only one.
        let stub = self.tail.with(|tail| unsafe { *tail });
        // Relaxed: the answer is about pushes ordered before the call by
        // the synchronization that makes us the consumer (in the
        // scheduler, a notify's Release RMW of the state word that the
        // holder's `start` read with Acquire, loom: `receiver.rs`); such a
        // push swapped `head` past `stub` before, and coherence makes this
        // load see that swap or a later one. Nothing is read through the
        // pointer. `head == stub` means nothing was claimed after the last
        // pop: the stub is released only once a later node is linked after
        // it, so it cannot be `head` again while it is ours.
        self.head.load(Ordering::Relaxed) == stub
    }

    /// Removes the oldest item and frees the node it releases, or returns
    /// `None` if there is none or the next one is still being linked by a
    /// producer (see the [mid-link window](Mailbox#the-mid-link-window-designmd-trap-4)).
    /// Never waits.
    ///
    /// # Safety
    ///
    /// At most one thread may be inside a `pop`, `pop_with`, `try_pop` or
    /// `try_pop_with` on this mailbox at a time. Which thread that is may
    /// change, provided the calls are ordered by some synchronization (a
    /// lock, a token, a join; in the scheduler, the process state word).
    ///
    /// ```
    /// let m = stepsched::mpsc::Mailbox::new();
    /// m.push(7);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.pop() }, Some(7));
    /// ```
    pub unsafe fn pop(&self) -> Option<T> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub(None) }.ok()
    }

    /// Removes the oldest item and puts the node it releases into `cache`
    /// (freeing it if the cache is full), or returns `None` as
    /// [`Mailbox::pop`] does.
    ///
    /// # Safety
    ///
    /// As [`Mailbox::pop`].
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache};
    ///
    /// let m = Mailbox::new();
    /// let mut cache = NodeCache::new();
    /// m.push(7);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.pop_with(&mut cache) }, Some(7));
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub unsafe fn pop_with(&self, cache: &mut NodeCache<T>) -> Option<T> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub(Some(cache)) }.ok()
    }

    /// Removes the oldest item (freeing the node it releases), or says why
    /// there is none: [`TryPopError::Empty`], or
    /// [`TryPopError::Inconsistent`] while a push is mid-link. Never waits.
    ///
    /// # Safety
    ///
    /// As [`Mailbox::pop`].
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, TryPopError};
    ///
    /// let m = Mailbox::new();
    /// m.push('x');
    /// // SAFETY: this thread is the only consumer.
    /// unsafe {
    ///     assert_eq!(m.try_pop(), Ok('x'));
    ///     assert_eq!(m.try_pop(), Err(TryPopError::Empty));
    /// }
    /// ```
    pub unsafe fn try_pop(&self) -> Result<T, TryPopError> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub(None) }.map_err(|stub| list::classify_miss(&self.head, stub))
    }

    /// [`Mailbox::try_pop`] that puts the released node into `cache`.
    ///
    /// # Safety
    ///
    /// As [`Mailbox::pop`].
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache, TryPopError};
    ///
    /// let m = Mailbox::<u8>::new();
    /// let mut cache = NodeCache::new();
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { m.try_pop_with(&mut cache) }, Err(TryPopError::Empty));
    /// ```
    pub unsafe fn try_pop_with(&self, cache: &mut NodeCache<T>) -> Result<T, TryPopError> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.pop_or_stub(Some(cache)) }
            .map_err(|stub| list::classify_miss(&self.head, stub))
    }

    /// The one pop routine: the oldest item, or the stub whose `next` was
    /// null. The released node goes to `cache`, or to the allocator.
    ///
    /// # Safety
    ///
    /// As [`Mailbox::pop`].
    #[inline]
    unsafe fn pop_or_stub(&self, cache: Option<&mut NodeCache<T>>) -> Result<T, *mut Node<T>> {
        let (item, released) = self.tail.with_mut(|tail| {
            // SAFETY: only the consumer touches `tail`, and the caller's
            // contract makes us the only one.
            let stub = unsafe { *tail };
            // SAFETY: `stub` is the current stub and we are its only
            // consumer; we make `next` the stub right below.
            let (item, next) = unsafe { list::take_next(stub) }.ok_or(stub)?;
            // SAFETY: as for the read above.
            unsafe { *tail = next };
            Ok((item, stub))
        })?;
        match cache {
            // SAFETY: the old stub is ours: its producer is done with it
            // (stub-alive) and its item was taken when it became the stub.
            Some(cache) => unsafe { cache.put(released) },
            // SAFETY: as above.
            None => unsafe { Node::dealloc(released) },
        }
        Ok(item)
    }
}

/// Hints for a caller about to touch many mailboxes in a row: each asks for
/// the line that an operation on this mailbox will miss on
/// (`sync::prefetch_write`), so that the misses of several mailboxes
/// overlap instead of coming one after the other.
impl<T> Mailbox<T> {
    /// The newest node's line, whose link the next push writes.
    #[inline]
    pub(crate) fn prefetch_newest(&self) {
        // Relaxed: an address for a hint; nothing is read through it, and
        // a stale one costs a wasted prefetch at most.
        crate::sync::prefetch_write(self.head.load(Ordering::Relaxed));
    }

    /// The stub's line, whose link the next pop reads.
    ///
    /// # Safety
    ///
    /// As for [`pop`](Self::pop): no pop may run meanwhile (the caller is
    /// the only one that may consume, as the holder of a process's task is).
    #[inline]
    pub(crate) unsafe fn prefetch_stub(&self) {
        // SAFETY: only a consumer writes `tail`, and the caller's contract
        // makes the caller the only one that may consume.
        let stub = self.tail.with(|tail| unsafe { *tail });
        crate::sync::prefetch_write(stub);
    }
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Mailbox::new()
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread can be inside a pop.
        let stub = self.tail.with_mut(|tail| unsafe { *tail });
        let free = |node| {
            // SAFETY: mailbox nodes come from `Node::alloc`; `drop_list`
            // hands each over once, owned and empty.
            unsafe { Node::dealloc(node) }
        };
        // SAFETY: `&mut self`: every push has completed (none is mid-link)
        // and we own every node; `stub` is the current stub.
        unsafe { list::drop_list(stub, free) };
    }
}

impl<T> fmt::Debug for Mailbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox").finish_non_exhaustive()
    }
}

#[cfg(any(test, fuzzing))]
impl<T> Mailbox<T> {
    /// Performs the first half of a push with a node from `cache` and
    /// returns the second half (see [`MidLink`](super::MidLink)).
    pub(crate) fn push_mid_link(&self, item: T, cache: &mut NodeCache<T>) -> super::MidLink<'_, T> {
        // SAFETY: as in `push_with`.
        unsafe { super::MidLink::swap_in(&self.head, cache.take(), item) }
    }
}

#[cfg(test)]
mod tests;
