//! The mailbox nodes' own memory: 16 KiB blocks, carved by each thread for
//! itself and given back whole, to a few spare places or to the system.
//!
//! # Why
//!
//! With each mailbox node a `Box`, a flood of 5M messages from two outside
//! threads left the process's RSS +26 to +131 MiB above where it started
//! (six runs, glibc's malloc with its default settings), although the
//! crate had freed every node (`examples/flood.rs` tells the whole
//! finding). The senders allocated the nodes in their own glibc arenas, a
//! worker freed them there, and there they stayed as 64-byte chunks in fast
//! bins, which glibc merges and returns only when something allocates or
//! frees a lot *in that arena* again. No call of the crate's could give
//! them back short of a process-wide `malloc_trim`, and even that leaves
//! each thread arena's top. So the crate owns the nodes' memory: blocks it
//! maps itself and unmaps as soon as the last of their nodes is freed
//! (but for the few it keeps spare, below), whatever thread allocated them
//! and whatever the allocator's tunables.
//! After the same flood the RSS is now back to within a few MiB (figures in
//! `examples/flood.rs`).
//!
//! # How it works
//!
//! - **Size classes.** A node type is served if its size and alignment fit
//!   one of `CLASSES` (16 to 256 bytes); the smallest class that fits is
//!   chosen at compile time (`class_of`, a `const` of `Node<T>`), so the
//!   allocation and the free of a type always agree and a larger type
//!   simply stays a `Box`.
//! - **Blocks.** A block is `BLOCK` bytes aligned to `BLOCK`: a
//!   64-byte header holding the live count ([`Live`]), then nodes of one
//!   class side by side (255 of 64 bytes). A node finds its block by
//!   clearing the low bits of its address, so it carries no back pointer.
//! - **Carving.** Each thread keeps, per class, the next node of its
//!   current block and how many are left (a `thread_local!`); an allocation
//!   takes the next one and a used-up block is simply forgotten. Every
//!   allocation site is covered this way at once: a worker whose node cache
//!   is empty, a sender outside when the depot is, a handler's completion.
//!   A thread that exits *retires* its partly carved blocks; one that
//!   allocates while its thread-locals are being torn down gets a block of
//!   its own for that one node, retired at once (`alloc_alone`).
//! - **The live count, and the invariant *freed after last use*.** A
//!   block's count starts at its number of nodes. Freeing a node takes one
//!   off; retiring a block takes off the nodes never carved. Whoever takes
//!   it to zero frees the block, and by then every use of every node of it,
//!   on any thread, happens before the free: each decrement is a Release
//!   and the last is followed by an Acquire load of the count (the argument
//!   of `Arc`'s drop; [`Live::give_back`]). The loom model is
//!   `loom-tests/tests/pool.rs`.
//! - **Block memory.** On Linux with 4 KiB pages (x86, x86-64, arm,
//!   riscv64; outside Miri) blocks are `mmap`ed
//!   directly (twice the size, then the unaligned head and tail unmapped)
//!   and `munmap`ed when free, so they go back to the system at once, even
//!   under the benches' `GLIBC_TUNABLES` (which stop malloc from trimming
//!   anything). Elsewhere, and under Miri, they come from `std::alloc`
//!   with a 16 KiB alignment. Under loom nodes stay `Box`es (`node.rs`):
//!   loom models the queues' atomics, not this allocator; the live count
//!   and the spares have models of their own.
//! - **Spares.** A freed block is first offered to the pool's spare places
//!   ([`Spares`], 16 of them, `pool/spares.rs`), and a worker that needs a
//!   block takes a spare one before it maps one: where nodes flow one way
//!   between workers (one carves, the other frees), the carver reuses the
//!   blocks the other frees instead of mapping each anew, and the system
//!   calls, page faults and TLB shootdowns of that flow go away. Only a
//!   block freed with every place taken is unmapped. Threads outside the
//!   workers map their blocks anew (`take_spares_on_this_thread` says why).
//!
//! # What it costs, what it keeps
//!
//! Nodes are never reused inside a block: reuse is the node caches' work
//! (a worker's [`NodeCache`](super::NodeCache), the scheduler's depot), so
//! the pool is only called on a cache miss, and a block costs one `mmap`
//! and two or three `munmap`s per 255 such misses (none when a spare
//! serves; the spares keep 256 KiB at most). The price is that one node
//! still in use keeps its whole block: each mailbox's stub, the nodes a
//! worker caches (up to 16,384) and the depot's (4,096). Those are not side
//! by side: the caches and the depot hand nodes round between the workers
//! and the senders, so after a flood the nodes they keep come from blocks
//! of every age. That is why a block is 16 KiB and not 64: with 64 KiB
//! blocks the `flood` example ended +7.6 to +20.6 MiB above its first RSS
//! (six runs; one over the 16 MiB it allows), of which only +4.5 to +6.9
//! MiB stayed once the scheduler had shut down and its workers' caches were
//! freed; with 32 KiB, +5.7 to +10.4; with 16 KiB, +4.1 to +6.8 (three runs
//! each). Smaller blocks would cost more system calls per node for less.

