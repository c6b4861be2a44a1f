//! Names on the process side: [`Name`], [`RegisterError`], and
//! [`StepOutput::register`] / [`whereis`](StepOutput::whereis).
//!
//! The registry itself is the scheduler's (`src/sched/registry/`); a step
//! reaches it through the same trait object that spawns its children
//! ([`Names`], a supertrait of the spawner), so the process model names no
//! scheduler type. A register from a step is applied at once and returns
//! its result at once: the registry is a shared map, not a step's effect.

use super::{Pid, Process, StepOutput};
use core::borrow::Borrow;
use core::fmt;
use core::ops::Deref;
use std::sync::Arc;

/// A registered name: an immutable, cheaply cloned string (an `Arc<str>`).
///
/// Built from a `&str`, a `String` or a `Box<str>` (one allocation, when it
/// is registered); lookups take a plain `&str` and allocate nothing
/// ([`Scheduler::whereis`](crate::sched::Scheduler::whereis)). Any string is
/// a name, the empty one included.
///
/// ```
/// use stepsched::process::Name;
///
/// let room = Name::from(format!("room-{}", 42));
/// assert_eq!(room.as_str(), "room-42");
/// assert_eq!(room, Name::from("room-42"));
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<str>);

impl Name {
    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(name: &str) -> Self {
        Name(Arc::from(name))
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Name(Arc::from(name))
    }
}

impl From<Box<str>> for Name {
    fn from(name: Box<str>) -> Self {
        Name(Arc::from(name))
    }
}

impl From<Arc<str>> for Name {
    fn from(name: Arc<str>) -> Self {
        Name(name)
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Self {
        name.clone()
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// `Hash` and `Eq` are those of the `str` (an `Arc<str>` hashes and compares
// its contents), as `Borrow` requires: a map keyed by `Name` is searched
// with a `&str`.
impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a name could not be registered
/// ([`Scheduler::register`](crate::sched::Scheduler::register),
/// [`StepOutput::register`]).
///
/// Non-exhaustive: new reasons may be added in a minor release.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// The name is registered to a live process, `holder`.
    NameTaken {
        /// The name asked for.
        name: Name,
        /// The process it is registered to.
        holder: Pid,
    },
    /// The process already has a name (a process holds at most one, as in
    /// Erlang; [`unregister`](crate::sched::Scheduler::unregister) it first).
    AlreadyNamed {
        /// The process.
        pid: Pid,
        /// The name it holds.
        name: Name,
    },
    /// The PID names no live process: never used, ended, or stale (its
    /// slot now holds a later process).
    NoSuchProcess(Pid),
    /// The scheduler is shutting down or stopped.
    ShuttingDown,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NameTaken { name, holder } => {
                write!(f, "the name {name:?} is registered to {holder}")
            }
            RegisterError::AlreadyNamed { pid, name } => {
                write!(f, "{pid} is already registered as {name:?}")
            }
            RegisterError::NoSuchProcess(pid) => write!(f, "no live process {pid}"),
            RegisterError::ShuttingDown => f.write_str("the scheduler is shutting down"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// The registry as a step sees it. Implemented by the scheduler; a
/// supertrait of the spawner, so that a step reaches both through one
/// trait object.
pub(crate) trait Names {
    fn register(&self, name: Name, pid: Pid) -> Result<(), RegisterError>;
    fn whereis(&self, name: &str) -> Option<Pid>;
}

impl<P: Process> StepOutput<'_, P> {
    /// Registers the stepping process under `name`, at once (Erlang's
    /// `register(Name, self())`): from this call on,
    /// [`whereis`](Self::whereis) and
    /// [`Scheduler::whereis`](crate::sched::Scheduler::whereis) find it,
    /// until it is unregistered or ends (its end removes the name before
    /// its monitors, links and joiner are told).
    ///
    /// ```
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    ///
    /// /// Takes the name it is given, then waits for messages.
    /// struct Room;
    ///
    /// impl Process for Room {
    ///     type Input = String;
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = stepsched::process::RegisterError;
    ///
    ///     fn init(&mut self, _: &str, _: String) -> Result<(), Self::Error> { Ok(()) }
    ///
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), Self::Error> {
    ///         if out.whereis("room-42") != Some(out.pid()) {
    ///             out.register("room-42")?; // fails the process if taken
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`RegisterError::NameTaken`] (naming the holder) if a live process
    /// holds `name`, [`RegisterError::AlreadyNamed`] if this process has a
    /// name already, [`RegisterError::ShuttingDown`] once shutdown began.
    pub fn register(&mut self, name: impl Into<Name>) -> Result<(), RegisterError> {
        self.spawner.register(name.into(), self.pid)
    }

    /// The process registered under `name`, if any (Erlang's `whereis/1`).
    /// Allocates nothing. As in Erlang, the process may end right after
    /// the answer: a send to the PID then reports it undelivered.
    pub fn whereis(&self, name: &str) -> Option<Pid> {
        self.spawner.whereis(name)
    }

    /// Sends `message` to the process registered as `name` on `node`,
    /// after this step (Erlang's `{Name, Node} ! Message`): the name is
    /// looked up on `node` when the message gets there, this node's own or
    /// another's (`sched::remote`). Named sends go out after the step's
    /// sends by PID, in the order made, with its calls and replies.
    ///
    /// A full bounded mailbox refuses it as it refuses a send, with
    /// [`Event::Refused`](super::Event::Refused) naming the process the
    /// name resolved to. A name that names no process there, or a node
    /// that cannot be reached, reports the message to that node's
    /// `on_undelivered` (this node's, if it cannot leave) with the PID
    /// `to` for which [`Pid::is_outside`] holds, in `to.node()`'s bits.
    pub fn send_named(&mut self, node: super::NodeId, name: impl Into<Name>, message: P::Message) {
        let name = name.into();
        let op = super::call::CallOp::Named {
            node,
            name,
            message,
        };
        self.effects.calls.push(op);
    }
}
