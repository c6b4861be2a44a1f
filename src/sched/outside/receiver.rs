//! The [`Receiver`] an outside thread holds, [`Scheduler::mailbox`], and
//! the receiver's first step.

use super::inbox::Inbox;
use super::on_worker::refuse_blocking;
use crate::process::state::{AfterStep, Park, Start};
use crate::process::{Pid, Process};
use crate::sched::core::table::{Occupant, Slot, Task};
#[cfg(doc)]
use crate::sched::error::SendError;
use crate::sched::error::SpawnRefused;
use crate::sched::shared::{phase, Shared};
use crate::sched::Scheduler;
use crate::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::mpsc::{RecvError, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// The receiving end of an outside mailbox, made by
/// [`Scheduler::mailbox`]: its [`pid`](Receiver::pid) is a PID like a
/// process's, so processes (and other threads) send to it with the same
/// `send`; it receives those messages in each sender's order, blocking
/// ([`recv`](Receiver::recv), [`recv_timeout`](Receiver::recv_timeout)),
/// without waiting ([`try_recv`](Receiver::try_recv)) or as a future
/// ([`recv_async`](Receiver::recv_async), with `std::task` wakers only).
///
/// A receiver occupies a process slot (it counts in
/// [`Scheduler::live`], [`Scheduler::processes`] and `max_processes`).
/// Messages reach it as they reach a process, and a worker moves them into
/// the receiver's queue: a hop of tens of nanoseconds once the worker is
/// awake. Dropping it ends it like [`Scheduler::terminate`], and nothing
/// sent to it is lost: what is in its queue or still on its way (in its
/// mailbox, or forwarded after the drop) goes to `on_undelivered`, and
/// later sends are refused with [`SendError::Finished`].
/// Shutdown ends every receiver: `recv` then returns what was forwarded,
/// then [`RecvError`]. `on_complete` is not called for receivers.
///
/// ```
/// use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
/// use stepsched::sched::Scheduler;
///
/// /// Replies to `(from, n)` with `(its pid, 2n)` and ends.
/// struct Doubler;
/// impl Process for Doubler {
///     type Input = ();
///     type Message = (Pid, u64);
///     type Command = NoCommand;
///     type Reply = ();
///     type Output = ();
///     type Error = ();
///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
///         -> Result<(), ()>
///     {
///         if let Some(Event::Message((from, n))) = events.pop() {
///             out.send(from, (out.pid(), 2 * n));
///             out.done(());
///         } else {
///             out.set_status(stepsched::process::Status::Idle);
///         }
///         Ok(())
///     }
/// }
///
/// let scheduler = Scheduler::builder().workers(2).build()?;
/// let inbox = scheduler.mailbox().unwrap();
/// let doubler = scheduler.submit(Doubler, "", ()).unwrap();
/// scheduler.send(doubler, (inbox.pid(), 21)).unwrap();
/// assert_eq!(inbox.recv(), Ok((doubler, 42)));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Receiver<P: Process> {
    pid: Pid,
    inbox: Arc<Inbox<P::Message>>,
    shared: std::sync::Arc<Shared<P>>,
}

