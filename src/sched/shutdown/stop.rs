//! [`Scheduler::shutdown`], what it reports, and the `Drop` that calls it.

use crate::process::state::{Lifecycle, Notify, Wake};
use crate::process::{Cancel, Event, Pid, Process};
use crate::sched::core::table::Task;
use crate::sched::shared::phase;
use crate::sched::simulation::Limit;
use crate::sched::Scheduler;
use crate::sync::Ordering;
use std::time::{Duration, Instant};

/// What [`Scheduler::shutdown`] found.
///
/// Non-exhaustive: counts may be added in a minor release, so it is read
/// field by field (or compared with a value from `Default`), not built or
/// destructured whole outside this crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Live processes that were sent a cancel event (none when the
    /// timeout is zero: see [`Scheduler::shutdown`]).
    pub cancelled: usize,
    /// Processes that ended by themselves during the shutdown (any outcome
    /// but `Shutdown`), before or after the timeout.
    pub completed: usize,
    /// Processes closed by force after the timeout: their outcome is
    /// [`ProcessError::Shutdown`](crate::process::ProcessError::Shutdown).
    pub forced: usize,
    /// Processes still live when the workers were told to exit: a step that
    /// never returned. Zero unless a step blocks forever.
    pub stuck: usize,
    /// Whether the timeout passed with processes still live.
    pub timed_out: bool,
    /// Commands for [blocking handlers](crate::sched::Builder::blocking_handler) that
    /// never ran: queued when shutdown began, or yielded after. Each
    /// completed with
    /// [`CommandError::Cancelled`](crate::process::CommandError::Cancelled).
    pub blocking_cancelled: usize,
    /// Blocking-pool threads still in a handler when the timeout passed:
    /// they are detached and left to return on their own (a completion
    /// they make then is refused). Zero unless a blocking handler outlives
    /// the timeout.
    pub blocking_abandoned: usize,
    /// Timers cancelled by the shutdown: pending timers of processes it
    /// closed, and timers still pending when the workers stopped (a
    /// [`send_after`](Scheduler::send_after) message among them goes to
    /// `on_undelivered`).
    pub timers_cancelled: usize,
    /// Panics of the scheduler's own code contained on the workers during
    /// the scheduler's life (see [`Stats::worker_panics`](crate::sched::Stats::worker_panics)). Zero unless
    /// the scheduler has a bug.
    pub worker_panics: u64,
}

