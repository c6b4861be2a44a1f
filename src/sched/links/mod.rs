//! Monitors and links: who is told when a process ends.
//!
//! (Not the long-step monitor of `monitor.rs`, which watches steps, not
//! processes.)
//!
//! # No new protocol
//!
//! Monitors and links add no atomic word and no lock. They ride on the one
//! guarantee the delivery path already has (loom-proven in
//! `loom-tests/tests/state.rs` and `handoff.rs`): an item pushed into a
//! process's mailbox whose notify finds the process *not* Complete is seen
//! by a later step of it, or drained by its `close`. Everything else is
//! data in the process's body, which only its holder touches. One
//! shortcut, on the same state word: a worker whose signal finds its
//! receiver waiting *claims* it instead of pushing
//! ([`StateWord::claim`](crate::process::state::StateWord::claim): the
//! CAS a notify would make, Idle to Ready, with nothing pushed), and,
//! holding it, does at once what the receiver's collection would do with
//! the item (below); a receiver it cannot claim gets the item as above,
//! and so does an exit from a process the claimed receiver is not linked
//! with (below, "An exit behind its link").
//! That is how a `Down` reaches a waiting watcher, and an exit the next
//! waiting link of a chain, without a mailbox node (`Local::send_down`,
//! `Local::send_signal`; loom:
//! `a_signal_handed_to_a_parking_process_is_received_once`).
//!
//! - `monitor(t)` from a step of `w`: `w` records `t` in its own `watching`
//!   list, then sends the [`Signal::Monitor`]`(w)` item to `t`'s mailbox.
//!   `t`'s worker registers `w` in `t`'s `watchers` when it collects its
//!   events, or when its `close` drains the mailbox. Either way `close`
//!   then sends [`Signal::Down`]`(t, reason)` to every watcher.
//! - If the push was refused (`t` had ended or never existed), or its notify
//!   found `t` Complete or its slot reused (the push *raced* the end: the
//!   closing worker may or may not have drained it), `w` sends itself
//!   `Down(t, NoProc)` at once.
//! - A step's requests are all pushed first, in the step's order, and
//!   each target is then notified once for those it was sent
//!   (`Shared::push_signal`, `notify_signals`). The guarantee above is
//!   that notify's, for every item pushed to the target before it; if it
//!   finds the target ended, each request among them is answered as a
//!   lone one would be, and a push refused at once is answered at once.
//!   (loom: `requests_pushed_under_one_notify_racing_the_end_are_answered_once_each`.)
//! - A request that lands in a slot after its process's `close` drained
//!   the mailbox is found, with its stale generation, by the next holder
//!   of the slot, which answers it with `Down(t, NoProc)` too.
//!
//! So a monitor yields *at least* one `Down`; [`Links::receive`], on
//! the watcher's side, makes it *exactly* one: a `Down(t)` is passed to a
//! step only if `t` is still in `watching`, and taking it removes `t`. The
//! same check gives `demonitor` its promise, as Erlang's `demonitor(Ref,
//! [flush])` does: `demonitor(t)` removes `t` from `watching` right after
//! the step, so any `Down(t)` arriving later is dropped; one already
//! taken but not yet given to a step (the one event taken past a full
//! step's cap, marked by [`Links::carried_down`], or one a claim handed
//! over and held for the step that drains the mailbox) is taken out by
//! the `demonitor` too. A stale PID never yields a `Down` about a newer
//! process: the target registers a request only if the item's generation
//! is its own, and a `Down` names the PID the watcher asked about.
//!
//! Links are the same, both ways: `link(p)` records `p` in the caller's
//! `linked` list and sends [`Signal::Link`] to `p`, which records the
//! caller; a refused or raced request comes back as `Exit(p, NoProc)`. When
//! a process ends it sends an exit signal ([`Signal::exit`]`(me, reason)`:
//! the reason inline unless it carries a summary, so a chain of links
//! allocates nothing) to every linked process; the receiver acts on it
//! only if the sender is still in its
//! `linked` list (removing it, so an exit acts once): a normal end just
//! unlinks, a trapping receiver gets `Event::Down`, any other is ended
//! (reason [`ExitReason::Linked`]) before its next step. An exit that
//! reaches a receiver already ending (its `close` drains it) only
//! unlinks ([`Links::receive_ending`]): the receiver's watchers and links
//! are told its own outcome, the one its joiner gets, and `Linked` only
//! when the exit is what ended it.
//!
//! A step's own exit signals (`StepOutput::exit`, `kill`) are
//! [`Signal::Sent`] and [`Signal::Kill`]: no link needed, decided by the
//! receiver's `Links` as a link's exit is, with the reason to tell kept
//! for its farewell ([`Links::killed_reason`]); see the room's README.
//!
//! # An exit behind its link
//!
//! The claim keeps the mailbox's order for what the receiver has
//! collected, not for what a Blocked receiver still holds: a request does
//! not wake it (a message's wake), so `link(t)` from `x` may leave
//! `Link(x)` in `t`'s mailbox when `x` ends and its exit (a completion's
//! wake) claims `t`. Decided in `t`'s body, that exit would find no link
//! and be dropped, and the request, collected after it, would link `t` to
//! a process gone: never ended by it, never told of it. So a claimer
//! decides in the body only an exit from a process among the links
//! ([`Links::receive_handed`]); any other it pushes into `t`'s mailbox
//! (with no notify: it holds `t`, and queues it), where it comes after
//! every request its sender pushed before it ended, and `t`'s collection
//! decides: `Link(x)` first, then the exit acts on the new link as on any
//! (ending `t`, or a `Down` if it traps, or an unlink if `x` ended
//! normally); with no such request it is dropped, as an exit from a
//! process not linked always is (unlinked meanwhile, or a second exit for
//! one link). A process that uses no links never meets this, and an exit
//! to a linked process is handed over as before, after the look at
//! `linked` that `receive` makes anyway. Why not the other ways: a link
//! request that woke a Blocked process would step it with the messages it
//! is not waiting for; and exits from unknown processes, kept until their
//! `Link` came, would never be cleared for an exit that crossed an
//! `unlink`. (loom:
//! `an_exit_claiming_a_process_comes_after_its_senders_link_request`.)
//!
//! # Cost when unused
//!
//! A process that uses none of this (nor timers) has `Body::extra ==
//! None` (a null pointer) and pays: one branch after each step (`Effects::links` empty),
//! one after collecting events, one in `close`. Mailbox items are
//! `Item::Event`, `Item::Signal` or `Item::Timer` in the same size as before
//! (see the unit test below); no atomic is added to delivery or to the step.
//!
//! # Limits
//!
//! The lists are searched linearly: fine for the tens a process typically
//! holds, O(n) per `demonitor` or `unlink` for a process watched by
//! thousands. Up to two PIDs per list are kept in place (`Pids`), so the
//! usual process allocates nothing for them but the body's extra part,
//! which a worker reuses (`SpareExtras`). One
//! monitor per (watcher, target): see `StepOutput::monitor`.
//!
//! Built under loom too (`loom-tests/tests/links.rs` runs this code against
//! the real state word and mailbox).