#[cfg(not(loom))]
use core::cell::Cell;
#[cfg(not(loom))]
use core::ptr;

use crate::sync::{AtomicUsize, Ordering};

mod spares;
pub use spares::Spares;

/// Free blocks kept for the next ones (`pool/spares.rs`).
#[cfg(not(loom))]
static SPARES: Spares<{ spares::SPARE_BLOCKS }> = Spares::new();

/// The bytes of a block, and its alignment.
pub(crate) const BLOCK: usize = 16 * 1024;

/// The bytes of a block's header (the live count, alone on its cache line).
const HEADER: usize = 64;

/// The node sizes the pool serves; a node type is carved from the blocks of
/// the smallest class that holds it.
pub(crate) const CLASSES: [usize; 5] = [16, 32, 64, 128, 256];

/// The class for nodes of `size` bytes aligned to `align`, or `None` if
/// they fit none (those nodes stay `Box`es). Always `None` under loom.
///
/// A node of class `c` sits at `HEADER + i * CLASSES[c]` from a block's
/// start, which is aligned to `min(CLASSES[c], HEADER)`.
pub(crate) const fn class_of(size: usize, align: usize) -> Option<usize> {
    if cfg!(loom) || align > HEADER {
        return None;
    }
    let mut class = 0;
    while class < CLASSES.len() {
        if size <= CLASSES[class] && align <= CLASSES[class] {
            return Some(class);
        }
        class += 1;
    }
    None
}

/// A block's live count: its nodes not yet given back (freed, or never
/// carved when the block was retired). Built under loom too, for its model
/// (`loom-tests/tests/pool.rs`, through `crate::__internals`).
#[derive(Debug)]
pub struct Live(AtomicUsize);

impl Live {
    /// A count of `nodes`, for a block that no other thread knows yet.
    pub fn new(nodes: usize) -> Live {
        Live(AtomicUsize::new(nodes))
    }

    /// Gives back `n` nodes. Returns `true` if they were the last: then the
    /// caller must free the block, and every other thread's use of its
    /// nodes happens before this return (*freed after last use*).
    #[must_use]
    pub fn give_back(&self, n: usize) -> bool {
        // Release: pairs with the Acquire load below, run by whichever
        // thread's `give_back` takes the count to zero; it publishes this
        // thread's last use of the nodes it gives back (a consumer's read
        // of an item, a cache's link) before that thread frees the block
        // (*freed after last use*). Killed without it: loom
        // `last_free_races_a_free_and_the_retire`.
        let before = self.0.fetch_sub(n, Ordering::Release);
        assert!(
            before >= n,
            "Live::give_back: {n} nodes given back, {before} live"
        );
        if before != n {
            return false;
        }
        // Acquire: pairs with the Release `fetch_sub` of every earlier
        // `give_back` of this block (it reads our RMW's 0, the end of the
        // count's release sequence of RMWs), so their uses of its nodes
        // happen before the caller frees it (*freed after last use*). A
        // load, not an Acquire fence: ThreadSanitizer does not see fences
        // (std's `Arc` makes the same swap under it); the cost is one load
        // per block freed. Killed without it: loom
        // `last_free_races_a_free_and_the_retire`.
        let left = self.0.load(Ordering::Acquire);
        debug_assert_eq!(
            left, 0,
            "Live::give_back: a block's count rose after its last node"
        );
        true
    }
}

