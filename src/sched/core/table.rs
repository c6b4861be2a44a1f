//! The process table: a lock-free slab of process slots, indexed by PID.
//!
//! Slots live in pages that are allocated on first use and never freed
//! before the table drops, so a `&Slot` stays valid for the table's life and
//! run queues can carry plain slot pointers ([`Task`]). Page `k` holds
//! `FIRST_PAGE << k` slots, so an index maps to its page with one
//! leading-zeros count: lookup is O(1) and takes no lock.
//!
//! Free slots form a Treiber stack threaded through `Slot::next_free`; its
//! head packs a tag that every push and pop bumps, so a popper whose view is
//! stale fails its CAS instead of suffering ABA. Indices never used before
//! come from the `fresh` counter.
//!
//! The pages and the free list are in `slab.rs` (generic over the slot,
//! built under loom too, and modelled in `loom-tests/tests/table.rs`); this
//! file puts process slots in them.
//!
//! A slot is reused across processes; its [`StateWord`] generation tells the
//! incarnations apart (see [`Pid`]). Events are tagged with the generation
//! they were sent to, so an event that lands in the queue after its process
//! ended is recognised and reported instead of reaching the next one.

use crate::deque::Pointer;
use crate::mpsc::Mailbox;
use crate::padded::CachePadded;
use crate::process::state::{Late, StateWord, LAST_GENERATION};
use crate::process::{Event, NodeId, Pid, Process, LOCAL_SLOTS};
use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};
use core::ptr::NonNull;

use crate::sched::bound::Bound;
pub(crate) use crate::sched::core::body::{Body, Occupant};
use crate::sched::core::clock::CoarseClock;
use crate::sched::core::name_flag::NameFlag;
use crate::sched::core::slab::{FreeList, Pages};
use crate::sched::links::Signal;
use crate::sched::observe::figures::{Figures, QueueCounts, TimerCount};
use crate::sched::timer::Firing;

/// An item and the generation of the process it was sent to.
pub(crate) struct Envelope<P: Process> {
    pub(crate) generation: u32,
    /// Whether the item holds a place in a bounded mailbox (see
    /// `bound.rs`): the drain that takes it gives the place back.
    pub(crate) counted: bool,
    pub(crate) item: Item<P>,
}

/// What a mailbox carries: an event for the step, a signal of the
/// monitors and links (`links.rs`), which no step sees, or a timer's
/// firing (`timer/mod.rs`), which the holder turns into an event if it is
/// the pending arming's. Same size as an event (a unit test in `links.rs`
/// holds it to that).
pub(crate) enum Item<P: Process> {
    Event(Event<P>),
    Signal(Signal),
    Timer(Firing),
}

/// One process's slot.
///
/// Line-aligned and `repr(C)`, so that its first cache line holds what
/// every delivery and every step touch, and only that: the mailbox's
/// `head` (swapped by a push) and `tail`, the state word (loaded, then
/// CASed by the notify that wakes the process, and by the step's start and
/// end), the bound (its limit read by every delivery of a message) and the
/// figures a step stamps. The dump's queued counters, off by default, come
/// after. The body follows; with its rarely used parts
/// behind one pointer (`body.rs`), a slot is three lines for a small
/// process (a unit test holds `Slot` to that for a 16-byte one). Aligned,
/// so that a slot never straddles lines at random, which a ping-pong
/// would pay for.
#[repr(C, align(64))]
pub(crate) struct Slot<P: Process> {
    /// Events for the process. Any thread pushes; the worker holding the
    /// process pops (the Running state serialises consumers).
    pub(crate) events: Mailbox<Envelope<P>>,
    pub(crate) state: StateWord,
    /// The mailbox's capacity and count, if bounded (`bound.rs`): read and
    /// reserved by every delivery of a message, next to the state word.
    pub(crate) bound: Bound,
    /// Step count, last worker and stamp, for the process dump (and the
    /// last worker as a hint for remote wakeups); see `figures.rs`.
    pub(crate) figures: Figures,
    /// The queued-events counters for the process dump, if asked for
    /// (`Builder::count_queued_events`, off by default: so not on the
    /// first line); see `figures.rs`.
    pub(crate) counts: QueueCounts,
    /// Next free slot index + 1 (0: none); meaningful only while free.
    next_free: AtomicU32,
    /// The slot's key (`Pid::key`): its node's base plus its place in
    /// the pages.
    index: u32,
    pub(crate) body: UnsafeCell<Body<P>>,
    /// The body's monitor and link counts, packed (`links::pack_counts`),
    /// for the process dump: stored Relaxed by the holder when they change,
    /// loaded Relaxed by the dump (a figure, not a synchronisation point:
    /// it may lag by a step, and is 0 for a process that never used links).
    pub(crate) link_counts: AtomicU64,
    /// When the process was last made Ready, a fine-clock reading
    /// (`CoarseClock::fine_now`), for the schedule-latency histogram: stored
    /// only if latency figures are recorded, by whoever made it Ready (its
    /// creator, a notifier, a terminator, or its worker at the end of a
    /// step), before the queue push that hands the process to a worker, so
    /// the worker's pop (Acquire) makes it visible. A figure: it guards
    /// nothing.
    pub(crate) ready_at: AtomicU64,
    /// Pending timers of the process (`Body::timers.len()`), for the
    /// process dump: published by the holder, zeroed before the slot is
    /// freed, read by the dump; see [`TimerCount`] (`figures.rs`).
    pub(crate) timers: TimerCount,
    /// Whether the slot's process may have a registered name
    /// (`sched/registry/`, `name_flag.rs`): written under the registry's lock, read by the
    /// process's close after its `complete`, so that a process never named
    /// ends on the path it would take without a registry (one branch).
    /// Last, in the padding after `timers`: so a small process's slot
    /// stays three lines.
    pub(crate) named: NameFlag,
}