use crate::process::{ExitReason, Pid};

mod pids;
use pids::Pids;

/// An item of the scheduler's own in a mailbox, beside events. Never
/// reaches a step as itself, and never reported as undelivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// Process `.0` monitors the receiver.
    Monitor(Pid),
    /// Process `.0` no longer monitors the receiver.
    Demonitor(Pid),
    /// Process `.0` links with the receiver.
    Link(Pid),
    /// Process `.0` unlinks from the receiver.
    Unlink(Pid),
    /// Process `.0`, which the receiver monitors, ended.
    Down(Pid, ExitReason),
    /// Process `.0`, linked with the receiver, ended, with a reason that
    /// carries a summary (it failed or panicked). Boxed: two variants
    /// carrying an inline reason would make a signal 32 bytes, and the
    /// mailbox item 40 (see the unit test below). Build exits with
    /// [`Signal::exit`], which picks the variant.
    Exit(Pid, Box<ExitReason>),
    /// As `Exit`, ended by a link with `.1` (`ExitReason::Linked`): inline,
    /// so that a chain of linked processes ends without an allocation.
    ExitLinked(Pid, Pid),
    /// As `Exit`, with a reason that carries nothing: inline.
    ExitPlain(Pid, Plain),
    /// Process `.0`'s step sent the receiver an exit with this reason
    /// (`StepOutput::exit`): no link needed, trappable, a normal reason
    /// ignored by a receiver that does not trap. Boxed, as `Exit`.
    Sent(Pid, Box<ExitReason>),
    /// Process `.0`'s step killed the receiver (`StepOutput::kill`):
    /// untrappable.
    Kill(Pid),
}

