//! Late pushes: an event pushed for a process as it ended, after its
//! close may have drained the mailbox. The MPSC mailbox lets a producer
//! race its consumer, so a sender that found the process live (`admit`)
//! can push after the closer's last pop, or finish linking a node that
//! pop could not yet see. Only the sender's notify, after its push, can
//! tell; the state word (`process/state`) carries what it tells:
//!
//! - **Not yet freed.** The notify marks the Complete word late; the
//!   closer's `free` then fails ([`Late`]) and the closer drains again
//!   ([`Shared::take_late`]) before it retries, still the mailbox's only
//!   consumer.
//! - **Freed, not reused.** The notify takes the freed slot's mailbox
//!   (sweeping) and the sender drains it itself ([`Shared::sweep`]); a
//!   second late sender marks the sweep late, and the sweeper goes round
//!   again. The table passes over a slot being swept.
//! - **Reused.** The event waits in the mailbox for the new process's next
//!   drain (or close), which reports it as an earlier generation's.
//!
//! Either way a late event is reported to `on_undelivered` by the time the
//! late sender's `send` returns or the slot is freed, not when the slot is
//! next used (loom: `drain.rs`,
//! `a_push_that_races_its_process_end_is_reported_before_the_slot_is_reused`).
//! A late signal is dropped: its sender answers it, as its notify failed.
//!
//! [`Late`]: crate::process::state::Late

use super::Shared;
use crate::process::{Event, Pid, Process};
use crate::sched::core::table::{Item, Slot};

impl<P: Process> Shared<P> {
    /// Pops everything in `slot`'s mailbox, an ended process's, and returns
    /// the events to report (each with the PID it was sent to; the
    /// scheduler's own cancels dropped, signals left to their senders,
    /// timers to nobody). Gives back the places of a bounded mailbox, and
    /// counts the drain for the process dump, as every holder does.
    ///
    /// # Safety
    ///
    /// The caller is the mailbox's only consumer: the closer of its process
    /// (Complete, not yet freed), or the sweeper of its freed slot.
    pub(crate) unsafe fn take_late(&self, slot: &Slot<P>) -> Vec<(Pid, Event<P>)> {
        let key = slot.pid().key();
        let mut late = Vec::new();
        let (mut drained, mut places) = (0, 0);
        // SAFETY: the caller's contract.
        while let Some(envelope) = unsafe { slot.events.pop() } {
            drained += 1;
            places += u32::from(envelope.counted);
            if let Item::Event(event) = envelope.item {
                if !matches!(event, Event::Cancel(_)) {
                    late.push((Pid::new(key, envelope.generation), event));
                }
            }
        }
        if self.config.count_queued {
            slot.count_drained(drained);
        }
        if places != 0 {
            slot.bound.release(places);
            // A sender waiting for room in it is told to look again (it
            // will find the process gone).
            self.room.made();
        }
        late
    }

    /// The sweep a late sender owes a freed slot ([`Notify::Sweep`]):
    /// drains its mailbox until no late mark is left, lets go, and reports
    /// what it found. The reports come after the slot is let go, so a hook
    /// that blocks holds no slot back from reuse.
    ///
    /// [`Notify::Sweep`]: crate::process::state::Notify::Sweep
    #[cold]
    #[inline(never)]
    pub(crate) fn sweep(&self, slot: &Slot<P>) {
        let mut late = Vec::new();
        loop {
            // SAFETY: the notify that answered `Sweep` (or the `try_sweep`
            // of `report_stranded`) made us the freed slot's only consumer
            // until `end_sweep` lets go.
            late.append(&mut unsafe { self.take_late(slot) });
            if slot.state.end_sweep() {
                break;
            }
        }
        for (pid, event) in late {
            self.undelivered(pid, event);
        }
    }
}
