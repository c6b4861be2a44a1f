//! A supervisor built on monitors, as OTP's: it starts N workers, monitors
//! them, restarts one that fails with the same init arguments, and gives up
//! (failing itself, after stopping the rest) when more than R restarts
//! happen within T seconds: OTP's restart intensity. Two strategies:
//! *one-for-one* restarts the failed worker only; *rest-for-one* also
//! restarts the workers started after it (they depend on it).
//!
//! Workers fail on purpose: `flaky` fails its first incarnations, `doomed`
//! every time. Run: `cargo run --release --example supervisor`.
//!
//! Why this is an example, not a type in the crate: a `Scheduler<P>` runs
//! one process type, so a reusable supervisor would have to be generic over
//! a child role inside the embedder's `P` (a [`Hosts`] bound, spawning
//! through `spawn_kind`) and over how a child is told to stop (a message
//! of the embedder's type). Both are one line each here; as a library type
//! they would be three traits for ninety lines of policy that embedders
//! will want to change (transient vs permanent children, back-off,
//! escalation). This file is the template.
//!
//! [`Hosts`]: stepsched::process::Hosts

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::{Event, ExitReason, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// A worker's init arguments, kept by its supervisor to restart it.
#[derive(Clone, Debug)]
struct WorkerArgs {
    name: &'static str,
    /// Steps of work before it finishes.
    work: u32,
    /// Incarnations that fail half-way (shared, so it lasts over restarts);
    /// `u32::MAX`: always.
    failures: Arc<AtomicU32>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Strategy {
    OneForOne,
    RestForOne,
}

#[derive(Debug)]
struct SupervisorArgs {
    strategy: Strategy,
    children: Vec<WorkerArgs>,
    /// At most `max_restarts` restarts within `period`.
    max_restarts: usize,
    period: Duration,
}

enum Input {
    Supervisor(SupervisorArgs),
    Worker(WorkerArgs),
}

#[derive(Debug)]
enum Msg {
    /// From a supervisor that gives up: finish now.
    Stop,
}

/// The one process type of the scheduler: a supervisor or a worker.
enum Proc {
    Supervisor(Supervisor),
    Worker(Worker),
}

struct Supervisor {
    strategy: Strategy,
    /// Each child's arguments and current PID (`None` once it finished).
    children: Vec<(WorkerArgs, Option<Pid>)>,
    max_restarts: usize,
    period: Duration,
    restarts: VecDeque<Instant>,
    started: bool,
}

struct Worker {
    args: Option<WorkerArgs>,
    done: u32,
    fails: bool,
}

impl Process for Proc {
    type Input = Input;
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = String;
    type Error = String;

    fn init(&mut self, _: &str, input: Input) -> Result<(), String> {
        *self = match input {
            Input::Supervisor(a) => Proc::Supervisor(Supervisor {
                strategy: a.strategy,
                children: a.children.into_iter().map(|c| (c, None)).collect(),
                max_restarts: a.max_restarts,
                period: a.period,
                restarts: VecDeque::new(),
                started: false,
            }),
            Input::Worker(args) => {
                let fails = args
                    .failures
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                        (n > 0).then(|| n.saturating_sub((n != u32::MAX) as u32))
                    })
                    .is_ok();
                Proc::Worker(Worker {
                    args: Some(args),
                    done: 0,
                    fails,
                })
            }
        };
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Proc::Supervisor(s) => s.step(events, out),
            Proc::Worker(w) => w.step(events, out),
        }
    }
}

