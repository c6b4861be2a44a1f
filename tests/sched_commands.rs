//! Proves command dispatch: each yielded command reaches the handler for its
//! kind and its completion comes back to the process with the same tag,
//! whether the handler completes inline, from another thread 10 ms later,
//! fails, drops its completer, or is not registered at all; a panicking
//! handler ends only its own process; and a completion for a process that
//! has ended is handed back to the completer, never a crash.
//!
//! ```text
//! cargo test --test sched_commands
//! cargo test --release --test sched_commands
//! ```

mod common;
use common::{wait_until, Held};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use stepsched::process::{Command, CommandError, Event, Process, ProcessError, StepOutput};
use stepsched::sched::{CompleteError, JoinHandle, Scheduler};

/// The commands; each kind has its own handler (or none, for `Unknown`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cmd {
    /// Completed inline with `2 * n`.
    Inline(u64),
    /// Completed with `2 * n` by another thread, 10 ms later.
    Later(u64),
    /// Failed with "boom".
    Fail,
    /// The handler drops its completer.
    Drop,
    /// The handler panics.
    Panic,
    /// The handler keeps the completer (see `Held`).
    Hold,
    /// No handler is registered for it.
    Unknown,
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Inline(_) => "inline",
            Cmd::Later(_) => "later",
            Cmd::Fail => "fail",
            Cmd::Drop => "drop",
            Cmd::Panic => "panic",
            Cmd::Hold => "hold",
            Cmd::Unknown => "unknown",
        }
    }
}

/// A completion as the process saw it, comparable in assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Reply(u64),
    UnknownCommand(&'static str),
    Failed(String),
    Panicked(String),
    Dropped,
    Cancelled,
    TimedOut,
    /// A reason this file does not know (`CommandError` is non-exhaustive):
    /// equal to no expected value, so an assertion that meets it fails.
    Other(String),
}

impl From<Result<u64, CommandError>> for Got {
    fn from(result: Result<u64, CommandError>) -> Self {
        match result {
            Ok(n) => Got::Reply(n),
            Err(CommandError::UnknownCommand(kind)) => Got::UnknownCommand(kind),
            Err(CommandError::Failed(e)) => Got::Failed(e.to_string()),
            Err(CommandError::Panicked(msg)) => Got::Panicked(msg),
            Err(CommandError::Dropped) => Got::Dropped,
            Err(CommandError::Cancelled) => Got::Cancelled,
            Err(CommandError::TimedOut) => Got::TimedOut,
            Err(other) => Got::Other(other.to_string()),
        }
    }
}

/// Yields its commands (tag, command) in its first step, then waits and
/// finishes with every completion it received, sorted by tag.
struct Asker {
    commands: Vec<(u64, Cmd)>,
    pending: usize,
    got: Vec<(u64, Got)>,
    counts: Arc<Counts>,
}

/// What an `Asker` counts, shared with the test.
#[derive(Default)]
struct Counts {
    closes: AtomicUsize,
    steps: AtomicUsize,
    messages: AtomicUsize,
}

impl Counts {
    fn closes(&self) -> usize {
        self.closes.load(Ordering::SeqCst)
    }

    fn steps(&self) -> usize {
        self.steps.load(Ordering::SeqCst)
    }

    fn messages(&self) -> usize {
        self.messages.load(Ordering::SeqCst)
    }
}

impl Asker {
    fn new(commands: Vec<(u64, Cmd)>) -> Self {
        Asker {
            commands,
            pending: 0,
            got: Vec::new(),
            counts: Arc::default(),
        }
    }
}

impl Process for Asker {
    type Input = ();
    type Message = ();
    type Command = Cmd;
    type Reply = u64;
    type Output = Vec<(u64, Got)>;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        self.counts.steps.fetch_add(1, Ordering::SeqCst);
        for (tag, command) in self.commands.drain(..) {
            out.yield_command(tag, command);
            self.pending += 1;
        }
        for event in events.drain(..) {
            match event {
                Event::Completion { tag, result } => {
                    self.got.push((tag, result.into()));
                    self.pending -= 1;
                }
                Event::Message(()) => {
                    self.counts.messages.fetch_add(1, Ordering::SeqCst);
                }
                other => return Err(format!("unexpected event {other:?}")),
            }
        }
        if self.pending == 0 {
            self.got.sort_by_key(|(tag, _)| *tag);
            out.done(std::mem::take(&mut self.got));
        }
        // Otherwise the default status: Wait (this step yielded) or Idle.
        Ok(())
    }

    fn close(&mut self) {
        self.counts.closes.fetch_add(1, Ordering::SeqCst);
    }
}

/// How `Completer::succeed` went for the "later" handler's threads.
#[derive(Default)]
struct LaterLog {
    ok: AtomicUsize,
    refused: AtomicUsize,
}

