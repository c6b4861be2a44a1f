//! Queue nodes and how they are recycled.
//!
//! A [`Node`] carries one item and the link to the next node. Producers need
//! a node per push and the consumer finishes with one per pop, so in steady
//! state the allocator would see one `malloc` on a producer thread and one
//! `free` on the consumer thread per item: the cross-thread pattern that
//! general-purpose allocators handle worst. Instead, nodes travel back:
//!
//! - the consumer keeps the nodes it finished with in a private [`Spare`]
//!   chain (no atomics, it is the only thread touching it);
//! - every [`PUBLISH_BATCH`] recycled nodes it tries to hand the whole chain to the
//!   producers by one CAS of the shared `free` slot from null to the chain;
//! - a producer takes the whole `free` chain with one swap, keeps its first
//!   node, and gives the rest back with one CAS from null;
//! - a [`Producer`](super::Producer) handle instead keeps the rest for its
//!   own next pushes, so it touches `free` once per chain, not per push.
//!
//! **Ownership invariant (free-slot):** a chain stored in `free` belongs to
//! nobody; a thread that swaps it out owns it exclusively. Nothing ever
//! compares `free` against a non-null value, so the usual ABA hazard of a
//! Treiber stack cannot arise: swaps take everything, CASes only fill an
//! empty slot. Neither side loops, so node acquisition stays wait-free: at
//! most one swap and one CAS. A failed give-back (the slot was refilled in
//! between) frees the rest to the allocator, as does a consumer whose private
//! chain already holds [`SPARE_MAX`] nodes.
//!
//! Limit: recycling serves a queue whose consumer keeps up. While a backlog
//! grows, every push beyond the nodes returned so far still allocates, and
//! draining a backlog longer than `SPARE_MAX` frees one node per pop.
//! Allocating nodes in slabs would cut that cost, at the price of slab
//! accounting; it is not done here.

use core::mem::MaybeUninit;
use core::ptr;

use crate::sync::{AtomicPtr, Ordering, UnsafeCell};

/// How many spare nodes the consumer gathers before it offers them to the
/// producers. A producer that takes a chain of 32 mallocs nothing for the
/// next 32 pushes, and the consumer touches the producers' cache line once
/// per 32 pops instead of once per pop. Under loom it is 1, so a model with
/// two or three items already walks the publish and reuse paths.
#[cfg(not(loom))]
pub(super) const PUBLISH_BATCH: usize = 32;
#[cfg(loom)]
pub(super) const PUBLISH_BATCH: usize = 1;

/// The most nodes the consumer keeps privately when the producers do not take
/// them (the queue was drained and stays quiet). Beyond this it frees nodes,
/// so an idle queue holds at most `2 * SPARE_MAX` spare nodes (its private
/// chain plus one published chain; about 8 KiB of nodes for word-sized
/// items), besides those `Producer` handles keep, whatever its peak length.
#[cfg(not(loom))]
pub(super) const SPARE_MAX: usize = 256;
#[cfg(loom)]
pub(super) const SPARE_MAX: usize = 2;

