//! The worker's side of timers (`src/sched/timer/mod.rs` has the design):
//! applying what a step asked for, accepting or dropping a timer's event,
//! cancelling a closed process's timers, and firing due wheels; and the
//! event a collection takes one past the step's cap, a timer's or a
//! monitor's (`accept_past_cap`), marked as not yet seen.

use super::Local;
use crate::process::state::Wake;
use crate::process::timer::{TimerOp, When};
use crate::process::{CommandError, Event, Pid, Process};
use crate::sched::core::body::Extra;
use crate::sched::core::table::{Body, Envelope, Item, Slot};
use crate::sched::links::Signal;
use crate::sched::shared::phase;
use crate::sched::timer::wheel::{TimerKind, TICK_NANOS, TICK_SHIFT};
use crate::sched::timer::{earliest, Firing, Record, TimerClock, LATE_NANOS, NEVER};
use crate::sync::Ordering;
use std::time::Duration;

impl<P: Process> Local<P> {
    /// Applies the step's timer operations to the process `pid` (which we
    /// hold), in call order. New timers go into this worker's own wheel.
    pub(super) fn apply_timers(&mut self, pid: Pid, body: &mut Body<P>, slot: &Slot<P>) {
        let rearm = if self.scratch.effects.timers.is_empty() {
            // The step's events may have taken records out without an
            // operation (`collect_events`: a timer or timeout that fired, a
            // command that completed before its timeout). Only a body with
            // an extra ever had a record.
            let Some(extra) = body.extra.as_deref() else {
                return;
            };
            // An interval whose tick this step was given
            // (`Record::mark_rearm`) is re-armed below.
            if !extra.timers.iter().any(Record::due_to_rearm) {
                self.publish_timer_count(body, slot);
                return;
            }
            true
        } else {
            (body.extra.as_deref()).is_some_and(|e| e.timers.iter().any(Record::due_to_rearm))
        };
        let mut ops = core::mem::take(&mut self.scratch.effects.timers);
        let shared = &*self.shared;
        let clock = &shared.timers.clock;
        // One clock read for the step, and for the next turn's poll of
        // this worker's wheel (`Local::timer_tick`).
        let now = clock.nanos(clock.instant());
        let now_tick = now >> TICK_SHIFT;
        self.timers.timer_tick = Some((self.queues.tick, now_tick));
        let mut lowered = false;
        if rearm {
            // Intervals whose tick this step was given: the next one a
            // period from now (before the step's own operations, which may
            // cancel or replace them).
            lowered |= self.rearm_intervals(pid, body, now_tick);
        }
        for op in ops.drain(..) {
            let (tag, deadline, timeout) = match op {
                TimerOp::Every { tag, period } => {
                    self.cancel_record(body, tag, false);
                    let period = Self::period_ticks(period);
                    let wheel = &shared.timers.wheels[self.index];
                    let deadline = now_tick.saturating_add(period);
                    if let Ok((key, low)) = wheel.insert(
                        now_tick,
                        deadline,
                        pid.into_raw(),
                        tag,
                        TimerKind::Timer,
                        None,
                    ) {
                        lowered |= low;
                        let timers = &mut body.extra_from(&mut self.scratch.spare_extras).timers;
                        if timers.capacity() == 0 {
                            timers.reserve_exact(1);
                        }
                        timers.push(Record::every(tag, key, period, self.index));
                    }
                    continue;
                }
                TimerOp::Cancel { tag } => {
                    self.cancel_record(body, tag, false);
                    continue;
                }
                TimerOp::Wake { tag, when } => {
                    let deadline = match when {
                        When::After(after) => TimerClock::deadline_after(now, after),
                        When::At(at) => clock.deadline(at),
                    };
                    (tag, deadline, false)
                }
                TimerOp::Timeout { tag, after } => {
                    if !body.pending.contains(&tag) {
                        continue; // completed already (an inline handler)
                    }
                    (tag, TimerClock::deadline_after(now, after), true)
                }
            };
            // A timer re-armed with its tag replaces the pending one.
            self.cancel_record(body, tag, timeout);
            let kind = if timeout {
                TimerKind::Timeout
            } else {
                TimerKind::Timer
            };
            let wheel = &shared.timers.wheels[self.index];
            // Refused only once shutdown has closed the wheels: the timer
            // would never fire, and its process is being closed.
            if let Ok((key, low)) =
                wheel.insert(now_tick, deadline, pid.into_raw(), tag, kind, None)
            {
                lowered |= low;
                let timers = &mut body.extra_from(&mut self.scratch.spare_extras).timers;
                if timers.capacity() == 0 {
                    // Most processes hold one timer: no room for four.
                    timers.reserve_exact(1);
                }
                timers.push(Record::new(tag, key, timeout, self.index));
            }
        }
        self.scratch.effects.timers = ops; // keep the buffer
        self.publish_timer_count(body, slot);
        if lowered {
            // The wake rule: a parked worker's deadline may not cover the
            // new timer (it may be this wheel's only one, and this worker
            // may now run a long step), so this is published work.
            shared.core.idle.notify_one();
        }
    }

