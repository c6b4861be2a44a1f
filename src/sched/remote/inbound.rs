//! The way in: [`Inbound`], the handle a transport hands frames to.

use super::watches::Watch;
use super::{CodecError, Frame, FrameKind};
use crate::process::state::Wake;
use crate::process::{Event, ExitReason, NodeId, Process, ReplyError};
use crate::sched::links::Signal;
use crate::sched::shared::{Refusal, Shared};
use core::fmt;
use std::sync::Weak;

/// The handle through which a [`Transport`](super::Transport) hands this
/// node what arrives for it ([`Transport::attach`](super::Transport::attach)).
/// Cheap to clone; it does not keep the scheduler alive (once it is
/// dropped, [`deliver`](Inbound::deliver) refuses with
/// [`InboundError::Gone`]).
#[derive(Clone)]
pub struct Inbound {
    sink: Weak<dyn Sink>,
    node: NodeId,
}

/// What an [`Inbound`] reaches: a scheduler of any process type.
pub(crate) trait Sink: Send + Sync {
    fn frame(&self, frame: Frame) -> Result<(), InboundError>;
    fn node_down(&self, node: NodeId);
}

impl Inbound {
    pub(crate) fn new(sink: Weak<dyn Sink>, node: NodeId) -> Self {
        Inbound { sink, node }
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Takes in a frame for a process of this node: a message goes to its
    /// mailbox (or is refused back to its sender if that is full), a
    /// monitor or link request is registered, a `Down` or an exit is told,
    /// exactly as their local kin.
    ///
    /// # Errors
    ///
    /// Hands the frame back if it cannot be taken in at all: the scheduler
    /// is gone, the frame is for another node, or its message does not
    /// decode. (A message to a process that has ended is not an error: it
    /// goes to `on_undelivered`, as a local one does.)
    pub fn deliver(&self, frame: Frame) -> Result<(), InboundError> {
        if frame.to.node() != self.node {
            return Err(InboundError::NotHere(frame));
        }
        match self.sink.upgrade() {
            Some(sink) => sink.frame(frame),
            None => Err(InboundError::Gone(frame)),
        }
    }

    /// Node `node` is gone (the transport lost it): every local monitor
    /// of one of its processes gets `Down { reason: NoConnection }`, and
    /// every local process linked with one its exit with `NoConnection`,
    /// once. Frames from it that come later are taken in as any frame.
    pub fn node_down(&self, node: NodeId) {
        if let Some(sink) = self.sink.upgrade() {
            sink.node_down(node);
        }
    }
}

impl fmt::Debug for Inbound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbound").field("node", &self.node).finish()
    }
}

/// A frame [`Inbound::deliver`] could not take in, handed back.
#[derive(Debug)]
#[non_exhaustive]
pub enum InboundError {
    /// The scheduler has been dropped.
    Gone(Frame),
    /// The frame's receiver is on another node.
    NotHere(Frame),
    /// Its message does not decode.
    Decode(Frame, CodecError),
}

impl fmt::Display for InboundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InboundError::Gone(_) => f.write_str("the scheduler is gone"),
            InboundError::NotHere(frame) => write!(f, "{} is not on this node", frame.to),
            InboundError::Decode(_, why) => write!(f, "undecodable message: {why}"),
        }
    }
}

impl std::error::Error for InboundError {}

impl<P: Process> Sink for Shared<P> {
    fn frame(&self, frame: Frame) -> Result<(), InboundError> {
        let Some(remote) = &self.remote else {
            return Err(InboundError::NotHere(frame));
        };
        let Frame { from, to, kind } = frame;
        let signal = match kind {
            FrameKind::Message(bytes) => {
                let message = match remote.decode(&bytes) {
                    Ok(message) => message,
                    Err(why) => {
                        let kind = FrameKind::Message(bytes);
                        return Err(InboundError::Decode(Frame { from, to, kind }, why));
                    }
                };
                match self.deliver_remote(to, Event::Message(message), Wake::Message) {
                    Ok(_) => {}
                    Err((Refusal::Full, event)) => {
                        // Back to its sender, as a local step's refusal
                        // comes back in its carry.
                        let kind = FrameKind::Refused(bytes);
                        let back = Frame {
                            from: to,
                            to: from,
                            kind,
                        };
                        if remote.transport.send(back).is_err() {
                            self.undelivered(to, event);
                        }
                    }
                    Err((_, event)) => self.undelivered(to, event),
                }
                return Ok(());
            }
            FrameKind::Refused(bytes) => {
                let message = match remote.decode(&bytes) {
                    Ok(message) => message,
                    Err(why) => {
                        let kind = FrameKind::Refused(bytes);
                        return Err(InboundError::Decode(Frame { from, to, kind }, why));
                    }
                };
                if to.is_outside() {
                    // From outside the processes: nobody to hand it to.
                    self.undelivered(from, Event::Message(message));
                    return Ok(());
                }
                let event = Event::Refused { to: from, message };
                if let Err((_, event)) = self.deliver_remote(to, event, Wake::Completion) {
                    self.undelivered(to, event);
                }
                return Ok(());
            }
            FrameKind::Monitor => Signal::Monitor(from),
            FrameKind::Demonitor => Signal::Demonitor(from),
            FrameKind::Link => {
                remote.watches.add(Watch::Link {
                    local: to,
                    remote: from,
                });
                Signal::Link(from)
            }
            FrameKind::Unlink => {
                remote.watches.remove(Watch::Link {
                    local: to,
                    remote: from,
                });
                Signal::Unlink(from)
            }
            FrameKind::Down(reason) => {
                remote.watches.remove(Watch::Monitor {
                    watcher: to,
                    target: from,
                });
                Signal::Down(from, reason)
            }
            FrameKind::Exit(reason) => {
                remote.watches.remove(Watch::Link {
                    local: to,
                    remote: from,
                });
                Signal::exit(from, reason)
            }
            FrameKind::ExitSent(reason) => Signal::Sent(from, Box::new(reason)),
            FrameKind::Kill => Signal::Kill(from),
            FrameKind::Named {
                name,
                message: bytes,
            } => {
                let message = match remote.decode(&bytes) {
                    Ok(message) => message,
                    Err(why) => {
                        let kind = FrameKind::Named {
                            name,
                            message: bytes,
                        };
                        return Err(InboundError::Decode(Frame { from, to, kind }, why));
                    }
                };
                self.named_frame(remote, from, &name, bytes, message);
                return Ok(());
            }
            kind @ (FrameKind::Call { .. }
            | FrameKind::Reply { .. }
            | FrameKind::CallRefused { .. }) => {
                return (self.call_frame(remote, from, to, kind))
                    .map_err(|(kind, why)| InboundError::Decode(Frame { from, to, kind }, why));
            }
        };
        if let Some(task) = self.deliver_local_signal(to, signal) {
            self.core.schedule_remote(task);
        }
        Ok(())
    }

    fn node_down(&self, node: NodeId) {
        let Some(remote) = &self.remote else {
            return;
        };
        let (watches, calls) = remote.watches.take_node(node);
        for (caller, id) in calls {
            self.answer(caller, id, Err(ReplyError::NodeDown));
        }
        for watch in watches {
            let (to, signal) = match watch {
                Watch::Monitor { watcher, target } => {
                    (watcher, Signal::Down(target, ExitReason::NoConnection))
                }
                Watch::Link { local, remote } => {
                    (local, Signal::exit(remote, ExitReason::NoConnection))
                }
            };
            if let Some(task) = self.deliver_local_signal(to, signal) {
                self.core.schedule_remote(task);
            }
        }
    }
}
