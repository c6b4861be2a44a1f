//! Proves timers (`StepOutput::wake_after`/`wake_at`/`cancel_timer`,
//! `yield_command_timeout`, `Scheduler::send_after`): they fire in deadline
//! order and never before their deadline; a cancelled timer never reaches
//! its process, even when it fired just before the cancel, nor passes for
//! the timer re-armed with its tag; a process's
//! timers end with it; `send_after` to a process that ends first goes to
//! `on_undelivered`; shutdown cancels and counts pending timers; a timer
//! wakes an Idle process exactly once even when a message lands at the
//! same moment; a command's timeout fires, or is cancelled by the
//! completion, and never both.
//!
//! No test asserts a bound on lateness (a loaded machine must not fail
//! them): only "at or after the deadline", and that an event never comes.
//!
//! ```text
//! cargo test --test sched_timers
//! ```

#[path = "../common/mod.rs"]
mod common;
use common::{wait_until, Held};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{Command, CommandError, Event, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Text(&'static str),
    /// Set timer `tag` at the instant.
    Arm(u64, Instant),
    Ping(u64),
}

#[derive(Debug)]
enum Cmd {
    /// The handler keeps the completer (`Held`).
    Hold,
    /// Completed inline with the number.
    Echo(u64),
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Hold => "hold",
            Cmd::Echo(_) => "echo",
        }
    }
}

/// What a step saw, with when.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Timer(u64),
    Message(Msg),
    Reply(u64, u64),
    Failed(u64, String),
    TimedOut(u64),
    Cancel,
}

type Log = Arc<Mutex<Vec<(Seen, Instant)>>>;
type StepFn = Box<dyn FnMut(&[Seen], &mut StepOutput<'_, Script>) + Send>;

/// A process whose steps are a closure over what it has seen (also logged).
struct Script {
    log: Log,
    step: StepFn,
}

fn script(
    step: impl FnMut(&[Seen], &mut StepOutput<'_, Script>) + Send + 'static,
) -> (Script, Log) {
    let log = Log::default();
    let process = Script {
        log: Arc::clone(&log),
        step: Box::new(step),
    };
    (process, log)
}

impl Process for Script {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let now = Instant::now();
        let seen: Vec<Seen> = events
            .drain(..)
            .map(|event| match event {
                Event::Timer { tag } => Seen::Timer(tag),
                Event::Message(m) => Seen::Message(m),
                Event::Completion { tag, result } => match result {
                    Ok(n) => Seen::Reply(tag, n),
                    Err(CommandError::TimedOut) => Seen::TimedOut(tag),
                    Err(e) => Seen::Failed(tag, e.to_string()),
                },
                Event::Cancel(_) => Seen::Cancel,
                other => panic!("unexpected event {other:?}"),
            })
            .collect();
        self.log
            .lock()
            .unwrap()
            .extend(seen.iter().map(|s| (s.clone(), now)));
        (self.step)(&seen, out);
        Ok(())
    }
}

fn scheduler(workers: usize) -> Scheduler<Script> {
    Scheduler::builder().workers(workers).build().unwrap()
}

fn seen(log: &Log) -> Vec<Seen> {
    log.lock().unwrap().iter().map(|(s, _)| s.clone()).collect()
}

fn count(log: &Log, what: &Seen) -> usize {
    seen(log).iter().filter(|s| *s == what).count()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

mod cancel;
mod commands;
mod ending;
mod firing;
mod intervals;
