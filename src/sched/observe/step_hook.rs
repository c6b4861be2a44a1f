//! What the per-step hooks see ([`StepInfo`], [`StepStatus`]), and the
//! worker's timing of a step for them and for the latency histograms.
//!
//! Both hooks (`Builder::on_step_start`, `Builder::on_step`) and the
//! histograms (`Builder::record_latency`) are off by default. A worker
//! copies "any of them on" into one flag of its own (`Observing::timed`),
//! so a step with all of them off costs one predictable branch before and
//! one after, and reads no clock. With any on, the worker reads the fine
//! clock once before the step and once after ([`CoarseClock::fine_now`]:
//! the TSC where it is invariant, as the tracer's `Ticks`, else
//! `Instant`), and both halves run out of line, so the step path stays as
//! short.
//!
//! [`CoarseClock::fine_now`]: crate::sched::core::clock::CoarseClock

use crate::process::Pid;
use std::time::Duration;

/// How a step ended, for [`Builder::on_step`](crate::sched::Builder::on_step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepStatus {
    /// It asked to run again (`Status::Continue`).
    Continue,
    /// It waits for a command's completion.
    Wait,
    /// It waits for any event.
    Idle,
    /// It finished (`StepOutput::done`).
    Done,
    /// It returned an error or panicked: the process ends with it.
    Failed,
}

impl StepStatus {
    /// A short lowercase name (`"continue"`, `"wait"`, `"idle"`, `"done"`,
    /// `"failed"`), for exporters' labels and span fields.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Continue => "continue",
            StepStatus::Wait => "wait",
            StepStatus::Idle => "idle",
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
        }
    }
}

/// One step, as [`Builder::on_step`](crate::sched::Builder::on_step) is
/// told of it, right after the step returned (before its effects are
/// applied).
///
/// Non-exhaustive: fields may be added in a minor release; read it field
/// by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepInfo {
    /// The process stepped.
    pub pid: Pid,
    /// The worker that ran it, by index.
    pub worker: usize,
    /// How long the call of `Process::step` took.
    pub duration: Duration,
    /// Events handed to the step (at most `max_events_per_step`, and the
    /// terminate cancel of a last step).
    pub events: usize,
    /// How it ended.
    pub status: StepStatus,
}