    /// An interval's period in ticks: rounded up, at least one, at most
    /// `Record::MAX_PERIOD` (`StepOutput::wake_every`'s bounds).
    fn period_ticks(period: Duration) -> u64 {
        let nanos = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        nanos.div_ceil(TICK_NANOS).clamp(1, Record::MAX_PERIOD)
    }

    /// Arms the next tick of each interval of the process whose last tick
    /// a step was given (`Record::mark_rearm`), a period after `now`, in
    /// this worker's wheel. Returns whether that lowered its `next`.
    #[cold]
    #[inline(never)]
    fn rearm_intervals(&self, pid: Pid, body: &mut Body<P>, now: u64) -> bool {
        let Some(extra) = body.extra.as_deref_mut() else {
            return false;
        };
        let wheel = &self.shared.timers.wheels[self.index];
        let mut lowered = false;
        let mut at = 0;
        while at < extra.timers.len() {
            let record = &mut extra.timers[at];
            if !record.due_to_rearm() {
                at += 1;
                continue;
            }
            let deadline = now.saturating_add(record.period());
            match wheel.insert(
                now,
                deadline,
                pid.into_raw(),
                record.tag,
                TimerKind::Timer,
                None,
            ) {
                Ok((key, low)) => {
                    lowered |= low;
                    record.rearmed(key, self.index);
                    at += 1;
                }
                // Shutdown closed the wheels: the interval ends.
                Err(_) => {
                    extra.timers.swap_remove(at);
                }
            }
        }
        lowered
    }

    /// Stores the process's pending timer count for the dump, if it changed
    /// (its ordering: `TimerCount::publish`, `figures.rs`). Only the holder
    /// calls it: after a step, and in `close` (then with 0) before the slot
    /// is freed.
    pub(super) fn publish_timer_count(&self, body: &Body<P>, slot: &Slot<P>) {
        let pending = body.timers().len() as u32;
        if slot.timers.published() != pending {
            slot.timers.publish(pending);
        }
    }

    /// Cancels the pending timer (`timeout`: command timeout) `tag`, if any.
    /// Returns whether there was one.
    pub(super) fn cancel_record(&self, body: &mut Body<P>, tag: u64, timeout: bool) -> bool {
        let Some(extra) = body.extra.as_deref_mut() else {
            return false;
        };
        let timers = &mut extra.timers;
        let Some(at) =
            (timers.iter()).position(|r| r.tag == tag && r.is_timeout() == timeout && !r.is_call())
        else {
            return false;
        };
        let record = timers.swap_remove(at);
        if record.carried() {
            // It fired, and its event, taken past a full step's cap, waits
            // in the carry for a step that has not seen it: it goes too.
            // The last `Timer` of the tag: the carry's leftovers come
            // before it, and refused sends are no timers.
            let carried = (body.carry.iter())
                .rposition(|e| matches!(e, Event::Timer { tag: t } if *t == tag));
            if let Some(at) = carried {
                body.carry.remove(at);
            }
            return true;
        }
        // Not in the wheel if it fired already: its event is on the way,
        // and `accept_timer` drops it, the record being gone.
        if self.shared.timers.wheels[record.wheel()]
            .cancel(record.key())
            .is_some()
        {
            self.counters().timers_cancelled.add(1);
        }
        true
    }

    /// [`accept_timer`](Self::accept_timer) of a `wake_*` timer's firing
    /// taken one past a full step's cap: its event is carried to the next
    /// step, and its record stays, marked (`Record::carry`), until a step
    /// is given the event (`hand_over_carried`). A `cancel_timer` or a
    /// re-arm of the tag in the step that did not see it then finds the
    /// record, and takes the event out of the carry (`cancel_record`).
    pub(super) fn carry_timer(
        &self,
        pid: Pid,
        body: &mut Body<P>,
        firing: &Firing,
    ) -> Option<Event<P>> {
        debug_assert!(!firing.timeout, "a timeout's completion is accepted");
        let timers = &mut body.extra.as_deref_mut()?.timers;
        let record = timers.iter_mut().find(|r| r.armed_as(firing))?;
        if record.is_call() {
            // A call's timeout is its reply: nothing to cancel it later.
            return self.accept_timer(pid, body, firing);
        }
        // An interval's too: the handover marks it to be re-armed.
        record.carry();
        Some(Event::Timer { tag: firing.tag })
    }