impl<P: Process> Scheduler<P> {
    /// Stops the scheduler: refuses new processes and messages, sends
    /// [`Cancel::Shutdown`] to every live process and waits up to `timeout`
    /// for them to end; then closes the rest by force, stops the workers and
    /// joins them. Calling it again returns the first report.
    ///
    /// A zero `timeout` sends no cancels: every live process is closed by
    /// force at once (outcome
    /// [`ProcessError::Shutdown`](crate::process::ProcessError::Shutdown),
    /// counted in [`ShutdownReport::forced`]), as OTP's `brutal_kill`. A
    /// step already running (or one a worker starts as the call begins)
    /// ends first; once the forced closes begin, right away, no process
    /// is stepped again. `Drop` does this.
    ///
    /// It returns soon after the last process has ended, not at the
    /// timeout: the calling thread parks between its looks at the live
    /// count, and a worker that runs out of work wakes it. (Like any code
    /// that calls [`std::thread::park`], it may take an unpark meant for
    /// the calling thread.)
    ///
    /// The blocking pool: when shutdown begins, commands queued for a
    /// [blocking handler](crate::sched::Builder::blocking_handler) (and any yielded
    /// afterwards) complete with
    /// [`CommandError::Cancelled`](crate::process::CommandError::Cancelled);
    /// handlers already running are waited for until `timeout` has passed
    /// since the call, then abandoned (their threads detached). Both are
    /// counted in the report. A blocking handler that never returns does
    /// not hold `shutdown` (nor `Drop`) past the timeout.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread until every process has ended or been closed
    /// and the workers have been joined. With processes that do not end, that
    /// is `timeout`, then a grace of as long again (at least 100 ms, and longer
    /// while forced closes still make progress) for running steps to return; a
    /// blocking handler still running is waited for until `timeout` has passed
    /// since the call. A timeout too large for the clock (`Duration::MAX`)
    /// waits for as long as processes run.
    ///
    /// Call it from the thread that owns the scheduler, never from one of its
    /// workers (a step, or a handler registered with
    /// [`handler`](crate::sched::Builder::handler)): the step that called it cannot end while
    /// it waits, so it waits out the timeout and the grace, counts the calling
    /// process in [`ShutdownReport::stuck`], and returns without joining the
    /// workers (they are detached) or reporting the events left in mailboxes to
    /// `on_undelivered`.
    pub fn shutdown(&self, timeout: Duration) -> ShutdownReport {
        let mut stored = self.report.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(report) = *stored {
            return report;
        }
        let shared = &*self.shared;
        // On the virtual clock under a simulation.
        let deadline = shared.timers.clock.deadline_in(timeout);
        let completed_before = shared.core.table.closed();
        shared.core.set_phase(phase::STOPPING);
        shared.trace_phase("stopping");
        let mut report = ShutdownReport::default();
        // With no grace the cancels are skipped: a step could see one only
        // by racing the forced closes just below, and each costs a node and
        // a wake. The closes' scan (`close_waiting`) reaches every process
        // a creator has not withdrawn, as this one would (the phase pair),
        // and a process it finds Ready or Running is closed at its next
        // start or its step's end (loom, `state.rs`:
        // `forced_scan_racing_a_withdraw_never_queues_the_withdrawn_process`).
        let brutal = timeout.is_zero();
        if !brutal {
            for slot in shared.core.table.slots() {
                let state = slot.state.load();
                if matches!(state.lifecycle(), Lifecycle::Free | Lifecycle::Complete) {
                    continue;
                }
                let pid = Pid::new(slot.pid().key(), state.generation());
                let cancel = Event::Cancel(Cancel::Shutdown);
                if shared.deliver_remote(pid, cancel, Wake::Completion).is_ok() {
                    report.cancelled += 1;
                }
            }
        }
        // After the cancels, so that a process usually sees its cancelled
        // commands in the same step as its `Cancel::Shutdown`.
        shared.commands.blocking.close();
        // Decided on what the wait saw, not on a second look: once the
        // cancels are out, `live()` counts a creator racing the shutdown
        // (`Shared::create`) from its insert until it withdraws, so a later
        // look may see that transient 1 (it reported a clean shutdown as
        // timed out, under TSan). A zero seen here is final: a process that
        // was admitted is counted from before its admission, and the phase
        // pair (`phase.rs`) makes the scan above cancel it (or, with a zero
        // timeout, the forced scan below close it).
        let mut left = 0;
        // (With a zero timeout the deadline has passed: one look.)
        if !self.wait_for_no_live(deadline) {
            report.timed_out = true;
            shared.core.set_phase(phase::FORCING);
            shared.trace_phase("forcing");
            self.close_waiting();
            // Running steps end on their own; give them as long again, and
            // longer while closes still make progress: processes queued to be
            // closed are not stuck, only a step that never returns is (on a
            // loaded machine 10,000 queued closes can outlast a short grace).
            let clock = &shared.timers.clock;
            let mut grace = clock.deadline_in(timeout.max(Duration::from_millis(100)));
            left = shared.core.table.live();
            loop {
                if self.wait_for_no_live(grace) {
                    left = 0;
                    break;
                }
                let now = shared.core.table.live();
                if now >= left {
                    left = now;
                    break;
                }
                left = now;
                grace = clock.instant() + Duration::from_millis(100);
            }
        }
        // Relaxed: every close that `live()` (Acquire loads of the closed
        // counts, Released by `Table::remove`) saw counted was preceded by
        // its `forced` increment; if `live()` did not reach zero, `stuck`
        // says so and the counts may still move.
        report.forced = shared.totals.forced.load(Ordering::Relaxed) as usize;
        let ended = (shared.core.table.closed() - completed_before) as usize;
        report.completed = ended.saturating_sub(report.forced);
        // What the waits last saw: a step that never returned keeps its
        // process live.
        report.stuck = left;
        // Processes are done with (or stuck); a blocking handler may still
        // run, and gets what is left of the timeout.
        let pool = shared.commands.blocking.finish(deadline);
        report.blocking_cancelled = pool.cancelled;
        report.blocking_abandoned = pool.abandoned;
        shared.core.set_phase(phase::EXITING);
        shared.trace_phase("exiting");
        shared.core.idle.wake_all();
        // The monitor never waits for a worker, so it stops even when a
        // step is stuck.
        let monitor = self
            .monitor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(monitor) = monitor {
            monitor.stop();
        }
        if report.stuck == 0 {
            for handle in self.threads().drain(..) {
                let _ = handle.join();
            }
            if let Some(driver) = &self.simulation {
                driver.finish(); // its workers end as threads would
            }
            shared.trace_phase("joined");
            // SAFETY: every worker has exited and `withdraw` never pops, so
            // this thread is every mailbox's only consumer. (A sender that
            // read the phase before EXITING may still push: a producer may
            // race the consumer, and `Drop for Shared` reports what it
            // pushes after this drain; loom: `loom-tests/tests/drain.rs`.)
            unsafe { shared.report_stranded(false) };
        }
        // Otherwise a worker is inside a step that never returned: it cannot
        // be joined, and its mailboxes are not ours to drain. Its threads are
        // detached when `threads` drops.
        // Timers: those of processes closed during the shutdown, and those
        // still in a wheel (`send_after` messages go to `on_undelivered`).
        // Relaxed: the joins above order the workers' increments.
        let by_close = shared.timers.cancelled_by_shutdown.load(Ordering::Relaxed);
        report.timers_cancelled = by_close as usize + shared.close_timers();
        // Relaxed: a statistic; the joins above order the workers' counts
        // (and a stuck worker's may still move).
        report.worker_panics = shared.totals.worker_panics.load(Ordering::Relaxed);
        *stored = Some(report);
        report
    }

