//! A worker's own part of each room: the fields of [`Local`](super::Local),
//! grouped by the room that reads them. Each is touched by one thread, the
//! worker's, so none is atomic.

use crate::deque::Worker;
use crate::mpsc::NodeCache;
use crate::process::{Effects, Event, Pid, Process};
use crate::sched::core::body::SpareExtras;
use crate::sched::core::table::{Envelope, FreeCache, Task};
use crate::sched::links::Signal;
use crate::sched::observe::monitor::StepClock;
use crate::sched::observe::trace::Ring;
use crate::sched::timer::wheel::Fired;
use core::cell::RefCell;
use std::collections::VecDeque;

/// The worker's run queues and where its search stands.
pub(super) struct Queues<P: Process> {
    pub(super) deque: Worker<Task<P>>,
    pub(super) runnext: Option<Task<P>>,
    pub(super) runnext_streak: u32,
    /// Processes that returned *continue* (or were woken while running),
    /// oldest first.
    pub(super) yielded: VecDeque<Task<P>>,
    pub(super) tick: u32,
    pub(super) rng: u32,
}

/// Spinning and parking.
pub(super) struct Parking {
    pub(super) spinning: bool,
    /// Parks in a row withdrawn from because work was visible; reset when
    /// work is found (see `park`).
    pub(super) cancelled: u32,
}

/// A step's buffers and caches, kept between steps.
pub(super) struct Scratch<P: Process> {
    pub(super) events: Vec<Event<P>>,
    pub(super) effects: Effects<P>,
    /// Slots this worker freed, for its own spawns.
    pub(super) free: RefCell<FreeCache>,
    /// Mailbox nodes this worker's pops released, for its sends.
    pub(super) nodes: NodeCache<Envelope<P>>,
    /// Extra parts of bodies this worker's closes gave back (`body.rs`).
    pub(super) spare_extras: SpareExtras<P>,
    /// Whether the process being run released places of its bounded
    /// mailbox: then `run_task` checks for waiting senders after the
    /// holding's last RMW of the state word (`bound.rs`, `Room`).
    pub(super) released: bool,
    /// The process `close` is about to close ended on its own shutdown
    /// cancel (an outside receiver's step): not a forced close.
    pub(super) ended_on_cancel: bool,
}

/// A step's monitor and link requests, those of them owed an answer, and
/// the targets pushed to, while `apply_links` sends them, and the step's
/// exit signals, sent after them (buffers kept between steps).
pub(super) struct LinkBuffers {
    pub(super) requests: Vec<(Pid, Signal)>,
    pub(super) exits: Vec<(Pid, Signal)>,
    pub(super) owed: Vec<(Pid, Signal)>,
    pub(super) pushed: Vec<Pid>,
}

/// Timers taken out of a wheel, and their messages, until they are
/// delivered (`timers.rs`).
pub(super) struct TimerBuffers<M> {
    pub(super) fired: Vec<Fired>,
    pub(super) fired_messages: Vec<M>,
    /// The timer tick a step's `apply_timers` read, and the loop turn
    /// (`tick`) it ran in: the next turn's poll of this worker's wheel uses
    /// it instead of reading the clock again; no later one does (unless
    /// `tick` wraps to the same turn first: still only late). Dropped by
    /// `close` (which runs user code after it). Older than the poll, so it
    /// can only make a timer fire later, never early (`poll_own_timers`).
    pub(super) timer_tick: Option<(u32, u64)>,
}

/// The long-step monitor's numbering and the trace ring.
pub(super) struct Observing {
    /// Numbers this worker's steps for the long-step monitor.
    pub(super) clock: StepClock,
    /// This worker's trace ring, if tracing is on (see `trace.rs`).
    pub(super) trace: Option<Box<Ring>>,
    /// Whether a long-step monitor runs (a copy of the configuration's
    /// flag, on a line the worker already has).
    pub(super) monitored: bool,
    /// Whether steps are timed: latency figures are recorded or a per-step
    /// hook is set (`observe/step_hook.rs`). A copy, as `monitored`.
    pub(super) timed: bool,
    /// Whether steps are counted per kind (`Builder::count_kinds`).
    pub(super) count_kinds: bool,
    /// Whether anything watches each step: the trace, the timing or the
    /// kind counts. An unwatched step pays this one branch on each side.
    pub(super) per_step: bool,
}
