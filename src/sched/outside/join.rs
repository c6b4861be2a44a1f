//! Waiting for processes from outside: [`JoinHandle`] for one (blocking,
//! with a timeout, or as a [`Future`]), [`JoinSet`] for many.
//!
//! The worker that closes a process hands its outcome to the process's
//! *joiner*, if it has one: a [`JoinHandle`]'s cell, or a [`JoinSet`]'s
//! queue. Both are a mutex and a condition variable, plus the
//! [`Waker`] of a task that polled them: a process ends once, so the
//! mutex is taken once by the worker and once by the waiter, and the cost
//! does not grow with the number of processes (a set of 100k is one queue).
//! Wakers are only `std::task`'s: no runtime is assumed.

use super::on_worker::refuse_blocking;
use crate::process::{Outcome, Pid, Process};
use crate::sched::simulation::drive::{Drive, Limit, Stopped};
use crate::sync::{Arc, Condvar, Mutex};
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Wakes `waker` on a worker, containing a panic: a waker is the
/// embedder's executor code, and a panic in it must not take the worker
/// (and every process it holds) down. The task is then simply not woken
/// by us; the outcome stays for its next poll.
pub(crate) fn wake_contained(waker: Waker) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()));
}

/// A [`JoinHandle`]'s outcome and the waker of a task polling it.
pub(crate) struct JoinCell<P: Process> {
    state: Mutex<CellState<P>>,
    ready: Condvar,
}

struct CellState<P: Process> {
    outcome: Option<Outcome<P>>,
    /// Set once the outcome was taken (by a join or a poll).
    taken: bool,
    waker: Option<Waker>,
}

