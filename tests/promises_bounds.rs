//! Input bounds (`docs/proof/promises.md`): every public method that takes
//! a `Duration`, a count or a capacity, at 0, at 1 and at its type's
//! maximum. Each value either works as the docs say or is refused with a
//! clear error; none may panic a worker, hang a join or a shutdown, or lose
//! what it was given.
//!
//! `Duration::MAX` timeouts (`recv_timeout`, `call`, `blocking_send_timeout`,
//! `shutdown`, `join_timeout`, `blocking_join_next_timeout`) wait as long as it
//! takes: a deadline computed as `Instant::now() + timeout` would overflow
//! and panic, so none is.
//!
//! ```text
//! cargo test --test promises_bounds
//! ```

mod common;
use common::{joined, wait_until, Held};

use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{Command, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::{CallError, JoinSet, ProcessInfo, Scheduler, SendError};

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
        Event::Timer { tag } => format!("timer {tag}"),
        other => format!("{other:?}"),
    }
}

/// Runs the `Do`s it is sent, logs every other event, and ends on a
/// cancel. Sets no status unless a `Do` does.
struct Script(Log);

impl Process for Script {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
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
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Do(f)) => f(out),
                Event::Cancel(_) => out.done(0),
                other => {
                    let seen = describe(&other);
                    self.0 .0.lock().unwrap().push((out.pid(), seen));
                }
            }
        }
        Ok(())
    }
}

fn info(s: &Scheduler<Script>, pid: Pid) -> Option<ProcessInfo> {
    s.processes().into_iter().find(|i| i.pid == pid)
}

/// Sends `pid` a note and waits until its step has logged it: every event
/// queued for it before has then been taken; then waits for a step after
/// that one.
fn barrier(s: &Scheduler<Script>, log: &Log, pid: Pid, n: u64) {
    s.send(pid, Msg::Note(n)).unwrap();
    let note = format!("note {n}");
    wait_until("the note", || log.of(pid).contains(&note));
    // And a later step: the one that took the note has then returned and
    // its effects (sends, signals, timers) are applied.
    let later = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&later);
    s.send(
        pid,
        op(move |_| flag.store(true, std::sync::atomic::Ordering::SeqCst)),
    )
    .unwrap();
    wait_until("a later step", || {
        later.load(std::sync::atomic::Ordering::SeqCst)
    });
}

/// Runs `f` on a thread of its own and waits at most 60 s for it: a
/// liveness guard, for calls that must return and might hang instead.
fn guarded<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::Result<T> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    rx.recv_timeout(common::ms(60_000))
        .unwrap_or_else(|_| panic!("{what} did not return"))
}

fn one_worker() -> (Arc<Scheduler<Script>>, Log) {
    let s = Scheduler::builder().workers(1).build().unwrap();
    (Arc::new(s), Log::default())
}

/// Ends `pid` (a script) and waits for it.
fn finish(s: &Scheduler<Script>, handle: stepsched::sched::JoinHandle<Script>) -> u64 {
    s.send(handle.pid(), op(|out| out.done(1))).unwrap();
    joined(handle).unwrap()
}

// ---- Timers: wake_after, yield_command_timeout, send_after ----

/// "Asks for an [`Event::Timer { tag }`] in a step at or after `after` from
/// now." (src/process/timer.rs:32), at zero: still through an event.
#[test]
fn wake_after_zero_fires_through_an_event() {
    let (s, log) = one_worker();
    let p = s.submit_joinable(Script(log.clone()), "run", ()).unwrap();
    let pid = p.pid();
    s.send(pid, op(|out| out.wake_after(1, Duration::ZERO)))
        .unwrap();
    wait_until("the timer", || log.of(pid) == ["timer 1"]);
    finish(&s, p);
    s.shutdown(Duration::from_secs(1));
}

/// At `Duration::MAX` the deadline saturates: the timer is pending, never
/// fires, and "When the process ends, its pending timers are cancelled"
/// (src/process/timer.rs:41), counted in `timers_cancelled` at shutdown
/// (src/sched/scheduler.rs:106).
#[test]
fn wake_after_max_never_fires_and_shutdown_cancels_it() {
    let (s, log) = one_worker();
    let p = s.submit(Script(log.clone()), "run", ()).unwrap();
    s.send(p, op(|out| out.wake_after(1, Duration::MAX)))
        .unwrap();
    barrier(&s, &log, p, 1);
    assert_eq!(info(&s, p).unwrap().timers, 1, "pending");
    let report = s.shutdown(Duration::from_secs(60));
    assert_eq!(log.of(p), ["note 1"], "never fired");
    assert_eq!(report.timers_cancelled, 1, "{report:?}");
}

