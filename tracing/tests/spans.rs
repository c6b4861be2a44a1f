//! Runs processes that end each way a process can, under a subscriber that
//! keeps every span and event of the run (`support`), and checks that each
//! process that stepped has one `process` span, closed at its end with its
//! outcome, around its `step` spans.

mod support;

use std::sync::mpsc::{channel, Sender};
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{JoinHandle, Scheduler};
use support::{capture, Seen};

/// What a [`Job`] does.
enum Plan {
    /// Runs this many steps, then ends.
    Steps(u32),
    /// Panics in its first step.
    Panic,
    /// Sends its PID at its first step, then idles until it is ended
    /// (terminated, killed, or closed by shutdown).
    Idle(Sender<Pid>),
    /// Kills the process, then ends.
    Kill(Pid),
    /// Spawns a child, sends its PID, kills it in the same step (so the
    /// child ends before it ever steps), then ends.
    SpawnAndKill(Sender<Pid>),
}

struct Job(Option<Plan>);

impl Process for Job {
    type Input = Plan;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, plan: Plan) -> Result<(), ()> {
        self.0 = Some(plan);
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        match self.0.as_mut().expect("a plan") {
            Plan::Steps(left) => {
                *left -= 1;
                if *left == 0 {
                    out.done(());
                } else {
                    out.set_status(Status::Continue);
                }
            }
            Plan::Panic => panic!("a step that panics"),
            Plan::Idle(started) => {
                let _ = started.send(out.pid());
                out.set_status(Status::Idle);
            }
            Plan::Kill(target) => {
                out.kill(*target);
                out.done(());
            }
            Plan::SpawnAndKill(spawned) => {
                let child = out.spawn(Job(None), "child", Plan::Steps(1)).expect("room");
                let _ = spawned.send(child);
                out.kill(child);
                out.done(());
            }
        }
        Ok(())
    }
}

fn scheduler(workers: usize) -> Scheduler<Job> {
    stepsched_tracing::instrument(Scheduler::<Job>::builder())
        .workers(workers)
        .build()
        .expect("threads start")
}

/// Submits a process that idles after its first step, and waits for
/// that step.
fn idler(scheduler: &Scheduler<Job>) -> JoinHandle<Job> {
    let (started, first) = channel();
    let handle = scheduler
        .submit_joinable(Job(None), "idle", Plan::Idle(started))
        .unwrap();
    assert_eq!(
        first.recv_timeout(Duration::from_secs(10)),
        Ok(handle.pid())
    );
    handle
}

/// Waits for `handle`'s end and returns it as the `outcome` field shows it.
fn outcome(handle: JoinHandle<Job>) -> String {
    match handle.join_timeout(Duration::from_secs(10)).expect("ends") {
        Ok(()) => "ok".to_owned(),
        Err(error) => error.to_string(),
    }
}

/// Shuts a scheduler whose processes have all ended down, and drops it.
fn stop(scheduler: Scheduler<Job>) {
    assert!(!scheduler.shutdown(Duration::from_secs(10)).timed_out);
    drop(scheduler);
}

/// Shuts a scheduler down at once (its live processes closed by force),
/// and drops it.
fn force(scheduler: Scheduler<Job>) {
    let report = scheduler.shutdown(Duration::ZERO);
    assert_eq!(report.stuck, 0);
    drop(scheduler);
}

/// Checks that `pid` had one `process` span, closed with `outcome`, and
/// `steps` step spans, each closed and a child of it; returns the span's
/// index.
fn assert_lifetime(seen: &Seen, pid: Pid, outcome: &str, steps: usize) -> usize {
    let raw = pid.into_raw().to_string();
    let (process, span) = seen.process(pid.into_raw());
    assert!(span.closed, "the process span closes at the end");
    assert_eq!(span.parent, None, "a process span is a root");
    assert_eq!(span.fields["outcome"], outcome);
    let children: Vec<_> = seen
        .named("step")
        .filter(|(_, s)| s.fields["pid"] == raw)
        .collect();
    assert_eq!(children.len(), steps, "one span per step");
    for (_, step) in &children {
        assert_eq!(step.parent, Some(process), "a step nests in its process");
        assert!(step.closed, "every step span is closed");
    }
    let ends: Vec<_> = seen
        .events_of("process ended")
        .filter(|e| e.fields["pid"] == raw)
        .collect();
    assert_eq!(ends.len(), 1, "one end event");
    assert_eq!(ends[0].fields["outcome"], outcome);
    assert_eq!(
        ends[0].parent,
        Some(process),
        "the end is inside the lifetime"
    );
    process
}

#[test]
fn steps_nest_in_their_process_span_which_closes_with_ok_at_the_end() {
    let (_one, seen) = capture();
    let scheduler = scheduler(2);
    let handle = scheduler
        .submit_joinable(Job(None), "steps", Plan::Steps(3))
        .unwrap();
    let pid = handle.pid();
    handle
        .join_timeout(Duration::from_secs(10))
        .expect("ends")
        .unwrap();
    stop(scheduler);

    let seen = seen.lock();
    assert_lifetime(&seen, pid, "ok", 3);
    let mut steps: Vec<_> = seen.named("step").map(|(_, s)| s).collect();
    steps.sort_by_key(|s| s.fields["status"] == "done");
    let statuses: Vec<&str> = steps.iter().map(|s| s.fields["status"].as_str()).collect();
    assert_eq!(statuses, ["continue", "continue", "done"]);
    for step in steps {
        assert!(step.fields["worker"] == "0" || step.fields["worker"] == "1");
        assert_eq!(step.fields["events"], "0");
        assert!(step.fields.contains_key("duration_ns"));
    }
}

