//! [`StepOutput`]: what a step asks of the scheduler, and its [`Status`].

use super::{ExitReason, Pid, Process, ProcessError};
use crate::sync::{AtomicU64, Ordering};
use core::fmt;

/// How a process wants to go on after a step.
///
/// Non-exhaustive: new statuses may be added in a minor release. Building
/// one is unaffected; a `match` outside this crate ends with a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status<O> {
    /// Run me again soon, after the work already waiting (like Go's
    /// `Gosched`): a process that always continues cannot starve others.
    Continue,
    /// I yielded commands: wake me when one completes. Messages that arrive
    /// meanwhile are kept for my next step but do not wake me.
    Wait,
    /// Wake me when a message (or a completion) arrives.
    Idle,
    /// I am finished, with this result. `close` runs next.
    Done(O),
}

/// Reserves a PID for a child, runs its `init` and parks it until the step
/// ends. Implemented by the scheduler; a trait object here keeps the process
/// model free of scheduler types.
pub(crate) trait Spawner<P: Process>: super::registry::Names {
    fn spawn(
        &self,
        process: P,
        method: &str,
        input: P::Input,
        options: &SpawnOptions,
    ) -> Result<Pid, SpawnError<P>>;

    /// The scheduler's time (`StepOutput::now`).
    fn now(&self) -> std::time::Instant;
}

/// What [`StepOutput::spawn`] spawns with: a static, so that a spawn
/// without options builds and drops none.
static DEFAULT_OPTIONS: SpawnOptions = SpawnOptions::new();

/// How to start one process, beyond its `init` arguments: given to
/// [`Scheduler::submit_with`](crate::sched::Scheduler::submit_with) and
/// [`StepOutput::spawn_with`]. The default takes every setting from the
/// scheduler's [`Builder`](crate::sched::Builder).
///
/// ```
/// use stepsched::process::SpawnOptions;
///
/// let bounded = SpawnOptions::new().mailbox_capacity(1_000);
/// let unbounded = SpawnOptions::new().unbounded_mailbox();
/// assert_ne!(bounded, unbounded);
/// assert_eq!(SpawnOptions::new(), SpawnOptions::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SpawnOptions {
    capacity: Capacity,
    /// The name to register the process under, at its spawn.
    name: Option<super::Name>,
}

/// The mailbox limit a [`SpawnOptions`] asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
enum Capacity {
    /// The builder's.
    #[default]
    Default,
    /// None.
    Unbounded,
    /// This many messages (0 is refused by the spawn).
    Bounded(u32),
}

impl SpawnOptions {
    /// Every setting from the scheduler's builder.
    pub const fn new() -> Self {
        SpawnOptions {
            capacity: Capacity::Default,
            name: None,
        }
    }

    /// Bounds the process's mailbox to `messages` queued messages, whatever
    /// the builder's default (see
    /// [`Builder::mailbox_capacity`](crate::sched::Builder::mailbox_capacity)),
    /// from 1 to `u32::MAX` (which bounds nothing in practice, but still
    /// counts every message).
    ///
    /// 0 is taken here and refused by the spawn, as
    /// `Builder::mailbox_capacity(0)` is refused by the build: a mailbox
    /// that can hold nothing refuses every message, which is never what is
    /// meant. The submit or spawn then fails with
    /// [`SpawnError::InvalidOptions`], naming the setting, and hands the
    /// process back without running its `init`.
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
    /// use stepsched::process::{SpawnError, SpawnOptions};
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::builder().workers(1).build()?;
    /// let empty = SpawnOptions::new().mailbox_capacity(0);
    /// match scheduler.submit_with(Job, "", (), empty) {
    ///     Err(SpawnError::InvalidOptions(_job, why)) => {
    ///         assert!(why.contains("mailbox_capacity(0)"))
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub const fn mailbox_capacity(mut self, messages: u32) -> Self {
        self.capacity = Capacity::Bounded(messages);
        self
    }

    /// Leaves the process's mailbox unbounded, whatever the builder's
    /// default.
    pub const fn unbounded_mailbox(mut self) -> Self {
        self.capacity = Capacity::Unbounded;
        self
    }

