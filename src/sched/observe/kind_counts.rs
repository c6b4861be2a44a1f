//! Per-kind figures ([`KindStats`]): live processes and steps of each kind
//! of a [`kinds!`](crate::kinds) scheduler, if the builder asked for them
//! (`Builder::count_kinds`).
//!
//! A process's kind is [`Process::kind_index`], an index into
//! [`Process::KINDS`] that `kinds!` writes as a `match` on the variant
//! (no string is compared). Counting, when on, costs a step one branch and
//! a load and store of the worker's own counter for that kind (the
//! single-writer `Counter` of the other statistics), and a creation and a
//! close one shared RMW each (`started`, `ended`); off, each of those sites
//! is one predictable branch on a configuration flag, and nothing is
//! allocated. `kind_index` is user code: it is called only when counting
//! is on, and a panic in it is contained ([`kind_of`]): the process is then
//! not counted.

use crate::process::Process;
use crate::sched::observe::counter::Counter;
use crate::sync::{AtomicU64, Ordering};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `process`'s kind index, or `usize::MAX` (past every kind: not counted)
/// if its `kind_index` panics. Called by creation, steps and close outside
/// the catch of `init`, `step` and `close`, so it catches for itself: user
/// code must not end a worker.
pub(crate) fn kind_of<P: Process>(process: &P) -> usize {
    catch_unwind(AssertUnwindSafe(|| process.kind_index())).unwrap_or(usize::MAX)
}

/// Processes started and ended per kind, shared by every creator and
/// closer.
pub(crate) struct KindCounts {
    started: Box<[AtomicU64]>,
    ended: Box<[AtomicU64]>,
}

impl KindCounts {
    /// Counters for `P`'s kinds; `None` if `P` names none.
    pub(crate) fn new<P: Process>() -> Option<Self> {
        let n = P::KINDS.len();
        (n > 0).then(|| KindCounts {
            started: (0..n).map(|_| AtomicU64::new(0)).collect(),
            ended: (0..n).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Per-worker step counters for `P`'s kinds (empty if it names none).
    pub(crate) fn steps<P: Process>() -> Box<[Counter]> {
        (0..P::KINDS.len()).map(|_| Counter::default()).collect()
    }

    /// Counts a process of kind `kind` started (created, before it runs).
    pub(crate) fn started(&self, kind: usize) {
        if let Some(n) = self.started.get(kind) {
            // Relaxed: a statistic, read by `stats()` without synchronising.
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a process of kind `kind` ended (its `close` ran).
    pub(crate) fn ended(&self, kind: usize) {
        if let Some(n) = self.ended.get(kind) {
            // Relaxed: a statistic, as in `started`.
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The figures of every kind, with the workers' step counters summed.
    pub(crate) fn snapshot<'a, P: Process>(
        &self,
        worker_steps: impl Iterator<Item = &'a [Counter]> + Clone,
    ) -> Vec<KindStats> {
        P::KINDS
            .iter()
            .enumerate()
            .map(|(i, &name)| {
                // Relaxed: statistics. `ended` first: a process is counted
                // started before it can end, so `live` does not underflow
                // (saturating all the same).
                let ended = self.ended[i].load(Ordering::Relaxed);
                let started = self.started[i].load(Ordering::Relaxed);
                KindStats {
                    name,
                    live: started.saturating_sub(ended),
                    started,
                    steps: worker_steps.clone().map(|s| s[i].get()).sum(),
                }
            })
            .collect()
    }
}

/// One kind's figures, as read by
/// [`Scheduler::stats`](crate::sched::Scheduler::stats) (see
/// [`Builder::count_kinds`](crate::sched::Builder::count_kinds)).
///
/// Non-exhaustive: figures may be added in a minor release (see
/// [`WorkerStats`](crate::sched::WorkerStats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KindStats {
    /// The kind's name ([`Process::KINDS`]: a `kinds!` variant's name).
    pub name: &'static str,
    /// Processes of this kind started and not yet ended (their `close` has
    /// not run).
    pub live: u64,
    /// Processes of this kind started so far.
    pub started: u64,
    /// Steps run by processes of this kind.
    pub steps: u64,
}
