//! Promises of the public docs that had no test (`docs/proof/promises.md`):
//! each test is named for the sentence it holds, quoted above it with
//! where it is said.
//!
//! The processes here are scripts: a test sends a [`Script`] closures
//! (`Msg::Do`) that its next step runs on its `StepOutput`, and reads what
//! else its steps saw from a shared log.
//!
//! ```text
//! cargo test --test promises_kept
//! ```

mod common;
use common::{joined, wait_until, Held};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::Lifecycle;
use stepsched::process::{Command, Event, Pid, Process, ProcessError, Status, StepOutput};
use stepsched::sched::{CallError, JoinSet, ProcessInfo, Scheduler};

/// Something a step runs on its output.
type Op = Box<dyn FnOnce(&mut StepOutput<'_, Script>) + Send>;

enum Msg {
    /// Run this in the step that takes the message.
    Do(Op),
    /// A number, logged by the step that takes it.
    Note(u64),
}

fn op(f: impl FnOnce(&mut StepOutput<'_, Script>) + Send + 'static) -> Msg {
    Msg::Do(Box::new(f))
}

/// A command for the handler of kind `.0`.
struct Cmd(&'static str);

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        self.0
    }
}

/// A script's output: a number, and a count of its drops if asked.
#[derive(Debug)]
struct Token(u64, Option<Arc<AtomicUsize>>);

impl Drop for Token {
    fn drop(&mut self) {
        if let Some(drops) = &self.1 {
            drops.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// What the steps of the scripts saw, besides their `Do`s.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(Pid, String)>>>);

impl Log {
    fn of(&self, pid: Pid) -> Vec<String> {
        let log = self.0.lock().unwrap();
        (log.iter().filter(|(p, _)| *p == pid))
            .map(|(_, s)| s.clone())
            .collect()
    }
}

fn describe(event: &Event<Script>) -> String {
    match event {
        Event::Completion { tag, result } => format!("completion {tag} {result:?}"),
        Event::Message(Msg::Note(n)) => format!("note {n}"),
        Event::Message(Msg::Do(_)) => "do".to_owned(),
        Event::Cancel(why) => format!("cancel {why:?}"),
        Event::Down { pid, reason } => format!("down {pid} {reason:?}"),
        Event::Timer { tag } => format!("timer {tag}"),
        other => format!("{other:?}"),
    }
}

/// Runs the `Do`s it is sent and logs every other event. Sets no status
/// unless a `Do` does (the default: `Idle`, or `Wait` after a yield). Ends
/// on a cancel, unless `leave` is set: then every step leaves all its
/// events in the vector and continues.
struct Script {
    log: Log,
    leave: Arc<std::sync::atomic::AtomicBool>,
}

impl Script {
    fn new(log: &Log) -> Self {
        Script {
            log: log.clone(),
            leave: Arc::default(),
        }
    }
}

impl Process for Script {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = Token;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if self.leave.load(Ordering::SeqCst) {
            out.set_status(Status::Continue);
            return Ok(());
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Do(f)) => f(out),
                Event::Cancel(_) => out.done(Token(0, None)),
                other => {
                    let seen = describe(&other);
                    self.log.0.lock().unwrap().push((out.pid(), seen));
                }
            }
        }
        Ok(())
    }
}

fn info(s: &Scheduler<Script>, pid: Pid) -> Option<ProcessInfo> {
    s.processes().into_iter().find(|i| i.pid == pid)
}

/// Waits until `pid` has taken `steps` steps and is back waiting; returns
/// the state it waits in.
fn settled(s: &Scheduler<Script>, pid: Pid, steps: u64) -> Lifecycle {
    let mut state = Lifecycle::Running;
    wait_until("the process to settle", || {
        let i = info(s, pid).unwrap_or_else(|| panic!("{pid} ended"));
        state = i.state;
        i.steps >= steps && matches!(i.state, Lifecycle::Idle | Lifecycle::Blocked)
    });
    state
}

/// "If a step sets no status, it is [`Status::Wait`] when the step yielded
/// commands and [`Status::Idle`] otherwise." (src/process/output.rs:134)
#[test]
fn a_step_without_a_status_waits_if_it_yielded_and_idles_otherwise() {
    let held = Held::<Script>::default();
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .handler("held", held.handler())
        .build()
        .unwrap();
    let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    assert_eq!(settled(&s, p.pid(), 1), Lifecycle::Idle, "no yield: Idle");
    s.send(p.pid(), op(|out| out.yield_command(1, Cmd("held"))))
        .unwrap();
    assert_eq!(settled(&s, p.pid(), 2), Lifecycle::Blocked, "a yield: Wait");
    held.wait_for("the command", 1);
    held.lock().pop().unwrap().succeed(5).unwrap();
    let pid = p.pid();
    s.send(pid, op(|out| out.done(Token(1, None)))).unwrap();
    assert_eq!(joined(p).unwrap().0, 1);
    assert_eq!(log.of(pid), ["completion 1 Ok(5)"]);
    s.shutdown(Duration::from_secs(1));
}

/// "Sets the status (the last call wins)." (src/process/output.rs:277)
#[test]
fn the_last_set_status_of_a_step_wins() {
    let log = Log::default();
    let s = Scheduler::builder().workers(1).build().unwrap();
    let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    settled(&s, p.pid(), 1);
    s.send(
        p.pid(),
        op(|out| {
            out.done(Token(1, None));
            out.set_status(Status::Idle);
        }),
    )
    .unwrap();
    assert_eq!(settled(&s, p.pid(), 2), Lifecycle::Idle, "Idle came last");
    s.send(
        p.pid(),
        op(|out| {
            out.set_status(Status::Idle);
            out.done(Token(2, None));
        }),
    )
    .unwrap();
    assert_eq!(joined(p).unwrap().0, 2, "Done(2) came last");
    s.shutdown(Duration::from_secs(1));
}

/// Sends `pid` a note and waits until its step has logged it: every event
/// queued for it before, signals included, has then been taken; then waits
/// for a step after that one.
fn barrier(s: &Scheduler<Script>, log: &Log, pid: Pid, n: u64) {
    s.send(pid, Msg::Note(n)).unwrap();
    let note = format!("note {n}");
    wait_until("the note", || log.of(pid).contains(&note));
    // And a later step: the one that took the note has then returned and
    // its effects (sends, signals, timers) are applied.
    let later = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&later);
    s.send(pid, op(move |_| flag.store(true, Ordering::SeqCst)))
        .unwrap();
    wait_until("a later step", || later.load(Ordering::SeqCst));
}

