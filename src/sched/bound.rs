//! A bounded mailbox's count ([`Bound`]): how many messages a process's
//! mailbox may hold, and how many it holds.
//!
//! A process created with a mailbox capacity (`Builder::mailbox_capacity`,
//! or `SpawnOptions::mailbox_capacity` per process) has a limit in its
//! slot. The count is two monotonic (wrapping) counters: `reserved`, the
//! places senders ever took, and `released`, the places the holder ever gave
//! back; the mailbox holds `reserved - released`. A sender *reserves* a
//! place before it pushes a message ([`Bound::try_reserve`]: a CAS of
//! `reserved` that never takes the difference past the limit), and is
//! refused, with its message handed back, when there is none. The holder of
//! the process *releases* the places of the messages it drained, once per
//! drain ([`Bound::release`]): a plain store, no read-modify-write, because
//! only the holder writes `released` and holders follow one another through
//! the state word. So a bounded message costs one atomic RMW (the sender's
//! CAS) beyond an unbounded one. Only messages are counted: completions,
//! cancels and the scheduler's own events are bounded by what the process
//! itself asked for, and are never refused.
//!
//! Exactness, the two halves of the loom model
//! (`loom-tests/tests/bound.rs`):
//!
//! - **No message accepted beyond the limit.** A sender reads `released`,
//!   then `reserved`, and takes a place by a CAS from `reserved = r` to
//!   `r + 1` only if `r - released < limit`. The `released` it read is at
//!   most the true one, so the mailbox, `r + 1 - released`, never exceeds
//!   the limit. (A `fetch_add` followed by a `fetch_sub` on refusal would
//!   not be exact: the refused sender's transient place would refuse a
//!   third sender while there is room.)
//! - **None refused while there is room, once the drain is visible.** A
//!   sender whose load of `released` reads a drain's store (or a later one)
//!   sees the places it gave back.
//! - **The difference never underflows.** `released` is loaded first, with
//!   Acquire, pairing with the holder's Release store: every reservation of
//!   a message that drain released happened before the store (sender:
//!   reserve, then push; holder: pop, then store), so the sender's later
//!   load of `reserved` reads it or a later value, and `reserved` is never
//!   behind the `released` read with it. Read the other way round, a stale
//!   `reserved` and a fresh `released` would wrap to a huge difference: a
//!   refusal with room (the model checks this too).
//!
//! `reserved` orders nothing but itself (Relaxed CAS: the reservations are
//! atomic on one location, which is all the rules need), the message
//! travels by the mailbox's own Release/Acquire, and the limit is published
//! with the process (stored before `activate`'s Release, read after the
//! sender's Acquire load of the state word).
//!
//! A slot is reused, and the counters are not reset with it: a message
//! reserved for a process that then ended, and pushed after its mailbox was
//! drained, holds its place until the drain that reports it as undelivered
//! (the closer's second drain, a late sender's sweep, or the slot's next
//! holder: `shared/late.rs`), which gives it back, like the dump's queued
//! counters (`figures.rs`). Each
//! envelope records whether it holds a place, so the release is exact even
//! when the limit changes between incarnations.

use crate::sync::{AtomicU32, AtomicUsize, Condvar, Mutex, Ordering};
use core::task::{Context, Poll, Waker};
use std::time::Instant;

