//! The system the simulation tests run: a coordinator, its workers, a
//! blocking handler, timers; every guarantee it relies on is checked as
//! it runs, and the run is logged step by step through the hooks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepsched::process::{Command, CommandError, Event, ExitReason, Pid, Process, StepOutput};
use stepsched::sched::{Completer, Scheduler};

/// A command for the blocking handler: it answers with `n`.
#[derive(Debug)]
pub struct Ask(pub u64);

impl Command for Ask {
    fn kind(&self) -> &'static str {
        "ask"
    }
}

pub enum Msg {
    /// To a worker: the others, how many messages to send each, and where
    /// to report.
    Start(Vec<Pid>, u32, Pid),
    /// To the coordinator: what worker `from` received.
    Report { from: Pid, received: u64 },
    /// From worker `from`: its `n`th message to this worker.
    Seq { from: Pid, n: u32 },
}

/// What the coordinator ends with: per worker (in spawn order) what it
/// received, and each worker's Downs seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub received: Vec<u64>,
    pub downs: Vec<u32>,
}

pub enum Node {
    Coordinator {
        workers: usize,
        sends: u32,
        pids: Vec<Pid>,
        downs: Vec<u32>,
        received: Vec<u64>,
    },
    Worker {
        /// The next sequence number expected from each sender.
        expected: Vec<(Pid, u32)>,
        received: u64,
        /// Messages it still waits for before its timer and its command.
        waiting: u64,
        asked: bool,
        coordinator: Option<Pid>,
    },
}

impl Node {
    pub fn coordinator(workers: usize, sends: u32) -> Self {
        Node::Coordinator {
            workers,
            sends,
            pids: Vec::new(),
            downs: Vec::new(),
            received: Vec::new(),
        }
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Ask;
    type Reply = u64;
    type Output = (Summary, u64);
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Node::Coordinator {
                workers,
                sends,
                pids,
                downs,
                received,
            } => {
                if pids.is_empty() {
                    for _ in 0..*workers {
                        let worker = Node::Worker {
                            expected: Vec::new(),
                            received: 0,
                            waiting: u64::from(*sends) * (*workers as u64 - 1),
                            asked: false,
                            coordinator: None,
                        };
                        let pid = out.spawn(worker, "work", ()).map_err(|e| e.to_string())?;
                        out.monitor(pid);
                        pids.push(pid);
                    }
                    for &pid in pids.iter() {
                        let others = pids.iter().copied().filter(|&p| p != pid).collect();
                        out.send(pid, Msg::Start(others, *sends, out.pid()));
                    }
                    *downs = vec![0; *workers];
                    *received = vec![0; *workers];
                }
                for event in events.drain(..) {
                    match event {
                        Event::Down { pid, reason } => {
                            let at = pids.iter().position(|&p| p == pid).ok_or("a stranger")?;
                            downs[at] += 1;
                            if reason != ExitReason::Done {
                                return Err(format!("worker {at} ended with {reason:?}"));
                            }
                        }
                        Event::Message(Msg::Report { from, received: n }) => {
                            let at = pids.iter().position(|&p| p == from).ok_or("a stranger")?;
                            received[at] = n;
                        }
                        _ => {}
                    }
                }
                if downs.iter().all(|&d| d >= 1) && received.iter().all(|&n| n > 0) {
                    let summary = Summary {
                        received: received.clone(),
                        downs: downs.clone(),
                    };
                    out.done((summary, 0));
                }
                Ok(())
            }
            Node::Worker {
                expected,
                received,
                waiting,
                asked,
                coordinator,
            } => {
                for event in events.drain(..) {
                    match event {
                        Event::Message(Msg::Start(others, sends, to)) => {
                            *coordinator = Some(to);
                            for n in 0..sends {
                                for &to in &others {
                                    out.send(to, Msg::Seq { from: out.pid(), n });
                                }
                            }
                        }
                        Event::Message(Msg::Report { .. }) => return Err("a report".into()),
                        Event::Message(Msg::Seq { from, n }) => {
                            let next = match expected.iter_mut().find(|(p, _)| *p == from) {
                                Some((_, next)) => next,
                                None => {
                                    expected.push((from, 0));
                                    &mut expected.last_mut().unwrap().1
                                }
                            };
                            if n != *next {
                                return Err(format!("from {from}: got {n}, expected {next}"));
                            }
                            *next += 1;
                            *received += 1;
                            *waiting -= 1;
                        }
                        Event::Timer { .. } => {
                            out.yield_command(1, Ask(*received));
                        }
                        Event::Completion { result, .. } => {
                            let answer = result.map_err(|e: CommandError| e.to_string())?;
                            let to = coordinator.ok_or("no coordinator")?;
                            out.send(
                                to,
                                Msg::Report {
                                    from: out.pid(),
                                    received: answer,
                                },
                            );
                            out.done((
                                Summary {
                                    received: vec![],
                                    downs: vec![],
                                },
                                answer,
                            ));
                        }
                        _ => {}
                    }
                }
                if *waiting == 0 && !*asked {
                    *asked = true;
                    out.wake_after(0, Duration::from_millis(10));
                }
                Ok(())
            }
        }
    }
}

/// One step of the log: the process and the worker that ran it.
pub type Log = Arc<Mutex<Vec<(Pid, usize)>>>;

/// A simulated scheduler running the system, logging every step.
pub fn simulated(seed: u64, workers: usize) -> (Scheduler<Node>, Log) {
    let log: Log = Arc::default();
    let steps = Arc::clone(&log);
    let scheduler = Scheduler::builder()
        .workers(workers)
        .simulation(seed)
        .on_step_start(move |pid, worker| steps.lock().unwrap().push((pid, worker)))
        .blocking_handler("ask", |Ask(n), done: Completer<Node>| {
            let _ = done.succeed(n);
        })
        .build()
        .expect("a simulated scheduler");
    (scheduler, log)
}