    /// Registers the process under `name` as it is created, atomically
    /// with its creation: no step of it, nor any other party, sees it
    /// without its name (see [`Scheduler::register`](crate::sched::Scheduler::register)).
    /// A name held by a live process refuses the spawn with
    /// [`SpawnError::NameTaken`], the process handed back.
    ///
    /// ```
    /// use stepsched::process::SpawnOptions;
    ///
    /// let options = SpawnOptions::new().name(format!("room-{}", 42));
    /// assert_eq!(options.name_ref().map(|n| n.as_str()), Some("room-42"));
    /// ```
    pub fn name(mut self, name: impl Into<super::Name>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The name [`name`](Self::name) asked for, if any.
    pub fn name_ref(&self) -> Option<&super::Name> {
        self.name.as_ref()
    }

    /// The mailbox limit this asks for (0: unbounded), or `default`.
    pub(crate) fn capacity_or(&self, default: u32) -> u32 {
        match self.capacity {
            Capacity::Default => default,
            Capacity::Unbounded => 0,
            Capacity::Bounded(messages) => messages,
        }
    }

    /// Why a spawn must refuse these options, naming the setting and its
    /// value; `None` if it can honour them.
    pub(crate) fn refused(&self) -> Option<&'static str> {
        match self.capacity {
            Capacity::Bounded(0) => {
                Some("SpawnOptions::mailbox_capacity(0): a mailbox holds at least 1 message")
            }
            _ => None,
        }
    }
}

/// The side effects a step collects, in buffers the worker reuses.
pub(crate) struct Effects<P: Process> {
    pub(crate) commands: Vec<(u64, P::Command)>,
    pub(crate) sends: Vec<(Pid, P::Message)>,
    pub(crate) spawned: Vec<Pid>,
    /// Monitor and link requests, in the order the step made them
    /// (applied by `src/sched/worker/signals.rs`). Unallocated until used.
    pub(crate) links: Vec<LinkOp>,
    /// Timers set and cancelled, in call order (`timer.rs`).
    pub(crate) timers: Vec<super::timer::TimerOp>,
    /// Calls and replies, in call order (`call.rs`). Unallocated until used.
    pub(crate) calls: Vec<super::call::CallOp<P::Message>>,
    /// The id of the next call a step on this worker makes: the worker's
    /// index in the top 16 bits, a count below (`Effects::for_worker`).
    pub(crate) next_call: u64,
}

/// A monitor or link request of a step ([`StepOutput::monitor`] and the
/// others), or an exit signal it sends ([`StepOutput::exit`],
/// [`StepOutput::kill`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkOp {
    Monitor(Pid),
    Demonitor(Pid),
    Link(Pid),
    Unlink(Pid),
    TrapExits(bool),
    /// `exit(pid, reason)`: trappable.
    Exit(Pid, ExitReason),
    /// `kill(pid)`: untrappable.
    Kill(Pid),
}

impl<P: Process> Effects<P> {
    pub(crate) fn new() -> Self {
        Effects {
            commands: Vec::new(),
            sends: Vec::new(),
            spawned: Vec::new(),
            links: Vec::new(),
            timers: Vec::new(),
            calls: Vec::new(),
            next_call: 0,
        }
    }

    /// The buffers of worker `index`: its call ids are its own.
    pub(crate) fn for_worker(index: usize) -> Self {
        let mut effects = Self::new();
        effects.next_call = (index as u64) << 48;
        effects
    }
}

/// What a step writes: commands to dispatch, messages to send, children to
/// spawn, and its [`Status`].
///
/// Everything takes effect right after the step returns, on the same worker:
/// children are queued first, then messages are delivered in the order they
/// were written, then commands are dispatched. A process woken by one of
/// these messages runs next on this worker (like Go's `runnext`), so a
/// request and its reply stay in one core's cache.
///
/// If a step sets no status, it is [`Status::Wait`] when the step yielded
/// commands and [`Status::Idle`] otherwise.
pub struct StepOutput<'a, P: Process> {
    pub(crate) pid: Pid,
    pub(crate) status: Option<Status<P::Output>>,
    pub(crate) effects: &'a mut Effects<P>,
    pub(crate) spawner: &'a dyn Spawner<P>,
    /// The worker's preemption request word: holds the sequence number of
    /// the step asked to yield (written by the long-step monitor).
    preempt: &'a AtomicU64,
    /// This step's sequence number on its worker (odd; never 0).
    step_seq: u64,
}

impl<'a, P: Process> StepOutput<'a, P> {
    pub(crate) fn new(
        pid: Pid,
        effects: &'a mut Effects<P>,
        spawner: &'a dyn Spawner<P>,
        preempt: &'a AtomicU64,
        step_seq: u64,
    ) -> Self {
        StepOutput {
            pid,
            status: None,
            effects,
            spawner,
            preempt,
            step_seq,
        }
    }

