//! Proves `terminate`: a waiting process is closed without another step; a
//! continuing or queued one gets exactly one more step, which carries
//! `Cancel::Terminate` and is its last; either way its outcome is
//! `Terminated` and `close` runs once. Messages queued for a process closed
//! this way go to `on_undelivered`; terminating an ended or unknown PID is
//! refused.
//!
//! ```text
//! cargo test --test sched_terminate
//! cargo test --release --test sched_terminate
//! ```

mod common;
use common::wait_until;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{
    Cancel, Event, NoCommand, Pid, Process, ProcessError, Status, StepOutput,
};
use stepsched::sched::{JoinHandle, Scheduler, TerminateError};

/// What a `Watched` process saw, shared with the test.
#[derive(Default)]
struct Log {
    /// The events of each step, one entry per step.
    steps: Mutex<Vec<Vec<String>>>,
    closes: AtomicUsize,
    /// Set by the test to let a "block" step return.
    gate: AtomicBool,
    /// Set by a "block" step when it starts.
    blocking: AtomicBool,
}

impl Log {
    fn steps(&self) -> Vec<Vec<String>> {
        self.steps.lock().unwrap().clone()
    }

    fn step_count(&self) -> usize {
        self.steps.lock().unwrap().len()
    }

    fn closes(&self) -> usize {
        self.closes.load(Ordering::SeqCst)
    }
}

/// Logs every step's events; its status depends on the method: "idle"
/// (wait for messages), "wait" (blocked with nothing to wait for),
/// "continue" (forever), "block" (its first step waits for `Log::gate`).
struct Watched {
    method: String,
    log: Arc<Log>,
}

impl Watched {
    fn new(log: &Arc<Log>) -> Self {
        Watched {
            method: String::new(),
            log: Arc::clone(log),
        }
    }
}

impl Process for Watched {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, method: &str, _: ()) -> Result<(), String> {
        self.method = method.to_owned();
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let seen = events.drain(..).map(|e| format!("{e:?}")).collect();
        self.log.steps.lock().unwrap().push(seen);
        match self.method.as_str() {
            "idle" => out.set_status(Status::Idle),
            "wait" => out.set_status(Status::Wait),
            "continue" => out.set_status(Status::Continue),
            "block" => {
                self.log.blocking.store(true, Ordering::SeqCst);
                while !self.log.gate.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(1));
                }
                out.done(0);
            }
            other => return Err(format!("no method {other}")),
        }
        Ok(())
    }

    fn close(&mut self) {
        self.log.closes.fetch_add(1, Ordering::SeqCst);
    }
}

fn cancel_terminate() -> String {
    format!("{:?}", Event::<Watched>::Cancel(Cancel::Terminate))
}

/// Submits a joinable `Watched` process on `method`, logging to `log`.
fn start(scheduler: &Scheduler<Watched>, log: &Arc<Log>, method: &str) -> JoinHandle<Watched> {
    scheduler
        .submit_joinable(Watched::new(log), method, ())
        .unwrap()
}

/// A two-worker scheduler running one `Watched` process on `method`.
fn setup(method: &str) -> (Arc<Log>, Scheduler<Watched>, JoinHandle<Watched>) {
    let log = Arc::new(Log::default());
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let handle = start(&scheduler, &log, method);
    (log, scheduler, handle)
}

#[test]
fn terminating_an_idle_process_closes_it_without_another_step() {
    let (log, scheduler, handle) = setup("idle");
    wait_until("the first step", || log.step_count() == 1);
    // Give the worker time to finish the step's transition to Idle (if it
    // has not, terminate takes the "running and about to wait" path, which
    // must look the same from here).
    thread::sleep(Duration::from_millis(20));
    scheduler.terminate(handle.pid()).unwrap();
    assert_eq!(handle.join(), Err(ProcessError::Terminated));
    assert_eq!(
        log.steps(),
        vec![Vec::<String>::new()],
        "no step after terminate"
    );
    assert_eq!(log.closes(), 1, "close ran once");
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(log.closes(), 1, "and not again at shutdown");
}

