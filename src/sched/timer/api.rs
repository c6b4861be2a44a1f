//! [`Scheduler::send_after`], and closing the wheels at shutdown.

use super::wheel::{Fired, TimerKind, TICK_SHIFT};
use super::TimerClock;
use crate::process::state::Lifecycle;
use crate::process::{CommandError, Event, Pid, Process};
use crate::sched::error::SendError;
use crate::sched::scheduler::Scheduler;
use crate::sched::shared::{phase, Shared};
use crate::sched::timer::cancel::TimerRef;
use std::time::Duration;

/// Whether `event` was made by a timer (an `Event::Timer`, or a command's
/// `TimedOut` completion): such an event that reaches no process is
/// dropped silently, since nobody waits for it (its process ended or
/// cancelled it), instead of going to `on_undelivered`.
pub(crate) fn is_timer_made<P: Process>(event: &Event<P>) -> bool {
    matches!(
        event,
        Event::Timer { .. }
            | Event::Completion {
                result: Err(CommandError::TimedOut),
                ..
            }
    )
}

impl<P: Process> Scheduler<P> {
    /// Sends `message` to `to` after `delay`, from any thread.
    ///
    /// The message waits in a worker's timing wheel (no thread, no
    /// allocation per call in steady state), and is delivered at or after
    /// the deadline as if by [`send`](Scheduler::send). If the process has
    /// ended by then, or its bounded mailbox is full then
    /// ([`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity):
    /// no one is left to hand it back to), the message goes to `on_undelivered`
    /// ([`Builder::on_undelivered`](crate::sched::Builder::on_undelivered)),
    /// as does one still waiting when the scheduler shuts down. (If it fires
    /// just as the process ends, it may reach `on_undelivered` only when
    /// the slot is reused or at shutdown: see that hook.) `Duration::ZERO`
    /// delivers at the wheel's next tick; a delay too far for the clock
    /// (`Duration::MAX`) saturates and never fires, and the message waits
    /// for the shutdown that hands it to `on_undelivered`.
    ///
    /// The [`TimerRef`] it returns cancels it:
    /// [`cancel_timer`](Scheduler::cancel_timer) hands the message back if
    /// it has not fired yet. Ignoring the handle is fine.
    ///
    /// # Errors
    ///
    /// [`SendError`] hands the message back at once: no such process, it
    /// has already finished, or the scheduler is shutting down.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Ends with the first message it gets.
    /// struct Wait;
    ///
    /// impl Process for Wait {
    ///     type Input = ();
    ///     type Message = &'static str;
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = &'static str;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         if let Some(Event::Message(text)) = events.pop() {
    ///             out.done(text);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let waiter = scheduler.submit_joinable(Wait, "wait", ()).unwrap();
    /// let sent = Instant::now();
    /// scheduler.send_after(waiter.pid(), "later", Duration::from_millis(5)).unwrap();
    /// assert_eq!(waiter.join(), Ok("later"));
    /// assert!(sent.elapsed() >= Duration::from_millis(5));
    /// ```
    pub fn send_after(
        &self,
        to: Pid,
        message: P::Message,
        delay: Duration,
    ) -> Result<TimerRef, SendError<P::Message>> {
        let shared = &*self.shared;
        if shared.core.phase() != phase::RUNNING {
            return Err(SendError::ShuttingDown(message));
        }
        let Some(slot) = shared.core.table.get(to.key()) else {
            return Err(SendError::NoSuchProcess(message));
        };
        let state = slot.state.load();
        if state.generation() != to.generation() {
            // Generations only grow (see `Shared::deliver`).
            return Err(if state.generation() > to.generation() {
                SendError::Finished(message)
            } else {
                SendError::NoSuchProcess(message)
            });
        }
        match state.lifecycle() {
            Lifecycle::Free => return Err(SendError::NoSuchProcess(message)),
            Lifecycle::Complete => return Err(SendError::Finished(message)),
            _ => {}
        }
        // The wheel of the worker that last ran it (a hint): that worker is
        // likely to be the one to run it when the message comes.
        let worker = slot.figures.last_worker_hint() % shared.core.remotes.len();
        let clock = &shared.timers.clock;
        let nanos = clock.nanos(clock.instant()); // one clock read
        let (now, deadline) = (
            nanos >> TICK_SHIFT,
            TimerClock::deadline_after(nanos, delay),
        );
        let wheel = &shared.timers.wheels[worker];
        match wheel.insert(
            now,
            deadline,
            to.into_raw(),
            0,
            TimerKind::Send,
            Some(message),
        ) {
            Ok((key, lowered)) => {
                if lowered {
                    // The wake rule (`timer/mod.rs`): no sleeper may keep
                    // a deadline that misses this timer.
                    shared.core.idle.notify_one();
                }
                Ok(TimerRef::new(to, key, worker))
            }
            // Shutdown closed the wheels after our phase check.
            Err(message) => Err(SendError::ShuttingDown(
                message.expect("a send_after entry carries its message"),
            )),
        }
    }
}

impl<P: Process> Shared<P> {
    /// Closes every wheel: their pending timers are cancelled (counted in
    /// the returned number) and `send_after` messages reported as
    /// undelivered. Later inserts are refused.
    pub(crate) fn close_timers(&self) -> usize {
        let mut fired: Vec<Fired> = Vec::new();
        let mut messages = Vec::new();
        for wheel in self.timers.wheels.iter() {
            wheel.close(&mut fired, &mut messages);
        }
        let mut messages = messages.into_iter();
        for timer in &fired {
            if timer.kind == TimerKind::Send {
                if let Some(message) = messages.next() {
                    self.undelivered(Pid::from_raw(timer.pid), Event::Message(message));
                }
            }
        }
        fired.len()
    }
}
