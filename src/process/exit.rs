//! [`ExitReason`]: how a process ended, as told to the processes that
//! monitor it or are linked to it (see [`Event::Down`](super::Event::Down));
//! and the exit signals a step sends to end others
//! ([`StepOutput::exit`], [`StepOutput::kill`]).

use super::{Pid, Process, StepOutput};
use core::fmt;

/// How a process ended, as carried by [`Event::Down`](super::Event::Down).
///
/// A summary, not the outcome itself: the process's output and error stay
/// with whoever joins it (`on_complete`, a
/// [`JoinHandle`](crate::sched::JoinHandle)), so that any number of
/// watchers can be told without the output being `Clone`.
///
/// | reason | Erlang's | the watched process … |
/// |---|---|---|
/// | `Done` | `normal` | returned [`Status::Done`](super::Status::Done) |
/// | `Failed` | `{error, ..}` | returned an error from `step` (or `close` panicked after `Done`: `Panicked`) |
/// | `Panicked` | `{panic, ..}` | panicked in `step`, `close` or a command handler |
/// | `Terminated` | `kill` | was ended by [`Scheduler::terminate`](crate::sched::Scheduler::terminate) |
/// | `Linked(pid)` | the linked reason | was ended by the abnormal end of `pid`, a process linked to it that it did not trap (its outcome: `Terminated`) |
/// | `Killed` | `killed` | was ended by [`StepOutput::kill`](super::StepOutput::kill), OTP's untrappable `exit(Pid, kill)` (its outcome: `Terminated`) |
/// | `Shutdown` | `shutdown` | was closed by the scheduler's shutdown (or sent as an exit's reason: a supervisor stopping a child) |
/// | `Exit(summary)` | any other term | was ended by an [`exit`](super::StepOutput::exit) with this reason |
/// | `NoProc` | `noproc` | had already ended, or never existed, when the monitor or link was set |
/// | `NoConnection` | `noconnection` | is on another node, which went away (or could not be reached) before its end was told (`sched/remote/`) |
///
/// Only `Done` is a normal end: a linked process that does not trap exits
/// is terminated by any other reason (see
/// [`StepOutput::link`](super::StepOutput::link)).
///
/// The reason is the process's own outcome, the one its joiner gets, but
/// for a process ended by an exit signal: its outcome is then
/// [`ProcessError::Terminated`](super::ProcessError::Terminated), and its
/// watchers and links are told the reason the exit carried (`Linked` for a
/// link's, `Killed` for a kill's, the reason given to
/// [`StepOutput::exit`](super::StepOutput::exit) otherwise). An exit that reaches a process already ending (during its last
/// step, or once a terminate or shutdown closes it) changes nothing, and
/// two linked processes that fail together each tell their own failure.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitReason {
    /// It finished with [`Status::Done`](super::Status::Done).
    Done,
    /// Its step returned this error (its `Debug` form).
    Failed(Summary),
    /// It panicked with this message.
    Panicked(Summary),
    /// [`Scheduler::terminate`](crate::sched::Scheduler::terminate) ended it.
    Terminated,
    /// A process linked to it ended abnormally, and this one did not trap
    /// exits: it was ended by that exit, before another step (its outcome
    /// is [`ProcessError::Terminated`](super::ProcessError::Terminated)).
    /// Told only then: a process that ended by itself, or by a terminate,
    /// with that exit on its way is told with its own reason.
    Linked(super::Pid),
    /// The scheduler's shutdown closed it, or an
    /// [`exit`](super::StepOutput::exit) with this reason ended it (OTP's
    /// `shutdown`: what a supervisor sends a child it stops).
    Shutdown,
    /// No such process: it had already ended (or never existed) when the
    /// monitor or link reached it.
    NoProc,
    /// A [`StepOutput::kill`](super::StepOutput::kill) ended it: the
    /// untrappable exit (OTP's `kill`, told as `killed`, which is itself
    /// an ordinary, trappable reason when sent with `exit`).
    Killed,
    /// An [`exit`](super::StepOutput::exit) ended it with a reason of the
    /// sender's own words (any OTP term that is not one of the above).
    Exit(Summary),
    /// It is on another node, and the connection to that node was lost
    /// (or never made) before its end was told: how it ended, or whether
    /// it has, is unknown. Told once to each monitor and link of a process
    /// of that node ([`Inbound::node_down`](crate::sched::remote::Inbound::node_down)).
    NoConnection,
}

