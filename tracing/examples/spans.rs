//! Prints the spans of a small run: a ping-pong of a few messages between
//! two processes, each a `process` span from its first step to its end,
//! with its `step` spans inside, and the `command` span of the blocking
//! handler each player asks to record its last ball.
//!
//! `cargo run -p stepsched-tracing --example spans`

use std::time::Duration;
use stepsched::process::{Command, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_tracing::Instrumentation;

/// Asks the `record` handler to keep a player's last ball.
struct Record(u32);

impl Command for Record {
    fn kind(&self) -> &'static str {
        "record"
    }
}

/// Sends what it gets, minus one, back to its sender; at 1 or 0 it has
/// the ball recorded, and ends once that is done.
struct Player {
    peer: Option<Pid>,
}

impl Process for Player {
    type Input = Option<Pid>;
    type Message = (Pid, u32);
    type Command = Record;
    type Reply = ();
    type Output = ();
    type Error = String;
    fn init(&mut self, _: &str, peer: Option<Pid>) -> Result<(), String> {
        self.peer = peer;
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if let Some(peer) = self.peer.take() {
            out.send(peer, (out.pid(), 4));
        }
        for event in events.drain(..) {
            match event {
                Event::Message((from, n)) => {
                    if n > 0 {
                        out.send(from, (out.pid(), n - 1));
                    }
                    if n <= 1 {
                        out.yield_command(u64::from(n), Record(n));
                        out.set_status(Status::Wait);
                    }
                }
                Event::Completion { result, .. } => {
                    result.map_err(|e| e.to_string())?;
                    out.done(());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
    let (builder, tracing) = Instrumentation::install(Scheduler::<Player>::builder());
    let scheduler = builder
        .workers(2)
        .blocking_handler(
            "record",
            tracing.traced(|Record(n), completer| {
                tracing::info!(ball = n, "recorded");
                let _ = completer.succeed(());
            }),
        )
        .build()
        .expect("threads start");
    let pong = scheduler
        .submit_joinable(Player { peer: None }, "pong", None)
        .unwrap();
    let ping = scheduler
        .submit_joinable(Player { peer: None }, "ping", Some(pong.pid()))
        .unwrap();
    for player in [ping, pong] {
        player
            .join_timeout(Duration::from_secs(5))
            .expect("ends")
            .unwrap();
    }
    scheduler.shutdown(Duration::from_secs(5));
}
