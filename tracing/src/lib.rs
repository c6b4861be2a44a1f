//! A [`stepsched`] scheduler's steps and process ends as [`tracing`] spans
//! and events.
//!
//! [`instrument`] installs three of the builder's hooks:
//!
//! - [`Builder::on_step_start`]: a `step` span (target `stepsched`,
//!   level `TRACE`), with fields `pid` (the PID's raw `u64`, as
//!   [`Pid::into_raw`](stepsched::process::Pid::into_raw)) and `worker`,
//!   entered on the worker thread, so that what the step itself traces
//!   nests under it;
//! - [`Builder::on_step`]: records `status` ([`StepStatus::as_str`]),
//!   `events` and `duration_ns` on that span and closes it;
//! - [`Builder::on_complete`]: an event `process ended` (level `DEBUG`)
//!   with `pid` and `outcome` (`ok`, or the error as displayed).
//!
//! It replaces whatever those three hooks were set to. A hook that panics
//! (a subscriber's panic) is contained by the scheduler and counted in
//! `Stats::hook_panics`; the span it left open, if any, is closed at the
//! next step's start on that worker.
//!
//! ```
//! use stepsched::process::{Event, NoCommand, Process, StepOutput};
//! use stepsched::sched::Scheduler;
//!
//! struct Job;
//! impl Process for Job {
//!     type Input = ();
//!     type Message = ();
//!     type Command = NoCommand;
//!     type Reply = ();
//!     type Output = ();
//!     type Error = ();
//!     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
//!     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
//!         out.done(());
//!         Ok(())
//!     }
//! }
//!
//! let scheduler = stepsched_tracing::instrument(Scheduler::<Job>::builder())
//!     .workers(1)
//!     .build()
//!     .unwrap();
//! scheduler.submit_joinable(Job, "job", ()).unwrap().join().unwrap();
//! scheduler.shutdown(std::time::Duration::from_secs(1));
//! ```
//!
//! [`Builder::on_step_start`]: stepsched::sched::Builder::on_step_start
//! [`Builder::on_step`]: stepsched::sched::Builder::on_step
//! [`Builder::on_complete`]: stepsched::sched::Builder::on_complete
//! [`StepStatus::as_str`]: stepsched::sched::StepStatus::as_str

#![deny(missing_docs)]

use std::cell::RefCell;
use stepsched::process::Process;
use stepsched::sched::Builder;
use tracing::span::EnteredSpan;
use tracing::{debug, field, trace_span};

thread_local! {
    /// The span of the step this worker thread is running, between the
    /// two step hooks.
    static CURRENT: RefCell<Option<EnteredSpan>> = const { RefCell::new(None) };
}

/// Installs the `tracing` hooks on `builder` (crate docs) and returns it.
pub fn instrument<P: Process>(builder: Builder<P>) -> Builder<P> {
    builder
        .on_step_start(|pid, worker| {
            let span = trace_span!(
                target: "stepsched",
                "step",
                pid = pid.into_raw(),
                worker,
                status = field::Empty,
                events = field::Empty,
                duration_ns = field::Empty,
            );
            let entered = span.entered();
            // A span left by a step whose end hook did not run (a
            // subscriber's panic) is closed here.
            drop(CURRENT.with(|c| c.borrow_mut().replace(entered)));
        })
        .on_step(|info| {
            if let Some(span) = CURRENT.with(|c| c.borrow_mut().take()) {
                span.record("status", info.status.as_str());
                span.record("events", info.events as u64);
                span.record("duration_ns", info.duration.as_nanos() as u64);
                drop(span);
            }
        })
        .on_complete(|pid, outcome| {
            let outcome = match outcome {
                Ok(_) => "ok".to_owned(),
                Err(error) => error.to_string(),
            };
            debug!(target: "stepsched", pid = pid.into_raw(), outcome = %outcome, "process ended");
        })
}