    /// Waits until no process is live or `deadline` passes; says which.
    /// A simulation is driven meanwhile, on its virtual clock; one that
    /// goes idle with processes live has nothing more to run before the
    /// deadline, so the wait gives up at once.
    fn wait_for_no_live(&self, deadline: Instant) -> bool {
        let shared = &*self.shared;
        let Some(driver) = &self.simulation else {
            return (shared.stopping).wait_until(deadline, || shared.core.table.live() == 0);
        };
        let limit = Limit {
            until: shared.timers.clock.nanos(deadline),
            ..Limit::NONE
        };
        let mut none_live = || shared.core.table.live() == 0;
        driver.run("Scheduler::shutdown", limit, &mut none_live);
        none_live()
    }

    /// Queues every waiting process so that a worker closes it (FORCING).
    fn close_waiting(&self) {
        let shared = &*self.shared;
        for slot in shared.core.table.slots() {
            let generation = slot.state.load().generation();
            if slot.state.terminate(generation) == Notify::Schedule {
                slot.stamp_ready(&shared.core.clock);
                shared.core.schedule_remote(Task::new(slot));
            }
        }
        shared.core.idle.wake_all();
    }
}

impl<P: Process> Drop for Scheduler<P> {
    /// Shuts down with no grace period (`shutdown(Duration::ZERO)`): every
    /// live process is closed by force, without a cancel event. Call
    /// [`Scheduler::shutdown`] first to give them time.
    ///
    /// It blocks as that call does: until the steps running return (a
    /// grace of 100 ms, longer while forced closes still make progress, for
    /// those that do not) and the workers are joined. Do not drop the last
    /// owner of a scheduler on one of its workers (a step or a handler that
    /// holds it in an `Arc`): as with [`Scheduler::shutdown`], the calling
    /// process is then counted as stuck and the workers are detached, not
    /// joined.
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}
