//! A process's body: what only the worker holding it (state Running), or
//! its creator before it is first queued, may touch (`Slot::body`), and
//! what [`Table::insert`](crate::sched::core::table::Table::insert) puts in a slot.

use crate::process::{Event, Process};

use crate::sched::links::Links;
use crate::sched::outside::join_set::Joiner;
use crate::sched::outside::Inbox;

/// What only the worker holding a process (state Running), or its creator
/// before it is first queued, may touch.
///
/// What every process may use is inline; what only some use (timers,
/// monitors and links, an outside receiver's inbox) is behind one pointer,
/// [`Extra`], allocated (or, on a worker, taken from its [`SpareExtras`])
/// the first time a process needs it: a process that uses none of it pays
/// one null check, and the slot stays three cache lines (see `Slot`).
pub(crate) struct Body<P: Process> {
    pub(crate) process: Option<P>,
    /// Tags of yielded commands not yet completed.
    pub(crate) pending: Vec<u64>,
    /// Events handed to a step that it left in its vector, and the one event
    /// taken from the mailbox past a full step's cap: the next step gets
    /// them first, ahead of the mailbox. Empty (and unallocated) for a
    /// process that drains what it is given.
    pub(crate) carry: Vec<Event<P>>,
    pub(crate) joiner: Option<Joiner<P>>,
    /// `None` until the process uses a timer, a monitor or a link, or is
    /// monitored or linked, or the slot is an outside receiver's; kept until
    /// the process ends.
    pub(crate) extra: Option<Box<Extra<P>>>,
}

/// The part of a [`Body`] only some processes use.
pub(crate) struct Extra<P: Process> {
    /// Set for an outside receiver's slot (`process` is then `None`): the
    /// worker that runs it moves its messages here (`outside.rs`).
    pub(crate) outside: Option<std::sync::Arc<Inbox<P::Message>>>,
    /// Its monitors and links (`links.rs`), once it uses one or is
    /// monitored or linked.
    pub(crate) links: Option<Links>,
    /// Pending timers and command timeouts (`worker/timers.rs`).
    pub(crate) timers: Vec<crate::sched::timer::Record>,
    /// A `Down` handed over by a worker that claimed the waiting process
    /// (`Local::send_down`, `Local::send_signal`), for its next step.
    pub(crate) down: Option<(crate::process::Pid, crate::process::ExitReason)>,
    /// The last step asked to wait for a completion, but its mailbox held
    /// what the collection could not see past (a push still being linked)
    /// or what came during the step: it was parked Idle instead, so that
    /// the notify that follows that push's link wakes it, and the next
    /// collection decides (`before_step`, `Before::Rewait`): with nothing
    /// but messages, they are carried and it waits again without a step.
    pub(crate) rewait: bool,
    /// Calls waiting for their reply (`worker/calls.rs`): id and tag.
    pub(crate) calls: Vec<(u64, u64)>,
}

impl<P: Process> Extra<P> {
    fn new() -> Box<Extra<P>> {
        Box::new(Extra {
            outside: None,
            links: None,
            timers: Vec::new(),
            down: None,
            rewait: false,
            calls: Vec::new(),
        })
    }

    /// Whether it holds nothing, as a closed process's does once `close`
    /// has taken its parts (and freed its timers' vector).
    fn is_clear(&self) -> bool {
        self.outside.is_none()
            && self.links.is_none()
            && self.timers.capacity() == 0
            && self.down.is_none()
            && !self.rewait
            && self.calls.capacity() == 0
    }
}

/// How many spare extra parts a worker keeps: a watched or linked process
/// takes one when it is first monitored or linked and gives it back at
/// its close, so a worker closing such processes as fast as they are
/// made (a chain torn down, a watcher spawning and watching children)
/// allocates none. 1,024 of 208 bytes (with malloc's header, ~220 KiB) a
/// worker at most, kept
/// after a burst, so that a torn-down chain or supervision tree of up to
/// a thousand frees nothing (a much smaller cache would free most of a
/// long chain's parts, a `malloc`/`free` pair each). Kept by the worker,
/// not by the slot: a spare pointer in every body would grow every slot,
/// by a cache line for a small process, a cost to processes that use none
/// of this.
const SPARE_EXTRAS: usize = 1024;

