//! What a step asked for, applied after it returned: its sends, in order
//! per receiver (a refusal by a full mailbox comes back to the sender), and
//! its command's dispatch to a handler.

use super::warm::{warm_sends, WARM_FROM};
use super::Local;
use crate::process::state::Wake;
use crate::process::{panic_message, CommandError, Event, Pid, Process};
use crate::sched::commands::handler::Completer;
use crate::sched::core::table::Body;
use crate::sched::observe::trace::Kind;
use crate::sched::shared::Refusal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

impl<P: Process> Local<P> {
    /// Delivers the step's messages. One refused by a full mailbox goes
    /// back to the sender, into `carry` as [`Event::Refused`], and so does
    /// every later one of this step to the same process, even if room
    /// appeared meanwhile: a message is accepted only if every earlier one
    /// of the step to that process was, so resending what comes back, in
    /// order, keeps the sender's order. Returns whether any was refused.
    #[inline]
    pub(super) fn apply_sends(&mut self, me: Pid, carry: &mut Vec<Event<P>>) -> bool {
        match self.scratch.effects.sends.len() {
            0 => false, // most steps: no closures to build
            n if n > WARM_FROM => self.apply_many_sends(me, carry),
            _ => self.deliver_sends::<false>(me, carry),
        }
    }

    /// [`apply_sends`](Self::apply_sends) for a step that sends to many,
    /// which asks for each target's lines ahead of its delivery
    /// (`warm.rs`). A copy of the loop of its own, out of line and cold:
    /// the look ahead inside the usual loop cost every ping-pong step 8
    /// instructions (callgrind), though never taken there; this way they
    /// pay the length check, ~1.
    #[cold]
    #[inline(never)]
    pub(super) fn apply_many_sends(&mut self, me: Pid, carry: &mut Vec<Event<P>>) -> bool {
        self.deliver_sends::<true>(me, carry)
    }

    /// The body of [`apply_sends`](Self::apply_sends); `WARM`: look ahead.
    /// `me`: the sender, which a message to another node names
    /// (`sched/remote/`).
    #[inline(always)]
    pub(super) fn deliver_sends<const WARM: bool>(
        &mut self,
        me: Pid,
        carry: &mut Vec<Event<P>>,
    ) -> bool {
        let mut displaced = 0;
        let shared = &*self.shared;
        // Delivers one message; a woken target goes to `runnext`. Returns
        // whether it displaced a process from `runnext` onto the deque, or
        // the message if a full mailbox refused it. (A closure: it borrows
        // the fields it needs, beside the drain of `effects.sends`.)
        let mut send = |to: Pid, message: P::Message| -> Result<bool, P::Message> {
            let nodes = Some(&mut self.scratch.nodes);
            match self
                .shared
                .deliver(to, Event::Message(message), Wake::Message, nodes)
            {
                Ok(Some(task)) => {
                    if let Some(ring) = &mut self.observe.trace {
                        ring.record_effect(Kind::WakeMessage, to.into_raw());
                    }
                    if let Some(old) = self.queues.runnext.replace(task) {
                        self.queues.deque.push(old);
                        return Ok(true);
                    }
                }
                Ok(None) => {}
                Err((Refusal::Full, Event::Message(message))) => return Err(message),
                // Gone, or of another node (forwarded): out of line.
                Err((why, event)) => self.shared.unsent(me, to, why, event),
            }
            Ok(false)
        };
        // The first process queued behind this step wakes a sleeping
        // worker at once, not after the last send: a step that sends to
        // thousands (~40 ns a delivery) would leave the others asleep
        // while their work piles up here.
        let queued = |displaced: &mut usize| {
            *displaced += 1;
            if *displaced == 1 {
                wake_early(&self.shared.core.idle);
            }
        };
        let mut sends = self.scratch.effects.sends.drain(..);
        // Until a refusal, each message is delivered: no list to consult.
        let mut first_refused = None;
        while let Some((to, message)) = sends.next() {
            if WARM {
                warm_sends(shared, sends.as_slice());
            }
            match send(to, message) {
                Ok(false) => {}
                Ok(true) => queued(&mut displaced),
                Err(message) => {
                    carry.push(Event::Refused { to, message });
                    first_refused = Some(to);
                    break;
                }
            }
        }
        if let Some(first) = first_refused {
            // The targets that refused a message in this step (one entry
            // each): a scan of the carry per later send would be quadratic
            // in a burst.
            let mut refused = vec![first];
            for (to, message) in sends {
                if refused.contains(&to) {
                    carry.push(Event::Refused { to, message });
                    continue;
                }
                match send(to, message) {
                    Ok(false) => {}
                    Ok(true) => queued(&mut displaced),
                    Err(message) => {
                        carry.push(Event::Refused { to, message });
                        refused.push(to);
                    }
                }
            }
        } else {
            drop(sends);
        }
        if displaced > 1 {
            // The rest, for another sleeper (the first was told above).
            self.queued_locally(displaced);
        }
        first_refused.is_some()
    }

    /// Hands each yielded command to its handler (a blocking handler's is
    /// only queued for the pool). A panicking handler ends the process (its
    /// message is returned).
    pub(super) fn dispatch(&mut self, pid: Pid, body: &mut Body<P>) -> Result<(), String> {
        use crate::process::Command as _;
        if self.scratch.effects.commands.is_empty() {
            return Ok(()); // most steps
        }
        let mut commands = core::mem::take(&mut self.scratch.effects.commands);
        let mut result = Ok(());
        for (tag, command) in commands.drain(..) {
            if result.is_err() {
                continue; // the process is ending: drop the rest
            }
            body.pending.push(tag);
            let kind = command.kind();
            match self.shared.commands.handlers.get(kind) {
                None => {
                    let error = Event::Completion {
                        tag,
                        result: Err(CommandError::UnknownCommand(kind)),
                    };
                    // The process is Running: this only sets its wakeup bit.
                    let nodes = Some(&mut self.scratch.nodes);
                    let _ = self.shared.deliver(pid, error, Wake::Completion, nodes);
                }
                Some(handler) => {
                    let completer = Completer::new(Arc::clone(&self.shared), pid, tag);
                    if let Err(panic) =
                        catch_unwind(AssertUnwindSafe(|| handler.dispatch(command, completer)))
                    {
                        result = Err(panic_message(&*panic));
                    }
                }
            }
        }
        self.scratch.effects.commands = commands; // keep the buffer
        result
    }
}

/// `apply_sends`' early notify, out of line: it is rare (the second
/// process a step's sends wake), and its fence and wake are no part of the
/// usual send's code.
#[cold]
#[inline(never)]
fn wake_early(idle: &crate::sched::core::idle::Idle) {
    idle.notify_one();
}
