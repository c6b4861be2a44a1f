//! What a running scheduler shows of itself: [`Scheduler::stats`],
//! [`Scheduler::processes`], and the execution trace.

use crate::process::{Pid, Process};
use crate::sched::links::unpack_counts;
use crate::sched::observe::dump::ProcessInfo;
use crate::sched::observe::figures::Entry;
use crate::sched::observe::stats::{Stats, TimerStats, WorkerLatency};
use crate::sched::observe::trace::Trace;
use crate::sched::Scheduler;
use crate::sync::Ordering;
use std::time::Duration;

impl<P: Process> Scheduler<P> {
    /// A snapshot of the scheduler's counters.
    pub fn stats(&self) -> Stats {
        let shared = &*self.shared;
        let (spinning, sleeping) = shared.core.idle.counts();
        // Relaxed loads throughout: each counter is exact on its own; the
        // snapshot does not promise one instant (see `Stats`).
        Stats {
            workers: shared
                .core
                .remotes
                .iter()
                .map(|r| r.counters.snapshot(r.stealer.len()))
                .collect(),
            live: shared.core.table.live(),
            submitted: shared.totals.submitted.load(Ordering::Relaxed),
            completed: shared.core.table.closed(),
            undelivered: shared.totals.undelivered.load(Ordering::Relaxed),
            unknown_tags: shared.totals.unknown_tags.load(Ordering::Relaxed),
            hook_panics: shared.hooks.panics(),
            worker_panics: shared.totals.worker_panics.load(Ordering::Relaxed),
            outside_node_allocations: shared.core.depot.misses(),
            remote_calls_waiting: (shared.remote.as_ref()).map_or(0, |r| r.watches.calls_waiting()),
            retired_slots: shared.core.table.retired(),
            global_queue_nonempty: !shared.core.global.is_empty(),
            spinning,
            sleeping,
            blocking: shared.commands.blocking.stats(),
            timers: TimerStats::sum(shared.core.remotes.iter().map(|r| &r.counters)),
            latency: (shared.core.remotes.iter())
                .filter_map(|r| r.latency.as_deref())
                .map(|l| WorkerLatency {
                    step: l.step.snapshot(),
                    schedule: l.schedule.snapshot(),
                })
                .collect(),
            kinds: match &shared.kinds {
                Some(kinds) => {
                    kinds.snapshot::<P>(shared.core.remotes.iter().map(|r| &*r.kind_steps))
                }
                None => Vec::new(),
            },
        }
    }

    /// A snapshot of every live process, in PID index order.
    ///
    /// It reads only atomics, so it neither stops the workers nor waits for
    /// them, and it may be called from any thread, as often as wanted (it
    /// costs a scan of the process table). Each entry is consistent with
    /// itself but read at its own moment; a process that ends during the
    /// scan may be missing, one that starts may or may not be listed.
    /// An entry's `queued` may be momentarily high while events are being
    /// pushed or drained (see [`ProcessInfo::queued`]).
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Sleeper;
    /// # impl Process for Sleeper {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         Ok(()) // idle until a message comes
    /// #     }
    /// # }
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let pid = scheduler.submit(Sleeper, "sleep", ()).unwrap();
    /// let dump = scheduler.processes();
    /// assert_eq!(dump.len(), 1);
    /// assert_eq!(dump[0].pid, pid);
    /// for p in &dump {
    ///     println!("{} {:?} steps={} worker={:?} for {:?} queued={:?}",
    ///              p.pid, p.state, p.steps, p.last_worker, p.since_change, p.queued);
    /// }
    /// ```
    pub fn processes(&self) -> Vec<ProcessInfo> {
        let shared = &*self.shared;
        let now = shared.core.clock.refresh();
        let workers = shared.core.remotes.len();
        let mut dump = Vec::with_capacity(shared.core.table.live());
        for slot in shared.core.table.slots() {
            let counts = shared.config.count_queued.then_some(&slot.counts);
            // The link counts are read between two state words of one
            // generation (the first here, the second in `Entry::read`).
            let before = slot.state.load().generation();
            // Relaxed: a figure (see `Slot::link_counts`), read before the
            // entry; it may lag the process.
            let link_counts = slot.link_counts.load(Ordering::Relaxed);
            // The incarnation rule for the other figures is in `Entry::read`
            // (`figures.rs`).
            let Some(entry) = Entry::read(&slot.state, &slot.figures, &slot.timers, counts) else {
                continue;
            };
            if entry.state.generation() != before {
                continue;
            }
            let (monitors, monitored_by, links) = unpack_counts(link_counts);
            let pid = Pid::new(slot.index(), entry.state.generation());
            // `name_of` checks the pair under the lock against this PID.
            let name = if slot.named.is_set() {
                shared.name_of(pid)
            } else {
                None
            };
            dump.push(ProcessInfo {
                pid,
                state: entry.state.lifecycle(),
                steps: entry.steps,
                last_worker: entry.last_worker.map(|worker| worker % workers),
                since_change: Duration::from_millis(now.saturating_sub(entry.changed_at)),
                queued: entry.queued,
                monitors,
                monitored_by,
                links,
                timers: entry.timers,
                name,
            });
        }
        dump
    }

    /// The execution trace (see [`Builder::trace`](crate::sched::Builder::trace)), once the workers have
    /// exited: call it after [`shutdown`](Scheduler::shutdown). Each worker
    /// owns its ring while it runs and hands it back when it exits, so
    /// there is nothing to read before. `None` if tracing is off, before
    /// shutdown, if a worker is stuck in a step, or if the trace was
    /// already taken. It calibrates the TSC against the OS clock over the
    /// whole run, so it sleeps until 10 ms have passed since the build if
    /// they have not.
    pub fn trace(&self) -> Option<Trace> {
        self.shared.trace.as_ref()?.take()
    }

    /// Pauses (`false`) or resumes (`true`) the execution tracer's
    /// recording, on every worker and outside thread, from its next event
    /// (a step already begun is still recorded whole). Returns `false`, and does
    /// nothing, if the builder did not turn tracing on ([`Builder::trace`](crate::sched::Builder::trace)),
    /// since the rings are allocated at build. A trace with pauses no longer
    /// matches [`stats`](Scheduler::stats), which counts throughout.
    pub fn set_tracing(&self, on: bool) -> bool {
        match &self.shared.trace {
            Some(tracing) => {
                tracing.set_enabled(on);
                true
            }
            None => false,
        }
    }
}
