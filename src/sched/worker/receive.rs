//! A process's side of the signals sent to it: recorded in its links,
//! turned into the `Event::Down` a step sees, or noted as its end; and the
//! farewell its close sends to its watchers and links.

use super::signals::{exit_reason, publish_counts, Before};
use super::Local;
use crate::process::state::Wake;
use crate::process::{Event, ExitReason, Outcome, Pid, Process, ProcessError};
use crate::sched::core::table::{Body, Slot};
use crate::sched::links::{Links, Received, Signal};
use crate::sync::Ordering;

impl<P: Process> Local<P> {
    /// A signal for `pid` (the process this worker holds) found while
    /// collecting its events: recorded, or turned into the event a step
    /// sees (`Event::Down`), or noted as the process's end (`Before::Kill`,
    /// read back through `Links::killed_by`). The dump's counts are
    /// published once the events are collected (`before_step`).
    #[inline]
    pub(super) fn receive_signal(
        &mut self,
        body: &mut Body<P>,
        signal: Signal,
    ) -> Option<(Pid, ExitReason)> {
        match body
            .links_mut(&mut self.scratch.spare_extras)
            .receive(signal)
        {
            Received::Down(pid, reason) => Some((pid, reason)),
            Received::Nothing | Received::Kill(_) => None,
        }
    }

    /// [`receive_signal`](Self::receive_signal) of a monitor's `Down`
    /// about `target` taken one past a full step's cap: the event to carry
    /// to the next step, if the process still monitors `target`, marked
    /// (`Links::carried_down`) so that a `demonitor` in the step that does
    /// not see it takes it out (`flush_down`).
    pub(super) fn carry_down(
        &mut self,
        body: &mut Body<P>,
        target: Pid,
        reason: ExitReason,
    ) -> Option<Event<P>> {
        let links = body.links_mut(&mut self.scratch.spare_extras);
        if !links.receive_down(target) {
            return None;
        }
        links.carried_down = true;
        Some(Event::Down {
            pid: target,
            reason,
        })
    }

    /// After the events are collected: whether the process steps. Publishes
    /// the dump's counts of a process that has monitors or links (the
    /// signals just collected may have changed them), and passes on a
    /// `Down` a worker handed over when it claimed the process
    /// (`send_down`, `send_signal`), after the events collected, unless the collection
    /// was cut short by the step's cap (`full`): then the mailbox may still
    /// hold messages its sender sent before it ended (a Blocked process
    /// is not woken by messages), and the `Down` waits for the step that
    /// drains them, so that it comes after them, as through the mailbox.
    #[inline]
    pub(super) fn before_step(
        &mut self,
        slot: &Slot<P>,
        body: &mut Body<P>,
        last: bool,
        full: bool,
    ) -> Before {
        let Some(extra) = body.extra.as_deref_mut() else {
            return Before::Step;
        };
        let rewait = core::mem::take(&mut extra.rewait);
        if !full {
            if let Some((pid, reason)) = extra.down.take() {
                // Written where it goes: a plain `push` would build the
                // event on the stack and copy it, on the path from an end
                // to its watcher's step.
                self.scratch.events.reserve(1);
                let len = self.scratch.events.len();
                // SAFETY: `reserve` made room at `len`; the event is
                // written before the length counts it, and nothing
                // between the two can panic.
                unsafe {
                    self.scratch
                        .events
                        .as_mut_ptr()
                        .add(len)
                        .write(Event::Down { pid, reason });
                    self.scratch.events.set_len(len + 1);
                }
            }
        }
        let idle = match extra.links.as_ref() {
            Some(links) => {
                publish_counts(slot, links);
                if links.killed_by().is_some() {
                    return Before::Kill;
                }
                links.idle
            }
            None => false,
        };
        let quiet = !last && !full;
        if rewait && quiet && (self.scratch.events.iter()).all(|e| matches!(e, Event::Message(_))) {
            Before::Rewait
        } else if idle && quiet && self.scratch.events.is_empty() {
            Before::Repark
        } else {
            Before::Step
        }
    }

    /// Ends a process's monitors and links (`links`, in the extra part
    /// `close` took from its body, with the signals its mailbox still held
    /// applied): a `Down` to each watcher, an `Exit` to each linked
    /// process.
    ///
    /// The reason told is the process's outcome, `Linked(by)` only if
    /// `by`'s exit is what ended it (the reason a step's exit or kill
    /// carried, if that ended it: `Links::killed_reason`): collected before a step
    /// (`Before::Kill`, or handed over by a claim), it set `killed_by`, and
    /// the process was closed `Terminated` for it. An exit `close` drained
    /// sets nothing (`Links::receive_ending`), and one that set `killed_by`
    /// before a shutdown closed the process leaves that outcome its own.
    pub(super) fn farewell(
        &mut self,
        slot: &Slot<P>,
        pid: Pid,
        links: &Links,
        outcome: &Outcome<P>,
    ) {
        // Ended by a link's exit, with no watchers: the exit each link is
        // told is `ExitLinked` built in place, with no `ExitReason` made,
        // cloned and matched on the way (what a link of a chain's
        // teardown does between its end and the next one's).
        let by_link = matches!(outcome, Err(ProcessError::Terminated))
            .then(|| links.linked_by())
            .flatten();
        match (by_link, links.watchers().is_empty()) {
            (Some(by), true) => {
                for &linked in links.linked() {
                    self.send_signal(linked, Signal::ExitLinked(pid, by), Wake::Completion);
                }
            }
            _ => {
                let reason = match (links.killed_reason(), outcome) {
                    (Some(told), Err(ProcessError::Terminated)) => told,
                    _ => exit_reason::<P>(outcome),
                };
                for &watcher in links.watchers() {
                    self.send_down(watcher, pid, &reason);
                }
                for &linked in links.linked() {
                    self.send_signal(linked, Signal::exit(pid, reason.clone()), Wake::Completion);
                }
            }
        }
        // Relaxed: a figure for the dump (see `Slot::link_counts`).
        slot.link_counts.store(0, Ordering::Relaxed);
    }
}
