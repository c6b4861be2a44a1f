//! The builder's hooks: the embedder's code called on the workers' start,
//! stop, park and unpark, on each process's end, and on each event that
//! reached no process.

use super::Builder;
use crate::process::{Event, Outcome, Pid, Process};
use crate::sched::observe::step_hook::StepInfo;
#[cfg(doc)]
use crate::sched::Scheduler;

impl<P: Process> Builder<P> {
    /// Runs on each worker thread as it starts, with the worker's index.
    ///
    /// If it panics, the panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics), and the worker
    /// starts all the same. It must return: until it does, the worker takes
    /// no work (others may steal what is queued for it), and
    /// [`Scheduler::shutdown`] joins the thread.
    pub fn on_thread_start(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.hooks.on_thread_start = Some(Box::new(f));
        self
    }

    /// Runs on each worker thread as it stops, with the worker's index,
    /// after its last process.
    ///
    /// If it panics, the panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics); the thread exits
    /// normally. It must return: [`Scheduler::shutdown`] joins the thread
    /// and waits for it.
    pub fn on_thread_stop(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.hooks.on_thread_stop = Some(Box::new(f));
        self
    }

    /// Runs on a worker thread that found no work, just before it goes to
    /// park, with the worker's index. The worker registers as a sleeper
    /// only after the hook returns, and may then withdraw (work appeared);
    /// [`on_unpark`](Builder::on_unpark) runs after either, so the two
    /// always pair.
    ///
    /// If it panics, the panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics), and the worker
    /// parks as usual. If it blocks, only this worker waits: it is not yet
    /// registered as a sleeper, so no wakeup is sent to it meanwhile. It
    /// must return for shutdown to join the thread.
    pub fn on_park(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.hooks.on_park = Some(Box::new(f));
        self
    }

    /// Runs on a worker thread just after it wakes from a park, or
    /// withdraws from one, with the worker's index (see
    /// [`on_park`](Builder::on_park)).
    ///
    /// If it panics, the panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics), and the worker
    /// goes on looking for work. While it blocks, the worker does not take
    /// the work it may have been woken for; other workers can still steal
    /// it once they search. It must return for shutdown to join the thread.
    pub fn on_unpark(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.hooks.on_unpark = Some(Box::new(f));
        self
    }

    /// Runs on the worker whenever a process ends, with its outcome, after
    /// the process is closed and its slot freed and before its
    /// [`JoinHandle`](crate::sched::JoinHandle) gets the outcome.
    ///
    /// If it panics, the panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics): the outcome still
    /// reaches the join handle, and the worker goes on. It should not
    /// block: the join handle waits for it, and so does the worker's next
    /// process.
    pub fn on_complete(mut self, f: impl Fn(Pid, &Outcome<P>) + Send + Sync + 'static) -> Self {
        self.hooks.on_complete = Some(Box::new(f));
        self
    }

    /// Receives every event that was accepted but reached no process (its
    /// target ended first), and messages sent from a step to a process that
    /// cannot take them: nothing is dropped silently. The scheduler's own
    /// `Event::Cancel`s (a shutdown's or a terminate's, meant for the
    /// process alone) are not reported, nor are the timer events of a
    /// process that ended (a `send_after` message is).
    ///
    /// It runs on the worker that found the event (while it holds the
    /// process the event was for, or closes it), or at the end of
    /// [`Scheduler::shutdown`] on its caller's thread. An event whose
    /// delivery raced its target's end (accepted, then queued after the
    /// closing worker's last look at the mailbox) is reported by that
    /// worker before it frees the slot, or, if the slot was freed first,
    /// by the sender before its send returns (on the sender's thread:
    /// a worker, a handler, or the caller of
    /// [`Scheduler::send`](crate::sched::Scheduler::send)). Only if the
    /// slot was also reused in between does it wait for the slot's new
    /// process to take its next step or end. If it panics, the
    /// panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics), the event is
    /// dropped (it is counted in [`Stats::undelivered`](crate::sched::Stats::undelivered)
    /// in any case), and the worker carries on with the process. It should
    /// not block: the worker and the process it holds wait for it.
    pub fn on_undelivered(mut self, f: impl Fn(Pid, Event<P>) + Send + Sync + 'static) -> Self {
        self.hooks.on_undelivered = Some(Box::new(f));
        self
    }

    /// Runs on the worker just before each step, with the process's PID
    /// and the worker's index: the place to enter a span that
    /// [`on_step`](Builder::on_step) (which runs after the same step, on
    /// the same thread) leaves. Not called for a process closed without a
    /// step (terminated or shut down before it ran).
    ///
    /// Unset, it costs the step one predictable branch; set, the worker
    /// also reads the clock around each step (as for
    /// [`on_step`](Builder::on_step)). If it panics, the panic is contained
    /// and counted in [`Stats::hook_panics`](crate::sched::Stats::hook_panics),
    /// and the step runs all the same. It should not block: the step waits
    /// for it.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use stepsched::sched::Scheduler;
    ///
    /// let started = Arc::new(AtomicU64::new(0));
    /// let seen = Arc::clone(&started);
    /// let scheduler = Scheduler::builder()
    ///     .workers(1)
    ///     .on_step_start(move |_pid, _worker| {
    ///         seen.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// scheduler.submit_joinable(Job, "job", ()).unwrap().join().unwrap();
    /// assert_eq!(started.load(Ordering::Relaxed), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_step_start(mut self, f: impl Fn(Pid, usize) + Send + Sync + 'static) -> Self {
        self.hooks.on_step_start = Some(Box::new(f));
        self
    }

    /// Runs on the worker right after each step returns (before the step's
    /// spawns, sends and commands are applied), with a [`StepInfo`]: the
    /// PID, the worker, how long the step took, how many events it was
    /// given and how it ended. Exactly once per step counted in
    /// [`WorkerStats::steps`](crate::sched::WorkerStats::steps) of a process
    /// (an outside receiver's forwarding is not a step of a process).
    ///
    /// Unset, it costs the step one predictable branch; set, the worker
    /// reads the clock before and after each step (the TSC where it is
    /// invariant, else `Instant`; `build` then sleeps 2 ms to measure its
    /// rate). If it panics, the
    /// panic is contained and counted in
    /// [`Stats::hook_panics`](crate::sched::Stats::hook_panics), and the
    /// process goes on as its step asked. It should not block: the process
    /// and the worker wait for it.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use std::sync::{Arc, Mutex};
    /// use stepsched::sched::{Scheduler, StepStatus};
    ///
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&log);
    /// let scheduler = Scheduler::builder()
    ///     .workers(1)
    ///     .on_step(move |info| sink.lock().unwrap().push((info.pid, info.status)))
    ///     .build()?;
    /// let pid = scheduler.submit(Job, "job", ()).unwrap();
    /// scheduler.shutdown(std::time::Duration::from_secs(5));
    /// assert_eq!(*log.lock().unwrap(), [(pid, StepStatus::Done)]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_step(mut self, f: impl Fn(&StepInfo) + Send + Sync + 'static) -> Self {
        self.hooks.on_step = Some(Box::new(f));
        self
    }
}
