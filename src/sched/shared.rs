//! State shared by the [`Scheduler`](super::Scheduler) handle, its workers
//! and every [`Completer`](super::Completer): the process table, the run
//! queues, the idle protocol, handlers (and the blocking pool) and hooks,
//! and the delivery path.

use super::blocking::{Pool, PoolConfig};
use super::bound::Room;
use super::clock::CoarseClock;
use super::depot::Depot;
use super::error::TerminateError;
use super::global::GlobalQueue;
use super::handler::Handlers;
use super::idle::Idle;
use super::links::Signal;
use super::stats::Counters;
use super::table::{Envelope, FreeCache, Item, Occupant, Slot, Table, Task};
use super::timer::Firing;
use super::trace::{Kind as TraceKind, Tracing};
use super::watch::StepWatch;
use crate::deque::Stealer;
use crate::mpsc::NodeCache;
use crate::padded::CachePadded;
use crate::process::state::{Lifecycle, Notify, Wake};
use crate::process::{
    panic_message, Event, Pid, Process, ProcessError, SpawnError, SpawnOptions, Spawner,
};
use crate::sync::{AtomicU64, Ordering};
use core::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::join::Joiner;

pub(crate) use super::hooks::Hooks;
pub(crate) use super::phase;
use super::phase::Phase;

/// Tuning, fixed at build time.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) workers: usize,
    pub(crate) global_queue_interval: u32,
    pub(crate) spin_tight: u32,
    pub(crate) park_after: u32,
    /// Trace events per worker ring; `None`: tracing off.
    pub(crate) trace: Option<usize>,
    /// Whether a long-step monitor runs (workers then publish each step).
    pub(crate) monitored: bool,
    /// Whether deliveries and drains are counted per slot, for the process
    /// dump's queued figure ([`Builder::count_queued_events`](super::Builder::count_queued_events)).
    pub(crate) count_queued: bool,
    /// The most events handed to one step ([`Builder::max_events_per_step`](super::Builder::max_events_per_step)).
    pub(crate) events_per_step: usize,
    /// The default mailbox capacity (0: unbounded;
    /// [`Builder::mailbox_capacity`](super::Builder::mailbox_capacity)).
    pub(crate) mailbox_capacity: u32,
    /// The blocking pool's settings.
    pub(crate) blocking: PoolConfig,
}

/// What a worker exposes to the others.
pub(crate) struct Remote<P: Process> {
    pub(crate) stealer: Stealer<Task<P>>,
    /// Processes woken from outside with affinity to this worker. Its token
    /// lets other workers take from it too, so a worker stuck in a long step
    /// does not hold them (DESIGN.md trap 6).
    pub(crate) inject: GlobalQueue<Task<P>>,
    pub(crate) counters: Counters,
    /// The worker's current step, for the long-step monitor.
    pub(crate) watch: CachePadded<StepWatch>,
}

/// Why an event was refused before it was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    NoSuchProcess,
    Finished,
    ShuttingDown,
    /// The process's bounded mailbox is full.
    Full,
}

impl Refusal {
    pub(crate) fn is_shutdown(self) -> bool {
        self == Refusal::ShuttingDown
    }
}

