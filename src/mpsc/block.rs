//! Node slabs for [`Queue`](super::Queue): producers claim nodes of shared
//! blocks in order, the consumer counts them back and recycles whole blocks.
//!
//! # Why slabs
//!
//! Vyukov's queue needs a node per push. Allocating each one costs a
//! `malloc` on the producer and a `free` on the consumer's thread, which is
//! the cross-thread pattern general-purpose allocators handle worst: under
//! perf, `_int_malloc`, `_int_free`, `malloc` and `cfree` took about 60% of
//! the cycles of the 1→1 benchmark (`benches/peers`) with per-node
//! allocation plus a per-push recycling slot. Nodes handed back one by one
//! also scatter across memory, so every item costs its own cache-line
//! transfer from producer to consumer.
//!
//! A block is one aligned allocation holding a [`Header`] and
//! [`Slab::NODES`] nodes side by side, so consecutive pushes fill
//! consecutive nodes and the consumer reads several items per cache line
//! (as crossbeam's `SegQueue` does with its slots). The list is still
//! Vyukov's: the consumer follows `next` links from the stub and never
//! computes a node's successor from its address.
//!
//! # The protocol
//!
//! - **claim** (producers): within a block, nodes are used in address
//!   order, so the node after `head` is the next free one and the `head`
//!   word itself says which node a push gets. A producer reads `head`, and
//!   swings it to the node after it with one CAS; winning the CAS makes that
//!   node its own. If `head` is its block's last node, the producer takes
//!   the spare block (or allocates one) and swings `head` to that block's
//!   first node instead. The item is written and the previous head linked
//!   after the CAS. A CAS fails only when another push won one, and the
//!   loser spins a few hints (`back_off`) before it retries.
//! - **fresh block** (a producer that lost [`CLAIM_TRIES`] CASes in a row):
//!   stops competing for the next node and does what Vyukov's push does,
//!   with a node nobody else can have: it takes a block of its own as above
//!   and *swaps* `head` to that block's first node, which cannot fail. The
//!   pushes after it claim that block's later nodes as usual. The nodes
//!   after the old head in its block will never be claimed in this life;
//!   the push stores their number in that block's `skipped` before it links
//!   the old head. So a push makes at most `CLAIM_TRIES` CASes and one swap:
//!   it is **wait-free** (bounded), however the other producers are
//!   scheduled. (Its one unbounded part is the allocator, called once a
//!   block at most, as Vyukov's original calls it once a push.)
//! - **release** (consumer): when a node stops being the stub (the consumer
//!   read a non-null `next` from it), the consumer adds one to its block's
//!   `released` count, which no other thread touches. When `released` plus
//!   `skipped` reaches [`Slab::NODES`], the block is done: both counts are
//!   reset and the block goes into the one-block `spare` slot (a block
//!   already there is freed).
//! - **reset** (the producer about to install a reused block): clears every
//!   node's `next` before the installing CAS, so that a node's link is null
//!   until its successor's producer stores it. The writes also bring the
//!   block's lines into the producer's cache for the pushes that follow.
//!
//! **block-done invariant:** a block is reused or freed only when every one
//! of its nodes has been claimed and then released. A released node has
//! been left by its own producer (whose last access to it, the item write,
//! precedes its link into it, which the consumer acquired to reach it) and
//! by the producer that linked it to its successor (**stub-alive** in the
//! [module docs](super)), so no thread can touch a block being reused.
//!
//! **skip-published invariant:** a block's `skipped` is stored before the
//! Release link of its last claimed node, and the consumer releases that
//! node only after its Acquire load of that link; so the release that
//! finishes the block sees the count (an earlier release may see 0, which
//! only delays).
//!
//! **claim-ABA is harmless:** a producer may read `head`, be preempted, and
//! CAS from a value whose block has since been released, reused and walked
//! up to the same node again. The CAS then succeeds, and correctly: the
//! successor it claims is derived from the value alone, and in the block's
//! current life the node after `head` is unused (nodes are used in order,
//! and a block's nodes are skipped only once `head` has left it, never to
//! return in that life).
//! A producer never dereferences the `head` it read before its CAS wins.
//!
//! Blocks are aligned to their size (a power of two), so a node finds its
//! block by masking its address, and a producer tells a block's last node
//! by its address alone; the header costs a word per block, not per node.
//!
//! In steady state a queue whose consumer keeps up cycles between two
//! blocks and never calls the allocator. While a backlog grows, producers
//! allocate one block per [`Slab::NODES`] pushes and the consumer frees
//! blocks (beyond the spare) at the same rate: an allocator call per couple
//! of hundred items instead of two per item.
//!
//! # Rejected designs
//!
//! - *A shared free slot of recycled nodes, swapped on every push* (the
//!   previous design): two more atomic operations per push on the
//!   producers' line, and once the consumer fell behind, a `malloc` per push
//!   and a `free` per pop anyway (the 60% above; 146 ns per item 1→1).
//! - *A separate `carve` word (CAS to claim a node of the current block)
//!   followed by Vyukov's swap of `head`*: correct, but two locked
//!   operations per push. Each waits for the stores before it to drain, and
//!   perf split the push's samples evenly between them (43% and 42%).
//!   Folding the claim into the `head` CAS leaves one.
//! - *Per-thread block caches* (a thread-local partly used block): a block
//!   would outlive its thread's interest in the queue, and a queue could be
//!   dropped while another thread held part of one of its blocks.
//! - *Software prefetch of the consumer's next lines*: no difference that
//!   stood out of the run-to-run noise of the 2-core bench machine.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ptr;

