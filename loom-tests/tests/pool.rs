//! loom model of the node pool's live count (`stepsched::mpsc::pool::Live`):
//! a block is freed exactly once, and only after every use of every node
//! of it, on whatever thread (the invariant *freed after last use* in
//! `src/mpsc/pool.rs`).
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
use stepsched::mpsc::pool::Live;

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
