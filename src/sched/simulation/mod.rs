//! Deterministic simulation: the whole process system on one thread, in an
//! order chosen from a seed, in virtual time
//! ([`Builder::simulation`](crate::sched::Builder::simulation)).
//!
//! # What runs
//!
//! A simulated scheduler starts no threads: no workers, no blocking pool,
//! no long-step monitor. Its workers exist as they would on threads (each
//! with its deque, `runnext`, inject queue, timing wheel and caches), and
//! the thread that calls a driving method plays them, one turn at a time
//! (`worker/turn.rs`): a turn is the worker loop's body, which fires that
//! worker's due timers, takes a process from its own sources in their
//! usual order, else fires every due wheel, else steals. So the same code
//! paths run as on threads (the deques, the MPSC queues, the state word,
//! delivery, links, bounds, timers, handlers); what the seed chooses is the
//! interleaving between workers:
//!
//! - which worker takes the next turn (uniformly among all of them and,
//!   while blocking commands are queued, the blocking pool);
//! - hence which steal finds what: a worker that has nothing steals half
//!   of the first victim it finds, starting at a victim chosen from the
//!   seed;
//! - which queued blocking command the pool runs next (not only the
//!   oldest: completions come back in any order, as from a pool of threads).
//!
//! Within a step, effects are applied as on a thread: a step's sends are
//! delivered in the order it made them, so per-sender FIFO holds exactly as
//! it does in production, and nothing tighter: which of two receivers runs
//! first, and whether a reply overtakes a third party's message, is the
//! seed's choice.
//!
//! What the seed does not choose: a steal always takes half of its
//! victim, as on threads; an inline handler runs right after the step
//! that yielded its command, as on threads; and no worker parks, so a wake
//! never waits for a parked worker (its cost in real time is not
//! modelled, only its order). Faults are added on demand
//! ([`Faults`]): crashes between steps and failed blocking commands.
//!
//! # Time
//!
//! The scheduler's clock is virtual: timers, `wake_after`, command and
//! call timeouts, `send_after` and the driving methods' own timeouts read
//! it. Each step moves it on by [`SIMULATED_STEP`]; when no worker has
//! anything to do, it jumps to the earliest timer of any wheel, unless that
//! timer is a century or more away (a `Duration::MAX` timeout saturates
//! there: it waits for ever in practice): the simulation is then idle. An hour of
//! timeouts runs in as many turns as there are timers.
//!
//! # What drives it
//!
//! Nothing runs between calls. The driving methods are
//! [`Scheduler::run_steps`](crate::sched::Scheduler::run_steps),
//! [`run_for`](crate::sched::Scheduler::run_for),
//! [`run_until`](crate::sched::Scheduler::run_until) and
//! [`run_until_idle`](crate::sched::Scheduler::run_until_idle);
//! [`JoinHandle::join`](crate::sched::JoinHandle::join) and
//! [`join_timeout`](crate::sched::JoinHandle::join_timeout) drive it until
//! their process ends, and [`Scheduler::shutdown`](crate::sched::Scheduler::shutdown)
//! (and `Drop`) until the shutdown is done. So a test that submits, sends
//! and then joins from one thread replays exactly.
//!
//! # What it cannot see
//!
//! - Races between the OS threads of a real scheduler (that is the loom
//!   models', Miri's and TSan's job): here one thread runs every worker,
//!   and each turn runs to its end.
//! - Wall-clock reads in user code (`Instant::now` in a step), handlers
//!   that block on real I/O (inject a simulated handler instead), and
//!   threads of the user's own that send to the scheduler while it runs:
//!   each of these brings the machine's timing back in.
//! - Blocking waits of other threads. The other blocking waits do not
//!   drive the simulation: `Receiver::recv`, `recv_timeout`,
//!   `Scheduler::blocking_call` and `blocking_send_timeout` panic on a
//!   simulated scheduler (they would wait for ever), and `JoinSet`'s
//!   blocking joins, which do not know the scheduler, would wait: drive
//!   with a driving method, then use the non-blocking forms (`try_recv`,
//!   `send`, `JoinSet::try_join_next`).