// SAFETY: `body` is only accessed by the one thread that holds the process
// (the state word's Running, or creation before the first Release that
// queues it), so sharing `&Slot` is sound when the process and its events
// can move between threads (`P: Send`, which `Process` requires, and
// `Event<P>`'s payloads are `Send`).
unsafe impl<P: Process> Sync for Slot<P> {}
// SAFETY: as above: every field is either atomic or owned by one thread at a
// time.
unsafe impl<P: Process> Send for Slot<P> {}

impl<P: Process> Slot<P> {
    fn new(index: u32) -> Self {
        Slot {
            state: StateWord::new(),
            events: Mailbox::new(),
            counts: QueueCounts::new(),
            bound: Bound::new(),
            body: UnsafeCell::new(Body::empty()),
            figures: Figures::new(),
            next_free: AtomicU32::new(0),
            index,
            named: NameFlag::new(),
            link_counts: AtomicU64::new(0),
            timers: TimerCount::new(),
            ready_at: AtomicU64::new(0),
        }
    }

    /// The PID of the slot's current process.
    pub(crate) fn pid(&self) -> Pid {
        Pid::new(self.index, self.state.load().generation())
    }

    /// The body.
    ///
    /// The rule for callers: **no reference to a body outlives the hand-off.**
    /// Take `body()` in a block (or a helper that returns) which ends before
    /// the transition that gives the process away (`end_step`, `remove`,
    /// `activate`), and never pass a `&mut Body` as an argument to a function
    /// that makes that transition. Once the process is handed over, a send
    /// can make it Ready and another worker call `body()` while the first
    /// frame is still running; a `&mut` function argument is *protected*
    /// for the whole call under Stacked Borrows (and Tree Borrows), so even
    /// one that is no longer used is undefined behaviour then (Miri: "not
    /// granting access … strongly protected"). `tests/sched_handoff.rs`
    /// runs that hand-off under Miri.
    ///
    /// # Safety
    ///
    /// The caller must hold the process: it is the worker that moved it to
    /// Running (until its `end_step`, or its `remove` after `complete`), or
    /// its creator before it was first queued; and it must not keep the
    /// reference past its next transition of the state word that lets
    /// another thread take the process (see above).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn body(&self) -> &mut Body<P> {
        // SAFETY: the caller holds the process, so no one else touches the
        // body until the caller's next Release transition of the state word.
        unsafe { &mut *self.body.get() }
    }

    /// The slot's index in the table.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Records a lifecycle transition at `now` (coarse clock). By the party
    /// that made the transition. ([`Figures::stamp`].)
    #[inline]
    pub(crate) fn stamp(&self, now: u64) {
        self.figures.stamp(now);
    }

    /// [`stamp`](Self::stamp)s a transition to Ready, and, if latency
    /// figures are recorded, its fine time ([`ready_at`](Self::ready_at)).
    /// By the party that made it Ready, before it queues the process.
    #[inline]
    pub(crate) fn stamp_ready(&self, clock: &CoarseClock) {
        self.figures.stamp(clock.now());
        if clock.fine() {
            self.mark_ready(clock.fine_now());
        }
    }

    /// Records that the process became Ready at `at` (fine clock).
    #[inline]
    pub(crate) fn mark_ready(&self, at: u64) {
        // Relaxed: a figure; the queue push that follows publishes it to
        // the worker that pops the process (field docs).
        self.ready_at.store(at, Ordering::Relaxed);
    }

    /// When the process was last made Ready (fine clock; 0 if never
    /// stamped). By the worker about to step it.
    #[inline]
    pub(crate) fn ready_at(&self) -> u64 {
        // Relaxed: ordered by the queue pop that handed us the process.
        self.ready_at.load(Ordering::Relaxed)
    }

    /// Counts a step. Only the worker holding the process calls this.
    /// ([`Figures::count_step`].)
    #[inline]
    pub(crate) fn count_step(&self) {
        self.figures.count_step();
    }

    /// Counts an event about to be pushed into `events`. Called by
    /// `Shared::deliver` only, before the push. ([`QueueCounts::count_push`].)
    #[inline]
    pub(crate) fn count_push(&self) {
        self.counts.count_push();
    }

    /// Records that the caller, holding the process, took `n` events out of
    /// `events`, once per drain. ([`QueueCounts::count_drained`].)
    #[inline]
    pub(crate) fn count_drained(&self, n: u32) {
        self.counts.count_drained(n);
    }
}

