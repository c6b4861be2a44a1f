//! Ending a process: its `close`, the report of what it leaves (carried
//! events, queued events, timers), its farewell to monitors and links, and
//! the free of its slot. Called by the step that ends it (`step.rs`), by a
//! terminate or shutdown found at its start, and by an outside receiver's
//! end.

use super::Local;
use crate::process::{panic_message, Event, Outcome, Pid, Process, ProcessError};
use crate::sched::core::table::{Item, Slot};
use crate::sched::observe::kind_counts::kind_of;
use crate::sched::observe::trace::Kind;
use crate::sync::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};

impl<P: Process> Local<P> {
    /// Ends the process: `close`, report leftovers, publish the outcome,
    /// free the slot. `after_step`: right after a step of it (the trace
    /// stamps the completion with that step's end).
    ///
    /// What it needs from the body is taken out in one block; no reference
    /// to the body is live at `remove`, after which the slot may be reused
    /// by another thread while this frame still runs (see `Slot::body`).
    pub(super) fn close(&mut self, slot: &Slot<P>, mut outcome: Outcome<P>, after_step: bool) {
        // `close` runs user code: a tick read before it is too old for the
        // next poll's purpose (`Local::timer_tick`).
        self.timers.timer_tick = None;
        let pid = slot.pid();
        slot.state.complete();
        // After `complete`: the close's half of the race with a register
        // (`registry/flag.rs`). A process never named pays this load and
        // one branch.
        if slot.named.is_set() {
            self.shared.unname(slot, pid);
        }
        #[cfg(test)]
        super::contain::inject::check(
            self.shared_addr(),
            pid,
            super::contain::inject::Stage::Close,
        );
        let (process, joiner, carried, mut extra) = {
            // SAFETY: we still hold the process (Complete, not yet freed);
            // the borrow ends with this block, before `remove`.
            let body = unsafe { slot.body() };
            body.pending.clear();
            // Only a body with an extra part whose vector was ever
            // allocated had timers (or a count): its vector is freed only
            // here, and a part is reused only with none. A process that
            // only monitors or links skips this, a visible part of the
            // path from an end to its watcher's step.
            if body
                .extra
                .as_ref()
                .is_some_and(|e| e.timers.capacity() != 0)
            {
                self.cancel_all_timers(body);
                // Zeroed even with no record left: this step's event may
                // have taken the last one (a timer that fired) after the
                // count.
                self.publish_timer_count(body, slot);
            }
            (
                body.process.take(),
                body.joiner.take(),
                core::mem::take(&mut body.carry),
                // Kept for another process (or freed) at the end, after the
                // `Down`s and exits are sent: not on the way from the end to
                // the watchers.
                body.extra.take(),
            )
        };
        let outside = extra.as_mut().and_then(|e| e.outside.take());
        if let Some(e) = extra.as_mut() {
            // A `Down` handed over for a step it will not take (closed at
            // its start): dropped, as the `Down`s in its mailbox are.
            e.down = None;
        }
        // Events the last step left or was not given: reported like those
        // still queued, except the cancels the scheduler itself made and
        // the `Down`s of its monitors.
        if !carried.is_empty() {
            for event in carried {
                if !matches!(event, Event::Cancel(_) | Event::Down { .. }) {
                    self.shared.undelivered(pid, event);
                }
            }
        }
        if let Some(mut process) = process {
            if let Some(kinds) = &self.shared.kinds {
                kinds.ended(kind_of(&process));
            }
            let closed = catch_unwind(AssertUnwindSafe(move || {
                process.close();
                drop(process);
            }));
            if let Err(panic) = closed {
                if outcome.is_ok() {
                    outcome = Err(ProcessError::Panicked(panic_message(&*panic)));
                }
            }
        }
        let mut drained = 0;
        let mut places = 0;
        // SAFETY: we still hold the process (Complete, not yet freed): the
        // only consumer of its queue.
        while let Some(envelope) = unsafe { slot.events.pop_with(&mut self.scratch.nodes) } {
            drained += 1;
            places += u32::from(envelope.counted);
            let to = Pid::new(pid.key(), envelope.generation);
            match envelope.item {
                // The scheduler's own cancels (a shutdown's, a terminate's)
                // were for this process alone: dropped, as when carried,
                // and as the stranded-events report does.
                Item::Event(Event::Cancel(_)) => {}
                Item::Event(event) => self.shared.undelivered(to, event),
                // A timer of this process or an earlier one: nobody waits
                // for it (`timer/mod.rs`).
                Item::Timer(_) => {}
                // Requests that came since its last step: a monitor or link
                // set now is told of this end below, like earlier ones. An
                // exit only unlinks: it came too late to end this process,
                // which is told as it ended (`Links::receive_ending`).
                Item::Signal(signal) if to == pid => {
                    let extra = extra.get_or_insert_with(|| self.scratch.spare_extras.take());
                    (extra.links)
                        .get_or_insert_with(Default::default)
                        .receive_ending(signal);
                }
                Item::Signal(signal) => self.answer(to, signal),
            }
        }
        if places != 0 {
            slot.bound.release(places);
            self.scratch.released = true;
        }
        if self.shared.config.count_queued {
            slot.count_drained(drained);
        }
        let on_cancel = core::mem::take(&mut self.scratch.ended_on_cancel);
        if matches!(outcome, Err(ProcessError::Shutdown)) && !on_cancel {
            // Relaxed: read by `shutdown` after `live()` reached zero; the
            // Release store of this close's count in `table.remove` below
            // (Acquire-loaded by `live()`) orders this increment before it.
            self.shared.totals.forced.fetch_add(1, Ordering::Relaxed);
        }
        // Borrowed where they are, in the extra part: moving them out into
        // a local would copy the whole `Links` on the way from the end to
        // the watchers, on the path from an end to its watcher's step.
        if let Some(links) = extra.as_ref().and_then(|e| e.links.as_ref()) {
            self.farewell(slot, pid, links, &outcome);
        }
        self.free_slot(slot);
        if let Some(ring) = &mut self.observe.trace {
            if after_step {
                ring.record_effect(Kind::Complete, pid.into_raw());
            } else {
                ring.record(Kind::Complete, pid.into_raw(), 0);
            }
        }
        match outside {
            // A receiver: nothing more will come; no `on_complete`.
            Some(inbox) => inbox.close(),
            None => self.shared.hooks.complete(pid, &outcome),
        }
        if let Some(joiner) = joiner {
            joiner.set(pid, outcome);
        }
        if let Some(mut extra) = extra {
            if let (Some(remote), false) = (&self.shared.remote, extra.calls.is_empty()) {
                // Its calls across nodes wait no more: a fall of their
                // callee's node owes this process nothing.
                for &(id, _) in &extra.calls {
                    remote.watches.remove_call(pid, id);
                }
            }
            extra.links = None; // a spare part holds nothing
            extra.calls = Vec::new();
            self.scratch.spare_extras.give(extra);
        }
    }

    /// Frees the slot of a process this worker closed, its mailbox
    /// drained. A push that raced the end (its notify found the word
    /// Complete and marked it late) may have come after that drain: the
    /// free fails until a drain has seen every such push (`late.rs`).
    pub(super) fn free_slot(&mut self, slot: &Slot<P>) {
        while (self.shared.core.table)
            .remove(slot, self.index, &mut self.scratch.free.borrow_mut())
            .is_err()
        {
            self.report_late(slot);
        }
    }

    /// Drains again a mailbox that a late push reached after the close's
    /// drain, and reports what it finds.
    #[cold]
    #[inline(never)]
    fn report_late(&mut self, slot: &Slot<P>) {
        // SAFETY: we still hold the process (Complete, not yet freed): the
        // only consumer of its queue.
        for (pid, event) in unsafe { self.shared.take_late(slot) } {
            self.shared.undelivered(pid, event);
        }
    }
}
