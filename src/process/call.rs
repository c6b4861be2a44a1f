//! A call with a timeout from a step (OTP's `gen_server:call(Pid, Req,
//! Timeout)`): [`StepOutput::call`], [`StepOutput::reply`], the
//! [`ReplyTo`] token a request carries, and [`ReplyError`].
//!
//! A step only records the call and its request; its worker sends the
//! request after the step, registers the call in the caller's extra part
//! (its id and tag) with its timeout in the worker's timing wheel, and
//! turns the reply, or the timeout, into one `Event::Reply`
//! (`src/sched/worker/calls.rs`).

use super::{Pid, Process, StepOutput};
use std::fmt;
use std::time::Duration;

/// Where the reply to a call goes: the caller's PID and the call's id.
///
/// A request made by [`StepOutput::call`] carries it; the callee answers
/// with [`StepOutput::reply`] or
/// [`Scheduler::reply`](crate::sched::Scheduler::reply). Small and `Copy`;
/// the id is unique on its scheduler, so a reply to a call that has timed
/// out, or a second reply, never passes for the reply to another call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyTo {
    pid: Pid,
    id: u64,
}

impl ReplyTo {
    /// The caller.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The call's id (unique on its scheduler).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The token of call `id` of `pid`: for a [`Codec`](crate::sched::remote::Codec)
    /// that carries a request's `ReplyTo` to another node, as
    /// [`pid`](Self::pid) and [`id`](Self::id) wrote it. A token that no
    /// call made answers none: its reply is stale.
    ///
    /// ```
    /// use stepsched::process::{Pid, ReplyTo};
    ///
    /// let token = ReplyTo::from_parts(Pid::from_raw(7), 3);
    /// assert_eq!((token.pid(), token.id()), (Pid::from_raw(7), 3));
    /// ```
    pub fn from_parts(pid: Pid, id: u64) -> ReplyTo {
        ReplyTo { pid, id }
    }
}

/// Why a call from a step ([`StepOutput::call`]) got no reply: the
/// `result` of its [`Event::Reply`](super::Event::Reply).
///
/// A request that could not be sent is handed back inside the error.
#[non_exhaustive]
pub enum ReplyError<M> {
    /// No reply came within the timeout. A reply that comes later is
    /// stale: it goes to `on_undelivered`, never to the caller's step.
    TimedOut,
    /// No such process: the request is handed back.
    NoSuchProcess(M),
    /// The callee had already ended: the request is handed back.
    Finished(M),
    /// The callee's bounded mailbox was full: the request is handed back.
    Full(M),
    /// The scheduler is shutting down: the request is handed back.
    ShuttingDown(M),
    /// The callee is on another node that cannot be reached now (or the
    /// [`Codec`](crate::sched::remote::Codec) could not encode the
    /// request): the request is handed back, never sent.
    NoConnection(M),
    /// The callee's node went away (its transport declared it gone,
    /// [`Inbound::node_down`](crate::sched::remote::Inbound::node_down))
    /// while the call waited: the request had crossed, and whether it was
    /// handled is unknown, as after [`TimedOut`](Self::TimedOut). OTP's
    /// `{nodedown, Node}`.
    NodeDown,
}

impl<M> ReplyError<M> {
    /// The request handed back, if it was never sent.
    pub fn into_request(self) -> Option<M> {
        match self {
            ReplyError::TimedOut | ReplyError::NodeDown => None,
            ReplyError::NoSuchProcess(m)
            | ReplyError::Finished(m)
            | ReplyError::Full(m)
            | ReplyError::ShuttingDown(m)
            | ReplyError::NoConnection(m) => Some(m),
        }
    }
}

impl<M> fmt::Debug for ReplyError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyError::TimedOut => "TimedOut",
            ReplyError::NoSuchProcess(_) => "NoSuchProcess(..)",
            ReplyError::Finished(_) => "Finished(..)",
            ReplyError::Full(_) => "Full(..)",
            ReplyError::ShuttingDown(_) => "ShuttingDown(..)",
            ReplyError::NoConnection(_) => "NoConnection(..)",
            ReplyError::NodeDown => "NodeDown",
        })
    }
}

impl<M> fmt::Display for ReplyError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyError::TimedOut => "the call timed out",
            ReplyError::NoSuchProcess(_) => "no such process",
            ReplyError::Finished(_) => "the process had already finished",
            ReplyError::Full(_) => "the process's mailbox was full",
            ReplyError::ShuttingDown(_) => "the scheduler is shutting down",
            ReplyError::NoConnection(_) => "the callee's node cannot be reached",
            ReplyError::NodeDown => "the callee's node went away before the reply",
        })
    }
}

impl<M> std::error::Error for ReplyError<M> {}