/// A pointer to a slot, as carried by run queues.
pub(crate) struct Task<P: Process>(NonNull<Slot<P>>);

impl<P: Process> Task<P> {
    pub(crate) fn new(slot: &Slot<P>) -> Self {
        Task(NonNull::from(slot))
    }

    /// The slot. The reference is not tied to the `Task` (which is only a
    /// pointer): it is valid as long as the table, which every holder of a
    /// `Task` keeps alive through its `Arc<Shared>`.
    pub(crate) fn slot<'a>(&self) -> &'a Slot<P> {
        // SAFETY: slots are never freed before the table, and the table
        // outlives every run queue and worker (they all hold the `Shared`
        // that owns it; its queues drop before it).
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `Task` is a pointer to a `Sync` slot; moving it between threads
// moves the right to run the process (exactly one `Task` exists per Ready
// process).
unsafe impl<P: Process> Send for Task<P> {}

// SAFETY: `into_raw`/`from_raw` are the identity on a non-null pointer, and a
// `Task` owns nothing, so a lost or duplicated raw value cannot free twice.
unsafe impl<P: Process> Pointer for Task<P> {
    fn into_raw(self) -> NonNull<()> {
        self.0.cast()
    }

    unsafe fn from_raw(p: NonNull<()>) -> Self {
        Task(p.cast())
    }
}

/// Why the table could not hand out a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `max_live` processes are live.
    AtCapacity,
}

/// How many freed slots a worker hands to the shared free list at once.
const FREE_BATCH: usize = 32;

/// A worker's private stack of freed slot indices: its own spawns reuse
/// them (cache-hot, no atomics); beyond `2 * FREE_BATCH` it gives the oldest
/// `FREE_BATCH` to the shared free list with one CAS.
#[derive(Default)]
pub(crate) struct FreeCache(Vec<u32>);

/// The process table.
pub(crate) struct Table<P: Process> {
    pages: Pages<Slot<P>>,
    /// The free slots (a Treiber stack through `Slot::next_free`).
    free: FreeList,
    /// The next index never handed out.
    fresh: AtomicU32,
    /// Processes ever created (RMW by creating threads).
    created: CachePadded<AtomicU64>,
    /// Processes closed, per worker (each written by its worker only), so
    /// that closing touches no shared line. live = created - sum(closed).
    closed: Box<[CachePadded<AtomicU64>]>,
    max_live: usize,
    /// Slots retired at their last generation, never reused.
    retired: AtomicU64,
    /// The first key of this node's PIDs (`NodeId::base`): a slot's key
    /// is `base + i` for the `i`th slot of the pages, so that a foreign
    /// PID's key lands on a page no slot is in (`pid.rs`).
    base: u32,
}

impl<P: Process> Table<P> {
    pub(crate) fn new(workers: usize, max_live: Option<usize>, node: NodeId) -> Self {
        Table {
            base: node.base(),
            pages: Pages::new(),
            free: FreeList::new(),
            fresh: AtomicU32::new(0),
            created: CachePadded(AtomicU64::new(0)),
            closed: (0..workers)
                .map(|_| CachePadded(AtomicU64::new(0)))
                .collect(),
            // A node's indices are below `LOCAL_SLOTS` (`pid.rs`).
            max_live: max_live.unwrap_or(usize::MAX).min(LOCAL_SLOTS as usize),
            retired: AtomicU64::new(0),
        }
    }

    /// Slots retired at their last generation (see `LAST_GENERATION`).
    pub(crate) fn retired(&self) -> u64 {
        // Relaxed: a statistic.
        self.retired.load(Ordering::Relaxed)
    }

