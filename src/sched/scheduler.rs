//! [`Scheduler`]: the handle an embedder holds.

use crate::deque::Worker;
use crate::padded::CachePadded;
use crate::process::state::Wake;
use crate::process::{Event, Hosts, Kind, NodeId, Pid, Process, SpawnError, SpawnOptions};
use crate::sched::commands::blocking::Pool;
use crate::sched::commands::handler::Commands;
use crate::sched::commands::handler::Handlers;
use crate::sched::core::clock::CoarseClock;
use crate::sched::core::global::GlobalQueue;
use crate::sched::core::idle::Idle;
use crate::sched::core::shared::{Core, Remote};
use crate::sched::core::table::{Table, Task};
use crate::sched::error::{SendError, TerminateError};
use crate::sched::observe::histogram::Latency;
use crate::sched::observe::kind_counts::KindCounts;
use crate::sched::observe::monitor::{Monitor, MonitorConfig};
use crate::sched::observe::stats::Counters;
use crate::sched::observe::stats::Totals;
use crate::sched::observe::trace::{Kind as TraceKind, Tracing};
use crate::sched::outside::join::{JoinCell, JoinHandle};
use crate::sched::outside::join_set::{JoinSet, Joiner};
use crate::sched::remote::{Inbound, Sink};
use crate::sched::shared::{phase, Config, Hooks, Refusal, Shared};
use crate::sched::shutdown::ShutdownReport;
use crate::sched::simulation::Driver;
use crate::sched::worker::Local;
use crate::sync::{AtomicU64, Ordering};
use core::fmt;
use std::io;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle as ThreadHandle;

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
    pub(crate) threads: Mutex<Vec<ThreadHandle<()>>>,
    /// The long-step monitor, if the builder asked for one.
    pub(crate) monitor: Mutex<Option<Monitor>>,
    pub(crate) report: Mutex<Option<ShutdownReport>>,
    /// The driver that plays the workers, if this is a simulation
    /// (`simulation/`): then `threads` stays empty.
    pub(crate) simulation: Option<Arc<Driver<P>>>,
}

