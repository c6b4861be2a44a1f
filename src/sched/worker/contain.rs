//! What a worker does when the scheduler's own code panics on it: an
//! internal assertion, a bug. User code never gets here: every process
//! method, handler, hook and waker is already run under `catch_unwind`
//! where it is called, and its panic is that process's outcome or a
//! counted hook panic.
//!
//! The policy, documented on [`Stats::worker_panics`](crate::sched::Stats::worker_panics):
//!
//! - the worker does not die: the panic is caught around its loop,
//!   counted (`Stats::worker_panics`, `ShutdownReport::worker_panics`)
//!   and the worker goes back to its loop, its queues intact, so the
//!   processes queued on it are run as usual;
//! - the process it was running, if the worker held it (Running or, in its
//!   close, Complete, on this worker), is closed with
//!   [`ProcessError::Panicked`] naming the scheduler: its joiner, watchers
//!   and links are told, as for any end; the events its step was given and
//!   the messages it sent in that step are reported to `on_undelivered`,
//!   the processes it spawned are queued;
//! - a task whose process is not Ready (queued twice, or made Running by
//!   a party that does not hold it) is not run: `run_task` counts it as an
//!   internal panic and leaves the process to whoever holds it.
//!
//! The containment costs nothing until a panic: the loop runs under one
//! `catch_unwind` for the worker's life (entered again after a panic), and
//! each task under a guard that is forgotten when the task returns, so
//! only an unwinding task drops it: its `Drop` records the slot for the
//! handler. (A `catch_unwind` around each task cost a ping-pong step a
//! call boundary the loop's inlining could not cross.) The ownership is
//! decided from the state word and the slot's last worker only then.

use super::Local;
use crate::process::state::Lifecycle;
use crate::process::{panic_message, Event, Pid, Process, ProcessError};
use crate::sched::core::table::{Slot, Task};
use crate::sched::observe::watch::StepWatch;
use crate::sync::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The message of the outcome of a process closed after an internal panic.
const PREFIX: &str = "stepsched: internal panic on a worker while it ran this process";

std::thread_local! {
    /// The slot of the task whose guard an unwinding panic dropped (type
    /// erased: the worker is generic), for the handler of that panic.
    static UNWOUND: core::cell::Cell<*const ()> = const { core::cell::Cell::new(core::ptr::null()) };
}

/// The slot of the task a worker runs, dropped only by a panic that
/// unwinds out of the task (the worker forgets it when the task returns).
struct Held<'a, P: Process>(&'a Slot<P>);

impl<P: Process> Drop for Held<'_, P> {
    fn drop(&mut self) {
        let slot: *const Slot<P> = self.0;
        UNWOUND.with(|u| u.set(slot.cast()));
    }
}

impl<P: Process> Local<P> {
    /// Runs the worker loop `f`, returning the payload of a panic that
    /// escaped it.
    pub(super) fn contained(
        &mut self,
        f: impl FnOnce(&mut Self),
    ) -> Result<(), Box<dyn std::any::Any + Send>> {
        UNWOUND.with(|u| u.set(core::ptr::null()));
        catch_unwind(AssertUnwindSafe(|| f(self)))
    }

    /// Counts an internal panic.
    fn count_panic(&self) {
        // Relaxed: a statistic, read by `stats` and `shutdown`.
        self.shared
            .totals
            .worker_panics
            .fetch_add(1, Ordering::Relaxed);
    }

    /// [`run_task`](Local::run_task) under a [`Held`] guard.
    #[inline(always)]
    pub(super) fn run_held(&mut self, task: Task<P>, watch: &StepWatch) {
        let held = Held(task.slot());
        self.run_task(task, watch);
        core::mem::forget(held);
    }

    /// After an internal panic that escaped the worker loop: the task it
    /// came from, if any, is handled (`panicked_in`); one outside any task
    /// (a search, a park, a timer poll) is counted, and the loop goes on.
    #[cold]
    #[inline(never)]
    pub(super) fn internal_panic(
        &mut self,
        watch: &StepWatch,
        panic: Box<dyn std::any::Any + Send>,
    ) {
        let message = panic_message(&*panic);
        let slot = UNWOUND.with(|u| u.replace(core::ptr::null()));
        if slot.is_null() {
            self.count_panic();
            return;
        }
        // SAFETY: `Held` recorded a slot of this scheduler's table, and
        // slots are never freed before the table, which `self.shared` keeps
        // alive (as `Task::slot` argues).
        let slot = unsafe { &*slot.cast::<Slot<P>>() };
        self.panicked_in(slot, watch, message);
    }

