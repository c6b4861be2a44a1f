//! loom models of the node pool's live count (`Live`, `src/mpsc/pool.rs`):
//! a block is freed exactly once, and only after every use of every node
//! of it, on whatever thread (the invariant *freed after last use* in
//! `src/mpsc/pool.rs`); and of its spare blocks
//! (`Spares`, `src/mpsc/pool/spares.rs`): a freed
//! block kept spare is handed to one taker, once, and reused only after
//! its last use on the thread that freed it.
//!
//! The block is modelled by its count and one loom cell per node; "using"
//! a node writes its cell, and freeing the block writes every cell (as a
//! later `mmap` reusing the memory would). A free that is not ordered
//! after some thread's last use of its node is a causality violation on
//! that node's cell. The pool's unit tests (`src/mpsc/pool.rs`) check the
//! carving and the real block memory; loom builds keep mailbox nodes as
//! `Box`es and do not build the carving.
//!
//! Run (well under a second in release):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test pool
//! ```
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{Live, Spares};

/// A block of four nodes, as the pool lays it out: the count, then the
/// nodes.
struct Block {
    live: Live,
    nodes: [UnsafeCell<u64>; 4],
    /// How many times the block was freed.
    freed: AtomicUsize,
}

impl Block {
    /// A node's last use by its holder (a consumer's read of the item, a
    /// cache's link): a write of its memory.
    fn last_use(&self, node: usize, value: u64) {
        // SAFETY: the node is this thread's alone until it is given back.
        self.nodes[node].with_mut(|p| unsafe { *p = value });
    }

    /// `pool::free` and `Carver::retire`: give back `n` nodes, and free the
    /// block if they were the last.
    fn give_back(&self, n: usize) {
        if self.live.give_back(n) {
            for node in &self.nodes {
                // SAFETY: the count reached zero: no node is in use (the
                // model fails here if a last use is not ordered before).
                node.with_mut(|p| unsafe { *p = 0 });
            }
            self.freed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Two threads free the nodes the carver handed them while the carver
/// uses and frees a third and retires the block (giving back the fourth,
/// never carved). Whichever of the four give-backs comes last frees the
/// block, exactly once, after every node's last use. Fails with the
/// `fetch_sub`'s Release weakened to Relaxed (a free on another thread no
/// longer publishes its last use) or the Acquire fence removed (the last
/// give-back no longer sees them): causality violations on a node's cell.
#[test]
fn last_free_races_a_free_and_the_retire() {
    loom::model(|| {
        let block = Arc::new(Block {
            live: Live::new(4),
            nodes: [0, 1, 2, 3].map(UnsafeCell::new),
            freed: AtomicUsize::new(0),
        });
        let holders: Vec<_> = [0, 1]
            .into_iter()
            .map(|node| {
                let block = Arc::clone(&block);
                thread::spawn(move || {
                    block.last_use(node, 10 + node as u64);
                    block.give_back(1);
                })
            })
            .collect();
        // The carver: a node of its own, used and freed, then the retire.
        block.last_use(2, 12);
        block.give_back(1);
        block.give_back(1);
        holders.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(block.freed.load(Ordering::SeqCst), 1, "freed once");
    });
}

/// A block's memory in the spares models: one cell, written by each of
/// its users in turn (the freeing thread's last use, the taker's new
/// header), and by an unmap.
struct Memory(UnsafeCell<u64>);

impl Memory {
    fn new() -> Arc<Memory> {
        Arc::new(Memory(UnsafeCell::new(0)))
    }

    /// Its address: what the spares hold (never dereferenced here).
    fn address(&self) -> *mut u8 {
        self as *const Memory as *mut u8
    }

    fn write(&self, value: u64) {
        // SAFETY: the writer holds the block (what the model checks).
        self.0.with_mut(|p| unsafe { *p = value });
    }
}

/// One thread frees a block (its last use, then `put`) while another
/// takes a block for its next carving (`take`, then the new header's
/// write, if it got one). When the take finds the block, the taker's write
/// comes after the freer's last use. Fails with `put`'s Release or
/// `take`'s Acquire weakened to Relaxed: a causality violation on the
/// block's cell.
#[test]
fn a_block_put_by_one_thread_is_reused_by_another_only_after_its_last_use() {
    loom::model(|| {
        let spares: Arc<Spares<1>> = Arc::new(Spares::new());
        let block = Memory::new();
        let freer = {
            let (spares, block) = (Arc::clone(&spares), Arc::clone(&block));
            thread::spawn(move || {
                block.write(1);
                assert!(spares.put(block.address()), "the one place was empty");
            })
        };
        if let Some(taken) = spares.take() {
            assert_eq!(taken, block.address());
            block.write(2);
        }
        freer.join().unwrap();
    });
}

/// Two threads free a block each into one place while a third takes: a
/// block is handed out once, only if its put succeeded, and a block whose
/// put was refused stays its freer's (who unmaps it: writes its cell)
/// and is never taken (else the taker's write races the unmap). What is
/// left in the place afterwards is exactly the puts not yet taken.
#[test]
fn racing_puts_and_a_take_hand_each_kept_block_out_once() {
    loom::model(|| {
        let spares: Arc<Spares<1>> = Arc::new(Spares::new());
        let blocks = [Memory::new(), Memory::new()];
        let freers: Vec<_> = blocks
            .iter()
            .map(|block| {
                let (spares, block) = (Arc::clone(&spares), Arc::clone(block));
                thread::spawn(move || {
                    block.write(1);
                    let kept = spares.put(block.address());
                    if !kept {
                        block.write(0); // unmapped
                    }
                    kept
                })
            })
            .collect();
        let mut taken: Vec<*mut u8> = spares.take().into_iter().collect();
        let kept: Vec<bool> = freers.into_iter().map(|f| f.join().unwrap()).collect();
        taken.extend(spares.take());
        assert_eq!(spares.take(), None, "one place");
        for (block, kept) in blocks.iter().zip(kept) {
            let times = taken.iter().filter(|&&t| t == block.address()).count();
            assert_eq!(
                times,
                usize::from(kept),
                "a kept block taken once, a refused one never"
            );
        }
        for block in &blocks {
            if taken.contains(&block.address()) {
                block.write(2);
            }
        }
    });
}
