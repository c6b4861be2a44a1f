//! The worker's side of calls from a step (`src/process/call.rs`), and of
//! its named sends (`remote/names.rs`), which go out with them:
//! sending a call's request and registering it (id and tag in the caller's
//! extra part, its timeout a record in `extra.timers` and an entry in this
//! worker's wheel), delivering replies, and turning a reply or a timeout
//! into the caller's one `Event::Reply`.
//!
//! A process that makes no call and gets no reply never comes here: the
//! step's check of an empty `effects.calls`, and a reply's own match arm in
//! `accept`, are the whole cost.

use super::Local;
use crate::process::call::CallOp;
use crate::process::state::Wake;
use crate::process::{Event, Pid, Process, ReplyError};
use crate::sched::core::table::Body;
use crate::sched::shared::Refusal;
use crate::sched::timer::wheel::{TimerKind, TICK_SHIFT};
use crate::sched::timer::{Record, TimerClock};
use crate::sync::Ordering;
use std::time::Duration;

impl<P: Process> Local<P> {
    /// Applies the step's calls and replies, in order. A call whose
    /// request is refused comes back at once as its `Event::Reply`, into
    /// `carry` (returns whether any did: the process runs again). A step
    /// that ends its process (`ending`) registers no call.
    #[cold]
    #[inline(never)]
    pub(super) fn apply_calls(&mut self, pid: Pid, body: &mut Body<P>, ending: bool) -> bool {
        let mut ops = core::mem::take(&mut self.scratch.effects.calls);
        let shared = std::sync::Arc::clone(&self.shared);
        let mut refused = false;
        let mut lowered = false;
        let mut now = None;
        for op in ops.drain(..) {
            let (to, event, wake) = match op {
                CallOp::Named {
                    node,
                    name,
                    message,
                } => {
                    let nodes = Some(&mut self.scratch.nodes);
                    match shared.send_named(pid, node, &name, message, nodes) {
                        Ok(Some(task)) => self.wake_next(task),
                        Ok(None) => {}
                        Err((to, message)) => {
                            body.carry.push(Event::Refused { to, message });
                            refused = true;
                        }
                    }
                    continue;
                }
                CallOp::Reply { to, message } => {
                    let event = Event::Reply {
                        tag: to.id(),
                        result: Ok(message),
                    };
                    (to.pid(), event, Wake::Completion)
                }
                CallOp::Call {
                    to,
                    tag,
                    id,
                    request,
                    timeout,
                } => {
                    let nodes = Some(&mut self.scratch.nodes);
                    match shared.deliver(to, Event::Message(request), Wake::Message, nodes) {
                        Ok(task) => {
                            if let Some(task) = task {
                                self.wake_next(task);
                            }
                            if !ending {
                                lowered |=
                                    self.register_call(pid, body, id, tag, timeout, &mut now);
                            }
                        }
                        Err((Refusal::Remote, Event::Message(request))) => {
                            // The callee is on another node (`remote/`).
                            match shared.forward_call(pid, to, id, request, ending) {
                                Ok(()) if ending => {}
                                Ok(()) => {
                                    lowered |=
                                        self.register_call(pid, body, id, tag, timeout, &mut now);
                                }
                                Err(request) => {
                                    let result = Err(ReplyError::NoConnection(request));
                                    body.carry.push(Event::Reply { tag, result });
                                    refused = true;
                                }
                            }
                        }
                        Err((why, Event::Message(request))) => {
                            let result = Err(match why {
                                Refusal::NoSuchProcess | Refusal::Remote => {
                                    ReplyError::NoSuchProcess(request)
                                }
                                Refusal::Finished => ReplyError::Finished(request),
                                Refusal::ShuttingDown => ReplyError::ShuttingDown(request),
                                Refusal::Full => ReplyError::Full(request),
                            });
                            body.carry.push(Event::Reply { tag, result });
                            refused = true;
                        }
                        Err((_, event)) => shared.undelivered(to, event),
                    }
                    continue;
                }
            };
            let nodes = Some(&mut self.scratch.nodes);
            match shared.deliver(to, event, wake, nodes) {
                Ok(Some(task)) => self.wake_next(task),
                Ok(None) => {}
                // The caller is on another node (`remote/`).
                Err((
                    Refusal::Remote,
                    Event::Reply {
                        tag: id,
                        result: Ok(message),
                    },
                )) => {
                    if let Err(message) = shared.forward_reply(pid, to, id, message) {
                        let result = Ok(message);
                        shared.undelivered(to, Event::Reply { tag: id, result });
                    }
                }
                // The caller has ended: nobody waits for it.
                Err((_, event)) => shared.undelivered(to, event),
            }
        }
        self.scratch.effects.calls = ops; // keep the buffer
        if lowered {
            // The wake rule, as for any timer that lowers a wheel's next.
            shared.core.idle.notify_one();
        }
        refused
    }

