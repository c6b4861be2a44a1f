//! Errors of the scheduler's operations; each hands back what it refused.

use core::fmt;

/// Why [`Scheduler::send`](crate::sched::Scheduler::send) refused a message; the
/// message is inside.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm ([`into_inner`](Self::into_inner)
/// takes the message back from any of them).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError<M> {
    /// No process ever had this PID.
    NoSuchProcess(M),
    /// The process has ended (its PID may already name a newer process, which
    /// the message does not reach).
    Finished(M),
    /// The scheduler is shutting down.
    ShuttingDown(M),
    /// The process's mailbox is bounded and full
    /// ([`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity)).
    Full(M),
    /// The process is on another node, which the transport cannot reach
    /// (`sched::remote`).
    NoConnection(M),
}

impl<M> SendError<M> {
    /// The message that was not delivered.
    pub fn into_inner(self) -> M {
        match self {
            SendError::NoSuchProcess(m)
            | SendError::Finished(m)
            | SendError::ShuttingDown(m)
            | SendError::Full(m)
            | SendError::NoConnection(m) => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            SendError::NoSuchProcess(_) => "NoSuchProcess",
            SendError::Finished(_) => "Finished",
            SendError::ShuttingDown(_) => "ShuttingDown",
            SendError::Full(_) => "Full",
            SendError::NoConnection(_) => "NoConnection",
        };
        write!(f, "{name}(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::NoSuchProcess(_) => "send failed: no such process",
            SendError::Finished(_) => "send failed: the process has finished",
            SendError::ShuttingDown(_) => "send failed: the scheduler is shutting down",
            SendError::Full(_) => "send failed: the process's mailbox is full",
            SendError::NoConnection(_) => "send failed: no connection to the process's node",
        })
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why [`Scheduler::terminate`](crate::sched::Scheduler::terminate) did nothing.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TerminateError {
    /// No process ever had this PID.
    NoSuchProcess,
    /// The process has already ended.
    Finished,
    /// The scheduler is exiting (the end of a shutdown): nothing more is
    /// delivered. Only [`Scheduler::exit`](crate::sched::Scheduler::exit)
    /// returns it.
    ShuttingDown,
}

impl fmt::Display for TerminateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TerminateError::NoSuchProcess => "no such process",
            TerminateError::Finished => "the process has finished",
            TerminateError::ShuttingDown => "the scheduler is shutting down",
        })
    }
}

impl std::error::Error for TerminateError {}

/// Why a [`Completer`](crate::sched::Completer) could not deliver its completion;
/// the result is inside.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm ([`into_inner`](Self::into_inner)
/// takes the result back from any of them).
#[non_exhaustive]
pub enum CompleteError<T> {
    /// The process has ended (or was never there).
    Finished(T),
    /// The scheduler has stopped.
    ShuttingDown(T),
}

impl<T> CompleteError<T> {
    /// The completion that was not delivered.
    pub fn into_inner(self) -> T {
        match self {
            CompleteError::Finished(t) | CompleteError::ShuttingDown(t) => t,
        }
    }
}

impl<T> fmt::Debug for CompleteError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompleteError::Finished(_) => "Finished(..)",
            CompleteError::ShuttingDown(_) => "ShuttingDown(..)",
        })
    }
}

impl<T> fmt::Display for CompleteError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompleteError::Finished(_) => "completion not delivered: the process has finished",
            CompleteError::ShuttingDown(_) => "completion not delivered: the scheduler has stopped",
        })
    }
}

impl<T> std::error::Error for CompleteError<T> {}

/// Why [`Scheduler::mailbox`](crate::sched::Scheduler::mailbox) made no receiver.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpawnRefused {
    /// The scheduler is shutting down.
    ShuttingDown,
    /// The scheduler is at its process limit (a receiver takes a process
    /// slot).
    AtCapacity,
}

impl fmt::Display for SpawnRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpawnRefused::ShuttingDown => "refused: the scheduler is shutting down",
            SpawnRefused::AtCapacity => "refused: the scheduler is at its process limit",
        })
    }
}

impl std::error::Error for SpawnRefused {}