/// The start of every block.
#[cfg(not(loom))]
#[repr(C, align(64))]
struct Header {
    live: Live,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Header>() == HEADER && BLOCK % HEADER == 0);

/// How many nodes of `class` a block holds.
#[cfg(not(loom))]
const fn per_block(class: usize) -> usize {
    (BLOCK - HEADER) / CLASSES[class]
}

/// Returns uninitialised memory for one node of `class` (an index into
/// [`CLASSES`]), carved from this thread's current block of that class.
#[cfg(not(loom))]
pub(crate) fn alloc(class: usize) -> *mut u8 {
    CARVERS
        .try_with(|carvers| carvers.0[class].carve(class))
        .unwrap_or_else(|_| alloc_alone(class))
}

/// Frees a node that [`alloc`] returned; frees its block if it was the
/// block's last.
///
/// # Safety
///
/// `node` came from [`alloc`], is owned by the caller, holds nothing that
/// needs dropping, and is not used again.
#[cfg(not(loom))]
pub(crate) unsafe fn free(node: *mut u8) {
    // SAFETY: `node` is a node of that block, the caller's to give up.
    unsafe { give_back(header_of(node), 1) };
}

/// Gives back `n` nodes of the block at `header`, and frees the block if
/// they were its last.
///
/// # Safety
///
/// The caller holds `n` nodes of the block (carved and no longer used, or
/// never carved) and gives them up.
#[cfg(not(loom))]
unsafe fn give_back(header: *mut Header, n: usize) {
    // SAFETY: the block is mapped while it has a live node, and the
    // caller holds `n` of them.
    if unsafe { (*header).live.give_back(n) } {
        #[cfg(test)]
        counts::unmapped();
        // The count reached zero here: no node of the block is in use and
        // its carver has retired it, so it is ours alone.
        if !SPARES.put(header.cast()) {
            // SAFETY: as just said; every place taken, so nothing else
            // will use it either.
            unsafe { os::unmap(header.cast()) };
        }
    }
}

/// The header of the block holding `node`.
#[cfg(not(loom))]
fn header_of(node: *mut u8) -> *mut Header {
    // A pointer-to-integer cast only reads the address (strict provenance
    // allows it); the header pointer is derived from `node` itself, so it
    // keeps the block's provenance. (`map_addr` would say so better, but
    // it is newer than the crate's MSRV, 1.80.)
    let offset = node as usize & (BLOCK - 1);
    node.wrapping_sub(offset).cast()
}

/// Takes a block for `class` (a spare one, else a newly mapped one) and
/// writes its header; returns its first node.
#[cfg(not(loom))]
fn new_block(class: usize) -> *mut u8 {
    let spare = if TAKES_SPARES.try_with(Cell::get).unwrap_or(false) {
        SPARES.take()
    } else {
        None
    };
    let block = spare.unwrap_or_else(os::map);
    #[cfg(test)]
    counts::mapped();
    // SAFETY: a block of `BLOCK` bytes, aligned to `BLOCK`, ours alone (a
    // new mapping, or a spare whose last use happens before `take`); the
    // header fits at its start.
    unsafe {
        block.cast::<Header>().write(Header {
            live: Live::new(per_block(class)),
        })
    };
    // SAFETY: `HEADER < BLOCK`: inside the block.
    unsafe { block.add(HEADER) }
}

/// A node of `class` in a block of its own, retired at once, so that
/// freeing the node frees the block: for allocations while this thread's
/// carvers are being torn down (rare; a block for one node).
#[cfg(not(loom))]
fn alloc_alone(class: usize) -> *mut u8 {
    let node = new_block(class);
    // SAFETY: the block is live: the node just carved holds it.
    let last = unsafe { (*header_of(node)).live.give_back(per_block(class) - 1) };
    assert!(!last, "alloc_alone: the carved node must keep its block");
    node
}

