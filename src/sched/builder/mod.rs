//! [`Builder`]: configures and starts a [`Scheduler`].

use crate::process::Process;
use crate::sched::commands::blocking::{
    PoolConfig, DEFAULT_BLOCKING_KEEP_ALIVE, DEFAULT_MAX_BLOCKING_THREADS,
};
use crate::sched::commands::handler::Handlers;
use crate::sched::observe::monitor::{LongStep, MonitorConfig};
use crate::sched::shared::{Config, Hooks};
use crate::sched::simulation::Faults;
use crate::sched::Scheduler;
use std::io;
use std::time::Duration;

mod check;
mod commands;
mod hooks;
mod remote;

/// The default of [`Builder::max_events_per_step`]: enough that a step's
/// fixed cost vanishes against the events it handles, few enough that a
/// step of cheap events stays in the tens of microseconds.
pub const DEFAULT_EVENTS_PER_STEP: usize = 1024;

/// A simulation's workers unless [`Builder::workers`] says otherwise.
const SIMULATED_WORKERS: usize = 4;

/// Configures a [`Scheduler`]; made by [`Scheduler::builder`].
///
/// ```
/// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
/// # struct Job;
/// # impl Process for Job {
/// #     type Input = (); type Message = (); type Command = NoCommand;
/// #     type Reply = (); type Output = (); type Error = ();
/// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
/// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
/// #         out.done(()); Ok(())
/// #     }
/// # }
/// use stepsched::sched::Scheduler;
///
/// let scheduler = Scheduler::<Job>::builder()
///     .workers(2)
///     .thread_name(|i| format!("vm-worker-{i}"))
///     .max_processes(100_000)
///     .build()
///     .expect("threads start");
/// assert_eq!(scheduler.workers(), 2);
/// ```
pub struct Builder<P: Process> {
    workers: Option<usize>,
    thread_name: Box<dyn Fn(usize) -> String + Send + Sync>,
    stack_size: Option<usize>,
    global_queue_interval: u32,
    spin_tight: u32,
    park_after: u32,
    max_processes: Option<usize>,
    handlers: Handlers<P>,
    hooks: Hooks<P>,
    monitor: Option<MonitorConfig>,
    trace: Option<usize>,
    count_queued: bool,
    record_latency: bool,
    count_kinds: bool,
    events_per_step: usize,
    mailbox_capacity: Option<u32>,
    max_blocking_threads: usize,
    blocking_keep_alive: Duration,
    /// The seed of a simulation (`simulation/api.rs`), if it is one.
    pub(crate) simulation: Option<u64>,
    /// The faults it injects.
    pub(crate) faults: Faults,
    /// The node and its transport (`remote.rs`).
    remote: remote::Setup<P>,
}

impl<P: Process> Builder<P> {
    pub(crate) fn new() -> Self {
        Builder {
            workers: None,
            thread_name: Box::new(|i| format!("stepsched-{i}")),
            stack_size: None,
            global_queue_interval: 61,
            spin_tight: 4,
            park_after: 16,
            max_processes: None,
            handlers: Handlers::new(),
            hooks: Hooks::new(),
            monitor: None,
            trace: None,
            count_queued: false,
            record_latency: false,
            count_kinds: false,
            events_per_step: DEFAULT_EVENTS_PER_STEP,
            mailbox_capacity: None,
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
            blocking_keep_alive: DEFAULT_BLOCKING_KEEP_ALIVE,
            simulation: None,
            faults: Faults::new(),
            remote: remote::Setup::new(),
        }
    }

    /// The number of worker threads (at least 1 and at most 65,536:
    /// [`build`](Builder::build) refuses 0 and more). Default: [`std::thread::available_parallelism`], which
    /// honours CPU affinity and cgroup limits.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Names worker threads (default `stepsched-{index}`).
    pub fn thread_name(mut self, name: impl Fn(usize) -> String + Send + Sync + 'static) -> Self {
        self.thread_name = Box::new(name);
        self
    }

