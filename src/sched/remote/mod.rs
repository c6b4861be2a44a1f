//! Processes on other nodes: the seam an embedder's transport plugs into.
//!
//! A scheduler is one *node* ([`Builder::node`](crate::sched::Builder::node),
//! a [`NodeId`] in every [`Pid`] it issues). A send, a monitor, a link or an
//! exit signal to a PID of another node takes the road a local one takes up
//! to the process table's lookup, which fails for a foreign PID (the node
//! is in the index's top bits, `process/pid.rs`); only that failure path
//! asks whether the PID is remote, so local traffic pays nothing for the
//! seam. A remote one becomes a [`Frame`] handed to the embedder's
//! [`Transport`], with a message's payload in bytes made by the embedder's
//! [`Codec`]. The transport carries it to the other node, whose transport
//! hands it in through the [`Inbound`] handle its scheduler gave it
//! ([`Transport::attach`]); there it takes the local road again.
//!
//! The core has no wire format and no I/O: `stepsched-nats` (a crate of
//! the workspace) is a transport over NATS, with a serde codec.
//!
//! # What crosses, and what it promises
//!
//! - **Order.** Frames from one process to one node keep the order they
//!   were sent in, if the transport keeps the order of the `send` calls
//!   that happen-before one another, per destination node (its contract):
//!   so messages from one sender to one receiver arrive in the order sent,
//!   as locally.
//! - **Monitors and links** keep their local protocol: the request is a
//!   frame to the target's node, which puts it in the target's mailbox; the
//!   target's end sends the `Down` (or exit) back as a frame. The
//!   watcher's own list makes a `Down` pass once, as locally.
//! - **A node gone.** When the transport declares a node gone
//!   ([`Inbound::node_down`]), every local monitor of a process of that
//!   node is told `Down { reason: NoConnection }`, and every local process
//!   linked with one gets its exit with
//!   [`ExitReason::NoConnection`],
//!   exactly once (a `Down` that already came is not told again). A
//!   request to a node the transport cannot reach is answered so at once.
//! - **Nothing lost silently.** A message the transport cannot carry
//!   (its node unreachable) goes to the sending node's `on_undelivered`
//!   (the PID names the foreign node: that is why); one that reaches a
//!   process gone goes to the receiving node's `on_undelivered`, as a
//!   local one does; one that cannot be decoded is handed back to the
//!   transport by [`Inbound::deliver`], with the codec's error. What a
//!   node held in its mailboxes when it died is lost with it, as a local
//!   process's would be with the machine, and so is what was in flight to
//!   it (the transport may not know what reached it). A `send_after` to a
//!   remote PID is sent from this node's outside when it fires.
//! - **Backpressure.** A message to a full bounded mailbox is refused, as
//!   locally: it comes back to the sending process as
//!   [`Event::Refused`](crate::process::Event::Refused) (to an outside
//!   sender's node's `on_undelivered`). Across nodes the refusal arrives a
//!   round trip later, so a message the sender sent after the refused one,
//!   before the refusal came back, may have been accepted.
//!
//! - **Calls.** A step's [`call`](crate::process::StepOutput::call) to a
//!   remote PID crosses as a request frame; its reply
//!   ([`StepOutput::reply`](crate::process::StepOutput::reply) or
//!   [`Scheduler::reply`](crate::sched::Scheduler::reply), which the
//!   request's [`ReplyTo`](crate::process::ReplyTo) names, so the codec
//!   carries it: [`ReplyTo::from_parts`](crate::process::ReplyTo::from_parts))
//!   comes back as a reply frame, and the caller gets its one
//!   `Event::Reply` as locally. A request the callee's node refuses (no
//!   such process, ended, full, shutting down) comes back with the same
//!   error and its request; one that cannot leave this node is
//!   `ReplyError::NoConnection` with its request, at once; a callee's node
//!   that goes while the call waits answers it with `ReplyError::NodeDown`,
//!   once. The timeout runs on the caller's node, as locally.
//!
//! - **Names.** [`StepOutput::send_named`](crate::process::StepOutput::send_named)
//!   and [`Scheduler::send_named`](crate::sched::Scheduler::send_named)
//!   send to the process registered under a name on a node (Erlang's
//!   `{Name, Node} ! Message`): the name crosses, and the node it names
//!   looks it up when it arrives (each node's registry is its own). A
//!   name that names no process there goes to that node's
//!   `on_undelivered`, a full mailbox refuses back as for a send by PID.
//!
//! Not across nodes (yet): a message from outside
//! ([`Scheduler::send`](crate::sched::Scheduler::send)) refused for a full
//! mailbox comes back to `on_undelivered`, not as
//! [`SendError::Full`](crate::sched::SendError::Full).

