//! Running one process: start its step (or close it), collect its events,
//! step it, apply what it asked for (spawns, sends, commands), and end the
//! step or close the process (`close.rs`). The other half of the worker,
//! `worker.rs`, finds the process.

use super::signals::Before;
use super::{Begun, Local};
use crate::process::state::{AfterStep, Park, Start};
use crate::process::{
    panic_message, Cancel, Event, Outcome, Pid, Process, ProcessError, Status, StepOutput,
};
use crate::sched::core::table::{Body, Envelope, Item, Slot, Task};
use crate::sched::observe::kind_counts::kind_of;
use crate::sched::observe::step_hook::{StepInfo, StepStatus};
use crate::sched::observe::trace::{self, Kind};
use crate::sched::observe::watch::StepWatch;
use crate::sched::shared::{phase, LocalSpawner};
use crate::sync::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// How the step's block ended: a process stepped (and whether what it
/// carries must run it again), or an outside receiver's messages forwarded.
enum After {
    Carry(bool),
    Forwarded { end: bool, more: bool },
}
use After::{Carry, Forwarded};

impl<P: Process> Local<P> {
    pub(super) fn run_task(&mut self, task: Task<P>, watch: &StepWatch) {
        let slot = task.slot();
        // Before `start`: the dump reports it once the process is Running
        // (`figures.rs`); remote wakeups read it as a hint.
        slot.figures.ran_on(self.index);
        let Some(start) = slot.state.try_start() else {
            // Not Ready: not ours to run (`contain.rs`).
            return self.refuse_task(slot);
        };
        slot.stamp(self.shared.core.clock.now());
        let pid = slot.pid();
        #[cfg(test)]
        super::contain::inject::check(self.shared_addr(), pid, super::contain::inject::Stage::Step);
        // Published for the long-step monitor: the step, its handlers and
        // `close` are the embedder's code, any of which may run long.
        let monitored = self.observe.monitored;
        let begun = Begun {
            pid,
            // Without a monitor nothing is published, and `preempt` stays 0,
            // which no (odd) sequence number matches.
            seq: if monitored {
                self.observe.clock.begin(watch, pid)
            } else {
                1
            },
            preempt: watch.preempt(),
        };
        // `start` moved the process to Running: we hold it until our next
        // transition (`end_step` in `step`, or `remove` in `close`). Neither
        // takes a `&mut Body`: each borrows the body only in a block that
        // ends before that transition (see `Slot::body`).
        match start {
            _ if self.shared.core.phase() >= phase::FORCING => {
                self.close(slot, Err(ProcessError::Shutdown), false)
            }
            Start::Close => self.close(slot, Err(ProcessError::Terminated), false),
            Start::Step { last } => self.step(task, last, begun),
        }
        // The holding is over (`end_step` or the free in `close` was its
        // last RMW of the state word): senders waiting for room are woken
        // if this holding released places (`bound.rs`, `Room`).
        if self.scratch.released {
            self.scratch.released = false;
            self.shared.room.made();
        }
        if monitored {
            self.observe.clock.end(watch);
        }
    }