#[test]
fn terminating_a_continuing_process_gives_it_one_last_step_with_cancel_terminate() {
    let (log, scheduler, handle) = setup("continue");
    wait_until("a few steps", || log.step_count() >= 5);
    scheduler.terminate(handle.pid()).unwrap();
    assert_eq!(handle.join(), Err(ProcessError::Terminated));
    let steps = log.steps();
    let cancels: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, events)| events.contains(&cancel_terminate()))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        cancels,
        vec![steps.len() - 1],
        "one cancel, in the last step"
    );
    assert_eq!(steps.last().unwrap(), &vec![cancel_terminate()]);
    assert_eq!(log.closes(), 1);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn terminating_a_queued_process_gives_its_first_step_cancel_terminate() {
    let blocker_log = Arc::new(Log::default());
    let log = Arc::new(Log::default());
    let scheduler = Scheduler::builder().workers(1).build().unwrap();
    let blocker = start(&scheduler, &blocker_log, "block");
    wait_until("the only worker to be busy", || {
        blocker_log.blocking.load(Ordering::SeqCst)
    });
    // The only worker is held: the target stays queued.
    let target = start(&scheduler, &log, "idle");
    let target_pid = target.pid();
    scheduler.terminate(target_pid).unwrap();
    assert_eq!(
        scheduler.terminate(target.pid()),
        Ok(()),
        "a second terminate before it ends is accepted and changes nothing"
    );
    assert_eq!(log.step_count(), 0);
    blocker_log.gate.store(true, Ordering::SeqCst);
    assert_eq!(blocker.join(), Ok(0));
    assert_eq!(target.join(), Err(ProcessError::Terminated));
    assert_eq!(
        log.steps(),
        vec![vec![cancel_terminate()]],
        "exactly one step"
    );
    assert_eq!(log.closes(), 1);
    assert_eq!(
        scheduler.terminate(target_pid),
        Err(TerminateError::Finished)
    );
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn messages_queued_for_a_terminated_waiting_process_go_to_on_undelivered() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::new(Log::default());
    let scheduler = {
        let undelivered = Arc::clone(&undelivered);
        Scheduler::<Watched>::builder()
            .workers(2)
            .on_undelivered(move |pid, event| {
                if let Event::Message(n) = event {
                    undelivered.lock().unwrap().push((pid, n));
                }
            })
            .build()
            .unwrap()
    };
    // "wait" blocks for a completion that never comes: messages do not wake
    // it, they stay queued.
    let handle = start(&scheduler, &log, "wait");
    let pid = handle.pid();
    wait_until("the first step", || log.step_count() == 1);
    thread::sleep(Duration::from_millis(20));
    for n in 1..=3 {
        scheduler.send(pid, n).unwrap();
    }
    scheduler.terminate(pid).unwrap();
    assert_eq!(handle.join(), Err(ProcessError::Terminated));
    // Messages do not wake a blocked process, and a terminated one is closed
    // without a step: all three are reported, none reached a step.
    wait_until("the undelivered reports", || {
        undelivered.lock().unwrap().len() >= 3
    });
    assert_eq!(
        log.steps(),
        vec![Vec::<String>::new()],
        "one step, no events"
    );
    let mut reported = undelivered.lock().unwrap().clone();
    reported.sort();
    assert_eq!(reported, vec![(pid, 1), (pid, 2), (pid, 3)]);
    assert_eq!(log.closes(), 1);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn terminating_an_ended_or_unknown_pid_is_refused() {
    let (log, scheduler, handle) = setup("idle");
    let pid = handle.pid();
    wait_until("the first step", || log.step_count() == 1);
    scheduler.terminate(pid).unwrap();
    assert_eq!(handle.join(), Err(ProcessError::Terminated));
    wait_until("the slot to be freed", || scheduler.live() == 0);
    assert_eq!(scheduler.terminate(pid), Err(TerminateError::Finished));
    assert_eq!(
        scheduler.terminate(Pid::from_raw(1 << 31)),
        Err(TerminateError::NoSuchProcess)
    );
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn terminating_many_processes_in_every_state_ends_each_exactly_once() {
    // Miri interprets every instruction: thirty there.
    const N: usize = if cfg!(miri) { 30 } else { 600 };
    let logs: Vec<Arc<Log>> = (0..N).map(|_| Arc::new(Log::default())).collect();
    let outcomes = Arc::new(AtomicUsize::new(0));
    let scheduler = {
        let outcomes = Arc::clone(&outcomes);
        Scheduler::<Watched>::builder()
            .workers(2)
            .on_complete(move |_, _| {
                outcomes.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap()
    };
    let methods = ["idle", "wait", "continue"];
    let handles: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(i, log)| start(&scheduler, log, methods[i % 3]))
        .collect();
    // Terminate at once: some are still queued, some running, some waiting.
    for handle in &handles {
        scheduler.terminate(handle.pid()).unwrap();
    }
    for (i, handle) in handles.into_iter().enumerate() {
        match handle.join_timeout(Duration::from_secs(30)) {
            Ok(outcome) => assert_eq!(outcome, Err(ProcessError::Terminated), "#{i}"),
            Err(_) => panic!("#{i} ({}) never ended after terminate", methods[i % 3]),
        }
    }
    for (i, log) in logs.iter().enumerate() {
        assert_eq!(log.closes(), 1, "#{i} closed once");
        let steps = log.steps();
        let cancels = steps
            .iter()
            .flatten()
            .filter(|e| **e == cancel_terminate())
            .count();
        assert!(cancels <= 1, "#{i}: {steps:?}");
        if cancels == 1 {
            assert!(
                steps.last().unwrap().contains(&cancel_terminate()),
                "#{i}: the cancel step is the last: {steps:?}"
            );
        }
    }
    assert_eq!(outcomes.load(Ordering::SeqCst), N);
    let report = scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(report.cancelled, 0);
}
