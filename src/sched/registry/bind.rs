//! Binding a name to a live process, and unbinding it at its end. The
//! protocol (the `named` flag, the state word's touch, the close's one
//! branch) and why no name outlives its process are in `README.md`.

use crate::process::{Name, Pid, Process, RegisterError};
use crate::sched::core::table::Slot;
use crate::sched::shared::{phase, Shared};

impl<P: Process> Shared<P> {
    /// Registers `name` for the live process `pid` (`Scheduler::register`,
    /// `StepOutput::register`, a spawn with a name).
    pub(crate) fn register(&self, name: Name, pid: Pid) -> Result<(), RegisterError> {
        if self.core.phase() != phase::RUNNING {
            return Err(RegisterError::ShuttingDown);
        }
        let slot = self
            .core
            .table
            .get(pid.key())
            .ok_or(RegisterError::NoSuchProcess(pid))?;
        let mut map = self.registry.lock();
        if let Some(&holder) = map.by_name.get(&*name) {
            return Err(RegisterError::NameTaken { name, holder });
        }
        if let Some(held) = map.by_slot.get(&pid.key()) {
            // The slot's process has a name: `pid` is that process (then
            // it is named already) or a stale PID of the slot.
            return Err(if slot.pid() == pid {
                RegisterError::AlreadyNamed {
                    pid,
                    name: held.clone(),
                }
            } else {
                RegisterError::NoSuchProcess(pid)
            });
        }
        // The flag first, then the touch: the Dekker pair with `close`
        // (`flag.rs`, README.md).
        if !slot.named.bind(&slot.state, pid.generation()) {
            // The process has ended (its close may be waiting for the lock,
            // and finds nothing), or the PID never named a live one.
            return Err(RegisterError::NoSuchProcess(pid));
        }
        map.by_slot.insert(pid.key(), name.clone());
        if let Some(tracing) = &self.trace {
            tracing.name(pid, &name);
        }
        map.by_name.insert(name, pid);
        Ok(())
    }

    /// Removes the name of the process in `slot`, which is Complete: its
    /// close calls this (one branch on the flag, after `complete`).
    #[cold]
    pub(crate) fn unname(&self, slot: &Slot<P>, pid: Pid) {
        let mut map = self.registry.lock();
        map.remove_slot(pid);
        slot.named.clear();
    }

    /// `Scheduler::unregister`: removes `name`, returning its process.
    pub(crate) fn unregister(&self, name: &str) -> Option<Pid> {
        let mut map = self.registry.lock();
        let pid = map.by_name.remove(name)?;
        map.by_slot.remove(&pid.key());
        if let Some(slot) = self.core.table.get(pid.key()) {
            slot.named.clear();
        }
        Some(pid)
    }

    /// The name of the process `pid`, if it has one.
    pub(crate) fn name_of(&self, pid: Pid) -> Option<Name> {
        let map = self.registry.lock();
        let name = map.by_slot.get(&pid.key())?;
        (map.by_name.get(&**name) == Some(&pid)).then(|| name.clone())
    }
}
