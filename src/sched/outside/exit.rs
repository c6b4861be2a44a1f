//! [`Scheduler::exit`]: OTP's `exit(Pid, Reason)` from a thread that is not
//! a process, sent as [`Pid::OUTSIDE`].

use crate::process::{ExitReason, Pid, Process};
use crate::sched::error::TerminateError;
use crate::sched::links::Signal;
use crate::sched::scheduler::Scheduler;
use crate::sched::shared::Refusal;

impl<P: Process> Scheduler<P> {
    /// Sends `pid` an exit signal with `reason` from outside the processes,
    /// from any thread: what [`StepOutput::exit`](crate::process::StepOutput::exit)
    /// does from a step, with [`Pid::OUTSIDE`] as the sender.
    ///
    /// - A target that [traps exits](crate::process::StepOutput::trap_exits)
    ///   receives `Event::Down { pid: Pid::OUTSIDE, reason }` and goes on.
    /// - One that does not: a normal reason ([`ExitReason::Done`]) does
    ///   nothing; any other ends it before its next step (a step is never
    ///   interrupted), with the outcome
    ///   [`ProcessError::Terminated`](crate::process::ProcessError::Terminated),
    ///   its watchers and links told `reason`. A process waiting for a
    ///   command is woken and ended at once.
    ///
    /// So a [`Supervisor`](crate::supervisor::Supervisor) sent
    /// [`ExitReason::Shutdown`] stops its children in order and then ends,
    /// as when its parent stops it, where
    /// [`terminate`](Scheduler::terminate) would end it at once. A process
    /// already ending is told nothing new. The exit is queued behind what
    /// the target's mailbox already holds from this thread.
    ///
    /// # Errors
    ///
    /// [`TerminateError::NoSuchProcess`] (no process ever had `pid`),
    /// [`TerminateError::Finished`] (it has ended, or it ended as the exit
    /// was queued), [`TerminateError::ShuttingDown`] (the scheduler is
    /// exiting). An accepted exit is not a promise that it ended the
    /// target: it may trap, or end by itself first.
    ///
    /// ```
    /// use stepsched::process::{Event, ExitReason, NoCommand, Process, ProcessError, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Waits for messages that never come.
    /// struct Sleeper;
    /// impl Process for Sleeper {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = ();
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::<Sleeper>::builder().workers(1).build()?;
    /// let sleeper = scheduler.submit_joinable(Sleeper, "sleep", ()).unwrap();
    /// // A normal reason does not end a process that does not trap...
    /// scheduler.exit(sleeper.pid(), ExitReason::Done).unwrap();
    /// // ...any other does.
    /// scheduler.exit(sleeper.pid(), ExitReason::Shutdown).unwrap();
    /// assert_eq!(sleeper.join(), Err(ProcessError::Terminated));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn exit(&self, pid: Pid, reason: ExitReason) -> Result<(), TerminateError> {
        let signal = Signal::Sent(Pid::OUTSIDE, Box::new(reason));
        self.shared
            .deliver_exit(pid, signal)
            .map_err(|refusal| match refusal {
                // `Remote` is forwarded by `deliver_exit`: never here.
                Refusal::NoSuchProcess | Refusal::Remote => TerminateError::NoSuchProcess,
                Refusal::ShuttingDown => TerminateError::ShuttingDown,
                // An exit is never counted against a bound: `Full` cannot
                // come; were it to, the process is past taking it.
                Refusal::Finished | Refusal::Full => TerminateError::Finished,
            })
    }
}
