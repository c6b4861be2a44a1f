//! The process model: what the scheduler runs.
//!
//! A *process* is a state machine advanced one [`step`](Process::step) at a
//! time. Between steps it holds no thread: it waits, as a few words in the
//! process table, for the events it asked for.
//!
//! - [`init`](Process::init) prepares it for one entry point (`method`) with
//!   its input. It runs once, on the thread that submits or spawns it.
//! - [`step`](Process::step) receives every [`Event`] that arrived since
//!   the last step — completions of commands it yielded (matched by a `u64`
//!   tag), messages sent to its [`Pid`], a cancel request — and writes to a
//!   [`StepOutput`]: commands to dispatch, messages to send, children to
//!   spawn, and a [`Status`].
//! - [`close`](Process::close) releases resources. It is called exactly once
//!   for every process that was started, however it ended.
//!
//! Message, command, reply, output and error types are the embedder's
//! (associated types), so a step allocates nothing on the scheduler's behalf:
//! events arrive in a buffer the worker reuses.
//!
//! A scheduler runs one process type. To host several kinds of process
//! (interpreters, rooms, a supervisor) in one, write each as a [`Kind`] and
//! let [`kinds!`](crate::kinds) make the enum: see [`kinds`].
//!
//! # States
//!
//! Each process has one atomic state word (`process/state/`) with its
//! [`Lifecycle`] and two *wakeup* bits:
//!
//! ```text
//!  submit ──> Ready ──(worker takes it)──> Running ──(Done/error)──> Complete
//!               ^                            │  │
//!               │ completion or cancel       │  └──(Idle)──> Idle ───┐
//!               ├──────────────── Blocked <──┘(Wait)                 │
//!               └──────────────── message, completion or cancel ─────┘
//! ```
//!
//! An event that arrives while the process is **Running** cannot queue it (a
//! worker holds it); it sets a wakeup bit instead, and the worker's own
//! transition out of Running sees the bit and re-queues the process. So:
//!
//! - a process is never run by two workers at once (only `Ready -> Running`
//!   starts a step, and only the worker that dequeued it performs it);
//! - every event pushed is seen by a later step (the event is in the queue
//!   before the notifier's CAS; a notifier either queues the process or
//!   leaves a bit the running worker must see);
//! - a process is queued at most once at any time (only the transition into
//!   Ready queues it, and it is made by exactly one party).
//!
//! loom models of these races are in `loom-tests/tests/state.rs`.

pub(crate) mod call;
mod event;
mod exit;
pub mod kinds;
mod output;
mod pid;
mod registry;
pub(crate) mod state;
pub(crate) mod timer;

pub use call::{ReplyError, ReplyTo};
pub use event::{Cancel, CommandError, Event};
pub use exit::{ExitReason, Summary};
pub use kinds::{Hosts, Kind};
pub use output::{SpawnError, SpawnOptions, Status, StepOutput};
pub(crate) use pid::LOCAL_SLOTS;
pub use pid::{NodeId, Pid, NODE_BITS};
pub use registry::{Name, RegisterError};
pub use state::Lifecycle;

pub(crate) use output::{Effects, LinkOp, Spawner};
pub(crate) use registry::Names;

use core::fmt;