impl<P: Process> JoinCell<P> {
    pub(crate) fn new() -> Self {
        JoinCell {
            state: Mutex::new(CellState {
                outcome: None,
                taken: false,
                waker: None,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, CellState<P>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set(&self, outcome: Outcome<P>) {
        let waker = {
            let mut state = self.lock();
            state.outcome = Some(outcome);
            state.waker.take()
        };
        self.ready.notify_all();
        // Woken after the lock is released: the task may run at once.
        if let Some(waker) = waker {
            wake_contained(waker);
        }
    }
}

/// Waits for the outcome of one process, from any thread.
///
/// Made by [`Scheduler::submit_joinable`](crate::sched::Scheduler::submit_joinable).
/// Dropping it does not affect the process.
///
/// It is also a [`Future`] of the outcome, for async code: polling it
/// registers the task's [`Waker`], which the worker that closes the process
/// wakes. No runtime is needed beyond an executor of `std` futures.
///
/// ```
/// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
/// # struct Job;
/// # impl Process for Job {
/// #     type Input = (); type Message = (); type Command = NoCommand;
/// #     type Reply = (); type Output = u32; type Error = ();
/// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
/// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
/// #         out.done(7); Ok(())
/// #     }
/// # }
/// use std::future::Future;
/// use std::pin::pin;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Wake};
/// use stepsched::sched::Scheduler;
///
/// /// Unparks the thread that polls.
/// struct Unpark(std::thread::Thread);
/// impl Wake for Unpark {
///     fn wake(self: Arc<Self>) { self.0.unpark() }
/// }
///
/// let scheduler = Scheduler::builder().workers(1).build()?;
/// let handle = scheduler.submit_joinable(Job, "", ()).unwrap();
/// let waker = Arc::new(Unpark(std::thread::current())).into();
/// let mut future = pin!(handle);
/// let outcome = loop {
///     match future.as_mut().poll(&mut Context::from_waker(&waker)) {
///         Poll::Ready(outcome) => break outcome,
///         Poll::Pending => std::thread::park(),
///     }
/// };
/// assert_eq!(outcome, Ok(7));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct JoinHandle<P: Process> {
    pid: Pid,
    cell: Arc<JoinCell<P>>,
    /// A simulation's driver, which the joins drive (`simulation/`).
    driver: Option<Arc<dyn Drive>>,
}

impl<P: Process> JoinHandle<P> {
    pub(crate) fn new(pid: Pid, cell: Arc<JoinCell<P>>) -> Self {
        JoinHandle {
            pid,
            cell,
            driver: None,
        }
    }

    /// A handle whose joins drive this simulation (if any) until its
    /// process ends.
    pub(crate) fn driven_by(mut self, driver: Option<Arc<dyn Drive>>) -> Self {
        self.driver = driver;
        self
    }

    /// Under a simulation: drives it until the process ends or `until`
    /// (virtual nanoseconds). A process that can no longer end (nothing can
    /// run, no timer is pending) would make a join wait for ever: that
    /// panics, naming the seed and the step.
    fn drive(&self, what: &str, until: u64) {
        let Some(driver) = &self.driver else {
            return;
        };
        let limit = Limit {
            until,
            ..Limit::NONE
        };
        let run = driver.drive(what, limit, &mut || self.is_finished());
        if run.stopped == Stopped::Idle && !self.is_finished() && until == u64::MAX {
            panic!(
                "stepsched: {what} of {} on a simulated scheduler (seed {}) would wait for \
                 ever: at step {}, no process can run and no timer is pending",
                self.pid,
                driver.seed(),
                driver.steps()
            );
        }
    }

    /// The process's PID.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Whether the process has ended.
    pub fn is_finished(&self) -> bool {
        let state = self.cell.lock();
        state.outcome.is_some() || state.taken
    }

    /// Blocks until the process ends and returns its outcome.
    ///
    /// # Panics
    ///
    /// If the outcome was already taken by polling the handle as a future.
    ///
    /// On a worker thread of any scheduler (from a process's step, or a
    /// handler registered with [`handler`](crate::sched::Builder::handler)),
    /// even if the process has ended: the worker would hold itself while the
    /// process it waits for may need that very worker to run, and a
    /// one-worker scheduler would never return. The threads of the blocking
    /// pool ([`blocking_handler`](crate::sched::Builder::blocking_handler))
    /// may call it. A process waits for another with a monitor
    /// ([`StepOutput::monitor`](crate::process::StepOutput::monitor)); an
    /// async task awaits the handle instead.
    ///
    /// On a [simulated](crate::sched::Builder::simulation) scheduler, if the
    /// process can no longer end (no process can run, no timer is
    /// pending: it waits for something only the outside can send), with
    /// the seed and step in the message, instead of waiting for ever.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread until the process ends. On a simulated
    /// scheduler, drives the simulation on this thread until then.
    pub fn join(self) -> Outcome<P> {
        refuse_blocking("JoinHandle::join", "await the handle instead");
        self.drive("JoinHandle::join", u64::MAX);
        let mut state = self.cell.lock();
        loop {
            if let Some(outcome) = take(&mut state) {
                return outcome;
            }
            state = self
                .cell
                .ready
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks for at most `timeout`; gives the handle back if the process is
    /// still running then.
    ///
    /// # Errors
    ///
    /// `Err(self)` if the process did not end within `timeout`.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread for at most `timeout`: `Duration::ZERO` looks
    /// once without waiting, and a timeout too large for the clock
    /// (`Duration::MAX`) waits as [`join`](JoinHandle::join) does. On a
    /// simulated scheduler, drives the simulation for at most `timeout` of
    /// virtual time (returning at once if it goes idle first).
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler, even with `Duration::ZERO`, as
    /// [`join`](JoinHandle::join) does ([`is_finished`](JoinHandle::is_finished)
    /// never blocks).
    pub fn join_timeout(self, timeout: Duration) -> Result<Outcome<P>, Self> {
        refuse_blocking("JoinHandle::join_timeout", "await the handle instead");
        if let Some(driver) = &self.driver {
            let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
            let until = driver.now().saturating_add(nanos).min(u64::MAX - 1);
            self.drive("JoinHandle::join_timeout", until);
            let mut state = self.cell.lock();
            return match take(&mut state) {
                Some(outcome) => Ok(outcome),
                None => {
                    drop(state);
                    Err(self)
                }
            };
        }
        let deadline = crate::sched::core::clock::deadline(timeout);
        {
            let mut state = self.cell.lock();
            loop {
                if let Some(outcome) = take(&mut state) {
                    return Ok(outcome);
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = self
                    .cell
                    .ready
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        Err(self)
    }
}

/// The outcome, if the process has ended; marks it taken.
fn take<P: Process>(state: &mut CellState<P>) -> Option<Outcome<P>> {
    assert!(
        !state.taken,
        "stepsched: a JoinHandle's outcome taken twice"
    );
    let outcome = state.outcome.take();
    state.taken = outcome.is_some();
    outcome
}

impl<P: Process> Future for JoinHandle<P> {
    type Output = Outcome<P>;

    /// Ready with the outcome once the process has ended; else registers
    /// the task's waker (replacing the one of an earlier poll).
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<P>> {
        let mut state = self.cell.lock();
        if let Some(outcome) = take(&mut state) {
            return Poll::Ready(outcome);
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<P: Process> fmt::Debug for JoinHandle<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("pid", &self.pid)
            .field("finished", &self.is_finished())
            .finish()
    }
}
