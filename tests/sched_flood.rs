//! Proves that a step never swallows a flood and that events a step leaves
//! are kept: a process flooded with 5M messages (from two outside senders
//! and a process) gets them in steps of at most the cap, exactly once and
//! in each sender's order; a step that handles half of its events sees the
//! other half first in the next; `Idle` with events left runs again at
//! once, `Wait` with only messages left sleeps until its completion; events
//! left when a process ends go to `on_undelivered`; settings the scheduler
//! cannot honour are refused by `build`.
//!
//! ```text
//! cargo test --test sched_flood
//! cargo test --release --test sched_flood
//! ```

mod common;
use common::{joined, wait_until, Held};

use std::io::ErrorKind;
use std::sync::{Arc, Mutex};
use std::thread;

use stepsched::process::{Command, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::{Scheduler, DEFAULT_EVENTS_PER_STEP};

/// Messages per outside sender (two of them), and from the in-scheduler
/// sender: 5M in all natively, a few thousand under Miri.
const PER_SENDER: u64 = if cfg!(miri) { 1_000 } else { 2_000_000 };
const FROM_STEP: u64 = if cfg!(miri) { 1_000 } else { 1_000_000 };

#[derive(Debug)]
struct Wait;
impl Command for Wait {
    fn kind(&self) -> &'static str {
        "wait"
    }
}

/// What the test processes do.
enum Role {
    /// Receives `(stream, seq)` messages until `total` have come, checking
    /// each stream's numbers are consecutive from 0; ends with the largest
    /// number of events a step was handed.
    Sink {
        next: [u64; 3],
        total: u64,
        received: u64,
        largest: usize,
    },
    /// Sends `n` numbered messages of stream 2 to `to` in one step.
    Burst { to: Pid, n: u64 },
    /// Records every step's events (message values, and 1000 + tag for a
    /// completion). Step 1 yields a command and waits; from then on it
    /// handles the first `take` events of each step, leaves the rest, and
    /// returns `then`; it ends when its message values add up to `until`.
    Recorder {
        steps: Arc<Mutex<Vec<Vec<u64>>>>,
        take: usize,
        then: Status<u64>,
        sum: u64,
        until: u64,
    },
}

struct Node(Role);

type Msg = (u64, u64);

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Wait;
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
        match &mut self.0 {
            Role::Sink {
                next,
                total,
                received,
                largest,
            } => {
                *largest = (*largest).max(events.len());
                for event in events.drain(..) {
                    let Event::Message((stream, seq)) = event else {
                        return Err(format!("unexpected {event:?}"));
                    };
                    let expected = &mut next[stream as usize];
                    if seq != *expected {
                        return Err(format!("stream {stream}: got {seq}, expected {expected}"));
                    }
                    *expected += 1;
                    *received += 1;
                }
                if *received == *total {
                    out.done(*largest as u64);
                } else {
                    out.set_status(Status::Idle);
                }
            }
            Role::Burst { to, n } => {
                for seq in 0..*n {
                    out.send(*to, (2, seq));
                }
                out.done(0);
            }
            Role::Recorder {
                steps,
                take,
                then,
                sum,
                until,
            } => {
                let first = steps.lock().unwrap().is_empty();
                steps.lock().unwrap().push(
                    events
                        .iter()
                        .map(|e| match e {
                            Event::Message((_, v)) => *v,
                            Event::Completion { tag, .. } => 1000 + tag,
                            other => panic!("unexpected {other:?}"),
                        })
                        .collect(),
                );
                if first {
                    out.yield_command(7, Wait);
                    out.set_status(Status::Wait);
                    return Ok(());
                }
                let handled = (*take).min(events.len());
                for event in events.drain(..handled) {
                    if let Event::Message((_, v)) = event {
                        *sum += v;
                    }
                }
                if *sum >= *until {
                    out.done(*sum);
                } else {
                    out.set_status(then.clone());
                }
            }
        }
        Ok(())
    }
}

