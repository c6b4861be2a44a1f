//! The simulation's step rate against the real scheduler's on one worker.
//!
//! 10,000 processes play Savina's `big`: each sends a ping to a random
//! other process (a xorshift64 seeded from its index), waits for the pong,
//! M times, and answers every ping it gets. The same system runs on
//!
//! - a real scheduler with one worker thread (the goal's baseline: the
//!   simulation plays its workers on one thread too);
//! - a simulation with one worker (`Builder::simulation`), driven by
//!   `join` on the main thread;
//! - a simulation with four workers (the default), where each turn also
//!   draws the worker that takes it and thieves steal.
//!
//! Printed: nanoseconds per step (the workers' step counts from `stats()`),
//! medians of the rounds, the systems alternating round by round, and the
//! simulation's rate over the real one's (the goal: within 2x, that is a
//! ratio of at least 0.5).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin simulate           # N 10,000, M 100, 5 rounds
//! SCALE=0.1 ROUNDS=1 cargo run --release -p stepsched-peers --bin simulate
//! ```

use std::time::Instant;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or(default),
        Err(_) => default,
    }
}

enum Msg {
    /// The table of every process, and the coordinator to report to.
    Start(std::sync::Arc<Vec<Pid>>, Pid),
    Ping(Pid),
    Pong,
    /// To the coordinator: one process has had its M pongs.
    Finished,
}

enum Node {
    Big {
        index: usize,
        rng: u64,
        left: u32,
        table: Option<std::sync::Arc<Vec<Pid>>>,
        coordinator: Option<Pid>,
    },
    Coordinator {
        waiting: usize,
    },
}

impl Node {
    fn ping(&mut self, out: &mut StepOutput<'_, Self>) {
        let Node::Big {
            index, rng, table, ..
        } = self
        else {
            return;
        };
        let table = table.as_ref().expect("started");
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let mut to = (*rng % table.len() as u64) as usize;
        if to == *index {
            to = (to + 1) % table.len();
        }
        out.send(table[to], Msg::Ping(out.pid()));
    }
}

impl Process for Node {
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
        for event in events.drain(..) {
            let Event::Message(message) = event else {
                continue;
            };
            match (&mut *self, message) {
                (Node::Coordinator { waiting }, Msg::Finished) => {
                    *waiting -= 1;
                    if *waiting == 0 {
                        out.set_status(Status::Done(()));
                    }
                }
                (
                    Node::Big {
                        table, coordinator, ..
                    },
                    Msg::Start(pids, to),
                ) => {
                    *table = Some(pids);
                    *coordinator = Some(to);
                    self.ping(out);
                }
                (_, Msg::Ping(from)) => out.send(from, Msg::Pong),
                (
                    Node::Big {
                        left, coordinator, ..
                    },
                    Msg::Pong,
                ) => {
                    *left -= 1;
                    if *left == 0 {
                        out.send(coordinator.expect("started"), Msg::Finished);
                    } else {
                        self.ping(out);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// One round on `scheduler`: nanoseconds per step.
fn round(scheduler: &Scheduler<Node>, n: usize, m: u32) -> f64 {
    let coordinator = scheduler
        .submit_joinable(Node::Coordinator { waiting: n }, "coordinate", ())
        .unwrap();
    let pids: Vec<Pid> = (0..n)
        .map(|index| {
            let node = Node::Big {
                index,
                rng: (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
                left: m,
                table: None,
                coordinator: None,
            };
            scheduler.submit(node, "big", ()).unwrap()
        })
        .collect();
    let table = std::sync::Arc::new(pids);
    let steps = |s: &Scheduler<Node>| s.stats().workers.iter().map(|w| w.steps).sum::<u64>();
    let before = steps(scheduler);
    let started = Instant::now();
    for &pid in table.iter() {
        scheduler
            .send(
                pid,
                Msg::Start(std::sync::Arc::clone(&table), coordinator.pid()),
            )
            .unwrap();
    }
    coordinator.join().unwrap();
    let elapsed = started.elapsed();
    let ran = steps(scheduler) - before;
    assert!(ran > n as u64, "{ran} steps");
    elapsed.as_nanos() as f64 / ran as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = env_or("N", 10_000);
    let m = ((100.0 * env_or("SCALE", 1.0f64)).round() as u32).max(1);
    let rounds: usize = env_or("ROUNDS", 5);
    let real = Scheduler::builder().workers(1).build().unwrap();
    let (mut r, mut s1, mut s4) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..=rounds {
        let sim1 = Scheduler::builder()
            .workers(1)
            .simulation(k as u64)
            .build()
            .unwrap();
        let sim4 = Scheduler::builder().simulation(k as u64).build().unwrap();
        let (a, b, c) = (round(&real, n, m), round(&sim1, n, m), round(&sim4, n, m));
        if k > 0 {
            // Round 0 warms the allocator and the caches up.
            r.push(a);
            s1.push(b);
            s4.push(c);
            println!("round {k}: real 1 worker {a:.1} ns/step, simulated 1 worker {b:.1}, simulated 4 workers {c:.1}");
        }
    }
    let (r, s1, s4) = (median(r), median(s1), median(s4));
    println!("big on {n} processes, {m} pings each, medians of {rounds} rounds (ns per step):");
    println!("  real scheduler, 1 worker thread   {r:8.1}");
    println!(
        "  simulation, 1 worker              {s1:8.1}   rate {:.2}x the real one",
        r / s1
    );
    println!(
        "  simulation, 4 workers             {s4:8.1}   rate {:.2}x the real one",
        r / s4
    );
}