use super::node::Node;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// The start of every block.
pub(super) struct Header {
    /// Nodes of this block released so far (block-done invariant). Read and
    /// written only by the queue's consumer (and by `Drop`).
    released: UnsafeCell<usize>,
    /// Nodes of this block that no push will claim in its current life,
    /// because a push that ran out of CAS attempts swapped `head` out of the
    /// block (`Slab::claim_fresh`). Written by that push, once per life;
    /// read and reset by the consumer (skip-published).
    skipped: AtomicUsize,
}

/// The block geometry for `Node<T>`; a namespace, never constructed.
pub(super) struct Slab<T>(PhantomData<T>);

/// Whether block sizes are cut for model checking and fuzzing.
/// Under Miri too: it interprets a block's allocation and free node by
/// node, and every scheduler a test builds allocates its queues' blocks.
const SHRUNK: bool = cfg!(loom) || cfg!(fuzzing) || cfg!(miri);

impl<T> Slab<T> {
    const NODE_SIZE: usize = size_of::<Node<T>>();
    /// Where the first node starts: just past the header, aligned for nodes.
    const NODE_OFFSET: usize = size_of::<Header>().next_multiple_of(align_of::<Node<T>>());

    /// The fewest nodes a block holds. Derivation: a block costs one aligned
    /// allocation (and, while a backlog grows, its page faults) on a
    /// producer and one `free` on the consumer, a few hundred ns together.
    /// With 1 KiB blocks (63 word-sized items) that was 3 to 5 ns per push
    /// of a growing backlog, measured single-threaded; 4 KiB blocks (about 250
    /// items) cut it to about 1 ns, and cut the consumer's pop from 4.5 to
    /// 3 ns. So: up to 128 nodes, as many as fit in 4 KiB with the header
    /// (at least two for big items); the block is that rounded up to a
    /// power of two. An idle queue keeps two
    /// blocks, 8 KiB. Under loom it is 2, under fuzzing 3 and under Miri 8, so
    /// that models, short inputs and Miri's scaled-down tests cross block
    /// boundaries, reuse blocks and leave partly used ones at drop (and a
    /// scheduler built under Miri does not interpret 128 nodes' writes per
    /// block).
    const MIN_NODES: usize = if cfg!(loom) {
        2
    } else if cfg!(fuzzing) {
        3
    } else if cfg!(miri) {
        8
    } else {
        let fit = 4096_usize.saturating_sub(Self::NODE_OFFSET) / Self::NODE_SIZE;
        if fit < 2 {
            2
        } else if fit > 128 {
            128
        } else {
            fit
        }
    };

    /// Bytes per block, and its alignment: the header plus `MIN_NODES`
    /// nodes, rounded up to a power of two.
    const SIZE: usize = (Self::NODE_OFFSET + Self::MIN_NODES * Self::NODE_SIZE).next_power_of_two();

    /// Nodes per block: as many as fit in [`Slab::SIZE`] (254 for a `u64`
    /// item in 4 KiB), or exactly `MIN_NODES` when shrunk.
    pub(super) const NODES: usize = if SHRUNK {
        Self::MIN_NODES
    } else {
        (Self::SIZE - Self::NODE_OFFSET) / Self::NODE_SIZE
    };

    /// The offset just past the last node.
    const END: usize = Self::NODE_OFFSET + Self::NODES * Self::NODE_SIZE;

    fn layout() -> Layout {
        match Layout::from_size_align(Self::SIZE, Self::SIZE) {
            Ok(layout) => layout,
            Err(_) => panic!("mpsc::Slab: block of {} bytes is too big", Self::SIZE),
        }
    }

