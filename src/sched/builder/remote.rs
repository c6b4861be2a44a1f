//! The builder's settings for a node of a cluster: [`Builder::node`],
//! [`Builder::transport`], [`Builder::codec`] (`sched/remote/`).

use super::Builder;
use crate::process::{NodeId, Process};
use crate::sched::remote::{Codec, Remote, Transport};
use std::io;

/// What the builder was told of the node: all or nothing of it reaches the
/// scheduler (`Setup::finish`).
pub(crate) struct Setup<P: Process> {
    node: NodeId,
    transport: Option<Box<dyn Transport>>,
    codec: Option<Box<dyn Codec<P::Message>>>,
}

impl<P: Process> Setup<P> {
    pub(crate) fn new() -> Self {
        Setup {
            node: NodeId::default(),
            transport: None,
            codec: None,
        }
    }

    /// The node, and its link to the others if a transport was set.
    pub(crate) fn finish(self) -> io::Result<(NodeId, Option<Remote<P>>)> {
        match (self.transport, self.codec) {
            (None, None) => Ok((self.node, None)),
            (Some(transport), Some(codec)) => {
                Ok((self.node, Some(Remote::new(self.node, transport, codec))))
            }
            (Some(_), None) => Err(refused(
                "transport(..) without codec(..): messages need bytes",
            )),
            (None, Some(_)) => Err(refused(
                "codec(..) without transport(..): nothing to carry them",
            )),
        }
    }
}

fn refused(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_owned())
}

impl<P: Process> Builder<P> {
    /// This scheduler's node in a cluster: every [`Pid`](crate::process::Pid)
    /// it issues names it ([`Pid::node`](crate::process::Pid::node)).
    /// Default: node 0. Each scheduler of a cluster needs a node of its own.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use stepsched::process::NodeId;
    /// use stepsched::sched::Scheduler;
    ///
    /// let node = NodeId::new(7).unwrap();
    /// let scheduler = Scheduler::<Job>::builder().workers(1).node(node).build().unwrap();
    /// let pid = scheduler.submit(Job, "job", ()).unwrap();
    /// assert_eq!(pid.node(), node);
    /// ```
    pub fn node(mut self, node: NodeId) -> Self {
        self.remote.node = node;
        self
    }

    /// The transport that carries frames to the other nodes
    /// ([`Transport`]); [`build`](Builder::build) attaches it
    /// ([`Transport::attach`]). Needs a [`codec`](Builder::codec). Without
    /// one, a PID of another node is refused as one that names no process.
    pub fn transport(mut self, transport: impl Transport) -> Self {
        self.remote.transport = Some(Box::new(transport));
        self
    }

    /// How messages become bytes to cross nodes ([`Codec`]). Needs a
    /// [`transport`](Builder::transport).
    pub fn codec(mut self, codec: impl Codec<P::Message>) -> Self {
        self.remote.codec = Some(Box::new(codec));
        self
    }
}
