//! The simulation's public face: [`Builder::simulation`], the driving
//! methods of [`Scheduler`], and what a drive reports ([`Run`]).

use super::{Drive, Driver, Faults, Limit, Run};
use crate::process::Process;
use crate::sched::{Builder, Scheduler};
use std::sync::Arc;
use std::time::Duration;

impl<P: Process> Builder<P> {
    /// Makes the scheduler a deterministic simulation with this seed: no
    /// threads, every worker played in turn on the thread that drives it,
    /// in an order chosen from the seed, on a virtual clock
    /// (`src/sched/simulation/`: what the seed chooses, and what a
    /// simulation cannot see).
    ///
    /// The same processes, handlers, timers, links, bounded mailboxes and
    /// sends from outside work unchanged. Nothing runs until a driving
    /// method is called: [`Scheduler::run_steps`],
    /// [`run_for`](Scheduler::run_for), [`run_until`](Scheduler::run_until),
    /// [`run_until_idle`](Scheduler::run_until_idle), a
    /// [`JoinHandle::join`](crate::sched::JoinHandle::join) or
    /// [`shutdown`](Scheduler::shutdown). The same seed and the same calls
    /// from the driving thread replay the same run, step for step, on any
    /// machine; another seed interleaves the workers differently.
    ///
    /// Without [`workers`](Builder::workers) a simulation has 4 workers
    /// (not the machine's core count, which would change the run from one
    /// machine to the next). Blocking handlers run on the driving thread,
    /// at a turn the seed picks. [`build`](Builder::build) refuses a
    /// simulation with a [long-step monitor](Builder::long_step_monitor),
    /// a thread of real time.
    ///
    /// # Example
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// use std::time::Duration;
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Sleeps an hour, then ends with how often it woke.
    /// struct Sleeper(u32);
    /// impl Process for Sleeper {
    ///     type Input = (); type Message = (); type Command = NoCommand;
    ///     type Reply = (); type Output = u32; type Error = ();
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
    ///         -> Result<(), ()> {
    ///         if events.drain(..).any(|e| matches!(e, Event::Timer { .. })) {
    ///             self.0 += 1;
    ///             out.done(self.0);
    ///         } else {
    ///             out.wake_after(1, Duration::from_secs(3600));
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().simulation(42).build().unwrap();
    /// let sleeper = scheduler.submit_joinable(Sleeper(0), "sleep", ()).unwrap();
    /// assert_eq!(sleeper.join(), Ok(1)); // at once: the clock is virtual
    /// assert!(scheduler.virtual_time().unwrap() >= Duration::from_secs(3600));
    /// ```
    pub fn simulation(mut self, seed: u64) -> Self {
        self.simulation = Some(seed);
        self
    }
}

impl<P: Process> Builder<P> {
    /// The faults a [simulation](Builder::simulation) injects, drawn from
    /// its seed: crashed processes, failed blocking commands ([`Faults`]).
    /// [`build`](Builder::build) refuses faults without a simulation, and a
    /// probability outside `0..=1`.
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput, Status};
    /// # struct Spinner;
    /// # impl Process for Spinner {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    /// #         out.set_status(Status::Continue); Ok(())
    /// #     }
    /// # }
    /// use stepsched::process::ProcessError;
    /// use stepsched::sched::{Faults, Scheduler};
    ///
    /// let scheduler = Scheduler::builder()
    ///     .simulation(1)
    ///     .simulation_faults(Faults::new().crash_per_step(0.01))
    ///     .build()
    ///     .unwrap();
    /// // A process that never ends by itself is crashed within a few hundred steps.
    /// let spinner = scheduler.submit_joinable(Spinner, "spin", ()).unwrap();
    /// assert_eq!(spinner.join(), Err(ProcessError::Terminated));
    /// ```
    pub fn simulation_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }
}

impl<P: Process> Scheduler<P> {
    /// The simulation's seed, if this scheduler is one
    /// ([`Builder::simulation`]).
    pub fn simulation_seed(&self) -> Option<u64> {
        self.simulation.as_ref().map(|driver| driver.seed())
    }

    /// The virtual time since the start, if this scheduler is a simulation.
    pub fn virtual_time(&self) -> Option<Duration> {
        (self.simulation.as_ref()).map(|driver| Duration::from_nanos(driver.now()))
    }

    /// Steps run so far, if this scheduler is a simulation: with the seed,
    /// where a run stands (`run_steps(n)` from a fresh scheduler stops at
    /// step `n`).
    pub fn simulated_steps(&self) -> Option<u64> {
        self.simulation.as_ref().map(|driver| driver.steps())
    }

    /// Runs at most `steps` steps of the simulation, fewer if it goes idle.
    ///
    /// # Panics
    ///
    /// If the scheduler is not a simulation, or while it is being driven
    /// (from one of its own steps, handlers or hooks, or from another
    /// thread): one thread drives a simulation.
    pub fn run_steps(&self, steps: u64) -> Run {
        let limit = Limit {
            steps,
            ..Limit::NONE
        };
        self.driver("Scheduler::run_steps")
            .run("Scheduler::run_steps", limit, &mut || false)
    }

    /// Runs the simulation until nothing can run any more
    /// ([`Stopped::Idle`](crate::sched::Stopped::Idle)): no process runnable, no timer pending (the
    /// virtual clock jumps to each), no blocking command queued. A process
    /// that keeps itself busy (`Continue` for ever, an interval timer)
    /// never lets it go idle: bound the drive with
    /// [`run_for`](Scheduler::run_for) or [`run_steps`](Scheduler::run_steps).
    ///
    /// # Panics
    ///
    /// As [`run_steps`](Scheduler::run_steps).
    pub fn run_until_idle(&self) -> Run {
        self.driver("Scheduler::run_until_idle").run(
            "Scheduler::run_until_idle",
            Limit::NONE,
            &mut || false,
        )
    }

    /// Runs the simulation for `duration` of virtual time, or until it goes
    /// idle before that ([`Stopped::Idle`](crate::sched::Stopped::Idle); the clock then stays where the
    /// last step left it).
    ///
    /// # Panics
    ///
    /// As [`run_steps`](Scheduler::run_steps).
    pub fn run_for(&self, duration: Duration) -> Run {
        let driver = self.driver("Scheduler::run_for");
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let limit = Limit {
            until: driver.now().saturating_add(nanos),
            ..Limit::NONE
        };
        driver.run("Scheduler::run_for", limit, &mut || false)
    }

    /// Runs the simulation until `done` returns true (asked before each
    /// step: [`Stopped::Done`](crate::sched::Stopped::Done)) or it goes idle ([`Stopped::Idle`](crate::sched::Stopped::Idle)).
    ///
    /// # Panics
    ///
    /// As [`run_steps`](Scheduler::run_steps).
    pub fn run_until(&self, mut done: impl FnMut() -> bool) -> Run {
        self.driver("Scheduler::run_until")
            .run("Scheduler::run_until", Limit::NONE, &mut done)
    }

    fn driver(&self, what: &str) -> &Driver<P> {
        match &self.simulation {
            Some(driver) => driver,
            None => panic!(
                "stepsched: {what} drives a simulation, and this scheduler is not one \
                 (Builder::simulation makes one)"
            ),
        }
    }

    /// The simulation's driver, for the handles that drive it.
    pub(crate) fn simulation_driver(&self) -> Option<Arc<dyn Drive>> {
        let driver = self.simulation.as_ref()?;
        Some(Arc::clone(driver) as Arc<dyn Drive>)
    }
}
