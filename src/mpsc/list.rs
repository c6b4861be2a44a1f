//! The linked list under both queues: Vyukov's push (swap, then link) and
//! the consumer's step (follow the stub's `next`).
//!
//! [`Queue`](super::Queue) and [`Mailbox`](super::Mailbox) differ in where
//! their `head` and `tail` live and in what they do with a finished node
//! (count it towards recycling its block, or hand it to a caller's
//! [`NodeCache`](super::NodeCache)); the list operations themselves are
//! these functions (a `Queue`'s push claims its node with a CAS in
//! `block.rs` and then uses [`link`]). Each takes the `head` word or the
//! stub node it works on, so the two layouts share every ordering and its
//! argument.
//!
//! The invariants named here are those of the [module docs](super):
//! **stub-alive** and **published-before-linked**.

use super::error::TryPopError;
use super::node::Node;
use crate::sync::{AtomicPtr, Ordering};

/// A whole push: fills `node` with `item`, swaps it into `head`, and links
/// the previous head to it. Wait-free: one swap and one store.
///
/// # Safety
///
/// The caller owns `node`, which came from [`Node::alloc`], holds no item
/// and has a null `next`; `head` is the head of a live list whose nodes are
/// all alive.
#[inline]
pub(super) unsafe fn push_node<T>(head: &AtomicPtr<Node<T>>, node: *mut Node<T>, item: T) {
    // SAFETY: forwarded from our caller.
    let prev = unsafe { swap_in(head, node, item) };
    // SAFETY: `(prev, node)` comes from the swap just made, and is linked once.
    unsafe { link(prev, node) };
}

/// Step one of a push: writes `item` into `node` and makes it `head`.
/// Returns the previous head, which must be linked to `node` exactly once
/// (by [`link`]); until then the push is *mid-link* (docs/ARCHITECTURE.md,
/// trap 4: a push half done).
///
/// # Safety
///
/// As [`push_node`].
#[inline]
unsafe fn swap_in<T>(head: &AtomicPtr<Node<T>>, node: *mut Node<T>, item: T) -> *mut Node<T> {
    // SAFETY: we own `node` and its item slot is empty (caller's contract).
    unsafe { (*node).value.with_mut(|slot| (*slot).write(item)) };
    // AcqRel. Release pairs with the Acquire part of the next producer's
    // swap (it links into this node, so our item and null `next`, including
    // the `next` reset of a reused node, must precede its store) and with
    // `Queue::is_empty`'s Acquire load of `head`. Acquire pairs with the
    // previous producer's Release swap: `prev`'s null `next` is visible
    // before we overwrite it (published-before-linked).
    head.swap(node, Ordering::AcqRel)
}

/// Step two of a push: links `prev` to `node`, ending the mid-link window.
///
/// # Safety
///
/// `(prev, node)` was returned by one [`swap_in`] (or one
/// `Slab::claim`, for a `Queue`) and is linked only once.
#[inline]
pub(super) unsafe fn link<T>(prev: *mut Node<T>, node: *mut Node<T>) {
    // Release pairs with the Acquire load of `next` in `take_next`: the item,
    // written before (in `swap_in`, or after `Slab::claim`), is visible to
    // the consumer that follows this link (published-before-linked).
    // SAFETY: `prev` is alive: a consumer releases a node only after reading
    // a non-null `next` from it, that is after this store (stub-alive), and
    // only the producer that replaced `prev` in `head` stores `prev.next`.
    unsafe { (*prev).next.store(node, Ordering::Release) };
}

/// The consumer's step: if the stub has a successor, moves its item out and
/// returns it with the successor, which the caller must make the new stub.
/// The old stub is then the caller's, empty, to reuse or free. `None` when
/// the stub's `next` is null (empty, or a push is mid-link).
///
/// # Safety
///
/// `stub` is the list's current stub and the caller is its only consumer
/// until it has stored the new stub.
#[inline]
pub(super) unsafe fn take_next<T>(stub: *mut Node<T>) -> Option<(T, *mut Node<T>)> {
    // Acquire pairs with the Release store in `link`: the item in `next` is
    // fully written (published-before-linked), and the linking producer is
    // done with `stub`, so the caller may reuse it.
    // SAFETY: the stub is alive (stub-alive).
    let next = unsafe { (*stub).next.load(Ordering::Acquire) };
    if next.is_null() {
        return None;
    }
    // SAFETY: `next` is linked, so its item is initialised, and only the
    // consumer moves items out; it becomes the stub, whose slot counts as
    // empty from now on.
    let item = unsafe { (*next).value.with(|slot| (*slot).assume_init_read()) };
    Some((item, next))
}