/// "if the handler has not completed the command `timeout` from now, the
/// process gets `Completion { tag, result: Err(CommandError::TimedOut) }`
/// and the tag is done [...] so the process never sees two"
/// (src/process/timer.rs:104), at zero.
#[test]
fn a_command_timeout_of_zero_gives_one_completion() {
    let held = Held::<Script>::default();
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .handler("held", held.handler())
        .build()
        .unwrap();
    let p = s.submit_joinable(Script(log.clone()), "run", ()).unwrap();
    let pid = p.pid();
    s.send(
        pid,
        op(|out| out.yield_command_timeout(1, Cmd("held"), Duration::ZERO)),
    )
    .unwrap();
    wait_until("the timeout", || !log.of(pid).is_empty());
    held.wait_for("the command", 1);
    let _ = held.lock().pop().unwrap().succeed(5);
    barrier(&s, &log, pid, 1);
    assert_eq!(log.of(pid), ["completion 1 Err(TimedOut)", "note 1"]);
    finish(&s, p);
    s.shutdown(Duration::from_secs(1));
}

/// "A completion that comes first cancels the timeout."
/// (src/process/timer.rs:109), with a timeout of `Duration::MAX`.
#[test]
fn a_command_timeout_of_max_lets_the_completion_through() {
    let held = Held::<Script>::default();
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .handler("held", held.handler())
        .build()
        .unwrap();
    let p = s.submit_joinable(Script(log.clone()), "run", ()).unwrap();
    let pid = p.pid();
    s.send(
        pid,
        op(|out| out.yield_command_timeout(1, Cmd("held"), Duration::MAX)),
    )
    .unwrap();
    held.wait_for("the command", 1);
    held.lock().pop().unwrap().succeed(5).unwrap();
    wait_until("the completion", || !log.of(pid).is_empty());
    assert_eq!(log.of(pid), ["completion 1 Ok(5)"]);
    barrier(&s, &log, pid, 1);
    assert_eq!(info(&s, pid).unwrap().timers, 0, "the timeout went");
    finish(&s, p);
    s.shutdown(Duration::from_secs(1));
}

/// "Rebuilds a PID from [`Pid::into_raw`]. Any `u64` is accepted; a PID
/// that names no process is refused when it is used." (src/process/pid.rs:49)
#[test]
fn pids_from_any_raw_value_are_refused_when_they_name_no_process() {
    let (s, _) = one_worker();
    for raw in [0, 1, u64::from(u32::MAX), 1 << 32, u64::MAX] {
        let pid = Pid::from_raw(raw);
        match s.send(pid, Msg::Note(raw)) {
            Err(SendError::NoSuchProcess(Msg::Note(n)) | SendError::Finished(Msg::Note(n))) => {
                assert_eq!(n, raw, "the message handed back");
            }
            _ => panic!("{pid} was not refused"),
        }
        assert!(s.terminate(pid).is_err(), "terminate({pid})");
        // (Not <0.0>: `call`'s own receiver takes that slot of a fresh
        // scheduler, so the PID names it.)
        if raw != 0 {
            let call = s.blocking_call(pid, |_| Msg::Note(raw), Duration::from_secs(60));
            assert!(matches!(call, Err(CallError::Send(_))), "call({pid})");
        }
    }
    s.shutdown(Duration::from_secs(1));
}

/// "[`SendError`] hands the message back at once: no such process, it has
/// already finished, or the scheduler is shutting down."
/// (src/sched/timer/api.rs:43)
#[test]
fn send_after_to_a_pid_that_names_no_process_hands_the_message_back() {
    let (s, log) = one_worker();
    for (raw, delay) in [(0, Duration::ZERO), (u64::MAX, Duration::MAX)] {
        let refused = s.send_after(Pid::from_raw(raw), Msg::Note(raw), delay);
        assert!(matches!(
            refused,
            Err(SendError::NoSuchProcess(Msg::Note(n)) | SendError::Finished(Msg::Note(n))) if n == raw
        ));
    }
    let p = s.submit_joinable(Script(log), "run", ()).unwrap();
    let pid = p.pid();
    finish(&s, p);
    let refused = s.send_after(pid, Msg::Note(3), Duration::from_millis(1));
    assert!(matches!(refused, Err(SendError::Finished(Msg::Note(3)))));
    s.shutdown(Duration::from_secs(1));
    let refused = s.send_after(pid, Msg::Note(4), Duration::ZERO);
    assert!(matches!(
        refused,
        Err(SendError::ShuttingDown(Msg::Note(4)))
    ));
}

/// "delivered at or after the deadline as if by [`send`]"
/// (src/sched/timer/api.rs:30), at zero.
#[test]
fn send_after_zero_is_delivered() {
    let (s, log) = one_worker();
    let p = s.submit_joinable(Script(log.clone()), "run", ()).unwrap();
    let pid = p.pid();
    s.send_after(pid, Msg::Note(1), Duration::ZERO).unwrap();
    wait_until("the message", || log.of(pid) == ["note 1"]);
    finish(&s, p);
    s.shutdown(Duration::from_secs(1));
}

