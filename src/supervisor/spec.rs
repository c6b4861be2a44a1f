//! What a supervisor is told: its children ([`ChildSpec`]), how to restart
//! them ([`Restart`], [`Strategy`]), how to stop them ([`Shutdown`]), and
//! its restart intensity ([`SupervisorSpec`]).

use crate::process::{ExitReason, Hosts, Kind, Name, Process, SpawnOptions};
use core::fmt;
use std::sync::Arc;
use std::time::Duration;

/// When a child that ended is started again (OTP's `restart`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Restart {
    /// Always, however it ended (OTP's `permanent`): a server that must
    /// run for as long as its supervisor does.
    #[default]
    Permanent,
    /// Only if it ended abnormally: any reason but
    /// [`ExitReason::Done`] and [`ExitReason::Shutdown`] (OTP's
    /// `transient`, whose normal reasons are `normal` and `shutdown`).
    Transient,
    /// Never (OTP's `temporary`): once it ends, the supervisor forgets it,
    /// and its end counts toward no restart intensity.
    Temporary,
}

impl Restart {
    /// Whether a child ended with `reason` is started again.
    pub fn restarts(self, reason: &ExitReason) -> bool {
        match self {
            Restart::Permanent => true,
            Restart::Transient => !matches!(reason, ExitReason::Done | ExitReason::Shutdown),
            Restart::Temporary => false,
        }
    }
}

/// How a supervisor stops a child (OTP's `shutdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shutdown {
    /// Sends it an exit with [`ExitReason::Shutdown`]
    /// ([`StepOutput::exit`](crate::process::StepOutput::exit)) and waits
    /// this long for it to end: a child that does not trap exits ends at
    /// once; one that traps gets a `Down` from its supervisor and may
    /// clean up first. Past the time it is killed
    /// ([`StepOutput::kill`](crate::process::StepOutput::kill)). A zero
    /// duration kills it in the supervisor's next step at the earliest.
    Timeout(Duration),
    /// Kills it at once (OTP's `brutal_kill`).
    BrutalKill,
    /// Sends it the exit with [`ExitReason::Shutdown`] and waits for as
    /// long as it takes (OTP's `infinity`): for a child that is itself a
    /// supervisor, which stops its own children first, each in its time.
    Infinity,
}

impl Default for Shutdown {
    /// Five seconds, OTP's default for a worker.
    fn default() -> Self {
        Shutdown::Timeout(Duration::from_secs(5))
    }
}

/// Which children a supervisor restarts when one ends and must be
/// restarted (OTP's strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// That child alone.
    #[default]
    OneForOne,
    /// All of them: the others are stopped (in reverse start order, each
    /// given its [`Shutdown`]), then all are started again in order.
    OneForAll,
    /// That child and those started after it (they depend on it): those
    /// are stopped in reverse start order, then all of them started again
    /// in order.
    RestForOne,
}