/// One queue cell: the item and the link to the node pushed after it.
pub(super) struct Node<T> {
    /// In a queue: the next node, null until its producer links it (the
    /// producer's only store, in `list::link`). In a spare or free chain or
    /// a [`NodeCache`](super::NodeCache): the next spare node.
    pub(super) next: AtomicPtr<Node<T>>,
    /// The item. Initialised by the producer before it publishes the node;
    /// moved out by the consumer when the node becomes the stub. Uninit in
    /// the stub and in every spare node.
    pub(super) value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Node<T> {
    /// Allocates a node with no item and a null link.
    pub(super) fn alloc() -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(ptr::null_mut()),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }))
    }

    /// Frees a node without touching its item.
    ///
    /// # Safety
    ///
    /// `node` came from [`Node::alloc`], is owned by the caller, and its
    /// item, if it ever had one, has already been moved out.
    pub(super) unsafe fn dealloc(node: *mut Node<T>) {
        // SAFETY: the caller owns `node`, which `Node::alloc` made with
        // `Box::into_raw`; `MaybeUninit` does not drop the item slot.
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

/// The consumer's private chain of finished nodes.
pub(super) struct Spare<T> {
    /// First node of the chain, linked through `next`; null when empty.
    head: *mut Node<T>,
    /// Number of nodes in the chain, at most [`SPARE_MAX`].
    len: usize,
    /// Calls to `recycle` left before the next `publish`, 1..=PUBLISH_BATCH.
    until_publish: usize,
}

impl<T> Spare<T> {
    pub(super) const fn new() -> Self {
        Spare {
            head: ptr::null_mut(),
            len: 0,
            until_publish: PUBLISH_BATCH,
        }
    }

    /// Keeps `node` for reuse (or frees it if the chain is full), and every
    /// [`PUBLISH_BATCH`] calls offers the chain to the producers.
    ///
    /// # Safety
    ///
    /// Called only by the consumer, with a node it owns whose item has been
    /// moved out.
    pub(super) unsafe fn recycle(&mut self, free: &AtomicPtr<Node<T>>, node: *mut Node<T>) {
        if self.len < SPARE_MAX {
            // SAFETY: the caller owns `node`. Relaxed: the chain is published
            // (if ever) by the Release CAS in `publish`, which orders this.
            unsafe { (*node).next.store(self.head, Ordering::Relaxed) };
            self.head = node;
            self.len += 1;
        } else {
            // SAFETY: the caller owns `node` and its item is gone.
            unsafe { Node::dealloc(node) };
        }
        self.until_publish -= 1;
        if self.until_publish == 0 {
            self.until_publish = PUBLISH_BATCH;
            self.publish(free);
        }
    }

    /// Hands the whole chain to the producers if their slot is empty.
    fn publish(&mut self, free: &AtomicPtr<Node<T>>) {
        // The Relaxed load is only a filter, so a full slot costs a read, not
        // an exclusive cache-line transfer.
        if self.head.is_null() || !free.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Release pairs with the Acquire swap in `take_chain`: our last uses
        // of these nodes (items moved out, links followed, spare links
        // written) happen before a producer writes into them (free-slot
        // invariant). Failure is Relaxed: we keep the chain, learn nothing.
        if free
            .compare_exchange(
                ptr::null_mut(),
                self.head,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            self.head = ptr::null_mut();
            self.len = 0;
        }
    }

    /// Frees the whole chain.
    ///
    /// # Safety
    ///
    /// Called only by the consumer (or in `Drop`).
    pub(super) unsafe fn clear(&mut self) {
        // SAFETY: the consumer owns its spare chain; its nodes hold no items.
        unsafe { Node::dealloc_chain(self.head) };
        self.head = ptr::null_mut();
        self.len = 0;
    }
}

/// Takes the whole `free` chain (linked through `next`), or null if there is
/// none. One swap, skipped when a plain load already sees the slot empty.
pub(super) fn take_chain<T>(free: &AtomicPtr<Node<T>>) -> *mut Node<T> {
    // Cheap check first: when there is nothing to take, do not dirty the line.
    if free.load(Ordering::Relaxed).is_null() {
        return ptr::null_mut();
    }
    // Acquire pairs with the Release CAS in `Spare::publish` or `give_back`:
    // whoever owned the chain before is done with it (free-slot invariant).
    free.swap(ptr::null_mut(), Ordering::Acquire)
}

/// Offers a chain of empty nodes back to the producers with one CAS from
/// null; frees it if the slot is already filled.
///
/// # Safety
///
/// The caller owns the whole chain and no node in it holds an item.
pub(super) unsafe fn give_back<T>(free: &AtomicPtr<Node<T>>, chain: *mut Node<T>) {
    if chain.is_null() {
        return;
    }
    // Release pairs with the Acquire swap in `take_chain` of the next taker
    // (free-slot invariant). No loop: if the slot was refilled meanwhile the
    // chain goes back to the allocator.
    if free
        .compare_exchange(ptr::null_mut(), chain, Ordering::Release, Ordering::Relaxed)
        .is_err()
    {
        // SAFETY: we still own the chain (caller's contract).
        unsafe { Node::dealloc_chain(chain) };
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

/// Returns an empty node for a push: recycled from `free` when there is one,
/// freshly allocated otherwise. Wait-free: at most one swap and one CAS.
pub(super) fn take_node<T>(free: &AtomicPtr<Node<T>>) -> *mut Node<T> {
    let chain = take_chain(free);
    if chain.is_null() {
        return Node::alloc();
    }
    // SAFETY: `take_chain` made us the chain's only owner.
    let (node, rest) = unsafe { split_first(chain) };
    // SAFETY: we own `rest`, and spare nodes hold no items.
    unsafe { give_back(free, rest) };
    node
}
