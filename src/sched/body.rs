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
/// [`Extra`], allocated the first time a process needs it: a process that
/// uses none of it pays one null check, and the slot stays three cache
/// lines (see `Slot`).
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
    pub(crate) timers: Vec<super::timer::Record>,
}

impl<P: Process> Body<P> {
    /// The extra part, allocated on first use.
    pub(crate) fn extra_mut(&mut self) -> &mut Extra<P> {
        self.extra.get_or_insert_with(|| {
            Box::new(Extra {
                outside: None,
                links: None,
                timers: Vec::new(),
            })
        })
    }

    /// Its monitors and links, if it has used any.
    pub(crate) fn links(&self) -> Option<&Links> {
        self.extra.as_deref()?.links.as_ref()
    }

    /// Its monitors and links, created on first use.
    pub(crate) fn links_mut(&mut self) -> &mut Links {
        self.extra_mut().links.get_or_insert_with(Links::default)
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