/// A mailbox's limit and count. See the [module docs](self).
#[derive(Debug)]
pub struct Bound {
    /// The most messages the mailbox may hold; 0: unbounded (nothing is
    /// counted).
    limit: AtomicU32,
    /// Places ever reserved by senders (wrapping).
    reserved: AtomicU32,
    /// Places ever released by holders (wrapping); written only by the
    /// holder of the process.
    released: AtomicU32,
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
            reserved: AtomicU32::new(0),
            released: AtomicU32::new(0),
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
        loop {
            let (reserved, released) = self.counters();
            if reserved.wrapping_sub(released) >= limit {
                return false;
            }
            // Relaxed: the count orders nothing but itself (module docs);
            // the CAS makes the reservation atomic with the check. On
            // failure both counters are read again, in their order.
            if (self.reserved)
                .compare_exchange_weak(
                    reserved,
                    reserved.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return true;
            }
        }
    }

    /// Gives back `n` places (messages the holder drained). Only the
    /// process's holder calls it (the mailbox's consumer).
    #[inline]
    pub fn release(&self, n: u32) {
        // Relaxed: only holders write `released`, and each holder's start
        // acquires the previous holder's end through the state word.
        let released = self.released.load(Ordering::Relaxed);
        // Release: pairs with the Acquire load in `counters` (module docs).
        self.released
            .store(released.wrapping_add(n), Ordering::Release);
    }

    /// Places taken now (a snapshot, for the loom models). Never more
    /// than the limit plus the releases this reader has not seen yet, and
    /// never "negative" (module docs).
    #[cfg(loom)]
    pub fn queued(&self) -> u32 {
        let (reserved, released) = self.counters();
        reserved.wrapping_sub(released)
    }

    /// `(reserved, released)`, read in the order that keeps `reserved` from
    /// being behind `released` (module docs).
    #[inline]
    fn counters(&self) -> (u32, u32) {
        // Acquire: pairs with `release`'s Release store: every reservation
        // whose place that store gave back happened before it, so the load
        // of `reserved` below reads it or a later value.
        let released = self.released.load(Ordering::Acquire);
        // Relaxed: the count orders nothing but itself (module docs).
        let reserved = self.reserved.load(Ordering::Relaxed);
        (reserved, released)
    }
}

/// Outside senders waiting for room in a full mailbox
/// (`Scheduler::blocking_send_timeout`, parked on a condition variable, and
/// `Scheduler::send_async`, a task's [`Waker`]), and the holders that wake
/// them.
///
/// One for the whole scheduler: waiting is rare (a sender that would rather
/// wait than handle `Full`), so a holder that released places pays one
/// Relaxed load of a line nobody writes, and takes the lock only when
/// someone waits. No fence on either side: the two sides meet on the
/// process's state word, which both write with an RMW.
///
/// - A waiter registers ([`enter`](Room::enter)), then, in each attempt,
///   *touches* the target's state word (`StateWord::touch`, an AcqRel
///   `fetch_add(0)`) before it tries to reserve, under the lock. A task
///   leaves its waker in the lock's list in the same critical section as
///   its attempt ([`poll_wait`](Room::poll_wait)); a thread waits on the
///   condition variable, which releases the lock atomically.
/// - A holder that released places in a drain checks for waiters
///   ([`made`](Room::made)) after its next RMW of the state word: the end of
///   the step (or the free of the slot, when it closed the process).
///
/// The two RMWs are ordered in the word's modification order. If the
/// waiter's touch comes first, the holder's RMW reads it (or a later RMW:
/// every write of the word is one, so the release sequence goes on), the
/// registration happens before the holder's load of `waiters`, and the
/// holder wakes it (taking the lock, so it cannot notify between the
/// waiter's attempt and its wait, nor take the list before the task's
/// waker is in it). If the holder's comes first, the touch
/// reads it, and the release's store happens before the attempt's load of
/// `released`: the attempt sees the room. (loom: `loom-tests/tests/bound.rs`,
/// `a_waiting_sender_is_never_missed_by_the_drain_that_made_room`.) A task
/// counts in `waiters` from its first wait to its completion or its drop
/// ([`cancel`](Room::cancel)), a woken one included, so a drain that makes
/// room while it is between a wake and its next poll still looks for it.
#[derive(Debug, Default)]
pub struct Room {
    waiters: AtomicUsize,
    lock: Mutex<Wakers>,
    made: Condvar,
}