fn scheduler(held: &Held<Asker>, log: &Arc<LaterLog>) -> Scheduler<Asker> {
    let log = Arc::clone(log);
    Scheduler::<Asker>::builder()
        .workers(2)
        .handler("inline", |cmd, completer| {
            let Cmd::Inline(n) = cmd else { unreachable!() };
            completer.succeed(2 * n).expect("the process is waiting");
        })
        .handler("later", move |cmd, completer| {
            let Cmd::Later(n) = cmd else { unreachable!() };
            let log = Arc::clone(&log);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(10));
                match completer.succeed(2 * n) {
                    Ok(()) => log.ok.fetch_add(1, Ordering::SeqCst),
                    Err(_) => log.refused.fetch_add(1, Ordering::SeqCst),
                };
            });
        })
        .handler("fail", |_, completer| {
            completer.fail("boom").expect("the process is waiting");
        })
        .handler("drop", |_, completer| drop(completer))
        .handler("panic", |_, _completer| panic!("handler exploded"))
        .handler("hold", held.handler())
        .build()
        .unwrap()
}

fn setup() -> (Scheduler<Asker>, Held<Asker>, Arc<LaterLog>) {
    let held = Held::default();
    let log = Arc::new(LaterLog::default());
    (scheduler(&held, &log), held, log)
}

/// Submits an `Asker` with these commands.
fn ask(scheduler: &Scheduler<Asker>, commands: Vec<(u64, Cmd)>) -> JoinHandle<Asker> {
    ask_counted(scheduler, commands).0
}

/// Submits an `Asker` with these commands; returns its counts too.
fn ask_counted(
    scheduler: &Scheduler<Asker>,
    commands: Vec<(u64, Cmd)>,
) -> (JoinHandle<Asker>, Arc<Counts>) {
    let asker = Asker::new(commands);
    let counts = Arc::clone(&asker.counts);
    (scheduler.submit_joinable(asker, "ask", ()).unwrap(), counts)
}