    /// The stack size of worker threads and of the blocking pool's threads,
    /// in bytes (default: std's). At least 1: [`build`](Builder::build)
    /// refuses 0. The system rounds a size up to its minimum and to whole
    /// pages; a size it cannot give (`usize::MAX`, say) fails `build` with
    /// the thread spawn's error, naming this setting and its value (a pool
    /// thread that cannot be spawned later fails the commands waiting for
    /// it with [`CommandError::Failed`](crate::process::CommandError::Failed)
    /// if no other pool thread lives).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Every `ticks`-th time a worker looks for work, it checks its inject
    /// queue, the global queue and its *continue*d processes first (default
    /// 61, Go's number: a prime, so the check does not fall into step with
    /// periodic workloads, and large enough that the check's cost, one
    /// atomic load, vanishes); halfway between two checks it takes the
    /// oldest process of its own deque instead of the newest, so a process
    /// with `d` older ones ahead of it there runs within `ticks * (d + 1)`
    /// of that worker's steps (for `ticks` of at least 2; 1 leaves no tick
    /// between checks, and the deque is then newest first only; 0 is
    /// refused by [`build`](Builder::build)). `u32::MAX` is taken: the
    /// checks then come once every 2^32 ticks, which in practice turns
    /// them off.
    pub fn global_queue_interval(mut self, ticks: u32) -> Self {
        self.global_queue_interval = ticks;
        self
    }

    /// An idle worker spins with a CPU pause for rounds below `spin_tight`,
    /// yields its thread for rounds below `park_after`, and parks at
    /// `park_after` (defaults 4 and 16: about 1 µs of pausing, then roughly
    /// 12 scheduler yields, ~10-50 µs, before a park that costs a futex wake
    /// of ~5-20 µs to undo). `park_after` must be at least 1
    /// ([`build`](Builder::build) refuses 0); a `spin_tight` at or above it
    /// spins every round before the park, and 0 never spins. `u32::MAX` is
    /// taken for either: a `park_after` of `u32::MAX` keeps an idle worker
    /// spinning or yielding for 2^32 rounds before it parks, which in
    /// practice means it never parks and an idle scheduler keeps its cores
    /// busy.
    pub fn spin_thresholds(mut self, spin_tight: u32, park_after: u32) -> Self {
        self.spin_tight = spin_tight;
        self.park_after = park_after;
        self
    }

    /// The most processes alive at once; submits beyond it are refused
    /// with the process handed back. Default: no limit. At least 1
    /// ([`build`](Builder::build) refuses 0). Whatever the limit, at most
    /// 2^32 - 2 processes are alive at once (a PID's slot index has 32
    /// bits): a larger limit, `usize::MAX` included, means that one. A
    /// [`Receiver`](super::Receiver) takes a place too.
    pub fn max_processes(mut self, limit: usize) -> Self {
        self.max_processes = Some(limit);
        self
    }

    /// Starts a long-step monitor: a thread (like Go's `sysmon`) that wakes
    /// every `threshold / 4` (at least 1 ms) and, for each step that has run
    /// longer than `threshold`, once per step:
    ///
    /// - calls `on_long_step` with the PID, the worker and the time elapsed
    ///   (a lower bound; the step began up to one period earlier);
    /// - asks the step to yield: its
    ///   [`StepOutput::should_yield`](crate::process::StepOutput::should_yield)
    ///   returns `true` from then on;
    /// - and, while the step goes on, wakes a parked worker whenever the
    ///   stuck worker's queues hold work, so that it is stolen.
    ///
    /// Steps cannot be preempted; a step that never polls `should_yield`
    /// holds its worker until it returns. "Step" here covers the command
    /// handlers it yields to and `close`, which run on the worker too.
    /// [`DEFAULT_LONG_STEP_THRESHOLD`](crate::sched::DEFAULT_LONG_STEP_THRESHOLD) is
    /// 10 ms, Go's. Any threshold is taken: `Duration::ZERO` makes a long
    /// step of every step the monitor finds running at two samples in a
    /// row (1 ms apart), and `Duration::MAX` never reports one (the monitor
    /// thread still runs, and stops at shutdown). The callback runs on the
    /// monitor thread: keep it short,
    /// as the next tick waits for it; a panic in it is caught and the
    /// monitor goes on. The monitor stops (and is joined) at
    /// shutdown. With a monitor, workers pay three plain stores per step to
    /// a line of their own; without one, a predictable branch, and
    /// `should_yield` is always `false`.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use stepsched::sched::{Scheduler, DEFAULT_LONG_STEP_THRESHOLD};
    ///
    /// let scheduler = Scheduler::<Job>::builder()
    ///     .long_step_monitor(DEFAULT_LONG_STEP_THRESHOLD, |long| {
    ///         eprintln!("{} has run {:?} on worker {}", long.pid, long.elapsed, long.worker);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # drop(scheduler);
    /// ```
    pub fn long_step_monitor(
        mut self,
        threshold: Duration,
        on_long_step: impl Fn(LongStep) + Send + Sync + 'static,
    ) -> Self {
        self.monitor = Some(MonitorConfig {
            threshold,
            on_long_step: Box::new(on_long_step),
        });
        self
    }

