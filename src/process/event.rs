//! What a process receives: [`Event`], and why it may be cancelled.

use super::Process;
use core::fmt;
use std::error::Error;

/// One thing that happened to a process since its last step.
///
/// Non-exhaustive: the scheduler grows new kinds of event (timers, monitors),
/// so a `match` outside this crate ends with a `_` arm.
#[non_exhaustive]
pub enum Event<P: Process> {
    /// A command the process yielded has completed.
    Completion {
        /// The tag the process gave the command when it yielded it.
        tag: u64,
        /// The handler's reply, or why there is none.
        result: Result<P::Reply, CommandError>,
    },
    /// A message sent to this process's [`Pid`](super::Pid).
    Message(P::Message),
    /// The process is asked to stop. On [`Cancel::Shutdown`] it may still
    /// finish its work and return [`Status::Done`](super::Status::Done)
    /// before the shutdown timeout; after a [`Cancel::Terminate`] this step
    /// is its last, whatever status it returns.
    Cancel(Cancel),
    /// A message this process sent from a step was refused, because the
    /// mailbox of `to` is bounded and was full (see
    /// [`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity)):
    /// the message comes back, so that the process can retry, shed the
    /// load or slow down. It wakes the process like a completion does
    /// (from `Idle` and `Wait`).
    Refused {
        /// The process whose mailbox was full.
        to: super::Pid,
        /// The message, handed back.
        message: P::Message,
    },
    /// A process this one monitors ([`StepOutput::monitor`]) has ended, or
    /// one linked to it ([`StepOutput::link`]) has ended while this one
    /// traps exits ([`StepOutput::trap_exits`]). Comes once per monitor
    /// (and once per link), never after the step that called
    /// [`demonitor`] (or `unlink`).
    ///
    /// [`StepOutput::monitor`]: super::StepOutput::monitor
    /// [`StepOutput::link`]: super::StepOutput::link
    /// [`StepOutput::trap_exits`]: super::StepOutput::trap_exits
    /// [`demonitor`]: super::StepOutput::demonitor
    Down {
        /// The process that ended (the PID the monitor or link named).
        pid: super::Pid,
        /// How it ended.
        reason: super::ExitReason,
    },
    /// A timer the process set with
    /// [`StepOutput::wake_after`](super::StepOutput::wake_after) or
    /// [`wake_at`](super::StepOutput::wake_at) has reached its deadline.
    /// It comes at or after the deadline, never before, and at most once
    /// per timer set; not at all if it was cancelled first. An interval
    /// ([`wake_every`](super::StepOutput::wake_every)) gives one per tick.
    Timer {
        /// The tag the process gave the timer.
        tag: u64,
    },
    /// The one event of a call the process made with
    /// [`StepOutput::call`](super::StepOutput::call): the callee's reply,
    /// or why there is none (the timeout, or the request handed back).
    Reply {
        /// The tag the process gave the call.
        tag: u64,
        /// The reply, or why there is none.
        result: Result<P::Message, super::ReplyError<P::Message>>,
    },
}

impl<P: Process> fmt::Debug for Event<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Completion { tag, result } => f
                .debug_struct("Completion")
                .field("tag", tag)
                .field("ok", &result.is_ok())
                .finish_non_exhaustive(),
            Event::Message(_) => f.write_str("Message(..)"),
            Event::Cancel(why) => f.debug_tuple("Cancel").field(why).finish(),
            Event::Refused { to, .. } => f
                .debug_struct("Refused")
                .field("to", to)
                .finish_non_exhaustive(),
            Event::Down { pid, reason } => f
                .debug_struct("Down")
                .field("pid", pid)
                .field("reason", reason)
                .finish(),
            Event::Timer { tag } => f.debug_struct("Timer").field("tag", tag).finish(),
            Event::Reply { tag, result } => f
                .debug_struct("Reply")
                .field("tag", tag)
                .field("ok", &result.is_ok())
                .finish_non_exhaustive(),
        }
    }
}

/// Why a process is being cancelled.
///
/// Non-exhaustive: new reasons to cancel may be added in a minor release, so
/// a `match` outside this crate ends with a `_` arm (a process that does not
/// tell them apart treats every cancel as a request to stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cancel {
    /// The scheduler is shutting down.
    Shutdown,
    /// [`Scheduler::terminate`](crate::sched::Scheduler::terminate) was
    /// called for this process.
    Terminate,
}

/// Why a yielded command has no reply.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum CommandError {
    /// No handler is registered for the command's kind.
    UnknownCommand(&'static str),
    /// The handler failed, or completed with an error.
    Failed(Box<dyn Error + Send + Sync>),
    /// The handler panicked while taking the command.
    Panicked(String),
    /// The handler dropped its [`Completer`](crate::sched::Completer)
    /// without completing.
    Dropped,
    /// The command was waiting for a
    /// [blocking handler](crate::sched::Builder::blocking_handler) when the
    /// scheduler began to shut down, or was yielded after: it never ran.
    Cancelled,
    /// The command's timeout
    /// ([`StepOutput::yield_command_timeout`](super::StepOutput::yield_command_timeout))
    /// passed before its handler completed it. A completion the handler
    /// makes later is refused as stale (counted in `Stats::unknown_tags`
    /// and reported to `on_undelivered`).
    TimedOut,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::UnknownCommand(kind) => {
                write!(f, "no handler is registered for command kind {kind:?}")
            }
            CommandError::Failed(e) => write!(f, "command failed: {e}"),
            CommandError::Panicked(msg) => write!(f, "command handler panicked: {msg}"),
            CommandError::Dropped => f.write_str("command handler dropped its completer"),
            CommandError::Cancelled => {
                f.write_str("command cancelled: the scheduler shut down before its handler ran")
            }
            CommandError::TimedOut => f.write_str("command timed out"),
        }
    }
}

impl Error for CommandError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CommandError::Failed(e) => Some(&**e),
            _ => None,
        }
    }
}
