//! Calls across nodes: a step's call to a remote PID, its reply, and the
//! refusal of its request, as frames; the caller's watch, which a node
//! gone answers with `ReplyError::NodeDown` (`mod.rs`'s promises).
//!
//! Only a call whose callee's lookup failed comes here, so a local call
//! pays nothing for it. The call's timeout and its id-to-tag map stay on
//! the caller's worker (`worker/calls.rs`), as for a local call: what
//! comes back is an `Event::Reply` keyed by the call's id, and the worker
//! turns it into the caller's one reply, or finds it stale.

use super::{CallRefusal, CodecError, Frame, FrameKind, Remote};
use crate::process::state::Wake;
use crate::process::{Event, Pid, Process, ReplyError};
use crate::sched::shared::{Refusal, Shared};

impl<P: Process> Shared<P> {
    /// Call `id` of local `from` to remote `to`: its request as a frame,
    /// and the call's watch (answered `NodeDown` if `to`'s node goes),
    /// unless the caller is `ending` (its reply will be stale). The
    /// request back if it cannot cross.
    pub(crate) fn forward_call(
        &self,
        from: Pid,
        to: Pid,
        id: u64,
        request: P::Message,
        ending: bool,
    ) -> Result<(), P::Message> {
        let watches = self.remote.as_ref().map(|remote| &remote.watches);
        if let (Some(watches), false) = (watches, ending) {
            // Before the send: the reply, which removes it, may come first.
            watches.add_call(from, id, to.node());
        }
        let sent = self.forward(from, to, request, |request| FrameKind::Call { id, request });
        if let (Some(watches), true) = (watches, sent.is_err()) {
            watches.remove_call(from, id);
        }
        sent
    }

    /// The reply to call `id` of remote `to`, from `from`; the message
    /// back if it cannot cross.
    pub(crate) fn forward_reply(
        &self,
        from: Pid,
        to: Pid,
        id: u64,
        message: P::Message,
    ) -> Result<(), P::Message> {
        self.forward(from, to, message, |message| FrameKind::Reply {
            id,
            message,
        })
    }

    /// A call frame that came in for this node's process `to` from
    /// `from`: a request is delivered (or refused back, with why), a reply
    /// or a refusal ends the caller's watch and becomes its call's event.
    /// `Err` with the codec's error if its bytes do not decode.
    pub(super) fn call_frame(
        &self,
        remote: &Remote<P>,
        from: Pid,
        to: Pid,
        kind: FrameKind,
    ) -> Result<(), (FrameKind, CodecError)> {
        match kind {
            FrameKind::Call { id, request } => {
                let message = match remote.decode(&request) {
                    Ok(message) => message,
                    Err(why) => return Err((FrameKind::Call { id, request }, why)),
                };
                let Err((why, event)) =
                    self.deliver_remote(to, Event::Message(message), Wake::Message)
                else {
                    return Ok(());
                };
                let why = match why {
                    Refusal::Finished => CallRefusal::Finished,
                    Refusal::Full => CallRefusal::Full,
                    Refusal::ShuttingDown => CallRefusal::ShuttingDown,
                    Refusal::NoSuchProcess | Refusal::Remote => CallRefusal::NoSuchProcess,
                };
                let kind = FrameKind::CallRefused { id, why, request };
                let back = Frame {
                    from: to,
                    to: from,
                    kind,
                };
                if remote.transport.send(back).is_err() {
                    // Its caller's node is gone: the request stops here.
                    self.undelivered(to, event);
                }
            }
            FrameKind::Reply { id, message } => {
                let message = match remote.decode(&message) {
                    Ok(message) => message,
                    Err(why) => return Err((FrameKind::Reply { id, message }, why)),
                };
                remote.watches.remove_call(to, id);
                self.answer(to, id, Ok(message));
            }
            FrameKind::CallRefused { id, why, request } => {
                let message = match remote.decode(&request) {
                    Ok(message) => message,
                    Err(why_not) => {
                        let kind = FrameKind::CallRefused { id, why, request };
                        return Err((kind, why_not));
                    }
                };
                remote.watches.remove_call(to, id);
                let error = match why {
                    CallRefusal::Finished => ReplyError::Finished(message),
                    CallRefusal::Full => ReplyError::Full(message),
                    CallRefusal::ShuttingDown => ReplyError::ShuttingDown(message),
                    CallRefusal::NoSuchProcess => ReplyError::NoSuchProcess(message),
                };
                self.answer(to, id, Err(error));
            }
            _ => unreachable!("only call frames come here"),
        }
        Ok(())
    }

    /// Call `id` of local `caller` answered with `result`: its event, which
    /// the caller's worker turns into its reply or finds stale; to
    /// `on_undelivered` if the caller has ended.
    pub(super) fn answer(
        &self,
        caller: Pid,
        id: u64,
        result: Result<P::Message, ReplyError<P::Message>>,
    ) {
        let event = Event::Reply { tag: id, result };
        if let Err((_, event)) = self.deliver_remote(caller, event, Wake::Completion) {
            match event {
                // A node gone carries nothing: nothing to report.
                Event::Reply {
                    result: Err(ReplyError::NodeDown),
                    ..
                } => {}
                event => self.undelivered(caller, event),
            }
        }
    }
}