mod calls;
mod inbound;
mod names;
mod route;
mod watches;

pub(crate) use inbound::Sink;
pub use inbound::{Inbound, InboundError};
pub(crate) use route::Remote;

pub use crate::process::NodeId;
use crate::process::{ExitReason, Pid};
use core::fmt;

/// What crosses between nodes: from one process to another, with what.
///
/// The transport encodes it as it likes; `from` and `to` are PIDs
/// ([`Pid::into_raw`]), `kind` one of a few shapes. A message's payload is
/// the [`Codec`]'s bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The sender: a process, or for a message from outside the processes
    /// the sending node's outside PID (its index the node's last).
    pub from: Pid,
    /// The receiver, a process of the destination node (`to.node()`).
    pub to: Pid,
    /// What it carries.
    pub kind: FrameKind,
}

/// What a [`Frame`] carries. Non-exhaustive: a transport's decoder
/// refuses a kind it does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameKind {
    /// A message, encoded by the [`Codec`].
    Message(Vec<u8>),
    /// A message `from`'s full mailbox refused, back to its sender `to`.
    Refused(Vec<u8>),
    /// `from` monitors `to`.
    Monitor,
    /// `from` no longer monitors `to`.
    Demonitor,
    /// `from` links with `to`.
    Link,
    /// `from` unlinks from `to`.
    Unlink,
    /// `from`, which `to` monitors, ended (or was not there: `NoProc`).
    Down(ExitReason),
    /// `from`, linked with `to`, ended with this reason.
    Exit(ExitReason),
    /// `from`'s step sent `to` an exit with this reason
    /// ([`StepOutput::exit`](crate::process::StepOutput::exit)).
    ExitSent(ExitReason),
    /// `from`'s step killed `to`
    /// ([`StepOutput::kill`](crate::process::StepOutput::kill)).
    Kill,
    /// The request of `from`'s call `id`
    /// ([`StepOutput::call`](crate::process::StepOutput::call)), encoded
    /// by the [`Codec`].
    Call {
        /// The call's id on `from`'s node.
        id: u64,
        /// The request.
        request: Vec<u8>,
    },
    /// The reply to `to`'s call `id`, encoded by the [`Codec`].
    Reply {
        /// The call's id on `to`'s node.
        id: u64,
        /// The reply.
        message: Vec<u8>,
    },
    /// A message to the process registered as `name` on `to.node()` (`to`
    /// is that node's outside PID), encoded by the [`Codec`]:
    /// [`StepOutput::send_named`](crate::process::StepOutput::send_named).
    Named {
        /// The name, looked up on arrival.
        name: String,
        /// The message.
        message: Vec<u8>,
    },
    /// `to`'s call `id`, refused by `from`'s node: its request, back.
    CallRefused {
        /// The call's id on `to`'s node.
        id: u64,
        /// Why.
        why: CallRefusal,
        /// The request, as it came.
        request: Vec<u8>,
    },
}

/// Why a node refused a call's request ([`FrameKind::CallRefused`]): the
/// caller gets the [`ReplyError`](crate::process::ReplyError) of the same
/// name, with its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallRefusal {
    /// No such process.
    NoSuchProcess,
    /// The callee had already ended.
    Finished,
    /// The callee's bounded mailbox was full.
    Full,
    /// The callee's scheduler is shutting down.
    ShuttingDown,
}