/// A call or reply of a step, applied after it in call order.
pub(crate) enum CallOp<M> {
    Call {
        to: Pid,
        tag: u64,
        id: u64,
        request: M,
        timeout: Duration,
    },
    Reply {
        to: ReplyTo,
        message: M,
    },
    /// A message to the process registered as `name` on `node`
    /// (`StepOutput::send_named`, in `registry.rs`).
    Named {
        node: super::NodeId,
        name: super::Name,
        message: M,
    },
}

impl<P: Process> StepOutput<'_, P> {
    /// Calls `to`: sends it the message `request` builds from the
    /// [`ReplyTo`] of this call, and gets exactly one
    /// [`Event::Reply { tag, result }`](super::Event::Reply) for it: `Ok`
    /// with the callee's [`reply`](Self::reply), `Err(ReplyError::TimedOut)`
    /// if none came `timeout` from now, or, at once (in the next step), an
    /// error handing the request back if it could not be sent (no such
    /// process, it has ended, its bounded mailbox is full, or shutdown).
    /// `to` may be on another node (`sched::remote`: its refusals come
    /// back a round trip later, and a node gone answers
    /// [`ReplyError::NodeDown`]).
    /// The event wakes the process from `Idle` and `Wait`, like a
    /// completion. A process closed before that step (a shutdown past its
    /// timeout closes it without one) leaves the event, request and all,
    /// to `on_undelivered`.
    ///
    /// A reply after the timeout, or a second reply, is stale: it never
    /// reaches a step and goes to `on_undelivered` (as a late command
    /// completion does; its `tag` there is the call's id). The callee is
    /// not monitored: if it ends without replying, the call times out (use
    /// [`monitor`](Self::monitor) to learn of it sooner). Calls in flight
    /// are told apart by their id, not their tag: two calls may share a
    /// tag, and each gets its event. If the calling step ends the process,
    /// the request is still sent, and its reply is undelivered.
    ///
    /// # Bounds
    ///
    /// `Duration::ZERO` times the call out at the wheel's next tick unless
    /// the reply came first (a callee on the same worker may answer before
    /// that tick); `Duration::MAX` never times it out (no timer is set).
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Event, NoCommand, Process, ReplyTo, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// enum Msg {
    ///     Double(u64, ReplyTo),
    ///     Answer(u64),
    /// }
    ///
    /// /// Calls a doubler once, ends with its answer.
    /// struct Caller(stepsched::process::Pid);
    /// /// Answers every `Double`.
    /// struct Doubler;
    ///
    /// enum Either { Caller(Caller), Doubler(Doubler) }
    ///
    /// impl Process for Either {
    ///     type Input = ();
    ///     type Message = Msg;
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = u64;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         match self {
    ///             Either::Caller(Caller(doubler)) if events.is_empty() => {
    ///                 out.call(*doubler, 1, |reply_to| Msg::Double(21, reply_to), Duration::from_secs(5));
    ///             }
    ///             Either::Caller(_) => {
    ///                 for event in events.drain(..) {
    ///                     if let Event::Reply { tag: 1, result: Ok(Msg::Answer(n)) } = event {
    ///                         out.done(n);
    ///                     }
    ///                 }
    ///             }
    ///             Either::Doubler(_) => {
    ///                 for event in events.drain(..) {
    ///                     if let Event::Message(Msg::Double(n, reply_to)) = event {
    ///                         out.reply(reply_to, Msg::Answer(2 * n));
    ///                     }
    ///                 }
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(2).build().unwrap();
    /// let doubler = scheduler.submit(Either::Doubler(Doubler), "doubler", ()).unwrap();
    /// let caller = scheduler.submit_joinable(Either::Caller(Caller(doubler)), "caller", ()).unwrap();
    /// assert_eq!(caller.join(), Ok(42));
    /// ```
    pub fn call(
        &mut self,
        to: Pid,
        tag: u64,
        request: impl FnOnce(ReplyTo) -> P::Message,
        timeout: Duration,
    ) {
        let id = self.effects.next_call;
        self.effects.next_call = id.wrapping_add(1);
        let request = request(ReplyTo { pid: self.pid, id });
        let op = CallOp::Call {
            to,
            tag,
            id,
            request,
            timeout,
        };
        self.effects.calls.push(op);
    }

    /// Answers the call that `reply_to` names (from the request
    /// [`call`](Self::call) sent), after this step. The caller gets it as
    /// `Event::Reply { tag, result: Ok(message) }` if the call is still
    /// waiting; a reply to a call that has timed out or been answered, or
    /// to a caller that has ended, goes to `on_undelivered`.
    pub fn reply(&mut self, reply_to: ReplyTo, message: P::Message) {
        let op = CallOp::Reply {
            to: reply_to,
            message,
        };
        self.effects.calls.push(op);
    }
}
