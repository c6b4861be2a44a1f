//! Named sends (`StepOutput::send_named`, `Scheduler::send_named`): a
//! message to the process registered under a name on some node, Erlang's
//! `{Name, Node} ! Message`. The name is looked up on the node it names,
//! when the message gets there: a named frame to another node carries the
//! name, and that node's registry resolves it.
//!
//! A name that names no process is reported to the `on_undelivered` of
//! the node that looked it up, with that node's outside PID
//! (`Pid::is_outside`) for the receiver: there is no process to name.

use super::{Frame, FrameKind, Remote};
use crate::mpsc::NodeCache;
use crate::process::state::Wake;
use crate::process::{Event, NodeId, Pid, Process};
use crate::sched::core::table::{Envelope, Task};
use crate::sched::error::SendError;
use crate::sched::shared::{phase, Refusal, Shared};
use crate::sched::Scheduler;

impl<P: Process> Shared<P> {
    /// This node.
    pub(crate) fn node(&self) -> NodeId {
        self.remote.as_ref().map_or(NodeId::default(), |r| r.node)
    }

    /// A step's named send from `from` (applied after its sends): the task
    /// it woke, or the resolved PID and the message if a full mailbox
    /// refused it. Anything else that stops it is reported undelivered.
    pub(crate) fn send_named(
        &self,
        from: Pid,
        node: NodeId,
        name: &str,
        message: P::Message,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> Result<Option<Task<P>>, (Pid, P::Message)> {
        let nowhere = Pid::outside_of(node);
        if node != self.node() {
            let kind = |message| FrameKind::Named {
                name: name.into(),
                message,
            };
            if let Err(message) = self.forward(from, nowhere, message, kind) {
                self.undelivered(nowhere, Event::Message(message));
            }
            return Ok(None);
        }
        let Some(to) = self.whereis(name) else {
            self.undelivered(nowhere, Event::Message(message));
            return Ok(None);
        };
        match self.deliver(to, Event::Message(message), Wake::Message, nodes) {
            Ok(task) => Ok(task),
            Err((Refusal::Full, Event::Message(message))) => Err((to, message)),
            Err((why, event)) => {
                self.unsent(from, to, why, event);
                Ok(None)
            }
        }
    }

    /// A named frame that came in from `from`: the name resolved here, the
    /// message delivered, refused back if the mailbox is full, or reported.
    pub(super) fn named_frame(
        &self,
        remote: &Remote<P>,
        from: Pid,
        name: &str,
        bytes: Vec<u8>,
        message: P::Message,
    ) {
        let Some(to) = self.whereis(name) else {
            self.undelivered(Pid::outside_of(self.node()), Event::Message(message));
            return;
        };
        match self.deliver_remote(to, Event::Message(message), Wake::Message) {
            Ok(_) => {}
            Err((Refusal::Full, event)) => {
                let back = Frame {
                    from: to,
                    to: from,
                    kind: FrameKind::Refused(bytes),
                };
                if remote.transport.send(back).is_err() {
                    self.undelivered(to, event);
                }
            }
            Err((_, event)) => self.undelivered(to, event),
        }
    }
}

impl<P: Process> Scheduler<P> {
    /// Sends `message` from outside the processes to the process
    /// registered as `name` on `node` (Erlang's `{Name, Node} ! Message`):
    /// this node's, looked up now, or another's (`sched::remote`), looked
    /// up there when the message arrives.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Room;
    /// # impl Process for Room {
    /// #     type Input = (); type Message = u32; type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// use stepsched::sched::{Scheduler, SendError};
    ///
    /// let scheduler = Scheduler::builder().workers(1).build()?;
    /// let room = scheduler.submit(Room, "", ()).map_err(|_| "refused").unwrap();
    /// scheduler.register("room", room).unwrap();
    /// let here = scheduler.node();
    /// assert!(scheduler.send_named(here, "room", 7).is_ok());
    /// assert!(matches!(scheduler.send_named(here, "hall", 8), Err(SendError::NoSuchProcess(8))));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// On this node, as [`send`](Self::send) to the process the name names,
    /// and [`SendError::NoSuchProcess`] if it names none. To another node,
    /// [`SendError::NoConnection`] if the message cannot leave; what
    /// happens there (no such name, a full mailbox) is reported by that
    /// node's `on_undelivered`, or, for a full mailbox, back to this
    /// node's.
    pub fn send_named(
        &self,
        node: NodeId,
        name: &str,
        message: P::Message,
    ) -> Result<(), SendError<P::Message>> {
        let shared = &*self.shared;
        if shared.core.phase() != phase::RUNNING {
            return Err(SendError::ShuttingDown(message));
        }
        if node == shared.node() {
            return match shared.whereis(name) {
                Some(to) => self.send(to, message),
                None => Err(SendError::NoSuchProcess(message)),
            };
        }
        let kind = |message| FrameKind::Named {
            name: name.into(),
            message,
        };
        let nowhere = Pid::outside_of(node);
        shared
            .forward(shared.outside_pid(), nowhere, message, kind)
            .map_err(SendError::NoConnection)
    }

    /// This scheduler's node ([`Builder::node`](crate::sched::Builder::node);
    /// node 0 unless set).
    pub fn node(&self) -> NodeId {
        self.shared.node()
    }
}
