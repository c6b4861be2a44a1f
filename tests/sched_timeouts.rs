//! Every public method that takes a timeout, at `Duration::MAX`: it waits
//! (for ever, in practice) instead of panicking on `Instant::now() +
//! timeout`, and returns what a finite timeout would. And the blocking
//! pool with `blocking_keep_alive(Duration::MAX)`: an idle thread waits
//! for the next command instead of dying under the pool's lock (which
//! left it counted idle, and the next command never ran).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{Command, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::{JoinSet, Scheduler};

const MAX: Duration = Duration::MAX;
/// The liveness guard of the other waits: a hang becomes a failure.
const GUARD: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    /// Reply `Answer(n)` to the PID.
    Ask(Pid, u64),
    Answer(u64),
    /// Yield `Block(n)` to the blocking pool and wait for it; `n == 0`
    /// ends the chain.
    Block(u64),
    /// Yield one command and wait for it, then go Idle again.
    Hold,
    /// End with 0.
    Stop,
}

#[derive(Debug)]
struct Block(u64);

impl Command for Block {
    fn kind(&self) -> &'static str {
        "block"
    }
}

/// The tag of `Msg::Hold`'s command.
const HOLD: u64 = u64::MAX;

/// Answers, blocks, stops; ends on a cancel (so a shutdown ends it).
struct Echo;

impl Process for Echo {
    type Input = ();
    type Message = Msg;
    type Command = Block;
    type Reply = u64;
    type Output = u64;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        out.set_status(Status::Idle);
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Ask(from, n)) => out.send(from, Msg::Answer(n)),
                Event::Message(Msg::Block(n)) => {
                    out.yield_command(n, Block(n));
                    out.set_status(Status::Wait);
                }
                Event::Message(Msg::Hold) => {
                    out.yield_command(HOLD, Block(0));
                    out.set_status(Status::Wait);
                }
                Event::Completion { tag: HOLD, .. } => {}
                Event::Completion { result, .. } => match result {
                    Ok(n) if n > 1 => {
                        out.yield_command(n - 1, Block(n - 1));
                        out.set_status(Status::Wait);
                    }
                    Ok(n) => out.done(n),
                    Err(_) => out.done(u64::MAX),
                },
                Event::Message(Msg::Stop) | Event::Cancel(_) => out.done(0),
                _ => {}
            }
        }
        Ok(())
    }
}

/// A blocking handler that waits for `gate` and answers the command's
/// number.
fn scheduler(gate: &Arc<AtomicBool>, capacity: Option<u32>) -> Scheduler<Echo> {
    let gate = Arc::clone(gate);
    let mut builder = Scheduler::builder()
        .workers(2)
        .blocking_handler("block", move |Block(n), completer| {
            // Acquire: pairs with the test's Release store.
            while !gate.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = completer.succeed(n);
        })
        .blocking_keep_alive(MAX);
    if let Some(capacity) = capacity {
        builder = builder.mailbox_capacity(capacity);
    }
    builder.build().expect("a scheduler")
}

fn open() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(true))
}

#[test]
fn recv_timeout_of_duration_max_waits_for_the_message() {
    let s = scheduler(&open(), None);
    let inbox = s.mailbox().expect("a receiver");
    let echo = s.submit(Echo, "", ()).expect("submitted");
    s.send(echo, Msg::Ask(inbox.pid(), 3)).expect("live");
    assert_eq!(inbox.recv_timeout(MAX), Ok(Msg::Answer(3)));
    std::thread::scope(|scope| {
        let stopping = scope.spawn(|| s.shutdown(GUARD));
        assert_eq!(inbox.recv_timeout(MAX), Err(RecvTimeoutError::Disconnected));
        assert_eq!(stopping.join().expect("returns").stuck, 0);
    });
}

#[test]
fn call_with_duration_max_returns_the_reply() {
    let s = scheduler(&open(), None);
    let echo = s.submit(Echo, "", ()).expect("submitted");
    assert_eq!(
        s.blocking_call(echo, |me| Msg::Ask(me, 5), MAX),
        Ok(Msg::Answer(5))
    );
}

#[test]
fn join_timeout_and_join_next_timeout_of_duration_max_return_the_outcome() {
    let s = scheduler(&open(), None);
    let one = s.submit_joinable(Echo, "", ()).expect("submitted");
    s.send(one.pid(), Msg::Stop).expect("live");
    assert_eq!(one.join_timeout(MAX).ok(), Some(Ok(0)));
    let mut set = JoinSet::new();
    let pid = s.submit_into(&mut set, Echo, "", ()).expect("submitted");
    s.send(pid, Msg::Stop).expect("live");
    let (joined, outcome) = set.blocking_join_next_timeout(MAX).expect("one joined");
    assert_eq!((joined, outcome), (pid, Ok(0)));
}

#[test]
fn shutdown_of_duration_max_returns_once_every_process_ended() {
    let s = scheduler(&open(), None);
    for _ in 0..4 {
        s.submit(Echo, "", ()).expect("submitted");
    }
    let report = s.shutdown(MAX);
    assert_eq!(
        (report.cancelled, report.stuck, report.timed_out),
        (4, 0, false)
    );
}

/// A full bounded mailbox (its process waits for a command held at a
/// gate, so it drains nothing): `blocking_send_timeout(.., MAX)` waits for room,
/// and gets it when the command completes and the process drains.
#[test]
fn send_timeout_of_duration_max_waits_for_room() {
    let gate = Arc::new(AtomicBool::new(false));
    let s = scheduler(&gate, Some(1));
    let blocked = s.submit_joinable(Echo, "", ()).expect("submitted");
    let pid = blocked.pid();
    s.send(pid, Msg::Hold).expect("room");
    // Its step takes `Hold` and waits; then one message fills it. The
    // completion wakes it, and it drains.
    let deadline = std::time::Instant::now() + GUARD;
    while s.send(pid, Msg::Answer(0)).is_err() {
        assert!(std::time::Instant::now() < deadline, "never room for one");
        std::thread::yield_now();
    }
    std::thread::scope(|scope| {
        let sender = scope.spawn(|| s.blocking_send_timeout(pid, Msg::Answer(1), MAX));
        std::thread::sleep(Duration::from_millis(10));
        // Release: pairs with the handler's Acquire load.
        gate.store(true, Ordering::Release);
        assert_eq!(sender.join().expect("no panic"), Ok(()));
    });
    s.blocking_send_timeout(pid, Msg::Stop, GUARD)
        .expect("room again");
    assert_eq!(blocked.join_timeout(GUARD).ok(), Some(Ok(0)));
}

/// With `blocking_keep_alive(Duration::MAX)`, the thread that ran the
/// first command waits for the second and runs it.
#[test]
fn a_blocking_keep_alive_of_duration_max_keeps_the_pool_running() {
    let s = scheduler(&open(), None);
    let chain = s.submit_joinable(Echo, "", ()).expect("submitted");
    s.send(chain.pid(), Msg::Block(3)).expect("live");
    let outcome = chain.join_timeout(GUARD).expect("three commands ran");
    assert_eq!(outcome, Ok(1));
    let blocking = s.stats().blocking;
    assert_eq!(blocking.queued, 0, "{blocking:?}");
}
