//! A process's body: what only the worker holding it (state Running), or
//! its creator before it is first queued, may touch (`Slot::body`), and
//! what [`Table::insert`](super::table::Table::insert) puts in a slot.

use crate::process::{Event, Process};

use super::join::Joiner;
use super::links::Links;
use super::outside::Inbox;

/// What only the worker holding a process (state Running), or its creator
/// before it is first queued, may touch.
///
/// What every process may use is inline; what only some use (timers,
/// monitors and links, an outside receiver's inbox) is behind one pointer,
/// [`Extra`], allocated the first time a process of the slot needs it: a
/// process that uses none of it pays one null check, and the slot stays
/// three cache lines (see `Slot`). Once allocated, the part stays with the
/// slot: a closed process's goes to [`spare`](Body::spare), cleared, for
/// the slot's next process that needs one.
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
    /// The extra part an earlier process of this slot left, cleared, for
    /// the next that needs one ([`extra_mut`](Body::extra_mut)): a process
    /// that is linked or watched costs a `malloc` and a `free` (~250
    /// instructions together under callgrind, the largest single cost of
    /// closing a linked process) the first time its slot is used so, and
    /// never again. At most one of `extra` and `spare` is set. So at most
    /// one part per slot is kept, for as long as the table keeps its slots
    /// (the table's peak, as its slots themselves).
    pub(crate) spare: Option<Box<Extra<P>>>,
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
    pub(crate) timers: Vec<super::timer::Record>,
}

/// How many timer records' room a cleared extra part keeps for the slot's
/// next process (most processes hold one timer at a time); a process that
/// held more gives the rest of its vector back at its close.
const KEPT_TIMERS: usize = 4;

impl<P: Process> Extra<P> {
    fn new() -> Box<Extra<P>> {
        Box::new(Extra {
            outside: None,
            links: None,
            timers: Vec::new(),
        })
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
            spare: None,
        }
    }

    /// The extra part: the slot's spare one, or a new one, on first use.
    pub(crate) fn extra_mut(&mut self) -> &mut Extra<P> {
        let spare = &mut self.spare;
        self.extra
            .get_or_insert_with(|| spare.take().unwrap_or_else(Extra::new))
    }

    /// Takes what a closing process's extra part holds (its inbox if it
    /// is an outside receiver's, its monitors and links) and keeps the part,
    /// cleared, as the slot's [`spare`](Body::spare). Its timers must have
    /// been cancelled (`cancel_all_timers`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn clear_extra(
        &mut self,
    ) -> (Option<std::sync::Arc<Inbox<P::Message>>>, Option<Links>) {
        let Some(mut extra) = self.extra.take() else {
            return (None, None);
        };
        debug_assert!(extra.timers.is_empty(), "timers left at close");
        debug_assert!(self.spare.is_none(), "a slot keeps one part");
        let parts = (extra.outside.take(), extra.links.take());
        extra.timers.shrink_to(KEPT_TIMERS);
        self.spare = Some(extra);
        parts
    }

    /// Its monitors and links, if it has used any.
    pub(crate) fn links(&self) -> Option<&Links> {
        self.extra.as_deref()?.links.as_ref()
    }

    /// Its monitors and links, created on first use (in the slot's spare
    /// extra part, if it has one).
    pub(crate) fn links_mut(&mut self) -> &mut Links {
        (self.extra_mut().links).get_or_insert_with(Links::default)
    }

    /// Its pending timers and command timeouts (none without an extra).
    pub(crate) fn timers(&self) -> &[super::timer::Record] {
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
    use super::Body;
    use crate::process::Pid;
    use crate::sched::table::tests::Nop;

    /// A closed process's extra part stays with its slot, cleared, and is
    /// the very part the slot's next process gets when it needs one: no
    /// `free` at the close, no `malloc` at the next use.
    #[test]
    fn a_closed_processs_extra_part_is_the_next_ones() {
        let mut body = Body::<Nop>::empty();
        let (me, target) = (Pid::new(1, 1), Pid::new(2, 1));
        assert!(body.links_mut().monitor(me, target).is_some());
        let part: *const _ = body.extra.as_deref().expect("made on first use");
        let (outside, links) = body.clear_extra();
        assert!(outside.is_none());
        assert_eq!(links.map(|l| l.counts()), Some((1, 0, 0)), "to close");
        assert!(body.extra.is_none() && body.spare.is_some(), "kept");
        let again: *const _ = body.extra_mut();
        assert_eq!(again, part, "the same part, not a new one");
        assert!(body.spare.is_none(), "one part per slot");
        assert!(body.links().is_none(), "cleared");
    }
}
