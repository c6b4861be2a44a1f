//! [`Scheduler`]: the handle an embedder holds.

use super::blocking::Pool;
use super::builder::Builder;
use super::clock::CoarseClock;
use super::error::{SendError, TerminateError};
use super::global::GlobalQueue;
use super::handler::Handlers;
use super::idle::Idle;
use super::join::{JoinCell, JoinHandle, JoinSet, Joiner};
use super::monitor::{Monitor, MonitorConfig};
use super::shared::{phase, Config, Hooks, Refusal, Remote, Shared};
use super::stats::Counters;
use super::table::{Table, Task};
use super::trace::{Kind as TraceKind, Trace, Tracing};
use super::worker::Local;
use crate::deque::Worker;
use crate::padded::CachePadded;
use crate::process::state::{Lifecycle, Notify, Wake};
use crate::process::{Cancel, Event, Hosts, Kind, Pid, Process, SpawnError, SpawnOptions};
use crate::sync::{AtomicU64, Ordering};
use core::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle as ThreadHandle;
use std::time::{Duration, Instant};

/// A pool of worker threads running processes of type `P`.
///
/// ```
/// use stepsched::process::{Event, NoCommand, Process, StepOutput};
/// use stepsched::sched::Scheduler;
///
/// /// Adds up the numbers it is sent until it receives a zero.
/// struct Adder(u64);
///
/// impl Process for Adder {
///     type Input = u64;
///     type Message = u64;
///     type Command = NoCommand;
///     type Reply = ();
///     type Output = u64;
///     type Error = ();
///
///     fn init(&mut self, _method: &str, start: u64) -> Result<(), ()> {
///         self.0 = start;
///         Ok(())
///     }
///
///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
///         for event in events.drain(..) {
///             match event {
///                 Event::Message(0) => out.done(self.0),
///                 Event::Message(n) => self.0 += n,
///                 _ => {}
///             }
///         }
///         Ok(()) // with no status set, an Adder waits for messages
///     }
/// }
///
/// let scheduler = Scheduler::builder().workers(2).build().unwrap();
/// let adder = scheduler.submit_joinable(Adder(0), "add", 100).unwrap();
/// for n in [1, 2, 3, 0] {
///     scheduler.send(adder.pid(), n).unwrap();
/// }
/// assert_eq!(adder.join(), Ok(106));
/// let report = scheduler.shutdown(std::time::Duration::from_secs(1));
/// assert_eq!(report.forced, 0);
/// ```
pub struct Scheduler<P: Process> {
    pub(super) shared: Arc<Shared<P>>,
    threads: Mutex<Vec<ThreadHandle<()>>>,
    /// The long-step monitor, if the builder asked for one.
    monitor: Mutex<Option<Monitor>>,
    report: Mutex<Option<ShutdownReport>>,
}

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
    /// Commands for [blocking handlers](Builder::blocking_handler) that
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
    /// the scheduler's life (see [`Stats::worker_panics`](super::Stats::worker_panics)). Zero unless
    /// the scheduler has a bug.
    pub worker_panics: u64,
}

impl<P: Process> Scheduler<P> {
    /// Starts configuring a scheduler.
    pub fn builder() -> Builder<P> {
        Builder::new()
    }

