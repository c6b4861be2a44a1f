//! Outside sends that wait for room in a full bounded mailbox:
//! [`Scheduler::send_async`] (a future, woken by the drain that makes room)
//! and [`Scheduler::blocking_send_timeout`] (a parked thread). Both wait in
//! the scheduler's `Room` (`bound.rs`), which states the meeting with the
//! drain that makes room.

use super::on_worker::refuse_blocking;
use crate::process::{Pid, Process};
use crate::sched::error::SendError;
use crate::sched::Scheduler;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Duration;

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
    /// (`Duration::MAX`) waits until there is room or the process ends. An
    /// async task awaits [`send_async`](Scheduler::send_async) instead. A
    /// step sends with
    /// [`StepOutput::send`](crate::process::StepOutput::send), which never
    /// blocks: a message refused by a full mailbox comes back to it as
    /// [`Event::Refused`](crate::process::Event::Refused).
    ///
    /// # Panics
    ///
    /// On a worker thread of any scheduler (from a process's step, or a
    /// handler registered with [`handler`](crate::sched::Builder::handler)),
    /// even with room or `Duration::ZERO`, before it sends anything: the
    /// worker would hold itself while the step that drains the full mailbox
    /// may need it. The threads of the blocking pool
    /// ([`blocking_handler`](crate::sched::Builder::blocking_handler)) may
    /// call it.
    pub fn blocking_send_timeout(
        &self,
        to: Pid,
        message: P::Message,
        timeout: Duration,
    ) -> Result<(), SendError<P::Message>> {
        refuse_blocking(
            "Scheduler::blocking_send_timeout",
            "await `Scheduler::send_async`, or send from the step with `StepOutput::send`",
        );
        crate::sched::simulation::refuse_simulated(
            &self.shared,
            "Scheduler::blocking_send_timeout",
            "drive it, then Scheduler::send",
        );
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
            if let Some(slot) = self.shared.core.table.get(to.key()) {
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

    /// [`send`](Scheduler::send), waiting for room if the process's mailbox
    /// is bounded and full: the future of a send that waits (flume's
    /// `send_async`; tokio's bounded `Sender::send(..).await`). The task is
    /// woken when a drain of a full mailbox makes room, and tries again; no
    /// spinning, no timer. It completes at once if there is room, and with
    /// an error as soon as `send` would give one but `Full`.
    ///
    /// Nothing is sent until the first poll. Dropping the future before it
    /// completes drops its message with it: the message was never sent, so
    /// it is neither delivered nor reported (`on_undelivered` is not called),
    /// as tokio's `send` does; the future's place among the waiters is
    /// given up. It has no timeout of its own: wrap it in the runtime's
    /// (`tokio::time::timeout`), or use
    /// [`blocking_send_timeout`](Scheduler::blocking_send_timeout) on a
    /// thread.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput, Status};
    /// # struct Sink;
    /// # impl Process for Sink {
    /// #     type Input = (); type Message = u32; type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         events.clear(); out.set_status(Status::Idle); Ok(())
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
    /// let scheduler = Scheduler::builder().workers(2).mailbox_capacity(1).build()?;
    /// let sink = scheduler.submit(Sink, "", ()).unwrap();
    /// let waker = Arc::new(Unpark(std::thread::current())).into();
    /// for n in 0..100 {
    ///     // In an async fn: `scheduler.send_async(sink, n).await`.
    ///     let mut send = pin!(scheduler.send_async(sink, n));
    ///     let sent = loop {
    ///         match send.as_mut().poll(&mut Context::from_waker(&waker)) {
    ///             Poll::Ready(sent) => break sent,
    ///             Poll::Pending => std::thread::park(),
    ///         }
    ///     };
    ///     assert_eq!(sent, Ok(()));
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`send`](Scheduler::send), the message handed back, except
    /// [`SendError::Full`], which it waits out: no such process, it has
    /// finished (also while the future waited), or the scheduler is shutting
    /// down.
    ///
    /// # Panics
    ///
    /// The future panics if it is polled again after it completed. It never
    /// blocks, so it may be polled anywhere, a worker thread included.
    pub fn send_async(&self, to: Pid, message: P::Message) -> SendAsync<'_, P> {
        SendAsync {
            scheduler: self,
            to,
            message: Some(message),
            ticket: None,
        }
    }
}

/// The future of [`Scheduler::send_async`].
///
/// Dropping it before it completes drops the message unsent (nothing is
/// delivered, nothing reported) and gives up its place among the waiters.
#[must_use = "futures do nothing unless polled: the message is sent on a poll"]
pub struct SendAsync<'a, P: Process> {
    scheduler: &'a Scheduler<P>,
    to: Pid,
    /// Until it is sent or handed back.
    message: Option<P::Message>,
    /// Its place among the waiters for room (`Room::poll_wait`), from the
    /// first `Full` until it completes.
    ticket: Option<u64>,
}

// The message is never pinned: the future only moves it in and out of its
// option.
impl<P: Process> Unpin for SendAsync<'_, P> {}

impl<P: Process> Future for SendAsync<'_, P> {
    type Output = Result<(), SendError<P::Message>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let SendAsync {
            scheduler,
            to,
            message,
            ticket,
        } = self.get_mut();
        let (scheduler, to) = (*scheduler, *to);
        if ticket.is_none() {
            // First poll: the fast path, without the room's lock.
            let m = message
                .take()
                .expect("`SendAsync` polled after it completed");
            match scheduler.send(to, m) {
                Err(SendError::Full(m)) => *message = Some(m),
                done => return Poll::Ready(done),
            }
        }
        scheduler.shared.room.poll_wait(ticket, cx, || {
            // Before the reservation: the waiter's half of the meeting
            // with the holder that releases places (`bound.rs`, `Room`).
            // A stale PID touches a word it cannot change.
            if let Some(slot) = scheduler.shared.core.table.get(to.key()) {
                slot.state.touch();
            }
            let m = message.take().expect("taken only by a failed attempt");
            match scheduler.send(to, m) {
                Err(SendError::Full(m)) => {
                    *message = Some(m);
                    None
                }
                done => Some(done),
            }
        })
    }
}

impl<P: Process> Drop for SendAsync<'_, P> {
    fn drop(&mut self) {
        // A pending future leaves the waiters; its message, unsent, is
        // dropped with it.
        self.scheduler.shared.room.cancel(&mut self.ticket);
    }
}

impl<P: Process> fmt::Debug for SendAsync<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendAsync")
            .field("to", &self.to)
            .field("waiting", &self.ticket.is_some())
            .finish_non_exhaustive()
    }
}
