//! The way out: a delivery whose PID is of another node, as a [`Frame`]
//! to the [`Transport`]. Every function here is on a path a local
//! delivery never takes (the table lookup failed).

use super::watches::{Watch, Watches};
use super::{Codec, Frame, FrameKind, Transport};
use crate::process::state::Wake;
use crate::process::{Event, ExitReason, NodeId, Pid, Process};
use crate::sched::core::table::Task;
use crate::sched::links::Signal;
use crate::sched::shared::{Refusal, Shared};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A node's link to the others: its transport, its codec and its watches
/// across nodes. In `Shared`, if the builder set a transport.
pub(crate) struct Remote<P: Process> {
    pub(crate) node: NodeId,
    pub(crate) transport: Box<dyn Transport>,
    pub(crate) codec: Box<dyn Codec<P::Message>>,
    pub(crate) watches: Watches,
}

impl<P: Process> Remote<P> {
    /// The codec's `decode`, with a panic in it turned into an error (it
    /// runs on the transport's thread, which must go on).
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<P::Message, super::CodecError> {
        match catch_unwind(AssertUnwindSafe(|| self.codec.decode(bytes))) {
            Ok(result) => result,
            Err(panic) => Err(super::CodecError::new(format!(
                "the codec panicked: {}",
                crate::process::panic_message(&*panic)
            ))),
        }
    }

    pub(crate) fn new(
        node: NodeId,
        transport: Box<dyn Transport>,
        codec: Box<dyn Codec<P::Message>>,
    ) -> Self {
        Remote {
            node,
            transport,
            codec,
            watches: Watches::default(),
        }
    }

    /// Whether `pid` names a process of another node.
    pub(crate) fn routes(&self, pid: Pid) -> bool {
        pid.node() != self.node && !pid.is_outside()
    }
}

impl<P: Process> Shared<P> {
    /// Why `pid`'s lookup failed: `Remote` if a transport carries it, else
    /// no such process. (`admit`'s failure path.)
    #[cold]
    #[inline(never)]
    pub(crate) fn missing(&self, pid: Pid) -> Refusal {
        match &self.remote {
            Some(remote) if remote.routes(pid) => Refusal::Remote,
            _ => Refusal::NoSuchProcess,
        }
    }

    /// This node's outside sender, as other nodes name it.
    pub(crate) fn outside_pid(&self) -> Pid {
        let node = self.remote.as_ref().map_or(NodeId::default(), |r| r.node);
        Pid::outside_of(node)
    }

    /// An event `deliver` refused for `to`, sent by `from`: a message to a
    /// remote PID is forwarded, anything else reported undelivered.
    #[cold]
    #[inline(never)]
    pub(crate) fn unsent(&self, from: Pid, to: Pid, why: Refusal, event: Event<P>) {
        match (why, event) {
            (Refusal::Remote, Event::Message(message)) => {
                if let Err(message) = self.forward_message(from, to, message) {
                    self.undelivered(to, Event::Message(message));
                }
            }
            (_, event) => self.undelivered(to, event),
        }
    }

    /// Encodes `message` and hands it to the transport; gives it back if
    /// it cannot cross (no transport, the codec refused or panicked, the
    /// node is unreachable).
    pub(crate) fn forward_message(
        &self,
        from: Pid,
        to: Pid,
        message: P::Message,
    ) -> Result<(), P::Message> {
        self.forward(from, to, message, FrameKind::Message)
    }

    /// `message` encoded into the frame `kind` makes, handed to the
    /// transport; the message back if it cannot cross.
    pub(super) fn forward(
        &self,
        from: Pid,
        to: Pid,
        message: P::Message,
        kind: impl FnOnce(Vec<u8>) -> FrameKind,
    ) -> Result<(), P::Message> {
        let Some(remote) = &self.remote else {
            return Err(message);
        };
        let mut bytes = Vec::new();
        // The codec is the embedder's code: a panic in it refuses the
        // message, as an error does, instead of unwinding the worker.
        let encoded = catch_unwind(AssertUnwindSafe(|| {
            remote.codec.encode(&message, &mut bytes)
        }));
        if !matches!(encoded, Ok(Ok(()))) {
            return Err(message);
        }
        let frame = Frame {
            from,
            to,
            kind: kind(bytes),
        };
        remote.transport.send(frame).map_err(|_| message)
    }

