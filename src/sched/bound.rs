//! A bounded mailbox's count ([`Bound`]): how many messages a process's
//! mailbox may hold, and how many it holds.
//!
//! A process created with a mailbox capacity (`Builder::mailbox_capacity`,
//! or `SpawnOptions::mailbox_capacity` per process) has a limit in its
//! slot. A sender *reserves* a place before it pushes a message
//! ([`Bound::try_reserve`]: a CAS that never takes the count past the
//! limit), and is refused, with its message handed back, when there is
//! none. The holder of the process *releases* the places of the messages it
//! drained, once per drain ([`Bound::release`]: one RMW for the whole
//! batch, not one per message). Only messages are counted: completions,
//! cancels and the scheduler's own events are bounded by what the process
//! itself asked for, and are never refused.
//!
//! Exactness, the two halves of the loom model
//! (`loom-tests/tests/bound.rs`):
//!
//! - **No message accepted beyond the limit.** Every accepted message holds
//!   a place from its reservation until the drain that takes it releases
//!   it, and a reservation is a CAS from a count below the limit to one
//!   more: the count, hence the mailbox, never exceeds the limit. (A
//!   `fetch_add` followed by a `fetch_sub` on refusal would be cheaper but
//!   not exact: the refused sender's transient place would refuse a third
//!   sender while there is room.)
//! - **None refused while there is room, once the drain is visible.** A
//!   sender whose reservation reads the count after a release (the
//!   release's RMW comes before it in the count's modification order) sees
//!   the places it gave back.
//!
//! Every access is Relaxed: the count orders nothing but itself (the RMWs
//! are atomic on one location, which is all the two rules need), the
//! message travels by the mailbox's own Release/Acquire, and the limit is
//! published with the process (stored before `activate`'s Release, read
//! after the sender's Acquire load of the state word).
//!
//! A slot is reused, and the count is not reset with it: a message reserved
//! for a process that then ended, and pushed after its mailbox was drained,
//! holds its place until the next holder drains it (as undelivered), like
//! the dump's queued counters (`figures.rs`). Each envelope records whether
//! it holds a place, so the release is exact even when the limit changes
//! between incarnations.

use crate::sync::{fence, AtomicU32, AtomicUsize, Condvar, Mutex, Ordering};
use std::time::Instant;

/// A mailbox's limit and count. See the [module docs](self).
#[derive(Debug)]
pub struct Bound {
    /// The most messages the mailbox may hold; 0: unbounded (nothing is
    /// counted).
    limit: AtomicU32,
    /// Places reserved by senders and not yet released by a drain.
    queued: AtomicU32,
}

impl Default for Bound {
    fn default() -> Self {
        Bound::new()
    }
}

impl Bound {
    /// Unbounded, nothing queued.
    pub fn new() -> Self {
        Bound {
            limit: AtomicU32::new(0),
            queued: AtomicU32::new(0),
        }
    }

    /// Sets the limit of a new incarnation (0: unbounded). Called by its
    /// creator before `activate` publishes it.
    pub fn set_limit(&self, limit: u32) {
        // Relaxed: published by `activate`'s Release CAS of the state word,
        // which every sender's Acquire load of the word reads (or a later
        // RMW in its release sequence) before it loads the limit.
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// The limit (0: unbounded). Read by a sender after its Acquire load of
    /// the state word.
    #[inline]
    pub fn limit(&self) -> u32 {
        // Relaxed: see `set_limit`.
        self.limit.load(Ordering::Relaxed)
    }

    /// Takes a place if fewer than `limit` are taken; `false` if the
    /// mailbox is full.
    #[inline]
    pub fn try_reserve(&self, limit: u32) -> bool {
        // Relaxed: the count orders nothing but itself (module docs); the
        // CAS makes each reservation atomic with its check.
        let mut queued = self.queued.load(Ordering::Relaxed);
        loop {
            if queued >= limit {
                return false;
            }
            match self.queued.compare_exchange_weak(
                queued,
                queued + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => queued = now,
            }
        }
    }

    /// Gives back `n` places (messages the holder drained); returns how
    /// many were taken before.
    #[inline]
    pub fn release(&self, n: u32) -> u32 {
        // Relaxed: as in `try_reserve`.
        self.queued.fetch_sub(n, Ordering::Relaxed)
    }

    /// Places taken now (a snapshot).
    pub fn queued(&self) -> u32 {
        // Relaxed: a snapshot of the count alone.
        self.queued.load(Ordering::Relaxed)
    }
}

/// Outside senders waiting for room in a full mailbox
/// (`Scheduler::send_timeout`), and the drains that wake them.
///
/// One for the whole scheduler: waiting is rare (a sender that would rather
/// wait than handle `Full`), so a drain that freed room in a full mailbox
/// pays a fence and a load, and takes the lock only when someone waits.
/// A waiter registers, then retries its send under the lock; a drain
/// releases its places, then checks for waiters. A Dekker pair of SeqCst
/// fences makes sure one of them sees the other: either the waiter's retry
/// finds the room, or the drain sees the waiter and wakes it (it takes the
/// lock, so it cannot notify between the waiter's retry and its wait).
#[derive(Debug, Default)]
pub struct Room {
    waiters: AtomicUsize,
    lock: Mutex<()>,
    made: Condvar,
}

impl Room {
    /// No one waiting.
    pub fn new() -> Self {
        Room::default()
    }

    /// Called after a release that took a full mailbox below its limit:
    /// wakes the waiting senders, if any.
    pub fn made(&self) {
        if self.anyone_waiting() {
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.made.notify_all();
        }
    }

    /// The drain's half of the Dekker pair (type docs): after its release,
    /// whether a sender has registered to wait.
    pub fn anyone_waiting(&self) -> bool {
        // SeqCst: orders the release's RMW before the load of `waiters`,
        // against `enter`'s fence.
        fence(Ordering::SeqCst);
        // Relaxed: the fences order it (type docs).
        self.waiters.load(Ordering::Relaxed) != 0
    }

    /// The waiter's half of the Dekker pair: registers, before the retry
    /// that must see any release the drain's check missed.
    pub fn enter(&self) {
        // Relaxed: the fence below orders it before the retries.
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // SeqCst: against `anyone_waiting`'s fence (type docs).
        fence(Ordering::SeqCst);
    }

    /// Unregisters (`enter`'s undo).
    pub fn leave(&self) {
        // Relaxed: a waiter that leaves only lets drains skip the lock.
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// Calls `attempt` until it succeeds (returns `Some`), parking between
    /// attempts until a drain makes room somewhere or `deadline` passes;
    /// `None` at the deadline.
    pub fn wait<T>(&self, deadline: Instant, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
        self.enter();
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let result = loop {
            if let Some(done) = attempt() {
                break Some(done);
            }
            let now = Instant::now();
            if now >= deadline {
                break None;
            }
            guard = self
                .made
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(guard);
        self.leave();
        result
    }
}
