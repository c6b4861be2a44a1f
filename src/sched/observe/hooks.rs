//! The embedder's hooks (`Builder::on_complete`, `on_undelivered`,
//! `on_park`, ...), each called with its panic contained.

use crate::process::{Event, Outcome, Pid, Process};
use crate::sched::observe::step_hook::StepInfo;
use crate::sync::{AtomicU64, Ordering};
use std::panic::{catch_unwind, AssertUnwindSafe};

type WorkerHook = Box<dyn Fn(usize) + Send + Sync>;
type StepStartHook = Box<dyn Fn(Pid, usize) + Send + Sync>;
type StepHook = Box<dyn Fn(&StepInfo) + Send + Sync>;

/// The embedder's callbacks, and the count of their contained panics.
///
/// Hooks are user code running on a worker in the middle of the
/// scheduler's own protocols (closing a process, parking). Each is called
/// through [`Hooks::contain`], so that a panicking hook abandons only its
/// own call: the process it ran for is still closed and reported, its
/// joiner still gets the outcome, the worker goes on and the park protocol
/// stays balanced.
pub(crate) struct Hooks<P: Process> {
    pub(crate) on_thread_start: Option<WorkerHook>,
    pub(crate) on_thread_stop: Option<WorkerHook>,
    pub(crate) on_park: Option<WorkerHook>,
    pub(crate) on_unpark: Option<WorkerHook>,
    #[allow(clippy::type_complexity)]
    pub(crate) on_complete: Option<Box<dyn Fn(Pid, &Outcome<P>) + Send + Sync>>,
    #[allow(clippy::type_complexity)]
    pub(crate) on_undelivered: Option<Box<dyn Fn(Pid, Event<P>) + Send + Sync>>,
    pub(crate) on_step_start: Option<StepStartHook>,
    pub(crate) on_step: Option<StepHook>,
    /// Hook calls that panicked ([`Stats::hook_panics`](crate::sched::Stats::hook_panics)).
    /// Added to by any worker (and by `shutdown`), read by `stats`.
    panics: AtomicU64,
}

impl<P: Process> Hooks<P> {
    /// No hooks.
    pub(crate) fn new() -> Self {
        Hooks {
            on_thread_start: None,
            on_thread_stop: None,
            on_park: None,
            on_unpark: None,
            on_complete: None,
            on_undelivered: None,
            on_step_start: None,
            on_step: None,
            panics: AtomicU64::new(0),
        }
    }

    /// Runs one hook call, containing its panic: the call is abandoned and
    /// counted, nothing is printed (beyond what the process's panic hook
    /// prints) and the caller goes on as if the hook had returned.
    #[inline]
    fn contain(&self, call: impl FnOnce()) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(call)) {
            // Relaxed: a statistic, read by `stats` without synchronising.
            self.panics.fetch_add(1, Ordering::Relaxed);
            // A payload whose own drop panics must not unwind the worker
            // either; the second payload is leaked rather than dropped.
            if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
                core::mem::forget(again);
            }
        }
    }

    /// How many hook calls panicked so far.
    pub(crate) fn panics(&self) -> u64 {
        // Relaxed: a statistic.
        self.panics.load(Ordering::Relaxed)
    }

    /// `on_thread_start`, contained.
    pub(crate) fn thread_start(&self, worker: usize) {
        if let Some(hook) = &self.on_thread_start {
            self.contain(|| hook(worker));
        }
    }

    /// `on_thread_stop`, contained.
    pub(crate) fn thread_stop(&self, worker: usize) {
        if let Some(hook) = &self.on_thread_stop {
            self.contain(|| hook(worker));
        }
    }

    /// `on_park`, contained.
    pub(crate) fn park(&self, worker: usize) {
        if let Some(hook) = &self.on_park {
            self.contain(|| hook(worker));
        }
    }

    /// `on_unpark`, contained.
    pub(crate) fn unpark(&self, worker: usize) {
        if let Some(hook) = &self.on_unpark {
            self.contain(|| hook(worker));
        }
    }

    /// Whether a per-step hook is set (the worker then times its steps).
    pub(crate) fn per_step(&self) -> bool {
        self.on_step_start.is_some() || self.on_step.is_some()
    }

    /// `on_step_start`, contained.
    pub(crate) fn step_start(&self, pid: Pid, worker: usize) {
        if let Some(hook) = &self.on_step_start {
            self.contain(|| hook(pid, worker));
        }
    }

    /// `on_step`, contained.
    pub(crate) fn step_end(&self, info: &StepInfo) {
        if let Some(hook) = &self.on_step {
            self.contain(|| hook(info));
        }
    }

    /// `on_complete`, contained: the caller hands the outcome to the
    /// joiner afterwards whether or not the hook panicked.
    pub(crate) fn complete(&self, pid: Pid, outcome: &Outcome<P>) {
        if let Some(hook) = &self.on_complete {
            self.contain(|| hook(pid, outcome));
        }
    }

    /// `on_undelivered`, contained; a panicking hook drops the event.
    pub(crate) fn undelivered(&self, pid: Pid, event: Event<P>) {
        if let Some(hook) = &self.on_undelivered {
            self.contain(|| hook(pid, event));
        }
    }
}