/// "Unlike Erlang, a process holds at most one monitor per target:
/// monitoring a PID it already monitors does nothing (one `Down`), and
/// monitoring itself does nothing." (src/process/output.rs:330)
#[test]
fn a_second_monitor_of_a_target_gives_one_down_and_a_monitor_of_itself_none() {
    let log = Log::default();
    let s = Scheduler::builder().workers(2).build().unwrap();
    let t = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let w = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let (tp, wp) = (t.pid(), w.pid());
    s.send(
        wp,
        op(move |out| {
            out.monitor(tp);
            out.monitor(wp);
        }),
    )
    .unwrap();
    // A later step monitors both again.
    s.send(
        wp,
        op(move |out| {
            out.monitor(tp);
            out.monitor(wp);
        }),
    )
    .unwrap();
    barrier(&s, &log, wp, 1);
    barrier(&s, &log, tp, 2);
    let (ti, wi) = (info(&s, tp).unwrap(), info(&s, wp).unwrap());
    assert_eq!((ti.monitored_by, ti.monitors), (1, 0), "t is watched once");
    assert_eq!((wi.monitors, wi.monitored_by), (1, 0), "w watches t alone");
    s.send(tp, op(|out| out.done(Token(0, None)))).unwrap();
    assert_eq!(joined(t).unwrap().0, 0);
    let down = format!("down {tp} Done");
    wait_until("the down", || log.of(wp).contains(&down));
    barrier(&s, &log, wp, 3);
    assert_eq!(log.of(wp), ["note 1", down.as_str(), "note 3"]);
    s.send(wp, op(|out| out.done(Token(1, None)))).unwrap();
    assert_eq!(joined(w).unwrap().0, 1);
    s.shutdown(Duration::from_secs(1));
}