    /// Moves the free slot `index` to `generation`, so that a test reaches
    /// the generation limit without 2^32 reuses.
    #[cfg(test)]
    pub(crate) fn age_free_slot(&self, index: u32, generation: u32) {
        let slot = self.get(index).expect("the slot exists");
        slot.state.age_free(generation);
    }

    /// The slot of key `key` (a PID's index with its node, `Pid::key`),
    /// if its page exists. A key of another node wraps past the node's
    /// last page (`LOCAL_SLOTS`), whose pages are never made: `None`.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&Slot<P>> {
        self.pages.get(key.wrapping_sub(self.base))
    }

    /// The `index`th slot of the pages, allocating its page if needed.
    fn page(&self, index: u32) -> &Slot<P> {
        let base = self.base;
        self.pages.page(index, |i| Slot::new(base | i))
    }

    /// Takes a free slot and makes it Ready with `occupant` in it; returns
    /// the slot (its PID is `slot.pid()`). The caller must queue it.
    ///
    /// `local` is the calling worker's cache of freed slots, if any; `now`
    /// the coarse clock, for the slot's stamp.
    pub(crate) fn insert(
        &self,
        occupant: Occupant<P>,
        limit: u32,
        local: Option<&mut FreeCache>,
        now: u64,
    ) -> Result<&Slot<P>, (Occupant<P>, Full)> {
        // Relaxed: a count, not a synchronisation point. Each creator's
        // increment reserves a place, so the limit holds under races.
        let created = self.created.fetch_add(1, Ordering::Relaxed);
        if self.max_live != usize::MAX
            && created.saturating_sub(self.closed()) >= self.max_live as u64
        {
            // Relaxed: gives back the place reserved above.
            self.created.fetch_sub(1, Ordering::Relaxed);
            return Err((occupant, Full::AtCapacity));
        }
        let slot = self.take_free(local);
        self.fill(slot, occupant, limit, now);
        if slot.state.try_activate().is_none() {
            return Ok(self.insert_elsewhere(slot, limit, now));
        }
        Ok(slot)
    }

    /// A free slot for `insert`: from the worker's cache, else the shared
    /// free list, else a fresh one.
    #[inline]
    fn take_free(&self, local: Option<&mut FreeCache>) -> &Slot<P> {
        let cached = local
            .and_then(|cache| cache.0.pop())
            .and_then(|i| self.get(i));
        match cached.or_else(|| self.pop_free()) {
            Some(slot) => slot,
            None => self.fresh_slot(),
        }
    }

    /// A slot never used yet.
    fn fresh_slot(&self) -> &Slot<P> {
        // Relaxed: only uniqueness matters; the page (published with
        // Release in `page`) carries the slot's contents.
        let index = self.fresh.fetch_add(1, Ordering::Relaxed);
        assert!(
            index < LOCAL_SLOTS,
            "stepsched: process table index space exhausted"
        );
        self.page(index)
    }

    /// Puts `occupant` in the body of `slot`, a free slot the caller took
    /// (no one else holds its body until `try_activate` publishes it: a
    /// late sender sweeping its mailbox touches nothing else), with its
    /// figures reset and its mailbox's limit.
    #[inline(always)]
    fn fill(&self, slot: &Slot<P>, occupant: Occupant<P>, limit: u32, now: u64) {
        {
            // SAFETY: as above; the borrow ends with this block, before the
            // activation.
            let body = unsafe { slot.body() };
            body.pending.clear();
            match occupant {
                Occupant::Process(process, joiner) => {
                    body.process = Some(process);
                    body.joiner = joiner;
                }
                Occupant::Outside(inbox) => body.extra_mut().outside = Some(inbox),
            }
        }
        // Before the activation, so a dump that sees the new process sees
        // the reset, not its predecessor's figures (`figures.rs`).
        slot.figures.reset(now);
        slot.bound.set_limit(limit);
    }

    /// `insert`'s way round a slot a late sender is sweeping
    /// (`Shared::sweep`): the occupant is taken back out of it, the slot
    /// goes back to the free list, and a fresh slot, which no PID ever
    /// named, takes the occupant instead.
    #[cold]
    #[inline(never)]
    fn insert_elsewhere(&self, swept: &Slot<P>, limit: u32, now: u64) -> &Slot<P> {
        let occupant = {
            // SAFETY: still Free and ours, as in `fill`; the borrow ends
            // with this block.
            let body = unsafe { swept.body() };
            match body.process.take() {
                Some(process) => Occupant::Process(process, body.joiner.take()),
                None => {
                    let extra =
                        (body.extra.take()).expect("a receiver's inbox is in its extra part");
                    Occupant::Outside(extra.outside.expect("a receiver's inbox"))
                }
            }
        };
        self.push_free_chain(&[swept.index]);
        let slot = self.fresh_slot();
        self.fill(slot, occupant, limit, now);
        slot.state
            .try_activate()
            .expect("a fresh slot is never swept");
        slot
    }

