//! Delivery: an event into a process's mailbox, and the wake it may owe.
//! Every sender takes this path (a step's sends, the outside's
//! [`Scheduler::send`](crate::sched::Scheduler::send), a completer, a timer,
//! a signal): admission against the phase and the generation, the bounded
//! mailbox's room, the push, and the state word's notify, which says whether
//! the caller must queue the process.

use super::{Refusal, Shared};
use crate::mpsc::NodeCache;
use crate::process::state::{Lifecycle, Notify, Wake};
use crate::process::{Event, Pid, Process};
use crate::sched::core::phase;
use crate::sched::core::table::{Envelope, Item, Slot, Task};
use crate::sched::links::Signal;
use crate::sched::timer::Firing;

impl<P: Process> Shared<P> {
    /// Queues `event` for `pid` and reports whether the process must now be
    /// scheduled (by the caller). Refuses, handing the event back, if the
    /// process is known to be gone before the event is queued.
    ///
    /// `nodes` is the calling worker's node cache, if any: a delivery from a
    /// step then allocates nothing in steady state.
    #[inline]
    pub(crate) fn deliver(
        &self,
        pid: Pid,
        event: Event<P>,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> Result<Option<Task<P>>, (Refusal, Event<P>)> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            Err(why) => return Err((why, event)),
        };
        // A message to a bounded mailbox takes a place first (`bound.rs`);
        // an unbounded one (limit 0) pays this load and branch only.
        let counted = matches!(kind, Wake::Message) && {
            let limit = slot.bound.limit();
            if limit != 0 && !slot.bound.try_reserve(limit) {
                return Err((Refusal::Full, event));
            }
            limit != 0
        };
        Ok(self
            .push(slot, pid, Item::Event(event), counted, kind, nodes)
            .0)
    }

    /// [`deliver`](Self::deliver) for a signal of the monitors and links
    /// (`links.rs`). `Err` if it was refused, or if it was queued but its
    /// notify found the process ended (the push raced the end: the closing
    /// worker may or may not have drained it): the caller answers it
    /// (`links::unanswered`), and duplicates are dropped by the receiver.
    /// Otherwise the process will see it in a step or in its `close`.
    pub(crate) fn deliver_signal(
        &self,
        pid: Pid,
        signal: Signal,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> Result<Option<Task<P>>, Option<Signal>> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            // Across nodes (`remote/`): a request the transport cannot
            // carry is answered there; the task is its sender's, if woken.
            Err(Refusal::Remote) => return Ok(self.forward_signal(pid, signal).err().flatten()),
            Err(_) => return Err(Some(signal)),
        };
        let answer = signal.owed();
        match self.push(slot, pid, Item::Signal(signal), false, kind, nodes) {
            (task, true) => Ok(task),
            (_, false) => Err(answer),
        }
    }

    /// An exit signal from outside the processes (`outside/exit.rs`),
    /// which wakes like a completion, so that a waiting target is woken to
    /// decide it; a woken target goes to its last worker's inject queue.
    /// `Err` if it was refused, or if its notify found the process ended
    /// (it was pushed as the process ended: the end drains it or the slot
    /// is freed with it; either way it changes nothing, an exit is owed no
    /// answer).
    pub(crate) fn deliver_exit(&self, pid: Pid, signal: Signal) -> Result<(), Refusal> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            Err(Refusal::Remote) => {
                return (self.forward_signal(pid, signal)).map_err(|_| Refusal::NoSuchProcess)
            }
            Err(why) => return Err(why),
        };
        match self.push(
            slot,
            pid,
            Item::Signal(signal),
            false,
            Wake::Completion,
            None,
        ) {
            (Some(task), true) => {
                self.core.schedule_remote(task);
                Ok(())
            }
            (None, true) => Ok(()),
            (_, false) => Err(Refusal::Finished),
        }
    }

    /// The first half of [`deliver_signal`](Self::deliver_signal), for a
    /// step's many requests (`send_requests`): `signal` pushed into `pid`'s
    /// mailbox, not yet notified; the caller notifies each process it
    /// pushed to once, after all of them ([`notify_signals`]). `Ok` with a
    /// clone of the request if it may be owed an answer (`Monitor`, `Link`:
    /// if that notify finds the process ended); `Err` with the signal if
    /// it was refused, to answer at once.
    ///
    /// [`notify_signals`]: Self::notify_signals
    pub(crate) fn push_signal(
        &self,
        pid: Pid,
        signal: Signal,
        nodes: &mut NodeCache<Envelope<P>>,
    ) -> Result<Option<Signal>, Signal> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            // Across nodes: nothing pushed here, nothing for
            // `notify_signals` to notify (it skips a PID with no slot).
            Err(Refusal::Remote) => {
                if let Err(Some(task)) = self.forward_signal(pid, signal) {
                    self.core.schedule_remote(task);
                }
                return Ok(None);
            }
            Err(_) => return Err(signal),
        };
        let owed = signal.owed();
        let item = Item::Signal(signal);
        self.enqueue(slot, pid, item, false, Wake::Message, Some(nodes));
        Ok(owed)
    }

    /// The second half: one notify for every signal
    /// [`push_signal`](Self::push_signal) pushed to `pid` before it, which
    /// wakes the process once for them all. The guarantee is that notify's
    /// (`links.rs`): if it finds the process not Complete, each signal
    /// pushed before it is seen by a later step or drained by `close`.
    /// `Err` if it found the process ended (the pushes raced the end): the
    /// caller answers the requests owed an answer.
    pub(crate) fn notify_signals(&self, pid: Pid) -> Result<Option<Task<P>>, ()> {
        // No slot: a remote PID, whose signals `push_signal` forwarded.
        let Some(slot) = self.core.table.get(pid.key()) else {
            return Ok(None);
        };
        match self.notify_pushed(slot, pid, Wake::Message) {
            (task, true) => Ok(task),
            (_, false) => Err(()),
        }
    }

    /// [`deliver`](Self::deliver) for a timer's firing (`timer/mod.rs`),
    /// which wakes like a completion. Refused, it is dropped: its process
    /// ended, and nobody waits for it. The task to queue, if any.
    pub(crate) fn deliver_timer(
        &self,
        pid: Pid,
        firing: Firing,
        nodes: &mut NodeCache<Envelope<P>>,
    ) -> Option<Task<P>> {
        let slot = self.admit(pid).ok()?;
        let item = Item::Timer(firing);
        (self.push(slot, pid, item, false, Wake::Completion, Some(nodes))).0
    }

    /// The slot of `pid` if it may still take an event.
    #[inline]
    fn admit(&self, pid: Pid) -> Result<&Slot<P>, Refusal> {
        if self.core.phase() == phase::EXITING {
            return Err(Refusal::ShuttingDown);
        }
        let Some(slot) = self.core.table.get(pid.key()) else {
            // The only place a remote PID is told apart (`remote/`).
            return Err(self.missing(pid));
        };
        let now = slot.state.load();
        if now.generation() != pid.generation() {
            // A generation the slot has passed is a finished process; one it
            // has not reached was never issued.
            // Generations only grow (a slot is retired before it wraps).
            let behind = now.generation() > pid.generation();
            return Err(if behind {
                Refusal::Finished
            } else {
                Refusal::NoSuchProcess
            });
        }
        match now.lifecycle() {
            Lifecycle::Free => Err(Refusal::NoSuchProcess),
            Lifecycle::Complete => Err(Refusal::Finished),
            _ => Ok(slot),
        }
    }

    /// Pushes `item` into `slot`'s mailbox and notifies the process: the
    /// task to queue if the notify made it Ready, and whether the process
    /// was still live at the notify (else the push raced its end).
    /// `counted`: the item holds a place of a bounded mailbox (`bound.rs`).
    #[inline]
    fn push(
        &self,
        slot: &Slot<P>,
        pid: Pid,
        item: Item<P>,
        counted: bool,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> (Option<Task<P>>, bool) {
        self.enqueue(slot, pid, item, counted, kind, nodes);
        self.notify_pushed(slot, pid, kind)
    }

    /// The first half of [`push`](Self::push): `item` into the mailbox,
    /// with no notify.
    #[inline]
    fn enqueue(
        &self,
        slot: &Slot<P>,
        pid: Pid,
        item: Item<P>,
        counted: bool,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) {
        let envelope = Envelope {
            generation: pid.generation(),
            counted,
            item,
        };
        // Counted before the push, so that no pop can come before its count
        // (the process dump's queued figure; see `QueueCounts::queued` in `figures.rs`). Only if
        // asked for: it is an RMW per event.
        if self.config.count_queued {
            slot.count_push();
        }
        match nodes {
            Some(nodes) => slot.events.push_with(envelope, nodes),
            // A message from a thread with no node cache: `Scheduler::send`
            // and its kin, from outside the workers (`depot.rs`).
            None if matches!(kind, Wake::Message) => self.push_outside(slot, envelope),
            // A completion or a cancel, from a handler (often on a worker,
            // where the allocator's thread cache makes a node cheap, and a
            // shared depot would not be) or from shutdown.
            None => slot.events.push(envelope),
        }
    }

    /// The second half of [`push`](Self::push): notifies the process of
    /// what was pushed.
    #[inline]
    fn notify_pushed(&self, slot: &Slot<P>, pid: Pid, kind: Wake) -> (Option<Task<P>>, bool) {
        match slot.state.notify(pid.generation(), kind) {
            Notify::Schedule => {
                slot.stamp_ready(&self.core.clock);
                (Some(Task::new(slot)), true)
            }
            Notify::Nothing => (None, true),
            // The process ended after our check. The item is in its queue:
            // its closer drains again (Finished: the word is marked late),
            // or the slot was freed and we sweep it (`late.rs`), or the
            // slot's next process reports it (Stale).
            Notify::Finished | Notify::Stale => (None, false),
            Notify::Sweep => {
                self.sweep(slot);
                (None, false)
            }
        }
    }

    /// Pushes `envelope` from a thread with no node cache, in a node from
    /// the depot if it can give one at once, else in a new one.
    fn push_outside(&self, slot: &Slot<P>, envelope: Envelope<P>) {
        slot.events
            .push_with(envelope, &mut self.core.depot.take_one());
    }

    /// [`Shared::deliver`] from a thread that is not running this
    /// process's step: a woken process goes to its last worker's inject
    /// queue. Returns whether the event woke the process.
    pub(crate) fn deliver_remote(
        &self,
        pid: Pid,
        event: Event<P>,
        kind: Wake,
    ) -> Result<bool, (Refusal, Event<P>)> {
        match self.deliver(pid, event, kind, None)? {
            Some(task) => {
                self.core.schedule_remote(task);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