    /// [`accept`](Self::accept) of the event taken one past the step's
    /// cap, to carry: a monitor's `Down` or a timer's firing is marked as
    /// not yet seen by a step (`carry_down`, `carry_timer`), so that a
    /// `demonitor` or `cancel_timer` (or re-arm) of the step that does not
    /// see it takes it out of the carry.
    #[cold]
    #[inline(never)]
    pub(super) fn accept_past_cap(
        &mut self,
        envelope: Envelope<P>,
        body: &mut Body<P>,
        pid: Pid,
    ) -> Option<Event<P>> {
        match envelope {
            Envelope {
                generation,
                item: Item::Signal(Signal::Down(target, reason)),
                ..
            } if generation == pid.generation() => self.carry_down(body, target, reason),
            Envelope {
                generation,
                item: Item::Timer(firing),
                ..
            } if generation == pid.generation() && !firing.timeout => {
                self.carry_timer(pid, body, &firing)
            }
            envelope => {
                let exit = matches!(&envelope.item, Item::Signal(s) if s.is_exit());
                let event = self.accept(envelope, body, pid);
                if exit && matches!(event, Some(Event::Down { .. })) {
                    // A trapped exit, marked for an `unlink` (`flush_exit`).
                    body.links_mut(&mut self.scratch.spare_extras).carried_exit = true;
                }
                event
            }
        }
    }

    /// The carry is being given to a step: what was marked as taken past
    /// the last step's cap (`carry_timer`, `carry_down`) is now seen, and
    /// the marks go (a carried timer's record with them).
    #[cold]
    #[inline(never)]
    pub(super) fn hand_over_carried(extra: &mut Extra<P>) {
        if let Some(links) = extra.links.as_mut() {
            links.carried_down = false;
            links.carried_exit = false;
        }
        if let Some(at) = extra.timers.iter().position(|r| r.carried()) {
            if extra.timers[at].period() != 0 {
                // An interval stays, to be re-armed after this step.
                extra.timers[at].mark_rearm();
            } else {
                extra.timers.swap_remove(at);
            }
        }
    }

    /// The event of a timer's `firing`, if it is the process's pending
    /// arming firing: its record is there and names the same wheel entry
    /// (`Record::armed_as`). Then the record goes (and, for a command's
    /// timeout, the command: a later completion of it is stale). Otherwise
    /// the firing is stale (the timer was cancelled, or re-armed after it
    /// fired, or its command completed first) and is dropped silently; a
    /// re-armed timer's own firing is still to come. No clock read, and no
    /// wheel lock: the entry left its wheel when it fired.
    pub(super) fn accept_timer(
        &self,
        pid: Pid,
        body: &mut Body<P>,
        firing: &Firing,
    ) -> Option<Event<P>> {
        let tag = firing.tag;
        let command = if firing.timeout {
            Some(body.pending.iter().position(|&t| t == tag)?)
        } else {
            None
        };
        let timers = &mut body.extra.as_deref_mut()?.timers;
        let at = timers.iter().position(|r| r.armed_as(firing))?;
        debug_assert!(timers[at].tag == tag && timers[at].is_timeout() == firing.timeout);
        if timers[at].is_call() {
            let record = timers.swap_remove(at);
            return self.call_timed_out(pid, body, record);
        }
        if timers[at].period() != 0 {
            // An interval: re-armed after the step it is given to.
            timers[at].mark_rearm();
        } else {
            timers.swap_remove(at);
        }
        Some(match command {
            None => Event::Timer { tag },
            Some(at) => {
                body.pending.swap_remove(at);
                let result = Err(CommandError::TimedOut);
                Event::Completion { tag, result }
            }
        })
    }

    /// Cancels every pending timer of a process being closed.
    pub(super) fn cancel_all_timers(&mut self, body: &mut Body<P>) {
        let Some(extra) = body.extra.as_deref_mut() else {
            return;
        };
        let mut cancelled = 0;
        for record in extra.timers.drain(..) {
            if self.shared.timers.wheels[record.wheel()]
                .cancel(record.key())
                .is_some()
            {
                cancelled += 1;
            }
        }
        if cancelled > 0 {
            self.counters().timers_cancelled.add(cancelled);
            if self.shared.core.phase() >= phase::STOPPING {
                // Relaxed: a count, read by `shutdown` after the workers
                // are joined (the join orders it).
                let by_shutdown = &self.shared.timers.cancelled_by_shutdown;
                by_shutdown.fetch_add(cancelled, Ordering::Relaxed);
            }
        }
        // Frees the vector: a closed process keeps nothing.
        extra.timers = Vec::new();
    }