/// A worker's spare extra parts (see [`SPARE_EXTRAS`]): a `malloc` and a
/// `free` (together the largest single cost of closing a linked
/// process) become a push and a pop. Boxes in a
/// `Vec` on purpose: the boxes are what is reused, moved into and out of
/// bodies.
#[allow(clippy::vec_box)]
pub(crate) struct SpareExtras<P: Process>(Vec<Box<Extra<P>>>);

impl<P: Process> SpareExtras<P> {
    pub(crate) fn new() -> Self {
        SpareExtras(Vec::new())
    }

    /// A spare part, or a new one. Out of line: the callers' hot paths
    /// (the worker loop's, into which they are inlined) only test for an
    /// existing part.
    #[cold]
    #[inline(never)]
    pub(crate) fn take(&mut self) -> Box<Extra<P>> {
        self.0.pop().unwrap_or_else(Extra::new)
    }

    /// Keeps `extra`, taken from a closed process, for another one; frees
    /// it if the worker has enough, or if it still holds anything.
    pub(crate) fn give(&mut self, extra: Box<Extra<P>>) {
        if self.0.len() < SPARE_EXTRAS && extra.is_clear() {
            self.0.push(extra);
        }
    }
}

impl<P: Process> Body<P> {
    /// A fresh slot's body: nothing in it, nothing allocated.
    pub(crate) fn empty() -> Self {
        Body {
            process: None,
            pending: Vec::new(),
            carry: Vec::new(),
            joiner: None,
            extra: None,
        }
    }

    /// The extra part, allocated on first use.
    pub(crate) fn extra_mut(&mut self) -> &mut Extra<P> {
        self.extra.get_or_insert_with(Extra::new)
    }

    /// As [`extra_mut`](Self::extra_mut), on a worker: a spare part if the
    /// worker has one.
    pub(crate) fn extra_from(&mut self, spare: &mut SpareExtras<P>) -> &mut Extra<P> {
        self.extra.get_or_insert_with(|| spare.take())
    }

    /// Its monitors and links, created on first use (in a spare extra part
    /// of the worker's, if it has one).
    pub(crate) fn links_mut(&mut self, spare: &mut SpareExtras<P>) -> &mut Links {
        (self.extra_from(spare).links).get_or_insert_with(Links::default)
    }

    /// Its pending timers and command timeouts (none without an extra).
    pub(crate) fn timers(&self) -> &[crate::sched::timer::Record] {
        self.extra.as_deref().map_or(&[], |extra| &extra.timers[..])
    }

    /// An outside receiver's inbox.
    pub(crate) fn outside(&self) -> Option<&std::sync::Arc<Inbox<P::Message>>> {
        self.extra.as_deref()?.outside.as_ref()
    }
}

/// What `Table::insert` puts in a slot.
pub(crate) enum Occupant<P: Process> {
    /// A process, initialised, and who waits for its outcome.
    Process(P, Option<Joiner<P>>),
    /// An outside receiver's inbox.
    Outside(std::sync::Arc<Inbox<P::Message>>),
}

#[cfg(test)]
mod tests {
    use super::{Body, Extra, SpareExtras, SPARE_EXTRAS};
    use crate::process::Pid;
    use crate::sched::core::table::tests::Nop;

    /// A closed process's extra part, given back as `close` does (its links
    /// taken), is the very part the worker's next process gets: no `free`
    /// at the close, no `malloc` at the next use; and the spare list keeps
    /// no more than its bound, ~220 KiB a worker at most.
    #[test]
    fn a_closed_processs_extra_part_is_the_next_ones() {
        let mut spare = SpareExtras::new();
        let mut body = Body::<Nop>::empty();
        let (me, target) = (Pid::new(1, 1), Pid::new(2, 1));
        assert!(body.links_mut(&mut spare).monitor(me, target).is_some());
        let mut extra = body.extra.take().expect("made on first use");
        let part: *const Extra<Nop> = &*extra;
        assert_eq!(extra.links.take().map(|l| l.counts()), Some((1, 0, 0)));
        spare.give(extra);
        let mut next = Body::<Nop>::empty();
        assert!(next.links_mut(&mut spare).counts() == (0, 0, 0), "cleared");
        let again: *const Extra<Nop> = next.extra.as_deref().expect("taken");
        assert_eq!(again, part, "the same part, not a new one");
        assert!(SPARE_EXTRAS * core::mem::size_of::<Extra<Nop>>() <= 208 << 10);
    }
}