/// One thread's carving state for one class: the next node of its current
/// block and how many are left (none: no current block). Only its thread
/// reads or writes it.
#[cfg(not(loom))]
struct Carver {
    next: Cell<*mut u8>,
    left: Cell<usize>,
}

#[cfg(not(loom))]
impl Carver {
    /// No current block.
    const fn empty() -> Carver {
        Carver {
            next: Cell::new(ptr::null_mut()),
            left: Cell::new(0),
        }
    }

    /// The next node of the current block, after mapping a new block if
    /// the current one is used up.
    fn carve(&self, class: usize) -> *mut u8 {
        let left = self.left.get();
        let node = if left == 0 {
            let first = new_block(class);
            self.left.set(per_block(class) - 1);
            first
        } else {
            self.left.set(left - 1);
            self.next.get()
        };
        // One past this node: inside the block, or its end (then `left`
        // is 0 and `next` is not read again before the next block).
        self.next.set(node.wrapping_add(CLASSES[class]));
        node
    }

    /// Gives back the current block's uncarved nodes, freeing the block if
    /// all its carved ones are free already.
    fn retire(&self) {
        let left = self.left.replace(0);
        if left == 0 {
            return;
        }
        // SAFETY: `next` is the first of the block's `left` uncarved
        // nodes, which only this carver holds.
        unsafe { give_back(header_of(self.next.get()), left) };
    }
}

/// A thread's carvers, one per class; their blocks are retired when the
/// thread exits.
#[cfg(not(loom))]
struct Carvers([Carver; CLASSES.len()]);

#[cfg(not(loom))]
impl Drop for Carvers {
    fn drop(&mut self) {
        self.0.iter().for_each(Carver::retire);
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static CARVERS: Carvers = const { Carvers([const { Carver::empty() }; CLASSES.len()]) };
    /// Whether this thread's new blocks may be spare ones
    /// ([`take_spares_on_this_thread`]). No destructor.
    static TAKES_SPARES: Cell<bool> = const { Cell::new(false) };
}

/// Lets this thread's new blocks be spare ones (`pool/spares.rs`): called
/// by the scheduler's workers as they start. Any thread gives the blocks
/// it frees to the spares; only such threads take them, and every other
/// thread maps its blocks anew.
///
/// Why not every thread: where nodes flow between workers (one carves,
/// the other frees), the carver taking the freed blocks makes the `links`
/// bench's `apart` pairs faster; but a sender outside the workers that
/// takes the blocks its consumer freed makes the `flood` bench slower,
/// although it then maps far fewer blocks. Why is not pinned down: not the
/// first writes' misses on lines the consumer last held (prefetching each
/// line of a taken block for writing does not help). With only workers
/// taking, the flood costs what it costs with no spares at all.
#[cfg(not(loom))]
pub(crate) fn take_spares_on_this_thread() {
    // A thread whose thread-locals are being torn down keeps mapping.
    let _ = TAKES_SPARES.try_with(|takes| takes.set(true));
}

/// Where blocks come from: the heap's functions come in by a glob, and the
/// `mmap` ones, named where they are built, shadow them (so the condition
/// is written once).
#[cfg(not(loom))]
mod os {
    #[allow(unused_imports)] // Shadowed where `mmap` serves.
    pub(super) use super::heap::*;
    #[cfg(all(
        target_os = "linux",
        not(miri),
        any(
            target_arch = "x86_64",
            target_arch = "x86",
            target_arch = "arm",
            target_arch = "riscv64"
        )
    ))]
    pub(super) use super::mmap::{map, unmap};
}

/// Block memory straight from the kernel: given back by `munmap` at once,
/// whatever malloc's settings. Chosen (by `os`) only where pages are
/// always 4 KiB, so that a block's edges are page edges (aarch64 kernels
/// may use 16 or 64 KiB pages, and there an unmap of a block would fail
/// and leak it), and the `MAP_ANONYMOUS` value below is the
/// architecture's (MIPS, for one, differs).
#[cfg(all(target_os = "linux", not(loom)))]
#[allow(dead_code)] // Unused where `os` does not choose it.
mod mmap {
    use super::BLOCK;
    use core::ffi::{c_int, c_void};

