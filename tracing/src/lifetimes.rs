//! The open `process` spans of one scheduler, by PID.
//!
//! A process's span opens at its first step (the scheduler has no spawn
//! hook) and closes at its end (`on_complete`), which may run on another
//! worker: the span is never entered, only kept open here, and steps and
//! commands name it as their parent.
//!
//! One process is stepped by one worker at a time, and its end comes
//! after its last step (the scheduler orders them), so the steps and the
//! end of one PID never race each other for its entry: the shard's lock
//! only keeps the map itself whole while other PIDs in the same shard
//! come and go, and a step may name its process span by id alone. A
//! command may not: a blocking handler runs while its process may end, so
//! it takes a handle to the span (the subscriber's `clone_span`, the only
//! subscriber call made under a lock). The span is created outside the
//! lock (a subscriber's `new_span` may be slow), and dropped outside it on
//! close (so is its `on_close`).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use stepsched::process::Pid;
use tracing::span::Id;
use tracing::{debug_span, field, Level, Span};

/// Shards of the map, by the PID's index: workers stepping different
/// processes seldom take the same lock.
const SHARDS: usize = 16;

/// The `process` spans of the processes that have stepped and not yet
/// ended, keyed by [`Pid::into_raw`] (so a reused slot's next process,
/// with another generation, has its own entry).
pub(crate) struct Lifetimes {
    shards: [Mutex<HashMap<u64, Span>>; SHARDS],
}

impl Lifetimes {
    pub(crate) fn new() -> Self {
        Lifetimes {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    /// The shard of `pid`. A subscriber's panic (in `clone_span`) cannot
    /// leave a map half changed, so a poisoned lock is taken as it is.
    fn shard(&self, pid: Pid) -> MutexGuard<'_, HashMap<u64, Span>> {
        self.shards[pid.index() as usize % SHARDS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Before a step of `pid`: the id of its `process` span, opened now if
    /// this is the first step since a subscriber took interest in it.
    /// `None`, without a lock, while no subscriber wants `stepsched`'s
    /// `DEBUG` spans.
    pub(crate) fn open(&self, pid: Pid) -> Option<Id> {
        if !tracing::enabled!(kind: tracing::metadata::Kind::SPAN, target: "stepsched", Level::DEBUG)
        {
            return None;
        }
        let raw = pid.into_raw();
        if let Some(span) = self.shard(pid).get(&raw) {
            return span.id();
        }
        let span = debug_span!(
            target: "stepsched",
            parent: None,
            "process",
            pid = raw,
            outcome = field::Empty,
        );
        let id = span.id();
        // A disabled span (a filter refused it) is not kept: the next
        // step asks again.
        if id.is_some() {
            self.shard(pid).insert(raw, span);
        }
        id
    }

    /// `pid`'s `process` span, if it is open: a handle to it, for a
    /// command's parent. A handle, not an id: a blocking handler runs
    /// while its process may end on a worker, and an id alone would not
    /// keep the span from closing (and its id from being reused) before
    /// the command span names it.
    pub(crate) fn get(&self, pid: Pid) -> Option<Span> {
        self.shard(pid).get(&pid.into_raw()).cloned()
    }

    /// At `pid`'s end: its `process` span, taken out of the map, for the
    /// caller to record the outcome on and drop (which closes it).
    pub(crate) fn close(&self, pid: Pid) -> Option<Span> {
        self.shard(pid).remove(&pid.into_raw())
    }
}
