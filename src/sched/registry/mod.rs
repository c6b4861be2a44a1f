//! The registry of names: Erlang's `register/2`, `whereis/1` and
//! `unregister/1` (the protocol and its proof sketch are in `README.md`).
//!
//! - `mod.rs`: the map itself ([`Registry`]), a leaf that knows only PIDs
//!   and names.
//! - `bind.rs`: binding a name to a live process and unbinding it at the
//!   process's end, against the slot's state word and its `named` flag.
//! - the slot's `named` flag, the two halves of the race with the end, is
//!   the core's (`core/name_flag.rs`).
//! - `api.rs`: the handle's part, [`Scheduler::register`](crate::sched::Scheduler::register)
//!   and the others.

use crate::process::{Name, Pid};
use crate::sync::{Mutex, MutexGuard};
use std::collections::HashMap;

mod api;
mod bind;

/// Names and their processes, both ways, under one lock.
///
/// The invariant, true whenever the lock is free: `by_name` and `by_slot`
/// hold the same pairs, and a slot's `named` flag is set exactly when
/// `by_slot` has its index. A pair names a live process, or one whose
/// close has begun and is waiting for this lock to remove it.
#[derive(Default)]
pub(crate) struct Registry {
    map: Mutex<Map>,
}

#[derive(Default)]
pub(crate) struct Map {
    pub(crate) by_name: HashMap<Name, Pid>,
    /// Slot index -> the name of its process (one name per process).
    pub(crate) by_slot: HashMap<u32, Name>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry::default()
    }

    /// Locks the map. A panic while it is held (none is expected: only
    /// map operations run under it) leaves the map consistent, so a
    /// poisoned lock is taken as it is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Map> {
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Map {
    /// Removes the pair of `pid`'s slot, if it names `pid`; returns its name.
    pub(crate) fn remove_slot(&mut self, pid: Pid) -> Option<Name> {
        let name = self.by_slot.remove(&pid.key())?;
        let holder = self.by_name.remove(&*name);
        debug_assert_eq!(holder, Some(pid), "registry: the two maps disagree");
        Some(name)
    }
}
