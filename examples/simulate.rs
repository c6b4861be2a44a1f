//! A bug that shows under one interleaving only, found by a loop over
//! seeds of a simulated scheduler, and replayed exactly from its seed.
//!
//! The system: a `Parent` starts a `Cache` and a `Client`. The cache tells
//! the parent it is up; the parent then sends it `Load`. The client warms
//! up for twelve steps of its own, then asks the cache with `Get`. The planted bug: the cache
//! assumes `Load` always comes first, and fails on a `Get` before it. Two
//! senders, two messages: nothing orders them, and on threads the bug
//! shows once in a while, depending on which worker runs what first.
//!
//! The example runs it 1,000 times on four worker threads, counting the
//! failures the machine's timing happens to produce, then drives it under
//! seeds 0, 1, 2 ... of a simulation until one fails,
//! prints the seed, then runs that seed twice more and shows that both
//! runs fail the same way after the same steps (their whole step logs
//! compared), and how many seeds it explores per second.
//!
//! ```text
//! cargo run --release --example simulate
//! ```

use std::sync::{Arc, Mutex};
use std::time::Instant;

use stepsched::process::{Event, ExitReason, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

enum Msg {
    /// To the parent: the cache is up.
    Up,
    /// To the cache: the data.
    Load(u64),
    /// To the cache, from the client: a question, answered to `reply`.
    Get { reply: Pid },
    /// To the client: the answer.
    Value(u64),
}

enum Node {
    Parent {
        cache: Option<Pid>,
    },
    Cache {
        data: Option<u64>,
        parent: Pid,
        up: bool,
    },
    /// Asks after `warm_up` steps of its own.
    Client {
        cache: Pid,
        warm_up: u32,
        asked: bool,
    },
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Node::Parent { cache } => {
                if cache.is_none() {
                    let cache_node = Node::Cache {
                        data: None,
                        parent: out.pid(),
                        up: false,
                    };
                    let started = out.spawn(cache_node, "cache", ());
                    let pid = started.map_err(|e| e.to_string())?;
                    out.monitor(pid);
                    *cache = Some(pid);
                    let client = Node::Client {
                        cache: pid,
                        warm_up: 12,
                        asked: false,
                    };
                    let client = out.spawn(client, "client", ()).map_err(|e| e.to_string())?;
                    out.monitor(client);
                }
                for event in events.drain(..) {
                    match event {
                        Event::Message(Msg::Up) => out.send(cache.unwrap(), Msg::Load(42)),
                        Event::Down { pid, reason }
                            if Some(pid) == *cache && reason != ExitReason::Done =>
                        {
                            return Err(format!("the cache ended with {reason:?}"));
                        }
                        Event::Down { pid, .. } if Some(pid) != *cache => out.done(42),
                        _ => {}
                    }
                }
                Ok(())
            }
            Node::Cache { data, parent, up } => {
                if !*up {
                    *up = true;
                    out.send(*parent, Msg::Up);
                }
                for event in events.drain(..) {
                    match event {
                        Event::Message(Msg::Load(value)) => *data = Some(value),
                        Event::Message(Msg::Get { reply }) => {
                            // The planted bug: no Load yet is "impossible".
                            let value = data.ok_or("a Get before the Load")?;
                            out.send(reply, Msg::Value(value));
                            out.done(value);
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            Node::Client {
                cache,
                warm_up,
                asked,
            } => {
                if *warm_up > 0 {
                    *warm_up -= 1;
                    out.set_status(Status::Continue);
                    return Ok(());
                }
                if !*asked {
                    *asked = true;
                    out.send(*cache, Msg::Get { reply: out.pid() });
                }
                for event in events.drain(..) {
                    if let Event::Message(Msg::Value(value)) = event {
                        out.done(value);
                    }
                }
                Ok(())
            }
        }
    }
}

/// What one seed's run did: its outcome, its steps and its step log.
struct Replay {
    failure: Option<String>,
    steps: u64,
    log: Vec<(Pid, usize)>,
}

fn run(seed: u64) -> Replay {
    let log = Arc::new(Mutex::new(Vec::new()));
    let steps = Arc::clone(&log);
    let scheduler = Scheduler::builder()
        .simulation(seed)
        .on_step_start(move |pid, worker| steps.lock().unwrap().push((pid, worker)))
        .build()
        .expect("a simulated scheduler");
    let parent = scheduler
        .submit_joinable(Node::Parent { cache: None }, "parent", ())
        .expect("the parent");
    let outcome = parent.join();
    let steps = scheduler.simulated_steps().unwrap();
    drop(scheduler);
    let log = log.lock().unwrap().clone();
    Replay {
        failure: outcome.err().map(|e| e.to_string()),
        steps,
        log,
    }
}

/// How many of `runs` runs of the same system on a real scheduler of four
/// worker threads fail: the machine's timing, not a seed, decides.
fn on_threads(runs: usize) -> usize {
    let scheduler = Scheduler::builder()
        .workers(4)
        .build()
        .expect("a scheduler");
    (0..runs)
        .filter(|_| {
            let parent = scheduler
                .submit_joinable(Node::Parent { cache: None }, "parent", ())
                .expect("the parent");
            parent.join().is_err()
        })
        .count()
}

fn main() {
    let started = Instant::now();
    let mut explored = 0;
    let found = (0..10_000).find(|&seed| {
        explored += 1;
        run(seed).failure.is_some()
    });
    let elapsed = started.elapsed();
    let failing = (0..1000)
        .filter(|&seed| run(seed).failure.is_some())
        .count();
    println!("{failing} of seeds 0..1000 fail");
    println!("{} of 1000 runs on 4 worker threads fail", on_threads(1000));
    let Some(seed) = found else {
        println!("no failing seed in {explored} seeds");
        return;
    };
    let first = run(seed);
    let again = run(seed);
    println!(
        "seed {seed} fails (found after {explored} seeds, {:.0} seeds/s): {}",
        explored as f64 / elapsed.as_secs_f64().max(1e-9),
        first.failure.as_deref().unwrap_or("?"),
    );
    println!(
        "replayed twice: {} and {} steps, step logs {}",
        first.steps,
        again.steps,
        if first.log == again.log {
            "identical"
        } else {
            "DIFFERENT"
        },
    );
    assert_eq!(first.failure, again.failure);
    assert_eq!(first.log, again.log);
}
