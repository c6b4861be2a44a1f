//! [`NodeCache`]: a thread's own stack of free queue nodes, for
//! [`Mailbox`](super::Mailbox).

use core::fmt;
use core::ptr;

use super::node::{self, Node};
use crate::sync::Ordering;

/// A bounded stack of free nodes owned by one thread, which
/// [`Mailbox::push_with`](super::Mailbox::push_with) takes nodes from and
/// [`Mailbox::pop_with`](super::Mailbox::pop_with) returns them to.
///
/// Nodes are not tied to a mailbox: every `Mailbox<T>` uses the same node
/// type, so a node popped out of one mailbox can carry the next item pushed
/// into any other. A worker thread that keeps one cache for all the
/// mailboxes it pops from and pushes to therefore moves messages without
/// allocating, once the cache holds as many nodes as the worker has in
/// flight.
///
/// The cache is a plain linked stack (no atomics beyond the nodes' own link
/// word, all Relaxed): taking or returning a node is a few loads and
/// stores. It is `Send` (it holds no `T`, only empty nodes) but not `Sync`,
/// and every operation takes `&mut self`. It keeps at most
/// [`limit`](NodeCache::limit) nodes; a node returned to a full cache is
/// freed. Dropping the cache frees its nodes.
///
/// # Examples
///
/// ```
/// use stepsched::mpsc::{Mailbox, NodeCache};
///
/// let (a, b) = (Mailbox::new(), Mailbox::new());
/// let mut cache = NodeCache::new();
/// a.push_with(1, &mut cache); // the cache is empty: allocates
/// // SAFETY: this thread is the only consumer of `a` and `b`.
/// unsafe {
///     let x = a.pop_with(&mut cache).unwrap(); // a node goes into the cache
///     assert_eq!(cache.len(), 1);
///     b.push_with(x + 1, &mut cache); // and carries the next message
///     assert_eq!(cache.len(), 0);
///     assert_eq!(b.pop_with(&mut cache), Some(2));
/// }
/// ```
///
/// It cannot be shared between threads:
///
/// ```compile_fail
/// fn shared<T: Sync>(_: &T) {}
/// shared(&stepsched::mpsc::NodeCache::<u8>::new());
/// ```
pub struct NodeCache<T> {
    /// The most recently returned node, linked through `next` to the older
    /// ones; null when empty. Every node in the chain is owned by this cache
    /// alone and holds no item. (The raw pointer also makes the type `!Sync`.)
    top: *mut Node<T>,
    /// Nodes in the chain, at most `limit`.
    len: usize,
    /// The most nodes kept.
    limit: usize,
}

// SAFETY: the cache owns its nodes exclusively and they hold no `T` (their
// item slots are uninit), so moving it to another thread shares nothing and
// sends no `T`; the nodes may be freed on any thread (`Node::dealloc` is:
// the pool's live counts are atomic, and the global allocator is
// thread-safe).
unsafe impl<T> Send for NodeCache<T> {}

impl<T> NodeCache<T> {
    /// The limit of [`NodeCache::new`].
    ///
    /// Derivation: the cache has to absorb the difference between the
    /// messages a worker pops and those it sends over a short stretch of
    /// steps; a step that drains a few dozen messages and sends as many
    /// stays within 64. Beyond that the excess goes back to the allocator,
    /// so an idle worker holds at most 64 nodes: 4 KiB for a 64-byte node,
    /// a small fraction of a 32 KiB L1 cache.
    pub const DEFAULT_LIMIT: usize = 64;

    /// Creates an empty cache that keeps up to [`NodeCache::DEFAULT_LIMIT`]
    /// nodes. Allocates nothing.
    ///
    /// ```
    /// let cache = stepsched::mpsc::NodeCache::<u64>::new();
    /// assert_eq!((cache.len(), cache.limit()), (0, 64));
    /// ```
    pub const fn new() -> Self {
        NodeCache::with_limit(Self::DEFAULT_LIMIT)
    }