#[test]
fn a_process_span_closes_when_a_step_panics() {
    let (_one, seen) = capture();
    let scheduler = scheduler(1);
    let handle = scheduler
        .submit_joinable(Job(None), "panics", Plan::Panic)
        .unwrap();
    let pid = handle.pid();
    assert!(handle
        .join_timeout(Duration::from_secs(10))
        .expect("ends")
        .is_err());
    stop(scheduler);

    let seen = seen.lock();
    assert_lifetime(&seen, pid, "process panicked: a step that panics", 1);
    let (_, step) = seen.named("step").next().unwrap();
    assert_eq!(step.fields["status"], "failed");
}

#[test]
fn a_process_span_closes_when_the_process_is_terminated() {
    let (_one, seen) = capture();
    let scheduler = scheduler(2);
    let handle = idler(&scheduler);
    let pid = handle.pid();
    assert!(
        !seen.lock().process(pid.into_raw()).1.closed,
        "open while it lives"
    );
    scheduler.terminate(pid).unwrap();
    assert_eq!(outcome(handle), "process was terminated");
    stop(scheduler);

    let seen = seen.lock();
    // Idle, it is closed without another step.
    assert_lifetime(&seen, pid, "process was terminated", 1);
}

#[test]
fn a_process_span_closes_when_a_kill_ends_the_process() {
    let (_one, seen) = capture();
    let scheduler = scheduler(2);
    let handle = idler(&scheduler);
    let target = handle.pid();
    let killer = scheduler
        .submit_joinable(Job(None), "killer", Plan::Kill(target))
        .unwrap();
    let killer_pid = killer.pid();
    assert_eq!(outcome(killer), "ok");
    assert_eq!(outcome(handle), "process was terminated");
    stop(scheduler);

    let seen = seen.lock();
    // Killed between steps: no step after its first.
    assert_lifetime(&seen, target, "process was terminated", 1);
    assert_lifetime(&seen, killer_pid, "ok", 1);
}

#[test]
fn a_process_span_closes_when_shutdown_closes_the_process() {
    let (_one, seen) = capture();
    let scheduler = scheduler(2);
    let handle = idler(&scheduler);
    let pid = handle.pid();
    force(scheduler);
    assert_eq!(outcome(handle), "process was closed by shutdown");

    let seen = seen.lock();
    // Closed by force, without another step.
    assert_lifetime(&seen, pid, "process was closed by shutdown", 1);
    assert!(
        seen.spans.iter().all(|s| s.closed),
        "no span outlives its scheduler"
    );
}

#[test]
fn a_process_killed_before_its_first_step_has_only_its_end_event() {
    let (_one, seen) = capture();
    let scheduler = scheduler(1);
    let (spawned, child) = channel();
    let parent = scheduler
        .submit_joinable(Job(None), "parent", Plan::SpawnAndKill(spawned))
        .unwrap();
    let parent_pid = parent.pid();
    assert_eq!(outcome(parent), "ok");
    let child = child.recv_timeout(Duration::from_secs(10)).unwrap();
    // Waits for the child's close too.
    stop(scheduler);

    let seen = seen.lock();
    assert_lifetime(&seen, parent_pid, "ok", 1);
    let raw = child.into_raw().to_string();
    assert!(seen.named("process").all(|(_, s)| s.fields["pid"] != raw));
    assert!(seen.named("step").all(|(_, s)| s.fields["pid"] != raw));
    let ends: Vec<_> = seen
        .events_of("process ended")
        .filter(|e| e.fields["pid"] == raw)
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].fields["outcome"], "process was terminated");
    assert_eq!(ends[0].parent, None);
}

#[test]
fn two_schedulers_keep_their_process_spans_apart() {
    let (_one, seen) = capture();
    let (first, second) = (scheduler(1), scheduler(1));
    let (a, b) = (idler(&first), idler(&second));
    // Each scheduler's first process: the same PID, two lifetimes.
    assert_eq!(a.pid(), b.pid());
    let raw = a.pid().into_raw().to_string();
    first.terminate(a.pid()).unwrap();
    assert_eq!(outcome(a), "process was terminated");
    stop(first);
    {
        let seen = seen.lock();
        let lifetimes: Vec<_> = seen
            .named("process")
            .filter(|(_, s)| s.fields["pid"] == raw)
            .map(|(i, s)| (i, s.closed))
            .collect();
        assert_eq!(lifetimes.len(), 2, "one process span per scheduler");
        let open: Vec<usize> = lifetimes
            .iter()
            .filter(|(_, closed)| !closed)
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(open.len(), 1, "the second scheduler's process lives on");
        let first_steps = seen
            .named("step")
            .filter(|(_, s)| s.parent == Some(open[0]))
            .count();
        assert_eq!(first_steps, 1, "the live one has its own first step only");
    }
    force(second);
    assert_eq!(outcome(b), "process was closed by shutdown");
    let seen = seen.lock();
    assert!(seen.named("process").all(|(_, s)| s.closed));
    let outcomes: Vec<&str> = seen
        .named("process")
        .map(|(_, s)| s.fields["outcome"].as_str())
        .collect();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0], "process was terminated");
    assert_eq!(outcomes[1], "process was closed by shutdown");
}