/// The wakers of the tasks waiting for room, each under its ticket.
#[derive(Debug, Default)]
struct Wakers {
    next_ticket: u64,
    waiting: Vec<(u64, Waker)>,
}

impl Wakers {
    fn remove(&mut self, ticket: u64) {
        self.waiting.retain(|(t, _)| *t != ticket);
    }
}

impl Room {
    /// No one waiting.
    pub fn new() -> Self {
        Room::default()
    }

    /// Called by a holder that released places, after its next RMW of the
    /// process's state word (type docs): wakes the waiting senders, if any.
    #[inline]
    pub fn made(&self) {
        if self.anyone_waiting() {
            self.wake();
        }
    }

    /// The holder's half (type docs): whether a sender has registered to
    /// wait.
    #[inline]
    pub fn anyone_waiting(&self) -> bool {
        // Relaxed: ordered by the state word's RMWs (type docs).
        self.waiters.load(Ordering::Relaxed) != 0
    }

    #[cold]
    fn wake(&self) {
        let wakers = core::mem::take(&mut self.lock().waiting);
        self.made.notify_all();
        // Woken after the lock is released: a task may run at once, and
        // poll again, which takes the lock.
        for (_, waker) in wakers {
            // A waker is the embedder's executor code: a panic in it must
            // not take the worker down (as `outside::join::wake_contained`).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()));
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Wakers> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The waiter's registration, before the attempts that touch the
    /// state word (type docs).
    pub fn enter(&self) {
        // Relaxed: the touch's Release half orders it before the holder's
        // load (type docs).
        self.waiters.fetch_add(1, Ordering::Relaxed);
    }

    /// Unregisters (`enter`'s undo).
    pub fn leave(&self) {
        // Relaxed: a waiter that leaves only lets holders skip the lock.
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// Calls `attempt` until it succeeds (returns `Some`), parking between
    /// attempts until a drain makes room somewhere or `deadline` passes;
    /// `None` at the deadline. Each attempt must touch the target's state
    /// word before it reserves (type docs).
    pub fn wait<T>(&self, deadline: Instant, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
        self.enter();
        let mut guard = self.lock();
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

    /// A task's attempt: `attempt` once, under the lock; `Ready` with what
    /// it returned, or `Pending` with the task's waker left to be woken by
    /// the next drain that makes room (replacing an earlier poll's). The
    /// first call registers the task (`ticket` goes from `None` to its
    /// ticket); `Ready` unregisters it, and a task dropped while pending
    /// must call [`cancel`](Room::cancel). `attempt` must touch the
    /// target's state word before it reserves (type docs).
    pub fn poll_wait<T>(
        &self,
        ticket: &mut Option<u64>,
        cx: &mut Context<'_>,
        attempt: impl FnOnce() -> Option<T>,
    ) -> Poll<T> {
        if ticket.is_none() {
            self.enter();
        }
        let mut wakers = self.lock();
        let mine = match *ticket {
            Some(mine) => mine,
            None => {
                let mine = wakers.next_ticket;
                wakers.next_ticket += 1;
                *ticket = Some(mine);
                mine
            }
        };
        if let Some(done) = attempt() {
            wakers.remove(mine);
            drop(wakers);
            *ticket = None;
            self.leave();
            return Poll::Ready(done);
        }
        match wakers.waiting.iter_mut().find(|(t, _)| *t == mine) {
            Some((_, waker)) if waker.will_wake(cx.waker()) => {}
            Some((_, waker)) => *waker = cx.waker().clone(),
            None => wakers.waiting.push((mine, cx.waker().clone())),
        }
        Poll::Pending
    }

    /// Unregisters a task that waited with `ticket` and will not poll
    /// again (its future was dropped): its waker is forgotten.
    pub fn cancel(&self, ticket: &mut Option<u64>) {
        if let Some(mine) = ticket.take() {
            self.lock().remove(mine);
            self.leave();
        }
    }
}
