//! `stepsched`: a lock-free, work-stealing runtime for step-driven processes.
//!
//! A *process* is a state machine that the runtime advances one step at a
//! time: each step receives the events that arrived since the last one
//! (messages, completions of commands it yielded, a cancel) and says what to
//! do next (send, spawn, yield commands, and continue, wait, idle or finish).
//! Between steps a process holds no thread, so one runtime hosts hundreds of
//! thousands of them (VM instances, actors, protocol sessions) on a worker
//! thread per core, with Go's work-stealing design underneath.
//!
//! # One process, from submit to done
//!
//! ```
//! use stepsched::process::{Command, Event, Process, Status, StepOutput};
//! use stepsched::sched::Scheduler;
//! use std::time::Duration;
//!
//! /// Asks a "clock" handler for the time, then finishes with the answer.
//! struct AskTime;
//!
//! struct Now;
//! impl Command for Now {
//!     fn kind(&self) -> &'static str { "clock" }
//! }
//!
//! impl Process for AskTime {
//!     type Input = ();
//!     type Message = ();
//!     type Command = Now;
//!     type Reply = u64;
//!     type Output = u64;
//!     type Error = String;
//!
//!     fn init(&mut self, method: &str, _: ()) -> Result<(), String> {
//!         if method == "ask" { Ok(()) } else { Err(format!("unknown method {method}")) }
//!     }
//!
//!     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
//!         -> Result<(), String>
//!     {
//!         for event in events.drain(..) {
//!             if let Event::Completion { tag: 1, result } = event {
//!                 out.done(result.map_err(|e| e.to_string())?);
//!                 return Ok(());
//!             }
//!         }
//!         out.yield_command(1, Now);     // completed by the handler below
//!         out.set_status(Status::Wait);  // wake me on the completion
//!         Ok(())
//!     }
//! }
//!
//! let scheduler = Scheduler::builder()
//!     .workers(2)
//!     .handler("clock", |_now: Now, done| {
//!         // A handler may answer now or from another thread later.
//!         std::thread::spawn(move || { let _ = done.succeed(42); });
//!     })
//!     .build()
//!     .unwrap();
//! let job = scheduler.submit_joinable(AskTime, "ask", ()).unwrap();
//! assert_eq!(job.join(), Ok(42));
//! scheduler.shutdown(Duration::from_secs(1));
//! ```
//!
//! # What a step returns, and what the embedder brings
//!
//! [`Status::Wait`](process::Status::Wait): step me again when a completion
//! of a command I yielded (or a cancel) arrives; messages wait for that step.
//! [`Status::Idle`](process::Status::Idle): step me again when anything
//! arrives, a message included. A step gets at most
//! [`Builder::max_events_per_step`](sched::Builder::max_events_per_step)
//! events; what it leaves in its vector comes first in the next.
//!
//! Handlers run on the worker that dispatched them, unless registered with
//! [`Builder::blocking_handler`](sched::Builder::blocking_handler). Steps are
//! not preempted (the long-step monitor asks them to yield). Outside threads
//! and async tasks send with [`Scheduler::send`](sched::Scheduler::send),
//! receive with a [`Receiver`](sched::Receiver) of their own
//! ([`Scheduler::mailbox`](sched::Scheduler::mailbox),
//! [`Scheduler::call`](sched::Scheduler::call)), and wait for processes with
//! a [`JoinHandle`](sched::JoinHandle) (also a `Future`) or a
//! [`JoinSet`](sched::JoinSet). The README's "What stepsched does not do for
//! you" lists the rest.
//!
//! # Modules
//!
//! - [`process`]: the [`Process`](process::Process) trait, events, step
//!   output, PIDs and a process's [`Lifecycle`](process::Lifecycle) (its
//!   states, which the process dump reports); several kinds of process
//!   in one scheduler ([`process::kinds`], the [`kinds!`] macro); monitors
//!   and links ([`StepOutput::monitor`](process::StepOutput::monitor),
//!   [`Event::Down`](process::Event::Down), [`ExitReason`](process::ExitReason),
//!   [`StepOutput::exit`](process::StepOutput::exit)); calls from a step
//!   ([`StepOutput::call`](process::StepOutput::call), one
//!   [`Event::Reply`](process::Event::Reply)).
//! - [`sched`]: the [`Scheduler`](sched::Scheduler): workers, run queues,
//!   message routing, command dispatch (and a pool of threads for blocking
//!   handlers), parking and shutdown; a long-step monitor with cooperative
//!   preemption
//!   ([`StepOutput::should_yield`](process::StepOutput::should_yield)) and a
//!   process dump ([`Scheduler::processes`](sched::Scheduler::processes));
//!   timers, a timing wheel per worker
//!   ([`StepOutput::wake_after`](process::StepOutput::wake_after),
//!   [`yield_command_timeout`](process::StepOutput::yield_command_timeout),
//!   [`Scheduler::send_after`](sched::Scheduler::send_after));
//!   an execution tracer that writes Chrome trace-event JSON
//!   ([`Trace`](sched::Trace)); a registry of names
//!   ([`Scheduler::register`](sched::Scheduler::register),
//!   [`whereis`](sched::Scheduler::whereis)); latency histograms
//!   ([`Builder::record_latency`](sched::Builder::record_latency)).
//! - [`supervisor`]: OTP's supervisors as a process kind: child specs, the
//!   three strategies, restart intensity, ordered shutdown, trees.
//! - [`deque`]: the Chase-Lev work-stealing deque each worker owns, whose
//!   thieves take half of it with one CAS.
//! - [`mpsc`]: the Vyukov multi-producer single-consumer queue behind every
//!   mailbox and inject queue.
//!
//! Every concurrency protocol here has loom models (`loom-tests/`), the
//! queues run under Miri, and fuzz targets compare them with plain models
//! (`fuzz/`). Design notes live beside the code: each module opens with how
//! it works, the READMEs of the scheduler's rooms (`src/sched/README.md`
//! lists them) explain spinning, parking and the wake rule, and `docs/ARCHITECTURE.md` puts the parts together and lists the
//! traps each one avoids.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// Under loom only the modelled protocols are built; the rest is unused.
#![cfg_attr(loom, allow(dead_code, unused_imports))]

mod padded;
mod sync;

pub mod deque;
pub mod mpsc;
pub mod process;
pub mod sched;
pub mod supervisor;

#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;

// Internals for the crate's own tests: not public API, outside semver.
#[doc(hidden)]
#[path = "internals.rs"]
pub mod __internals;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
