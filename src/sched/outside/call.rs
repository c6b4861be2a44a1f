//! A request and its reply from outside the scheduler: [`Scheduler::call`]
//! (a future) and [`Scheduler::blocking_call`], over a fresh [`Receiver`].

use super::on_worker::refuse_blocking;
use super::receiver::Receiver;
use crate::process::{Pid, Process};
use crate::sched::error::{SendError, SpawnRefused};
use crate::sched::Scheduler;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// Why [`Scheduler::call`] or [`Scheduler::blocking_call`] has no reply.
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
    /// No reply came within the timeout ([`Scheduler::blocking_call`]). A
    /// reply that comes later is reported through `on_undelivered`.
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
    /// let reply = scheduler.blocking_call(doubler, |me| (me, 21), Duration::from_secs(5));
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
    /// `Duration::MAX`, waits until the reply or shutdown). An async task
    /// awaits [`call`](Scheduler::call) instead. A process asks another with
    /// [`StepOutput::send`](crate::process::StepOutput::send) and takes the
    /// reply as a message.
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler (from a process's step, or a
    /// handler registered with [`handler`](crate::sched::Builder::handler)),
    /// before it sends anything: the worker would hold itself while the
    /// process that replies may need it, and a one-worker scheduler would
    /// never answer (see [`Receiver::recv`]). The threads of the blocking
    /// pool ([`blocking_handler`](crate::sched::Builder::blocking_handler))
    /// may call it.
    pub fn blocking_call(
        &self,
        to: Pid,
        request: impl FnOnce(Pid) -> P::Message,
        timeout: Duration,
    ) -> Result<P::Message, CallError<P::Message>> {
        refuse_blocking(
            "Scheduler::blocking_call",
            "await `Scheduler::call` instead",
        );
        crate::sched::simulation::refuse_simulated(
            &self.shared,
            "Scheduler::blocking_call",
            "send with a mailbox, drive it, then Receiver::try_recv",
        );
        let receiver = self.mailbox().map_err(CallError::Refused)?;
        self.send(to, request(receiver.pid()))
            .map_err(CallError::Send)?;
        receiver.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => CallError::TimedOut,
            RecvTimeoutError::Disconnected => CallError::ShutDown,
        })
    }

    /// Sends the request that `request` makes of a fresh receiver's PID to
    /// `to`, and completes with the first message sent back to that PID: the
    /// future of [`blocking_call`](Scheduler::blocking_call), for a task.
    /// `to` replies with a plain `send` to the PID in the request.
    ///
    /// Nothing happens until the future is first polled: then it takes a
    /// receiver (a process slot) and sends the request. Its waker is a
    /// `std::task` one; no runtime is assumed, and there is no timeout of
    /// its own: wrap it in the runtime's (`tokio::time::timeout`). Dropping
    /// it before the reply ends its receiver, which frees the slot; a reply
    /// that comes after goes to `on_undelivered`
    /// ([`Builder::on_undelivered`](crate::sched::Builder::on_undelivered)).
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
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Unparks the thread that polls (any executor does).
    /// struct Unpark(std::thread::Thread);
    /// impl Wake for Unpark {
    ///     fn wake(self: Arc<Self>) { self.0.unpark() }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(2).build()?;
    /// let doubler = scheduler.submit(Doubler, "", ()).unwrap();
    /// let waker = Arc::new(Unpark(std::thread::current())).into();
    /// // In an async fn: `scheduler.call(doubler, |me| (me, 21)).await`.
    /// let mut call = pin!(scheduler.call(doubler, |me| (me, 21)));
    /// let reply = loop {
    ///     match call.as_mut().poll(&mut Context::from_waker(&waker)) {
    ///         Poll::Ready(reply) => break reply,
    ///         Poll::Pending => std::thread::park(),
    ///     }
    /// };
    /// assert_eq!(reply, Ok((doubler, 42)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// See [`CallError`]: [`Refused`](CallError::Refused) if no receiver
    /// could be made, [`Send`](CallError::Send) with the request handed back
    /// if it was refused, [`ShutDown`](CallError::ShutDown) if the scheduler
    /// shut down before the reply; never [`TimedOut`](CallError::TimedOut).
    ///
    /// # Panics
    ///
    /// The future panics if it is polled again after it completed, and
    /// passes on a panic of `request`. It never blocks, so it may be polled
    /// anywhere, a worker thread included.
    pub fn call<F>(&self, to: Pid, request: F) -> Call<'_, P, F>
    where
        F: FnOnce(Pid) -> P::Message,
    {
        Call {
            scheduler: self,
            to,
            request: Some(request),
            receiver: None,
        }
    }
}

/// The future of [`Scheduler::call`]: the reply, or why there is none.
///
/// Dropping it before the reply ends its receiver (its slot is freed; a
/// later reply goes to `on_undelivered`).
#[must_use = "futures do nothing unless polled: the request is sent on the first poll"]
pub struct Call<'a, P: Process, F> {
    scheduler: &'a Scheduler<P>,
    to: Pid,
    /// Until the first poll.
    request: Option<F>,
    /// From the first poll until the reply.
    receiver: Option<Receiver<P>>,
}

// Neither the request nor the receiver is ever pinned: the future only
// moves them out of their options.
impl<P: Process, F> Unpin for Call<'_, P, F> {}

impl<P: Process, F> Future for Call<'_, P, F>
where
    F: FnOnce(Pid) -> P::Message,
{
    type Output = Result<P::Message, CallError<P::Message>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(request) = this.request.take() {
            let receiver = match this.scheduler.mailbox() {
                Ok(receiver) => receiver,
                Err(why) => return Poll::Ready(Err(CallError::Refused(why))),
            };
            if let Err(error) = this.scheduler.send(this.to, request(receiver.pid())) {
                return Poll::Ready(Err(CallError::Send(error)));
            }
            this.receiver = Some(receiver);
        }
        let receiver = (this.receiver.as_ref()).expect("`Call` polled after it completed");
        let reply = match receiver.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(reply) => reply,
        };
        // The receiver ends here, as `blocking_call`'s does on return.
        this.receiver = None;
        Poll::Ready(reply.map_err(|_| CallError::ShutDown))
    }
}

impl<P: Process, F> fmt::Debug for Call<'_, P, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("to", &self.to)
            .field("sent", &self.request.is_none())
            .field("receiver", &self.receiver)
            .finish_non_exhaustive()
    }
}
