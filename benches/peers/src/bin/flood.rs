//! Side-by-side: `flood`. One outside thread pushes N messages
//! through a 1,000-message bounded queue to one consumer, retrying on
//! "full" (with `thread::yield_now`, the same for both), until every
//! message is accepted; the time per accepted message, and how far the
//! resident set grew.
//!
//! - stepsched: a process submitted with
//!   `SpawnOptions::new().mailbox_capacity(1000)`, sent to with
//!   `Scheduler::send` (retried on `SendError::Full`); it sums what it
//!   receives and ends at N.
//! - tokio: `mpsc::channel(1000)` and `try_send` (retried on
//!   `TrySendError::Full`), a task receiving and summing until N.
//!
//! Both on 2 worker threads, same allocator (the system's).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin flood              # 10M, 5 rounds
//! SCALE=0.01 ROUNDS=1 cargo run --release -p stepsched-peers --bin flood   # smoke run
//! ```

use std::thread;
use std::time::Instant;

use stepsched::process::{Event, NoCommand, Process, SpawnOptions, Status, StepOutput};
use stepsched::sched::{Scheduler, SendError};

const WORKERS: usize = 2;
const CAPACITY: u32 = 1_000;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or(default),
        Err(_) => default,
    }
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// Sums until it has `n` messages.
struct Sink {
    n: u64,
    seen: u64,
    sum: u64,
}

impl Process for Sink {
    type Input = ();
    type Message = u64;
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
            if let Event::Message(v) = event {
                self.sum = self.sum.wrapping_add(v);
                self.seen += 1;
            }
        }
        if self.seen == self.n {
            out.done(self.sum);
        } else {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

/// One round: ns per accepted message, refusals.
fn stepsched_round(scheduler: &Scheduler<Sink>, n: u64) -> (f64, u64) {
    let sink = Sink { n, seen: 0, sum: 0 };
    let options = SpawnOptions::new().mailbox_capacity(CAPACITY);
    let pid = scheduler.submit_with(sink, "", (), options).unwrap();
    let start = Instant::now();
    let mut refused = 0;
    for i in 0..n {
        let mut message = i;
        loop {
            match scheduler.send(pid, message) {
                Ok(()) => break,
                Err(SendError::Full(m)) => {
                    refused += 1;
                    message = m;
                    thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    while scheduler.live() != 0 {
        thread::yield_now();
    }
    (start.elapsed().as_nanos() as f64 / n as f64, refused)
}

fn tokio_round(rt: &tokio::runtime::Runtime, n: u64) -> (f64, u64) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CAPACITY as usize);
    let done = rt.spawn(async move {
        let (mut seen, mut sum) = (0u64, 0u64);
        while seen < n {
            let v = rx.recv().await.unwrap();
            sum = sum.wrapping_add(v);
            seen += 1;
        }
        sum
    });
    let start = Instant::now();
    let mut refused = 0;
    for i in 0..n {
        let mut message = i;
        loop {
            match tx.try_send(message) {
                Ok(()) => break,
                Err(tokio::sync::mpsc::error::TrySendError::Full(m)) => {
                    refused += 1;
                    message = m;
                    thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    rt.block_on(done).unwrap();
    (start.elapsed().as_nanos() as f64 / n as f64, refused)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5usize).max(1);
    let n = ((10_000_000.0 * scale) as u64).max(1_000);
    println!("flood: {n} messages through a {CAPACITY}-message queue, {rounds} rounds, median");

    let before = rss_kib();
    let scheduler = Scheduler::<Sink>::builder()
        .workers(WORKERS)
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .build()
        .unwrap();
    stepsched_round(&scheduler, n / 10);
    tokio_round(&rt, n / 10);
    let warm = rss_kib();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut our_refused, mut their_refused) = (0, 0);
    for _ in 0..rounds {
        let (ns, r) = stepsched_round(&scheduler, n);
        ours.push(ns);
        our_refused += r;
        let (ns, r) = tokio_round(&rt, n);
        theirs.push(ns);
        their_refused += r;
    }
    let after = rss_kib();
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "flood stepsched {ours:8.1} ns/accepted  ({} refusals a round)",
        our_refused / rounds as u64
    );
    println!(
        "flood tokio     {theirs:8.1} ns/accepted  ({} refusals a round)",
        their_refused / rounds as u64
    );
    println!("flood ratio tokio/stepsched {:.2}", theirs / ours);
    println!(
        "rss: {before} KiB at start, {warm} KiB warm, {after} KiB after the rounds ({:+} KiB once warm, both systems)",
        after as i64 - warm as i64
    );
    scheduler.shutdown(std::time::Duration::from_secs(1));
}
