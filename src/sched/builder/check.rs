//! The builder's settings checked (`Builder::build` refuses what it cannot
//! honour, by name) and shown (`Debug`).

use super::Builder;
use crate::process::Process;
use crate::sched::simulation::Faults;
use core::fmt;
use std::io;

/// The most workers a scheduler runs: far past any machine's cores, and
/// refused rather than left to fail as an allocation of that many deques.
pub(crate) const MAX_WORKERS: usize = 1 << 16;

/// The largest trace ring (events per worker): 128 GiB of records a
/// worker, refused rather than left to overflow the ring's allocation.
pub(crate) const MAX_TRACE_EVENTS: usize = 1 << 32;

impl<P: Process> Builder<P> {
    /// Refuses the settings `build` cannot honour, naming each with its
    /// value. Zero is refused wherever it would mean "none" of something the
    /// scheduler needs; a maximum is refused where honouring it would fail
    /// at build (an allocation, a thread), and is otherwise taken (no limit
    /// in effect).
    pub(super) fn validate(&self) -> io::Result<()> {
        let zero = [
            (
                self.workers == Some(0),
                "workers(0): a scheduler needs at least one worker",
            ),
            (
                self.stack_size == Some(0),
                "stack_size(0): a worker thread needs a stack",
            ),
            (
                self.global_queue_interval == 0,
                "global_queue_interval(0): the interval is at least 1 tick",
            ),
            (
                self.park_after == 0,
                "spin_thresholds(_, 0): park_after is at least 1 round",
            ),
            (
                self.max_processes == Some(0),
                "max_processes(0): a scheduler that admits no process",
            ),
            (
                self.trace == Some(0),
                "trace(0): a trace ring holds at least 1 event",
            ),
            (
                self.mailbox_capacity == Some(0),
                "mailbox_capacity(0): a mailbox holds at least 1 message",
            ),
            (
                self.events_per_step == 0,
                "max_events_per_step(0): a step is handed at least 1 event",
            ),
            (
                self.max_blocking_threads == 0,
                "max_blocking_threads(0): the blocking pool needs at least one thread",
            ),
        ];
        if let Some((_, why)) = zero.iter().find(|(refused, _)| *refused) {
            return Err(refusal(why));
        }
        if self.simulation.is_none() && self.faults != Faults::new() {
            return Err(refusal(
                "simulation_faults(..) without simulation(..): faults are injected only \
                 into a simulation",
            ));
        }
        self.faults.check()?;
        if self.simulation.is_some() && self.monitor.is_some() {
            return Err(refusal(
                "simulation(..) with long_step_monitor(..): the monitor is a thread of real \
                 time, and a simulation runs on virtual time",
            ));
        }
        if let Some(n) = self.workers.filter(|&n| n > MAX_WORKERS) {
            return Err(refusal(&format!("workers({n}): at most 65,536 workers")));
        }
        if let Some(n) = self.trace.filter(|&n| n > MAX_TRACE_EVENTS) {
            return Err(refusal(&format!(
                "trace({n}): a trace ring holds at most 2^32 events"
            )));
        }
        Ok(())
    }
}

/// The error of a refused setting: `InvalidInput`, naming it.
fn refusal(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("stepsched::Builder::{why}"),
    )
}

/// A thread `build` could not spawn while a `stack_size` was set (a size
/// the system cannot give, say): the spawn's error, of the same kind, with
/// the setting and its value named.
pub(super) fn with_stack_size(error: io::Error, stack_size: Option<usize>) -> io::Error {
    match stack_size {
        Some(bytes) => io::Error::new(
            error.kind(),
            format!(
                "stepsched::Builder::build: a thread could not be spawned \
                 with stack_size({bytes}): {error}"
            ),
        ),
        None => error,
    }
}

impl<P: Process> fmt::Debug for Builder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("workers", &self.workers)
            .field("global_queue_interval", &self.global_queue_interval)
            .field("spin_tight", &self.spin_tight)
            .field("park_after", &self.park_after)
            .field("max_processes", &self.max_processes)
            .field("max_events_per_step", &self.events_per_step)
            .field("max_blocking_threads", &self.max_blocking_threads)
            .field("blocking_keep_alive", &self.blocking_keep_alive)
            .field(
                "long_step_threshold",
                &self.monitor.as_ref().map(|m| m.threshold),
            )
            .field("simulation", &self.simulation)
            .field("simulation_faults", &self.faults)
            .finish_non_exhaustive()
    }
}