    const PROT_READ: c_int = 1;
    const PROT_WRITE: c_int = 2;
    const MAP_PRIVATE: c_int = 2;
    const MAP_ANONYMOUS: c_int = 0x20;

    // libc is linked by std; these are its declarations (`off_t` is a
    // `long`, the size of `isize` on Linux).
    extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            offset: isize,
        ) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
    }

    /// A new block: `BLOCK` bytes aligned to `BLOCK`, zeroed.
    pub(super) fn map() -> *mut u8 {
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choice touches no existing memory.
        let raw = unsafe {
            mmap(
                core::ptr::null_mut(),
                2 * BLOCK,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw as isize == -1 {
            let layout = core::alloc::Layout::from_size_align(BLOCK, BLOCK).unwrap();
            std::alloc::handle_alloc_error(layout);
        }
        let raw = raw.cast::<u8>();
        let head = (raw as usize).wrapping_neg() & (BLOCK - 1);
        // SAFETY: `head < BLOCK`, so the block lies inside the mapping.
        let block = unsafe { raw.add(head) };
        // SAFETY: the head and the tail are parts of our fresh mapping that
        // nothing points into; a failed unmap only leaves them mapped.
        unsafe {
            if head > 0 {
                munmap(raw.cast(), head);
            }
            munmap(block.add(BLOCK).cast(), BLOCK - head);
        }
        block
    }

    /// Gives a block back to the system.
    ///
    /// # Safety
    ///
    /// `block` came from [`map`] and nothing uses it any more.
    pub(super) unsafe fn unmap(block: *mut u8) {
        // SAFETY: the block is ours alone (caller's contract). A failure
        // (the kernel's map count exhausted) leaves it mapped, not freed.
        unsafe { munmap(block.cast(), BLOCK) };
    }
}

/// Block memory from the global allocator: where `mmap` is not used (see
/// `os`), and under Miri.
#[cfg(not(loom))]
#[allow(dead_code)] // Unused where `mmap` serves.
mod heap {
    use super::BLOCK;
    use std::alloc::Layout;

    const LAYOUT: Layout = match Layout::from_size_align(BLOCK, BLOCK) {
        Ok(layout) => layout,
        Err(_) => panic!("BLOCK is a power of two"),
    };

    /// A new block: `BLOCK` bytes aligned to `BLOCK`.
    pub(super) fn map() -> *mut u8 {
        // SAFETY: the layout's size is not zero.
        let block = unsafe { std::alloc::alloc(LAYOUT) };
        if block.is_null() {
            std::alloc::handle_alloc_error(LAYOUT);
        }
        block
    }

    /// Gives a block back to the allocator.
    ///
    /// # Safety
    ///
    /// `block` came from [`map`] and nothing uses it any more.
    pub(super) unsafe fn unmap(block: *mut u8) {
        // SAFETY: allocated by `map` with `LAYOUT` (caller's contract).
        unsafe { std::alloc::dealloc(block, LAYOUT) };
    }
}

/// Blocks taken (mapped, or spare) and freed (kept as a spare, or
/// unmapped) by this thread (tests only: each test counts on threads of
/// its own, so tests running beside it do not count).
#[cfg(test)]
mod counts {
    use core::cell::Cell;

    std::thread_local! {
        // No destructor: readable while other thread-locals are torn down.
        static MAPPED: Cell<usize> = const { Cell::new(0) };
        static UNMAPPED: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn mapped() {
        MAPPED.with(|c| c.set(c.get() + 1));
    }

    pub(super) fn unmapped() {
        UNMAPPED.with(|c| c.set(c.get() + 1));
    }

    /// (mapped, unmapped) by this thread so far.
    pub(super) fn get() -> (usize, usize) {
        (MAPPED.with(Cell::get), UNMAPPED.with(Cell::get))
    }
}

#[cfg(test)]
mod tests;
