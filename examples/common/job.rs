//! The processes of the tracing workload, shared by `examples/trace.rs` and
//! `tests/sched_trace.rs` (included with `#[path]`).

use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};

/// The workload's processes, by method.
pub enum Job {
    /// Continues `n` times.
    Yield(u32),
    /// Spawns a child chain `n` deep.
    Chain(u32),
    /// Passes a counter back and forth with a peer until it reaches 0.
    Ping,
    /// Sleeps in one step: a step long enough to see other workers steal.
    Slow(Duration),
}

impl Process for Job {
    type Input = u32;
    type Message = (Pid, u32);
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, method: &str, n: u32) -> Result<(), String> {
        *self = match method {
            "yield" => Job::Yield(n),
            "chain" => Job::Chain(n),
            "ping" => Job::Ping,
            "slow" => Job::Slow(Duration::from_millis(u64::from(n))),
            other => return Err(format!("no method {other}")),
        };
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Job::Yield(0) => out.done(()),
            Job::Yield(n) => {
                *n -= 1;
                out.set_status(Status::Continue);
            }
            Job::Chain(n) => {
                if *n > 0 {
                    out.spawn(Job::Ping, "chain", *n - 1)
                        .map_err(|e| e.to_string())?;
                }
                out.done(());
            }
            Job::Ping => {
                for event in events.drain(..) {
                    if let Event::Message((from, n)) = event {
                        if n > 0 {
                            out.send(from, (out.pid(), n - 1));
                        }
                        if n <= 1 {
                            out.done(());
                        }
                    }
                }
            }
            Job::Slow(d) => {
                std::thread::sleep(*d);
                out.done(());
            }
        }
        Ok(())
    }
}
