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

use stepsched::sched::Scheduler;

#[path = "common/job.rs"]
mod job;
use job::Job;

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