    /// Creates an empty cache that keeps up to `limit` nodes (0: keeps none,
    /// so every push allocates and every pop frees). Allocates nothing.
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache};
    ///
    /// let mut cache = NodeCache::with_limit(1);
    /// let m = Mailbox::new();
    /// (0..3).for_each(|i| m.push(i));
    /// // SAFETY: this thread is the only consumer.
    /// unsafe { while m.pop_with(&mut cache).is_some() {} }
    /// assert_eq!(cache.len(), 1); // the other released nodes were freed
    /// ```
    pub const fn with_limit(limit: usize) -> Self {
        NodeCache {
            top: ptr::null_mut(),
            len: 0,
            limit,
        }
    }

    /// The number of nodes the cache holds.
    ///
    /// ```
    /// let cache = stepsched::mpsc::NodeCache::<()>::new();
    /// assert_eq!(cache.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns `true` if the cache holds no node (the next `push_with`
    /// allocates).
    ///
    /// ```
    /// assert!(stepsched::mpsc::NodeCache::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most nodes the cache keeps.
    ///
    /// ```
    /// assert_eq!(stepsched::mpsc::NodeCache::<()>::with_limit(8).limit(), 8);
    /// ```
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Moves up to `n` nodes from this cache to `to`, as many as `to` has
    /// room for; returns how many moved. Both caches are the caller's, so
    /// a cache shared behind a lock can be refilled by the threads that
    /// free nodes and drawn on by those that allocate them.
    ///
    /// ```
    /// use stepsched::mpsc::{Mailbox, NodeCache};
    ///
    /// let m = Mailbox::new();
    /// let mut mine = NodeCache::with_limit(8);
    /// (0..4).for_each(|i| m.push(i));
    /// // SAFETY: this thread is the only consumer.
    /// unsafe { while m.pop_with(&mut mine).is_some() {} }
    /// let mut theirs = NodeCache::with_limit(3);
    /// assert_eq!(mine.give(&mut theirs, 10), 3); // theirs is full
    /// assert_eq!((mine.len(), theirs.len()), (1, 3));
    /// ```
    pub fn give(&mut self, to: &mut NodeCache<T>, n: usize) -> usize {
        let n = n.min(self.len).min(to.limit - to.len);
        for _ in 0..n {
            let node = self.take();
            // SAFETY: `take` gave us a node of this cache (it is not empty:
            // `n <= self.len`): ours alone, item-less, unreachable from any
            // other thread; `to` has room, so `put` keeps it.
            unsafe { to.put(node) };
        }
        n
    }

    /// Returns an empty node with a null `next`: the top of the stack, or a
    /// new allocation if the stack is empty.
    pub(super) fn take(&mut self) -> *mut Node<T> {
        if self.top.is_null() {
            return Node::alloc();
        }
        // SAFETY: the chain is ours alone and not empty. (`split_first`
        // clears the node's `next` with a Relaxed store, which the push that
        // publishes the node orders by its Release swap.)
        let (node, rest) = unsafe { node::split_first(self.top) };
        self.top = rest;
        self.len -= 1;
        node
    }

    /// Keeps `node` for a later `take`, or frees it if the cache is full.
    ///
    /// # Safety
    ///
    /// The caller owns `node`, which came from [`Node::alloc`] and holds no
    /// item, and no other thread can still access it.
    pub(super) unsafe fn put(&mut self, node: *mut Node<T>) {
        if self.len == self.limit {
            // SAFETY: owned and item-less (caller's contract).
            unsafe { Node::dealloc(node) };
            return;
        }
        // Relaxed: the node is ours (caller's contract); it leaves this
        // thread only through a push's Release swap or by moving the cache,
        // both of which order this store.
        // SAFETY: owned (caller's contract).
        unsafe { (*node).next.store(self.top, Ordering::Relaxed) };
        self.top = node;
        self.len += 1;
    }
}

impl<T> Default for NodeCache<T> {
    fn default() -> Self {
        NodeCache::new()
    }
}

impl<T> Drop for NodeCache<T> {
    fn drop(&mut self) {
        // SAFETY: the chain is ours and its nodes hold no items.
        unsafe { Node::dealloc_chain(self.top) };
    }
}

impl<T> fmt::Debug for NodeCache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeCache")
            .field("len", &self.len)
            .field("limit", &self.limit)
            .finish()
    }
}
