//! The scheduler: worker threads that run [processes](crate::process).
//!
//! A [`Scheduler`] owns a fixed pool of workers. Each worker owns a local
//! [deque](crate::deque) (LIFO for itself, stealable by the others) and an
//! inject queue for processes woken from outside with affinity to it; a
//! global run queue (`global.rs`) takes new submissions. The order in
//! which a worker searches them, how idle workers spin and park without
//! losing a wakeup, and how shutdown proceeds are described in
//! `src/sched/README.md` and in the docs of each part.
//!
//! - [`Scheduler`] / [`Builder`]: start, submit, send, terminate, shut down.
//! - [`Completer`]: how a command handler answers a yielded command. A
//!   handler runs on the worker that dispatched the command, unless it was
//!   registered with [`Builder::blocking_handler`]: then it runs on the
//!   blocking pool, threads apart from the workers (`blocking.rs`).
//! - [`JoinHandle`]: wait for one process's outcome from outside.
//! - [`Stats`]: per-worker counters, and the blocking pool's
//!   ([`BlockingStats`]).
//! - [`Trace`]: the execution tracer's record ([`Builder::trace`]), as
//!   Chrome trace-event JSON.
//! - [`ProcessInfo`]: one entry of the process dump,
//!   [`Scheduler::processes`].
//! - Timers (`timer/`): a timing wheel per worker, behind
//!   [`StepOutput::wake_after`](crate::process::StepOutput::wake_after),
//!   [`yield_command_timeout`](crate::process::StepOutput::yield_command_timeout)
//!   and [`Scheduler::send_after`]; [`TimerStats`] counts them.
//! - [`remote`]: the seam to other nodes (a [`remote::Transport`] and a
//!   [`remote::Codec`] of the embedder's), for processes that send,
//!   monitor and link across schedulers.
//! - [`LongStep`]: what the long-step monitor reports (see
//!   [`Builder::long_step_monitor`]); steps cannot be preempted, so long
//!   ones poll [`StepOutput::should_yield`](crate::process::StepOutput::should_yield).
//!
//! Every method that takes a timeout (`recv_timeout`, `call`,
//! `blocking_send_timeout`, `join_timeout`, `blocking_join_next_timeout`, `shutdown`, and
//! the blocking pool's keep-alive) takes any `Duration`: one too large to
//! add to the clock, `Duration::MAX` among them, waits for ever in practice
//! (a century), as `std`'s own `recv_timeout` does; none panics.
//!
//! A panic of the scheduler's own code on a worker (a bug: user code is
//! contained where it is called) does not kill the worker: it is counted
//! in [`Stats::worker_panics`] and [`ShutdownReport::worker_panics`], and
//! the process the worker held is closed as `Panicked`.

// The rooms. The core (the slot table, the run queues, parking, the
// phase word, delivery) and the worker loop; each feature in a room of its
// own. docs/ARCHITECTURE.md gives the layout, the seams and a reading order.
pub(crate) mod core;
#[cfg(not(loom))]
mod worker;

pub(crate) mod bound;
#[cfg(not(loom))]
mod commands;
pub(crate) mod links;
pub(crate) mod observe;
#[cfg(not(loom))]
mod outside;
#[cfg(not(loom))]
pub(crate) mod registry;
#[cfg(not(loom))]
mod shutdown;
#[cfg(not(loom))]
pub(crate) mod simulation;
pub(crate) mod timer;

#[cfg(not(loom))]
pub mod remote;

#[cfg(not(loom))]
mod builder;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod scheduler;
#[cfg(not(loom))]
mod shared;

// The loom-visible parts of the rooms (the idle protocol, the phase word,
// the process table's pages and free list, the process dump's figures, the
// long-step monitor's seqlock, the monitors' and links' bookkeeping, the
// mailbox bound, the timing wheel) build in both worlds; the loom models
// reach them through `crate::__internals`.
pub(crate) use self::core::global::Take;

#[cfg(not(loom))]
pub use builder::{Builder, DEFAULT_EVENTS_PER_STEP};
#[cfg(not(loom))]
pub use commands::blocking::{DEFAULT_BLOCKING_KEEP_ALIVE, DEFAULT_MAX_BLOCKING_THREADS};
#[cfg(not(loom))]
pub use commands::handler::{Completer, Completion};
#[cfg(not(loom))]
pub use error::{CompleteError, SendError, SpawnRefused, TerminateError};
#[cfg(not(loom))]
pub use observe::dump::ProcessInfo;
#[cfg(not(loom))]
pub use outside::join::JoinHandle;
#[cfg(not(loom))]
pub use outside::join_set::{JoinNext, JoinSet};

#[cfg(not(loom))]
pub use observe::histogram::Histogram;
#[cfg(not(loom))]
pub use observe::kind_counts::KindStats;
#[cfg(not(loom))]
pub use observe::monitor::{LongStep, DEFAULT_LONG_STEP_THRESHOLD};
#[cfg(not(loom))]
pub use observe::stats::{BlockingStats, Stats, TimerStats, WorkerLatency, WorkerStats};
#[cfg(not(loom))]
pub use observe::step_hook::{StepInfo, StepStatus};
#[cfg(not(loom))]
pub use observe::trace::Trace;
#[cfg(not(loom))]
pub use outside::{Call, CallError, Receiver, Recv, SendAsync};
#[cfg(not(loom))]
pub use scheduler::Scheduler;
#[cfg(not(loom))]
pub use shutdown::ShutdownReport;
#[cfg(not(loom))]
pub use simulation::{Faults, Run, Stopped, SIMULATED_STEP};
#[cfg(not(loom))]
pub use timer::cancel::TimerRef;