    /// A signal for a remote `to`, handed to the transport, with its
    /// watch recorded (`watches.rs`). If the node cannot be reached, a
    /// request is answered here with `NoConnection`: `Err` with the task
    /// to queue if that woke its sender.
    pub(crate) fn forward_signal(&self, to: Pid, signal: Signal) -> Result<(), Option<Task<P>>> {
        let Some(remote) = &self.remote else {
            return Err(None);
        };
        let (from, kind) = frame_of(signal);
        let watch = match kind {
            FrameKind::Monitor | FrameKind::Demonitor => Some(Watch::Monitor {
                watcher: from,
                target: to,
            }),
            FrameKind::Link | FrameKind::Unlink | FrameKind::Exit(_) => Some(Watch::Link {
                local: from,
                remote: to,
            }),
            _ => None,
        };
        let adds = matches!(kind, FrameKind::Monitor | FrameKind::Link);
        if let (Some(watch), true) = (watch, adds) {
            remote.watches.add(watch);
        }
        match remote.transport.send(Frame { from, to, kind }) {
            Ok(()) => {
                if let (Some(watch), false) = (watch, adds) {
                    remote.watches.remove(watch);
                }
                Ok(())
            }
            Err(frame) => {
                if let Some(watch) = watch {
                    remote.watches.remove(watch);
                }
                let answer = match frame.kind {
                    FrameKind::Monitor => Signal::Down(to, ExitReason::NoConnection),
                    FrameKind::Link => Signal::exit(to, ExitReason::NoConnection),
                    _ => return Err(None),
                };
                Err(self.deliver_local_signal(from, answer))
            }
        }
    }

    /// A signal to a local process from off the workers (an inbound frame,
    /// an answer): the task to queue if it woke the process. A request
    /// that found no process is answered (`links::unanswered`), across
    /// the nodes if its sender is remote.
    pub(crate) fn deliver_local_signal(&self, to: Pid, signal: Signal) -> Option<Task<P>> {
        let kind = match signal {
            Signal::Monitor(_) | Signal::Demonitor(_) | Signal::Link(_) | Signal::Unlink(_) => {
                Wake::Message
            }
            _ => Wake::Completion,
        };
        match self.deliver_signal(to, signal, kind, None) {
            Ok(task) => task,
            Err(None) => None,
            Err(Some(owed)) => {
                let (answer_to, answer) = crate::sched::links::unanswered(to, owed)?;
                // Refused, an answer is dropped: it is owed none itself.
                (self.deliver_signal(answer_to, answer, Wake::Completion, None)).unwrap_or_default()
            }
        }
    }
}

/// The sender and the frame kind of `signal`.
fn frame_of(signal: Signal) -> (Pid, FrameKind) {
    match signal {
        Signal::Monitor(from) => (from, FrameKind::Monitor),
        Signal::Demonitor(from) => (from, FrameKind::Demonitor),
        Signal::Link(from) => (from, FrameKind::Link),
        Signal::Unlink(from) => (from, FrameKind::Unlink),
        Signal::Down(from, reason) => (from, FrameKind::Down(reason)),
        Signal::Exit(from, reason) => (from, FrameKind::Exit(*reason)),
        Signal::ExitLinked(from, by) => (from, FrameKind::Exit(ExitReason::Linked(by))),
        Signal::ExitPlain(from, plain) => (from, FrameKind::Exit(plain.into())),
        Signal::Sent(from, reason) => (from, FrameKind::ExitSent(*reason)),
        Signal::Kill(from) => (from, FrameKind::Kill),
    }
}