    /// Allocates a block with every node empty and unlinked and a zero
    /// `released` count.
    pub(super) fn alloc() -> *mut Header {
        let layout = Self::layout();
        // SAFETY: `layout` has a non-zero size (the header is a word).
        let block = unsafe { std::alloc::alloc(layout) }.cast::<Header>();
        if block.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `block` is a fresh allocation of `SIZE` bytes aligned to
        // `SIZE`, which is at least the header's and a node's alignment; the
        // header sits at offset 0 and node `i` at `NODE_OFFSET + i *
        // NODE_SIZE`, all inside the block and not overlapping.
        unsafe {
            block.write(Header {
                released: UnsafeCell::new(0),
                skipped: AtomicUsize::new(0),
            });
            let first = Self::first(block);
            for i in 0..Self::NODES {
                first.add(i).write(Node::empty());
            }
        }
        block
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `block` came from [`Slab::alloc`], the caller owns it (block-done
    /// invariant, or exclusive access in `Drop`), and no node in it holds an
    /// item.
    pub(super) unsafe fn dealloc(block: *mut Header) {
        // SAFETY: the header and every node were written by `alloc` and are
        // still there (nodes are reused in place); dropping them drops no
        // item (`MaybeUninit`) and only retires the loom objects under loom.
        unsafe {
            let first = Self::first(block);
            for i in 0..Self::NODES {
                ptr::drop_in_place(first.add(i));
            }
            ptr::drop_in_place(block);
            std::alloc::dealloc(block.cast(), Self::layout());
        }
    }

    /// The block's first node.
    pub(super) fn first(block: *mut Header) -> *mut Node<T> {
        // Wrapping: pure address arithmetic inside the block's allocation,
        // so no `unsafe` is needed and provenance is kept.
        block
            .cast::<u8>()
            .wrapping_add(Self::NODE_OFFSET)
            .cast::<Node<T>>()
    }

    /// The block that holds `node`.
    pub(super) fn block_of(node: *mut Node<T>) -> *mut Header {
        // Stepping back by the offset (rather than masking the address and
        // casting it back) keeps the pointer's provenance.
        node.cast::<u8>()
            .wrapping_sub(Self::offset(node))
            .cast::<Header>()
    }

    /// Where `node` sits in its block, in bytes: blocks are aligned to their
    /// size, so it is the low bits of the address.
    fn offset(node: *mut Node<T>) -> usize {
        node as usize & (Self::SIZE - 1)
    }

    /// Whether `node` is the last node of its block. Pure address
    /// arithmetic: the node's block may already be reused or freed.
    fn is_last(node: *mut Node<T>) -> bool {
        Self::offset(node) == Self::END - Self::NODE_SIZE
    }

    /// How many nodes of its block come after `node`.
    fn unused_after(node: *mut Node<T>) -> usize {
        (Self::END - Self::NODE_SIZE - Self::offset(node)) / Self::NODE_SIZE
    }

    /// Clears the link of every node of an owned block.
    ///
    /// # Safety
    ///
    /// The caller owns `block` (block-done invariant).
    unsafe fn reset(block: *mut Header) {
        let first = Self::first(block);
        for i in 0..Self::NODES {
            // Relaxed: published by the Release CAS that installs the block.
            // SAFETY: node `i` is inside the owned block.
            unsafe {
                (*first.add(i))
                    .next
                    .store(ptr::null_mut(), Ordering::Relaxed)
            };
        }
    }

    /// The claim step of a push: swings `head` to a free node and returns
    /// `(prev, node)`, the head it replaced and the node, now the caller's.
    /// `node` is empty and its `next` is null; the caller writes the item
    /// into it and then links `prev` to it, exactly once. Wait-free: at most
    /// [`CLAIM_TRIES`] CASes, then one swap (see the module docs).
    #[inline]
    pub(super) fn claim(
        head: &AtomicPtr<Node<T>>,
        spare: &AtomicPtr<Header>,
    ) -> (*mut Node<T>, *mut Node<T>) {
        // Relaxed: only a guess for the CAS below, which acquires.
        let mut prev = head.load(Ordering::Relaxed);
        // A block taken for a CAS that installs it; kept across retries.
        let mut fresh: Option<*mut Header> = None;
        for failures in 0..CLAIM_TRIES {
            let installing = Self::is_last(prev);
            let node = if installing {
                Self::first(*fresh.get_or_insert_with(|| Self::take_block(spare)))
            } else {
                // Wrapping: address arithmetic only; `prev` may be stale.
                prev.wrapping_add(1)
            };
            // AcqRel. Acquire pairs with the Release of the CAS or swap that
            // made `prev` the head (a chain back to the one that installed
            // its block): the block's initialisation or reset, and the
            // consumer's uses of it in its last life, which that installer
            // acquired from `spare`, happen before we write `node` and
            // `prev.next` (block-done, published-before-linked). Release: the
            // same for the producers after us, and for the Acquire load of
            // `head` in `Queue::is_empty`. Failure: Relaxed, the value is
            // again just a guess.
            match head.compare_exchange(prev, node, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    if let (false, Some(block)) = (installing, fresh) {
                        // SAFETY: an earlier attempt took the block and no
                        // CAS installed it, so it is ours, and empty.
                        unsafe { put_spare::<T>(spare, block) };
                    }
                    return (prev, node);
                }
                Err(now) => {
                    prev = now;
                    back_off(failures);
                }
            }
        }
        Self::claim_fresh(head, fresh.unwrap_or_else(|| Self::take_block(spare)))
    }

    /// The bounded end of a claim that lost [`CLAIM_TRIES`] CASes: swaps
    /// `head` to the first node of `block`, a block the caller owns, whose
    /// later nodes the next pushes claim as usual. The nodes after the old
    /// head in its block are never claimed in this life; they are counted as
    /// `skipped` so the block is still recycled (block-done).
    #[cold]
    fn claim_fresh(head: &AtomicPtr<Node<T>>, block: *mut Header) -> (*mut Node<T>, *mut Node<T>) {
        let node = Self::first(block);
        // AcqRel, as the CAS in `claim`: Acquire for `prev`'s block and null
        // `next`, Release for the block we install.
        let prev = head.swap(node, Ordering::AcqRel);
        let skipped = Self::unused_after(prev);
        if skipped > 0 {
            // Relaxed (skip-published): the consumer reads it only after the
            // Release link of `prev`, which our caller stores after this.
            // SAFETY: `prev` is not released until it is linked, by us, so
            // its block is alive; only the push that swapped `head` out of a
            // block writes its `skipped`, once per life.
            unsafe {
                (*Self::block_of(prev))
                    .skipped
                    .store(skipped, Ordering::Relaxed)
            };
        }
        (prev, node)
    }

    /// [`Slab::claim_fresh`] with a block from [`Slab::take_block`], as a
    /// push that ran out of CAS attempts does; for tests and fuzzing.
    #[cfg(any(test, fuzzing))]
    pub(super) fn claim_fresh_for_test(
        head: &AtomicPtr<Node<T>>,
        spare: &AtomicPtr<Header>,
    ) -> (*mut Node<T>, *mut Node<T>) {
        Self::claim_fresh(head, Self::take_block(spare))
    }

    /// A block to install: the spare (its links cleared) or a new one.
    fn take_block(spare: &AtomicPtr<Header>) -> *mut Header {
        match take_spare(spare) {
            Some(block) => {
                // SAFETY: `take_spare` made the block ours.
                unsafe { Self::reset(block) };
                block
            }
            // A fresh block's links are null already.
            None => Self::alloc(),
        }
    }

    /// Counts `node` as released (block-done invariant) and returns its block
    /// if that was the block's last node, with the count reset for the
    /// block's next life.
    ///
    /// # Safety
    ///
    /// Called only by the queue's consumer (or in `Drop`), once per claimed
    /// node, when no producer can still touch `node` (stub-alive).
    pub(super) unsafe fn release(node: *mut Node<T>) -> Option<*mut Header> {
        // SAFETY: the block is alive (it has an unreleased node, this one)
        // and `released` is the consumer's alone (our caller's contract).
        unsafe { Self::release_many(Self::block_of(node), 1) }
    }

    /// Counts `count` nodes of `block` as released at once.
    ///
    /// # Safety
    ///
    /// As [`Slab::release`], for `count` unreleased nodes of `block`.
    unsafe fn release_many(block: *mut Header, count: usize) -> Option<*mut Header> {
        // Relaxed (skip-published): a push that skipped nodes of this block
        // stored the count before its Release link of the block's last
        // claimed node, and we release that node only after our Acquire load
        // of that link. Before then we may read 0, which only delays.
        // SAFETY: the block is alive (our caller's contract).
        let skipped = unsafe { (*block).skipped.load(Ordering::Relaxed) };
        // SAFETY: forwarded: the block is alive and `released` is ours.
        let done = unsafe {
            (*block).released.with_mut(|released| {
                *released += count;
                debug_assert!(*released + skipped <= Self::NODES);
                if *released + skipped < Self::NODES {
                    return false;
                }
                *released = 0;
                true
            })
        };
        if !done {
            return None;
        }
        // Relaxed: the block is ours now; the reset is published to its next
        // owner by the Release swap in `put_spare` (or not needed: `Drop`).
        // SAFETY: as above; every node is claimed and released, so no push
        // can store into this header any more (block-done).
        unsafe { (*block).skipped.store(0, Ordering::Relaxed) };
        Some(block)
    }

    /// At drop: releases the nodes of `head`'s block that come after it and
    /// were never claimed, so that the block is freed with its last claimed
    /// node. Call it before releasing the list (it needs the block alive).
    ///
    /// # Safety
    ///
    /// Exclusive access to the queue (`Drop`), `head` is its head, not yet
    /// released.
    pub(super) unsafe fn release_unused(head: *mut Node<T>) {
        let unused = Self::unused_after(head);
        // SAFETY: the block holds `head`, unreleased, so it is alive, and the
        // count cannot reach `NODES` here (`head` is not counted yet); we
        // have exclusive access.
        let done = unsafe { Self::release_many(Self::block_of(head), unused) };
        debug_assert!(done.is_none(), "mpsc::Slab: head's block freed early");
    }
}

/// How many CASes a push makes on `head` before it stops competing and
/// swaps in a block of its own (`Slab::claim_fresh`); the bound that makes
/// pushing wait-free. A CAS fails only when another push claimed a node in
/// between, and the back-off between attempts lets that push's core keep
/// the line, so eight failures in a row are rare even with two producers
/// pushing back to back (2→1 in `benches/peers`); each costs the rest of the
/// current block. Under loom it is 1, so that models with two producers
/// reach the swap.
pub(super) const CLAIM_TRIES: u32 = if cfg!(loom) { 1 } else { 8 };

/// The most a failed claim waits before retrying, as a power of two of spin
/// hints: 2^6 = 64 `pause`s, roughly 0.1 to 2 µs depending on the CPU's
/// pause latency, reached only after six failures in a row. It is the
/// limit of crossbeam's `Backoff::spin`, which `SegQueue` uses on the same
/// kind of CAS; here it was only checked not to hurt (2→1 bench runs with
/// and without it were within the noise, slightly better with). Under loom
/// it is 2^0, so a model pays one scheduling point per failure.
const BACKOFF_SHIFT_MAX: u32 = if cfg!(loom) { 0 } else { 6 };

/// After the `failures`-th failed claim CAS (counting from 0): spins
/// `2^failures` hints (capped at [`BACKOFF_SHIFT_MAX`]) before the retry.
/// Two producers that CAS `head` back to back move its line between their
/// cores on every attempt; waiting a little lets the winner push several
/// items while it holds the line. Bounded, so a push never waits on another
/// thread's progress.
// Under loom `BACKOFF_SHIFT_MAX` is 0 and the `min` a no-op, as intended.
#[cfg_attr(loom, allow(clippy::unnecessary_min_or_max))]
fn back_off(failures: u32) {
    for _ in 0..1u32 << failures.min(BACKOFF_SHIFT_MAX) {
        crate::sync::spin_loop();
    }
}

/// Takes the spare block, if there is one. One swap, skipped when a plain
/// load already sees the slot empty.
fn take_spare(spare: &AtomicPtr<Header>) -> Option<*mut Header> {
    // Relaxed: a filter, so an empty slot costs a read, not a line transfer.
    if spare.load(Ordering::Relaxed).is_null() {
        return None;
    }
    // Acquire pairs with the Release part of the swap in `put_spare`: the
    // previous owner's uses of the block happen before ours (block-done).
    let block = spare.swap(ptr::null_mut(), Ordering::Acquire);
    (!block.is_null()).then_some(block)
}

/// Makes `block` the spare block; frees the one it replaces, if any.
///
/// # Safety
///
/// The caller owns `block`, which came from [`Slab::alloc`] for the same
/// `T` as every block in `spare`, and no node in it holds an item.
pub(super) unsafe fn put_spare<T>(spare: &AtomicPtr<Header>, block: *mut Header) {
    // AcqRel. Release pairs with the Acquire swap in `take_spare` (our uses of
    // the block happen before its next owner's); Acquire with the Release of
    // the swap that stored the block we replace, which we then free.
    let old = spare.swap(block, Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: the swap made us the old block's only owner; spare blocks
        // hold no items.
        unsafe { Slab::<T>::dealloc(old) };
    }
}