    pub(crate) fn start(
        config: Config,
        name: Box<dyn Fn(usize) -> String + Send + Sync>,
        stack_size: Option<usize>,
        max_processes: Option<usize>,
        handlers: Handlers<P>,
        hooks: Hooks<P>,
        monitor: Option<MonitorConfig>,
    ) -> io::Result<Self> {
        let config_workers = config.workers;
        let blocking = Arc::new(Pool::new(config.blocking.clone()));
        let trace = (config.trace).map(|capacity| Tracing::new(config.workers, capacity));
        let deques: Vec<Worker<Task<P>>> = (0..config.workers).map(|_| Worker::new()).collect();
        let remotes = deques
            .iter()
            .map(|deque| Remote {
                stealer: deque.stealer(),
                inject: GlobalQueue::new(),
                counters: Counters::default(),
                watch: CachePadded::default(),
            })
            .collect();
        let shared = Arc::new(Shared {
            remotes,
            global: GlobalQueue::new(),
            idle: Idle::new(config.workers),
            handlers,
            blocking,
            hooks,
            room: super::bound::Room::new(),
            depot: CachePadded(super::depot::Depot::new()),
            config,
            phase: super::phase::Phase::new(),
            submitted: AtomicU64::new(0),
            undelivered: AtomicU64::new(0),
            unknown_tags: AtomicU64::new(0),
            forced: AtomicU64::new(0),
            worker_panics: AtomicU64::new(0),
            stopping: super::stopping::Stopping::new(),
            clock: CoarseClock::new(),
            trace,
            timers: super::timer::Timers::new(config_workers),
            table: Table::new(config_workers, max_processes),
        });
        let scheduler = Scheduler {
            shared: Arc::clone(&shared),
            threads: Mutex::new(Vec::new()),
            monitor: Mutex::new(None),
            report: Mutex::new(None),
        };
        for (index, deque) in deques.into_iter().enumerate() {
            let local = Local::new(index, Arc::clone(&shared), deque);
            let mut thread = std::thread::Builder::new().name(name(index));
            if let Some(bytes) = stack_size {
                thread = thread.stack_size(bytes);
            }
            let handle = thread.spawn(move || local.run())?; // Drop stops the others.
            scheduler.threads().push(handle);
        }
        if let Some(config) = monitor {
            let monitor = Monitor::start(Arc::clone(&shared), config)?; // Drop stops the workers.
            *scheduler.monitor.lock().unwrap_or_else(|e| e.into_inner()) = Some(monitor);
        }
        Ok(scheduler)
    }