/// "Linking an already-linked PID, or itself, does nothing."
/// (src/process/output.rs:395)
#[test]
fn a_link_to_itself_or_a_second_link_does_nothing() {
    let log = Log::default();
    let undelivered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&undelivered);
    let s = Scheduler::builder()
        .workers(2)
        .on_undelivered(move |_, _| {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let t = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let w = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let (tp, wp) = (t.pid(), w.pid());
    for _ in 0..2 {
        s.send(
            wp,
            op(move |out| {
                out.trap_exits(true);
                out.link(tp);
                out.link(wp);
            }),
        )
        .unwrap();
    }
    barrier(&s, &log, wp, 1);
    barrier(&s, &log, tp, 2);
    let (ti, wi) = (info(&s, tp).unwrap(), info(&s, wp).unwrap());
    assert_eq!(ti.links, 1, "t is linked once");
    assert_eq!(wi.links, 1, "w is linked to t alone");
    // t ends: w traps exits, so it is told, once, and goes on.
    s.send(tp, op(|out| out.set_status(Status::Done(Token(9, None)))))
        .unwrap();
    assert_eq!(joined(t).unwrap().0, 9);
    let down = format!("down {tp} Done");
    wait_until("the down", || log.of(wp).contains(&down));
    barrier(&s, &log, wp, 3);
    assert_eq!(log.of(wp), ["note 1", down.as_str(), "note 3"]);
    // w's own abnormal end has no link to itself to follow.
    s.terminate(wp).unwrap();
    assert!(matches!(joined(w), Err(ProcessError::Terminated)));
    s.shutdown(Duration::from_secs(1));
    assert_eq!(undelivered.load(Ordering::SeqCst), 0, "nothing to w itself");
}

/// What `on_undelivered` was given, described.
#[derive(Clone, Default)]
struct Undelivered(Arc<Mutex<Vec<(Pid, String)>>>);

impl Undelivered {
    fn hook(&self) -> impl Fn(Pid, Event<Script>) + Send + Sync + 'static {
        let seen = Arc::clone(&self.0);
        move |pid, event| seen.lock().unwrap().push((pid, describe(&event)))
    }

    fn all(&self) -> Vec<(Pid, String)> {
        self.0.lock().unwrap().clone()
    }
}

/// "A completion the handler makes later is refused as stale (counted in
/// `Stats::unknown_tags` and reported to `on_undelivered`)."
/// (src/process/event.rs:118)
#[test]
fn a_completion_after_its_timeout_is_reported_to_on_undelivered() {
    let held = Held::<Script>::default();
    let log = Log::default();
    let undelivered = Undelivered::default();
    let s = Scheduler::builder()
        .workers(1)
        .handler("held", held.handler())
        .on_undelivered(undelivered.hook())
        .build()
        .unwrap();
    let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let pid = p.pid();
    s.send(
        pid,
        op(|out| out.yield_command_timeout(7, Cmd("held"), Duration::from_millis(1))),
    )
    .unwrap();
    wait_until("the timeout", || !log.of(pid).is_empty());
    assert_eq!(log.of(pid), ["completion 7 Err(TimedOut)"]);
    // The process lives on, so the late completion is accepted, then
    // found stale by the worker.
    held.wait_for("the command", 1);
    held.lock().pop().unwrap().succeed(5).unwrap();
    wait_until("the report", || !undelivered.all().is_empty());
    assert_eq!(undelivered.all(), [(pid, "completion 7 Ok(5)".to_owned())]);
    assert_eq!(s.stats().unknown_tags, 1);
    barrier(&s, &log, pid, 1);
    assert_eq!(
        log.of(pid),
        ["completion 7 Err(TimedOut)", "note 1"],
        "never two"
    );
    s.send(pid, op(|out| out.done(Token(0, None)))).unwrap();
    joined(p).unwrap();
    s.shutdown(Duration::from_secs(1));
}

