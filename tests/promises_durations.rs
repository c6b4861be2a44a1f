//! Durations at zero and at `Duration::MAX` (`docs/proof/promises.md`):
//! every call that takes a delay or a timeout gives both a defined,
//! documented meaning, never a panic, an overflow or a hang: zero acts at
//! once (a timer at the wheel's next tick, a timeout after one look), and
//! a duration too large for the clock saturates (a timer that never fires,
//! a wait as long as the untimed call's).
//!
//! ```text
//! cargo test --test promises_durations
//! ```

mod common;
use common::joined;

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use std::sync::mpsc::RecvTimeoutError;
use stepsched::process::{Command, CommandError, Event, Process, Status, StepOutput};

use stepsched::process::Pid;
use stepsched::sched::{Scheduler, SendError};

/// A command for the handler of kind `.0`.
struct Cmd(&'static str);

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        self.0
    }
}

/// What a `Timed` does in its first step.
#[derive(Clone, Copy)]
enum Plan {
    /// `wake_after(1, d)`, then ends with "timer" at its event, or with
    /// the text of the first message.
    Wake(Duration),
    /// `yield_command_timeout(1, Cmd(kind), d)`, then ends with what the
    /// completion said.
    Ask(&'static str, Duration),
    /// Waits for a message and ends with it (a cancel ends it too).
    Wait,
}

struct Timed(Option<Plan>);

impl Process for Timed {
    type Input = ();
    type Message = &'static str;
    type Command = Cmd;
    type Reply = ();
    type Output = String;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        match self.0.take() {
            Some(Plan::Wake(after)) => out.wake_after(1, after),
            Some(Plan::Ask(kind, timeout)) => {
                out.yield_command_timeout(1, Cmd(kind), timeout);
                out.set_status(Status::Wait);
                return Ok(());
            }
            Some(Plan::Wait) | None => {}
        }
        // A cancel first: a process waiting on a command may hold messages.
        if events.iter().any(|e| matches!(e, Event::Cancel(_))) {
            out.done("cancelled".to_owned());
            return Ok(());
        }
        // The first event decides how it ends.
        if let Some(event) = events.drain(..).next() {
            let said = match event {
                Event::Timer { .. } => "timer".to_owned(),
                Event::Message(text) => text.to_owned(),
                Event::Completion { result: Ok(()), .. } => "completed".to_owned(),
                Event::Completion {
                    result: Err(CommandError::TimedOut),
                    ..
                } => "timed out".to_owned(),
                other => format!("unexpected {other:?}"),
            };
            out.done(said);
            return Ok(());
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// Waits until `pid` has run its first step.
fn stepped(s: &Scheduler<Timed>, pid: Pid) {
    common::wait_until("its first step", || {
        s.processes().iter().any(|p| p.pid == pid && p.steps >= 1)
    });
}

fn scheduler() -> Scheduler<Timed> {
    Scheduler::builder()
        .workers(1)
        .handler("now", |_: Cmd, done| drop(done.succeed(())))
        .handler("never", |_: Cmd, done| std::mem::forget(done))
        .build()
        .unwrap()
}

/// `wake_after`: "`Duration::ZERO` fires at the next tick of the worker's
/// wheel, still through an event; a deadline too far for the clock
/// (`Duration::MAX`) saturates and never fires" (src/process/timer.rs).
#[test]
fn a_timer_of_zero_fires_and_one_of_max_never_does() {
    let s = scheduler();
    let zero = s
        .submit_joinable(Timed(Some(Plan::Wake(Duration::ZERO))), "", ())
        .unwrap();
    assert_eq!(joined(zero).as_deref(), Ok("timer"));
    let max = s
        .submit_joinable(Timed(Some(Plan::Wake(Duration::MAX))), "", ())
        .unwrap();
    // Its first step armed the timer; a message then ends it, which it
    // would not if the timer had fired first.
    stepped(&s, max.pid());
    std::thread::sleep(common::ms(20)); // more ticks of the wheel
    s.send(max.pid(), "message").unwrap();
    assert_eq!(joined(max).as_deref(), Ok("message"));
    assert_eq!(s.stats().timers.fired, 1, "only the zero timer fired");
    assert_eq!(s.shutdown(Duration::from_secs(60)).forced, 0);
}

/// `yield_command_timeout`: "`Duration::ZERO` times the command out at the
/// wheel's next tick unless its handler completed it first [...];
/// `Duration::MAX` never times it out" (src/process/timer.rs).
#[test]
fn a_command_timeout_of_zero_or_max_keeps_its_meaning() {
    let s = scheduler();
    let ask = |kind, timeout| {
        let h = s
            .submit_joinable(Timed(Some(Plan::Ask(kind, timeout))), "", ())
            .unwrap();
        joined(h).unwrap()
    };
    assert_eq!(ask("now", Duration::ZERO), "completed");
    assert_eq!(ask("never", Duration::ZERO), "timed out");
    assert_eq!(ask("now", Duration::MAX), "completed");
    let waiting = s
        .submit_joinable(Timed(Some(Plan::Ask("never", Duration::MAX))), "", ())
        .unwrap();
    let waiting = waiting.join_timeout(common::ms(50)).unwrap_err();
    assert!(!waiting.is_finished(), "a MAX timeout never fires");
    let report = s.shutdown(Duration::from_secs(60));
    assert_eq!(report.completed, 1, "{report:?}");
    assert_eq!(joined(waiting).as_deref(), Ok("cancelled"));
}

/// `send_after`: "`Duration::ZERO` delivers at the wheel's next tick; a
/// delay too far for the clock (`Duration::MAX`) saturates and never
/// fires, and the message waits for the shutdown that hands it to
/// `on_undelivered`" (src/sched/timer/api.rs).
#[test]
fn a_message_sent_after_zero_arrives_and_after_max_goes_to_on_undelivered_at_shutdown() {
    let (tx, undelivered) = mpsc::channel();
    let tx = Mutex::new(tx);
    let s = Scheduler::builder()
        .workers(1)
        .on_undelivered(move |_, event| {
            if let Event::Message(text) = event {
                let _ = tx.lock().unwrap().send(text);
            }
        })
        .build()
        .unwrap();
    let soon = s.submit_joinable(Timed(Some(Plan::Wait)), "", ()).unwrap();
    s.send_after(soon.pid(), "soon", Duration::ZERO).unwrap();
    assert_eq!(joined(soon).as_deref(), Ok("soon"));
    let never = s.submit(Timed(Some(Plan::Wait)), "", ()).unwrap();
    s.send_after(never, "never", Duration::MAX).unwrap();
    let report = s.shutdown(Duration::from_secs(60));
    assert_eq!(report.timers_cancelled, 1, "{report:?}");
    assert_eq!(undelivered.try_recv(), Ok("never"));
}

/// The outside timeouts at zero ("looks once without waiting", "tries
/// once") and at `Duration::MAX` ("waits as [the untimed call] does"):
/// `join_timeout`, `blocking_join_next_timeout`, `recv_timeout`, `blocking_send_timeout`
/// and `shutdown`.
#[test]
fn outside_timeouts_of_zero_look_once_and_of_max_wait_like_the_untimed_call() {
    let s = Arc::new(
        Scheduler::builder()
            .workers(1)
            .mailbox_capacity(1)
            .handler("never", |_: Cmd, done| std::mem::forget(done))
            .build()
            .unwrap(),
    );
    // A process that waits forever on a command holds its mailbox full.
    let held = s
        .submit_joinable(Timed(Some(Plan::Ask("never", Duration::MAX))), "", ())
        .unwrap();
    stepped(&s, held.pid()); // waiting now: messages stay queued
    s.send(held.pid(), "fills the mailbox").unwrap();
    assert!(matches!(
        s.blocking_send_timeout(held.pid(), "no room", Duration::ZERO),
        Err(SendError::Full("no room"))
    ));
    let held = held.join_timeout(Duration::ZERO).unwrap_err();

    let mut set = stepsched::sched::JoinSet::new();
    let pid = s
        .submit_into(&mut set, Timed(Some(Plan::Wait)), "", ())
        .unwrap();
    assert!(set.blocking_join_next_timeout(Duration::ZERO).is_none());
    let inbox = s.mailbox().unwrap();
    assert_eq!(
        inbox.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );

    // From another thread, what the MAX waits are waiting for.
    let sender = Arc::clone(&s);
    let to = inbox.pid();
    let feeder = std::thread::spawn(move || {
        std::thread::sleep(common::ms(20));
        sender.send(to, "to the receiver").unwrap();
        sender.send(pid, "to the set").unwrap();
    });
    assert_eq!(inbox.recv_timeout(Duration::MAX), Ok("to the receiver"));
    let (ended, outcome) = set.blocking_join_next_timeout(Duration::MAX).unwrap();
    assert_eq!((ended, outcome.as_deref()), (pid, Ok("to the set")));
    feeder.join().unwrap();
    drop(inbox);

    // The held process ends on its shutdown cancel: a MAX grace returns
    // as soon as it has.
    let report = s.shutdown(Duration::MAX);
    assert!(!report.timed_out && report.forced == 0, "{report:?}");
    assert_eq!(
        held.join_timeout(Duration::MAX).unwrap().as_deref(),
        Ok("cancelled")
    );
}
