//! [`Steal`], the outcome of a steal attempt.

/// The outcome of a steal attempt.
///
/// # Examples
///
/// Thieves usually try several victims and retry only if some victim
/// reported a lost race:
///
/// ```
/// use stepsched::deque::{Steal, Worker};
///
/// let victims: Vec<Worker<Box<u32>>> = (0..3).map(|_| Worker::new()).collect();
/// victims[2].push(Box::new(5));
/// let stealers: Vec<_> = victims.iter().map(|w| w.stealer()).collect();
///
/// let found = loop {
///     let attempt: Steal<Box<u32>> = stealers.iter().map(|s| s.steal()).collect();
///     if !attempt.is_retry() {
///         break attempt.success();
///     }
/// };
/// assert_eq!(found.map(|b| *b), Some(5));
/// ```
///
/// Exhaustive on purpose: a steal finds the deque empty, wins, or loses a
/// race; there is no fourth outcome.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Steal<T> {
    /// The deque was empty at the moment the thief looked.
    Empty,
    /// The thief won this item.
    Success(T),
    /// The thief lost a race with a concurrent operation; trying again may
    /// succeed.
    Retry,
}

impl<T> Steal<T> {
    /// Returns `true` for [`Steal::Empty`].
    pub fn is_empty(&self) -> bool {
        matches!(self, Steal::Empty)
    }

    /// Returns `true` for [`Steal::Success`].
    pub fn is_success(&self) -> bool {
        matches!(self, Steal::Success(_))
    }

    /// Returns `true` for [`Steal::Retry`].
    pub fn is_retry(&self) -> bool {
        matches!(self, Steal::Retry)
    }

    /// Returns the stolen item, if any.
    ///
    /// ```
    /// use stepsched::deque::Steal;
    /// assert_eq!(Steal::Success(3).success(), Some(3));
    /// assert_eq!(Steal::<u8>::Retry.success(), None);
    /// ```
    pub fn success(self) -> Option<T> {
        match self {
            Steal::Success(item) => Some(item),
            _ => None,
        }
    }

    /// Maps a stolen item with `f`, keeping `Empty` and `Retry`.
    ///
    /// ```
    /// use stepsched::deque::Steal;
    /// assert_eq!(Steal::Success(2).map(|x| x * 10), Steal::Success(20));
    /// assert_eq!(Steal::<u8>::Empty.map(|x| x * 10), Steal::Empty);
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Steal<U> {
        match self {
            Steal::Success(item) => Steal::Success(f(item)),
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }

    /// Returns `self` if it is a success, otherwise the result of `f`; a
    /// [`Steal::Retry`] is kept if `f` gives [`Steal::Empty`], so a lost race
    /// is never mistaken for an empty system.
    ///
    /// ```
    /// use stepsched::deque::Steal;
    /// assert_eq!(Steal::Retry.or_else(|| Steal::<u8>::Empty), Steal::Retry);
    /// assert_eq!(Steal::Empty.or_else(|| Steal::Success(1)), Steal::Success(1));
    /// ```
    pub fn or_else(self, f: impl FnOnce() -> Steal<T>) -> Steal<T> {
        match self {
            Steal::Success(_) => self,
            Steal::Empty => f(),
            Steal::Retry => match f() {
                Steal::Empty => Steal::Retry,
                other => other,
            },
        }
    }
}

/// Collects attempts lazily: stops at the first success; otherwise
/// [`Steal::Retry`] if any attempt was a retry, else [`Steal::Empty`].
impl<T> FromIterator<Steal<T>> for Steal<T> {
    fn from_iter<I: IntoIterator<Item = Steal<T>>>(iter: I) -> Self {
        let mut outcome = Steal::Empty;
        for attempt in iter {
            match attempt {
                Steal::Success(_) => return attempt,
                Steal::Retry => outcome = Steal::Retry,
                Steal::Empty => {}
            }
        }
        outcome
    }
}