/// "[the message goes to `on_undelivered`] as does one still waiting when
/// the scheduler shuts down" (src/sched/timer/api.rs:32), for a message
/// due at `Duration::MAX`.
#[test]
fn send_after_max_goes_to_on_undelivered_at_shutdown() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let hook = Arc::clone(&undelivered);
    let log = Log::default();
    let s = Scheduler::builder()
        .workers(1)
        .on_undelivered(move |pid, event| hook.lock().unwrap().push((pid, describe(&event))))
        .build()
        .unwrap();
    let p = s.submit(Script(log.clone()), "run", ()).unwrap();
    s.send_after(p, Msg::Note(2), Duration::MAX).unwrap();
    let report = s.shutdown(Duration::from_secs(60));
    assert_eq!(report.timers_cancelled, 1, "{report:?}");
    assert!(log.of(p).is_empty(), "never delivered");
    assert_eq!(*undelivered.lock().unwrap(), [(p, "note 2".to_owned())]);
}

// ---- Outside timeouts: recv_timeout, blocking_send_timeout, call ----

/// "As [`recv`], waiting at most `timeout`. [`RecvTimeoutError::Timeout`] if
/// nothing came in time" (src/sched/outside/receiver.rs:199), at zero: it does not
/// wait, and takes a message once one is forwarded.
#[test]
fn recv_timeout_zero_takes_what_was_forwarded_or_times_out() {
    let (s, _) = one_worker();
    let inbox = s.mailbox().unwrap();
    assert_eq!(
        inbox.recv_timeout(Duration::ZERO).map(|_| ()),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    s.send(inbox.pid(), Msg::Note(1)).unwrap();
    let mut got = None;
    wait_until("the message", || match inbox.recv_timeout(Duration::ZERO) {
        Ok(Msg::Note(n)) => {
            got = Some(n);
            true
        }
        Ok(Msg::Do(_)) => panic!("not sent"),
        Err(_) => false,
    });
    assert_eq!(got, Some(1));
    drop(inbox);
    s.shutdown(Duration::from_secs(1));
}

/// `recv_timeout(Duration::MAX)` waits as `recv` does (no deadline
/// overflows).
#[test]
fn recv_timeout_max_waits_for_the_message() {
    let (s, _) = one_worker();
    let inbox = s.mailbox().unwrap();
    s.send(inbox.pid(), Msg::Note(1)).unwrap();
    let got = guarded("recv_timeout(MAX)", move || {
        matches!(inbox.recv_timeout(Duration::MAX), Ok(Msg::Note(1)))
    });
    assert!(got.unwrap());
    s.shutdown(Duration::from_secs(1));
}

/// A process whose mailbox of capacity 1 is full: it waits for a
/// completion that never comes, so its one message stays queued.
fn a_full_mailbox(s: &Scheduler<Script>, log: &Log) -> Pid {
    let p = s
        .submit_with(
            Script(log.clone()),
            "run",
            (),
            stepsched::process::SpawnOptions::new().mailbox_capacity(1),
        )
        .unwrap();
    s.send(p, op(|out| out.set_status(Status::Wait))).unwrap();
    wait_until("it to wait", || {
        info(s, p)
            .is_some_and(|i| i.steps >= 1 && i.state == stepsched::process::Lifecycle::Blocked)
    });
    s.send(p, Msg::Note(1)).unwrap();
    p
}

/// "[`SendError::Full`] if there was no room within `timeout`" with "the
/// message handed back" (src/sched/outside/receiver.rs:341), at zero.
#[test]
fn send_timeout_zero_on_a_full_mailbox_hands_the_message_back() {
    let (s, log) = one_worker();
    let p = a_full_mailbox(&s, &log);
    let refused = s.blocking_send_timeout(p, Msg::Note(2), Duration::ZERO);
    assert!(matches!(refused, Err(SendError::Full(Msg::Note(2)))));
    s.shutdown(Duration::from_secs(1));
}

/// `blocking_send_timeout(Duration::MAX)` waits for room as long as it takes
/// (no deadline overflows): here the process is terminated, which frees its
/// mailbox,
/// and the sender learns of the end.
#[test]
fn send_timeout_max_waits_for_room() {
    let (s, log) = one_worker();
    let p = a_full_mailbox(&s, &log);
    let sender = Arc::clone(&s);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let sent = sender.blocking_send_timeout(p, Msg::Note(2), Duration::MAX);
        let _ = tx.send(matches!(
            sent,
            Ok(()) | Err(SendError::Finished(Msg::Note(2)))
        ));
    });
    // Whether the sender waits by now or not, it must learn of the end.
    thread::sleep(Duration::from_millis(10));
    s.terminate(p).unwrap();
    let sent = rx.recv_timeout(common::ms(60_000));
    assert_eq!(sent, Ok(true), "blocking_send_timeout(MAX) did not return");
    s.shutdown(Duration::from_secs(1));
}

