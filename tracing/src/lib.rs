//! A [`stepsched`] scheduler's processes, steps and commands as
//! [`tracing`] spans, and process ends as events.
//!
//! [`instrument`] (or [`Instrumentation::install`], which also returns a
//! handle to wrap command handlers with) installs three of the builder's
//! hooks, which make these spans and events, all with the target
//! `stepsched`:
//!
//! | name | kind, level | fields | from, to |
//! |---|---|---|---|
//! | `process` | span, `DEBUG` | `pid`, `outcome` | the process's first step, its end |
//! | `step` | span, `TRACE` | `pid`, `worker`, `status`, `events`, `duration_ns` | one step, entered on its worker |
//! | `command` | span, `TRACE` | `kind`, `pid`, `tag` | one run of a handler wrapped by [`Instrumentation::traced`] |
//! | `process ended` | event, `DEBUG` | `pid`, `outcome` | the process's end, inside its `process` span |
//!
//! `pid` is the PID's raw `u64` ([`Pid::into_raw`](stepsched::process::Pid::into_raw)),
//! `outcome` is `ok` or the error as displayed, and `status` is
//! [`StepStatus::as_str`].
//!
//! - [`Builder::on_step_start`] opens the process's `process` span if this
//!   is its first step, then opens the `step` span as its child and enters
//!   it on the worker thread, so that what the step itself traces nests
//!   under it;
//! - [`Builder::on_step`] records `status`, `events` and `duration_ns` on
//!   the step span and closes it;
//! - [`Builder::on_complete`] records `outcome` on the `process` span,
//!   emits `process ended` inside it, and closes it.
//!
//! # Process lifetimes
//!
//! A `process` span is never entered (a process moves between workers);
//! it stays open from the process's first step to its end, so a
//! subscriber sees each step and command nested in the lifetime of its
//! process. The scheduler has no spawn hook, so the span starts at the
//! first step, not at the submit or spawn: a process that ends before it
//! ever steps (terminated or shut down first) has no `process` span, only
//! its `process ended` event. Every end of a process that stepped runs
//! `on_complete` and closes its span: done, failed, panicked in a step,
//! terminated, killed by a link's exit signal, or closed by shutdown. A
//! process stuck in a step that never returns has no end: its span stays
//! open while the scheduler's shared state lives, and closes when the
//! hooks are dropped with it. The spans are kept per scheduler (in the
//! state [`install`](Instrumentation::install) makes), so two schedulers
//! in one program never mix their processes.
//!
//! # Commands
//!
//! [`Instrumentation::traced`] wraps a handler for [`Builder::handler`] or
//! [`Builder::blocking_handler`] so that each run is a `command` span,
//! entered on the thread that runs it and a child of the yielder's
//! `process` span (or, once the process has ended, of the thread's
//! current span). A completion made later, from another thread, is
//! outside the span.
//!
//! # Costs
//!
//! The hooks replace whatever those three hooks were set to. Setting a
//! step hook makes the scheduler read the clock around each step. With no
//! subscriber interested in `stepsched`'s `DEBUG` spans, a step costs the
//! `tracing` macros' cached interest checks and the end of a process one
//! uncontended lock of a shard of the span map; with one, also a lock of
//! that shard per step (to find the parent) and two at the first (to
//! open the span). A `command` span looks its parent up in the same map,
//! only if a subscriber wants it.
//!
//! A hook that panics (a subscriber's panic) is contained by the
//! scheduler and counted in `Stats::hook_panics`; the step span it left
//! open, if any, is closed at the next step's start on that worker.
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
//! [`Builder::handler`]: stepsched::sched::Builder::handler
//! [`Builder::blocking_handler`]: stepsched::sched::Builder::blocking_handler
//! [`StepStatus::as_str`]: stepsched::sched::StepStatus::as_str

#![deny(missing_docs)]

mod lifetimes;

use lifetimes::Lifetimes;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use stepsched::process::{Command, Outcome, Process};
use stepsched::sched::{Builder, Completer};
use tracing::span::{EnteredSpan, Id};
use tracing::{debug, field, trace_span, Span};

thread_local! {
    /// The span of the step this worker thread is running, between the
    /// two step hooks.
    static CURRENT: RefCell<Option<EnteredSpan>> = const { RefCell::new(None) };
}

/// Installs the `tracing` hooks on `builder` (crate docs) and returns it:
/// the simple path, for a scheduler whose command handlers need no spans
/// ([`Instrumentation::install`] otherwise).
pub fn instrument<P: Process>(builder: Builder<P>) -> Builder<P> {
    Instrumentation::install(builder).0
}

/// The `tracing` state of one instrumented scheduler: its processes' open
/// `process` spans. Made by [`install`](Instrumentation::install), which
/// also gives it to the scheduler's hooks; kept by the caller to wrap
/// command handlers in `command` spans ([`traced`](Instrumentation::traced)).
///
/// Each `install` makes its own, so two schedulers in one program keep
/// their spans apart (their PIDs may be equal). A clone shares the state:
/// use it for the handlers of the scheduler it was installed on.
pub struct Instrumentation<P: Process> {
    lifetimes: Arc<Lifetimes>,
    /// Ties the handle to the scheduler's process type, so that the
    /// handlers it wraps have their argument types known.
    process: PhantomData<fn(P)>,
}

