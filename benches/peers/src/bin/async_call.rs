//! Side-by-side: the request/reply round trip from outside the scheduler,
//! in ns per call: stepsched's async `Scheduler::call(..).await` from a
//! tokio task (`async_call`), stepsched's `Scheduler::blocking_call` from a
//! plain thread (`blocking_call`), and tokio's own request/reply, a task
//! that sends `(request, oneshot::Sender)` over an mpsc channel to a server
//! task and awaits the oneshot (`tokio_oneshot`).
//!
//! Shapes: stepsched has 1 worker, and the caller a thread of its own (a
//! tokio runtime of 1 worker thread for `async_call`); tokio has 2 worker
//! threads, one for each side. One caller, calls one after another: the
//! figure is the latency of one call, each making a fresh receiver (or
//! oneshot).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin async_call                   # 5 rounds
//! CALLS=2000 ROUNDS=1 cargo run --release -p stepsched-peers --bin async_call   # smoke run
//! ```
//!
//! `CALLS` (default 20,000) per round; `ROUNDS` (default 5) timed rounds
//! per scenario after one untimed warm-up round, the scenarios alternating
//! round by round. Printed: the median ns per call of each scenario, then
//! the ratios of the two stepsched ones to `tokio_oneshot`.

use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

const GUARD: Duration = Duration::from_secs(60);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// `Ask(to, n)` is answered with `Answer(n)`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    Ask(Pid, u64),
    Answer(u64),
}

struct Echo;

impl Process for Echo {
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
        out.set_status(Status::Idle);
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Ask(to, n)) => out.send(to, Msg::Answer(n)),
                Event::Cancel(_) => out.done(()),
                _ => {}
            }
        }
        Ok(())
    }
}

fn stepsched() -> (Scheduler<Echo>, Pid) {
    let s = Scheduler::builder()
        .workers(1)
        .build()
        .expect("a scheduler");
    let echo = s.submit(Echo, "", ()).unwrap();
    (s, echo)
}

/// ns per call of `calls` async calls from a tokio task.
fn async_call(calls: u64) -> f64 {
    let (s, echo) = stepsched();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let elapsed = runtime.block_on(async {
        let started = Instant::now();
        for n in 0..calls {
            let reply = s.call(echo, |me| Msg::Ask(me, n)).await;
            assert_eq!(reply, Ok(Msg::Answer(n)));
        }
        started.elapsed()
    });
    s.shutdown(GUARD);
    elapsed.as_nanos() as f64 / calls as f64
}

/// ns per call of `calls` blocking calls from this thread.
fn blocking_call(calls: u64) -> f64 {
    let (s, echo) = stepsched();
    let started = Instant::now();
    for n in 0..calls {
        let reply = s.blocking_call(echo, |me| Msg::Ask(me, n), GUARD);
        assert_eq!(reply, Ok(Msg::Answer(n)));
    }
    let elapsed = started.elapsed();
    s.shutdown(GUARD);
    elapsed.as_nanos() as f64 / calls as f64
}

/// ns per call of `calls` oneshot request/replies between two tokio tasks.
fn tokio_oneshot(calls: u64) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    runtime.block_on(async {
        let (requests, mut inbox) =
            tokio::sync::mpsc::unbounded_channel::<(u64, tokio::sync::oneshot::Sender<u64>)>();
        let server = tokio::spawn(async move {
            while let Some((n, reply)) = inbox.recv().await {
                let _ = reply.send(n);
            }
        });
        let caller = tokio::spawn(async move {
            let started = Instant::now();
            for n in 0..calls {
                let (tx, rx) = tokio::sync::oneshot::channel();
                requests.send((n, tx)).unwrap();
                assert_eq!(rx.await, Ok(n));
            }
            started.elapsed()
        });
        let elapsed = caller.await.unwrap();
        server.await.unwrap();
        elapsed.as_nanos() as f64 / calls as f64
    })
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

fn main() {
    let calls: u64 = env_or("CALLS", 20_000).max(1);
    let rounds: usize = env_or("ROUNDS", 5).max(1);
    type Scenario = (&'static str, fn(u64) -> f64);
    let scenarios: [Scenario; 3] = [
        ("async_call", async_call),
        ("blocking_call", blocking_call),
        ("tokio_oneshot", tokio_oneshot),
    ];
    for (_, run) in &scenarios {
        run(calls.min(1_000)); // warm-up
    }
    let mut samples = vec![Vec::new(); scenarios.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in scenarios.iter().enumerate() {
            samples[i].push(run(calls));
        }
    }
    let medians: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
    println!("{calls} calls per round, {rounds} rounds: median ns per call");
    for ((name, _), (m, all)) in scenarios.iter().zip(medians.iter().zip(&samples)) {
        let all: Vec<String> = all.iter().map(|x| format!("{x:.0}")).collect();
        println!("{name:>14}: {m:>8.0} ns  (rounds: {})", all.join(", "));
    }
    println!(
        "async_call / tokio_oneshot: {:.2}; blocking_call / tokio_oneshot: {:.2}; async_call / blocking_call: {:.2}",
        medians[0] / medians[2],
        medians[1] / medians[2],
        medians[0] / medians[1]
    );
}
