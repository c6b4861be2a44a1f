//! [`TimerRef`], the handle [`Scheduler::send_after`] returns, and
//! [`Scheduler::cancel_timer`], Erlang's `erlang:cancel_timer`.
//!
//! A handle names its wheel entry (wheel, key: slab index and generation)
//! and the target's PID. Cancelling locks that wheel and removes the entry
//! if the wheel still holds it for that PID and as a `send_after`; the
//! message comes back with it. Firing takes due entries out under the same
//! lock, so a cancel and a firing of one timer are ordered by it: exactly
//! one of "delivered" and "cancelled, message handed back" happens. A
//! handle whose timer has fired and whose slot another timer now uses
//! fails the generation check (or, once the 32-bit generation has wrapped,
//! the PID and kind check), so it never cancels another timer.

use super::wheel::Key;
use crate::process::{Pid, Process};
use crate::sched::scheduler::Scheduler;

/// A pending [`Scheduler::send_after`], to cancel with
/// [`Scheduler::cancel_timer`] (Erlang's timer reference).
///
/// Small and `Copy`; ignoring it is fine (the message is delivered as if
/// there were no handle). A handle is only meaningful to the scheduler
/// that made it: given to another, it cancels nothing, or, if that
/// scheduler happens to hold a timer at the same place for the same PID,
/// that one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerRef {
    pid: Pid,
    key: u64,
    wheel: u32,
}

impl TimerRef {
    pub(crate) fn new(pid: Pid, key: Key, wheel: usize) -> Self {
        TimerRef {
            pid,
            key: key.into_raw(),
            wheel: u32::try_from(wheel).expect("fewer than 2^32 workers"),
        }
    }

    /// The process the message is for.
    pub fn pid(&self) -> Pid {
        self.pid
    }
}

impl<P: Process> Scheduler<P> {
    /// Cancels the [`send_after`](Scheduler::send_after) that `timer`
    /// names, from any thread, and hands its message back: `Some(message)`
    /// if it was cancelled before it fired (the message is then never
    /// delivered and never goes to `on_undelivered`), `None` if it had
    /// fired already (the message is delivered, or on its way, or went to
    /// `on_undelivered`), had been cancelled, or was closed by shutdown.
    ///
    /// A cancel racing the firing is decided by the wheel's lock: exactly
    /// one of the two happens. A stale handle (its timer fired, and its
    /// place in the wheel holds another timer now) cancels nothing. The
    /// cost: one lock of the wheel that holds the timer, uncontended unless
    /// its worker is firing or inserting at that moment. A cancelled timer
    /// is not counted in [`TimerStats::cancelled`](crate::sched::TimerStats)
    /// (that counts what workers cancel).
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Never ends by itself.
    /// struct Idle;
    ///
    /// impl Process for Idle {
    ///     type Input = ();
    ///     type Message = &'static str;
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let idle = scheduler.submit(Idle, "idle", ()).unwrap();
    /// let timer = scheduler.send_after(idle, "in an hour", Duration::from_secs(3600)).unwrap();
    /// assert_eq!(scheduler.cancel_timer(&timer), Some("in an hour"));
    /// assert_eq!(scheduler.cancel_timer(&timer), None, "cancelled already");
    /// ```
    pub fn cancel_timer(&self, timer: &TimerRef) -> Option<P::Message> {
        let wheel = self.shared.timers.wheels.get(timer.wheel as usize)?;
        wheel.cancel_send(Key::from_raw(timer.key), timer.pid.into_raw())
    }
}
