//! Shutdown racing the creation of a process (docs/ARCHITECTURE.md, trap 8:
//! check, then act, across a phase change): a submit
//! or a spawn whose `init` is running while shutdown runs is either refused
//! (the process handed back) or runs and is accounted for; `shutdown` never
//! reports a clean stop with a process it will never run, and a child
//! created just as shutdown starts is cancelled, not left to time out.
//!
//! ```text
//! cargo test --test sched_shutdown_races
//! ```

mod common;
use common::joined;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{Cancel, Event, NoCommand, Process, SpawnError, Status, StepOutput};
use stepsched::sched::Scheduler;

/// How long a test waits for a handshake before it fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(60);

/// Joins with a bound that turns a lost process (the defect: it was never
/// run) into a failure instead of a hung test.
/// One side of a handshake with a process's `init`: init reports that it
/// has begun, then waits until the test lets it return.
#[derive(Clone)]
struct Gate {
    began: mpsc::SyncSender<()>,
    release: Arc<Mutex<mpsc::Receiver<()>>>,
}

/// Method "gated": init passes its gate (if any); then the process waits
/// for messages and finishes on `Cancel::Shutdown`. Method "parent": its
/// first step spawns a "slow" child (whose init sleeps) and reports the
/// spawn's result; then it waits, and finishes on `Cancel::Shutdown`.
struct Proc {
    gate: Option<Gate>,
    spawned: Option<mpsc::SyncSender<Result<(), &'static str>>>,
    started: bool,
}

impl Proc {
    fn plain() -> Self {
        Proc {
            gate: None,
            spawned: None,
            started: false,
        }
    }
}

impl Process for Proc {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, method: &str, _: ()) -> Result<(), String> {
        match method {
            "gated" => {
                if let Some(gate) = &self.gate {
                    gate.began.send(()).map_err(|e| e.to_string())?;
                    let release = gate.release.lock().map_err(|e| e.to_string())?;
                    release.recv_timeout(PATIENCE).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            "slow" => {
                thread::sleep(Duration::from_millis(50));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if !self.started {
            self.started = true;
            if let Some(report) = self.spawned.take() {
                let result = match out.spawn(Proc::plain(), "slow", ()) {
                    Ok(_) => Ok(()),
                    Err(SpawnError::ShuttingDown(_)) => Err("shutting down"),
                    Err(_) => Err("other"),
                };
                let _ = report.send(result);
            }
        }
        if events
            .drain(..)
            .any(|e| matches!(e, Event::Cancel(Cancel::Shutdown)))
        {
            out.done(());
        } else {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

/// The race's exact shape: shutdown runs, and returns, while a submit's
/// `init` runs. Without the phase check at the insert, shutdown would
/// report a clean stop (nothing was live yet), then the submit would insert
/// and queue the process and return `Ok`: it would never run, its `join`
/// would hang and `live()` would stay 1.
#[test]
fn a_submit_whose_init_outlasts_shutdown_is_refused_and_handed_back() {
    let scheduler = Arc::new(Scheduler::<Proc>::builder().workers(2).build().unwrap());
    let (began_tx, began) = mpsc::sync_channel(1);
    let (release, release_rx) = mpsc::channel();
    let gate = Gate {
        began: began_tx,
        release: Arc::new(Mutex::new(release_rx)),
    };
    let submitter = {
        let scheduler = Arc::clone(&scheduler);
        thread::spawn(move || {
            let process = Proc {
                gate: Some(gate),
                ..Proc::plain()
            };
            scheduler.submit_joinable(process, "gated", ())
        })
    };
    began.recv_timeout(PATIENCE).expect("init began");
    let report = scheduler.shutdown(Duration::from_secs(5));
    assert_eq!(report.stuck, 0);
    assert!(!report.timed_out, "nothing was live: {report:?}");
    release.send(()).expect("init is waiting");
    match submitter.join().expect("the submitter panicked") {
        Err(SpawnError::ShuttingDown(process)) => {
            assert!(process.gate.is_some(), "the same process is handed back")
        }
        Ok(handle) => panic!(
            "submit returned Ok({}) after shutdown returned: the process never runs",
            handle.pid()
        ),
        Err(other) => panic!("refused for the wrong reason: {other:?}"),
    }
    assert_eq!(
        scheduler.live(),
        0,
        "the refused process is not counted live"
    );
}

/// A submit racing a shutdown from another thread, many times: each one
/// is either refused, or it runs, receives `Cancel::Shutdown` and ends
/// (its join returns) before shutdown reports; shutdown never times out.
#[test]
fn submits_racing_shutdown_are_refused_or_run_to_the_end() {
    let rounds = if cfg!(miri) { 3 } else { 200 };
    for _ in 0..rounds {
        let scheduler = Arc::new(Scheduler::<Proc>::builder().workers(2).build().unwrap());
        let submitter = {
            let scheduler = Arc::clone(&scheduler);
            thread::spawn(move || {
                (0..8)
                    .map(|_| scheduler.submit_joinable(Proc::plain(), "gated", ()))
                    .collect::<Vec<_>>()
            })
        };
        let report = scheduler.shutdown(Duration::from_secs(30));
        assert!(!report.timed_out, "a process missed its cancel: {report:?}");
        for result in submitter.join().expect("the submitter panicked") {
            match result {
                Ok(handle) => assert_eq!(joined(handle), Ok(())),
                Err(SpawnError::ShuttingDown(_)) => {}
                Err(other) => panic!("refused for the wrong reason: {other:?}"),
            }
        }
        assert_eq!(scheduler.live(), 0);
    }
}

/// A step spawns a child whose `init` is still running when shutdown
/// starts: the child is refused (the parent sees `ShuttingDown`) or it is
/// cancelled like every other live process; either way shutdown ends
/// without waiting out its timeout. A child created after shutdown's scan
/// and admitted would get no cancel, and the shutdown would time out.
#[test]
fn a_child_spawned_as_shutdown_starts_is_refused_or_cancelled() {
    let scheduler = Scheduler::<Proc>::builder().workers(2).build().unwrap();
    let (spawned_tx, spawned) = mpsc::sync_channel(1);
    let parent = Proc {
        spawned: Some(spawned_tx),
        ..Proc::plain()
    };
    let handle = scheduler.submit_joinable(parent, "parent", ()).unwrap();
    // On most machines the parent's step is inside the child's 50 ms init
    // when shutdown starts; on any, the outcome must be one of the two.
    thread::sleep(Duration::from_millis(10));
    let report = scheduler.shutdown(Duration::from_secs(30));
    assert!(!report.timed_out, "the child missed its cancel: {report:?}");
    assert_eq!(report.forced, 0);
    let result = spawned.recv_timeout(PATIENCE).expect("the parent reported");
    assert!(
        matches!(result, Ok(()) | Err("shutting down")),
        "spawn failed for another reason: {result:?}"
    );
    assert_eq!(joined(handle), Ok(()));
    assert_eq!(scheduler.live(), 0);
}