/// Says why [`take_next`] found nothing: `Empty` if no push has swapped in
/// after `stub`, `Inconsistent` if one has but its link was not visible.
///
/// `stub` must be the list's current stub, read by its consumer.
pub(super) fn classify_miss<T>(head: &AtomicPtr<Node<T>>, stub: *mut Node<T>) -> TryPopError {
    // Relaxed: only classifies the miss. The stub cannot be `head` again
    // once a push has swapped past it (it is released only after its `next`
    // is set), so `head == stub` means no push got that far. No completed
    // push can be hidden: its link would have been visible to the Acquire
    // load of `next` in `take_next`.
    if head.load(Ordering::Relaxed) == stub {
        TryPopError::Empty
    } else {
        TryPopError::Inconsistent
    }
}

/// Drops every item still in the list and hands every node, the stub
/// included, to `release` (which frees it, or counts it towards freeing its
/// block).
///
/// # Safety
///
/// The caller owns the whole list: no push or pop is in progress or can
/// start (it holds the queue by `&mut` or by value), and `stub` is its
/// current stub. `release` takes ownership of each empty node it is given.
pub(super) unsafe fn drop_list<T>(stub: *mut Node<T>, mut release: impl FnMut(*mut Node<T>)) {
    let mut node = stub;
    while !node.is_null() {
        // Relaxed: exclusive access was acquired with the `&mut`; every push
        // completed before it.
        // SAFETY: `node` is alive: we own the list.
        let next = unsafe { (*node).next.load(Ordering::Relaxed) };
        if !next.is_null() {
            // SAFETY: `next` is linked, so it holds an item that nobody took.
            unsafe { (*next).value.with_mut(|slot| (*slot).assume_init_drop()) };
        }
        // `node` is owned and empty: the stub's item was taken, and every
        // other node's item was dropped in the step before, when it was
        // `next`. Its `next` was read above, so we are done with it.
        release(node);
        node = next;
    }
}

/// A push stopped between its swap (or claim) and its link, for deterministic tests of
/// the mid-link window. Linking happens on [`MidLink::link`] or on drop.
#[cfg(any(test, fuzzing))]
pub(crate) struct MidLink<'q, T> {
    prev: *mut Node<T>,
    node: *mut Node<T>,
    /// Holds the queue borrowed, so it cannot be dropped while mid-link.
    _head: core::marker::PhantomData<&'q AtomicPtr<Node<T>>>,
}

#[cfg(any(test, fuzzing))]
impl<'q, T> MidLink<'q, T> {
    /// Performs the first half of a push and returns the second half.
    ///
    /// # Safety
    ///
    /// As [`push_node`].
    pub(super) unsafe fn swap_in(
        head: &'q AtomicPtr<Node<T>>,
        node: *mut Node<T>,
        item: T,
    ) -> Self {
        MidLink {
            // SAFETY: forwarded from our caller.
            prev: unsafe { swap_in(head, node, item) },
            node,
            _head: core::marker::PhantomData,
        }
    }

    /// Wraps the first half of a `Queue` push (`Slab::claim` and the item
    /// write).
    ///
    /// # Safety
    ///
    /// `(prev, node)` comes from one claim and is linked by nothing else.
    pub(super) unsafe fn from_claim(prev: *mut Node<T>, node: *mut Node<T>) -> Self {
        MidLink {
            prev,
            node,
            _head: core::marker::PhantomData,
        }
    }

    /// Completes the push.
    pub(crate) fn link(self) {}
}

#[cfg(any(test, fuzzing))]
impl<T> Drop for MidLink<'_, T> {
    fn drop(&mut self) {
        // SAFETY: made by one `swap_in`; `MidLink` is not `Clone`, and drop
        // runs once.
        unsafe { link(self.prev, self.node) };
    }
}