/// A step-driven process. See the [module docs](self).
///
/// # Examples
///
/// A process that counts the messages it receives and finishes at a limit:
///
/// ```
/// use stepsched::process::{Event, Process, Status, StepOutput};
///
/// struct Counter { seen: u32, limit: u32 }
///
/// impl Process for Counter {
///     type Input = u32;
///     type Message = u32;
///     type Command = stepsched::process::NoCommand;
///     type Reply = ();
///     type Output = u32;
///     type Error = String;
///
///     fn init(&mut self, method: &str, limit: u32) -> Result<(), String> {
///         match method {
///             "count" => { self.limit = limit; Ok(()) }
///             other => Err(format!("no method {other}")),
///         }
///     }
///
///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
///         -> Result<(), String>
///     {
///         for event in events.drain(..) {
///             if let Event::Message(n) = event {
///                 self.seen += n;
///             }
///         }
///         if self.seen >= self.limit {
///             out.done(self.seen);
///         } else {
///             out.set_status(Status::Idle);
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait Process: Send + Sized + 'static {
    /// The input of [`init`](Process::init).
    type Input;
    /// What other processes and outside threads send to this one.
    type Message: Send + 'static;
    /// What this process yields to command handlers.
    type Command: Command + Send + 'static;
    /// What a handler completes a command with.
    type Reply: Send + 'static;
    /// The result of a process that finishes.
    type Output: Send + 'static;
    /// The error a process may fail with.
    type Error: Send + fmt::Debug + 'static;

    /// Prepares the process to run entry point `method` with `input`.
    ///
    /// # Errors
    ///
    /// An error refuses the process: it is handed back to whoever submitted
    /// or spawned it, and `close` is not called.
    fn init(&mut self, method: &str, input: Self::Input) -> Result<(), Self::Error>;

    /// Advances the process with the events that arrived since the last
    /// step, oldest first: at most
    /// [`Builder::max_events_per_step`](crate::sched::Builder::max_events_per_step)
    /// of them (1,024 by default); the rest stay queued for the next step,
    /// which comes soon: a process with events queued is runnable whatever
    /// status it returns.
    ///
    /// Drain the events you handle. Events left in `events` are not
    /// dropped: the next step gets them first, ahead of newer ones. If the
    /// step returns [`Status::Idle`] with events left, that step comes at
    /// once (events are what wakes an idle process); with [`Status::Wait`],
    /// at once if a completion or cancel is among them (or among more than
    /// a step's cap still queued), else with the completion that wakes it.
    /// So a step that handles half its events and returns `Continue` sees
    /// the other half next. To ignore an event, drain it. Events left when
    /// the process ends go to
    /// [`Builder::on_undelivered`](crate::sched::Builder::on_undelivered).
    ///
    /// # Errors
    ///
    /// An error ends the process with [`ProcessError::Failed`]; `close` runs.
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), Self::Error>;

    /// Releases resources. Called exactly once for every started process.
    fn close(&mut self) {}

    /// The names of this type's kinds, for per-kind figures
    /// ([`Builder::count_kinds`](crate::sched::Builder::count_kinds)):
    /// [`kinds!`](crate::kinds) lists its variants. Empty by default: a
    /// type of one kind has no per-kind figures.
    const KINDS: &'static [&'static str] = &[];

    /// The index of this process's kind in [`KINDS`](Process::KINDS)
    /// (0 by default; [`kinds!`](crate::kinds) matches the variant). Called
    /// only when kinds are counted. An index past `KINDS` is not counted,
    /// nor is a process whose `kind_index` panics (the panic is contained).
    fn kind_index(&self) -> usize {
        0
    }
}

/// A command a process yields; its kind picks the handler.
pub trait Command {
    /// The name of the handler that serves this command.
    fn kind(&self) -> &'static str;
}

/// A command type for processes that yield none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCommand {}

impl Command for NoCommand {
    fn kind(&self) -> &'static str {
        match *self {}
    }
}

/// How a process ended, if not with [`Status::Done`].
///
/// Non-exhaustive: new ways to end may be added in a minor release, so a
/// `match` outside this crate ends with a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessError<E> {
    /// `init` or `step` returned this error.
    Failed(E),
    /// `init`, `step` or `close` panicked with this message.
    Panicked(String),
    /// [`Scheduler::terminate`](crate::sched::Scheduler::terminate) ended it.
    Terminated,
    /// Shutdown closed it before it finished.
    Shutdown,
}

impl<E: fmt::Debug> fmt::Display for ProcessError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Failed(e) => write!(f, "process failed: {e:?}"),
            ProcessError::Panicked(msg) => write!(f, "process panicked: {msg}"),
            ProcessError::Terminated => f.write_str("process was terminated"),
            ProcessError::Shutdown => f.write_str("process was closed by shutdown"),
        }
    }
}

impl<E: fmt::Debug> std::error::Error for ProcessError<E> {}

/// The result of a process: its output, or how it ended otherwise.
pub type Outcome<P> = Result<<P as Process>::Output, ProcessError<<P as Process>::Error>>;

/// Turns a panic payload into a message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}