impl Worker {
    fn step(
        &mut self,
        events: &mut Vec<Event<Proc>>,
        out: &mut StepOutput<'_, Proc>,
    ) -> Result<(), String> {
        let args = self.args.as_ref().expect("initialised");
        if events
            .drain(..)
            .any(|e| matches!(e, Event::Message(Msg::Stop) | Event::Cancel(_)))
        {
            out.done(format!("{} stopped", args.name));
            return Ok(());
        }
        self.done += 1; // a slice of work
        if self.fails && self.done == args.work / 2 {
            return Err(format!("{} failed on purpose", args.name));
        }
        if self.done == args.work {
            out.done(format!("{} finished", args.name));
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

impl Supervisor {
    fn step(
        &mut self,
        events: &mut Vec<Event<Proc>>,
        out: &mut StepOutput<'_, Proc>,
    ) -> Result<(), String> {
        if !self.started {
            self.started = true;
            for i in 0..self.children.len() {
                self.start(i, out)?;
            }
        }
        for event in events.drain(..) {
            match event {
                Event::Down { pid, reason } => self.down(pid, reason, out)?,
                Event::Cancel(_) => {
                    self.stop_all(out);
                    out.done("cancelled".into());
                }
                _ => {}
            }
        }
        if self.children.iter().all(|(_, pid)| pid.is_none()) {
            out.done(format!("all {} children finished", self.children.len()));
        }
        Ok(())
    }

    /// Spawns child `i` and monitors it in the same step: the monitor is
    /// set before the child can run, so its end cannot be missed.
    fn start(&mut self, i: usize, out: &mut StepOutput<'_, Proc>) -> Result<(), String> {
        let args = self.children[i].0.clone();
        let pid = out
            .spawn(
                Proc::Worker(Worker {
                    args: None,
                    done: 0,
                    fails: false,
                }),
                "work",
                Input::Worker(args),
            )
            .map_err(|e| format!("cannot start a child: {e}"))?;
        out.monitor(pid);
        println!(
            "  [{}] started {} as {pid}",
            out.pid(),
            self.children[i].0.name
        );
        self.children[i].1 = Some(pid);
        Ok(())
    }

    fn down(
        &mut self,
        pid: Pid,
        reason: ExitReason,
        out: &mut StepOutput<'_, Proc>,
    ) -> Result<(), String> {
        let Some(i) = self.children.iter().position(|(_, p)| *p == Some(pid)) else {
            return Ok(()); // a child stopped by rest-for-one
        };
        let name = self.children[i].0.name;
        self.children[i].1 = None;
        if reason.is_normal() {
            println!("  [{}] {name} ({pid}) finished", out.pid());
            return Ok(()); // a transient child: not restarted
        }
        println!("  [{}] {name} ({pid}) ended: {reason}", out.pid());
        // Restart intensity: more than `max_restarts` within `period`.
        let now = Instant::now();
        self.restarts
            .retain(|t| now.duration_since(*t) < self.period);
        self.restarts.push_back(now);
        if self.restarts.len() > self.max_restarts {
            println!(
                "  [{}] {} restarts within {:?}: giving up",
                out.pid(),
                self.restarts.len(),
                self.period
            );
            self.stop_all(out);
            return Err(format!("restart intensity exceeded ({name} kept failing)"));
        }
        let restart: Vec<usize> = match self.strategy {
            Strategy::OneForOne => vec![i],
            Strategy::RestForOne => {
                for (args, p) in &mut self.children[i + 1..] {
                    if let Some(p) = p.take() {
                        println!(
                            "  [{}] stopping {} ({p}): rest-for-one",
                            out.pid(),
                            args.name
                        );
                        out.demonitor(p);
                        out.send(p, Msg::Stop);
                    }
                }
                (i..self.children.len()).collect()
            }
        };
        for j in restart {
            self.start(j, out)?;
        }
        Ok(())
    }

    fn stop_all(&mut self, out: &mut StepOutput<'_, Proc>) {
        for (_, p) in &mut self.children {
            if let Some(p) = p.take() {
                out.demonitor(p);
                out.send(p, Msg::Stop);
            }
        }
    }
}

fn worker(name: &'static str, work: u32, failures: u32) -> WorkerArgs {
    WorkerArgs {
        name,
        work,
        failures: Arc::new(AtomicU32::new(failures)),
    }
}

fn main() {
    let scheduler: Scheduler<Proc> = Scheduler::builder().build().expect("a scheduler");
    let scenarios = [
        (
            "one-for-one, a flaky worker fails twice and recovers",
            Strategy::OneForOne,
            vec![
                worker("steady", 20_000, 0),
                worker("flaky", 10_000, 2),
                worker("other", 5_000, 0),
            ],
        ),
        (
            "one-for-one, a doomed worker exceeds 3 restarts in 5 s",
            Strategy::OneForOne,
            vec![
                worker("steady", 1_000_000, 0),
                worker("doomed", 1_000, u32::MAX),
            ],
        ),
        (
            "rest-for-one, the first worker fails once: the later ones restart too",
            Strategy::RestForOne,
            vec![
                worker("db", 20_000, 1),
                worker("cache", 100_000, 0),
                worker("web", 100_000, 0),
            ],
        ),
    ];
    for (title, strategy, children) in scenarios {
        println!("{title}:");
        let args = SupervisorArgs {
            strategy,
            children,
            max_restarts: 3,
            period: Duration::from_secs(5),
        };
        let placeholder = Proc::Worker(Worker {
            args: None,
            done: 0,
            fails: false,
        });
        let handle = scheduler
            .submit_joinable(placeholder, "supervise", Input::Supervisor(args))
            .expect("submitted");
        match handle.join() {
            Ok(summary) => println!("  supervisor: {summary}\n"),
            Err(e) => println!("  supervisor: {e}\n"),
        }
    }
    let report = scheduler.shutdown(Duration::from_secs(5));
    println!("shutdown: {report:?}");
}