/// One `Asker` with `commands` on a fresh scheduler must finish with
/// `expected`.
fn assert_completions(commands: Vec<(u64, Cmd)>, expected: Vec<(u64, Got)>) {
    let (scheduler, _, _) = setup();
    let asker = ask(&scheduler, commands);
    assert_eq!(asker.join(), Ok(expected));
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn an_unknown_command_completes_its_tag_with_unknown_command() {
    assert_completions(
        vec![(42, Cmd::Unknown)],
        vec![(42, Got::UnknownCommand("unknown"))],
    );
}

#[test]
fn a_handler_completing_inline_replies_to_the_same_tag() {
    assert_completions(
        vec![(3, Cmd::Inline(10)), (9, Cmd::Inline(20))],
        vec![(3, Got::Reply(20)), (9, Got::Reply(40))],
    );
}

#[test]
fn a_handler_completing_from_another_thread_10ms_later_reaches_the_process_with_its_tag() {
    let (scheduler, _, log) = setup();
    let (asker, counts) = ask_counted(&scheduler, vec![(7, Cmd::Later(21))]);
    assert_eq!(asker.join(), Ok(vec![(7, Got::Reply(42))]));
    // The handler's thread counts after `succeed` returns, which may be just
    // after the woken process has already finished: give it a moment.
    wait_until("the handler's thread to count", || {
        log.ok.load(Ordering::SeqCst) != 0
    });
    assert_eq!(log.ok.load(Ordering::SeqCst), 1, "succeed() returned Ok");
    assert_eq!(
        counts.steps(),
        2,
        "one step to yield, one woken by the completion"
    );
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn many_processes_each_get_their_own_late_replies() {
    // Two threads per process: Miri interprets every instruction, so ten.
    const N: u64 = if cfg!(miri) { 10 } else { 200 };
    let (scheduler, _, log) = setup();
    let handles: Vec<_> = (0..N)
        .map(|i| {
            let commands = vec![
                (1, Cmd::Later(i)),
                (2, Cmd::Later(i + 1)),
                (3, Cmd::Inline(i + 2)),
            ];
            ask(&scheduler, commands)
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        let i = i as u64;
        let expected = vec![
            (1, Got::Reply(2 * i)),
            (2, Got::Reply(2 * i + 2)),
            (3, Got::Reply(2 * i + 4)),
        ];
        assert_eq!(handle.join(), Ok(expected));
    }
    // Each handler's thread counts after `succeed` returns, which may be
    // just after its process has finished and been joined (CI saw 399 of
    // 400): wait for every thread to count, then check how.
    let counted = || log.ok.load(Ordering::SeqCst) + log.refused.load(Ordering::SeqCst);
    wait_until("every handler's thread to count", || {
        counted() == 2 * N as usize
    });
    assert_eq!(log.ok.load(Ordering::SeqCst), 2 * N as usize);
    assert_eq!(scheduler.stats().unknown_tags, 0);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_handler_that_fails_completes_the_tag_with_failed() {
    assert_completions(
        vec![(5, Cmd::Fail)],
        vec![(5, Got::Failed("boom".to_owned()))],
    );
}

#[test]
fn a_handler_that_drops_its_completer_completes_the_tag_with_dropped() {
    assert_completions(vec![(6, Cmd::Drop)], vec![(6, Got::Dropped)]);
}

#[test]
fn every_tag_of_a_mixed_batch_completes_exactly_once() {
    assert_completions(
        vec![
            (10, Cmd::Inline(1)),
            (11, Cmd::Later(2)),
            (12, Cmd::Fail),
            (13, Cmd::Drop),
            (14, Cmd::Unknown),
        ],
        vec![
            (10, Got::Reply(2)),
            (11, Got::Reply(4)),
            (12, Got::Failed("boom".to_owned())),
            (13, Got::Dropped),
            (14, Got::UnknownCommand("unknown")),
        ],
    );
}

#[test]
fn a_panicking_handler_ends_its_process_with_panicked_and_others_go_on() {
    let (scheduler, _, _) = setup();
    let (victim, counts) = ask_counted(
        &scheduler,
        vec![(1, Cmd::Inline(1)), (2, Cmd::Panic), (3, Cmd::Later(3))],
    );
    match victim.join() {
        Err(ProcessError::Panicked(msg)) => {
            assert!(msg.contains("handler exploded"), "message: {msg:?}")
        }
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert_eq!(counts.closes(), 1, "close ran once");
    // The workers and other processes go on.
    let handles: Vec<_> = (0..if cfg!(miri) { 10 } else { 50 })
        .map(|i| ask(&scheduler, vec![(0, Cmd::Inline(i))]))
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(handle.join(), Ok(vec![(0, Got::Reply(2 * i as u64))]));
    }
    let report = scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(report.stuck, 0);
}

#[test]
fn completing_after_the_process_was_terminated_hands_the_result_back() {
    let (scheduler, held, _) = setup();
    let (asker, counts) = ask_counted(&scheduler, vec![(8, Cmd::Hold)]);
    held.wait_for("the command to be held", 1);
    let completer = held.lock().pop().unwrap();
    assert_eq!((completer.pid(), completer.tag()), (asker.pid(), 8));

    scheduler.terminate(asker.pid()).unwrap();
    assert_eq!(asker.join(), Err(ProcessError::Terminated));
    assert_eq!(counts.steps(), 1, "no step after terminate");
    assert_eq!(counts.closes(), 1, "close ran once");

    match completer.complete(Ok(5)) {
        Err(CompleteError::Finished(result)) => assert_eq!(result.ok(), Some(5)),
        Err(other) => panic!("expected Finished, got {other:?}"),
        Ok(()) => panic!("a completion for an ended process was accepted"),
    }
    assert_eq!(scheduler.stats().unknown_tags, 0);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_held_completer_completed_later_from_the_test_thread_wakes_the_process() {
    let (scheduler, held, _) = setup();
    let asker = ask(&scheduler, vec![(4, Cmd::Hold), (5, Cmd::Hold)]);
    held.wait_for("both commands to be held", 2);
    let completers: Vec<_> = held.lock().drain(..).collect();
    for completer in completers {
        let tag = completer.tag();
        if tag == 4 {
            completer.succeed(40).unwrap();
        } else {
            completer.fail(format!("tag {tag} refused")).unwrap();
        }
    }
    assert_eq!(
        asker.join(),
        Ok(vec![
            (4, Got::Reply(40)),
            (5, Got::Failed("tag 5 refused".to_owned()))
        ])
    );
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn messages_do_not_wake_a_process_waiting_for_a_completion_but_reach_its_next_step() {
    let (scheduler, held, _) = setup();
    let (asker, counts) = ask_counted(&scheduler, vec![(1, Cmd::Hold)]);
    held.wait_for("the command to be held", 1);
    scheduler.send(asker.pid(), ()).unwrap();
    scheduler.send(asker.pid(), ()).unwrap();
    thread::sleep(Duration::from_millis(50));
    assert_eq!(counts.steps(), 1, "messages must not wake a Wait");
    let completer = held.lock().pop().unwrap();
    completer.succeed(9).unwrap();
    assert_eq!(asker.join(), Ok(vec![(1, Got::Reply(9))]));
    assert_eq!(counts.steps(), 2);
    assert_eq!(counts.messages(), 2, "both messages reached step 2");
    scheduler.shutdown(Duration::from_secs(1));
}
