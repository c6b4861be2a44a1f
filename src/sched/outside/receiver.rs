//! The [`Receiver`] an outside thread holds, [`Scheduler::mailbox`] and
//! [`Scheduler::call`], and the receiver's first step.

use super::inbox::Inbox;
use crate::process::state::{AfterStep, Park, Start};
use crate::process::{Pid, Process};
use crate::sched::core::table::{Occupant, Slot, Task};
use crate::sched::error::{SendError, SpawnRefused};
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
    /// closed. Call it from a thread that is not one of the scheduler's
    /// workers. From a process's step, or from a handler registered with
    /// [`handler`](crate::sched::Builder::handler) (which runs on the worker), it
    /// holds that worker while it waits, and the processes that would send to
    /// it may need that very worker to run: on a one-worker scheduler it never
    /// returns. An async task awaits [`recv_async`](Receiver::recv_async)
    /// instead.
    pub fn recv(&self) -> Result<P::Message, RecvError> {
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
    /// (`Duration::MAX`) waits as [`recv`](Receiver::recv) does. Call it from a
    /// thread that is not one of the scheduler's workers. From a process's
    /// step, or from a handler registered with
    /// [`handler`](crate::sched::Builder::handler) (which runs on the worker), it
    /// holds that worker while it waits, and the processes that would send to
    /// it may need that very worker to run: on a one-worker scheduler it always
    /// waits out its timeout.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<P::Message, RecvTimeoutError> {
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

/// Why [`Scheduler::call`] has no reply.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError<M> {
    /// No receiver could be made for the reply (the scheduler is shutting
    /// down or at its process limit).
    Refused(SpawnRefused),
    /// The request was refused; it is handed back.
    Send(SendError<M>),
    /// No reply came within the timeout. A reply that comes later is
    /// reported through `on_undelivered`.
    TimedOut,
    /// The scheduler shut down before a reply came.
    ShutDown,
}

impl<M> fmt::Debug for CallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Refused(why) => f.debug_tuple("Refused").field(why).finish(),
            CallError::Send(error) => f.debug_tuple("Send").field(error).finish(),
            CallError::TimedOut => f.write_str("TimedOut"),
            CallError::ShutDown => f.write_str("ShutDown"),
        }
    }
}

impl<M> fmt::Display for CallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Refused(why) => write!(f, "no receiver for the reply: {why}"),
            CallError::Send(error) => write!(f, "request not sent: {error}"),
            CallError::TimedOut => f.write_str("no reply within the timeout"),
            CallError::ShutDown => f.write_str("the scheduler shut down before the reply"),
        }
    }
}

impl<M> std::error::Error for CallError<M> {}

impl<P: Process> Scheduler<P> {
    /// [`send`](Scheduler::send), waiting at most `timeout` for room if the
    /// process's mailbox is bounded and full
    /// ([`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity)):
    /// the thread parks until a drain of a full mailbox makes room (no
    /// spinning), then tries again.
    ///
    /// # Errors
    ///
    /// As [`send`](Scheduler::send), the message handed back;
    /// [`SendError::Full`] if there was no room within `timeout`.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread for at most `timeout` while the mailbox is
    /// full (not at all if there is room): `Duration::ZERO` tries once, as
    /// [`send`](Scheduler::send), and a timeout too large for the clock
    /// (`Duration::MAX`) waits until there is room or the process ends. Call it
    /// from a thread that is not one of the scheduler's workers. From a
    /// process's step, or from a handler registered with
    /// [`handler`](crate::sched::Builder::handler) (which runs on the worker), it
    /// holds that worker while it waits, and the step that drains the full
    /// mailbox may need that very worker to run: on a one-worker scheduler it
    /// always waits out its timeout. A step sends with
    /// [`StepOutput::send`](crate::process::StepOutput::send), which never
    /// blocks: a message refused by a full mailbox comes back to it as
    /// [`Event::Refused`](crate::process::Event::Refused).
    pub fn send_timeout(
        &self,
        to: Pid,
        message: P::Message,
        timeout: Duration,
    ) -> Result<(), SendError<P::Message>> {
        let message = match self.send(to, message) {
            Err(SendError::Full(message)) => message,
            done => return done,
        };
        let mut message = Some(message);
        let deadline = crate::sched::core::clock::deadline(timeout);
        let sent = self.shared.room.wait(deadline, || {
            // Before the reservation: the waiter's half of the meeting
            // with the holder that releases places (`bound.rs`, `Room`).
            // A stale PID touches a word it cannot change.
            if let Some(slot) = self.shared.core.table.get(to.index()) {
                slot.state.touch();
            }
            let m = message.take().expect("taken only by a failed attempt");
            match self.send(to, m) {
                Err(SendError::Full(m)) => {
                    message = Some(m);
                    None
                }
                done => Some(done),
            }
        });
        sent.unwrap_or_else(|| {
            Err(SendError::Full(
                message.expect("a timed-out wait leaves the message"),
            ))
        })
    }

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

    /// Sends the request that `request` makes of a fresh receiver's PID to
    /// `to`, and waits at most `timeout` for the first message sent back to
    /// that PID: a request and its reply, from a thread that is not a
    /// process. `to` replies with a plain `send` to the PID in the request.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput, Status};
    /// # struct Doubler;
    /// # impl Process for Doubler {
    /// #     type Input = (); type Message = (Pid, u64); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         for e in events.drain(..) { if let Event::Message((from, n)) = e { out.send(from, (out.pid(), 2 * n)); } }
    /// #         out.set_status(Status::Idle); Ok(())
    /// #     }
    /// # }
    /// use std::time::Duration;
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::builder().workers(2).build()?;
    /// let doubler = scheduler.submit(Doubler, "", ()).unwrap();
    /// let reply = scheduler.call(doubler, |me| (me, 21), Duration::from_secs(5));
    /// assert_eq!(reply, Ok((doubler, 42)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// See [`CallError`]: the request handed back if it was refused, or
    /// no reply in time.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread until the reply comes or `timeout` has passed
    /// (`Duration::ZERO` takes only a reply that has already come, and so
    /// almost always times out; a timeout too large for the clock,
    /// `Duration::MAX`, waits until the reply or shutdown). Call it from a
    /// thread that is not one of the scheduler's workers. From a process's
    /// step, or from a handler registered with
    /// [`handler`](crate::sched::Builder::handler) (which runs on the worker), it
    /// holds that worker while it waits, and the process that replies may need
    /// that very worker to run: on a one-worker scheduler it always waits out
    /// its timeout. A process asks another with
    /// [`StepOutput::send`](crate::process::StepOutput::send) and takes the
    /// reply as a message.
    pub fn call(
        &self,
        to: Pid,
        request: impl FnOnce(Pid) -> P::Message,
        timeout: Duration,
    ) -> Result<P::Message, CallError<P::Message>> {
        let receiver = self.mailbox().map_err(CallError::Refused)?;
        self.send(to, request(receiver.pid()))
            .map_err(CallError::Send)?;
        receiver.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => CallError::TimedOut,
            RecvTimeoutError::Disconnected => CallError::ShutDown,
        })
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