    /// Steps the process `task` (which `run_task` made Running), applies
    /// its effects, and ends the step (`end_step`) or closes the process.
    ///
    /// The body is borrowed only inside the first block, which ends before
    /// either: once `end_step` has parked the process, a send may make it
    /// Ready and another worker take its body while this frame still runs,
    /// so no reference to the body may be live past it (not even an unused
    /// argument: Stacked Borrows protects those for the whole call).
    fn step(&mut self, task: Task<P>, last: bool, begun: Begun<'_>) {
        let slot = task.slot();
        let pid = begun.pid;
        let (full, before) = {
            // SAFETY: we hold the process (Running); the borrow ends with
            // this block, before `end_step` or `close`.
            let body = unsafe { slot.body() };
            let full = self.collect_events(slot, body, pid);
            let before = self.before_step(slot, body, last, full);
            if let Before::Kill | Before::Rewait = before {
                // Its events are reported by `close`, like a carry; or,
                // only messages, they wait in the carry for the completion.
                body.carry.append(&mut self.scratch.events);
            }
            (full, before)
        };
        match before {
            Before::Step => {}
            // An exit signal through a link (`signals.rs`).
            Before::Kill => return self.close(slot, Err(ProcessError::Terminated), false),
            Before::Repark => return self.end(task, Park::Idle),
            Before::Rewait => return self.end_wait(task),
        }
        let (outcome, status, more) = 'body: {
            // SAFETY: we hold the process (Running, from `run_task`'s
            // `start`); the borrow ends with this block, before `end_step`
            // or `close`.
            let body = unsafe { slot.body() };
            if last {
                self.scratch.events.push(Event::Cancel(Cancel::Terminate));
            }
            let Some(process) = body.process.as_mut() else {
                // No process: an outside receiver's slot.
                let (end, more) = self.forward(body, pid);
                break 'body (None, Status::Wait, Forwarded { end, more });
            };
            // One branch when nothing watches the step.
            let watched = self.observe.per_step;
            let started = if watched {
                self.watch_step_start(slot, pid, process)
            } else {
                0
            };
            let given = self.scratch.events.len();
            let spawner = LocalSpawner {
                shared: &self.shared,
                free: &self.scratch.free,
            };
            let mut out = StepOutput::new(
                pid,
                &mut self.scratch.effects,
                &spawner,
                begun.preempt,
                begun.seq,
            );
            let events = &mut self.scratch.events;
            let result = catch_unwind(AssertUnwindSafe(|| process.step(events, &mut out)));
            let status = out.take_status();
            if watched {
                let failed = !matches!(result, Ok(Ok(())));
                self.watch_step_end(slot, pid, started, given, failed, &status);
            }
            self.carry_leftovers(body);
            // Whether what is carried would wake the process from `Idle`
            // (any event) or from `Wait` (a completion or cancel, which may
            // also be among the events a full step left queued): then it
            // runs again rather than parking, as if they had just arrived.
            // A carry of messages alone leaves a waiting process asleep;
            // they come with the completion that wakes it.
            let mut more = match status {
                Status::Idle => !body.carry.is_empty(),
                Status::Wait => full || body.carry.iter().any(|e| !matches!(e, Event::Message(_))),
                _ => false,
            };
            slot.count_step();
            self.counters().steps.add(1);

            let mut outcome: Option<Outcome<P>> = match result {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(Err(ProcessError::Failed(e))),
                Err(panic) => Some(Err(ProcessError::Panicked(panic_message(&*panic)))),
            };
            if !self.scratch.effects.links.is_empty() {
                self.apply_links(slot, pid, body);
            }
            if let Some(links) = body.extra.as_deref_mut().and_then(|e| e.links.as_mut()) {
                links.idle = matches!(status, Status::Idle) && !more && outcome.is_none();
            }
            // Most steps spawn nothing and send no command, and a `drain` of
            // an empty vector still costs its iterator (this check and the
            // one in `dispatch` keep it off a message round trip).
            if !self.scratch.effects.spawned.is_empty() {
                self.apply_spawns();
            }
            // A message refused by a full mailbox comes back as an event,
            // which wakes the sender like a completion.
            more |= self.apply_sends(pid, &mut body.carry);
            let ending = outcome.is_some() || last || matches!(status, Status::Done(_));
            if !self.scratch.effects.calls.is_empty() {
                more |= self.apply_calls(pid, body, ending);
            }
            if ending {
                self.scratch.effects.commands.clear();
                self.scratch.effects.timers.clear();
            } else if let Err(message) = self.dispatch(pid, body) {
                outcome = Some(Err(ProcessError::Panicked(message)));
                self.scratch.effects.timers.clear();
            } else {
                self.apply_timers(pid, body, slot);
            }
            (outcome, status, Carry(more))
        };
        let more = match more {
            Carry(more) => more,
            Forwarded { end, more } => return self.end_forward(task, end, more),
        };