use crate::process::state::Lifecycle;
use crate::process::{Pid, Process};
use crate::sched::links::Signal;
use crate::sched::shared::Shared;
use crate::sched::timer::{earliest, TimerClock, NEVER};
use crate::sched::worker::{Local, Turn};
use crate::sync::{AtomicU64, Ordering};
use rng::Rng;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

mod api;
pub(crate) mod drive;
pub(crate) mod faults;
mod rng;

pub(crate) use drive::{Drive, Limit};
pub use drive::{Run, Stopped};
pub use faults::Faults;

/// The virtual time a step of a simulation takes: 1 µs. Time moves while
/// processes run, so a process that polls for a deadline with `Continue`
/// sees it come.
pub const SIMULATED_STEP: Duration = Duration::from_micros(1);

/// How far ahead a timer is taken for never: the century every timeout
/// saturates to (`core/clock.rs`).
const FOREVER_NANOS: u64 = crate::sched::core::clock::FOREVER.as_nanos() as u64;

/// [`SIMULATED_STEP`] in nanoseconds.
const STEP_NANOS: u64 = SIMULATED_STEP.as_nanos() as u64;

/// Plays every worker of a simulated scheduler (module docs).
pub(crate) struct Driver<P: Process> {
    shared: Arc<Shared<P>>,
    seed: u64,
    /// Steps run so far: outside the state, so that a drive's condition
    /// may read it. Relaxed: only the driving thread writes it.
    steps: AtomicU64,
    state: Mutex<State<P>>,
}

struct State<P: Process> {
    /// The workers; empty once the scheduler has exited.
    locals: Vec<Local<P>>,
    rng: Rng,
    /// Whether the workers' start hooks have run.
    begun: bool,
}

impl<P: Process> Driver<P> {
    pub(crate) fn new(shared: Arc<Shared<P>>, seed: u64, locals: Vec<Local<P>>) -> Self {
        Driver {
            shared,
            seed,
            steps: AtomicU64::new(0),
            state: Mutex::new(State {
                locals,
                rng: Rng::new(seed),
                begun: false,
            }),
        }
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn clock(&self) -> &TimerClock {
        &self.shared.timers.clock
    }

    /// The driver's state. A drive while another runs (from a step,
    /// handler or hook of the simulation, which would wait for itself, or
    /// from a second thread, whose drive would make the run depend on the
    /// machine's timing) panics instead of waiting.
    fn lock(&self, what: &str) -> MutexGuard<'_, State<P>> {
        match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => panic!(
                "stepsched: {what} on a simulated scheduler (seed {}) while it is being driven \
                 (from one of its steps, handlers or hooks, or from another thread): one \
                 thread drives a simulation, one drive at a time",
                self.seed
            ),
        }
    }

    /// Steps run so far.
    pub(crate) fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }

    /// Runs turns until `done` says so, or the limit, or nothing can run
    /// any more (no process to run, no timer pending). `done` is asked
    /// before every turn.
    pub(crate) fn run(&self, what: &str, limit: Limit, done: &mut dyn FnMut() -> bool) -> Run {
        let mut state = self.lock(what);
        let state = &mut *state;
        if !state.begun {
            state.begun = true;
            for local in &state.locals {
                local.begin();
            }
        }
        let clock = self.clock();
        let start = self.steps();
        let mut faults = 0;
        let stopped = loop {
            if done() {
                break Stopped::Done;
            }
            if self.steps() - start >= limit.steps {
                break Stopped::Steps;
            }
            if self.now() >= limit.until {
                break Stopped::Time;
            }
            match state.turn(&self.shared) {
                Turn::Ran => {
                    self.steps.fetch_add(1, Ordering::Relaxed);
                    if let Some(threshold) = self.shared.config.faults.crash {
                        if state.rng.next_u64() < threshold && self.crash_one(&mut state.rng) {
                            faults += 1;
                        }
                    }
                    clock.advance_to(self.now().saturating_add(STEP_NANOS));
                    continue;
                }
                Turn::Fired => continue,
                Turn::Nothing => {}
            }
            // Every worker would park: time jumps to the earliest timer.
            let next = earliest(&self.shared.timers.wheels);
            if next == NEVER {
                break Stopped::Idle;
            }
            let at = TimerClock::tick_nanos(next);
            if self.only_timers_for_never() {
                // `Duration::MAX` saturates a century or more away: jumping
                // there (a wheel visits a far deadline's slot every few
                // years on its way) would leave every later deadline
                // saturated. Waiting for it is waiting for ever: idle.
                break Stopped::Idle;
            }
            if at > limit.until {
                clock.advance_to(limit.until);
                break Stopped::Time;
            }
            clock.advance_to(at);
        };
        Run {
            steps: self.steps() - start,
            stopped,
            crashes: faults,
        }
    }

    /// Kills one live process chosen by `rng` (`Faults::crash_per_step`);
    /// whether one was there to kill.
    fn crash_one(&self, rng: &mut Rng) -> bool {
        let table = &self.shared.core.table;
        let spared: Vec<Pid> = (self.shared.config.faults.spared.iter())
            .filter_map(|name| self.shared.whereis(name))
            .collect();
        let live: Vec<Pid> = (table.slots())
            .filter_map(|slot| {
                let state = slot.state.load();
                let ended = matches!(state.lifecycle(), Lifecycle::Free | Lifecycle::Complete);
                let pid = Pid::new(slot.pid().key(), state.generation());
                (!ended && !spared.contains(&pid)).then_some(pid)
            })
            .collect();
        if live.is_empty() {
            return false;
        }
        let pid = live[rng.below(live.len())];
        (self.shared)
            .deliver_exit(pid, Signal::Kill(Pid::OUTSIDE))
            .is_ok()
    }

    /// Whether every pending timer is a century or more away.
    fn only_timers_for_never(&self) -> bool {
        let wheels = self.shared.timers.wheels.iter();
        let earliest = wheels.map(|w| w.earliest_deadline()).min().unwrap_or(NEVER);
        TimerClock::tick_nanos(earliest).saturating_sub(self.now()) >= FOREVER_NANOS
    }

    /// The virtual nanoseconds since the scheduler started.
    pub(crate) fn now(&self) -> u64 {
        self.clock().virtual_nanos().unwrap_or(0)
    }

    /// Once the scheduler is exiting (shutdown's last phase): ends every
    /// worker as its thread would end, and gives up the workers (each holds
    /// the shared state).
    pub(crate) fn finish(&self) {
        let locals = core::mem::take(&mut self.lock("Scheduler::shutdown").locals);
        for local in locals {
            local.finish();
        }
    }
}