    /// After an internal panic while running `slot`'s process: see the
    /// module docs.
    fn panicked_in(&mut self, slot: &Slot<P>, watch: &StepWatch, message: String) {
        self.count_panic();
        // Only the holder moves a process to Running or Complete, and this
        // worker held it from its `start` (`run_task` returns before
        // touching a slot whose `start` found it not Ready). Past its
        // `end_step` or `remove` another worker may hold it, but that one
        // recorded itself as the slot's last before its `start` (Release,
        // seen through this load's Acquire of the word it then wrote): so
        // Running or Complete with this worker last means this worker still
        // holds it.
        let state = slot.state.load();
        let ours = slot.figures.last_worker_hint() == self.index;
        let pid = slot.pid();
        let why = || ProcessError::Panicked(format!("{PREFIX}: {message}"));
        match state.lifecycle() {
            Lifecycle::Running if ours => {
                self.salvage_step(pid);
                let closed = catch_unwind(AssertUnwindSafe(|| self.close(slot, Err(why()), false)));
                if closed.is_err() {
                    // The process is left as it is: live in the table,
                    // counted `stuck` by a shutdown.
                    self.count_panic();
                }
            }
            Lifecycle::Complete if ours => {
                // Inside its close: what `close` had not done yet is done
                // by the table's free and the joiner's answer.
                let joiner = {
                    // SAFETY: we hold the process (Complete, not yet freed);
                    // the borrow ends with this block, before `remove`.
                    let body = unsafe { slot.body() };
                    body.process = None;
                    body.joiner.take()
                };
                self.free_slot(slot);
                if let Some(joiner) = joiner {
                    joiner.set(pid, Err(why()));
                }
            }
            _ => self.salvage_step(pid),
        }
        if self.scratch.released {
            self.scratch.released = false;
            self.shared.room.made();
        }
        if self.observe.monitored {
            self.observe.clock.end(watch);
        }
    }

    /// What the interrupted step leaves in the worker: the events it was
    /// given and the messages it sent go to `on_undelivered`, the processes
    /// it spawned are queued (they are live and their own), the rest of its
    /// effects are dropped.
    fn salvage_step(&mut self, pid: Pid) {
        for event in self.scratch.events.drain(..) {
            if !matches!(event, Event::Cancel(_) | Event::Down { .. }) {
                self.shared.undelivered(pid, event);
            }
        }
        for (to, message) in self.scratch.effects.sends.drain(..) {
            self.shared.undelivered(to, Event::Message(message));
        }
        if !self.scratch.effects.spawned.is_empty() {
            self.apply_spawns();
        }
        self.scratch.effects.commands.clear();
        self.scratch.effects.timers.clear();
        self.scratch.effects.links.clear();
    }
}

impl<P: Process> Local<P> {
    /// The address of the scheduler's `Shared`, which names it to
    /// [`inject`].
    #[cfg(test)]
    pub(super) fn shared_addr(&self) -> usize {
        std::sync::Arc::as_ptr(&self.shared) as usize
    }

    /// A task whose process was not Ready: a queue held it twice, or a
    /// party that does not hold the process queued it. Counted as an
    /// internal panic (with its message on standard error, as a panic's
    /// would be) and not run: the process is whoever holds it's.
    #[cold]
    #[inline(never)]
    pub(super) fn refuse_task(&mut self, slot: &Slot<P>) {
        self.count_panic();
        eprintln!(
            "stepsched: internal error: worker {} took a task whose process is not Ready ({:?})",
            self.index,
            slot.state.load()
        );
    }
}

/// Internal panics planted by the unit tests (`tests` below): the scheduler
/// (by its `Shared`'s address) and the process to panic on, and where.
#[cfg(test)]
pub(crate) mod inject {
    use crate::process::Pid;
    use std::sync::Mutex;

    /// Where the planted panic goes off.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) enum Stage {
        /// In `run_task`, right after `start`.
        Step,
        /// In `close`, right after `complete`.
        Close,
    }

    static PLANTED: Mutex<Vec<(usize, Pid, Stage)>> = Mutex::new(Vec::new());

    /// Panics once at `stage` of `pid` on the scheduler whose `Shared` is at
    /// `shared`.
    pub(crate) fn plant(shared: usize, pid: Pid, stage: Stage) {
        PLANTED.lock().unwrap().push((shared, pid, stage));
    }

    pub(crate) fn check(shared: usize, pid: Pid, stage: Stage) {
        let mut planted = PLANTED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = planted.iter().position(|&p| p == (shared, pid, stage)) {
            planted.swap_remove(at);
            drop(planted);
            panic!("planted internal panic at {stage:?} of {pid:?}");
        }
    }
}

#[cfg(test)]
mod tests;