/// Makes one incarnation of a child: its process and its `init` arguments.
type Start<P> = dyn Fn() -> (P, &'static str, <P as Process>::Input) + Send + Sync;

/// How to start one child, and again after it ends (OTP's child spec).
///
/// `start` is called for each incarnation, so a child restarts from the
/// same arguments. The spec is cheap to clone (the closure is shared).
pub struct ChildSpec<P: Process> {
    pub(crate) id: String,
    pub(crate) start: Arc<Start<P>>,
    pub(crate) restart: Restart,
    pub(crate) shutdown: Shutdown,
    /// What each incarnation is spawned with (a name, a mailbox bound).
    pub(crate) options: SpawnOptions,
}

impl<P: Process> Clone for ChildSpec<P> {
    fn clone(&self) -> Self {
        ChildSpec {
            id: self.id.clone(),
            start: Arc::clone(&self.start),
            restart: self.restart,
            shutdown: self.shutdown,
            options: self.options.clone(),
        }
    }
}

impl<P: Process> fmt::Debug for ChildSpec<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<P: Process> ChildSpec<P> {
    /// A child of the [kind](crate::process::Kind) `K`: each incarnation
    /// is `start()`'s kind and input, spawned as
    /// [`StepOutput::spawn_kind`](crate::process::StepOutput::spawn_kind)
    /// would. [`Restart::Permanent`], [`Shutdown::default`] (5 s).
    ///
    /// ```
    /// # use stepsched::process::{Event, Kind, NoCommand, StepOutput};
    /// # use stepsched::supervisor::Supervisor;
    /// # struct Worker;
    /// # impl Kind<Node> for Worker {
    /// #     type Input = u32;
    /// #     fn init(&mut self, _: u32) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// # stepsched::kinds! {
    /// #     enum Node { Sup(Supervisor<Node>), Worker(Worker) }
    /// #     enum NodeInput;
    /// #     type Message = (); type Command = NoCommand; type Reply = ();
    /// #     type Output = (); type Error = ();
    /// # }
    /// use stepsched::supervisor::{ChildSpec, Restart, Shutdown};
    ///
    /// let spec = ChildSpec::<Node>::new("worker", || (Worker, 7))
    ///     .restart(Restart::Transient)
    ///     .shutdown(Shutdown::BrutalKill);
    /// assert_eq!(spec.id(), "worker");
    /// ```
    pub fn new<K>(
        id: impl Into<String>,
        start: impl Fn() -> (K, K::Input) + Send + Sync + 'static,
    ) -> Self
    where
        K: Kind<P>,
        P: Hosts<K>,
    {
        Self::process(id, move || {
            let (kind, input) = start();
            let (process, input) = P::host(kind, input);
            (process, <P as Hosts<K>>::KIND, input)
        })
    }

    /// A child given as the process itself, the `method` of its `init`
    /// and its input, for a `P` not written with
    /// [`kinds!`](crate::kinds). As [`new`](Self::new) otherwise.
    pub fn process(
        id: impl Into<String>,
        start: impl Fn() -> (P, &'static str, P::Input) + Send + Sync + 'static,
    ) -> Self {
        ChildSpec {
            id: id.into(),
            start: Arc::new(start),
            restart: Restart::default(),
            shutdown: Shutdown::default(),
            options: SpawnOptions::new(),
        }
    }

    /// When it is started again.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// How it is stopped.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// What every incarnation is spawned with
    /// ([`StepOutput::spawn_with`](crate::process::StepOutput::spawn_with)):
    /// a mailbox bound, a name. Default: [`SpawnOptions::new`].
    pub fn options(mut self, options: SpawnOptions) -> Self {
        self.options = options;
        self
    }

    /// Registers every incarnation as `name` at its spawn
    /// ([`SpawnOptions::name`]), so that others find the child by name
    /// across restarts: an ended incarnation's name is released before its
    /// supervisor learns of the end, so the restart takes it again. If the
    /// name is held by another process, the start fails as a spawn error
    /// does (a first start ends the supervisor; a restart counts against
    /// the intensity and is tried again).
    ///
    /// ```
    /// # use stepsched::process::{Event, Kind, NoCommand, StepOutput};
    /// # use stepsched::supervisor::Supervisor;
    /// # struct Worker;
    /// # impl Kind<Node> for Worker {
    /// #     type Input = ();
    /// #     fn init(&mut self, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// # stepsched::kinds! {
    /// #     enum Node { Sup(Supervisor<Node>), Worker(Worker) }
    /// #     enum NodeInput;
    /// #     type Message = (); type Command = NoCommand; type Reply = ();
    /// #     type Output = (); type Error = ();
    /// # }
    /// use stepsched::supervisor::ChildSpec;
    ///
    /// let spec = ChildSpec::<Node>::new("db", || (Worker, ())).name("db");
    /// ```
    pub fn name(mut self, name: impl Into<Name>) -> Self {
        self.options = self.options.name(name);
        self
    }

    /// A child that is itself a supervisor of `spec` (a subtree), given
    /// [`Shutdown::Infinity`] to stop its own children.
    pub fn supervisor(id: impl Into<String>, spec: SupervisorSpec<P>) -> Self
    where
        P: Hosts<super::Supervisor<P>>,
    {
        ChildSpec::new(id, move || (super::Supervisor::new(), spec.clone()))
            .shutdown(Shutdown::Infinity)
    }

    /// Its name among its supervisor's children.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A supervisor's children and policy: the input of a
/// [`Supervisor`](super::Supervisor).
///
/// By default: [`Strategy::OneForOne`], at most 3 restarts in 5 seconds
/// (OTP's defaults are 1 in 5; 3 forgives a short burst), no children.
pub struct SupervisorSpec<P: Process> {
    pub(crate) strategy: Strategy,
    pub(crate) max_restarts: u32,
    pub(crate) period: Duration,
    pub(crate) children: Vec<ChildSpec<P>>,
}

impl<P: Process> Clone for SupervisorSpec<P> {
    fn clone(&self) -> Self {
        SupervisorSpec {
            strategy: self.strategy,
            max_restarts: self.max_restarts,
            period: self.period,
            children: self.children.clone(),
        }
    }
}

impl<P: Process> fmt::Debug for SupervisorSpec<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorSpec")
            .field("strategy", &self.strategy)
            .field("max_restarts", &self.max_restarts)
            .field("period", &self.period)
            .field("children", &self.children)
            .finish()
    }
}

impl<P: Process> Default for SupervisorSpec<P> {
    fn default() -> Self {
        Self::new(Strategy::default())
    }
}

impl<P: Process> SupervisorSpec<P> {
    /// No children yet, `strategy`, the default intensity.
    pub fn new(strategy: Strategy) -> Self {
        SupervisorSpec {
            strategy,
            max_restarts: 3,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// At most `max_restarts` restarts within any `period` (OTP's
    /// intensity and period): one more, and the supervisor stops its
    /// children in reverse start order and ends itself, told to its
    /// watchers and links as
    /// [`ExitReason::Exit`]`("reached_max_restart_intensity")`. 0 restarts:
    /// the first child to need a restart ends the supervisor. A child's
    /// restart counts once however many children a strategy restarts with
    /// it. Time is the scheduler's ([`StepOutput::now`](crate::process::StepOutput::now)):
    /// virtual under a [simulation](crate::sched::Builder::simulation).
    ///
    /// # Panics
    ///
    /// If `period` is zero: no restart would ever count against another.
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        assert!(
            !period.is_zero(),
            "SupervisorSpec::intensity: the period must be longer than zero"
        );
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a child, started after those added before it.
    ///
    /// # Panics
    ///
    /// If a child with the same id was added already: the id names one
    /// child in what the supervisor reports.
    pub fn child(mut self, child: ChildSpec<P>) -> Self {
        assert!(
            self.children.iter().all(|c| c.id != child.id),
            "SupervisorSpec::child: a second child named {:?}",
            child.id
        );
        self.children.push(child);
        self
    }

    /// The children, in start order.
    pub fn children(&self) -> &[ChildSpec<P>] {
        &self.children
    }
}