/// "[`SpawnRefused`] if the scheduler is shutting down or at its process
/// limit (a receiver takes a process slot)." (src/sched/outside/receiver.rs:383);
/// "No receiver could be made for the reply (the scheduler is shutting
/// down or at its process limit)." (src/sched/outside/receiver.rs:296); "A receiver
/// occupies a process slot (it counts in [`Scheduler::live`],
/// [`Scheduler::processes`] and `max_processes`)." (src/sched/outside/receiver.rs:109)
#[test]
fn mailbox_and_call_at_the_process_limit_are_refused() {
    use stepsched::process::SpawnError;
    use stepsched::sched::SpawnRefused;
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .max_processes(1)
        .build()
        .unwrap();
    let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    assert!(matches!(s.mailbox(), Err(SpawnRefused::AtCapacity)));
    let call = s.blocking_call(p.pid(), |_| Msg::Note(1), Duration::from_secs(60));
    assert!(matches!(
        call,
        Err(CallError::Refused(SpawnRefused::AtCapacity))
    ));
    assert_eq!(s.live(), 1);
    s.send(p.pid(), op(|out| out.done(Token(0, None)))).unwrap();
    joined(p).unwrap();
    wait_until("the slot to be free", || s.live() == 0);
    // The receiver now takes the one place.
    let inbox = s.mailbox().unwrap();
    assert_eq!(s.live(), 1);
    assert!(s.processes().iter().any(|i| i.pid == inbox.pid()));
    let refused = s.submit(Script::new(&log), "run", ());
    assert!(matches!(refused, Err(SpawnError::AtCapacity(_))));
    drop(inbox);
    s.shutdown(Duration::from_secs(1));
    assert!(matches!(s.mailbox(), Err(SpawnRefused::ShuttingDown)));
}

/// "As [`submit`](Scheduler::submit); a refused process is not added."
/// (src/sched/scheduler.rs:228)
#[test]
fn a_process_refused_by_submit_into_is_not_added_to_the_set() {
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .max_processes(1)
        .build()
        .unwrap();
    let mut set = JoinSet::new();
    let first = s
        .submit_into(&mut set, Script::new(&log), "run", ())
        .unwrap();
    assert!(s
        .submit_into(&mut set, Script::new(&log), "run", ())
        .is_err());
    assert_eq!(set.len(), 1, "only the process that runs");
    s.send(first, op(|out| out.done(Token(3, None)))).unwrap();
    let (pid, outcome) = set.blocking_join_next_timeout(common::ms(60_000)).unwrap();
    assert_eq!((pid, outcome.unwrap().0), (first, 3));
    assert!(set.is_empty(), "nothing more to wait for");
    assert!(set.blocking_join_next_timeout(common::ms(60_000)).is_none());
    s.shutdown(Duration::from_secs(1));
}

/// "A later registration for the same kind, of either sort, replaces this
/// one." (src/sched/builder/mod.rs:197)
#[test]
fn a_later_handler_for_a_kind_replaces_the_earlier_of_either_sort() {
    let answer =
        |n: u64| move |_: Cmd, done: stepsched::sched::Completer<Script>| drop(done.succeed(n));
    let builders = [
        // plain, then blocking: the blocking one answers
        (
            Scheduler::builder()
                .handler("k", answer(1))
                .blocking_handler("k", answer(2)),
            2,
        ),
        // blocking, then plain: the plain one answers
        (
            Scheduler::builder()
                .blocking_handler("k", answer(1))
                .handler("k", answer(3)),
            3,
        ),
        // plain, then plain
        (
            Scheduler::builder()
                .handler("k", answer(1))
                .handler("k", answer(4)),
            4,
        ),
    ];
    for (builder, expected) in builders {
        let log = Log::default();
        let s = builder.workers(1).build().unwrap();
        let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
        let pid = p.pid();
        s.send(pid, op(|out| out.yield_command(1, Cmd("k"))))
            .unwrap();
        wait_until("the completion", || !log.of(pid).is_empty());
        assert_eq!(log.of(pid), [format!("completion 1 Ok({expected})")]);
        s.send(pid, op(|out| out.done(Token(0, None)))).unwrap();
        joined(p).unwrap();
        s.shutdown(Duration::from_secs(1));
    }
}

/// "The scheduler's own `Event::Cancel`s (a shutdown's or a terminate's,
/// meant for the process alone) are not reported" (src/sched/builder/mod.rs:330),
/// while "Events left when the process ends go to
/// [`Builder::on_undelivered`]" (src/process/mod.rs:149).
#[test]
fn the_schedulers_own_cancel_is_not_reported_undelivered() {
    let log = Log::default();
    let undelivered = Undelivered::default();
    let s = Scheduler::builder()
        .workers(1)
        .on_undelivered(undelivered.hook())
        .build()
        .unwrap();
    let script = Script::new(&log);
    let leave = Arc::clone(&script.leave);
    let p = s.submit_joinable(script, "run", ()).unwrap();
    let pid = p.pid();
    // From now on every step leaves its events and continues.
    leave.store(true, Ordering::SeqCst);
    s.send(pid, Msg::Note(1)).unwrap();
    s.terminate(pid).unwrap();
    assert!(matches!(joined(p), Err(ProcessError::Terminated)));
    // The terminate's cancel was left too, and is not reported.
    wait_until("the note's report", || !undelivered.all().is_empty());
    s.shutdown(Duration::from_secs(1));
    assert_eq!(undelivered.all(), [(pid, "note 1".to_owned())]);
}

