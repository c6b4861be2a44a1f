//! The worker's side of monitors and links (`src/sched/links/mod.rs` has the
//! design): sending a step's requests, receiving signals while collecting
//! events, answering requests that found no process, and telling watchers
//! and linked processes when a process ends.
//!
//! Everything here runs on the worker holding the process whose `Body` it
//! is given; a process that uses no monitor or link reaches none of it but
//! for the `is_empty`/`is_none` checks in `step.rs`.

use super::Local;
use crate::process::state::Wake;
use crate::process::{Event, ExitReason, LinkOp, Outcome, Pid, Process, ProcessError, Summary};
use crate::sched::core::body::Extra;
use crate::sched::core::table::{Body, Slot, Task};
use crate::sched::links::{self, Links, Received, Signal};
use crate::sync::Ordering;

/// What the signals collected before a step ask for.
pub(super) enum Before {
    /// Step as usual.
    Step,
    /// Only signals woke this idle process: park it again, no step.
    Repark,
    /// Only messages came to a process waiting for a completion that was
    /// parked Idle for a push it could not see past (`Extra::rewait`):
    /// carry them and wait again, no step.
    Rewait,
    /// An exit signal ended it: close it without a step.
    Kill,
}

impl<P: Process> Local<P> {
    /// Applies the monitor and link requests of `pid`'s step (in
    /// `self.scratch.effects.links`), before its children are queued: a monitor or
    /// link of a child spawned in the same step is then in the child's
    /// mailbox before the child can run, and cannot race its end.
    ///
    /// A `monitor(t)` followed at once by `demonitor(t)` in the step sends
    /// nothing: the `Monitor` request is held back one request, and a
    /// `Demonitor` of the same target cancels it. Sent, the pair would leave
    /// `t`'s watchers as they were, and any `Down` it brought (`NoProc`, or
    /// `t`'s end) would be dropped, `t` being no longer in `watching`
    /// (`Links::receive`): nothing a step sees differs. Every other request
    /// goes out in the order the step made it.
    ///
    /// A `demonitor(t)` also takes out a `Down(t)` of a monitor that was
    /// taken but never given to a step (`flush_down`): the one taken past
    /// a full step's cap, or the one a claim handed over and held for the
    /// step that drains the mailbox (`before_step`). An `unlink(x)` takes
    /// out a trapped exit of `x` held the same two ways (`flush_exit`).
    ///
    /// Never inlined: only processes that use monitors or links come here,
    /// and inlined into the worker loop it costs every other step spilled
    /// registers (callgrind, `ping_pong`: +25 instructions a step).
    #[inline(never)]
    pub(super) fn apply_links(&mut self, slot: &Slot<P>, pid: Pid, body: &mut Body<P>) {
        // The extra part's fields apart, beside the carry: a demonitor may
        // take a `Down` out of either.
        let extra = (body.extra).get_or_insert_with(|| self.scratch.spare_extras.take());
        let Extra { links, down, .. } = &mut **extra;
        let links = links.get_or_insert_with(Links::default);
        let mut ops = core::mem::take(&mut self.scratch.effects.links);
        let mut out = core::mem::take(&mut self.links.requests);
        let mut held: Option<Pid> = None; // a `Monitor(pid)` not yet sent
        for op in ops.drain(..) {
            let send = match op {
                LinkOp::Monitor(target) => links.monitor(pid, target),
                LinkOp::Demonitor(target) => {
                    if links.carried_down || down.is_some() {
                        flush_down(links, down, &mut body.carry, target);
                    }
                    links.demonitor(pid, target)
                }
                LinkOp::Link(to) => links.link(pid, to),
                LinkOp::Unlink(to) => {
                    if links.carried_exit || (links.handed_exit && down.is_some()) {
                        flush_exit(links, down, &mut body.carry, to);
                    }
                    links.unlink(pid, to)
                }
                LinkOp::TrapExits(trap) => {
                    links.trap_exits(trap);
                    None
                }
                LinkOp::Exit(to, reason) => {
                    let signal = Signal::Sent(pid, Box::new(reason));
                    self.links.exits.push((to, signal));
                    None
                }
                LinkOp::Kill(to) => {
                    self.links.exits.push((to, Signal::Kill(pid)));
                    None
                }
            };
            let Some((to, signal)) = send else { continue };
            if let Signal::Demonitor(_) = signal {
                if held == Some(to) {
                    held = None; // the pair cancels out
                    continue;
                }
            }
            if let Some(target) = held.take() {
                out.push((target, Signal::Monitor(pid)));
            }
            match signal {
                Signal::Monitor(_) => held = Some(to),
                signal => out.push((to, signal)),
            }
        }
        if let Some(target) = held {
            out.push((target, Signal::Monitor(pid)));
        }
        self.scratch.effects.links = ops; // keep the buffer
        publish_counts(slot, links);
        self.send_requests(&mut out);
        self.links.requests = out; // keep the buffer
        if !self.links.exits.is_empty() {
            self.send_exits();
        }
    }