/// "[`CallError::TimedOut`]: No reply came within the timeout."
/// (src/sched/outside/receiver.rs:301), at zero, from a server that never replies.
#[test]
fn call_zero_times_out() {
    let (s, log) = one_worker();
    let server = s.submit(Script(log), "run", ()).unwrap();
    let call = s.blocking_call(server, |_| Msg::Note(1), Duration::ZERO);
    assert!(matches!(call, Err(CallError::TimedOut)));
    s.shutdown(Duration::from_secs(1));
}

/// `call(.., Duration::MAX)` waits for the reply (no deadline overflows).
#[test]
fn call_max_waits_for_the_reply() {
    let (s, log) = one_worker();
    let server = s.submit(Script(log), "run", ()).unwrap();
    let caller = Arc::clone(&s);
    let reply = guarded("call(MAX)", move || {
        let request = |me: Pid| op(move |out| out.send(me, Msg::Note(7)));
        matches!(
            caller.blocking_call(server, request, Duration::MAX),
            Ok(Msg::Note(7))
        )
    });
    assert!(reply.unwrap());
    s.shutdown(Duration::from_secs(1));
}

// ---- Joins and shutdown ----

/// "Blocks for at most `timeout`; gives the handle back if the process is
/// still running then." (src/sched/outside/join.rs:175) and "`None` if the set is
/// empty or no process ended in time" (src/sched/outside/join.rs:390), at zero.
#[test]
fn join_timeouts_of_zero_hand_back_or_return_at_once() {
    let (s, log) = one_worker();
    let p = s.submit_joinable(Script(log.clone()), "run", ()).unwrap();
    let p = p.join_timeout(Duration::ZERO).expect_err("still running");
    let mut set = JoinSet::new();
    let q = s.submit_into(&mut set, Script(log), "run", ()).unwrap();
    assert!(set.blocking_join_next_timeout(Duration::ZERO).is_none());
    assert!(!set.is_empty(), "not taken: it is still running");
    s.send(p.pid(), op(|out| out.done(1))).unwrap();
    s.send(q, op(|out| out.done(2))).unwrap();
    wait_until("both to end", || s.live() == 0);
    assert_eq!(
        p.join_timeout(Duration::ZERO).ok().map(Result::unwrap),
        Some(1)
    );
    let (pid, outcome) = set
        .blocking_join_next_timeout(Duration::ZERO)
        .expect("it ended");
    assert_eq!((pid, outcome.unwrap()), (q, 2));
    assert!(set.blocking_join_next_timeout(Duration::ZERO).is_none());
    s.shutdown(Duration::from_secs(1));
}

/// `join_timeout(Duration::MAX)` waits for the end (no deadline
/// overflows).
#[test]
fn join_timeout_max_waits_for_the_end() {
    let (s, log) = one_worker();
    let p = s.submit_joinable(Script(log), "run", ()).unwrap();
    s.send(p.pid(), op(|out| out.done(1))).unwrap();
    let outcome = guarded("join_timeout(MAX)", move || {
        p.join_timeout(Duration::MAX).ok().map(Result::unwrap)
    });
    assert_eq!(outcome.unwrap(), Some(1));
    s.shutdown(Duration::from_secs(1));
}

/// `blocking_join_next_timeout(Duration::MAX)` waits for the end (no deadline
/// overflows).
#[test]
fn join_next_timeout_max_waits_for_the_end() {
    let (s, log) = one_worker();
    let mut set = JoinSet::new();
    let q = s.submit_into(&mut set, Script(log), "run", ()).unwrap();
    s.send(q, op(|out| out.done(2))).unwrap();
    let next = guarded("blocking_join_next_timeout(MAX)", move || {
        set.blocking_join_next_timeout(Duration::MAX)
            .map(|(pid, o)| (pid, o.unwrap()))
    });
    assert_eq!(next.unwrap(), Some((q, 2)));
    s.shutdown(Duration::from_secs(1));
}

/// `shutdown(Duration::MAX)` "returns soon after the last process has
/// ended, not at the timeout" (`Scheduler::shutdown`; no deadline
/// overflows).
#[test]
fn shutdown_max_returns_once_every_process_ended() {
    let (s, log) = one_worker();
    s.submit(Script(log), "run", ()).unwrap();
    let report = guarded("shutdown(MAX)", move || s.shutdown(Duration::MAX)).unwrap();
    assert_eq!((report.completed, report.forced), (1, 0), "{report:?}");
}
