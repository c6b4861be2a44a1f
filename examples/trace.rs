//! Runs a short mixed workload with the execution tracer on and writes
//! `trace.json` (Chrome trace-event format) to the current directory.
//!
//! ```text
//! cargo run --release --example trace
//! ```
//!
//! Open the file at <https://ui.perfetto.dev> (Open trace file) or in
//! `chrome://tracing`: one track per worker, each step a slice named `step`
//! (its PID and how it ended in the details), steals, queue takes, parks,
//! wakeups, spawns and completions as instant events; the shutdown phases
//! on the `scheduler` track; and this main thread's submits and sends on
//! the `outside` track.

use std::fs::File;
use std::io::BufWriter;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// The workload's processes, by method.
enum Job {
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

fn main() -> std::io::Result<()> {
    let scheduler = Scheduler::<Job>::builder()
        .workers(2)
        .trace(1 << 16)
        .build()?;
    let mut jobs = Vec::new();
    for _ in 0..4 {
        jobs.push(scheduler.submit_joinable(Job::Ping, "slow", 2).unwrap());
        let a = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        let b = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        scheduler.send(a.pid(), (b.pid(), 200)).unwrap();
        jobs.extend([a, b]);
        for _ in 0..20 {
            jobs.push(scheduler.submit_joinable(Job::Ping, "yield", 20).unwrap());
        }
        jobs.push(scheduler.submit_joinable(Job::Ping, "chain", 50).unwrap());
    }
    for job in jobs {
        job.join().expect("a job failed");
    }
    std::thread::sleep(Duration::from_millis(5)); // let the workers park
    let report = scheduler.shutdown(Duration::from_secs(1));
    let stats = scheduler.stats();
    let trace = scheduler
        .trace()
        .expect("tracing is on and the workers exited");
    let mut out = BufWriter::new(File::create("trace.json")?);
    trace.write_chrome_json(&mut out)?;
    println!("{stats}");
    println!(
        "shutdown: {report:?}; wrote trace.json (ring wrapped: {}) — open it at https://ui.perfetto.dev",
        trace.wrapped()
    );
    Ok(())
}
