//! An outside receiver's step (`sched/outside.rs`): the worker that takes
//! its slot steps no process but moves the messages collected for it into
//! its inbox, then parks it Idle again or closes it.

use super::Local;
use crate::process::state::{AfterStep, Park};
use crate::process::{Event, Pid, Process, ProcessError};
use crate::sched::core::table::{Body, Task};
use crate::sched::shared::phase;

impl<P: Process> Local<P> {
    /// The step of an outside receiver's slot (`outside.rs`): moves the
    /// messages collected for it into its inbox. Returns whether it must
    /// end (a cancel: shutdown's, or a terminate's as the last step) and
    /// whether events are still carried for it.
    #[cold]
    #[inline(never)]
    pub(super) fn forward(&mut self, body: &mut Body<P>, pid: Pid) -> (bool, bool) {
        let mut end = false;
        let messages = self
            .scratch
            .events
            .drain(..)
            .filter_map(|event| match event {
                Event::Message(message) => Some(message),
                Event::Cancel(_) => {
                    end = true;
                    None
                }
                // A receiver yields no command, so no completion is pending
                // and `collect_events` reported any as unknown.
                _ => None,
            });
        let inbox = body
            .outside()
            .expect("a slot without a process has an inbox");
        let shared = &self.shared;
        inbox.push_all(messages, |message| {
            shared.undelivered(pid, Event::Message(message));
        });
        (end, !body.carry.is_empty())
    }

    /// Ends an outside receiver's step: parks it Idle again (or requeues
    /// it, with events still carried), or closes it.
    #[cold]
    #[inline(never)]
    pub(super) fn end_forward(&mut self, task: Task<P>, end: bool, more: bool) {
        let slot = task.slot();
        slot.count_step();
        self.counters().steps.add(1);
        if end {
            let why = if self.shared.core.phase() >= phase::STOPPING {
                // Ended by its cancel, as a process that ends on it: the
                // shutdown report counts it completed, not forced.
                self.scratch.ended_on_cancel = true;
                ProcessError::Shutdown
            } else {
                ProcessError::Terminated
            };
            return self.close(slot, Err(why), true);
        }
        let park = if more { Park::Continue } else { Park::Idle };
        slot.stamp(self.shared.core.clock.now());
        match slot.state.end_step(park) {
            AfterStep::Requeue => self.queues.yielded.push_back(task),
            AfterStep::Parked => {}
            AfterStep::Close => self.close(slot, Err(ProcessError::Terminated), true),
        }
    }
}