    /// Whether the scheduler asks this step to yield: it has run longer
    /// than the long-step monitor's threshold (see
    /// `Builder::long_step_monitor`). Always `false` without a monitor.
    ///
    /// Steps cannot be preempted: a step is a plain call, and Rust has no
    /// safe way to interrupt it. A long computation should therefore be
    /// written as a loop that polls `should_yield` every so often (it costs
    /// one relaxed load) and, when it returns `true`, saves its progress in
    /// the process and returns [`Status::Continue`]: the process runs again
    /// after the work that waited meanwhile, as goroutines were preempted
    /// cooperatively before Go 1.14.
    ///
    /// ```
    /// use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
    ///
    /// /// Sums 0..n, a slice at a time.
    /// struct Sum { next: u64, n: u64, total: u64 }
    ///
    /// impl Process for Sum {
    ///     type Input = u64;
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = u64;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, n: u64) -> Result<(), ()> {
    ///         self.n = n;
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         while self.next < self.n {
    ///             // Poll every 4096 items: cheap, and often enough.
    ///             if self.next % 4096 == 0 && out.should_yield() {
    ///                 out.set_status(Status::Continue); // resume here later
    ///                 return Ok(());
    ///             }
    ///             self.total += self.next;
    ///             self.next += 1;
    ///         }
    ///         out.done(self.total);
    ///         Ok(())
    ///     }
    /// }
    /// ```
    #[inline]
    pub fn should_yield(&self) -> bool {
        // Relaxed: pairs with the Relaxed store in the monitor's
        // `request_yield`; a request carries no data, and a late one is
        // seen at the next poll. It names its step, so one meant for an
        // earlier step on this worker never matches.
        self.preempt.load(Ordering::Relaxed) == self.step_seq
    }

    /// The PID of the process being stepped.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Yields `command` to the handler registered for its
    /// [kind](super::Command::kind). Its completion comes back as an
    /// [`Event::Completion`](super::Event::Completion) carrying `tag`.
    pub fn yield_command(&mut self, tag: u64, command: P::Command) {
        self.effects.commands.push((tag, command));
    }

    /// Sends `message` to `to` after the step. If `to` cannot take it
    /// (unknown, finished), the scheduler reports it as undelivered (see
    /// `Builder::on_undelivered`) with the message.
    pub fn send(&mut self, to: Pid, message: P::Message) {
        self.effects.sends.push((to, message));
    }

    /// Creates a child process: runs its `init(method, input)` now, on this
    /// worker, and queues it when the step ends (the step's first child
    /// runs next on this worker, unless a message, monitor or link of the
    /// step wakes a process, which then does). Returns the child's PID,
    /// which this step may already [`send`](Self::send) to.
    ///
    /// # Errors
    ///
    /// [`SpawnError`] hands the child back if the scheduler is stopping or
    /// full (or, from [`spawn_with`](StepOutput::spawn_with), if its options
    /// are refused), or reports the error or panic of its `init`.
    pub fn spawn(
        &mut self,
        process: P,
        method: &str,
        input: P::Input,
    ) -> Result<Pid, SpawnError<P>> {
        let pid = (self.spawner).spawn(process, method, input, &DEFAULT_OPTIONS)?;
        self.effects.spawned.push(pid);
        Ok(pid)
    }

    /// [`spawn`](StepOutput::spawn) with [`SpawnOptions`] (a mailbox
    /// capacity of its own, say).
    ///
    /// # Errors
    ///
    /// As [`spawn`](StepOutput::spawn), and
    /// [`SpawnError::InvalidOptions`] for options it cannot honour (a
    /// mailbox capacity of 0), with the child handed back before its
    /// `init`.
    pub fn spawn_with(
        &mut self,
        process: P,
        method: &str,
        input: P::Input,
        options: SpawnOptions,
    ) -> Result<Pid, SpawnError<P>> {
        let pid = self.spawner.spawn(process, method, input, &options)?;
        self.effects.spawned.push(pid);
        Ok(pid)
    }

    /// Sets the status (the last call wins).
    pub fn set_status(&mut self, status: Status<P::Output>) {
        self.status = Some(status);
    }

    /// Shorthand for `set_status(Status::Done(output))`.
    pub fn done(&mut self, output: P::Output) {
        self.set_status(Status::Done(output));
    }

    /// The status this step has set so far.
    pub fn status(&self) -> Option<&Status<P::Output>> {
        self.status.as_ref()
    }

    /// The status the scheduler will apply (see the type docs for the
    /// default).
    pub(crate) fn take_status(&mut self) -> Status<P::Output> {
        match self.status.take() {
            Some(status) => status,
            None if self.effects.commands.is_empty() => Status::Idle,
            None => Status::Wait,
        }
    }

    /// Creates a child of another (or the same) [kind](super::Kind):
    /// [`spawn`](Self::spawn) with the kind wrapped into its variant of `P`
    /// and `input` checked against the kind by the compiler (see
    /// [`kinds`](super::kinds)).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn spawn_kind<K>(&mut self, kind: K, input: K::Input) -> Result<Pid, SpawnError<P>>
    where
        K: super::Kind<P>,
        P: super::Hosts<K>,
    {
        let (process, input) = P::host(kind, input);
        self.spawn(process, <P as super::Hosts<K>>::KIND, input)
    }
}

impl<P: Process> StepOutput<'_, P> {
    /// Monitors `pid`: when it ends, this process receives
    /// [`Event::Down`](super::Event::Down)` { pid, reason }` exactly once
    /// (Erlang's `erlang:monitor(process, Pid)`). If `pid` has already
    /// ended or never existed, the `Down` comes at once with
    /// [`ExitReason::NoProc`](ExitReason::NoProc); if it ends while
    /// the monitor is being set, the `Down` has either its reason or
    /// `NoProc`, never both. A stale `pid` never yields a `Down` about a
    /// newer process in the same slot.
    ///
    /// Unlike Erlang, a process holds at most one monitor per target:
    /// monitoring a PID it already monitors does nothing (one `Down`), and
    /// monitoring itself does nothing. Monitors of a child spawned in the
    /// same step are set before the child is queued, so they never race
    /// its end.
    ///
    /// ```
    /// use stepsched::process::{Event, ExitReason, NoCommand, Pid, Process, StepOutput};
    ///
    /// /// Waits for one process to end and finishes with how it ended.
    /// struct Watcher { target: Option<Pid> }
    ///
    /// impl Process for Watcher {
    ///     type Input = Pid;
    ///     type Message = ();
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = ExitReason;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, target: Pid) -> Result<(), ()> {
    ///         self.target = Some(target);
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         if let Some(target) = self.target.take() {
    ///             out.monitor(target); // first step
    ///         }
    ///         for event in events.drain(..) {
    ///             if let Event::Down { reason, .. } = event {
    ///                 out.done(reason);
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub fn monitor(&mut self, pid: Pid) {
        self.effects.links.push(LinkOp::Monitor(pid));
    }

    /// Removes the monitor of `pid`, if any: no
    /// [`Event::Down`](super::Event::Down) about it reaches a step after
    /// this one, even if `pid` ended meanwhile (Erlang's `demonitor(Ref,
    /// [flush])`), nor one already collected for a later step (one past
    /// the [cap of events per step](crate::sched::Builder::max_events_per_step),
    /// say). A `Down` already among this step's events (collected with the
    /// message that asked for the demonitor, say) is this step's to handle.
    pub fn demonitor(&mut self, pid: Pid) {
        self.effects.links.push(LinkOp::Demonitor(pid));
    }

    /// Links this process with `pid`: when either ends other than with
    /// [`Status::Done`], the other is ended too (its outcome
    /// [`ProcessError::Terminated`](super::ProcessError::Terminated), its
    /// watchers told [`ExitReason::Linked`](ExitReason::Linked)),
    /// unless it [traps exits](Self::trap_exits): then it receives
    /// [`Event::Down`](super::Event::Down) instead and goes on. A normal
    /// end only removes the link (a trapping process is told, with
    /// [`ExitReason::Done`](ExitReason::Done)). Linking a process
    /// that has already ended is its abnormal end
    /// ([`ExitReason::NoProc`](ExitReason::NoProc)), as in Erlang.
    ///
    /// A process ended by a link ends without another step (as Erlang's
    /// exit signal kills at once), between two of its steps: a step is
    /// never interrupted. Linking an already-linked PID, or itself, does
    /// nothing.
    pub fn link(&mut self, pid: Pid) {
        self.effects.links.push(LinkOp::Link(pid));
    }

    /// Removes the link with `pid`, if any, on both sides: no exit from it
    /// (its end's, nor, trapped, one its steps sent with
    /// [`exit`](Self::exit) and not yet given to a step) reaches this
    /// process after this step.
    pub fn unlink(&mut self, pid: Pid) {
        self.effects.links.push(LinkOp::Unlink(pid));
    }

    /// Whether the abnormal end of a linked process ends this one (`false`,
    /// the default) or comes as an [`Event::Down`](super::Event::Down)
    /// (`true`), from the next step on: Erlang's
    /// `process_flag(trap_exit, true)`, except that a trapped exit is a
    /// `Down` (not an `'EXIT'` message). It also decides what a step's
    /// [`exit`](Self::exit) does to this process; only a
    /// [`kill`](Self::kill) cannot be trapped. A
    /// [`Scheduler::terminate`](crate::sched::Scheduler::terminate) is not
    /// an exit signal: it ends the process it names, and its links then
    /// see [`ExitReason::Terminated`].
    pub fn trap_exits(&mut self, trap: bool) {
        self.effects.links.push(LinkOp::TrapExits(trap));
    }
}

impl<P: Process> fmt::Debug for StepOutput<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepOutput")
            .field("pid", &self.pid)
            .field("commands", &self.effects.commands.len())
            .field("sends", &self.effects.sends.len())
            .field("spawned", &self.effects.spawned)
            .finish_non_exhaustive()
    }
}