/// Carries [`Frame`]s to other nodes: the embedder's side of the seam,
/// set with [`Builder::transport`](crate::sched::Builder::transport).
///
/// Its contract:
///
/// - [`send`](Transport::send) is called from workers, and from any
///   thread that sends: it must not block on the network (queue the frame
///   and return), and must not panic.
/// - For each destination node it keeps the order of the `send` calls that
///   happen-before one another (one queue per node, say), so that a
///   sender's frames arrive in the order sent.
/// - It hands frames that arrive for this node to
///   [`Inbound::deliver`], one at a time in the order they came, and calls
///   [`Inbound::node_down`] once when it decides a node is gone (silent
///   for too long, or disconnected).
///
/// ```
/// use stepsched::sched::remote::{Frame, Inbound, Transport};
/// use std::sync::Mutex;
///
/// /// Drops what it is given: every remote node is unreachable.
/// struct Nowhere(Mutex<Option<Inbound>>);
///
/// impl Transport for Nowhere {
///     fn attach(&self, inbound: Inbound) {
///         *self.0.lock().unwrap() = Some(inbound);
///     }
///     fn send(&self, frame: Frame) -> Result<(), Frame> {
///         Err(frame) // the scheduler answers as for a node gone
///     }
/// }
/// ```
pub trait Transport: Send + Sync + 'static {
    /// Called once, by [`build`](crate::sched::Builder::build), before any
    /// frame is sent: the handle through which frames for this node come
    /// in.
    fn attach(&self, inbound: Inbound);

    /// Carries `frame` to node `frame.to.node()`, or hands it back if that
    /// node cannot be reached (not connected, or known gone): the
    /// scheduler then answers as for a node gone (a request with
    /// `NoConnection`, a message to `on_undelivered`).
    fn send(&self, frame: Frame) -> Result<(), Frame>;
}

/// Turns messages into bytes and back, for the [`Transport`]: set with
/// [`Builder::codec`](crate::sched::Builder::codec). `stepsched-nats`
/// offers one for `serde` types. It runs on workers (`encode`) and on the
/// transport's thread (`decode`); a panic in it is taken as its error.
///
/// ```
/// use stepsched::sched::remote::{Codec, CodecError};
///
/// struct Le;
/// impl Codec<u64> for Le {
///     fn encode(&self, message: &u64, into: &mut Vec<u8>) -> Result<(), CodecError> {
///         into.extend_from_slice(&message.to_le_bytes());
///         Ok(())
///     }
///     fn decode(&self, bytes: &[u8]) -> Result<u64, CodecError> {
///         let bytes = bytes.try_into().map_err(|_| CodecError::new("not 8 bytes"))?;
///         Ok(u64::from_le_bytes(bytes))
///     }
/// }
/// let mut bytes = Vec::new();
/// Le.encode(&7, &mut bytes).unwrap();
/// assert_eq!(Le.decode(&bytes).unwrap(), 7);
/// ```
pub trait Codec<M>: Send + Sync + 'static {
    /// Appends `message`'s bytes to `into`.
    ///
    /// # Errors
    ///
    /// If the message cannot cross (it holds something that has no bytes):
    /// it is then reported undelivered.
    fn encode(&self, message: &M, into: &mut Vec<u8>) -> Result<(), CodecError>;

    /// The message `bytes` encode.
    ///
    /// # Errors
    ///
    /// If they encode none: the frame is handed back to the transport
    /// ([`InboundError::Decode`]).
    fn decode(&self, bytes: &[u8]) -> Result<M, CodecError>;
}

/// Why a [`Codec`] could not encode or decode.
///
/// ```
/// use stepsched::sched::remote::CodecError;
/// assert_eq!(CodecError::new("truncated").to_string(), "codec: truncated");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(String);

impl CodecError {
    /// An error with this text.
    pub fn new(why: impl Into<String>) -> Self {
        CodecError(why.into())
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "codec: {}", self.0)
    }
}

impl std::error::Error for CodecError {}
