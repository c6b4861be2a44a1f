//! Queue nodes.
//!
//! A [`Node`] carries one item and the link to the next node. Where nodes
//! come from depends on the queue:
//!
//! - [`Queue`](super::Queue) claims them in order from shared blocks and
//!   recycles whole blocks (`block.rs`), so its nodes are never freed one
//!   by one;
//! - [`Mailbox`](super::Mailbox) allocates each node with [`Node::alloc`]
//!   (or takes one from a caller's [`NodeCache`](super::NodeCache)) and
//!   frees it with [`Node::dealloc`]. Those carve it from the crate's own
//!   blocks (`pool.rs`, which says why) when the node type fits a size
//!   class, as every mailbox of the scheduler's does, and otherwise (a
//!   node above 256 bytes, and always under loom) box it.
//!
//! The two kinds never mix: a queue only ever links nodes of its own kind.

use core::mem::{self, MaybeUninit};
use core::ptr;

#[cfg(not(loom))]
use super::pool;
use crate::sync::{AtomicPtr, Ordering, UnsafeCell};

/// One queue cell: the item and the link to the node pushed after it.
pub(super) struct Node<T> {
    /// In a list: the next node, null until its producer links it (in
    /// `list::link`). In a [`NodeCache`](super::NodeCache): the next cached
    /// node. In a block's unused node: stale, cleared by the carving
    /// producer before the node is published.
    pub(super) next: AtomicPtr<Node<T>>,
    /// The item. Initialised by the producer before it publishes the node;
    /// moved out by the consumer when the node becomes the stub. Uninit in
    /// the stub and in every unused node.
    pub(super) value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Node<T> {
    /// A node with no item and a null link.
    pub(super) fn empty() -> Node<T> {
        Node {
            next: AtomicPtr::new(ptr::null_mut()),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The pool's size class for this node type, or `None` for a `Box`:
    /// a constant, so `alloc` and `dealloc` always agree and the branch
    /// folds away.
    pub(super) const CLASS: Option<usize> =
        super::pool::class_of(mem::size_of::<Node<T>>(), mem::align_of::<Node<T>>());

    /// Allocates a node with no item and a null link (mailbox nodes only).
    pub(super) fn alloc() -> *mut Node<T> {
        #[cfg(not(loom))]
        if let Some(class) = Self::CLASS {
            let node = pool::alloc(class).cast::<Node<T>>();
            // SAFETY: `pool::alloc` returned memory for one node of this
            // class, which holds a `Node<T>` (size and alignment:
            // `class_of`), ours alone.
            unsafe { node.write(Node::empty()) };
            return node;
        }
        Box::into_raw(Box::new(Node::empty()))
    }

    /// Frees a node without touching its item.
    ///
    /// # Safety
    ///
    /// `node` came from [`Node::alloc`], is owned by the caller, and its
    /// item, if it ever had one, has already been moved out.
    pub(super) unsafe fn dealloc(node: *mut Node<T>) {
        #[cfg(not(loom))]
        if Self::CLASS.is_some() {
            // SAFETY: the caller owns `node`, which `Node::alloc` carved
            // from the pool (same `CLASS`); a `Node` needs no drop
            // (`MaybeUninit` does not drop the item slot).
            unsafe { pool::free(node.cast()) };
            return;
        }
        // SAFETY: the caller owns `node`, which `Node::alloc` made with
        // `Box::into_raw` (`CLASS` is `None`); `MaybeUninit` does not drop
        // the item slot.
        drop(unsafe { Box::from_raw(node) });
    }

    /// Frees every node of a chain linked through `next`.
    ///
    /// # Safety
    ///
    /// The caller owns the whole chain and no node in it holds an item.
    pub(super) unsafe fn dealloc_chain(mut node: *mut Node<T>) {
        while !node.is_null() {
            // SAFETY: the caller owns the chain, so `node` is alive; Relaxed
            // is enough because ownership of the chain was already acquired.
            let next = unsafe { (*node).next.load(Ordering::Relaxed) };
            // SAFETY: owned, item-less (caller's contract).
            unsafe { Node::dealloc(node) };
            node = next;
        }
    }
}

/// Detaches the first node of an owned chain; returns it and the rest.
///
/// # Safety
///
/// The caller owns the non-empty chain starting at `chain`.
pub(super) unsafe fn split_first<T>(chain: *mut Node<T>) -> (*mut Node<T>, *mut Node<T>) {
    // SAFETY: owned (caller's contract). Relaxed: ownership was acquired
    // when the chain was taken; the node is published later by the AcqRel
    // swap of `head`.
    unsafe {
        let rest = (*chain).next.load(Ordering::Relaxed);
        (*chain).next.store(ptr::null_mut(), Ordering::Relaxed);
        (chain, rest)
    }
}
