//! [`Producer`]: a pushing handle for one thread.

use core::fmt;

use super::Queue;

/// A handle for one thread that pushes into a [`Queue`].
///
/// It pushes exactly as [`Queue::push`] does: a `Queue` carves its nodes
/// out of shared blocks (`block.rs`), so a plain push already avoids the
/// allocator and touches no state but the producers' own cache line, and
/// a handle has nothing more to save. It is the place a per-thread
/// optimisation would go. Items pushed through any mix
/// of handles and `Queue::push` keep each thread's order.
///
/// # Examples
///
/// ```
/// use stepsched::mpsc::Queue;
///
/// let q = Queue::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut tx = q.producer();
///         (0..1000).for_each(|i| tx.push(i));
///     });
/// });
/// // SAFETY: this thread is the only consumer.
/// let got: Vec<i32> = std::iter::from_fn(|| unsafe { q.pop() }).collect();
/// assert_eq!(got, (0..1000).collect::<Vec<_>>());
/// ```
pub struct Producer<'q, T> {
    queue: &'q Queue<T>,
}

impl<T> Queue<T> {
    /// Returns a pushing handle for the calling thread. Any number may exist
    /// at once, next to plain [`Queue::push`] calls.
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::new();
    /// let mut tx = q.producer();
    /// tx.push("hi");
    /// assert!(!q.is_empty());
    /// ```
    pub fn producer(&self) -> Producer<'_, T> {
        Producer { queue: self }
    }
}

impl<T> Producer<'_, T> {
    /// Appends `item` to the queue; wait-free, as [`Queue::push`].
    ///
    /// ```
    /// let q = stepsched::mpsc::Queue::new();
    /// let mut tx = q.producer();
    /// tx.push(1);
    /// tx.push(2);
    /// // SAFETY: this thread is the only consumer.
    /// assert_eq!(unsafe { q.pop() }, Some(1));
    /// ```
    #[inline]
    pub fn push(&mut self, item: T) {
        self.queue.push(item);
    }
}

impl<T> fmt::Debug for Producer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}
