//! The global run queue: many producers, many consumers, FIFO.
//!
//! The design (an MPSC queue plus a consumer token) is documented on
//! [`GlobalQueue`]. Crate-private; the crate's tests reach it through
//! `crate::__internals`.

use core::fmt;

use crate::deque::{Pointer, Worker};
use crate::mpsc::{Queue, TryPopError};
use crate::padded::CachePadded;
use crate::sync::{AtomicBool, Ordering};

/// How many items a take moves to the taker's local deque besides the one it
/// returns (docs/ARCHITECTURE.md, "Where a worker finds work": take one,
/// move up to 16 more).
///
/// Derivation: a take costs one token CAS and one release store, about one
/// contended cache-line transfer (~50-100 ns), while a pop costs a few ns.
/// Moving 16 spreads the token over 17 items, a few ns each, about one pop's
/// worth; holding the token for 17 pops (well under a microsecond) keeps the
/// other workers' `Busy` windows short, and a burst larger than 17 is left
/// for them (Go's `globrunqget` takes a share per P for the same reason).
/// `global/push_take_batch_1000` and `global/1_producer_2_consumers` in
/// `benches/mpsc.rs` measure it.
pub const BATCH: usize = 16;

/// The multi-producer, multi-consumer FIFO run queue shared by all workers.
///
/// # How it works
///
/// It is an [`mpsc::Queue`](crate::mpsc::Queue) plus a *consumer token*, one
/// `AtomicBool`. Producers push straight into the MPSC queue, so submitting
/// stays lock-free and never touches the token. A worker that wants work
/// takes the token with one CAS, pops one item for itself and up to [`BATCH`]
/// more for its local deque, and puts the token back. A worker whose CAS
/// fails does not wait: it gets [`Take::Busy`] and goes on to steal. So
/// consumers are serialised among themselves (which is what makes the MPSC
/// `pop` contract hold), but no worker ever blocks on another.
///
/// **Token invariant:** only the thread whose CAS moved the token from
/// `false` to `true` calls `pop`, until it stores `false`. The CAS is
/// Acquire and the store Release, so each holder's pops happen before the
/// next holder's: exactly the ordering `mpsc::Queue::pop` asks of
/// successive consumers.
///
/// # Emptiness, and why there is no `len`
///
/// [`GlobalQueue::is_empty`] is the MPSC queue's: a few loads, no lock, no
/// token, and it reports an item whose push is still mid-link as present
/// (docs/ARCHITECTURE.md, trap 4: a push half done). An exact or even
/// approximate length would cost every
/// push one more contended read-modify-write, on a counter every producer
/// and consumer shares; the scheduler only needs "is there anything", so we
/// do not pay for it.
///
/// # Examples
///
/// ```
/// use stepsched::__internals::{GlobalQueue, Take};
///
/// let global = GlobalQueue::new();
/// (0..20).for_each(|i| global.push(i));
///
/// let mut local = Vec::new();
/// match global.take_batch(|item| local.push(item)) {
///     Take::Taken { first, moved } => {
///         assert_eq!(first, 0);
///         assert_eq!(moved, 16);
///         assert_eq!(local, (1..17).collect::<Vec<_>>());
///     }
///     other => panic!("expected a batch, got {other:?}"),
/// }
/// assert!(!global.is_empty());
/// ```
///
/// Producers on any thread:
///
/// ```
/// use std::sync::Arc;
/// use stepsched::__internals::GlobalQueue;
///
/// let global = Arc::new(GlobalQueue::new());
/// let g = Arc::clone(&global);
/// std::thread::spawn(move || g.push("from another thread")).join().unwrap();
/// assert_eq!(global.take_one().first(), Some("from another thread"));
/// ```
pub struct GlobalQueue<T> {
    /// The items. `push` from any thread; `pop` only by the token holder.
    queue: Queue<T>,
    /// `true` while a consumer is inside a take (token invariant). CAS'd by
    /// consumers, stored `false` by the holder; producers never touch it.
    token: CachePadded<AtomicBool>,
}