/// An [`ExitReason`] that carries nothing, for [`Signal::ExitPlain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    /// `ExitReason::Done`.
    Done,
    /// `ExitReason::Terminated`.
    Terminated,
    /// `ExitReason::Shutdown`.
    Shutdown,
    /// `ExitReason::NoProc`.
    NoProc,
    /// `ExitReason::Killed`.
    Killed,
}

impl Signal {
    /// A copy of this signal if it is a request that may be owed an answer
    /// (`Monitor`, `Link`: see [`unanswered`]), kept by its sender until
    /// it knows the request reached a live process. Built from the PID
    /// alone: no generic `clone` of a signal that may carry a reason.
    pub fn owed(&self) -> Option<Signal> {
        match *self {
            Signal::Monitor(from) => Some(Signal::Monitor(from)),
            Signal::Link(from) => Some(Signal::Link(from)),
            _ => None,
        }
    }

    /// The sender of an exit signal (`None` for any other signal).
    #[inline]
    pub fn exit_from(&self) -> Option<Pid> {
        match *self {
            Signal::Exit(from, _) | Signal::ExitLinked(from, _) | Signal::ExitPlain(from, _) => {
                Some(from)
            }
            _ => None,
        }
    }

    /// The reason an exit signal carries (`Done` for any other signal,
    /// which callers never give it).
    #[inline]
    fn into_exit_reason(self) -> ExitReason {
        match self {
            Signal::ExitLinked(_, by) => ExitReason::Linked(by),
            Signal::ExitPlain(_, plain) => plain.into(),
            Signal::Exit(_, reason) => *reason,
            _ => ExitReason::Done,
        }
    }

    /// Whether this is an exit signal that a trapping receiver turns into
    /// a `Down`: a link's, or a step's `exit` (for `unlink`'s flush of a
    /// trapped exit taken but not yet given to a step).
    #[inline]
    pub fn is_exit(&self) -> bool {
        self.exit_from().is_some() || matches!(self, Signal::Sent(..))
    }

    /// The exit signal of `from`, ended with `reason`: inline unless the
    /// reason carries a summary.
    pub fn exit(from: Pid, reason: ExitReason) -> Signal {
        let plain = |p| Signal::ExitPlain(from, p);
        match reason {
            ExitReason::Linked(by) => Signal::ExitLinked(from, by),
            ExitReason::Done => plain(Plain::Done),
            ExitReason::Terminated => plain(Plain::Terminated),
            ExitReason::Shutdown => plain(Plain::Shutdown),
            ExitReason::NoProc => plain(Plain::NoProc),
            ExitReason::Killed => plain(Plain::Killed),
            summarised => Signal::Exit(from, Box::new(summarised)),
        }
    }
}

impl From<Plain> for ExitReason {
    fn from(plain: Plain) -> ExitReason {
        match plain {
            Plain::Done => ExitReason::Done,
            Plain::Terminated => ExitReason::Terminated,
            Plain::Shutdown => ExitReason::Shutdown,
            Plain::NoProc => ExitReason::NoProc,
            Plain::Killed => ExitReason::Killed,
        }
    }
}