    /// Sends a step's exit signals (`StepOutput::exit`, `kill`), after its
    /// requests, in the step's order. Each goes as a link's exit goes
    /// (`send_signal` with a completion's wake): a waiting target, Idle or
    /// Blocked in a command, is claimed and decided at once in its body
    /// (`Links::receive_handed`: its end is then `Before::Kill` at its
    /// start, with no step); a running or queued one gets it through its
    /// mailbox, and its next collection decides, before its next step; one
    /// ending or ended drops it (its `close` drains it: `receive_ending`;
    /// refused or raced, it is owed no answer).
    #[cold]
    #[inline(never)]
    fn send_exits(&mut self) {
        let mut exits = core::mem::take(&mut self.links.exits);
        for (to, signal) in exits.drain(..) {
            self.send_signal(to, signal, Wake::Completion);
        }
        self.links.exits = exits; // keep the buffer
    }

    /// Sends a step's requests (`apply_links`). One alone is sent as any
    /// signal is; several are all pushed first, in the step's order, and
    /// then each target is notified once (`Shared::push_signal`,
    /// `notify_signals`), so that a target sent many requests in one step
    /// is woken once for them, not by the first while the rest are still
    /// being pushed. Requests wake an idle target (it registers them at
    /// once, so that `processes()` shows them), not a waiting one: its
    /// `close` drains them if it never steps again. A request that found
    /// no process (refused, or its target's notify raced the end) is
    /// answered at once.
    fn send_requests(&mut self, out: &mut Vec<(Pid, Signal)>) {
        match out.len() {
            // Nothing left to send (a monitor and demonitor cancelled out,
            // or only `trap_exits`).
            0 => return,
            // The usual step: one request, sent alone.
            1 => {
                let (to, signal) = out.pop().expect("one request");
                return self.send_signal(to, signal, Wake::Message);
            }
            _ => {}
        }
        let mut owed = core::mem::take(&mut self.links.owed);
        let mut pushed = core::mem::take(&mut self.links.pushed);
        for (to, signal) in out.drain(..) {
            match self.shared.push_signal(to, signal, &mut self.scratch.nodes) {
                Ok(request) => {
                    owed.extend(request.map(|r| (to, r)));
                    // The last few targets are looked at, so a step's
                    // requests to a handful of processes, however
                    // interleaved, leave one entry each; the sort below
                    // removes the rest.
                    if !pushed.iter().rev().take(4).any(|&p| p == to) {
                        pushed.push(to);
                    }
                }
                Err(refused) => self.answer(to, refused),
            }
        }
        pushed.sort_unstable_by_key(|to| to.into_raw());
        pushed.dedup();
        for to in pushed.drain(..) {
            match self.shared.notify_signals(to) {
                Ok(Some(task)) => self.queue_woken(task),
                Ok(None) => {}
                Err(()) => {
                    for (_, request) in owed.iter().filter(|(t, _)| *t == to) {
                        self.answer(to, request.clone());
                    }
                }
            }
        }
        owed.clear();
        self.links.owed = owed;
        self.links.pushed = pushed;
    }

