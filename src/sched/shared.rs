//! State shared by the [`Scheduler`](crate::sched::Scheduler) handle, its
//! workers and every [`Completer`](crate::sched::Completer): the core's part
//! (`core/shared.rs`: the run queues, the idle protocol, the phase, the
//! process table) and each room's own, and the delivery path
//! (`shared/deliver.rs`), with what a push that raced its process's end
//! owes (`shared/late.rs`).

use crate::process::state::{Lifecycle, Notify};
use crate::process::{
    panic_message, Event, Name, Names, Pid, Process, ProcessError, RegisterError, SpawnError,
    SpawnOptions, Spawner,
};
use crate::sched::bound::Room;
use crate::sched::commands::blocking::PoolConfig;
use crate::sched::commands::handler::Commands;
use crate::sched::core::shared::Core;
use crate::sched::core::table::{FreeCache, Item, Occupant, Slot, Task};
use crate::sched::error::TerminateError;
use crate::sched::observe::kind_counts::{kind_of, KindCounts};
use crate::sched::observe::stats::Totals;
use crate::sched::observe::trace::{Kind as TraceKind, Tracing};
use crate::sched::outside::join_set::Joiner;
use crate::sched::shutdown::stopping::Stopping;
use crate::sched::timer::Timers;
use crate::sync::Ordering;
use core::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(crate) use crate::sched::core::phase;

mod deliver;
mod late;
pub(crate) use crate::sched::observe::hooks::Hooks;

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
    /// dump's queued figure ([`Builder::count_queued_events`](crate::sched::Builder::count_queued_events)).
    pub(crate) count_queued: bool,
    /// Whether workers time their steps and record latency histograms and
    /// busy time ([`Builder::record_latency`](crate::sched::Builder::record_latency)).
    pub(crate) record_latency: bool,
    /// Whether processes and steps are counted per kind
    /// ([`Builder::count_kinds`](crate::sched::Builder::count_kinds)).
    pub(crate) count_kinds: bool,
    /// The most events handed to one step ([`Builder::max_events_per_step`](crate::sched::Builder::max_events_per_step)).
    pub(crate) events_per_step: usize,
    /// The default mailbox capacity (0: unbounded;
    /// [`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity)).
    pub(crate) mailbox_capacity: u32,
    /// The blocking pool's settings.
    pub(crate) blocking: PoolConfig,
    /// The seed, if this scheduler is a simulation (`simulation/`).
    pub(crate) simulation: Option<u64>,
    /// The faults a simulation injects.
    pub(crate) faults: crate::sched::simulation::faults::Thresholds,
}

/// Why an event was refused before it was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    NoSuchProcess,
    Finished,
    ShuttingDown,
    /// The process's bounded mailbox is full.
    Full,
    /// The PID is of another node, and a transport carries it
    /// (`remote/`): the caller forwards what it delivers
    /// (`Shared::unsent`), or `deliver_signal` did.
    Remote,
}

impl Refusal {
    pub(crate) fn is_shutdown(self) -> bool {
        self == Refusal::ShuttingDown
    }
}

pub(crate) struct Shared<P: Process> {
    /// Tuning, fixed at build time.
    pub(crate) config: Config,
    /// Command handlers and the blocking pool (`commands/`).
    pub(crate) commands: Commands<P>,
    /// The embedder's hooks (`observe/hooks.rs`).
    pub(crate) hooks: Hooks<P>,
    /// The scheduler's own counts (`observe/stats.rs`).
    pub(crate) totals: Totals,
    /// The execution tracer's shared part, if tracing is on.
    pub(crate) trace: Option<Tracing>,
    /// Outside senders waiting for room in a bounded mailbox (`bound.rs`).
    pub(crate) room: Room,
    /// The clock and one timing wheel per worker (`timer/`).
    pub(crate) timers: Timers<P::Message>,
    /// The thread waiting in `shutdown` for the processes to end.
    pub(crate) stopping: Stopping,
    /// Registered names (`registry/`).
    pub(crate) registry: crate::sched::registry::Registry,
    /// Processes started and ended per kind, if counted
    /// (`observe/kind_counts.rs`).
    pub(crate) kinds: Option<KindCounts>,
    /// The transport, codec and watches across nodes, if the builder set
    /// a transport (`remote/`).
    pub(crate) remote: Option<crate::sched::remote::Remote<P>>,
    /// The run queues, the idle protocol, the phase and the process table
    /// (`core/`). Last: the table outlives every queue that points into it.
    pub(crate) core: Core<P>,
}