/// Panics if this scheduler is a simulation: `what` is a blocking wait
/// that does not drive one, so it would wait for ever (module docs).
pub(crate) fn refuse_simulated<P: Process>(shared: &Shared<P>, what: &str, instead: &str) {
    if let Some(seed) = shared.config.simulation {
        panic!(
            "stepsched: {what} would wait for ever on a simulated scheduler (seed {seed}): \
             nothing runs it meanwhile; {instead}"
        );
    }
}

impl<P: Process> Drive for Driver<P> {
    fn drive(&self, what: &str, limit: Limit, done: &mut dyn FnMut() -> bool) -> Run {
        self.run(what, limit, done)
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn steps(&self) -> u64 {
        Driver::steps(self)
    }
    fn now(&self) -> u64 {
        Driver::now(self)
    }
}

impl<P: Process> State<P> {
    /// One turn: the seed picks a worker (or, while blocking commands
    /// wait, the pool); one with nothing to do passes the turn to the
    /// next, so a turn runs something if anything can run.
    fn turn(&mut self, shared: &Shared<P>) -> Turn {
        let workers = self.locals.len();
        if workers == 0 {
            return Turn::Nothing;
        }
        let pool = &shared.commands.blocking;
        let jobs = pool.simulated_jobs();
        let actors = workers + usize::from(jobs > 0);
        let first = self.rng.below(actors);
        for k in 0..actors {
            let actor = (first + k) % actors;
            if actor == workers {
                let pick = self.rng.below(jobs);
                let fail = (shared.config.faults.fail).is_some_and(|t| self.rng.next_u64() < t);
                pool.run_simulated(pick, fail);
                return Turn::Ran;
            }
            match self.locals[actor].turn() {
                Turn::Nothing => {}
                turn => return turn,
            }
        }
        Turn::Nothing
    }
}
