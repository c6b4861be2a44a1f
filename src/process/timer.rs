//! Timers on the process side: [`StepOutput::wake_after`],
//! [`wake_at`](StepOutput::wake_at), [`wake_every`](StepOutput::wake_every),
//! [`cancel_timer`](StepOutput::cancel_timer)
//! and [`yield_command_timeout`](StepOutput::yield_command_timeout).
//!
//! A step only records what it asks for; its worker applies it right after
//! the step (`src/sched/worker/timers.rs`), into its timing wheel
//! (`src/sched/timer/`).

use super::{Process, StepOutput};
use std::time::{Duration, Instant};

/// When a timer is due, as a step asked for it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum When {
    After(Duration),
    At(Instant),
}

/// One timer operation of a step, applied in call order after it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TimerOp {
    /// Deliver `Event::Timer { tag }` then (replacing a pending timer of
    /// that tag).
    Wake { tag: u64, when: When },
    /// Cancel the pending timer `tag`, if any.
    Cancel { tag: u64 },
    /// Time out command `tag` then, if it has not completed.
    Timeout { tag: u64, after: Duration },
    /// Deliver `Event::Timer { tag }` every `period` (replacing a pending
    /// timer of that tag).
    Every { tag: u64, period: Duration },
}

impl<P: Process> StepOutput<'_, P> {
    /// The scheduler's time: the OS clock's `Instant::now()`, or under a
    /// [simulation](crate::sched::Builder::simulation) its virtual time (as
    /// an `Instant` past the scheduler's start). The clock the timers run
    /// on: a step that measures time with it, instead of `Instant::now`,
    /// replays under a simulation.
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Sleeps a minute, then ends with how long it slept.
    /// #[derive(Default)]
    /// struct Nap(Option<std::time::Instant>);
    /// impl Process for Nap {
    ///     type Input = (); type Message = (); type Command = NoCommand;
    ///     type Reply = (); type Output = Duration; type Error = ();
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
    ///         -> Result<(), ()> {
    ///         match self.0 {
    ///             None => {
    ///                 self.0 = Some(out.now());
    ///                 out.wake_after(0, Duration::from_secs(60));
    ///             }
    ///             Some(start) => out.done(out.now() - start),
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let simulated = Scheduler::builder().simulation(1).build().unwrap();
    /// let nap = simulated.submit_joinable(Nap::default(), "nap", ()).unwrap();
    /// let slept = nap.join().unwrap(); // at once: a virtual minute
    /// assert!(slept >= Duration::from_secs(60) && slept < Duration::from_secs(61));
    /// ```
    pub fn now(&self) -> Instant {
        self.spawner.now()
    }

    /// Asks for an [`Event::Timer { tag }`](super::Event::Timer) in a step
    /// at or after `after` from now. The process may return any status
    /// meanwhile; the timer wakes it from `Idle` or `Wait`, as a message
    /// wakes an idle one. Setting a timer with the tag of one still
    /// pending replaces it (one event, at the new deadline).
    ///
    /// Timers are never early. How late they are: about the wake-up latency
    /// of a parked thread (tens of µs) on an idle scheduler; the rest of
    /// the current step on a busy worker; see `src/sched/timer/mod.rs`.
    /// When the process ends, its pending timers are cancelled (and those
    /// set by the step it ends in are never armed).
    ///
    /// Any duration is taken: `Duration::ZERO` fires at the next tick of the
    /// worker's wheel, still through an event; a deadline too far for the
    /// clock (`Duration::MAX`) saturates and never fires, and the timer is
    /// cancelled with its process.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Sleeps 10 ms, then ends with how long it slept.
    /// struct Nap(Option<Instant>);
    ///
    /// impl Process for Nap {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = Duration;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         match self.0 {
    ///             None => {
    ///                 self.0 = Some(Instant::now());
    ///                 out.wake_after(1, Duration::from_millis(10)); // and idle
    ///             }
    ///             Some(start) => {
    ///                 if events.drain(..).any(|e| matches!(e, Event::Timer { tag: 1 })) {
    ///                     out.done(start.elapsed());
    ///                 }
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let nap = scheduler.submit_joinable(Nap(None), "nap", ()).unwrap();
    /// assert!(nap.join().unwrap() >= Duration::from_millis(10));
    /// ```
    pub fn wake_after(&mut self, tag: u64, after: Duration) {
        let when = When::After(after);
        self.effects.timers.push(TimerOp::Wake { tag, when });
    }

    /// Like [`wake_after`](Self::wake_after), due at the instant `at` (one
    /// that has passed fires at once, still through an event).
    pub fn wake_at(&mut self, tag: u64, at: Instant) {
        let when = When::At(at);
        self.effects.timers.push(TimerOp::Wake { tag, when });
    }

    /// Cancels the pending timer `tag` (set by `wake_after`, `wake_at` or
    /// `wake_every`):
    /// no `Event::Timer` for it comes after this step, even if it fired
    /// just before and its event is on the way. Does nothing if no such
    /// timer is pending.
    pub fn cancel_timer(&mut self, tag: u64) {
        self.effects.timers.push(TimerOp::Cancel { tag });
    }

    /// Asks for an [`Event::Timer { tag }`](super::Event::Timer) every
    /// `period`, the first `period` from now, until
    /// [`cancel_timer(tag)`](Self::cancel_timer), a timer set again with
    /// `tag`, or the end of the process. Like
    /// [`wake_after`](Self::wake_after) otherwise: it wakes the process
    /// from `Idle` or `Wait`, never early.
    ///
    /// A process that is late never gets a burst: the next tick is armed
    /// only after the step that is given the last one, `period` after that
    /// step (tokio's `MissedTickBehavior::Delay`), so no two ticks of one
    /// interval are ever queued at once, and a process that falls behind
    /// gets fewer ticks, not a backlog. Ticks drift by the time each takes
    /// to reach a step; use [`wake_at`](Self::wake_at) from a fixed origin
    /// for a schedule that must not.
    ///
    /// # Bounds
    ///
    /// A period shorter than the wheel's tick (16.384 µs), `Duration::ZERO`
    /// included, is taken as one tick: a tick a step, on a scheduler with
    /// nothing else to do. A period longer than about 9 years is taken as
    /// that, and so never comes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Counts three ticks of 1 ms, then ends.
    /// struct Beat(u32);
    ///
    /// impl Process for Beat {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = u32;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         if events.is_empty() {
    ///             out.wake_every(1, Duration::from_millis(1));
    ///         }
    ///         self.0 += events.drain(..).filter(|e| matches!(e, Event::Timer { tag: 1 })).count() as u32;
    ///         if self.0 == 3 {
    ///             out.done(self.0);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let beat = scheduler.submit_joinable(Beat(0), "beat", ()).unwrap();
    /// assert_eq!(beat.join(), Ok(3));
    /// ```
    pub fn wake_every(&mut self, tag: u64, period: Duration) {
        self.effects.timers.push(TimerOp::Every { tag, period });
    }

    /// [`yield_command`](Self::yield_command) with a deadline: if the
    /// handler has not completed the command `timeout` from now, the
    /// process gets `Completion { tag, result: Err(CommandError::TimedOut) }`
    /// and the tag is done: a later completion of it is refused as stale
    /// (as any completion of a tag the process no longer waits for), so the
    /// process never sees two. A completion that comes first cancels the
    /// timeout. `Duration::ZERO` times the command out at the wheel's next
    /// tick unless its handler completed it first (a handler on the worker
    /// runs right after the step, before that tick); `Duration::MAX` never
    /// times it out, as [`yield_command`](Self::yield_command).
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Command, CommandError, Event, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// A command nobody answers in time.
    /// struct Slow;
    /// impl Command for Slow {
    ///     fn kind(&self) -> &'static str { "slow" }
    /// }
    ///
    /// struct Caller;
    ///
    /// impl Process for Caller {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = Slow;
    ///     type Reply = ();
    ///     type Output = bool;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         if events.is_empty() {
    ///             out.yield_command_timeout(7, Slow, Duration::from_millis(5));
    ///         }
    ///         for event in events.drain(..) {
    ///             if let Event::Completion { tag: 7, result } = event {
    ///                 out.done(matches!(result, Err(CommandError::TimedOut)));
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder()
    ///     .workers(1)
    ///     // Keeps the completer and never answers.
    ///     .handler("slow", |_: Slow, completer| std::mem::forget(completer))
    ///     .build()
    ///     .unwrap();
    /// let caller = scheduler.submit_joinable(Caller, "call", ()).unwrap();
    /// assert_eq!(caller.join(), Ok(true));
    /// ```
    pub fn yield_command_timeout(&mut self, tag: u64, command: P::Command, timeout: Duration) {
        self.yield_command(tag, command);
        self.effects.timers.push(TimerOp::Timeout {
            tag,
            after: timeout,
        });
    }
}
