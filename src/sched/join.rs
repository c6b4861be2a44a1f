//! [`JoinHandle`]: waiting for a process's outcome from outside.

use crate::process::{Outcome, Pid, Process};
use crate::sync::{Condvar, Mutex};
use core::fmt;
use std::time::{Duration, Instant};

/// Where the worker that closes a process leaves its outcome.
pub(crate) struct JoinCell<P: Process> {
    outcome: Mutex<Option<Outcome<P>>>,
    ready: Condvar,
}

impl<P: Process> JoinCell<P> {
    pub(crate) fn new() -> Self {
        JoinCell {
            outcome: Mutex::new(None),
            ready: Condvar::new(),
        }
    }

    pub(crate) fn set(&self, outcome: Outcome<P>) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.ready.notify_all();
    }
}

/// Waits for the outcome of one process, from any thread.
///
/// Made by [`Scheduler::submit_joinable`](super::Scheduler::submit_joinable).
/// Dropping it does not affect the process.
pub struct JoinHandle<P: Process> {
    pid: Pid,
    cell: std::sync::Arc<JoinCell<P>>,
}

impl<P: Process> JoinHandle<P> {
    pub(crate) fn new(pid: Pid, cell: std::sync::Arc<JoinCell<P>>) -> Self {
        JoinHandle { pid, cell }
    }

    /// The process's PID.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Whether the process has ended.
    pub fn is_finished(&self) -> bool {
        self.cell
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Blocks until the process ends and returns its outcome.
    pub fn join(self) -> Outcome<P> {
        let mut outcome = self.cell.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(outcome) = outcome.take() {
                return outcome;
            }
            outcome = self
                .cell
                .ready
                .wait(outcome)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks for at most `timeout`; gives the handle back if the process is
    /// still running then.
    ///
    /// # Errors
    ///
    /// `Err(self)` if the process did not end within `timeout`.
    pub fn join_timeout(self, timeout: Duration) -> Result<Outcome<P>, Self> {
        let deadline = Instant::now() + timeout;
        {
            let mut outcome = self.cell.outcome.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(outcome) = outcome.take() {
                    return Ok(outcome);
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                outcome = self
                    .cell
                    .ready
                    .wait_timeout(outcome, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        Err(self)
    }
}

impl<P: Process> fmt::Debug for JoinHandle<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("pid", &self.pid)
            .field("finished", &self.is_finished())
            .finish()
    }
}
