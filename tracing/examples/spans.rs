//! Prints the spans of a small run: a ping-pong of a few messages, each
//! step a `step` span, each end an event.
//!
//! `cargo run -p stepsched-tracing --example spans`

use std::time::Duration;
use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

/// Sends what it gets, minus one, back to its sender; ends at 0.
struct Player {
    peer: Option<Pid>,
}

impl Process for Player {
    type Input = Option<Pid>;
    type Message = (Pid, u32);
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, peer: Option<Pid>) -> Result<(), ()> {
        self.peer = peer;
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        if let Some(peer) = self.peer.take() {
            out.send(peer, (out.pid(), 4));
        }
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
        Ok(())
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
    let scheduler = stepsched_tracing::instrument(Scheduler::<Player>::builder())
        .workers(2)
        .build()
        .expect("threads start");
    let pong = scheduler
        .submit(Player { peer: None }, "pong", None)
        .unwrap();
    let ping = scheduler
        .submit_joinable(Player { peer: None }, "ping", Some(pong))
        .unwrap();
    ping.join_timeout(Duration::from_secs(5))
        .expect("ends")
        .unwrap();
    scheduler.shutdown(Duration::from_secs(5));
}