/// "`on_complete` is not called for receivers." (src/sched/outside/receiver.rs:117)
#[test]
fn on_complete_is_not_called_for_a_receiver() {
    let completed = Arc::new(Mutex::new(Vec::new()));
    let hook = Arc::clone(&completed);
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .on_complete(move |pid, _| hook.lock().unwrap().push(pid))
        .build()
        .unwrap();
    let dropped = s.mailbox().unwrap();
    drop(dropped);
    let kept = s.mailbox().unwrap();
    let p = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let pid = p.pid();
    s.send(pid, op(|out| out.done(Token(0, None)))).unwrap();
    joined(p).unwrap();
    wait_until("the dropped receiver to end", || s.live() == 1);
    s.shutdown(Duration::from_secs(1));
    assert!(kept.recv().is_err(), "closed by the shutdown");
    assert_eq!(*completed.lock().unwrap(), [pid], "the process alone");
}

/// "The scheduler shut down before a reply came." (src/sched/outside/receiver.rs:304)
#[test]
fn a_call_waiting_when_the_scheduler_shuts_down_is_told_so() {
    let log = Log::default();
    let s = Scheduler::builder().workers(1).build().unwrap();
    // A server that never replies: it logs the request and ends on the
    // shutdown's cancel.
    let server = s.submit(Script::new(&log), "run", ()).unwrap();
    thread::scope(|scope| {
        let call = scope.spawn(|| s.blocking_call(server, |_| Msg::Note(1), common::ms(60_000)));
        wait_until("the request", || log.of(server) == ["note 1"]);
        s.shutdown(common::ms(60_000));
        assert!(matches!(call.join().unwrap(), Err(CallError::ShutDown)));
    });
}

/// "Processes closed by force after the timeout: their outcome is
/// [`ProcessError::Shutdown`]" (src/sched/scheduler.rs:88), and "Whether
/// the timeout passed with processes still live" (src/sched/scheduler.rs:94):
/// a shutdown whose processes all end on its cancel, long before the
/// timeout, forces none of them. A receiver, which shutdown ends at once
/// ("Shutdown ends every receiver", src/sched/outside/receiver.rs:116), is counted
/// in `forced` all the same.
#[test]
fn a_receiver_ended_by_the_shutdown_is_not_counted_as_forced() {
    let s = Scheduler::<Script>::builder().workers(1).build().unwrap();
    let inbox = s.mailbox().unwrap();
    let report = s.shutdown(common::ms(60_000));
    assert!(!report.timed_out, "{report:?}");
    assert_eq!(report.forced, 0, "{report:?}");
    assert!(inbox.recv().is_err());
}

/// "Removes the link with `pid`, if any, on both sides: no exit from it
/// reaches this process after this step." (src/process/output.rs:401)
#[test]
fn an_unlinked_process_outlives_the_abnormal_end_of_its_former_link() {
    let log = Log::default();
    let s = Scheduler::builder().workers(2).build().unwrap();
    let t = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let w = s.submit_joinable(Script::new(&log), "run", ()).unwrap();
    let (tp, wp) = (t.pid(), w.pid());
    s.send(wp, op(move |out| out.link(tp))).unwrap();
    barrier(&s, &log, wp, 1);
    barrier(&s, &log, tp, 2);
    assert_eq!(info(&s, tp).unwrap().links, 1, "linked");
    s.send(wp, op(move |out| out.unlink(tp))).unwrap();
    barrier(&s, &log, wp, 3);
    barrier(&s, &log, tp, 4);
    assert_eq!(info(&s, tp).unwrap().links, 0, "unlinked on both sides");
    s.terminate(tp).unwrap();
    assert!(matches!(joined(t), Err(ProcessError::Terminated)));
    barrier(&s, &log, wp, 5);
    assert_eq!(
        log.of(wp),
        ["note 1", "note 3", "note 5"],
        "no exit, no Down"
    );
    s.send(wp, op(|out| out.done(Token(5, None)))).unwrap();
    assert_eq!(joined(w).unwrap().0, 5, "w lived on");
    s.shutdown(Duration::from_secs(1));
}
