//! The worker-death policy (`contain.rs`) against planted internal panics:
//! one worker, so a worker that died would leave nothing to run what
//! follows, and shutdown would find the victim stuck.

use super::inject::{plant, Stage};
use crate::process::{
    Event, ExitReason, NoCommand, Outcome, Pid, Process, ProcessError, Status, StepOutput,
};
use crate::sched::Scheduler;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Messages: `0` (or a cancel) ends it with its step count; `DOWNS + raw pid` monitors
/// that pid; anything else is a step. `Down`s go to `downs`.
struct Counter {
    steps: Arc<AtomicU32>,
    downs: Option<mpsc::Sender<(Pid, ExitReason)>>,
}

const WATCH: u64 = 1 << 63;

impl Process for Counter {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u32;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        // Release (test only): the test waits for the count.
        let steps = self.steps.fetch_add(1, Ordering::Release) + 1;
        out.set_status(Status::Idle);
        for event in events.drain(..) {
            match event {
                Event::Message(0) | Event::Cancel(_) => out.done(steps),
                Event::Message(m) if m & WATCH != 0 => out.monitor(Pid::from_raw(m & !WATCH)),
                Event::Down { pid, reason } => {
                    if let Some(downs) = &self.downs {
                        let _ = downs.send((pid, reason));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The liveness guard of every wait: a hang becomes a failure.
const GUARD: Duration = Duration::from_secs(60);

fn counter(downs: Option<mpsc::Sender<(Pid, ExitReason)>>) -> (Counter, Arc<AtomicU32>) {
    let steps = Arc::new(AtomicU32::new(0));
    let process = Counter {
        steps: Arc::clone(&steps),
        downs,
    };
    (process, steps)
}

fn scheduler() -> Scheduler<Counter> {
    Scheduler::builder()
        .workers(1)
        .build()
        .expect("a scheduler")
}

fn addr(s: &Scheduler<Counter>) -> usize {
    Arc::as_ptr(&s.shared) as usize
}

fn wait_steps(steps: &AtomicU32, n: u32) {
    let deadline = Instant::now() + GUARD;
    // Acquire: pairs with the step's Release.
    while steps.load(Ordering::Acquire) < n {
        assert!(Instant::now() < deadline, "no step {n}");
        std::thread::yield_now();
    }
}

fn by_the_scheduler(outcome: &Outcome<Counter>) -> bool {
    matches!(outcome, Err(ProcessError::Panicked(m)) if m.contains("internal panic"))
}

/// The one worker still runs a new process to its end, and the report
/// counts the panics and nothing stuck.
fn assert_worker_alive_then_shut_down(s: &Scheduler<Counter>, panics: u64) {
    let (process, _) = counter(None);
    let next = s.submit_joinable(process, "", ()).expect("submitted");
    s.send(next.pid(), 0).expect("live");
    let outcome = next.join_timeout(GUARD).expect("the worker runs it");
    assert!(matches!(outcome, Ok(1 | 2)), "{outcome:?}");
    let report = s.shutdown(GUARD);
    assert_eq!(
        (report.worker_panics, report.stuck),
        (panics, 0),
        "{report:?}"
    );
}

/// A panic of the scheduler's code in a step: the process is closed as
/// `Panicked` (its joiner answered, its watcher told with the same
/// reason), and the one worker goes on to run the next process.
#[test]
fn an_internal_panic_in_a_step_closes_its_process_and_the_worker_goes_on() {
    let s = scheduler();
    let (tx, downs) = mpsc::channel();
    let (watcher, _) = counter(Some(tx));
    let watcher = s.submit(watcher, "", ()).expect("submitted");
    let (victim, steps) = counter(None);
    let victim = s.submit_joinable(victim, "", ()).expect("submitted");
    s.send(watcher, WATCH | victim.pid().into_raw())
        .expect("live");
    wait_steps(&steps, 1);
    // The monitor is registered at the victim (which then holds a watcher),
    // so the `Down` tells of this end, not of a process already gone.
    let deadline = Instant::now() + GUARD;
    while !s
        .processes()
        .iter()
        .any(|p| p.pid == victim.pid() && p.monitored_by == 1)
    {
        assert!(Instant::now() < deadline, "the monitor is never registered");
        std::thread::yield_now();
    }
    plant(addr(&s), victim.pid(), Stage::Step);
    s.send(victim.pid(), 7).expect("live");
    let pid = victim.pid();
    let outcome = victim.join_timeout(GUARD).expect("the joiner is answered");
    assert!(by_the_scheduler(&outcome), "{outcome:?}");
    assert_eq!(s.stats().worker_panics, 1);
    let (down, reason) = downs.recv_timeout(GUARD).expect("a Down");
    assert_eq!(down, pid);
    assert!(
        matches!(&reason, ExitReason::Panicked(m) if m.to_string().contains("internal panic")),
        "{reason:?}"
    );
    assert_worker_alive_then_shut_down(&s, 1);
}

/// A panic of the scheduler's code in a close, after `complete`: the
/// joiner is answered and the slot freed (not left live for ever).
#[test]
fn an_internal_panic_in_a_close_answers_the_joiner_and_frees_the_slot() {
    let s = scheduler();
    let (victim, steps) = counter(None);
    let victim = s.submit_joinable(victim, "", ()).expect("submitted");
    wait_steps(&steps, 1);
    plant(addr(&s), victim.pid(), Stage::Close);
    s.send(victim.pid(), 0).expect("live");
    let outcome = victim.join_timeout(GUARD).expect("the joiner is answered");
    assert!(by_the_scheduler(&outcome), "{outcome:?}");
    assert_worker_alive_then_shut_down(&s, 1);
    assert_eq!(s.live(), 0);
}

/// A task queued for a process that is not Ready (here Idle: a bogus
/// second queueing) is refused, not run and not panicked on: the count
/// says so, and the process, untouched, still takes its message.
#[test]
fn a_task_for_a_process_not_ready_is_refused_and_counted() {
    let s = scheduler();
    let (victim, steps) = counter(None);
    let victim = s.submit_joinable(victim, "", ()).expect("submitted");
    wait_steps(&steps, 1);
    let slot = s.shared.core.table.get(victim.pid().key()).expect("a slot");
    s.shared
        .core
        .schedule_remote(crate::sched::core::table::Task::new(slot));
    let deadline = Instant::now() + GUARD;
    while s.stats().worker_panics == 0 {
        assert!(Instant::now() < deadline, "the task is never refused");
        std::thread::yield_now();
    }
    s.send(victim.pid(), 0).expect("live");
    assert_eq!(victim.join_timeout(GUARD).expect("answered"), Ok(2));
    assert_worker_alive_then_shut_down(&s, 1);
}