/// What a received signal asks of the worker holding the receiver.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// Nothing more (recorded, or dropped as a duplicate or stale).
    Nothing,
    /// Pass `Event::Down { pid, reason }` to the next step.
    Down(Pid, ExitReason),
    /// End the process without another step: linked `.0` ended abnormally.
    Kill(Pid),
}

/// The monitors and links of one process: part of its body, so only the
/// worker holding the process reads or writes it. Created on first use,
/// in the body's boxed extra part (`Body::links_mut`).
#[derive(Debug)]
pub struct Links {
    /// Processes this one monitors (at most once each).
    watching: Pids,
    /// Processes that monitor this one, as registered here.
    watchers: Pids,
    /// Processes linked with this one.
    linked: Pids,
    /// Whether exits of linked processes come as `Event::Down`.
    trap: bool,
    /// Whether an exit signal ended this process, and by whom
    /// (`killed_by`): a flag and a PID rather than an `Option<Pid>`, which
    /// takes a word of its own and would leave no room for `killed_with`
    /// in the part's size (`core/body.rs` holds it).
    killed: bool,
    killer: Pid,
    /// With `killed_by`, if a step's exit or kill (not a link's) ended
    /// this process: the reason its watchers and links are told. Boxed:
    /// inline, it would grow every body's extra part by two words for a
    /// rare end.
    killed_with: Option<Box<ExitReason>>,
    /// Whether the last step returned `Idle`: a wakeup that brings only
    /// signals then needs no step (see `worker/signals.rs`).
    pub idle: bool,
    /// Whether the last event of the carry is a monitor's `Down`, taken
    /// one past a full step's cap and not yet given to a step: a
    /// `demonitor` of its target in the step that did not see it takes it
    /// out (`worker/signals.rs`). Cleared when the carry is handed over.
    pub carried_down: bool,
    /// Whether the `Down` held in the extra part (`Extra::down`) is a
    /// trapped exit, not a monitor's: a `demonitor` leaves it, an `unlink`
    /// of its sender takes it out.
    pub handed_exit: bool,
    /// Whether the last event of the carry is a trapped exit's `Down`,
    /// taken one past a full step's cap and not yet given to a step: an
    /// `unlink` of its sender in the step that did not see it takes it out
    /// (`worker/signals.rs`). Cleared when the carry is handed over.
    pub carried_exit: bool,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            watching: Pids::default(),
            watchers: Pids::default(),
            linked: Pids::default(),
            trap: false,
            killed: false,
            killer: Pid::new(0, 0),
            killed_with: None,
            idle: false,
            carried_down: false,
            handed_exit: false,
            carried_exit: false,
        }
    }
}

impl Links {
    /// A request of the holder `me`'s step: the signal to send to the
    /// returned PID, if any (none if it changes nothing).
    pub fn monitor(&mut self, me: Pid, target: Pid) -> Option<(Pid, Signal)> {
        if target == me || self.watching.contains(target) {
            return None;
        }
        self.watching.push(target);
        Some((target, Signal::Monitor(me)))
    }

    /// As [`monitor`](Self::monitor), for `demonitor`.
    pub fn demonitor(&mut self, me: Pid, target: Pid) -> Option<(Pid, Signal)> {
        (self.watching.remove(target)).then_some((target, Signal::Demonitor(me)))
    }

    /// As [`monitor`](Self::monitor), for `link`.
    pub fn link(&mut self, me: Pid, to: Pid) -> Option<(Pid, Signal)> {
        if to == me || self.linked.contains(to) {
            return None;
        }
        self.linked.push(to);
        Some((to, Signal::Link(me)))
    }

    /// As [`monitor`](Self::monitor), for `unlink`.
    pub fn unlink(&mut self, me: Pid, to: Pid) -> Option<(Pid, Signal)> {
        (self.linked.remove(to)).then_some((to, Signal::Unlink(me)))
    }

    /// `trap_exits`.
    pub fn trap_exits(&mut self, trap: bool) {
        self.trap = trap;
    }

