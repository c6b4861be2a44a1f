//! Supervisors, as OTP's: a process that starts children, restarts them
//! when they end, and stops them in order.
//!
//! A [`Supervisor<P>`](Supervisor) is a [kind](crate::process::Kind) of
//! the embedder's own process type `P`: one variant of the
//! [`kinds!`](crate::kinds) enum holds it, and every other kind can be its
//! child (a child is started through
//! [`StepOutput::spawn`](crate::process::StepOutput::spawn), so it is a
//! `P` too). It is built on the public API only: links, trapped exits,
//! [`StepOutput::exit`](crate::process::StepOutput::exit) and
//! [`kill`](crate::process::StepOutput::kill), and timers.
//!
//! - Its input, a [`SupervisorSpec`], lists the children
//!   ([`ChildSpec`]: how to make each incarnation, its [`Restart`] type,
//!   its [`Shutdown`]), the [`Strategy`], and the restart intensity.
//! - Its first step traps exits and starts the children in order, each
//!   linked in the step that spawns it: a child's end always reaches the
//!   supervisor, as a `Down`, and a child is never started while its
//!   previous incarnation runs.
//! - A child that ends is restarted as its restart type says, with the
//!   others the strategy names, stopped first in reverse start order.
//!   More than `max_restarts` restarts within `period`, and the
//!   supervisor stops every child in reverse start order and ends itself
//!   with [`ExitReason::Exit`](crate::process::ExitReason::Exit)`(`[`REACHED_MAX_RESTART_INTENSITY`]`)`:
//!   its own supervisor sees it as a failed child.
//! - Stopping a child: an exit with
//!   [`ExitReason::Shutdown`](crate::process::ExitReason::Shutdown), then,
//!   if it has not ended within its [`Shutdown::Timeout`], a kill. A
//!   child that does not trap exits ends at once; one that traps receives
//!   `Event::Down { pid: its supervisor, reason: Shutdown }` and should
//!   end soon.
//! - An abnormal exit from a process that is not one of its children
//!   (its parent stopping it) stops the supervisor the same ordered way,
//!   and it ends with that reason, as does a scheduler's shutdown (its
//!   `Cancel::Shutdown`). A
//!   [`Scheduler::terminate`](crate::sched::Scheduler::terminate) ends it
//!   at once: its children, linked, are ended by its exit unless they
//!   trap exits.
//! - A supervisor is a child like any other
//!   ([`ChildSpec::supervisor`]): trees nest, and a subtree that exceeds
//!   its intensity fails up to its parent.
//!
//! Messages sent to a supervisor are dropped.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use stepsched::process::{Event, Kind, NoCommand, StepOutput};
//! use stepsched::sched::Scheduler;
//! use stepsched::supervisor::{ChildSpec, Strategy, Supervisor, SupervisorSpec};
//!
//! /// Fails at its first step: the supervisor restarts it.
//! struct Flaky;
//!
//! impl Kind<Node> for Flaky {
//!     type Input = ();
//!     fn init(&mut self, _: ()) -> Result<(), String> { Ok(()) }
//!     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), String> {
//!         Err("flaky".into())
//!     }
//! }
//!
//! stepsched::kinds! {
//!     enum Node {
//!         Sup(Supervisor<Node>), // the supervisor is one of the kinds
//!         Flaky(Flaky),
//!     }
//!     enum NodeInput;
//!     type Message = ();
//!     type Command = NoCommand;
//!     type Reply = ();
//!     type Output = ();
//!     type Error = String;
//! }
//!
//! let scheduler = Scheduler::<Node>::builder().workers(2).build()?;
//! let spec = SupervisorSpec::new(Strategy::OneForOne)
//!     .intensity(3, Duration::from_secs(5))
//!     .child(ChildSpec::new("flaky", || (Flaky, ())));
//! let sup = scheduler.submit_kind_joinable(Supervisor::new(), spec).unwrap();
//! // Three restarts, then a fourth failure within 5 s: the supervisor gives up.
//! assert!(sup.join().is_err());
//! # Ok::<(), std::io::Error>(())
//! ```

mod run;
mod spec;

pub use run::{Supervisor, FAILED_TO_START_CHILD, REACHED_MAX_RESTART_INTENSITY};
pub use spec::{ChildSpec, Restart, Shutdown, Strategy, SupervisorSpec};