    /// Sends `signal` to `to`; a request that found no process (refused,
    /// or its push raced the end) is answered at once (`links::unanswered`:
    /// the sender gets `Down` or `Exit` with `NoProc`). A process woken
    /// runs next on this worker (`queue_woken`).
    ///
    /// A process that waits is claimed instead (`Shared::claim`): it is
    /// then ours until we queue it, and the signal goes straight to its
    /// body, as its own collection would take it (`receive_signal`; a
    /// `Down` to pass waits in `Extra::down` for `before_step`): no node,
    /// no push (an atomic swap) and no pop. It keeps the order a mailbox
    /// gives: what the sender of a farewell sent before it ended was
    /// pushed and notified before, and a process is found Idle only once
    /// it has collected all that was notified to it (a Blocked one may
    /// hold messages: see `before_step`). Loom:
    /// `a_signal_handed_to_a_parking_process_is_received_once`.
    ///
    /// A Blocked one may also hold link requests (a request does not wake
    /// it), and an exit's sender may be linking it: `Link(x)` queued, then
    /// `x`'s exit, which claims it. Decided in the body, that exit would
    /// find `x` among no links and be dropped, and the queued request link
    /// the process to a dead one. So an exit from a process not among the
    /// links is not decided here (`Links::receive_handed` gives it back):
    /// it goes into the mailbox, behind any request its sender made
    /// before it ended ([`exit_behind_requests`](Self::exit_behind_requests)).
    /// Loom: `an_exit_claiming_a_process_comes_after_its_senders_link_request`.
    pub(super) fn send_signal(&mut self, to: Pid, signal: Signal, kind: Wake) {
        let handed = self.hand_to_waiting(to, kind, signal, |local, body, signal| {
            match body
                .links_mut(&mut local.scratch.spare_extras)
                .receive_handed(signal)
            {
                Ok(Received::Down(pid, reason)) => {
                    let extra = body.extra_from(&mut local.scratch.spare_extras);
                    debug_assert!(extra.down.is_none(), "one holding a Down is not waiting");
                    extra.down = Some((pid, reason));
                    // A trapped exit (requests yield no `Down`, and a
                    // monitor's comes through `send_down`): a `demonitor`
                    // leaves it.
                    if let Some(links) = extra.links.as_mut() {
                        links.handed_exit = true;
                    }
                }
                Ok(Received::Nothing | Received::Kill(_)) => {}
                Err(exit) => local.exit_behind_requests(to, exit),
            }
        });
        if let Err(signal) = handed {
            self.push_signal(to, signal, kind);
        }
    }

    /// An exit for `to`, which this worker claimed (`send_signal`), from a
    /// process not among its links (or a step's exit to a trapping `to`,
    /// kept in its sender's order: `Links::receive_handed`): pushed into its mailbox with no
    /// notify (the claimer queues it). There it comes after every request
    /// its sender pushed before it ended (the mailbox keeps each
    /// producer's order, and the sender pushed those before its end), so
    /// the process's collection registers a `Link` from it first and then
    /// acts on the exit; without one it is dropped there, as `receive`
    /// drops an exit from a process not linked (unlinked meanwhile, or a
    /// second exit for one link). Only a process that is sent an exit by
    /// a process it is not linked with comes here: one that uses no links
    /// never does, and an exit to a linked process is handed over as
    /// before. Refused (the scheduler is exiting), it is dropped: an exit
    /// is owed no answer.
    #[cold]
    #[inline(never)]
    fn exit_behind_requests(&mut self, to: Pid, exit: Signal) {
        let _ = self.shared.push_signal(to, exit, &mut self.scratch.nodes);
    }

    /// [`send_signal`](Self::send_signal) for a farewell's `Down`, the
    /// signal on the way from an end to its watcher: a claimed watcher's
    /// links take it as their `receive` would (`Links::receive_down`), and
    /// the `Down` goes straight into its extra part, with no `Signal` or
    /// `Received` built and matched on the way (a visible part of the path
    /// from an end to its watcher's step).
    pub(super) fn send_down(&mut self, to: Pid, me: Pid, reason: &ExitReason) {
        let handed = self.hand_to_waiting(to, Wake::Completion, (), |_, body, ()| {
            // A process with no links part monitors nothing: the `Down` is
            // dropped, as `receive` would drop it.
            if let Some(extra) = body.extra.as_deref_mut() {
                let monitor = |l: &mut Links| {
                    l.handed_exit = false; // a monitor's, if held
                    l.receive_down(me)
                };
                if extra.links.as_mut().is_some_and(monitor) {
                    debug_assert!(extra.down.is_none(), "one holding a Down is not waiting");
                    extra.down = Some((me, reason.clone()));
                }
            }
        });
        if handed.is_err() {
            self.push_signal(to, Signal::Down(me, reason.clone()), Wake::Completion);
        }
    }

    /// If `to` waits, claims it (`Shared::claim`), lets `receive` write
    /// `item` into its body as the process's own collection would, and
    /// queues it (`queue_woken`); else gives `item` back.
    #[inline]
    fn hand_to_waiting<T>(
        &mut self,
        to: Pid,
        kind: Wake,
        item: T,
        receive: impl FnOnce(&mut Self, &mut Body<P>, T),
    ) -> Result<(), T> {
        let Some(task) = self.shared.core.claim(to, kind).map(Task::new) else {
            return Err(item);
        };
        // SAFETY: claimed (Ready, queued by no one yet): we hold the
        // process until we queue it below, and the borrow ends with
        // `receive`, before that.
        receive(self, unsafe { task.slot().body() }, item);
        self.queue_woken(task);
        Ok(())
    }