    /// A signal for this process (its generation matched).
    pub fn receive(&mut self, signal: Signal) -> Received {
        match signal {
            Signal::Monitor(watcher) => self.watchers.push(watcher),
            Signal::Demonitor(watcher) => {
                self.watchers.remove(watcher);
            }
            Signal::Link(from) => {
                if !self.linked.contains(from) {
                    self.linked.push(from);
                }
            }
            Signal::Unlink(from) => {
                self.linked.remove(from);
            }
            Signal::Down(target, reason) => {
                if self.receive_down(target) {
                    return Received::Down(target, reason);
                }
            }
            Signal::Exit(from, reason) => return self.exited(from, *reason),
            Signal::ExitLinked(from, by) => return self.exited(from, ExitReason::Linked(by)),
            Signal::ExitPlain(from, plain) => return self.exited(from, plain.into()),
            Signal::Sent(from, reason) => return self.sent(from, *reason),
            Signal::Kill(from) => return self.end_by(from, ExitReason::Killed),
        }
        Received::Nothing
    }

    /// [`receive`](Self::receive) for a process that is ending (its
    /// `close` drains its mailbox): a request is recorded, so that its
    /// sender is told of this end; an exit only unlinks. It cannot end a
    /// process already ending, nor change how it ended: what its watchers
    /// and links are told is its own outcome, and `ExitReason::Linked`
    /// only if an exit collected before a step ended it (`killed_by`).
    pub fn receive_ending(&mut self, signal: Signal) {
        match signal.exit_from() {
            Some(from) => {
                self.linked.remove(from);
            }
            // A step's exit or kill: too late, it changes nothing.
            None if matches!(signal, Signal::Sent(..) | Signal::Kill(_)) => {}
            None => {
                let _ = self.receive(signal);
            }
        }
    }

    /// [`receive`](Self::receive) for a worker that claimed this process
    /// while it waited (`Local::send_signal`): it holds the body, not the
    /// mailbox's order. An exit from a process not among the links is
    /// given back (`Err`), to go through the mailbox: a `Link` request
    /// from that process may still wait there (module docs, "An exit
    /// behind its link"). So is a step's exit to a trapping process: its
    /// `Down` must come after what the same sender sent before and before
    /// what it sends after (a sender may send many), which a `Down` held
    /// for the next step (`before_step`) would not.
    ///
    /// An exit from a linked process, the one a chain's teardown hands
    /// from each link to the next, is decided with one look at `linked`
    /// (the removal) and no dispatch on the other signals.
    #[inline]
    pub fn receive_handed(&mut self, signal: Signal) -> Result<Received, Signal> {
        match signal.exit_from() {
            Some(from) if !self.linked.remove(from) => Err(signal),
            Some(from) => Ok(self.unlinked_by(from, signal.into_exit_reason())),
            None if self.trap && matches!(signal, Signal::Sent(..)) => Err(signal),
            None => Ok(self.receive(signal)),
        }
    }

    /// A `Down` about `target` for this process: whether it is passed on
    /// to a step, which it is if this process still monitors `target` (it
    /// then no longer does). [`receive`](Self::receive) of a
    /// `Signal::Down`, for a worker that hands the `Down` straight to the
    /// process's body (`Local::send_down`) and so never builds the signal.
    #[inline]
    pub fn receive_down(&mut self, target: Pid) -> bool {
        self.watching.remove(target)
    }

    /// An exit signal from `from`, which ended with `reason`.
    fn exited(&mut self, from: Pid, reason: ExitReason) -> Received {
        if !self.linked.remove(from) {
            // Unlinked meanwhile, or a second exit for one link.
            Received::Nothing
        } else {
            self.unlinked_by(from, reason)
        }
    }

    /// What the exit of `from`, ended with `reason`, does to this process
    /// once `from` is taken out of `linked` (it was there).
    #[inline]
    fn unlinked_by(&mut self, from: Pid, reason: ExitReason) -> Received {
        if self.trap {
            Received::Down(from, reason)
        } else if !reason.is_normal() && !self.killed {
            (self.killed, self.killer) = (true, from);
            Received::Kill(from)
        } else {
            Received::Nothing
        }
    }

