//! Faults drawn from the seed (`Builder::simulation_faults`): crashes
//! reach every monitor once, replay with their seed, spare the names they
//! are told to; failed commands reach their process; bad settings are
//! refused by name.

use std::collections::HashMap;
use std::time::Duration;

use stepsched::process::{
    Command, CommandError, Event, ExitReason, Pid, Process, ProcessError, Status, StepOutput,
};
use stepsched::sched::{Completer, Faults, Scheduler};

#[derive(Debug)]
pub struct Work;

impl Command for Work {
    fn kind(&self) -> &'static str {
        "work"
    }
}

/// A watcher spawns `n` tickers (each wakes every millisecond and yields
/// a blocking command per tick) and monitors them; it ends when every
/// ticker is down, with the reasons in spawn order.
enum Node {
    Watcher {
        n: usize,
        pids: Vec<Pid>,
        downs: HashMap<Pid, Vec<ExitReason>>,
    },
    Ticker {
        ticks: u32,
        failed: u32,
    },
}

type Seen = (Vec<Vec<ExitReason>>, u32);

impl Process for Node {
    type Input = ();
    type Message = u32;
    type Command = Work;
    type Reply = ();
    type Output = Seen;
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
            Node::Watcher { n, pids, downs } => {
                if pids.is_empty() {
                    for _ in 0..*n {
                        let ticker = Node::Ticker {
                            ticks: 0,
                            failed: 0,
                        };
                        let pid = out.spawn(ticker, "tick", ()).map_err(|e| e.to_string())?;
                        out.monitor(pid);
                        pids.push(pid);
                    }
                }
                let mut failed = 0;
                for event in events.drain(..) {
                    match event {
                        Event::Down { pid, reason } => downs.entry(pid).or_default().push(reason),
                        Event::Message(f) => failed += f,
                        _ => {}
                    }
                }
                if downs.len() == *n {
                    let seen = pids.iter().map(|p| downs[p].clone()).collect();
                    out.done((seen, failed));
                }
                Ok(())
            }
            Node::Ticker { ticks, failed } => {
                for event in events.drain(..) {
                    match event {
                        Event::Timer { .. } => {
                            *ticks += 1;
                            out.yield_command(u64::from(*ticks), Work);
                        }
                        Event::Completion {
                            result: Err(CommandError::Failed(_)),
                            ..
                        } => {
                            *failed += 1;
                        }
                        _ => {}
                    }
                }
                if *ticks == 0 {
                    out.wake_every(0, Duration::from_millis(1));
                }
                if *ticks >= 10_000 {
                    out.set_status(Status::Done((Vec::new(), *failed)));
                }
                Ok(())
            }
        }
    }
}

fn run(seed: u64, faults: Faults) -> Result<Seen, ProcessError<String>> {
    let scheduler = Scheduler::builder()
        .simulation(seed)
        .simulation_faults(faults)
        .blocking_handler("work", |Work, done: Completer<Node>| {
            let _ = done.succeed(());
        })
        .build()
        .unwrap();
    let watcher = Node::Watcher {
        n: 20,
        pids: Vec::new(),
        downs: HashMap::new(),
    };
    let watcher = scheduler.submit_joinable(watcher, "watch", ()).unwrap();
    scheduler.register("watcher", watcher.pid()).unwrap();
    watcher.join()
}

#[test]
fn crashes_reach_every_monitor_once_and_replay_with_their_seed() {
    let faults = || Faults::new().crash_per_step(0.01).spare("watcher");
    for seed in 0..20 {
        let (seen, _) = run(seed, faults()).expect("the spared watcher ends");
        // Every ticker crashed (none ends by itself before 10,000 ticks),
        // and its monitor heard of it once.
        assert!(
            seen.iter().all(|downs| downs[..] == [ExitReason::Killed]),
            "seed {seed}: {seen:?}"
        );
        assert_eq!(run(seed, faults()).unwrap().0, seen, "seed {seed} replays");
    }
}

#[test]
fn failed_commands_reach_their_process() {
    // Failing every command: a ticker's completions are all failures, and
    // the handler never runs.
    let scheduler = Scheduler::builder()
        .simulation(1)
        .simulation_faults(Faults::new().failed_commands(1.0))
        .blocking_handler("work", |Work, _done: Completer<Node>| {
            panic!("an injected failure runs no handler")
        })
        .build()
        .unwrap();
    let ticker = scheduler
        .submit_joinable(
            Node::Ticker {
                ticks: 0,
                failed: 0,
            },
            "tick",
            (),
        )
        .unwrap();
    let (_, failed) = ticker.join().unwrap();
    // (The last tick's command is yielded by the step that ends it.)
    assert_eq!(failed, 9_999);
}

#[test]
fn faults_without_a_simulation_or_with_a_bad_probability_are_refused() {
    let refused = Scheduler::<Node>::builder()
        .simulation_faults(Faults::new().crash_per_step(0.1))
        .build()
        .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        refused.to_string().contains("without simulation"),
        "{refused}"
    );
    for p in [-0.5, 1.5, f64::NAN] {
        let refused = Scheduler::<Node>::builder()
            .simulation(1)
            .simulation_faults(Faults::new().failed_commands(p))
            .build()
            .unwrap_err();
        assert!(refused.to_string().contains("failed_commands"), "{refused}");
    }
}