impl<P: Process> Receiver<P> {
    /// The PID to send to.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The next message, waiting for one; [`RecvError`] once the receiver
    /// has been closed by shutdown and everything forwarded was received.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread until a message arrives or the receiver is
    /// closed. An async task awaits [`recv_async`](Receiver::recv_async)
    /// instead.
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler (from a process's step, or a
    /// handler registered with [`handler`](crate::sched::Builder::handler)),
    /// even with a message queued: the worker would hold itself while the
    /// processes that would send to it may need that very worker to run, and
    /// a one-worker scheduler would never return. The threads of the blocking
    /// pool ([`blocking_handler`](crate::sched::Builder::blocking_handler))
    /// may call it. A step receives its messages as events.
    pub fn recv(&self) -> Result<P::Message, RecvError> {
        refuse_blocking("Receiver::recv", "await `Receiver::recv_async` instead");
        crate::sched::simulation::refuse_simulated(
            &self.shared,
            "Receiver::recv",
            "drive it (Scheduler::run_until), then Receiver::try_recv",
        );
        let mut state = self.inbox.lock();
        loop {
            if let Some(message) = state.queue.pop_front() {
                return Ok(message);
            }
            if state.closed {
                return Err(RecvError);
            }
            state = self
                .inbox
                .ready
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The next message if one has arrived.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] if none has; [`TryRecvError::Disconnected`]
    /// once closed by shutdown and drained.
    pub fn try_recv(&self) -> Result<P::Message, TryRecvError> {
        let mut state = self.inbox.lock();
        match state.queue.pop_front() {
            Some(message) => Ok(message),
            None if state.closed => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// As [`recv`](Receiver::recv), waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if nothing came in time;
    /// [`RecvTimeoutError::Disconnected`] once closed by shutdown and
    /// drained.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread for at most `timeout`: `Duration::ZERO` looks
    /// once without waiting, and a timeout too large for the clock
    /// (`Duration::MAX`) waits as [`recv`](Receiver::recv) does.
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler, even with `Duration::ZERO`, as
    /// [`recv`](Receiver::recv) does; [`try_recv`](Receiver::try_recv) never
    /// blocks and may be called anywhere.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<P::Message, RecvTimeoutError> {
        refuse_blocking(
            "Receiver::recv_timeout",
            "await `Receiver::recv_async`, or use `Receiver::try_recv`",
        );
        crate::sched::simulation::refuse_simulated(
            &self.shared,
            "Receiver::recv_timeout",
            "drive it (Scheduler::run_until), then Receiver::try_recv",
        );
        let deadline = crate::sched::core::clock::deadline(timeout);
        let mut state = self.inbox.lock();
        loop {
            if let Some(message) = state.queue.pop_front() {
                return Ok(message);
            }
            if state.closed {
                return Err(RecvTimeoutError::Disconnected);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RecvTimeoutError::Timeout);
            }
            state = self
                .inbox
                .ready
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Polls for the next message: `Ready(Ok(..))` with one,
    /// `Ready(Err(RecvError))` once closed and drained, else `Pending` with
    /// the task's waker registered (replacing an earlier poll's).
    pub fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Result<P::Message, RecvError>> {
        let mut state = self.inbox.lock();
        if let Some(message) = state.queue.pop_front() {
            return Poll::Ready(Ok(message));
        }
        if state.closed {
            return Poll::Ready(Err(RecvError));
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// A future of the next message, as [`poll_recv`](Receiver::poll_recv)
    /// polls. Only one task should wait on a receiver at a time: the last
    /// to poll is the one woken.
    pub fn recv_async(&self) -> Recv<'_, P> {
        Recv { receiver: self }
    }
}

impl<P: Process> Drop for Receiver<P> {
    /// Ends the receiver like [`Scheduler::terminate`]. Nothing it was sent
    /// is lost: what is in its queue, what a forward brings after this
    /// (`Inbox::push_all` hands it back) and what its mailbox still holds
    /// when it closes all go to `on_undelivered`.
    fn drop(&mut self) {
        let left = {
            let mut state = self.inbox.lock();
            state.dropped = true;
            core::mem::take(&mut state.queue)
        };
        for message in left {
            self.shared
                .undelivered(self.pid, crate::process::Event::Message(message));
        }
        // An error means it already ended (shutdown), which is what we
        // want.
        let _ = self.shared.terminate(self.pid);
    }
}

impl<P: Process> fmt::Debug for Receiver<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// The future of [`Receiver::recv_async`].
#[must_use = "futures do nothing unless polled"]
pub struct Recv<'a, P: Process> {
    receiver: &'a Receiver<P>,
}

impl<P: Process> Future for Recv<'_, P> {
    type Output = Result<P::Message, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.receiver.poll_recv(cx)
    }
}

impl<P: Process> fmt::Debug for Recv<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("receiver", &self.receiver)
            .finish()
    }
}