    /// Returns a slot whose process has completed and been drained, on
    /// worker `worker`, into its cache `local`.
    ///
    /// # Errors
    ///
    /// [`Late`] if an event was pushed since the mailbox's drain (a notify
    /// marked the word): nothing is done, and the caller drains it again
    /// and retries.
    pub(crate) fn remove(
        &self,
        slot: &Slot<P>,
        worker: usize,
        local: &mut FreeCache,
    ) -> Result<(), Late> {
        if slot.state.free()? < LAST_GENERATION {
            local.0.push(slot.index);
        } else {
            // Retired: reusing it would wrap the generation back to ones
            // stale PIDs still carry (see `LAST_GENERATION`). Counted, so
            // that the process dump and the tests can see it.
            // Relaxed: a statistic.
            self.retired.fetch_add(1, Ordering::Relaxed);
        }
        if local.0.len() >= 2 * FREE_BATCH {
            let batch: Vec<u32> = local.0.drain(..FREE_BATCH).collect();
            self.push_free_chain(&batch);
        }
        let closed = &self.closed[worker];
        // Relaxed load: this worker is the only writer. Release store: pairs
        // with the Acquire loads in `closed`, so that whoever sees this close
        // counted also sees what the closing worker did before it, in
        // particular its `Shared::forced` increment (`close` in
        // worker/step.rs): `shutdown` reads `forced` after `live()` reached
        // zero. With a Relaxed store Miri's weak-memory emulation had
        // `shutdown` see every close but only some of the forced ones,
        // reporting processes closed by force as completed (the test:
        // `whoever_sees_a_close_counted_sees_what_the_closer_did_before`).
        closed.store(closed.load(Ordering::Relaxed) + 1, Ordering::Release);
        Ok(())
    }

    /// Returns a slot that was made Ready by `insert` and then withdrawn by
    /// its creator before it was ever queued (shutdown began): it is
    /// Complete. Gives back its place in the live count, as if it had never
    /// been created, and leaves the slot out of use for good
    /// ([`StateWord::free_withdrawn`]): anything in its mailbox (an event
    /// from a sender that guessed the PID, or a late one) is reported by
    /// the drains of shutdown and `Drop` (`Shared::report_stranded`), which
    /// no sweep may race.
    ///
    /// [`StateWord::free_withdrawn`]: crate::process::state::StateWord::free_withdrawn
    pub(crate) fn withdraw(&self, slot: &Slot<P>) {
        slot.state.free_withdrawn();
        // Relaxed: a count; gives back the place `insert` reserved.
        self.created.fetch_sub(1, Ordering::Relaxed);
    }

    /// Processes closed so far; what each closing worker did before a
    /// close counted here happens-before the return.
    pub(crate) fn closed(&self) -> u64 {
        // Acquire: pairs with the Release store in `remove` (see there).
        // Otherwise a count (and a limit that only errs towards room).
        self.closed.iter().map(|c| c.load(Ordering::Acquire)).sum()
    }

    /// The most live processes allowed.
    pub(crate) fn max_live(&self) -> usize {
        self.max_live
    }

    /// The number of live processes.
    pub(crate) fn live(&self) -> usize {
        // Read `closed` first: both only grow, so this never underflows.
        let closed = self.closed();
        // Relaxed: a count (see `closed`).
        self.created.load(Ordering::Relaxed).saturating_sub(closed) as usize
    }

    /// Every slot handed out so far (free or not), in index order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = &Slot<P>> + '_ {
        // Relaxed: only bounds the scan; `get` acquires each page itself.
        let end = self.fresh.load(Ordering::Relaxed).min(LOCAL_SLOTS);
        (0..end).filter_map(move |i| self.get(self.base | i))
    }

    fn pop_free(&self) -> Option<&Slot<P>> {
        let next = |i| &self.get(i).expect("free slots have pages").next_free;
        let index = self.free.pop(next)?;
        self.get(index)
    }

    /// Pushes the slots `indices` (all free, owned by the caller) as one
    /// chain, with one successful CAS.
    fn push_free_chain(&self, indices: &[u32]) {
        let next = |i| &self.get(i).expect("free slots have pages").next_free;
        self.free.push_chain(indices, next);
    }
}

#[cfg(test)]
pub(crate) mod tests;