impl<P: Process> Instrumentation<P> {
    /// Installs the `tracing` hooks on `builder` (crate docs) and returns
    /// it with the state they share, to wrap handlers with.
    ///
    /// ```
    /// use stepsched::process::{Command, Event, Process, Status, StepOutput};
    /// use stepsched::sched::Scheduler;
    /// use stepsched_tracing::Instrumentation;
    ///
    /// struct Lookup(u32);
    /// impl Command for Lookup {
    ///     fn kind(&self) -> &'static str { "lookup" }
    /// }
    ///
    /// /// Asks for one lookup and finishes with the answer.
    /// struct Asker;
    /// impl Process for Asker {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = Lookup;
    ///     type Reply = u32;
    ///     type Output = u32;
    ///     type Error = String;
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), String> { Ok(()) }
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
    ///         -> Result<(), String>
    ///     {
    ///         for event in events.drain(..) {
    ///             if let Event::Completion { result, .. } = event {
    ///                 out.done(result.map_err(|e| e.to_string())?);
    ///                 return Ok(());
    ///             }
    ///         }
    ///         out.yield_command(7, Lookup(20));
    ///         out.set_status(Status::Wait);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let (builder, tracing) = Instrumentation::install(Scheduler::<Asker>::builder());
    /// let scheduler = builder
    ///     .workers(1)
    ///     // Runs in a `command` span (kind "lookup", the asker's pid, tag
    ///     // 7), a child of the asker's `process` span.
    ///     .blocking_handler("lookup", tracing.traced(|Lookup(n), completer| {
    ///         let _ = completer.succeed(n + 1);
    ///     }))
    ///     .build()?;
    /// let asker = scheduler.submit_joinable(Asker, "ask", ()).unwrap();
    /// assert_eq!(asker.join(), Ok(21));
    /// scheduler.shutdown(std::time::Duration::from_secs(5));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn install(builder: Builder<P>) -> (Builder<P>, Self) {
        let lifetimes = Arc::new(Lifetimes::new());
        let (start, end) = (Arc::clone(&lifetimes), Arc::clone(&lifetimes));
        let builder = builder
            .on_step_start(move |pid, worker| {
                let process = start.open(pid);
                let span = trace_span!(
                    target: "stepsched",
                    parent: process.or_else(|| Span::current().id()),
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
            .on_complete(move |pid, outcome| {
                let process = end.close(pid);
                let outcome = Shown::<P>(outcome);
                if let Some(span) = &process {
                    span.record("outcome", field::display(&outcome));
                }
                debug!(
                    target: "stepsched",
                    parent: process.as_ref().and_then(Span::id).or_else(|| Span::current().id()),
                    pid = pid.into_raw(),
                    outcome = %outcome,
                    "process ended",
                );
                // Closes the process span, after the event inside it.
                drop(process);
            });
        let instrumentation = Instrumentation {
            lifetimes,
            process: PhantomData,
        };
        (builder, instrumentation)
    }

    /// Wraps a command handler, for [`Builder::handler`] or
    /// [`Builder::blocking_handler`]: the returned one runs `handler`
    /// inside a `command` span (target `stepsched`, level `TRACE`) with
    /// fields `kind` ([`Command::kind`]), `pid` (the yielder's, raw) and
    /// `tag` (the process's tag for the command), entered on the thread
    /// that runs it (the worker, or a blocking-pool thread).
    ///
    /// Its parent is the yielder's `process` span while the process is
    /// live (an inline handler runs right after the step that yielded the
    /// command, so it always is), else the thread's current span. The
    /// span ends when `handler` returns: a completion made later, from
    /// another thread the handler handed its [`Completer`] to, is outside
    /// it.
    ///
    /// See [`install`](Instrumentation::install) for an example.
    pub fn traced(
        &self,
        handler: impl Fn(P::Command, Completer<P>) + Send + Sync + 'static,
    ) -> impl Fn(P::Command, Completer<P>) + Send + Sync + 'static {
        let lifetimes = Arc::clone(&self.lifetimes);
        move |command, completer| {
            let pid = completer.pid();
            // A handle to the process span, held until the command span
            // names it (`Lifetimes::get`); looked up only if a subscriber
            // wants the command span (the macro evaluates `parent` then).
            let mut process = None;
            let span = trace_span!(
                target: "stepsched",
                parent: parent_of(&mut process, lifetimes.get(pid)),
                "command",
                kind = command.kind(),
                pid = pid.into_raw(),
                tag = completer.tag(),
            );
            drop(process);
            let _entered = span.enter();
            handler(command, completer);
        }
    }
}

/// The parent for a command span: `process`'s span, kept in `held`, or
/// the thread's current span if the process has none open.
fn parent_of(held: &mut Option<Span>, process: Option<Span>) -> Option<Id> {
    *held = process;
    match held {
        Some(process) => process.id(),
        None => Span::current().id(),
    }
}

impl<P: Process> Clone for Instrumentation<P> {
    fn clone(&self) -> Self {
        Instrumentation {
            lifetimes: Arc::clone(&self.lifetimes),
            process: PhantomData,
        }
    }
}

impl<P: Process> fmt::Debug for Instrumentation<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instrumentation").finish_non_exhaustive()
    }
}

/// An outcome as the `outcome` field shows it: `ok`, or the error as
/// displayed. Formatted only if a subscriber records it.
struct Shown<'a, P: Process>(&'a Outcome<P>);

impl<P: Process> fmt::Display for Shown<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Ok(_) => f.write_str("ok"),
            Err(error) => fmt::Display::fmt(error, f),
        }
    }
}
