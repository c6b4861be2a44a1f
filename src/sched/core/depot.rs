//! Free mailbox nodes for the threads outside the workers.
//!
//! Every event travels in a mailbox node. A worker keeps a cache of free
//! nodes, so messages between processes allocate nothing once warm; a
//! thread outside the workers (`Scheduler::send` and its kin) has none.
//! Without the depot, each of its sends would allocate a node that a worker
//! then frees: allocation on one thread and release on another, the
//! allocator's worst pattern (the `flood` bench is made of it).
//! Completions and cancels, which have no node cache either, still
//! allocate: most come from handlers running on a worker, where the
//! allocator's thread cache is cheaper than a shared lock (the `timers`
//! bench's `deadline_not_hit` is slower with them through the depot).
//!
//! The depot is a node cache behind a mutex, and a flag:
//!
//! - a send from outside takes one node if the lock is free at once
//!   ([`Depot::take_one`]), else allocates; either way it raises `hungry`
//!   (if it is not raised already);
//! - a worker whose cache is more than half full after a drain, and that
//!   sees `hungry`, gives the depot what is above half
//!   ([`Depot::refill`]), again only if the lock is free at once, and
//!   lowers the flag.
//!
//! Nobody waits for the lock. The nodes hold no item while they are in a
//! cache, and the mutex orders their hand-over between threads. The flag
//! only says whether a refill is worth a lock: a worker that misses it
//! keeps its nodes one more drain, one that reads it stale locks for
//! nothing. So a scheduler without outside senders pays one load of a
//! line nobody writes, after a drain that leaves a cache over half full.

use std::sync::Mutex;

use crate::mpsc::NodeCache;
use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// The most nodes the depot keeps: enough for a few steps of a flood from
/// outside (a step takes at most `max_events_per_step` events, 1,024 by
/// default), and a bound a burst cannot grow (about 200 KiB with small
/// messages).
pub(crate) const LIMIT: usize = 4096;

/// See the module docs.
pub(crate) struct Depot<T> {
    nodes: Mutex<NodeCache<T>>,
    /// An outside sender has drawn on the depot (or tried to) since the
    /// last refill: raised before the depot runs dry, so that a burst from
    /// outside finds the nodes the worker freed since its last one.
    hungry: AtomicBool,
    /// Sends that found no node here (empty, or the lock taken) and
    /// allocated one ([`Stats::outside_node_allocations`]); counted on a
    /// miss only, so a warm depot's sends pay nothing for it.
    ///
    /// [`Stats::outside_node_allocations`]: crate::sched::Stats::outside_node_allocations
    misses: AtomicU64,
}

impl<T> Depot<T> {
    pub(crate) fn new() -> Self {
        Depot {
            nodes: Mutex::new(NodeCache::with_limit(LIMIT)),
            hungry: AtomicBool::new(false),
            misses: AtomicU64::new(0),
        }
    }

    /// A cache holding one node from the depot, or none (the depot is
    /// empty, or its lock is taken: then pushing through the returned
    /// cache allocates).
    pub(crate) fn take_one(&self) -> NodeCache<T> {
        let mut one = NodeCache::with_limit(1);
        if let Ok(mut nodes) = self.nodes.try_lock() {
            nodes.give(&mut one, 1);
        }
        if one.is_empty() {
            // Relaxed: a count, read by `stats`.
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        // Relaxed: a hint (module docs); the nodes a refill brings are
        // handed over by the mutex. Written once a refill cycle.
        if !self.hungry.load(Ordering::Relaxed) {
            self.hungry.store(true, Ordering::Relaxed);
        }
        one
    }

    /// Sends so far that found no node here and allocated one.
    pub(crate) fn misses(&self) -> u64 {
        // Relaxed: a count (see `stats`).
        self.misses.load(Ordering::Relaxed)
    }

    /// Whether a refill would be used: an outside sender has drawn on the
    /// depot since the last one.
    pub(crate) fn is_hungry(&self) -> bool {
        // Relaxed: a hint (module docs).
        self.hungry.load(Ordering::Relaxed)
    }

    /// Moves what `cache` holds above half its limit into the depot, if
    /// the depot's lock is free at once.
    pub(crate) fn refill(&self, cache: &mut NodeCache<T>) {
        if let Ok(mut nodes) = self.nodes.try_lock() {
            let above_half = cache.len().saturating_sub(cache.limit() / 2);
            cache.give(&mut nodes, above_half);
            // Relaxed: a hint (module docs).
            self.hungry.store(false, Ordering::Relaxed);
        }
    }
}
