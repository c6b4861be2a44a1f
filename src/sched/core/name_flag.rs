//! A slot's `named` flag: the register's and the close's halves of the
//! Dekker pair that keeps a name from outliving its process
//! (`sched/registry/README.md`, "The race with the end"). In the core, with
//! the slot it is part of; the registry (`registry/bind.rs`) and the close
//! (`worker/close.rs`) use it. loom: `loom-tests/tests/registry.rs`.

use crate::process::state::{Lifecycle, StateWord};
use crate::sync::{AtomicBool, Ordering};

/// Whether a slot's process may have a registered name. Written only under
/// the registry's lock; read without it by the process's close (after its
/// `complete`) and by the process dump, so that a process never named
/// pays one load and one branch.
pub struct NameFlag(AtomicBool);

impl NameFlag {
    /// A clear flag: the slot's process has no name.
    pub fn new() -> Self {
        NameFlag(AtomicBool::new(false))
    }

    /// The register's half, under the registry's lock, with the slot's
    /// `state` and the generation of the PID being named: sets the flag,
    /// then touches the state word, and keeps the flag only if the touch
    /// read that generation live (neither Complete nor Free). `false`: the
    /// process has ended or the PID never named a live one, and the flag
    /// is clear again.
    pub fn bind(&self, state: &StateWord, generation: u32) -> bool {
        // Relaxed: the touch below (an AcqRel RMW of the state word)
        // publishes it to the close's `complete`, an RMW that reads the
        // touch's write or a later one of its release sequence, and whose
        // `seen_at_close` load then sees it; the registry's lock orders it
        // against the flag's other writers.
        self.0.store(true, Ordering::Relaxed);
        let now = state.touch();
        let live = now.generation() == generation
            && !matches!(now.lifecycle(), Lifecycle::Complete | Lifecycle::Free);
        if !live {
            // Relaxed: under the lock, as the store above; a close that
            // still sees `true` takes the lock and finds no pair.
            self.0.store(false, Ordering::Relaxed);
        }
        live
    }

    /// The close's half, after its `complete`: whether the process may be
    /// named (then the close takes the lock and removes the pair). Also
    /// the dump's look, before it asks the map.
    #[inline]
    pub fn is_set(&self) -> bool {
        // Relaxed: see `bind`; a stale `true` only costs a trip through
        // the lock, which finds no pair.
        self.0.load(Ordering::Relaxed)
    }

    /// Clears the flag, under the registry's lock, once the slot's pair is
    /// gone (the process's end, or an unregister). The slot's next process
    /// starts with it clear; its own register sets it again under the same
    /// lock.
    pub fn clear(&self) {
        // Relaxed: under the lock; a reader that sees a stale `true` takes
        // the lock and finds nothing.
        self.0.store(false, Ordering::Relaxed);
    }
}

impl Default for NameFlag {
    fn default() -> Self {
        NameFlag::new()
    }
}
