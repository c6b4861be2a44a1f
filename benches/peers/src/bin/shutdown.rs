//! Side-by-side: how long a shutdown takes, stepsched against tokio, both
//! with 2 worker threads, for 0, 1, 100 and 10,000 idle processes (tasks).
//!
//! - `graceful`: every process is told to end and the call returns once
//!   all have. stepsched: `shutdown(5 s)`, whose `Cancel::Shutdown` each
//!   process answers by finishing. tokio has no such call; the nearest is
//!   a `watch` channel every task waits on: send, await every
//!   `JoinHandle`, then `shutdown_timeout(5 s)`.
//! - `forced`: processes are ended without a step. stepsched: `shutdown`
//!   with no grace (what `Drop` does), which closes them by force; tokio:
//!   `shutdown_timeout(5 s)` with the tasks still waiting, which drops them.
//!
//! Timed from the call (tokio graceful: from the send) until it returns,
//! the worker threads joined. Each figure is the median of `ROUNDS` fresh
//! runtimes, built 2 ms before the call so that their workers have parked.
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin shutdown
//! ROUNDS=5 cargo run --release -p stepsched-peers --bin shutdown   # smoke
//! ```

use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Process, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;
const SIZES: [usize; 4] = [0, 1, 100, 10_000];
const SETTLE: Duration = Duration::from_millis(2);
const GRACE: Duration = Duration::from_secs(5);

/// Idle until cancelled, then done.
struct Idle;

impl Process for Idle {
    type Input = ();
    type Message = ();
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
        for event in events.drain(..) {
            if let Event::Cancel(_) = event {
                out.done(());
            }
        }
        Ok(())
    }
}

/// One stepsched shutdown of `n` idle processes, in µs.
fn stepsched_once(n: usize, grace: Duration) -> f64 {
    let s: Scheduler<Idle> = Scheduler::builder().workers(WORKERS).build().unwrap();
    for _ in 0..n {
        s.submit(Idle, "idle", ()).ok().unwrap();
    }
    std::thread::sleep(SETTLE);
    let start = Instant::now();
    let report = s.shutdown(grace);
    let took = start.elapsed();
    let ended = report.completed + report.forced;
    assert_eq!(ended, n, "every process ended: {report:?}");
    took.as_nanos() as f64 / 1e3
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .build()
        .unwrap()
}

/// One tokio shutdown of `n` idle tasks, in µs: `graceful` tells them to
/// end and awaits them first.
fn tokio_once(n: usize, graceful: bool) -> f64 {
    let rt = tokio_runtime();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let mut rx = rx.clone();
            rt.spawn(async move {
                let _ = rx.wait_for(|&stop| stop).await;
            })
        })
        .collect();
    std::thread::sleep(SETTLE);
    let start = Instant::now();
    if graceful {
        tx.send(true).unwrap();
        rt.block_on(async {
            for handle in handles {
                handle.await.unwrap();
            }
        });
    }
    rt.shutdown_timeout(GRACE);
    start.elapsed().as_nanos() as f64 / 1e3
}

fn median(rounds: usize, mut once: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..rounds).map(|_| once()).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .map_or(30, |v| v.parse().expect("ROUNDS: a number"));
    println!(
        "shutdown, median of {rounds} runtimes, µs (lower is better); ratio = tokio / stepsched"
    );
    println!(
        "{:>8} {:>10} {:>10} {:>6}   {:>10} {:>10} {:>6}",
        "procs", "graceful", "tokio", "ratio", "forced", "tokio", "ratio"
    );
    for n in SIZES {
        let ours = median(rounds, || stepsched_once(n, GRACE));
        let theirs = median(rounds, || tokio_once(n, true));
        let ours_forced = median(rounds, || stepsched_once(n, Duration::ZERO));
        let theirs_forced = median(rounds, || tokio_once(n, false));
        println!(
            "{n:>8} {ours:>10.0} {theirs:>10.0} {:>6.2}   {ours_forced:>10.0} {theirs_forced:>10.0} {:>6.2}",
            theirs / ours,
            theirs_forced / ours_forced
        );
    }
}