impl<P: Process> Scheduler<P> {
    /// A receiver with its own PID, for a thread or task that is not a
    /// process to receive messages (see [`Receiver`]).
    ///
    /// # Errors
    ///
    /// [`SpawnRefused`] if the scheduler is shutting down or at its process
    /// limit (a receiver takes a process slot).
    pub fn mailbox(&self) -> Result<Receiver<P>, SpawnRefused> {
        let (receiver, slot) = self.insert_receiver()?;
        first_step(&self.shared, slot);
        Ok(receiver)
    }

    /// A receiver's slot, inserted (Ready, queued nowhere, not yet
    /// stepped): the first half of [`mailbox`](Scheduler::mailbox).
    fn insert_receiver(&self) -> Result<(Receiver<P>, &Slot<P>), SpawnRefused> {
        let shared = &self.shared;
        if shared.core.phase() != phase::RUNNING {
            return Err(SpawnRefused::ShuttingDown);
        }
        let inbox = Arc::new(Inbox::new());
        let occupant = Occupant::Outside(Arc::clone(&inbox));
        let slot = shared
            .core
            .table
            .insert(occupant, 0, None, shared.core.clock.now())
            .map_err(|_| SpawnRefused::AtCapacity)?;
        // The creator half of the Dekker pair in `phase.rs`, as in
        // `Shared::create`: a shutdown that began meanwhile either is seen
        // here, or sees the receiver Ready and cancels it.
        if !shared.core.phase.admits() {
            shared.withdraw(slot);
            return Err(SpawnRefused::ShuttingDown);
        }
        let receiver = Receiver {
            pid: slot.pid(),
            inbox,
            shared: std::sync::Arc::clone(shared),
        };
        Ok((receiver, slot))
    }
}

/// The first step of a new receiver's slot, made by its creator: the slot
/// is Ready and queued nowhere, so the creator holds it as a worker would.
/// Instead of queueing it for a step that would find nothing to forward,
/// the creator makes that step itself and parks it Idle. If anything
/// reached it since its insert (a sender or a terminate that guessed the
/// PID, shutdown's cancel), the slot is handed to a worker instead, Ready,
/// so that the worker's `start` finds it as every queued process is found:
///
/// - a terminate before `start` (the word then carries `TERMINATE`), or
///   between `start` and the end (`end_step` answers `Close`): only a
///   worker closes a process, so the word goes back to Ready (a `Continue`
///   end, which a terminating process is given) and the worker's `start`
///   sees the terminate and takes the last step;
/// - a message or cancel pushed while the slot was still Ready: its
///   notify wrote the word without setting a bit (nothing to set on a
///   queued process), so `end_step` cannot tell; the mailbox can, and a
///   `Continue` end queues the slot for the worker to forward it.
pub(crate) fn first_step<P: Process>(shared: &Shared<P>, slot: &Slot<P>) {
    let start = slot.state.start();
    debug_assert!(
        !matches!(start, Start::Close),
        "CLOSE is set only on a waiting process"
    );
    // SAFETY: `start` made the slot Running for us: we are its mailbox's
    // only consumer until `end_step`, as a worker is for its step.
    let empty = unsafe { slot.events.is_empty() };
    let park = if empty { Park::Idle } else { Park::Continue };
    let requeue = match slot.state.end_step(park) {
        AfterStep::Parked => false,
        AfterStep::Requeue => true,
        // Still Running (a terminate came): a `Continue` end of a
        // terminating process always requeues it.
        AfterStep::Close => {
            let again = slot.state.end_step(Park::Continue);
            debug_assert_eq!(again, AfterStep::Requeue);
            true
        }
    };
    if requeue {
        shared.core.schedule_remote(Task::new(slot));
    }
}

#[cfg(test)]
mod tests;
