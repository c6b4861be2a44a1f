//! What the outside handles see of a simulation: the [`Drive`] seam, a
//! drive's bound ([`Limit`]) and its report ([`Run`], [`Stopped`]). A
//! leaf: the handles that drive a simulation (a join) reach its driver
//! through it without importing the worker loop.

/// A simulation's driver, as a handle that drives it sees it.
pub(crate) trait Drive: Send + Sync {
    /// Runs turns until `done` says so, the limit, or nothing can run.
    fn drive(&self, what: &str, limit: Limit, done: &mut dyn FnMut() -> bool) -> Run;
    /// The seed.
    fn seed(&self) -> u64;
    /// Steps run so far.
    fn steps(&self) -> u64;
    /// The virtual nanoseconds since the start.
    fn now(&self) -> u64;
}

/// A bound on one drive.
pub(crate) struct Limit {
    /// At most this many more steps.
    pub(crate) steps: u64,
    /// Not past this virtual time (nanoseconds since the start).
    pub(crate) until: u64,
}

impl Limit {
    pub(crate) const NONE: Limit = Limit {
        steps: u64::MAX,
        until: u64::MAX,
    };
}

/// What a drive of a simulated scheduler did ([`Scheduler::run_steps`](crate::sched::Scheduler::run_steps) and
/// the other driving methods).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Run {
    /// Steps run (a close of a process counts as one, as does a blocking
    /// command run by the pool).
    pub steps: u64,
    /// Why the drive stopped.
    pub stopped: Stopped,
    /// Processes crashed by [`Faults::crash_per_step`](crate::sched::Faults::crash_per_step)
    /// during the drive.
    pub crashes: u64,
}

/// Why a drive of a simulated scheduler stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stopped {
    /// Nothing can run any more: no process is runnable, no timer is
    /// pending and no blocking command waits. Only something from outside
    /// (a submit, a send) makes more happen.
    Idle,
    /// The drive ran as many steps as it was allowed.
    Steps,
    /// The virtual time reached the drive's end.
    Time,
    /// The condition of [`Scheduler::run_until`](crate::sched::Scheduler::run_until) (or a join's process's
    /// end) held.
    Done,
}
