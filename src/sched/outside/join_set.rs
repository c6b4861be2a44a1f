//! [`JoinSet`]: waiting for many processes' outcomes as they end, and the
//! [`Joiner`] a closing worker hands an outcome to (a handle's or a set's).

use super::join::{wake_contained, JoinCell};
use super::on_worker::refuse_blocking;
use crate::process::{Outcome, Pid, Process};
use crate::sync::{Arc, Condvar, Mutex};
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Where the worker that closes a process leaves its outcome.
pub(crate) enum Joiner<P: Process> {
    /// A [`JoinHandle`](crate::sched::JoinHandle)'s.
    One(Arc<JoinCell<P>>),
    /// A [`JoinSet`]'s.
    Set(Arc<SetCell<P>>),
}

impl<P: Process> Joiner<P> {
    /// Hands over the outcome of `pid` and wakes whoever waits for it.
    pub(crate) fn set(self, pid: Pid, outcome: Outcome<P>) {
        match self {
            Joiner::One(cell) => cell.set(outcome),
            Joiner::Set(set) => set.push(pid, outcome),
        }
    }
}

/// A [`JoinSet`]'s queue of outcomes.
pub(crate) struct SetCell<P: Process> {
    state: Mutex<SetState<P>>,
    ready: Condvar,
}

struct SetState<P: Process> {
    ended: VecDeque<(Pid, Outcome<P>)>,
    waker: Option<Waker>,
    /// The [`JoinSet`] was dropped: outcomes are dropped as they come.
    dropped: bool,
}

impl<P: Process> SetCell<P> {
    fn lock(&self) -> crate::sync::MutexGuard<'_, SetState<P>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, pid: Pid, outcome: Outcome<P>) {
        let waker = {
            let mut state = self.lock();
            if state.dropped {
                drop(state);
                drop(outcome); // outside the lock: it may run user code
                return;
            }
            state.ended.push_back((pid, outcome));
            state.waker.take()
        };
        self.ready.notify_one();
        if let Some(waker) = waker {
            wake_contained(waker);
        }
    }
}

/// Waits for many processes at once: the outcomes of the processes
/// submitted into it ([`Scheduler::submit_into`](crate::sched::Scheduler::submit_into)),
/// in the order they end.
///
/// One queue serves the whole set, so waiting for 100k processes costs what
/// waiting for one does, per process: the closing worker pushes the
/// outcome and wakes the waiter (a task awaiting
/// [`join_next`](JoinSet::join_next), or a thread blocked in
/// [`blocking_join_next`](JoinSet::blocking_join_next)). Dropping the set does not affect its
/// processes; their outcomes are then dropped as they end.
///
/// ```
/// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
/// # struct Job(u32);
/// # impl Process for Job {
/// #     type Input = (); type Message = (); type Command = NoCommand;
/// #     type Reply = (); type Output = u32; type Error = ();
/// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
/// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
/// #         out.done(self.0); Ok(())
/// #     }
/// # }
/// use stepsched::sched::{JoinSet, Scheduler};
///
/// let scheduler = Scheduler::builder().workers(2).build()?;
/// let mut set = JoinSet::new();
/// for i in 0..1000 {
///     scheduler.submit_into(&mut set, Job(i), "", ()).unwrap();
/// }
/// let mut sum = 0;
/// // In an async fn: `while let Some((_pid, outcome)) = set.join_next().await`.
/// while let Some((_pid, outcome)) = set.blocking_join_next() {
///     sum += outcome.unwrap();
/// }
/// assert_eq!(sum, 999 * 1000 / 2);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinSet<P: Process> {
    cell: Arc<SetCell<P>>,
    /// Processes submitted into the set whose outcome was not taken yet.
    pending: usize,
}