impl<P: Process> Scheduler<P> {
    // One argument per room the builder configures; a struct to carry them
    // would only restate the builder's fields.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        config: Config,
        name: Box<dyn Fn(usize) -> String + Send + Sync>,
        stack_size: Option<usize>,
        max_processes: Option<usize>,
        handlers: Handlers<P>,
        hooks: Hooks<P>,
        monitor: Option<MonitorConfig>,
        (node, remote): (NodeId, Option<crate::sched::remote::Remote<P>>),
    ) -> io::Result<Self> {
        let config_workers = config.workers;
        let blocking = Arc::new(Pool::new(config.blocking.clone()));
        // A simulation's virtual time: its timers' clock and its trace's.
        let simulated = (config.simulation).map(|_| Arc::new(AtomicU64::new(0)));
        let trace = (config.trace)
            .map(|capacity| Tracing::new(config.workers, capacity, simulated.clone()));
        let deques: Vec<Worker<Task<P>>> = (0..config.workers).map(|_| Worker::new()).collect();
        let remotes = deques
            .iter()
            .map(|deque| Remote {
                stealer: deque.stealer(),
                inject: GlobalQueue::new(),
                counters: Counters::default(),
                watch: CachePadded::default(),
                latency: config.record_latency.then(|| Box::new(Latency::new())),
                kind_steps: if config.count_kinds {
                    KindCounts::steps::<P>()
                } else {
                    Box::default()
                },
            })
            .collect();
        // Steps are timed (the fine clock's rate measured) for latency
        // figures or a per-step hook.
        let timed = config.record_latency || hooks.per_step();
        let shared = Arc::new(Shared {
            commands: Commands { handlers, blocking },
            hooks,
            totals: Totals::default(),
            trace,
            room: crate::sched::bound::Room::new(),
            timers: crate::sched::timer::Timers::new(config_workers, simulated),
            stopping: crate::sched::shutdown::stopping::Stopping::new(),
            registry: crate::sched::registry::Registry::new(),
            kinds: if config.count_kinds {
                KindCounts::new::<P>()
            } else {
                None
            },
            core: Core {
                remotes,
                global: GlobalQueue::new(),
                idle: Idle::new(config.workers),
                depot: CachePadded(crate::sched::core::depot::Depot::new()),
                phase: crate::sched::core::phase::Phase::new(),
                clock: CoarseClock::new(config.record_latency, timed),
                table: Table::new(config_workers, max_processes, node),
            },
            remote,
            config,
        });
        if let Some(remote) = &shared.remote {
            // Weak: the transport lives in `shared`, and must not keep it.
            let sink: Weak<dyn Sink> = Arc::downgrade(&shared) as Weak<dyn Sink>;
            remote.transport.attach(Inbound::new(sink, node));
        }
        if let Some(seed) = shared.config.simulation {
            // No threads: the driver plays every worker (`simulation/`).
            let locals = (deques.into_iter().enumerate())
                .map(|(index, deque)| Local::new(index, Arc::clone(&shared), deque))
                .collect();
            let driver = Driver::new(Arc::clone(&shared), seed, locals);
            return Ok(Scheduler {
                shared,
                threads: Mutex::new(Vec::new()),
                monitor: Mutex::new(None),
                report: Mutex::new(None),
                simulation: Some(Arc::new(driver)),
            });
        }
        let scheduler = Scheduler {
            shared: Arc::clone(&shared),
            threads: Mutex::new(Vec::new()),
            monitor: Mutex::new(None),
            report: Mutex::new(None),
            simulation: None,
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

    pub(crate) fn threads(&self) -> std::sync::MutexGuard<'_, Vec<ThreadHandle<()>>> {
        self.threads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.core.remotes.len()
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
        Ok(JoinHandle::new(pid, cell).driven_by(self.simulation_driver()))
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
        let slot = shared.create(process, method, input, joiner, &options, None)?;
        let pid = slot.pid();
        // Relaxed: a statistic.
        shared.totals.submitted.fetch_add(1, Ordering::Relaxed);
        shared.trace_outside(TraceKind::Submit, pid, 0, 0);
        shared.core.global.push(Task::new(slot));
        shared.core.idle.notify_one();
        Ok(pid)
    }

    /// Sends `message` to the process `to`, from any thread.
    ///
    /// # Errors
    ///
    /// [`SendError`] hands the message back: no such process, it has
    /// finished, or the scheduler is shutting down; for a process of
    /// another node (`sched::remote`), its node cannot be reached. A
    /// message to another node is handed to the transport: what happens
    /// to it there is told as the module's docs say.
    pub fn send(&self, to: Pid, message: P::Message) -> Result<(), SendError<P::Message>> {
        if self.shared.core.phase() != phase::RUNNING {
            return Err(SendError::ShuttingDown(message));
        }
        let shared = &*self.shared;
        let (refusal, event) =
            match shared.deliver_remote(to, Event::Message(message), Wake::Message) {
                Ok(woke) => {
                    shared.trace_outside(TraceKind::Send, to, 0, u32::from(woke));
                    return Ok(());
                }
                Err(refused) => refused,
            };
        let Event::Message(message) = event else {
            unreachable!("deliver hands back the event it was given")
        };
        Err(match refusal {
            Refusal::NoSuchProcess => SendError::NoSuchProcess(message),
            Refusal::Finished => SendError::Finished(message),
            Refusal::ShuttingDown => SendError::ShuttingDown(message),
            Refusal::Full => SendError::Full(message),
            // Another node's (`remote/`): handed to the transport.
            Refusal::Remote => match shared.forward_message(shared.outside_pid(), to, message) {
                Ok(()) => return Ok(()),
                Err(message) => SendError::NoConnection(message),
            },
        })
    }

    /// Terminates the process `pid`: if it is waiting it is closed; if it is
    /// queued or running, its next step receives
    /// [`Cancel::Terminate`](crate::process::Cancel::Terminate) and is its last. Its outcome is
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
        self.shared.core.table.live()
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