    /// The mailbox way of [`send_signal`](Self::send_signal), for a
    /// process that could not be claimed: pushed and notified; a request
    /// that found no process is answered at once (a `Down` or an exit is
    /// owed no answer: `links::unanswered`).
    pub(super) fn push_signal(&mut self, to: Pid, signal: Signal, kind: Wake) {
        let nodes = Some(&mut self.scratch.nodes);
        match self.shared.deliver_signal(to, signal, kind, nodes) {
            Ok(Some(task)) => self.queue_woken(task),
            Ok(None) | Err(None) => {}
            Err(Some(signal)) => self.answer(to, signal),
        }
    }

    /// Answers a request that reached no process in `target` (see
    /// `links::unanswered`). The answer itself needs none.
    pub(super) fn answer(&mut self, target: Pid, signal: Signal) {
        if let Some((to, answer)) = links::unanswered(target, signal) {
            let nodes = Some(&mut self.scratch.nodes);
            if let Ok(Some(task)) = self
                .shared
                .deliver_signal(to, answer, Wake::Completion, nodes)
            {
                self.queue_woken(task);
            }
        }
    }

    /// A process a signal woke runs next on this worker, as one a message
    /// woke (`apply_sends`): the watcher of a process that just ended, the
    /// next link of a chain, stays on this core instead of waiting in the
    /// deque for a thief. The process it displaces goes to the deque.
    pub(super) fn queue_woken(&mut self, task: Task<P>) {
        if let Some(old) = self.queues.runnext.replace(task) {
            self.queues.deque.push(old);
            self.queued_locally(1);
        }
    }
}

/// Takes out the `Down` about `target` that a monitor gave but no step
/// was given, for a `demonitor(target)`: the carry's last event if
/// `collect_events` took it past the step's cap (`Links::carried_down`;
/// the carry's own leftovers come before it, and the step's refused sends
/// are only added after this), or the `Down` a claim handed over
/// (`down`) unless it is a trapped exit (`Links::handed_exit`). A `Down`
/// the step was given and left in its vector stays: it was the step's to
/// handle.
#[cold]
#[inline(never)]
fn flush_down<P: Process>(
    links: &mut Links,
    down: &mut Option<(Pid, ExitReason)>,
    carry: &mut Vec<Event<P>>,
    target: Pid,
) {
    if links.carried_down && matches!(carry.last(), Some(Event::Down { pid, .. }) if *pid == target)
    {
        carry.pop();
        links.carried_down = false;
    }
    if !links.handed_exit && matches!(down, Some((pid, _)) if *pid == target) {
        *down = None;
    }
}

/// Takes out the trapped exit of `from` that a link gave but no step was
/// given, for an `unlink(from)` (its promise: no exit from it reaches the
/// process after the step): the carry's last event if `collect_events`
/// took it past the step's cap (`Links::carried_exit`), or the `Down` a
/// claim handed over and holds (`Links::handed_exit`).
fn flush_exit<P: Process>(
    links: &mut Links,
    down: &mut Option<(Pid, ExitReason)>,
    carry: &mut Vec<Event<P>>,
    from: Pid,
) {
    if links.carried_exit && matches!(carry.last(), Some(Event::Down { pid, .. }) if *pid == from) {
        carry.pop();
        links.carried_exit = false;
    }
    if links.handed_exit && matches!(down, Some((pid, _)) if *pid == from) {
        *down = None;
        links.handed_exit = false;
    }
}

/// How an outcome is told to watchers.
#[inline]
pub(super) fn exit_reason<P: Process>(outcome: &Outcome<P>) -> ExitReason {
    match outcome {
        Ok(_) => ExitReason::Done,
        Err(ProcessError::Failed(e)) => ExitReason::Failed(Summary::new(format!("{e:?}"))),
        Err(ProcessError::Panicked(m)) => ExitReason::Panicked(Summary::new(m.clone())),
        Err(ProcessError::Terminated) => ExitReason::Terminated,
        Err(ProcessError::Shutdown) => ExitReason::Shutdown,
    }
}

/// Stores the counts the dump shows.
pub(super) fn publish_counts<P: Process>(slot: &Slot<P>, links: &Links) {
    // Relaxed: a figure for the dump (see `Slot::link_counts`).
    (slot.link_counts).store(links::pack_counts(links.counts()), Ordering::Relaxed);
}