/// The outcome of [`GlobalQueue::take_batch`] and friends.
///
/// Only [`Take::Empty`] means "nothing here": on [`Take::Busy`] and
/// [`Take::Inconsistent`] the queue may hold work, so a worker should look
/// elsewhere and come back rather than park.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Take<T> {
    /// The queue held no item (no push had swapped its node in).
    Empty,
    /// Another consumer holds the token; this one did not wait.
    Busy,
    /// The next item's push is between its swap and its link
    /// (docs/ARCHITECTURE.md, trap 4: a push half done); it becomes takeable as
    /// soon as that producer runs.
    Inconsistent,
    /// `first` is the caller's to run; `moved` more went to the sink.
    Taken {
        /// The oldest item, for the caller to run now.
        first: T,
        /// How many further items were handed to the sink, at most [`BATCH`].
        moved: usize,
    },
}

impl<T> Take<T> {
    /// Returns `true` for [`Take::Empty`].
    ///
    /// ```
    /// assert!(stepsched::__internals::Take::<u8>::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, Take::Empty)
    }

    /// Returns `true` for [`Take::Busy`] and [`Take::Inconsistent`]: no item
    /// now, but the queue may hold some.
    ///
    /// ```
    /// use stepsched::__internals::Take;
    /// assert!(Take::<u8>::Busy.is_retry());
    /// assert!(Take::<u8>::Inconsistent.is_retry());
    /// assert!(!Take::<u8>::Empty.is_retry());
    /// ```
    pub fn is_retry(&self) -> bool {
        matches!(self, Take::Busy | Take::Inconsistent)
    }

    /// Returns the item for the caller, if one was taken.
    ///
    /// ```
    /// use stepsched::__internals::Take;
    /// assert_eq!(Take::Taken { first: 'a', moved: 0 }.first(), Some('a'));
    /// assert_eq!(Take::<char>::Busy.first(), None);
    /// ```
    pub fn first(self) -> Option<T> {
        match self {
            Take::Taken { first, .. } => Some(first),
            _ => None,
        }
    }
}

/// Holding the consumer token; dropping it gives the token back, also when a
/// sink panics, so one failed worker cannot wedge the queue.
struct TokenGuard<'a>(&'a AtomicBool);

impl Drop for TokenGuard<'_> {
    fn drop(&mut self) {
        // Release pairs with the Acquire CAS in `take_batch` of the next
        // holder: our pops happen before theirs (token invariant).
        self.0.store(false, Ordering::Release);
    }
}

impl<T> GlobalQueue<T> {
    /// Creates an empty queue.
    ///
    /// ```
    /// let global = stepsched::__internals::GlobalQueue::<u64>::new();
    /// assert!(global.is_empty());
    /// ```
    pub fn new() -> Self {
        GlobalQueue {
            queue: Queue::new(),
            token: CachePadded(AtomicBool::new(false)),
        }
    }

    /// Appends `item`. Callable from any thread; wait-free (it is
    /// [`Queue::push`]).
    ///
    /// ```
    /// let global = stepsched::__internals::GlobalQueue::new();
    /// global.push(1);
    /// assert!(!global.is_empty());
    /// ```
    pub fn push(&self, item: T) {
        self.queue.push(item);
    }