    /// Fires this worker's own wheel if its next expiration `next` (not
    /// `NEVER`: the caller's one load and branch, `worker.rs`, keep an
    /// unused timer system to that) has passed.
    ///
    /// Reads the clock, unless the step of the last loop turn read it
    /// (`apply_timers`, `Local::timer_tick`): a churn of short steps that
    /// each set a timer then reads it once per step, not twice. That tick
    /// is older than now by the end of that step (no user code: `close`,
    /// which runs some, drops it), so a timer due in between fires after
    /// the next step instead of before it: later by at most one step (a
    /// window of a few hundred ns per step to fall in), never early.
    #[inline(never)]
    pub(super) fn poll_own_timers(&mut self, next: u64) {
        // `tick` is still the last turn's: `find_local` counts this one.
        let now = match self.timers.timer_tick.take() {
            Some((turn, tick)) if turn == self.queues.tick => tick,
            _ => self.shared.timers.clock.now(),
        };
        if next <= now {
            self.fire_wheel(self.index, now, true);
        }
    }

    /// Fires every wheel with something due (another worker's only if its
    /// lock is free: its owner is firing it otherwise). Returns how many
    /// processes the timers woke onto this worker's deque.
    pub(super) fn poll_all_timers(&mut self) -> usize {
        if earliest(&self.shared.timers.wheels) == NEVER {
            return 0;
        }
        let now = self.shared.timers.clock.now();
        let mut woke = 0;
        for w in 0..self.shared.timers.wheels.len() {
            if self.shared.timers.wheels[w].next() <= now {
                woke += self.fire_wheel(w, now, w == self.index);
            }
        }
        woke
    }

    /// The earliest deadline of any wheel, as a tick ([`NEVER`]: none).
    pub(super) fn earliest_timer(&self) -> u64 {
        earliest(&self.shared.timers.wheels)
    }

    /// Fires wheel `w` at tick `now` and delivers what fired; processes it
    /// woke go onto this worker's deque. Returns how many.
    fn fire_wheel(&mut self, w: usize, now: u64, wait: bool) -> usize {
        let mut fired = core::mem::take(&mut self.timers.fired);
        let mut messages = core::mem::take(&mut self.timers.fired_messages);
        let shared = std::sync::Arc::clone(&self.shared);
        if !shared.timers.wheels[w].fire(now, wait, &mut fired, &mut messages) {
            self.timers.fired = fired;
            self.timers.fired_messages = messages;
            return 0;
        }
        let mut woke = 0;
        let mut late = 0;
        let count = fired.len() as u64;
        let mut messages_iter = messages.drain(..);
        for timer in fired.drain(..) {
            if TimerClock::late_nanos(timer.deadline, now) > LATE_NANOS {
                late += 1;
            }
            let pid = Pid::from_raw(timer.pid);
            let task = match timer.kind {
                TimerKind::Send => {
                    let Some(message) = messages_iter.next() else {
                        continue; // unreachable: one message per entry
                    };
                    let nodes = Some(&mut self.scratch.nodes);
                    match shared.deliver(pid, Event::Message(message), Wake::Message, nodes) {
                        Ok(task) => task,
                        // A process that ended: reported (`Shared::undelivered`);
                        // one of another node: forwarded (`Shared::unsent`).
                        Err((why, event)) => {
                            shared.unsent(shared.outside_pid(), pid, why, event);
                            None
                        }
                    }
                }
                kind => {
                    let firing = Firing {
                        tag: timer.tag,
                        key: timer.key.into_raw(),
                        wheel: w as u16,
                        timeout: kind == TimerKind::Timeout,
                    };
                    // Refused (its process ended): dropped, nobody waits.
                    shared.deliver_timer(pid, firing, &mut self.scratch.nodes)
                }
            };
            if let Some(task) = task {
                self.queues.deque.push(task);
                woke += 1;
            }
        }
        drop(messages_iter);
        let counters = self.counters();
        counters.timers_fired.add(count);
        counters.timers_late.add(late);
        self.queued_locally(woke);
        self.timers.fired = fired;
        self.timers.fired_messages = messages;
        woke
    }
}