    /// Turns the execution tracer on: each worker records its scheduling
    /// events (steps, steals, queue takes, spins, parks, wakeups, spawns,
    /// completions) into a ring of `events_per_worker` records (32 bytes
    /// each, allocated at build; when full, the oldest are overwritten),
    /// and threads that are not workers record their submits, sends and
    /// waking completions into one more such ring, behind a mutex.
    /// After [`Scheduler::shutdown`], [`Scheduler::trace`] returns the
    /// [`Trace`](crate::sched::Trace), which writes Chrome trace-event JSON for
    /// Perfetto; [`Scheduler::set_tracing`] pauses and resumes recording.
    /// Off by default; off, each event site costs one predictable branch.
    /// On, a step costs two reads of the TSC (where it is invariant, else
    /// of `Instant`) and one 32-byte record, a small part of a message
    /// round trip. See
    /// `src/sched/observe/trace.rs`.
    /// `events_per_worker` must be at least 1 and at most 2^32
    /// ([`build`](Builder::build) refuses 0 and more).
    pub fn trace(mut self, events_per_worker: usize) -> Self {
        self.trace = Some(events_per_worker);
        self
    }

    /// Counts the events queued for each process, so that
    /// [`Scheduler::processes`] can report them
    /// ([`ProcessInfo::queued`](crate::sched::ProcessInfo::queued); `None` without
    /// this). Off by default: it costs an atomic read-modify-write per event
    /// delivered, on the receiving process's slot, felt most by a fan-in of
    /// many replies to one process (`benches/peers`, `fan_out_fan_in` and
    /// `ping_pong` show it).
    ///
    /// ```
    /// use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// struct Quiet;
    /// impl Process for Quiet {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = ();
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
    ///         -> Result<(), ()> { out.done(()); Ok(()) }
    /// }
    ///
    /// let scheduler = Scheduler::<Quiet>::builder().count_queued_events(true).build()?;
    /// assert!(scheduler.processes().iter().all(|p| p.queued.is_some()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn count_queued_events(mut self, on: bool) -> Self {
        self.count_queued = on;
        self
    }

    /// Records latency figures (default: off): each worker times every
    /// step it runs, and keeps two [`Histogram`](crate::sched::Histogram)s
    /// and its busy time, read by [`Scheduler::stats`]:
    /// [`Stats::latency`](crate::sched::Stats::latency) (step latency: how
    /// long each step ran; schedule latency: from the moment the process
    /// was made Ready, by its creation, a message, a completion, a timer,
    /// a terminate or its own `Continue`, to the start of its step) and
    /// [`WorkerStats::busy`](crate::sched::WorkerStats::busy).
    ///
    /// Off, no step reads a clock for them and nothing is recorded. On,
    /// each step costs two clock reads (the TSC where it is invariant, as
    /// the tracer's clock, else `Instant`) and a few stores into the
    /// worker's own histograms, and each wake one more clock read; the
    /// histograms take about 8 KiB per worker, allocated at build, and
    /// `build` sleeps 2 ms to measure the clock's rate.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::builder().workers(1).record_latency(true).build()?;
    /// scheduler.submit_joinable(Job, "job", ()).unwrap().join().unwrap();
    /// let stats = scheduler.stats();
    /// let steps = stats.step_latency();
    /// assert_eq!(steps.count(), 1);
    /// println!("p99 step {:?} ns, busy {:?}", steps.quantile(0.99), stats.total().busy);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn record_latency(mut self, on: bool) -> Self {
        self.record_latency = on;
        self
    }

    /// Counts processes and steps per kind (default: off), for a process
    /// type of several kinds ([`kinds!`](crate::kinds), or any type that
    /// sets [`Process::KINDS`](crate::process::Process::KINDS)):
    /// [`Stats::kinds`](crate::sched::Stats::kinds) then has one entry per
    /// kind, with its live processes, its processes started and its steps.
    /// A type with no kinds (`KINDS` empty) has none, on or off.
    ///
    /// Off, it costs nothing but a branch per step, creation and close. On,
    /// a step adds one to its worker's own counter for its kind (a load and
    /// a store), and each creation and each close one shared atomic add.
    ///
    /// ```
    /// use stepsched::process::{Event, Kind, NoCommand, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// struct Ping;
    /// struct Pong;
    /// stepsched::kinds! {
    ///     /// Two kinds.
    ///     pub enum Node { Ping(Ping), Pong(Pong) }
    ///     /// Their inputs.
    ///     pub enum NodeInput;
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ();
    ///     type Error = ();
    /// }
    /// impl Kind<Node> for Ping {
    ///     type Input = ();
    ///     fn init(&mut self, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, _: &mut Vec<Event<Node>>, out: &mut StepOutput<'_, Node>) -> Result<(), ()> {
    ///         out.done(());
    ///         Ok(())
    ///     }
    /// }
    /// impl Kind<Node> for Pong {
    ///     type Input = ();
    ///     fn init(&mut self, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), ()> {
    ///         Ok(()) // idles
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::<Node>::builder().workers(1).count_kinds(true).build()?;
    /// scheduler.submit_kind_joinable(Ping, ()).unwrap().join().unwrap();
    /// scheduler.submit_kind(Pong, ()).unwrap();
    /// let kinds = scheduler.stats().kinds;
    /// assert_eq!((kinds[0].name, kinds[0].live, kinds[0].steps), ("Ping", 0, 1));
    /// assert_eq!((kinds[1].name, kinds[1].live), ("Pong", 1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn count_kinds(mut self, on: bool) -> Self {
        self.count_kinds = on;
        self
    }

    /// The most events one step is handed (default
    /// [`DEFAULT_EVENTS_PER_STEP`], 1,024; at least 1:
    /// [`build`](Builder::build) refuses 0).
    ///
    /// A process sent more than that between two of its steps gets them
    /// over several steps, in order, each run soon after the last (the
    /// process stays runnable while events are queued for it, whatever
    /// status its step returns), so a flood cannot make one step run for
    /// seconds, and the worker's event buffer stays the size of one step's
    /// events. Events a step leaves in its vector are not dropped either:
    /// the next step gets them first (see [`Process::step`]).
    ///
    /// Any value from 1 up is taken: 1 hands each step one event, and
    /// `usize::MAX` means no cap (a step gets all that is queued). Each
    /// worker keeps spare mailbox nodes up to sixteen steps' worth (at
    /// least 256), so with a very large cap the nodes of a burst stay with
    /// the worker instead of going back.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::<Job>::builder().max_events_per_step(64).build()?;
    /// # drop(scheduler);
    /// assert!(Scheduler::<Job>::builder().max_events_per_step(0).build().is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn max_events_per_step(mut self, events: usize) -> Self {
        self.events_per_step = events;
        self
    }

    /// Bounds every process's mailbox to `messages` queued messages (at
    /// least 1: [`build`](Builder::build) refuses 0, as a spawn refuses
    /// [`SpawnOptions::mailbox_capacity(0)`](crate::process::SpawnOptions::mailbox_capacity)).
    /// `u32::MAX` is taken: it bounds nothing in practice, but every
    /// message still pays the count. Default: unbounded.
    /// A process may be given its own capacity, or none, with
    /// [`SpawnOptions`](crate::process::SpawnOptions).
    ///
    /// Only messages count and only messages are refused: completions,
    /// cancels and the scheduler's own events are bounded by what the
    /// process asked for and always get in. When the mailbox is full:
    ///
    /// - [`Scheduler::send`](crate::sched::Scheduler::send) hands the message back
    ///   in [`SendError::Full`](crate::sched::SendError::Full), at once;
    ///   [`Scheduler::blocking_send_timeout`](crate::sched::Scheduler::blocking_send_timeout) parks
    ///   the calling thread until a drain makes room or the time is up.
    /// - A send from a step is neither dropped nor blocked (a worker must
    ///   never wait on another process): the message comes back to its
    ///   sender as [`Event::Refused`](crate::process::Event::Refused) in
    ///   its next step, which comes soon (a refusal wakes it like a
    ///   completion). The sender decides: retry, shed, or slow down. This
    ///   is why the policy is not "block the sender": a blocked step would
    ///   hold its worker, and two processes full of each other's messages
    ///   would deadlock the scheduler.
    ///
    /// The count is exact (never more than `messages` queued, and a sender
    /// that sees the drain's release finds room): a sender reserves a place
    /// with a CAS beside the state word it already touches, and the
    /// process gives back a whole step's places with a plain store. See
    /// `src/sched/bound.rs`. Unbounded mailboxes pay one load and branch
    /// per message.
    pub fn mailbox_capacity(mut self, messages: u32) -> Self {
        self.mailbox_capacity = Some(messages);
        self
    }

    /// Starts the workers.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`], naming the setting and its value,
    /// for a value the scheduler cannot honour (0 workers or more than
    /// 65,536, a 0 stack size, a 0 global queue interval, a 0 `park_after`,
    /// a 0 process limit, a trace ring of 0 events or more than 2^32, 0
    /// events per step, a 0 mailbox capacity, 0 blocking threads, a
    /// transport without a codec or a codec without a transport): a
    /// setting is refused rather than bent to another value. Else the error
    /// of a thread that cannot be spawned, naming the stack size if one was
    /// set (threads already started are stopped again).
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Job;
    /// # impl Process for Job {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.done(()); Ok(())
    /// #     }
    /// # }
    /// use stepsched::sched::Scheduler;
    ///
    /// let refused = Scheduler::<Job>::builder().workers(0).build().unwrap_err();
    /// assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    /// assert!(refused.to_string().contains("workers(0)"));
    /// ```
    pub fn build(self) -> io::Result<Scheduler<P>> {
        self.validate()?;
        let (node, remote) = self.remote.finish()?;
        let workers = self.workers.unwrap_or_else(|| match self.simulation {
            // Not the machine's count: a seed replays on any machine.
            Some(_) => SIMULATED_WORKERS,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        });
        let config = Config {
            workers,
            global_queue_interval: self.global_queue_interval,
            spin_tight: self.spin_tight,
            park_after: self.park_after,
            trace: self.trace,
            monitored: self.monitor.is_some(),
            count_queued: self.count_queued,
            record_latency: self.record_latency,
            count_kinds: self.count_kinds,
            events_per_step: self.events_per_step,
            // 0: unbounded (refused above as a setting).
            mailbox_capacity: self.mailbox_capacity.unwrap_or(0),
            blocking: PoolConfig {
                max_threads: self.max_blocking_threads,
                keep_alive: self.blocking_keep_alive,
                stack_size: self.stack_size,
                simulated: self.simulation.is_some(),
            },
            simulation: self.simulation,
            faults: self.faults.thresholds(),
        };
        Scheduler::start(
            config,
            self.thread_name,
            self.stack_size,
            self.max_processes,
            self.handlers,
            self.hooks,
            self.monitor,
            (node, remote),
        )
        .map_err(|error| check::with_stack_size(error, self.stack_size))
    }
}

impl<P: Process> Scheduler<P> {
    /// Starts configuring a scheduler.
    pub fn builder() -> Builder<P> {
        Builder::new()
    }
}