impl<P: Process> JoinSet<P> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet {
            cell: Arc::new(SetCell {
                state: Mutex::new(SetState {
                    ended: VecDeque::new(),
                    waker: None,
                    dropped: false,
                }),
                ready: Condvar::new(),
            }),
            pending: 0,
        }
    }

    /// The joiner for one more process of the set.
    pub(crate) fn add(&mut self) -> Joiner<P> {
        self.pending += 1;
        Joiner::Set(Arc::clone(&self.cell))
    }

    /// Gives back the place `add` took, for a process that was refused.
    pub(crate) fn cancel_add(&mut self) {
        self.pending -= 1;
    }

    /// Processes submitted into the set whose outcome has not been taken.
    pub fn len(&self) -> usize {
        self.pending
    }

    /// Whether every outcome has been taken (or none was submitted).
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    fn taken(&mut self, next: Option<(Pid, Outcome<P>)>) -> Option<(Pid, Outcome<P>)> {
        if next.is_some() {
            self.pending -= 1;
        }
        next
    }

    /// The next process to end and its outcome, without waiting: `None` if
    /// none has ended since the last one taken.
    pub fn try_join_next(&mut self) -> Option<(Pid, Outcome<P>)> {
        let next = self.cell.lock().ended.pop_front();
        self.taken(next)
    }

    /// Blocks until a process of the set ends and returns it with its
    /// outcome; `None` at once if the set is empty.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread until a process of the set ends (not when the
    /// set is empty). An async task awaits [`join_next`](JoinSet::join_next)
    /// instead.
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler (from a process's step, or a
    /// handler registered with [`handler`](crate::sched::Builder::handler)),
    /// even on an empty set: the worker would hold itself while the
    /// processes it waits for may need that very worker to run, and a
    /// one-worker scheduler would never return. The threads of the blocking
    /// pool ([`blocking_handler`](crate::sched::Builder::blocking_handler))
    /// may call it; [`try_join_next`](JoinSet::try_join_next) never blocks.
    pub fn blocking_join_next(&mut self) -> Option<(Pid, Outcome<P>)> {
        refuse_blocking(
            "JoinSet::blocking_join_next",
            "await `JoinSet::join_next` instead",
        );
        if self.pending == 0 {
            return None;
        }
        let next = {
            let mut state = self.cell.lock();
            loop {
                if let Some(next) = state.ended.pop_front() {
                    break next;
                }
                state = self
                    .cell
                    .ready
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
        };
        self.taken(Some(next))
    }

    /// As [`blocking_join_next`](JoinSet::blocking_join_next), waiting at most `timeout`:
    /// `None` if the set is empty or no process ended in time (tell them
    /// apart with [`is_empty`](JoinSet::is_empty)).
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread for at most `timeout`: `Duration::ZERO` looks
    /// once without waiting, and a timeout too large for the clock
    /// (`Duration::MAX`) waits as
    /// [`blocking_join_next`](JoinSet::blocking_join_next) does.
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler, even with `Duration::ZERO`, as
    /// [`blocking_join_next`](JoinSet::blocking_join_next) does.
    pub fn blocking_join_next_timeout(&mut self, timeout: Duration) -> Option<(Pid, Outcome<P>)> {
        refuse_blocking(
            "JoinSet::blocking_join_next_timeout",
            "await `JoinSet::join_next`, or use `JoinSet::try_join_next`",
        );
        if self.pending == 0 {
            return None;
        }
        let deadline = crate::sched::core::clock::deadline(timeout);
        let next = {
            let mut state = self.cell.lock();
            loop {
                if let Some(next) = state.ended.pop_front() {
                    break Some(next);
                }
                let now = Instant::now();
                if now >= deadline {
                    break None;
                }
                state = self
                    .cell
                    .ready
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        };
        self.taken(next)
    }

    /// Polls for the next process to end: `Ready(None)` if the set is
    /// empty, `Ready(Some(..))` with one that ended, else `Pending`, with
    /// the task's waker registered (replacing an earlier poll's).
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<(Pid, Outcome<P>)>> {
        if self.pending == 0 {
            return Poll::Ready(None);
        }
        let next = {
            let mut state = self.cell.lock();
            match state.ended.pop_front() {
                Some(next) => next,
                None => {
                    match &state.waker {
                        Some(waker) if waker.will_wake(cx.waker()) => {}
                        _ => state.waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
        };
        Poll::Ready(self.taken(Some(next)))
    }

    /// The next process to end and its outcome, as a future (tokio's
    /// `JoinSet::join_next().await`), as
    /// [`poll_join_next`](JoinSet::poll_join_next) polls: `None` at once if
    /// the set is empty. Outcomes come in the order the processes ended.
    /// Dropping the future takes nothing: an outcome that came meanwhile
    /// stays in the set for the next call.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job(u32);
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = u32; type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(self.0); Ok(())
    /// #     }
    /// # }
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake};
    /// use stepsched::sched::{JoinSet, Scheduler};
    ///
    /// /// Unparks the thread that polls (any executor does).
    /// struct Unpark(std::thread::Thread);
    /// impl Wake for Unpark {
    ///     fn wake(self: Arc<Self>) { self.0.unpark() }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(2).build()?;
    /// let mut set = JoinSet::new();
    /// scheduler.submit_into(&mut set, Job(7), "", ()).unwrap();
    /// let waker = Arc::new(Unpark(std::thread::current())).into();
    /// // In an async fn: `set.join_next().await`.
    /// let mut next = pin!(set.join_next());
    /// let next = loop {
    ///     match next.as_mut().poll(&mut Context::from_waker(&waker)) {
    ///         Poll::Ready(next) => break next,
    ///         Poll::Pending => std::thread::park(),
    ///     }
    /// };
    /// assert_eq!(next.map(|(_, outcome)| outcome), Some(Ok(7)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn join_next(&mut self) -> JoinNext<'_, P> {
        JoinNext { set: self }
    }
}

impl<P: Process> Drop for JoinSet<P> {
    /// The outcomes already in the set are dropped now, and each later one
    /// as its process ends: nothing is kept for a set nobody can read.
    fn drop(&mut self) {
        let ended = {
            let mut state = self.cell.lock();
            state.dropped = true;
            core::mem::take(&mut state.ended)
        };
        drop(ended); // outside the lock: it may run user code
    }
}

impl<P: Process> Default for JoinSet<P> {
    fn default() -> Self {
        JoinSet::new()
    }
}

impl<P: Process> fmt::Debug for JoinSet<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet")
            .field("len", &self.pending)
            .finish_non_exhaustive()
    }
}

/// The future of [`JoinSet::join_next`].
#[must_use = "futures do nothing unless polled"]
pub struct JoinNext<'a, P: Process> {
    set: &'a mut JoinSet<P>,
}

impl<P: Process> Future for JoinNext<'_, P> {
    type Output = Option<(Pid, Outcome<P>)>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.set.poll_join_next(cx)
    }
}

impl<P: Process> fmt::Debug for JoinNext<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinNext").field("set", &self.set).finish()
    }
}