    fn threads(&self) -> std::sync::MutexGuard<'_, Vec<ThreadHandle<()>>> {
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.remotes.len()
    }

    /// Starts a process: runs `init(method, input)` on this thread, then
    /// queues it. Returns its PID.
    ///
    /// # Errors
    ///
    /// [`SpawnError`] hands the process back if the scheduler is shutting
    /// down or at its process limit, or if `init` failed or panicked.
    pub fn submit(&self, process: P, method: &str, input: P::Input) -> Result<Pid, SpawnError<P>> {
        self.submit_inner(process, method, input, None, SpawnOptions::new())
    }

    /// Like [`submit`](Scheduler::submit), and returns a handle to wait for
    /// the process's outcome.
    ///
    /// # Errors
    ///
    /// As [`submit`](Scheduler::submit).
    pub fn submit_joinable(
        &self,
        process: P,
        method: &str,
        input: P::Input,
    ) -> Result<JoinHandle<P>, SpawnError<P>> {
        let cell = Arc::new(JoinCell::new());
        let joiner = Joiner::One(Arc::clone(&cell));
        let pid = self.submit_inner(process, method, input, Some(joiner), SpawnOptions::new())?;
        Ok(JoinHandle::new(pid, cell))
    }

    /// Like [`submit`](Scheduler::submit), and adds the process to `set`,
    /// which gives its outcome when it ends: the way to wait for many
    /// processes (see [`JoinSet`]).
    ///
    /// # Errors
    ///
    /// As [`submit`](Scheduler::submit); a refused process is not added.
    pub fn submit_into(
        &self,
        set: &mut JoinSet<P>,
        process: P,
        method: &str,
        input: P::Input,
    ) -> Result<Pid, SpawnError<P>> {
        let joiner = set.add();
        self.submit_inner(process, method, input, Some(joiner), SpawnOptions::new())
            .inspect_err(|_| set.cancel_add())
    }

    /// [`submit`](Scheduler::submit) with [`SpawnOptions`] (a mailbox
    /// capacity of its own, say).
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.set_status(stepsched::process::Status::Idle); Ok(())
    /// #     }
    /// # }
    /// use stepsched::process::SpawnOptions;
    /// use stepsched::sched::{Scheduler, SendError};
    ///
    /// let scheduler = Scheduler::builder().workers(1).build()?;
    /// let options = SpawnOptions::new().mailbox_capacity(1);
    /// let pid = scheduler.submit_with(Job, "", (), options).unwrap();
    /// // Room for one message until the process takes it.
    /// let mut refused = 0;
    /// for _ in 0..1000 {
    ///     if let Err(SendError::Full(())) = scheduler.send(pid, ()) {
    ///         refused += 1;
    ///     }
    /// }
    /// assert!(refused > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`submit`](Scheduler::submit), and
    /// [`SpawnError::InvalidOptions`](crate::process::SpawnError::InvalidOptions)
    /// for options it cannot honour (a mailbox capacity of 0), with the
    /// process handed back before its `init`.
    pub fn submit_with(
        &self,
        process: P,
        method: &str,
        input: P::Input,
        options: SpawnOptions,
    ) -> Result<Pid, SpawnError<P>> {
        self.submit_inner(process, method, input, None, options)
    }

    fn submit_inner(
        &self,
        process: P,
        method: &str,
        input: P::Input,
        joiner: Option<Joiner<P>>,
        options: SpawnOptions,
    ) -> Result<Pid, SpawnError<P>> {
        let shared = &*self.shared;
        let slot = shared.create(process, method, input, joiner, options, None)?;
        let pid = slot.pid();
        // Relaxed: a statistic.
        shared.submitted.fetch_add(1, Ordering::Relaxed);
        shared.trace_outside(TraceKind::Submit, pid, 0, 0);
        shared.global.push(Task::new(slot));
        shared.idle.notify_one();
        Ok(pid)
    }

    /// Sends `message` to the process `to`, from any thread.
    ///
    /// # Errors
    ///
    /// [`SendError`] hands the message back: no such process, it has
    /// finished, or the scheduler is shutting down.
    pub fn send(&self, to: Pid, message: P::Message) -> Result<(), SendError<P::Message>> {
        if self.shared.phase() != phase::RUNNING {
            return Err(SendError::ShuttingDown(message));
        }
        let shared = &*self.shared;
        (shared.deliver_remote(to, Event::Message(message), Wake::Message))
            .map(|woke| shared.trace_outside(TraceKind::Send, to, 0, u32::from(woke)))
            .map_err(|(refusal, event)| {
                let Event::Message(message) = event else {
                    unreachable!("deliver hands back the event it was given")
                };
                match refusal {
                    Refusal::NoSuchProcess => SendError::NoSuchProcess(message),
                    Refusal::Finished => SendError::Finished(message),
                    Refusal::ShuttingDown => SendError::ShuttingDown(message),
                    Refusal::Full => SendError::Full(message),
                }
            })
    }

    /// Terminates the process `pid`: if it is waiting it is closed; if it is
    /// queued or running, its next step receives
    /// [`Cancel::Terminate`] and is its last. Its outcome is
    /// [`ProcessError::Terminated`](crate::process::ProcessError::Terminated).
    ///
    /// # Errors
    ///
    /// If no such process exists or it has already ended.
    pub fn terminate(&self, pid: Pid) -> Result<(), TerminateError> {
        self.shared.terminate(pid)
    }

    /// The number of live processes.
    pub fn live(&self) -> usize {
        self.shared.table.live()
    }

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
    /// [blocking handler](Builder::blocking_handler) (and any yielded
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
    /// [`handler`](Builder::handler)): the step that called it cannot end while
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
        let deadline = super::clock::deadline(timeout);
        let completed_before = shared.table.closed();
        shared.set_phase(phase::STOPPING);
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
            for slot in shared.table.slots() {
                let state = slot.state.load();
                if matches!(state.lifecycle(), Lifecycle::Free | Lifecycle::Complete) {
                    continue;
                }
                let pid = Pid::new(slot.pid().index(), state.generation());
                let cancel = Event::Cancel(Cancel::Shutdown);
                if shared.deliver_remote(pid, cancel, Wake::Completion).is_ok() {
                    report.cancelled += 1;
                }
            }
        }
        // After the cancels, so that a process usually sees its cancelled
        // commands in the same step as its `Cancel::Shutdown`.
        shared.blocking.close();
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
        if !shared
            .stopping
            .wait_until(deadline, || shared.table.live() == 0)
        {
            report.timed_out = true;
            shared.set_phase(phase::FORCING);
            shared.trace_phase("forcing");
            self.close_waiting();
            // Running steps end on their own; give them as long again, and
            // longer while closes still make progress: processes queued to be
            // closed are not stuck, only a step that never returns is (on a
            // loaded machine 10,000 queued closes can outlast a short grace).
            let mut grace = super::clock::deadline(timeout.max(Duration::from_millis(100)));
            left = shared.table.live();
            loop {
                if shared
                    .stopping
                    .wait_until(grace, || shared.table.live() == 0)
                {
                    left = 0;
                    break;
                }
                let now = shared.table.live();
                if now >= left {
                    left = now;
                    break;
                }
                left = now;
                grace = Instant::now() + Duration::from_millis(100);
            }
        }
        // Relaxed: every close that `live()` (Acquire loads of the closed
        // counts, Released by `Table::remove`) saw counted was preceded by
        // its `forced` increment; if `live()` did not reach zero, `stuck`
        // says so and the counts may still move.
        report.forced = shared.forced.load(Ordering::Relaxed) as usize;
        let ended = (shared.table.closed() - completed_before) as usize;
        report.completed = ended.saturating_sub(report.forced);
        // What the waits last saw: a step that never returned keeps its
        // process live.
        report.stuck = left;
        // Processes are done with (or stuck); a blocking handler may still
        // run, and gets what is left of the timeout.
        let pool = shared.blocking.finish(deadline);
        report.blocking_cancelled = pool.cancelled;
        report.blocking_abandoned = pool.abandoned;
        shared.set_phase(phase::EXITING);
        shared.trace_phase("exiting");
        shared.idle.wake_all();
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
            shared.trace_phase("joined");
            // SAFETY: every worker has exited and `withdraw` never pops, so
            // this thread is every mailbox's only consumer. (A sender that
            // read the phase before EXITING may still push: a producer may
            // race the consumer, and `Drop for Shared` reports what it
            // pushes after this drain; loom: `loom-tests/tests/drain.rs`.)
            unsafe { shared.report_stranded() };
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
        report.worker_panics = shared.worker_panics.load(Ordering::Relaxed);
        *stored = Some(report);
        report
    }

    /// The execution trace (see [`Builder::trace`]), once the workers have
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
    /// nothing, if the builder did not turn tracing on ([`Builder::trace`]),
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

    /// Queues every waiting process so that a worker closes it (FORCING).
    fn close_waiting(&self) {
        let shared = &*self.shared;
        for slot in shared.table.slots() {
            let generation = slot.state.load().generation();
            if slot.state.terminate(generation) == Notify::Schedule {
                slot.stamp(shared.clock.now());
                shared.schedule_remote(Task::new(slot));
            }
        }
        shared.idle.wake_all();
    }

    /// Starts a process of one [kind](crate::process::Kind) of `P`:
    /// [`submit`](Scheduler::submit) with the kind wrapped into its variant
    /// and `input` checked against the kind by the compiler (see
    /// [`process::kinds`](crate::process::kinds), which has an example).
    ///
    /// # Errors
    ///
    /// As [`submit`](Scheduler::submit).
    pub fn submit_kind<K>(&self, kind: K, input: K::Input) -> Result<Pid, SpawnError<P>>
    where
        K: Kind<P>,
        P: Hosts<K>,
    {
        let (process, input) = P::host(kind, input);
        self.submit(process, <P as Hosts<K>>::KIND, input)
    }

    /// [`submit_kind`](Scheduler::submit_kind), returning a handle to wait
    /// for the process's outcome.
    ///
    /// # Errors
    ///
    /// As [`submit`](Scheduler::submit).
    pub fn submit_kind_joinable<K>(
        &self,
        kind: K,
        input: K::Input,
    ) -> Result<JoinHandle<P>, SpawnError<P>>
    where
        K: Kind<P>,
        P: Hosts<K>,
    {
        let (process, input) = P::host(kind, input);
        self.submit_joinable(process, <P as Hosts<K>>::KIND, input)
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

impl<P: Process> fmt::Debug for Scheduler<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("workers", &self.workers())
            .field("live", &self.live())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
