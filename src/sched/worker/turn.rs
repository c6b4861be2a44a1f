//! A worker played by a simulation's driver (`simulation/`): one turn of
//! the loop at a time, on the driver's thread, and the loop's end.
//!
//! A turn is the loop's body without its idle ladder: fire this worker's
//! due timers, run one process from its own sources (`find.rs`), else fire
//! every due wheel, else steal and run. No spinning and no parking: the
//! driver plays every worker, so none is ever registered as a sleeper, and
//! a publisher's `notify_one` finds nobody to wake. A worker with nothing
//! to do says so, and the driver asks another (or moves the virtual time).

use super::*;

/// What one turn did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// It ran a process: one step, or the close of one.
    Ran,
    /// It fired timers, which queued processes on its deque: no step yet.
    Fired,
    /// It found nothing to do.
    Nothing,
}

impl<P: Process> Local<P> {
    /// Plays one turn of this worker's loop; a panic of the scheduler's own
    /// code is contained as on a worker thread (`contain.rs`).
    pub(crate) fn turn(&mut self) -> Turn {
        let shared = Arc::clone(&self.shared);
        let watch = &shared.core.remotes[self.index].watch;
        let mut turn = Turn::Nothing;
        if let Err(panic) = self.contained(|local| turn = local.turn_once(watch)) {
            self.internal_panic(watch, panic);
            turn = Turn::Ran;
        }
        turn
    }

    fn turn_once(&mut self, watch: &StepWatch) -> Turn {
        let next = self.shared.timers.wheels[self.index].next();
        if next != NEVER {
            self.poll_own_timers(next);
        }
        if let Some(task) = self.find_local() {
            self.run_held(task, watch);
            return Turn::Ran;
        }
        if self.poll_all_timers() > 0 {
            return Turn::Fired;
        }
        if let Some(task) = self.steal() {
            self.run_held(task, watch);
            return Turn::Ran;
        }
        Turn::Nothing
    }

    /// Once a simulated scheduler is exiting: what a worker thread does
    /// after its loop (`Local::run`), then its start hook's pair.
    pub(crate) fn finish(mut self) {
        if self.observe.trace.is_some() {
            self.hand_back_trace();
        }
        self.shared.hooks.thread_stop(self.index);
    }

    /// Before a simulated scheduler's first turn: what a worker thread does
    /// before its loop (its start hook).
    pub(crate) fn begin(&self) {
        self.shared.hooks.thread_start(self.index);
    }
}