pub(crate) struct Shared<P: Process> {
    pub(crate) remotes: Box<[Remote<P>]>,
    pub(crate) global: GlobalQueue<Task<P>>,
    pub(crate) idle: Idle,
    pub(crate) handlers: Handlers<P>,
    /// Runs blocking handlers (`blocking.rs`). Its threads hold this `Arc`,
    /// not the shared state.
    pub(crate) blocking: std::sync::Arc<Pool<P>>,
    pub(crate) hooks: Hooks<P>,
    /// Outside senders waiting for room in a bounded mailbox (`bound.rs`).
    pub(crate) room: Room,
    /// Free mailbox nodes for senders outside the workers (`depot.rs`).
    /// Padded: outside senders write its line on every send, and `phase`
    /// is read on every delivery.
    pub(crate) depot: CachePadded<Depot<Envelope<P>>>,
    pub(crate) config: Config,
    pub(crate) phase: Phase,
    pub(crate) submitted: AtomicU64,
    pub(crate) undelivered: AtomicU64,
    pub(crate) unknown_tags: AtomicU64,
    pub(crate) forced: AtomicU64,
    /// Internal panics contained on the workers (`worker/contain.rs`).
    pub(crate) worker_panics: AtomicU64,
    /// The thread waiting in `shutdown` for the processes to end.
    pub(crate) stopping: super::stopping::Stopping,
    /// Stamps process slots at each transition (see `clock.rs`).
    pub(crate) clock: CoarseClock,
    /// The execution tracer's shared part, if tracing is on.
    pub(crate) trace: Option<Tracing>,
    /// The clock and one timing wheel per worker (`timer/`).
    pub(crate) timers: super::timer::Timers<P::Message>,
    /// Last: dropped after every queue that points into it.
    pub(crate) table: Table<P>,
}

impl<P: Process> Shared<P> {
    pub(crate) fn phase(&self) -> usize {
        self.phase.get()
    }

    /// Moves the phase forward (see `phase.rs`: the shutdown half of the
    /// pair that keeps a process created during shutdown from being lost).
    pub(crate) fn set_phase(&self, phase: usize) {
        self.phase.advance(phase);
    }

    /// Initialises `process` and puts it in the table (Ready); the caller
    /// must queue the returned slot.
    pub(crate) fn create(
        &self,
        mut process: P,
        method: &str,
        input: P::Input,
        joiner: Option<Joiner<P>>,
        options: SpawnOptions,
        local: Option<&mut FreeCache>,
    ) -> Result<&Slot<P>, SpawnError<P>> {
        if self.phase() != phase::RUNNING {
            return Err(SpawnError::ShuttingDown(process));
        }
        if let Some(why) = options.refused() {
            return Err(SpawnError::InvalidOptions(process, why));
        }
        // A first, cheap look, so that a process we would refuse is not
        // initialised; `insert` enforces the limit exactly.
        let max = self.table.max_live();
        if max != usize::MAX && self.table.live() >= max {
            return Err(SpawnError::AtCapacity(process));
        }
        match catch_unwind(AssertUnwindSafe(|| process.init(method, input))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(SpawnError::Init(process, ProcessError::Failed(e))),
            Err(panic) => {
                let message = panic_message(&*panic);
                return Err(SpawnError::Init(process, ProcessError::Panicked(message)));
            }
        }
        let occupant = Occupant::Process(process, joiner);
        let limit = options.capacity_or(self.config.mailbox_capacity);
        let slot = match self.table.insert(occupant, limit, local, self.clock.now()) {
            Ok(slot) => slot,
            Err((Occupant::Process(process, _), _full)) => {
                return Err(SpawnError::AtCapacity(process))
            }
            Err((Occupant::Outside(_), _)) => unreachable!("inserted a process"),
        };
        // The creator half of the Dekker pair in `phase.rs`: either this
        // sees the shutdown, and we withdraw the process, or shutdown's scan
        // sees the process Ready (and cancels it) and its live count
        // includes it. Without it, a shutdown that ran during `init` could
        // report a clean stop and join its workers before we queue a
        // process nobody will run (issue 9, defect 2).
        if !self.phase.admits() {
            let process = self.withdraw(slot).expect("a created process has its body");
            return Err(SpawnError::ShuttingDown(process));
        }
        Ok(slot)
    }