    /// A process this worker woke: next to run here (as a message's
    /// target is, `deliver_sends`), the one it displaces onto the deque.
    fn wake_next(&mut self, task: crate::sched::core::table::Task<P>) {
        if let Some(old) = self.queues.runnext.replace(task) {
            self.queues.deque.push(old);
            self.shared.core.idle.notify_one();
        }
    }

    /// Registers call `id` (tag `tag`) of the process: in its extra part,
    /// and its timeout in this worker's wheel unless it is `Duration::MAX`.
    /// Returns whether the insert lowered the wheel's `next`.
    fn register_call(
        &mut self,
        pid: Pid,
        body: &mut Body<P>,
        id: u64,
        tag: u64,
        timeout: Duration,
        now: &mut Option<u64>,
    ) -> bool {
        let extra = body.extra_from(&mut self.scratch.spare_extras);
        extra.calls.push((id, tag));
        if timeout == Duration::MAX {
            return false;
        }
        let clock = &self.shared.timers.clock;
        let nanos = *now.get_or_insert_with(|| clock.nanos(clock.instant()));
        let deadline = TimerClock::deadline_after(nanos, timeout);
        let wheel = &self.shared.timers.wheels[self.index];
        match wheel.insert(
            nanos >> TICK_SHIFT,
            deadline,
            pid.into_raw(),
            id,
            TimerKind::Timer,
            None,
        ) {
            Ok((key, lowered)) => {
                extra.timers.push(Record::call(id, key, self.index));
                lowered
            }
            // Shutdown closed the wheels: the call waits for its reply or
            // the process's close.
            Err(_) => false,
        }
    }

    /// The event of a reply that reached the caller (`accept`): its call's
    /// `Event::Reply` if the call still waits (its timeout cancelled);
    /// otherwise stale (timed out, answered already), counted with the
    /// unknown completion tags and given to `on_undelivered`.
    pub(super) fn accept_reply(
        &mut self,
        body: &mut Body<P>,
        pid: Pid,
        event: Event<P>,
    ) -> Option<Event<P>> {
        let Event::Reply { tag: id, result } = event else {
            return Some(event);
        };
        let found = body.extra.as_deref_mut().and_then(|extra| {
            let at = extra.calls.iter().position(|&(i, _)| i == id)?;
            let (_, tag) = extra.calls.swap_remove(at);
            let timeout = extra.timers.iter().position(|r| r.is_call() && r.tag == id);
            Some((tag, timeout.map(|at| extra.timers.swap_remove(at))))
        });
        let Some((tag, timeout)) = found else {
            // Relaxed: a statistic.
            (self.shared.totals.unknown_tags).fetch_add(1, Ordering::Relaxed);
            self.shared
                .undelivered(pid, Event::Reply { tag: id, result });
            return None;
        };
        if let Some(record) = timeout {
            if self.shared.timers.wheels[record.wheel()]
                .cancel(record.key())
                .is_some()
            {
                self.counters().timers_cancelled.add(1);
            }
        }
        Some(Event::Reply { tag, result })
    }

    /// The `Err(TimedOut)` reply of the call whose timeout record is
    /// `record` (it fired, and is out of the caller's records), its call
    /// no longer waiting. `None` if the call was answered first.
    pub(super) fn call_timed_out(
        &self,
        pid: Pid,
        body: &mut Body<P>,
        record: Record,
    ) -> Option<Event<P>> {
        let calls = &mut body.extra.as_deref_mut()?.calls;
        let at = calls.iter().position(|&(i, _)| i == record.tag)?;
        let (_, tag) = calls.swap_remove(at);
        if let Some(remote) = &self.shared.remote {
            // A call across nodes no longer waits on its callee's node.
            remote.watches.remove_call(pid, record.tag);
        }
        let result = Err(ReplyError::TimedOut);
        Some(Event::Reply { tag, result })
    }
}