impl<P: Process> Shared<P> {
    /// Initialises `process` and puts it in the table (Ready); the caller
    /// must queue the returned slot.
    pub(crate) fn create(
        &self,
        mut process: P,
        method: &str,
        input: P::Input,
        joiner: Option<Joiner<P>>,
        options: &SpawnOptions,
        local: Option<&mut FreeCache>,
    ) -> Result<&Slot<P>, SpawnError<P>> {
        if self.core.phase() != phase::RUNNING {
            return Err(SpawnError::ShuttingDown(process));
        }
        if let Some(why) = options.refused() {
            return Err(SpawnError::InvalidOptions(process, why));
        }
        let name = options.name_ref();
        if let Some(name) = name {
            // A first look, so that a process refused for its name is not
            // initialised; `register` below decides.
            if let Some(holder) = self.whereis(name) {
                return Err(SpawnError::NameTaken { process, holder });
            }
        }
        // A first, cheap look, so that a process we would refuse is not
        // initialised; `insert` enforces the limit exactly.
        let max = self.core.table.max_live();
        if max != usize::MAX && self.core.table.live() >= max {
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
        // Only when counted: `kind_index` is user code (`kind_of` contains it).
        let kind = if self.kinds.is_some() {
            kind_of(&process)
        } else {
            0
        };
        let occupant = Occupant::Process(process, joiner);
        let limit = options.capacity_or(self.config.mailbox_capacity);
        let slot = match self
            .core
            .table
            .insert(occupant, limit, local, self.core.clock.now())
        {
            Ok(slot) => slot,
            Err((Occupant::Process(process, _), _full)) => {
                return Err(SpawnError::AtCapacity(process))
            }
            Err((Occupant::Outside(_), _)) => unreachable!("inserted a process"),
        };
        // Ready from now, for the schedule-latency histogram (if recorded).
        if self.core.clock.fine() {
            slot.mark_ready(self.core.clock.fine_now());
        }
        // The creator half of the Dekker pair in `phase.rs`: either this
        // sees the shutdown, and we withdraw the process, or shutdown's scan
        // sees the process Ready (and cancels it) and its live count
        // includes it. Without it, a shutdown that ran during `init` could
        // report a clean stop and join its workers before we queue a
        // process nobody will run (docs/ARCHITECTURE.md, trap 8: check, then
        // act, across a phase change).
        if !self.core.phase.admits() {
            let process = self.withdraw(slot).expect("a created process has its body");
            return Err(SpawnError::ShuttingDown(process));
        }
        if let Some(name) = name {
            // Before the process is queued: nothing can end it meanwhile
            // but a withdrawal, so the name is its from its first step.
            if let Err(refused) = self.register(name.clone(), slot.pid()) {
                let process = self.withdraw(slot).expect("a created process has its body");
                return Err(match refused {
                    RegisterError::NameTaken { holder, .. } => {
                        SpawnError::NameTaken { process, holder }
                    }
                    _ => SpawnError::ShuttingDown(process),
                });
            }
        }
        if let Some(kinds) = &self.kinds {
            kinds.started(kind);
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
        self.core.table.withdraw(slot);
        process
    }

    /// [`Scheduler::terminate`](crate::sched::Scheduler::terminate), for it and
    /// for a dropped outside receiver.
    pub(crate) fn terminate(&self, pid: Pid) -> Result<(), TerminateError> {
        let slot = self
            .core
            .table
            .get(pid.key())
            .ok_or(TerminateError::NoSuchProcess)?;
        match slot.state.terminate(pid.generation()) {
            Notify::Schedule => {
                slot.stamp_ready(&self.core.clock);
                self.core.schedule_remote(Task::new(slot));
                Ok(())
            }
            Notify::Nothing => Ok(()),
            Notify::Finished => Err(TerminateError::Finished),
            // `terminate` pushes nothing, so it has nothing to sweep.
            Notify::Stale | Notify::Sweep => {
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
        if crate::sched::timer::is_timer_made(&event) {
            // A timer's event that lost a race with the end of its process
            // or its cancel: nobody is waiting for it (`timer/mod.rs`).
            return;
        }
        // Relaxed: a statistic; the hook below carries the event itself.
        self.totals.undelivered.fetch_add(1, Ordering::Relaxed);
        // Contained: a panicking hook must not unwind the worker out of
        // the drain or close that reports the event.
        self.hooks.undelivered(pid, event);
    }

    /// Reports every event still in a mailbox: events accepted just as their
    /// process ended, and those of a withdrawn process (but the scheduler's
    /// own cancels). A freed slot is swept as a late sender sweeps it
    /// (`shared/late.rs`), unless one already is. A sender that read the
    /// phase before EXITING may still push meanwhile; its own notify, or
    /// `Drop`'s drain, reports that event (loom: `loom-tests/tests/drain.rs`).
    /// A withdrawn process's slot (free, and swept by no one) is drained
    /// here. `alone`: no other party is left (`Drop`), so every mailbox is
    /// popped as it is.
    ///
    /// # Safety
    ///
    /// The caller must be every live slot's mailbox's only consumer (the
    /// workers joined; `withdraw` never pops). Deliveries may still be
    /// under way unless `alone`.
    pub(crate) unsafe fn report_stranded(&self, alone: bool) {
        for slot in self.core.table.slots() {
            if !alone && self.left_to_a_sweep(slot) {
                continue;
            }
            let mut drained = 0;
            // SAFETY: the caller's contract makes us the only consumer.
            while let Some(envelope) = unsafe { slot.events.pop() } {
                drained += 1;
                // A signal now has no one left to answer (see `links.rs`).
                if let Item::Event(event) = envelope.item {
                    if !matches!(event, Event::Cancel(_)) {
                        let to = Pid::new(slot.pid().key(), envelope.generation);
                        self.undelivered(to, event);
                    }
                }
            }
            if self.config.count_queued {
                slot.count_drained(drained);
            }
        }
    }
}

impl<P: Process> Shared<P> {
    /// For shutdown's report: a late sender may sweep a freed slot at any
    /// time, so a freed slot is claimed (and swept) first, or left to the
    /// sweeper that holds it. `false` if the caller drains `slot` itself: a
    /// slot in use, or a withdrawn process's, which no sweeper ever holds.
    #[cold]
    fn left_to_a_sweep(&self, slot: &Slot<P>) -> bool {
        let now = slot.state.load();
        if now.lifecycle() != Lifecycle::Free || now.is_withdrawn() {
            return false;
        }
        if slot.state.try_sweep() {
            self.sweep(slot);
            return true;
        }
        // Held by a sweeper, or taken for a new process since the load
        // (then drained as a slot in use: no worker is left to pop it).
        let now = slot.state.load();
        now.lifecycle() == Lifecycle::Free && !now.is_withdrawn()
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
        unsafe { self.report_stranded(true) };
        // Timers still pending (`shutdown` closes the wheels; this covers a
        // shutdown that left a stuck worker): their messages are reported.
        self.close_timers();
    }
}

impl<P: Process> Shared<P> {
    /// The process registered as `name`, if any.
    pub(crate) fn whereis(&self, name: &str) -> Option<Pid> {
        self.registry.lock().by_name.get(name).copied()
    }
}

impl<P: Process> Names for LocalSpawner<'_, P> {
    fn register(&self, name: Name, pid: Pid) -> Result<(), RegisterError> {
        self.shared.register(name, pid)
    }

    fn whereis(&self, name: &str) -> Option<Pid> {
        self.shared.whereis(name)
    }
}

/// Spawns children from a step, reusing the worker's freed slots.
pub(crate) struct LocalSpawner<'a, P: Process> {
    pub(crate) shared: &'a Shared<P>,
    pub(crate) free: &'a RefCell<FreeCache>,
}

impl<P: Process> Spawner<P> for LocalSpawner<'_, P> {
    fn now(&self) -> std::time::Instant {
        self.shared.timers.clock.instant()
    }

    fn spawn(
        &self,
        process: P,
        method: &str,
        input: P::Input,
        options: &SpawnOptions,
    ) -> Result<Pid, SpawnError<P>> {
        let mut free = self.free.borrow_mut();
        self.shared
            .create(process, method, input, None, options, Some(&mut free))
            .map(Slot::pid)
    }
}