#[test]
fn a_flood_comes_in_steps_of_the_cap_exactly_once_and_in_order() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let total = 2 * PER_SENDER + FROM_STEP;
    let sink = scheduler
        .submit_joinable(
            Node(Role::Sink {
                next: [0; 3],
                total,
                received: 0,
                largest: 0,
            }),
            "",
            (),
        )
        .unwrap();
    let to = sink.pid();
    let burst = scheduler
        .submit_joinable(Node(Role::Burst { to, n: FROM_STEP }), "", ())
        .unwrap();
    thread::scope(|s| {
        for stream in 0..2 {
            let scheduler = &scheduler;
            s.spawn(move || {
                for seq in 0..PER_SENDER {
                    scheduler.send(to, (stream, seq)).unwrap();
                }
            });
        }
    });
    assert_eq!(burst.join(), Ok(0));
    let largest = sink.join().expect("every message, once, in order");
    assert!(
        largest as usize <= DEFAULT_EVENTS_PER_STEP,
        "a step was handed {largest} events"
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// A started `Recorder`: its scheduler, the handler's completers, the
/// events of each of its steps, and its handle.
type Recording = (
    Scheduler<Node>,
    Held<Node>,
    Arc<Mutex<Vec<Vec<u64>>>>,
    stepsched::sched::JoinHandle<Node>,
);

/// Starts a `Recorder` that handles `take` events a step and returns
/// `then`, waits until its first step has yielded its command, sends it
/// `values` while it waits, and returns what it needs to go on.
fn recorder(take: usize, then: Status<u64>, values: &[u64], until: u64) -> Recording {
    let held = Held::default();
    let scheduler = Scheduler::builder()
        .workers(2)
        .handler("wait", held.handler())
        .build()
        .unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let node = Node(Role::Recorder {
        steps: Arc::clone(&steps),
        take,
        then,
        sum: 0,
        until,
    });
    let handle = scheduler.submit_joinable(node, "", ()).unwrap();
    held.wait_for("the first step's command", 1);
    for &v in values {
        scheduler.send(handle.pid(), (0, v)).unwrap();
    }
    (scheduler, held, steps, handle)
}

#[test]
fn a_step_that_handles_half_sees_the_other_half_first_next() {
    // Waiting, it is not woken by the messages; the completion brings them
    // all in one step, which handles three and continues.
    let (scheduler, held, steps, handle) = recorder(3, Status::Continue, &[1, 2, 3, 4, 5], 15);
    held.lock().pop().unwrap().succeed(()).unwrap();
    assert_eq!(joined(handle), Ok(15));
    let steps = steps.lock().unwrap().clone();
    assert_eq!(
        steps,
        vec![vec![], vec![1, 2, 3, 4, 5, 1007], vec![4, 5, 1007]]
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn idle_with_events_left_runs_again_at_once() {
    // One event a step, Idle: no further message comes, so each later
    // step happens only because events were left.
    let (scheduler, held, steps, handle) = recorder(1, Status::Idle, &[1, 2, 3], 6);
    held.lock().pop().unwrap().succeed(()).unwrap();
    assert_eq!(joined(handle), Ok(6));
    let steps = steps.lock().unwrap().clone();
    assert_eq!(
        steps,
        vec![vec![], vec![1, 2, 3, 1007], vec![2, 3, 1007], vec![3, 1007]]
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn wait_with_only_messages_left_sleeps_until_its_completion() {
    /// Yields a command in every step, handles one event, and waits.
    struct Again(Arc<Mutex<Vec<Vec<u64>>>>);
    impl Process for Again {
        type Input = ();
        type Message = u64;
        type Command = Wait;
        type Reply = ();
        type Output = ();
        type Error = String;
        fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
            Ok(())
        }
        fn step(
            &mut self,
            events: &mut Vec<Event<Self>>,
            out: &mut StepOutput<'_, Self>,
        ) -> Result<(), String> {
            let seen: Vec<u64> = events
                .iter()
                .map(|e| match e {
                    Event::Message(v) => *v,
                    _ => 1000,
                })
                .collect();
            let mut steps = self.0.lock().unwrap();
            steps.push(seen);
            if steps.len() == 3 {
                out.done(());
                return Ok(());
            }
            // Handle the completion, keep the messages.
            events.retain(|e| matches!(e, Event::Message(_)));
            out.yield_command(steps.len() as u64, Wait);
            out.set_status(Status::Wait);
            Ok(())
        }
    }
    let held = Held::default();
    let scheduler = Scheduler::builder()
        .workers(2)
        .handler("wait", held.handler())
        .build()
        .unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let handle = scheduler
        .submit_joinable(Again(Arc::clone(&steps)), "", ())
        .unwrap();
    held.wait_for("the first command", 1);
    for v in [1, 2] {
        scheduler.send(handle.pid(), v).unwrap();
    }
    held.lock().pop().unwrap().succeed(()).unwrap();
    held.wait_for("the second command", 1);
    // Step 2 left message 2 and waits for command 2: it must not run again
    // until that completes, however long we wait here.
    thread::sleep(common::ms(50));
    assert_eq!(steps.lock().unwrap().len(), 2, "woken by a carried message");
    held.lock().pop().unwrap().succeed(()).unwrap();
    joined(handle).unwrap();
    assert_eq!(
        *steps.lock().unwrap(),
        vec![vec![], vec![1, 2, 1000], vec![1, 2, 1000]]
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn events_left_when_a_process_ends_are_reported_not_dropped() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let held = Held::default();
    let seen = Arc::clone(&undelivered);
    let scheduler = Scheduler::builder()
        .workers(2)
        .handler("wait", held.handler())
        .on_undelivered(move |pid, event| {
            if let Event::Message((_, v)) = event {
                seen.lock().unwrap().push((pid, v));
            }
        })
        .build()
        .unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    // Handles one event a step and ends once it has handled value 1.
    let node = Node(Role::Recorder {
        steps: Arc::clone(&steps),
        take: 1,
        then: Status::Continue,
        sum: 0,
        until: 1,
    });
    let handle = scheduler.submit_joinable(node, "", ()).unwrap();
    held.wait_for("the first step's command", 1);
    for v in [1, 2, 3] {
        scheduler.send(handle.pid(), (0, v)).unwrap();
    }
    held.lock().pop().unwrap().succeed(()).unwrap();
    let pid = handle.pid();
    assert_eq!(joined(handle), Ok(1));
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
    assert_eq!(*undelivered.lock().unwrap(), vec![(pid, 2), (pid, 3)]);
}

#[test]
fn a_cap_of_one_hands_one_event_a_step() {
    let scheduler = Scheduler::builder()
        .workers(1)
        .max_events_per_step(1)
        .build()
        .unwrap();
    let sink = scheduler
        .submit_joinable(
            Node(Role::Sink {
                next: [0; 3],
                total: 100,
                received: 0,
                largest: 0,
            }),
            "",
            (),
        )
        .unwrap();
    for seq in 0..100 {
        scheduler.send(sink.pid(), (0, seq)).unwrap();
    }
    assert_eq!(sink.join(), Ok(1));
    wait_until("the scheduler to go idle", || scheduler.live() == 0);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn settings_it_cannot_honour_are_refused_by_name() {
    let refused = |b: stepsched::sched::Builder<Node>, name: &str| {
        let error = b.build().map(drop).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.to_string().contains(name), "{error} names {name}");
    };
    refused(Scheduler::builder().workers(0), "workers(0)");
    refused(
        Scheduler::builder().global_queue_interval(0),
        "global_queue_interval(0)",
    );
    refused(
        Scheduler::builder().spin_thresholds(4, 0),
        "spin_thresholds",
    );
    refused(Scheduler::builder().max_processes(0), "max_processes(0)");
    refused(Scheduler::builder().trace(0), "trace(0)");
    refused(
        Scheduler::builder().max_events_per_step(0),
        "max_events_per_step(0)",
    );
}