    /// Takes back a process that `create` made Ready but never queued,
    /// because shutdown began meanwhile: frees its slot and returns it
    /// (initialised). The creator still holds the process (nobody else can
    /// start it: it is in no run queue), so it may take the body.
    ///
    /// It never pops the mailbox: what is in it (shutdown's cancel, a guessed
    /// PID's event, events stranded by the slot's last process) is left to
    /// [`report_stranded`](Self::report_stranded) (shutdown's, or `Drop`'s;
    /// the slot is never reused past RUNNING). A pop here could race
    /// shutdown's: nothing orders a withdrawal before its drain (loom:
    /// `loom-tests/tests/drain.rs`; Miri: `scheduler/tests.rs`).
    pub(crate) fn withdraw(&self, slot: &Slot<P>) -> Option<P> {
        // Ready -> Running -> Complete: the only way to Complete, and it
        // makes later notifiers see `Finished`.
        let _ = slot.state.start();
        slot.state.complete();
        // SAFETY: we hold the process (Running, queued nowhere); the
        // reference ends before `Table::withdraw` frees the slot.
        let process = unsafe { slot.body() }.process.take();
        // SAFETY: as above; no other party holds the body.
        let body = unsafe { slot.body() };
        body.pending.clear();
        drop(body.joiner.take());
        drop(body.extra.take());
        self.table.withdraw(slot);
        process
    }