        let park = match (outcome, status) {
            (Some(outcome), _) => return self.close(slot, outcome, true),
            (None, _) if last => return self.close(slot, Err(ProcessError::Terminated), true),
            (None, Status::Done(output)) => return self.close(slot, Ok(output), true),
            (None, Status::Continue) => Park::Continue,
            // Events are carried over that would have woken it (see
            // `carry_leftovers`): it runs again at once.
            (None, Status::Wait | Status::Idle) if more => Park::Continue,
            (None, Status::Wait) => return self.end_wait(task),
            (None, Status::Idle) => Park::Idle,
        };
        self.end(task, park);
    }

    /// Before a watched step: its kind counted, its start traced and
    /// timed, as configured. Returns the timing's start reading (0 if not
    /// timed).
    #[inline(never)]
    fn watch_step_start(&mut self, slot: &Slot<P>, pid: Pid, process: &P) -> u64 {
        if self.observe.count_kinds {
            self.count_kind_step(kind_of(process));
        }
        if let Some(ring) = &mut self.observe.trace {
            ring.begin_step();
        }
        if self.observe.timed {
            self.step_started(slot, pid)
        } else {
            0
        }
    }

    /// After a watched step: its figures and hook (`step_ended`), then its
    /// end in the trace, with how it ended.
    #[inline(never)]
    fn watch_step_end(
        &mut self,
        slot: &Slot<P>,
        pid: Pid,
        started: u64,
        given: usize,
        failed: bool,
        status: &Status<P::Output>,
    ) {
        if self.observe.timed {
            let ended = match status {
                _ if failed => StepStatus::Failed,
                Status::Continue => StepStatus::Continue,
                Status::Wait => StepStatus::Wait,
                Status::Idle => StepStatus::Idle,
                Status::Done(_) => StepStatus::Done,
            };
            self.step_ended(slot, pid, started, given, ended);
        }
        if let Some(ring) = &mut self.observe.trace {
            let code = match status {
                _ if failed => trace::status::ERROR,
                Status::Continue => trace::status::CONTINUE,
                Status::Wait => trace::status::WAIT,
                Status::Idle => trace::status::IDLE,
                Status::Done(_) => trace::status::DONE,
            };
            ring.end_step(pid, code);
        }
    }

    /// Counts a step of a process of kind `kind` (`observe/kind_counts.rs`).
    #[inline(never)]
    fn count_kind_step(&self, kind: usize) {
        if let Some(steps) = self.shared.core.remotes[self.index].kind_steps.get(kind) {
            steps.add(1);
        }
    }

    /// Before a timed step (`observe/step_hook.rs`): the start hook, then
    /// the clock reading the step starts at, and the schedule latency since
    /// the process was made Ready. Returns the reading.
    #[inline(never)]
    fn step_started(&self, slot: &Slot<P>, pid: Pid) -> u64 {
        let shared = &*self.shared;
        shared.hooks.step_start(pid, self.index);
        let now = shared.core.clock.fine_now();
        if let Some(latency) = &shared.core.remotes[self.index].latency {
            // 0 (never stamped) cannot happen for a process created with
            // the figures on; saturating, a stamp from another core's clock
            // that reads ahead of ours counts as 0.
            let waited = now.saturating_sub(slot.ready_at());
            latency
                .schedule
                .record(shared.core.clock.fine_nanos(waited));
        }
        now
    }

    /// After a timed step that began at `started` and was given `given`
    /// events: its latency and busy time, the Ready stamp of a process
    /// that runs again, then the step hook.
    #[inline(never)]
    fn step_ended(&self, slot: &Slot<P>, pid: Pid, started: u64, given: usize, status: StepStatus) {
        let shared = &*self.shared;
        let now = shared.core.clock.fine_now();
        let took = shared.core.clock.fine_nanos(now.saturating_sub(started));
        let remote = &shared.core.remotes[self.index];
        if let Some(latency) = &remote.latency {
            latency.step.record(took);
            remote.counters.busy_nanos.add(took);
            // Still Running: no notifier stamps it meanwhile. A process
            // that runs again (`Continue`, or woken during the step) is
            // Ready from now; one that parks is stamped by its waker.
            slot.mark_ready(now);
        }
        if shared.hooks.on_step.is_some() {
            shared.hooks.step_end(&StepInfo {
                pid,
                worker: self.index,
                duration: Duration::from_nanos(took),
                events: given,
                status,
            });
        }
    }

    /// Ends the step of `task`, which waits for a completion: parks it
    /// Blocked, unless its mailbox is not empty. A message's push may be
    /// mid-link there, ahead of a completion the drain could not reach,
    /// whose wake this step took; the message's own notify, after its
    /// link, does not wake a Blocked process. So it parks Idle, marked
    /// (`Extra::rewait`): that notify, or any other, wakes it, and
    /// `before_step` sends it back to wait if only messages came. (loom:
    /// `state.rs`, `a_completion_behind_a_message_mid_link_reaches_a_waiting_process`.)
    fn end_wait(&mut self, task: Task<P>) {
        let slot = task.slot();
        // SAFETY: we hold the process (Running): its mailbox's only
        // consumer until `end_step`.
        if unsafe { slot.events.is_empty() } {
            return self.end(task, Park::Wait);
        }
        self.mark_rewait(slot);
        self.end(task, Park::Idle)
    }

    /// Marks `slot`'s process for [`end_wait`](Self::end_wait)'s Idle park.
    #[cold]
    #[inline(never)]
    fn mark_rewait(&mut self, slot: &Slot<P>) {
        // SAFETY: we hold the process (Running); the borrow ends here,
        // before `end_step`.
        let body = unsafe { slot.body() };
        body.extra_from(&mut self.scratch.spare_extras).rewait = true;
    }

    /// Ends the step of `task`: parks or requeues it, or closes it if a
    /// terminate came meanwhile.
    fn end(&mut self, task: Task<P>, park: Park) {
        let slot = task.slot();
        // Stamped before the transition, while we still hold the process:
        // after it, a notifier or another worker may own the slot.
        slot.stamp(self.shared.core.clock.now());
        match slot.state.end_step(park) {
            AfterStep::Requeue => self.queues.yielded.push_back(task),
            AfterStep::Parked => {}
            AfterStep::Close => {
                let why = if self.shared.core.phase() >= phase::FORCING {
                    ProcessError::Shutdown
                } else {
                    ProcessError::Terminated
                };
                self.close(slot, Err(why), true);
            }
        }
    }

    /// Fills the step buffer: first the events carried over from the last
    /// step, then the process's queued events, up to the cap of events per
    /// step, dropping (and reporting) events meant for an earlier process
    /// in this slot and completions of tags the process is not waiting for.
    ///
    /// Returns whether the cap stopped the drain with an event still queued:
    /// that event (taken to find out) is carried to the next step, and the
    /// process must run again whatever status its step returns.
    fn collect_events(&mut self, slot: &Slot<P>, body: &mut Body<P>, pid: Pid) -> bool {
        if !body.carry.is_empty() {
            // Moved, not appended: the carry's allocation is freed, so a
            // process that once left events behind keeps no buffer.
            self.scratch.events.extend(core::mem::take(&mut body.carry));
            if let Some(extra) = body.extra.as_deref_mut() {
                Self::hand_over_carried(extra);
            }
        }
        let cap = self.shared.config.events_per_step;
        let mut drained = 0;
        let mut places = 0;
        let mut full = false;
        // SAFETY: we hold the process (Running), which makes us the queue's
        // only consumer.
        while let Some(envelope) = unsafe { slot.events.pop_with(&mut self.scratch.nodes) } {
            drained += 1;
            places += u32::from(envelope.counted);
            let event = match envelope {
                // The common case, kept apart so that the event moves once:
                // a message or cancel for this incarnation needs no check.
                Envelope {
                    generation,
                    item: Item::Event(event @ (Event::Message(_) | Event::Cancel(_))),
                    ..
                } if generation == pid.generation() => event,
                envelope if self.scratch.events.len() < cap => {
                    match self.accept(envelope, body, pid) {
                        Some(event) => event,
                        None => continue,
                    }
                }
                // One past the cap, and not the common case: a `Down` or a
                // timer is marked as not yet seen (`accept_past_cap`).
                envelope => match self.accept_past_cap(envelope, body, pid) {
                    Some(event) => {
                        body.carry.push(event);
                        full = true;
                        break;
                    }
                    None => continue,
                },
            };
            if self.scratch.events.len() < cap {
                self.scratch.events.push(event);
            } else {
                // One past the cap: the mailbox had more than a step takes.
                // It is the oldest event left, so it goes first next time.
                body.carry.push(event);
                full = true;
                break;
            }
        }
        // Once per step: a bounded mailbox's places, and the process dump's
        // queued figure.
        if places != 0 {
            slot.bound.release(places);
            self.scratch.released = true;
        }
        if self.shared.config.count_queued {
            slot.count_drained(drained);
        }
        if drained != 0
            && self.scratch.nodes.len() > self.scratch.nodes.limit() / 2
            && self.shared.core.depot.is_hungry()
        {
            // More than half full after a drain that gave it nodes, and
            // outside senders are allocating: what is above half goes to
            // them (`depot.rs`). A collection that drained nothing (a
            // wakeup by a handed `Down`, a carry) left the cache as it was
            // and skips the look at the depot's flag.
            self.shared.core.depot.refill(&mut self.scratch.nodes);
        }
        full
    }

    /// The event in `envelope`, if it is for this process: an event sent to
    /// an earlier process in the slot, or a completion of a tag the process
    /// is not waiting for, is reported instead.
    pub(super) fn accept(
        &mut self,
        envelope: Envelope<P>,
        body: &mut Body<P>,
        pid: Pid,
    ) -> Option<Event<P>> {
        let item = envelope.item;
        if envelope.generation != pid.generation() {
            let stale = Pid::new(pid.key(), envelope.generation);
            match item {
                Item::Event(event) => self.shared.undelivered(stale, event),
                // A request that landed after its process's `close`.
                Item::Signal(signal) => self.answer(stale, signal),
                // A late timer of an earlier process: dropped silently.
                Item::Timer(_) => {}
            }
            return None;
        }
        let event = match item {
            // A reply to a call (`calls.rs`).
            Item::Event(event @ Event::Reply { .. }) => return self.accept_reply(body, pid, event),
            Item::Event(event) => event,
            Item::Signal(signal) => {
                let (pid, reason) = self.receive_signal(body, signal)?;
                return Some(Event::Down { pid, reason });
            }
            // An event only if it is the pending arming's firing.
            Item::Timer(firing) => return self.accept_timer(pid, body, &firing),
        };
        if let Event::Completion { tag, .. } = &event {
            let tag = *tag;
            match body.pending.iter().position(|&t| t == tag) {
                Some(at) => {
                    body.pending.swap_remove(at);
                    // A completion beats its timeout, which goes.
                    self.cancel_record(body, tag, true);
                }
                None => {
                    // Relaxed: a statistic.
                    self.shared
                        .totals
                        .unknown_tags
                        .fetch_add(1, Ordering::Relaxed);
                    self.shared.undelivered(pid, event);
                    return None;
                }
            }
        }
        Some(event)
    }

    /// Keeps the events a step left in its vector for the next step, ahead
    /// of the event (if any) that `collect_events` carried past the cap.
    fn carry_leftovers(&mut self, body: &mut Body<P>) {
        if !self.scratch.events.is_empty() {
            let mut kept = Vec::with_capacity(self.scratch.events.len() + body.carry.len());
            kept.append(&mut self.scratch.events);
            kept.append(&mut body.carry);
            body.carry = kept;
        }
        // The buffer holds at most a step's cap unless a step pushed more
        // into it; after such a burst, its memory goes back.
        let cap = self.shared.config.events_per_step;
        if self.scratch.events.capacity() > cap.saturating_mul(2) {
            self.scratch.events.shrink_to(cap);
        }
    }

    /// Queues the step's children. The first runs next on this worker if
    /// `runnext` is free (tokio puts a spawned task in its LIFO slot, Go a
    /// new goroutine in `runnext`): a process that spawns one child and
    /// waits for it (a watcher, a chain of spawns) keeps both on this core,
    /// and no sleeping worker is woken for a process nobody can steal. The
    /// rest go on the deque, which wakes a sleeper, as does a message of
    /// this step that then displaces the first child from `runnext`
    /// (`apply_sends`). If the step's monitor or link requests woke a
    /// process (`apply_links`, before this), it holds `runnext`, and every
    /// child goes on the deque.
    pub(super) fn apply_spawns(&mut self) {
        let mut moved = 0;
        for pid in self.scratch.effects.spawned.drain(..) {
            let slot = self
                .shared
                .core
                .table
                .get(pid.key())
                .expect("a spawned process has a slot");
            if let Some(ring) = &mut self.observe.trace {
                ring.record_effect(Kind::Spawn, pid.into_raw());
            }
            let task = Task::new(slot);
            if self.queues.runnext.is_none() {
                self.queues.runnext = Some(task);
            } else {
                self.queues.deque.push(task);
                moved += 1;
            }
        }
        self.queued_locally(moved);
    }
}
