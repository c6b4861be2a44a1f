//! The process the NATS tests run on every node: it does what its
//! messages say and reports what it sees to the test.

use std::sync::mpsc::Sender;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stepsched::process::{Event, ExitReason, NoCommand, Pid, Process, StepOutput};

/// What an actor is told to do, or is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    Num(u64),
    /// Send `Num(from..to)` to the PID, in one step.
    Flood(#[serde(with = "stepsched_nats::pid")] Pid, u64, u64),
    /// Send `Num(0), Num(1), ...` to the PID, a few every millisecond,
    /// for ever.
    Stream(#[serde(with = "stepsched_nats::pid")] Pid),
    Monitor(#[serde(with = "stepsched_nats::pid")] Pid),
    /// Reply `Num(n)` to the PID (a ping).
    Ping(#[serde(with = "stepsched_nats::pid")] Pid, u64),
    Stop,
}

/// What an actor saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Num(u64),
    Down(Pid, ExitReason),
}

/// An actor; it reports to `report`, if any.
pub struct Actor {
    pub report: Option<Sender<(Pid, Seen)>>,
    stream: Option<(Pid, u64)>,
}

impl Actor {
    pub fn new(report: Option<Sender<(Pid, Seen)>>) -> Self {
        Actor {
            report,
            stream: None,
        }
    }
}

/// Numbers a streaming actor sends per millisecond tick.
const PER_TICK: u64 = 5;

impl Process for Actor {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
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
        let me = out.pid();
        let mut tick = false;
        for event in events.drain(..) {
            let seen = match event {
                Event::Message(Msg::Num(n)) => Seen::Num(n),
                Event::Message(Msg::Flood(to, from, end)) => {
                    (from..end).for_each(|n| out.send(to, Msg::Num(n)));
                    continue;
                }
                Event::Message(Msg::Stream(to)) => {
                    self.stream = Some((to, 0));
                    tick = true;
                    continue;
                }
                Event::Message(Msg::Monitor(pid)) => {
                    out.monitor(pid);
                    continue;
                }
                Event::Message(Msg::Ping(to, n)) => {
                    out.send(to, Msg::Num(n));
                    continue;
                }
                Event::Message(Msg::Stop) => {
                    out.done(());
                    return Ok(());
                }
                Event::Timer { .. } => {
                    tick = true;
                    continue;
                }
                Event::Down { pid, reason } => Seen::Down(pid, reason),
                _ => continue,
            };
            if let Some(report) = &self.report {
                let _ = report.send((me, seen));
            }
        }
        if let (true, Some((to, next))) = (tick, self.stream.as_mut()) {
            for n in *next..*next + PER_TICK {
                out.send(*to, Msg::Num(n));
            }
            *next += PER_TICK;
            out.wake_after(0, Duration::from_millis(1));
        }
        Ok(()) // no status: it waits for what comes next
    }
}