impl ExitReason {
    /// Whether the process finished normally (`Done`). Any other end
    /// terminates the processes linked to it that do not trap exits.
    pub fn is_normal(&self) -> bool {
        matches!(self, ExitReason::Done)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Done => f.write_str("done"),
            ExitReason::Failed(e) => write!(f, "failed: {e}"),
            ExitReason::Panicked(m) => write!(f, "panicked: {m}"),
            ExitReason::Terminated => f.write_str("terminated"),
            ExitReason::Linked(pid) => write!(f, "ended with linked process {pid}"),
            ExitReason::Shutdown => f.write_str("closed by shutdown"),
            ExitReason::NoProc => f.write_str("no such process"),
            ExitReason::Killed => f.write_str("killed"),
            ExitReason::Exit(why) => write!(f, "exited: {why}"),
            ExitReason::NoConnection => f.write_str("no connection to its node"),
        }
    }
}

/// The text of an [`ExitReason::Failed`] or [`ExitReason::Panicked`]: a
/// string behind one thin pointer.
///
/// Why not a `String`: a `Down` travels in the mailbox node every event
/// travels in, so its size is every event's size. With a `String` (or a
/// `Box<str>`, two words) in the reason, `Event::Down` was the largest
/// variant and grew every process's mailbox node by 8 bytes; with one
/// pointer it fits in the space a `Completion` already takes (a unit test
/// in `src/sched/links/mod.rs` holds it to that).
#[derive(Clone, PartialEq, Eq, Hash)]
// The extra allocation clippy warns of is the price of the thin pointer.
#[allow(clippy::box_collection)]
pub struct Summary(Box<String>);

impl Summary {
    /// Wraps `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Summary(Box::new(text.into()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl core::ops::Deref for Summary {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq<str> for Summary {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Summary {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A step's exit signals (OTP's `exit/2`), beside the links of
/// [`StepOutput::link`].
impl<P: Process> StepOutput<'_, P> {
    /// Sends an exit signal with `reason` to `pid`, after the step: OTP's
    /// `exit(Pid, Reason)`. What `pid` does with it:
    ///
    /// - if it [traps exits](StepOutput::trap_exits), it receives
    ///   [`Event::Down`](super::Event::Down)` { pid: sender, reason }` and
    ///   goes on (whatever the reason, [`ExitReason::Done`] too);
    /// - if not, a normal reason ([`ExitReason::Done`], OTP's `normal`)
    ///   does nothing, and any other ends it, before its next step and
    ///   without one (a step is never interrupted): its outcome is
    ///   [`ProcessError::Terminated`](super::ProcessError::Terminated),
    ///   and its watchers and links are told `reason` (a link that does
    ///   not trap then ends in turn, told
    ///   [`ExitReason::Linked`]). A process waiting for a command
    ///   ([`Status::Wait`](super::Status::Wait)) is ended at once, without waiting for the
    ///   command (its completion, when it comes, is dropped), and so is an
    ///   idle one.
    ///
    /// No link is needed, and none is made or removed. An exit to a
    /// process already ending (its last step has begun, a terminate or
    /// shutdown is closing it, another exit ended it) changes nothing: it
    /// is told its own end. An exit to an unknown or ended PID does
    /// nothing, as in OTP. Exits go out after the step's monitor and link
    /// requests, in the order the step made them. `reason`
    /// [`ExitReason::Killed`] is an ordinary, trappable reason here, as
    /// OTP's `killed`; the untrappable one is [`kill`](StepOutput::kill).
    ///
    /// Sent to itself, the exit reaches the process after this step, as
    /// any other: trapping, its next step gets the `Down`; not, it ends
    /// before its next step (unless this step ends it first). Unlike
    /// OTP, `exit(self, Done)` to a process that does not trap does
    /// nothing: a normal end is a [`Status::Done`](super::Status::Done) with an output.
    ///
    /// ```
    /// use stepsched::process::{Event, ExitReason, NoCommand, Pid, Process, StepOutput};
    ///
    /// /// Ends the process it is given, once.
    /// struct Stopper;
    ///
    /// impl Process for Stopper {
    ///     type Input = ();
    ///     type Message = Pid;
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         for event in events.drain(..) {
    ///             if let Event::Message(target) = event {
    ///                 out.exit(target, ExitReason::Shutdown);
    ///                 out.done(());
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub fn exit(&mut self, pid: Pid, reason: ExitReason) {
        self.effects.links.push(super::LinkOp::Exit(pid, reason));
    }

    /// Sends `pid` the exit signal no process can trap, after the step:
    /// OTP's `exit(Pid, kill)`. It ends `pid` before its next step, as a
    /// non-trapped [`exit`](StepOutput::exit) does, trapping or not; its outcome
    /// is [`ProcessError::Terminated`](super::ProcessError::Terminated)
    /// and its watchers and links are told [`ExitReason::Killed`] (which a
    /// trapping link receives as a `Down`, as OTP's `killed`). A process
    /// already ending, an unknown or ended PID: as for `exit`. A kill of
    /// itself ends the process before its next step.
    pub fn kill(&mut self, pid: Pid) {
        self.effects.links.push(super::LinkOp::Kill(pid));
    }
}