    /// Queues `event` for `pid` and reports whether the process must now be
    /// scheduled (by the caller). Refuses, handing the event back, if the
    /// process is known to be gone before the event is queued.
    ///
    /// `nodes` is the calling worker's node cache, if any: a delivery from a
    /// step then allocates nothing in steady state.
    #[inline]
    pub(crate) fn deliver(
        &self,
        pid: Pid,
        event: Event<P>,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> Result<Option<Task<P>>, (Refusal, Event<P>)> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            Err(why) => return Err((why, event)),
        };
        // A message to a bounded mailbox takes a place first (`bound.rs`);
        // an unbounded one (limit 0) pays this load and branch only.
        let counted = matches!(kind, Wake::Message) && {
            let limit = slot.bound.limit();
            if limit != 0 && !slot.bound.try_reserve(limit) {
                return Err((Refusal::Full, event));
            }
            limit != 0
        };
        Ok(self
            .push(slot, pid, Item::Event(event), counted, kind, nodes)
            .0)
    }

    /// [`deliver`](Self::deliver) for a signal of the monitors and links
    /// (`links.rs`). `Err` if it was refused, or if it was queued but its
    /// notify found the process ended (the push raced the end: the closing
    /// worker may or may not have drained it): the caller answers it
    /// (`links::unanswered`), and duplicates are dropped by the receiver.
    /// Otherwise the process will see it in a step or in its `close`.
    pub(crate) fn deliver_signal(
        &self,
        pid: Pid,
        signal: Signal,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> Result<Option<Task<P>>, Option<Signal>> {
        let slot = match self.admit(pid) {
            Ok(slot) => slot,
            Err(_) => return Err(Some(signal)),
        };
        let answer = signal.owed();
        match self.push(slot, pid, Item::Signal(signal), false, kind, nodes) {
            (task, true) => Ok(task),
            (_, false) => Err(answer),
        }
    }

    /// For a worker's signal to `pid`: its slot, if the process waits and
    /// is now claimed for the caller ([`StateWord::claim`]: Ready, the
    /// caller's to queue, nothing pushed), else `None` (then
    /// [`deliver_signal`](Self::deliver_signal)).
    ///
    /// Not through [`admit`](Self::admit): the claim checks the generation
    /// and the lifecycle itself, and its CAS alone acquires the body (an
    /// Acquire load before it would hide a weakened CAS from the model).
    ///
    /// [`StateWord::claim`]: crate::process::state::StateWord::claim
    #[inline]
    pub(crate) fn claim(&self, pid: Pid, kind: Wake) -> Option<&Slot<P>> {
        if self.phase() == phase::EXITING {
            // Refused by `deliver_signal`, which answers it.
            return None;
        }
        let slot = self.table.get(pid.index())?;
        if !slot.state.claim(pid.generation(), kind) {
            return None;
        }
        slot.stamp(self.clock.now());
        Some(slot)
    }

    /// The first half of [`deliver_signal`](Self::deliver_signal), for a
    /// step's many requests (`send_requests`): `signal` pushed into `pid`'s
    /// mailbox, not yet notified; the caller notifies each process it
    /// pushed to once, after all of them ([`notify_signals`]). `Ok` with a
    /// clone of the request if it may be owed an answer (`Monitor`, `Link`:
    /// if that notify finds the process ended); `Err` with the signal if
    /// it was refused, to answer at once.
    ///
    /// [`notify_signals`]: Self::notify_signals
    pub(crate) fn push_signal(
        &self,
        pid: Pid,
        signal: Signal,
        nodes: &mut NodeCache<Envelope<P>>,
    ) -> Result<Option<Signal>, Signal> {
        let Ok(slot) = self.admit(pid) else {
            return Err(signal);
        };
        let owed = signal.owed();
        let item = Item::Signal(signal);
        self.enqueue(slot, pid, item, false, Wake::Message, Some(nodes));
        Ok(owed)
    }

    /// The second half: one notify for every signal
    /// [`push_signal`](Self::push_signal) pushed to `pid` before it, which
    /// wakes the process once for them all. The guarantee is that notify's
    /// (`links.rs`): if it finds the process not Complete, each signal
    /// pushed before it is seen by a later step or drained by `close`.
    /// `Err` if it found the process ended (the pushes raced the end): the
    /// caller answers the requests owed an answer.
    pub(crate) fn notify_signals(&self, pid: Pid) -> Result<Option<Task<P>>, ()> {
        let slot = self
            .table
            .get(pid.index())
            .expect("pushed to, so it has a slot");
        match self.notify_pushed(slot, pid, Wake::Message) {
            (task, true) => Ok(task),
            (_, false) => Err(()),
        }
    }

    /// [`deliver`](Self::deliver) for a timer's firing (`timer/mod.rs`),
    /// which wakes like a completion. Refused, it is dropped: its process
    /// ended, and nobody waits for it. The task to queue, if any.
    pub(crate) fn deliver_timer(
        &self,
        pid: Pid,
        firing: Firing,
        nodes: &mut NodeCache<Envelope<P>>,
    ) -> Option<Task<P>> {
        let slot = self.admit(pid).ok()?;
        let item = Item::Timer(firing);
        (self.push(slot, pid, item, false, Wake::Completion, Some(nodes))).0
    }

    /// The slot of `pid` if it may still take an event.
    #[inline]
    fn admit(&self, pid: Pid) -> Result<&Slot<P>, Refusal> {
        if self.phase() == phase::EXITING {
            return Err(Refusal::ShuttingDown);
        }
        let Some(slot) = self.table.get(pid.index()) else {
            return Err(Refusal::NoSuchProcess);
        };
        let now = slot.state.load();
        if now.generation() != pid.generation() {
            // A generation the slot has passed is a finished process; one it
            // has not reached was never issued.
            // Generations only grow (a slot is retired before it wraps).
            let behind = now.generation() > pid.generation();
            return Err(if behind {
                Refusal::Finished
            } else {
                Refusal::NoSuchProcess
            });
        }
        match now.lifecycle() {
            Lifecycle::Free => Err(Refusal::NoSuchProcess),
            Lifecycle::Complete => Err(Refusal::Finished),
            _ => Ok(slot),
        }
    }

    /// Pushes `item` into `slot`'s mailbox and notifies the process: the
    /// task to queue if the notify made it Ready, and whether the process
    /// was still live at the notify (else the push raced its end).
    /// `counted`: the item holds a place of a bounded mailbox (`bound.rs`).
    #[inline]
    fn push(
        &self,
        slot: &Slot<P>,
        pid: Pid,
        item: Item<P>,
        counted: bool,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) -> (Option<Task<P>>, bool) {
        self.enqueue(slot, pid, item, counted, kind, nodes);
        self.notify_pushed(slot, pid, kind)
    }

    /// The first half of [`push`](Self::push): `item` into the mailbox,
    /// with no notify.
    #[inline]
    fn enqueue(
        &self,
        slot: &Slot<P>,
        pid: Pid,
        item: Item<P>,
        counted: bool,
        kind: Wake,
        nodes: Option<&mut NodeCache<Envelope<P>>>,
    ) {
        let envelope = Envelope {
            generation: pid.generation(),
            counted,
            item,
        };
        // Counted before the push, so that no pop can come before its count
        // (the process dump's queued figure; see `QueueCounts::queued` in `figures.rs`). Only if
        // asked for: it is an RMW per event.
        if self.config.count_queued {
            slot.count_push();
        }
        match nodes {
            Some(nodes) => slot.events.push_with(envelope, nodes),
            // A message from a thread with no node cache: `Scheduler::send`
            // and its kin, from outside the workers (`depot.rs`).
            None if matches!(kind, Wake::Message) => self.push_outside(slot, envelope),
            // A completion or a cancel, from a handler (often on a worker,
            // where the allocator's thread cache makes a node cheap, and a
            // shared depot would not be) or from shutdown.
            None => slot.events.push(envelope),
        }
    }

    /// The second half of [`push`](Self::push): notifies the process of
    /// what was pushed.
    #[inline]
    fn notify_pushed(&self, slot: &Slot<P>, pid: Pid, kind: Wake) -> (Option<Task<P>>, bool) {
        match slot.state.notify(pid.generation(), kind) {
            Notify::Schedule => {
                slot.stamp(self.clock.now());
                (Some(Task::new(slot)), true)
            }
            Notify::Nothing => (None, true),
            // Finished or Stale now: the process ended after our check. The
            // item is in its queue; the worker that closes the process (or
            // the next one to use the slot) reports it as undelivered.
            Notify::Finished | Notify::Stale => (None, false),
        }
    }

    /// Pushes `envelope` from a thread with no node cache, in a node from
    /// the depot if it can give one at once, else in a new one.
    fn push_outside(&self, slot: &Slot<P>, envelope: Envelope<P>) {
        slot.events.push_with(envelope, &mut self.depot.take_one());
    }

    /// [`Shared::deliver`] from a thread that is not running this
    /// process's step: a woken process goes to its last worker's inject
    /// queue. Returns whether the event woke the process.
    pub(crate) fn deliver_remote(
        &self,
        pid: Pid,
        event: Event<P>,
        kind: Wake,
    ) -> Result<bool, (Refusal, Event<P>)> {
        match self.deliver(pid, event, kind, None)? {
            Some(task) => {
                self.schedule_remote(task);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// [`Scheduler::terminate`](super::Scheduler::terminate), for it and
    /// for a dropped outside receiver.
    pub(crate) fn terminate(&self, pid: Pid) -> Result<(), TerminateError> {
        let slot = self
            .table
            .get(pid.index())
            .ok_or(TerminateError::NoSuchProcess)?;
        match slot.state.terminate(pid.generation()) {
            Notify::Schedule => {
                slot.stamp(self.clock.now());
                self.schedule_remote(Task::new(slot));
                Ok(())
            }
            Notify::Nothing => Ok(()),
            Notify::Finished => Err(TerminateError::Finished),
            Notify::Stale => {
                let current = slot.state.load().generation();
                // Generations only grow (see `LAST_GENERATION`).
                if current > pid.generation() {
                    Err(TerminateError::Finished)
                } else {
                    Err(TerminateError::NoSuchProcess)
                }
            }
        }
    }

    /// Queues a Ready process from outside the workers.
    pub(crate) fn schedule_remote(&self, task: Task<P>) {
        // An affinity hint (a Relaxed load); any worker may take it from there.
        let worker = task.slot().figures.last_worker_hint() % self.remotes.len();
        self.remotes[worker].inject.push(task);
        self.idle.notify_one();
    }

    /// Records an event of a thread that is not a worker in the trace's
    /// outside ring, if tracing is on (see `trace.rs`).
    pub(crate) fn trace_outside(&self, kind: TraceKind, pid: Pid, extra: u64, b: u32) {
        if let Some(tracing) = &self.trace {
            tracing.outside(kind, pid, extra, b);
        }
    }

    /// Records a shutdown phase in the trace, if tracing is on.
    pub(crate) fn trace_phase(&self, phase: &'static str) {
        if let Some(tracing) = &self.trace {
            tracing.phase(phase);
        }
    }

    /// Reports an event that reached no process.
    pub(crate) fn undelivered(&self, pid: Pid, event: Event<P>) {
        if super::timer::is_timer_made(&event) {
            // A timer's event that lost a race with the end of its process
            // or its cancel: nobody is waiting for it (`timer/mod.rs`).
            return;
        }
        // Relaxed: a statistic; the hook below carries the event itself.
        self.undelivered.fetch_add(1, Ordering::Relaxed);
        // Contained: a panicking hook must not unwind the worker out of
        // the drain or close that reports the event.
        self.hooks.undelivered(pid, event);
    }

    /// Reports every event still in a mailbox: events accepted just as their
    /// process ended and pushed after its worker drained it, and those of a
    /// withdrawn process (but the scheduler's own cancels). They are
    /// otherwise reported when the slot is next used. A sender that read the
    /// phase before EXITING may still push meanwhile; `Drop`'s drain reports
    /// that event (loom: `loom-tests/tests/drain.rs`).
    ///
    /// # Safety
    ///
    /// The caller must be every mailbox's only consumer (the workers joined;
    /// `withdraw` never pops). Deliveries may still be under way.
    pub(crate) unsafe fn report_stranded(&self) {
        for slot in self.table.slots() {
            let mut drained = 0;
            // SAFETY: the caller's contract makes us the only consumer.
            while let Some(envelope) = unsafe { slot.events.pop() } {
                drained += 1;
                // A signal now has no one left to answer (see `links.rs`).
                if let Item::Event(event) = envelope.item {
                    if !matches!(event, Event::Cancel(_)) {
                        let to = Pid::new(slot.pid().index(), envelope.generation);
                        self.undelivered(to, event);
                    }
                }
            }
            if self.config.count_queued {
                slot.count_drained(drained);
            }
        }
    }

    /// Whether any queue a worker could take from looks non-empty.
    pub(crate) fn has_visible_work(&self) -> bool {
        !self.global.is_empty()
            || self
                .remotes
                .iter()
                .any(|r| !r.inject.is_empty() || !r.stealer.is_empty())
    }
}

impl<P: Process> Drop for Shared<P> {
    /// Reports what is still in a mailbox when the last party lets go:
    /// an event accepted by a `deliver` that raced the end of the scheduler
    /// (it read the phase before shutdown set EXITING and pushed after
    /// shutdown's own drain) would otherwise be dropped silently with the
    /// table.
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no worker, sender or completer is left, so
        // this thread is every mailbox's only consumer.
        unsafe { self.report_stranded() };
        // Timers still pending (`shutdown` closes the wheels; this covers a
        // shutdown that left a stuck worker): their messages are reported.
        self.close_timers();
    }
}

/// Spawns children from a step, reusing the worker's freed slots.
pub(crate) struct LocalSpawner<'a, P: Process> {
    pub(crate) shared: &'a Shared<P>,
    pub(crate) free: &'a RefCell<FreeCache>,
}

impl<P: Process> Spawner<P> for LocalSpawner<'_, P> {
    fn spawn(
        &self,
        process: P,
        method: &str,
        input: P::Input,
        options: SpawnOptions,
    ) -> Result<Pid, SpawnError<P>> {
        let mut free = self.free.borrow_mut();
        self.shared
            .create(process, method, input, None, options, Some(&mut free))
            .map(Slot::pid)
    }
}
