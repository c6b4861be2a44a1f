//! The ping-pong process of the scheduler benchmarks and the ping-pong
//! soak: one file, included with `#[path]` by `tests/soak_ping_pong.rs` and
//! `benches/common/workloads.rs`, so that the packaged crate's tests build
//! without benches/ and both run the same process.

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};

/// Receives `(from, n)`: replies `(me, n - 1)` to `from` while `n > 0`, and
/// finishes after its last message with the number of messages it received
/// (the ping-pong of the scheduler benchmarks).
#[derive(Default)]
pub struct Pinger {
    received: u64,
}

impl Process for Pinger {
    type Input = ();
    type Message = (Pid, u64);
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            if let Event::Message((from, n)) = event {
                self.received += 1;
                if n > 0 {
                    out.send(from, (out.pid(), n - 1));
                }
                if n <= 1 {
                    out.done(self.received);
                    return Ok(());
                }
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}