/// Why a process could not be created; the process comes back when it was
/// never initialised.
///
/// Non-exhaustive: new reasons may be added in a minor release, so a `match`
/// outside this crate ends with a `_` arm
/// ([`into_process`](Self::into_process) takes the process back from any of
/// them).
#[non_exhaustive]
pub enum SpawnError<P: Process> {
    /// The scheduler is shutting down or stopped.
    ShuttingDown(P),
    /// The scheduler holds its maximum number of live processes.
    AtCapacity(P),
    /// The process's `init` failed or panicked; it was not started and
    /// `close` was not called.
    Init(P, ProcessError<P::Error>),
    /// Its [`SpawnOptions`] ask for what the scheduler cannot honour (a
    /// mailbox capacity of 0); the text names the setting and its value.
    /// The process was not initialised.
    InvalidOptions(P, &'static str),
    /// Its [`SpawnOptions::name`] is registered to a live process,
    /// `holder`. Checked before `init`, and again, atomically with the
    /// creation, after it: a process refused by the first check is handed
    /// back uninitialised; by the second (the name was taken while its
    /// `init` ran), initialised, with its `close` not called. As OTP's
    /// `{already_started, Pid}`, it names the holder, not the name (the
    /// caller's): an error a step drops owns nothing but the process.
    NameTaken {
        /// The process that was refused.
        process: P,
        /// The process the name is registered to.
        holder: Pid,
    },
}

impl<P: Process> SpawnError<P> {
    /// The process that was refused.
    pub fn into_process(self) -> P {
        match self {
            SpawnError::ShuttingDown(p)
            | SpawnError::AtCapacity(p)
            | SpawnError::Init(p, _)
            | SpawnError::InvalidOptions(p, _)
            | SpawnError::NameTaken { process: p, .. } => p,
        }
    }
}

impl<P: Process> fmt::Debug for SpawnError<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::ShuttingDown(_) => f.write_str("ShuttingDown(..)"),
            SpawnError::AtCapacity(_) => f.write_str("AtCapacity(..)"),
            SpawnError::Init(_, e) => f.debug_tuple("Init").field(&"..").field(e).finish(),
            SpawnError::InvalidOptions(_, why) => f
                .debug_tuple("InvalidOptions")
                .field(&"..")
                .field(why)
                .finish(),
            SpawnError::NameTaken { holder, .. } => f
                .debug_struct("NameTaken")
                .field("holder", holder)
                .finish_non_exhaustive(),
        }
    }
}

impl<P: Process> fmt::Display for SpawnError<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::ShuttingDown(_) => f.write_str("the scheduler is shutting down"),
            SpawnError::AtCapacity(_) => f.write_str("the scheduler is at its process limit"),
            SpawnError::Init(_, e) => write!(f, "process init failed: {e}"),
            SpawnError::InvalidOptions(_, why) => write!(f, "spawn refused: {why}"),
            SpawnError::NameTaken { holder, .. } => {
                write!(f, "spawn refused: its name is registered to {holder}")
            }
        }
    }
}

impl<P: Process> std::error::Error for SpawnError<P> {}