    /// Returns `true` if the queue holds no item; no lock, no token. An item
    /// whose push is mid-link counts as present (see [`Queue::is_empty`]).
    ///
    /// ```
    /// let global = stepsched::__internals::GlobalQueue::<()>::new();
    /// assert!(global.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Takes the oldest item for the caller and hands up to [`BATCH`] more,
    /// in FIFO order, to `sink`. Never waits: if another consumer is taking,
    /// returns [`Take::Busy`].
    ///
    /// If `sink` panics, the token is released, the item given to `sink` is
    /// dropped by the unwind, and the rest stay queued.
    ///
    /// ```
    /// use stepsched::__internals::{GlobalQueue, Take};
    ///
    /// let global = GlobalQueue::new();
    /// (0..3).for_each(|i| global.push(i));
    /// let mut rest = Vec::new();
    /// assert_eq!(global.take_batch(|i| rest.push(i)), Take::Taken { first: 0, moved: 2 });
    /// assert_eq!(rest, [1, 2]);
    /// assert_eq!(global.take_batch(|i| rest.push(i)), Take::Empty);
    /// ```
    pub fn take_batch(&self, sink: impl FnMut(T)) -> Take<T> {
        self.take_up_to(BATCH, sink)
    }

    /// The one take routine: the first item for the caller, up to `limit`
    /// more for `sink`.
    fn take_up_to(&self, limit: usize, mut sink: impl FnMut(T)) -> Take<T> {
        // Look before taking the token: an idle worker polling an empty queue
        // only reads shared lines instead of bouncing the token's line.
        if self.queue.is_empty() {
            return Take::Empty;
        }
        // Acquire pairs with the Release store in `TokenGuard::drop` of the
        // previous holder (token invariant). Failure: Relaxed, we read
        // nothing guarded by the token.
        if self
            .token
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Take::Busy;
        }
        let _token = TokenGuard(&self.token);
        // SAFETY: we hold the token, so no other `pop` overlaps ours (token
        // invariant), and the Acquire CAS orders us after the last holder.
        let first = match unsafe { self.queue.try_pop() } {
            Ok(first) => first,
            Err(TryPopError::Empty) => return Take::Empty,
            Err(TryPopError::Inconsistent) => return Take::Inconsistent,
        };
        let mut moved = 0;
        while moved < limit {
            // SAFETY: as above, we still hold the token.
            match unsafe { self.queue.pop() } {
                Some(item) => {
                    sink(item);
                    moved += 1;
                }
                None => break,
            }
        }
        Take::Taken { first, moved }
    }

    /// Takes the oldest item only. Never waits.
    ///
    /// ```
    /// use stepsched::__internals::{GlobalQueue, Take};
    ///
    /// let global = GlobalQueue::new();
    /// global.push('a');
    /// global.push('b');
    /// assert_eq!(global.take_one(), Take::Taken { first: 'a', moved: 0 });
    /// ```
    pub fn take_one(&self) -> Take<T> {
        // With a limit of 0 the sink is never called.
        self.take_up_to(0, |_| unreachable!("take_one moves nothing"))
    }

    /// [`take_batch`](Self::take_batch) onto a worker's local deque: the
    /// batch is pushed onto `dest` in FIFO order.
    ///
    /// ```
    /// use stepsched::deque::Worker;
    /// use stepsched::__internals::GlobalQueue;
    ///
    /// let global = GlobalQueue::new();
    /// (0..5).for_each(|i| global.push(Box::new(i)));
    /// let local = Worker::new();
    /// let first = global.take_batch_into(&local).first();
    /// assert_eq!(first.map(|b| *b), Some(0));
    /// assert_eq!(local.len(), 4);
    /// ```
    pub fn take_batch_into(&self, dest: &Worker<T>) -> Take<T>
    where
        T: Pointer,
    {
        self.take_batch(|item| dest.push(item))
    }
}

#[cfg(test)]
impl<T> GlobalQueue<T> {
    /// The first half of a push, the claim and the item write, with the
    /// link left to the returned guard: a producer preempted mid-push, for
    /// tests of the mid-link window (docs/ARCHITECTURE.md, trap 4: a push
    /// half done).
    pub(crate) fn push_mid_link(&self, item: T) -> crate::mpsc::MidLink<'_, T> {
        self.queue.push_mid_link(item)
    }
}

impl<T> Default for GlobalQueue<T> {
    fn default() -> Self {
        GlobalQueue::new()
    }
}

impl<T> fmt::Debug for GlobalQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalQueue")
            .field("is_empty", &self.is_empty())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
