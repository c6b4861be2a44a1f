//! [`TryPopError`]: why [`Queue::try_pop`](super::Queue::try_pop) returned no item.

use core::fmt;

/// Why [`Queue::try_pop`](super::Queue::try_pop) returned no item.
///
/// # Inconsistent states
///
/// A push is two steps: the producer swaps its node in as the newest, then
/// links the previous newest node to it. Between the two the queue is
/// *inconsistent*: it holds an item the consumer cannot reach yet
/// (docs/ARCHITECTURE.md, trap 4: a push half done). The consumer cannot help
/// the producer finish, so `try_pop`
/// reports [`TryPopError::Inconsistent`] instead of waiting; the item becomes
/// reachable as soon as that producer runs again. Callers that want the item
/// retry later; a scheduler must not treat this state as idle.
///
/// # Examples
///
/// ```
/// use stepsched::mpsc::{Queue, TryPopError};
///
/// let q = Queue::<u8>::new();
/// // SAFETY: this thread is the only consumer.
/// assert_eq!(unsafe { q.try_pop() }, Err(TryPopError::Empty));
/// assert!(TryPopError::Empty.is_empty());
/// assert!(TryPopError::Inconsistent.is_inconsistent());
/// ```
///
/// Exhaustive on purpose: a Vyukov queue that yields no item is either empty
/// or between a producer's swap and its link; there is no third way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryPopError {
    /// No item was pushed that has not been popped, and no push had swapped
    /// its node in when the consumer looked.
    Empty,
    /// A producer has swapped its node in but not linked it yet: the queue is
    /// not empty, but its next item cannot be reached until that producer
    /// runs again. See [Inconsistent states](#inconsistent-states).
    Inconsistent,
}

impl TryPopError {
    /// Returns `true` for [`TryPopError::Empty`].
    ///
    /// ```
    /// assert!(stepsched::mpsc::TryPopError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryPopError::Empty)
    }

    /// Returns `true` for [`TryPopError::Inconsistent`].
    ///
    /// ```
    /// assert!(stepsched::mpsc::TryPopError::Inconsistent.is_inconsistent());
    /// ```
    pub fn is_inconsistent(&self) -> bool {
        matches!(self, TryPopError::Inconsistent)
    }
}

impl fmt::Display for TryPopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryPopError::Empty => f.write_str("queue is empty"),
            TryPopError::Inconsistent => {
                f.write_str("queue is inconsistent: a push is between its swap and its link")
            }
        }
    }
}

impl std::error::Error for TryPopError {}