    /// A step's exit from `from` with `reason` (`StepOutput::exit`, OTP's
    /// `exit/2`): a `Down` if this process traps exits, nothing if the
    /// reason is normal, else its end, with `reason` told.
    fn sent(&mut self, from: Pid, reason: ExitReason) -> Received {
        if self.trap {
            Received::Down(from, reason)
        } else if reason.is_normal() {
            Received::Nothing
        } else {
            self.end_by(from, reason)
        }
    }

    /// Ends this process for a step's exit or kill from `from`, unless an
    /// exit already did: its watchers and links will be told `reason`.
    fn end_by(&mut self, from: Pid, reason: ExitReason) -> Received {
        if self.killed {
            return Received::Nothing;
        }
        (self.killed, self.killer) = (true, from);
        self.killed_with = Some(Box::new(reason));
        Received::Kill(from)
    }

    /// The reason to tell of this process's end by an exit signal
    /// (`killed_by` set): the reason a step's exit or kill carried, or
    /// `Linked` for a link's.
    pub fn killed_reason(&self) -> Option<ExitReason> {
        let by = self.killed_by()?;
        Some(
            self.killed_with
                .as_deref()
                .cloned()
                .unwrap_or(ExitReason::Linked(by)),
        )
    }

    /// The process that ended this one through a link (not a step's exit
    /// or kill), if any: its farewell tells `Linked` of it.
    #[inline]
    pub fn linked_by(&self) -> Option<Pid> {
        (self.killed && self.killed_with.is_none()).then_some(self.killer)
    }

    /// The process that ended this one through a link or a step's exit
    /// or kill, if any.
    // These getters are `#[inline]` because they are not generic: without
    // it the worker, generic and so compiled in the embedder's crate,
    // calls them out of line, through the GOT, on the way from an end to
    // its watchers.
    #[inline]
    pub fn killed_by(&self) -> Option<Pid> {
        self.killed.then_some(self.killer)
    }

    /// The processes to tell when this one ends, as a `Down` each: its
    /// watchers. (The worker's farewell goes through them, then through
    /// [`linked`](Self::linked), an `Exit` each.)
    #[inline]
    pub fn watchers(&self) -> &[Pid] {
        self.watchers.as_slice()
    }

    /// The processes linked with this one.
    #[inline]
    pub fn linked(&self) -> &[Pid] {
        self.linked.as_slice()
    }

    /// Counts for the process dump: (monitors held, watchers, links).
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.watching.len(), self.watchers.len(), self.linked.len())
    }
}

/// The answer owed for a request that did not reach its target: refused,
/// raced the target's end, or found in the slot by a later process
/// (`target` is then the PID the request was sent to). A `Down` or `Exit`
/// that did not reach its receiver needs none.
pub fn unanswered(target: Pid, signal: Signal) -> Option<(Pid, Signal)> {
    match signal {
        Signal::Monitor(watcher) => Some((watcher, Signal::Down(target, ExitReason::NoProc))),
        Signal::Link(from) => Some((from, Signal::exit(target, ExitReason::NoProc))),
        _ => None,
    }
}

/// Packs the dump's counts into one word: 21 bits each (saturating),
/// monitors held low, then watchers, then links.
#[inline]
pub(crate) fn pack_counts((monitors, watchers, links): (usize, usize, usize)) -> u64 {
    const MAX: usize = (1 << 21) - 1;
    let field = |n: usize| n.min(MAX) as u64;
    field(monitors) | field(watchers) << 21 | field(links) << 42
}

/// Unpacks [`pack_counts`].
pub(crate) fn unpack_counts(word: u64) -> (u32, u32, u32) {
    let field = |shift: u32| ((word >> shift) & ((1 << 21) - 1)) as u32;
    (field(0), field(21), field(42))
}

#[cfg(test)]
mod tests;
