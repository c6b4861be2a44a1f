//! The builder's settings checked (`Builder::build` refuses what it cannot
//! honour, by name) and shown (`Debug`).

use super::Builder;
use crate::process::Process;
use core::fmt;
use std::io;

/// The most workers a scheduler runs: far past any machine's cores, and
/// refused rather than left to fail as an allocation of that many deques.
pub(crate) const MAX_WORKERS: usize = 1 << 16;

/// The largest trace ring (events per worker): 128 GiB of records a
/// worker, refused rather than left to overflow the ring's allocation.
pub(crate) const MAX_TRACE_EVENTS: usize = 1 << 32;

impl<P: Process> Builder<P> {
    /// Refuses the settings `build` cannot honour, naming each.
    pub(super) fn validate(&self) -> io::Result<()> {
        let zero = [
            (
                self.workers == Some(0),
                "workers(0): a scheduler needs at least one worker",
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
        let too_large = [
            (
                self.workers.is_some_and(|n| n > MAX_WORKERS),
                "workers(n): at most 65,536 workers",
            ),
            (
                self.trace.is_some_and(|n| n > MAX_TRACE_EVENTS),
                "trace(n): a trace ring holds at most 2^32 events",
            ),
        ];
        match zero.iter().chain(&too_large).find(|(refused, _)| *refused) {
            Some((_, why)) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("stepsched::Builder::{why}"),
            )),
            None => Ok(()),
        }
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
            .finish_non_exhaustive()
    }
}
