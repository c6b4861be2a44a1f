//! Proves the blocking pool (`Builder::blocking_handler`): a blocking
//! handler never holds a worker (message round trips between two processes
//! all complete while 1,000 blocking calls from 1,000 processes are still
//! blocked); threads start on demand up to the maximum and idle ones exit
//! after the keep-alive; commands beyond the maximum run in FIFO order; a
//! panicking blocking handler completes its command with `Panicked` and the
//! pool goes on; shutdown cancels queued commands and abandons handlers
//! that never return, counting both, and neither `shutdown` nor `Drop`
//! hangs on them.
//!
//! Every wait is bounded (a hang fails the test); no assertion is about
//! time. Sizes are cut under Miri.
//!
//! ```text
//! cargo test --test sched_blocking
//! cargo test --release --test sched_blocking
//! ```

mod common;
use common::{joined, ms, wait_until};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{
    Cancel, Command, CommandError, Event, Pid, Process, ProcessError, StepOutput,
};
use stepsched::sched::{Builder, JoinHandle, Scheduler, ShutdownReport};

/// How long a test waits for something that must happen (a liveness
/// guard, not a timing claim).
const HANG: Duration = Duration::from_secs(60);

/// A flag the test opens once; handlers wait on it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    /// Waits until the gate opens; false if `HANG` passed first.
    fn wait(&self) -> bool {
        let deadline = Instant::now() + HANG;
        let mut open = self.open.lock().unwrap();
        while !*open {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            open = self.opened.wait_timeout(open, deadline - now).unwrap().0;
        }
        true
    }
}

/// Opens its gate when dropped: declared after the scheduler, so that a
/// failing test releases the handlers before the scheduler's drop shuts
/// down (a failure then reports instead of waiting on blocked handlers).
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Cmd {
    /// Waits for the gate, sleeps 50 ms, replies `n`.
    Sleep(u64),
    /// Replies `n` (the FIFO test's handler records `n` first).
    Echo(u64),
    /// Panics holding the completer.
    Panic,
    /// Replies `n`, then panics.
    ReplyThenPanic(u64),
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Sleep(_) => "sleep",
            Cmd::Echo(_) => "echo",
            Cmd::Panic | Cmd::ReplyThenPanic(_) => "panic",
        }
    }
}

/// A completion as the process saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Reply(u64),
    Panicked(String),
    Cancelled,
    Other(String),
}

impl From<Result<u64, CommandError>> for Got {
    fn from(result: Result<u64, CommandError>) -> Self {
        match result {
            Ok(n) => Got::Reply(n),
            Err(CommandError::Panicked(message)) => Got::Panicked(message),
            Err(CommandError::Cancelled) => Got::Cancelled,
            Err(other) => Got::Other(other.to_string()),
        }
    }
}

/// Two kinds in one scheduler: an asker yields its commands in its first
/// step and finishes with every completion, by tag (it ignores
/// `Cancel::Shutdown` and waits on); a pinger bounces a counter (see
/// `benches/common/workloads.rs`'s `Pinger`) and finishes with the number
/// of messages it received.
enum Proc {
    Asker {
        commands: Vec<(u64, Cmd)>,
        pending: usize,
        got: Vec<(u64, Got)>,
    },
    Pinger {
        received: u64,
    },
}

#[derive(Debug, PartialEq, Eq)]
enum Out {
    Got(Vec<(u64, Got)>),
    Received(u64),
}

impl Process for Proc {
    type Input = ();
    type Message = (Pid, u64);
    type Command = Cmd;
    type Reply = u64;
    type Output = Out;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Proc::Asker {
                commands,
                pending,
                got,
            } => {
                for (tag, command) in commands.drain(..) {
                    out.yield_command(tag, command);
                    *pending += 1;
                }
                for event in events.drain(..) {
                    match event {
                        Event::Completion { tag, result } => {
                            got.push((tag, result.into()));
                            *pending -= 1;
                        }
                        Event::Cancel(Cancel::Shutdown) => {}
                        other => return Err(format!("unexpected event {other:?}")),
                    }
                }
                if *pending == 0 {
                    got.sort_by_key(|(tag, _)| *tag);
                    out.done(Out::Got(std::mem::take(got)));
                }
            }
            Proc::Pinger { received } => {
                for event in events.drain(..) {
                    if let Event::Message((from, n)) = event {
                        *received += 1;
                        if n > 0 {
                            out.send(from, (out.pid(), n - 1));
                        }
                        if n <= 1 {
                            out.done(Out::Received(*received));
                            return Ok(());
                        }
                    }
                }
            }
        }
        // Otherwise the default status: Wait (this step yielded) or Idle.
        Ok(())
    }
}

fn ask(scheduler: &Scheduler<Proc>, commands: Vec<(u64, Cmd)>) -> JoinHandle<Proc> {
    let asker = Proc::Asker {
        commands,
        pending: 0,
        got: Vec::new(),
    };
    scheduler.submit_joinable(asker, "ask", ()).unwrap()
}

/// A builder with 2 workers and a "sleep" blocking handler behind `gate`.
fn sleepy(gate: &Arc<Gate>) -> Builder<Proc> {
    let gate = Arc::clone(gate);
    Scheduler::<Proc>::builder()
        .workers(2)
        .blocking_handler("sleep", move |command, completer| {
            let Cmd::Sleep(n) = command else {
                unreachable!()
            };
            if !gate.wait() {
                let _ = completer.fail("the gate never opened");
                return;
            }
            thread::sleep(Duration::from_millis(50));
            let _ = completer.succeed(n);
        })
}

/// The blocking pool's busy + queued commands.
fn in_pool(scheduler: &Scheduler<Proc>) -> usize {
    let blocking = scheduler.stats().blocking;
    blocking.busy + blocking.queued
}

/// Blocking handlers leave the workers free: 2 workers; 1,000 processes
/// each yield one command to a
/// blocking handler that sleeps 50 ms; meanwhile two other processes make
/// 10,000 round trips. The handlers wait for a gate the test opens only
/// after the round trips are done, so the round trips provably ran while
/// every blocking call was still blocked: had any worker been held by one,
/// the round trips could not finish, and the bounded join would fail.
#[test]
fn round_trips_complete_while_1000_blocking_calls_block() {
    let (askers, trips) = if cfg!(miri) { (8, 50) } else { (1_000, 10_000) };
    let gate = Arc::new(Gate::default());
    let scheduler = sleepy(&gate).build().unwrap();
    let _open = OpenOnDrop(Arc::clone(&gate));
    let handles: Vec<_> = (0..askers)
        .map(|i| ask(&scheduler, vec![(1, Cmd::Sleep(i))]))
        .collect();
    wait_until("every blocking command to reach the pool", || {
        in_pool(&scheduler) == askers as usize
    });

    let ping = scheduler
        .submit_joinable(Proc::Pinger { received: 0 }, "ping", ())
        .unwrap();
    let pong = scheduler
        .submit_joinable(Proc::Pinger { received: 0 }, "pong", ())
        .unwrap();
    scheduler.send(ping.pid(), (pong.pid(), 2 * trips)).unwrap();
    let received = [joined(ping), joined(pong)];
    // 2R messages between them, plus the kick from outside.
    let total: u64 = received
        .iter()
        .map(|r| match r {
            Ok(Out::Received(n)) => *n,
            other => panic!("a pinger ended with {other:?}"),
        })
        .sum();
    assert_eq!(total, 2 * trips + 1);
    let stats = scheduler.stats().blocking;
    assert_eq!(
        stats.busy + stats.queued,
        askers as usize,
        "every blocking call is still blocked: {stats:?}"
    );
    assert!(
        stats.threads <= 512,
        "at most the default maximum: {stats:?}"
    );

    gate.open();
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(
            joined(handle),
            Ok(Out::Got(vec![(1, Got::Reply(i as u64))]))
        );
    }
    let report = scheduler.shutdown(ms(10_000));
    assert_eq!(report.blocking_cancelled, 0, "{report:?}");
    assert_eq!(report.blocking_abandoned, 0, "{report:?}");
}

#[test]
fn threads_start_on_demand_and_idle_ones_exit_after_the_keep_alive() {
    const N: usize = 4;
    let gate = Arc::new(Gate::default());
    let scheduler = sleepy(&gate).blocking_keep_alive(ms(50)).build().unwrap();
    let _open = OpenOnDrop(Arc::clone(&gate));
    assert_eq!(
        scheduler.stats().blocking.threads,
        0,
        "none before a command"
    );
    let handles: Vec<_> = (0..N as u64)
        .map(|i| ask(&scheduler, vec![(i, Cmd::Sleep(i))]))
        .collect();
    wait_until("one busy thread per command", || {
        let blocking = scheduler.stats().blocking;
        blocking.busy == N && blocking.threads == N
    });
    gate.open();
    for (i, handle) in handles.into_iter().enumerate() {
        let i = i as u64;
        assert_eq!(joined(handle), Ok(Out::Got(vec![(i, Got::Reply(i))])));
    }
    wait_until("idle threads to exit after the keep-alive", || {
        scheduler.stats().blocking.threads == 0
    });
    // The pool starts again on demand.
    let again = ask(&scheduler, vec![(9, Cmd::Sleep(9))]);
    assert_eq!(joined(again), Ok(Out::Got(vec![(9, Got::Reply(9))])));
    wait_until("the new thread to exit too", || {
        scheduler.stats().blocking.threads == 0
    });
    scheduler.shutdown(ms(10_000));
}

#[test]
fn commands_beyond_max_blocking_threads_run_in_fifo_order() {
    const N: u64 = 20;
    let gate = Arc::new(Gate::default());
    let order = Arc::new(Mutex::new(Vec::new()));
    let (g, o) = (Arc::clone(&gate), Arc::clone(&order));
    let scheduler = Scheduler::<Proc>::builder()
        .workers(2)
        .max_blocking_threads(1)
        .blocking_handler("echo", move |command, completer| {
            let Cmd::Echo(n) = command else {
                unreachable!()
            };
            o.lock().unwrap().push(n);
            if n == 0 && !g.wait() {
                let _ = completer.fail("the gate never opened");
                return;
            }
            let _ = completer.succeed(n);
        })
        .build()
        .unwrap();
    let _open = OpenOnDrop(Arc::clone(&gate));
    // One step yields them all: dispatched, hence queued, in tag order.
    let asker = ask(&scheduler, (0..N).map(|n| (n, Cmd::Echo(n))).collect());
    wait_until("the first command to run and the rest to queue", || {
        let blocking = scheduler.stats().blocking;
        blocking.busy == 1 && blocking.queued == N as usize - 1
    });
    assert_eq!(scheduler.stats().blocking.threads, 1, "the maximum holds");
    gate.open();
    let expected = (0..N).map(|n| (n, Got::Reply(n))).collect();
    assert_eq!(joined(asker), Ok(Out::Got(expected)));
    assert_eq!(*order.lock().unwrap(), (0..N).collect::<Vec<_>>());
    scheduler.shutdown(ms(10_000));
}

#[test]
fn a_panicking_blocking_handler_completes_its_command_with_panicked_and_the_pool_goes_on() {
    let scheduler = Scheduler::<Proc>::builder()
        .workers(2)
        // One thread: the last command runs only if it survived the panics.
        .max_blocking_threads(1)
        .blocking_handler("panic", |command, completer| match command {
            Cmd::Panic => panic!("blocking handler exploded"),
            Cmd::ReplyThenPanic(n) => {
                let _ = completer.succeed(n);
                panic!("exploded after replying");
            }
            _ => unreachable!(),
        })
        .blocking_handler("echo", |command, completer| {
            let Cmd::Echo(n) = command else {
                unreachable!()
            };
            let _ = completer.succeed(n);
        })
        .build()
        .unwrap();
    let asker = ask(
        &scheduler,
        vec![
            (1, Cmd::Panic),
            (2, Cmd::ReplyThenPanic(7)),
            (3, Cmd::Echo(3)),
        ],
    );
    assert_eq!(
        joined(asker),
        Ok(Out::Got(vec![
            (1, Got::Panicked("blocking handler exploded".to_owned())),
            (2, Got::Reply(7)),
            (3, Got::Reply(3)),
        ])),
        "the process is not ended by its handler's panic; it gets the error"
    );
    let stats = scheduler.stats();
    assert_eq!(stats.blocking.threads, 1, "the thread survived: {stats:?}");
    assert_eq!(stats.undelivered, 0, "nothing else was sent");
    scheduler.shutdown(ms(10_000));
}

/// The "sleep" handler as in `sleepy`, but recording what its late
/// completions got back.
fn forever(gate: &Arc<Gate>, refused: &Arc<AtomicUsize>) -> Scheduler<Proc> {
    let (gate, refused) = (Arc::clone(gate), Arc::clone(refused));
    Scheduler::<Proc>::builder()
        .workers(2)
        .max_blocking_threads(2)
        .blocking_handler("sleep", move |command, completer| {
            let Cmd::Sleep(n) = command else {
                unreachable!()
            };
            gate.wait();
            // Refused, whatever the reason (the process finished, or the
            // scheduler stopped).
            if completer.succeed(n).is_err() {
                refused.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap()
}

#[test]
fn shutdown_cancels_queued_blocking_commands_and_abandons_running_ones_after_the_timeout() {
    const RUNNING: usize = 2;
    const QUEUED: usize = 5;
    let gate = Arc::new(Gate::default());
    let refused = Arc::new(AtomicUsize::new(0));
    let scheduler = forever(&gate, &refused);
    let handles: Vec<_> = (0..(RUNNING + QUEUED) as u64)
        .map(|i| ask(&scheduler, vec![(i, Cmd::Sleep(i))]))
        .collect();
    wait_until("two running and five queued", || {
        let blocking = scheduler.stats().blocking;
        blocking.busy == RUNNING && blocking.queued == QUEUED
    });

    let started = Instant::now();
    let report = scheduler.shutdown(ms(200));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "shutdown returned only after {took:?}"
    );
    // Every count not set here is zero.
    let mut expected = ShutdownReport::default();
    expected.cancelled = RUNNING + QUEUED;
    expected.completed = QUEUED;
    expected.forced = RUNNING;
    expected.timed_out = true;
    expected.blocking_cancelled = QUEUED;
    expected.blocking_abandoned = RUNNING;
    assert_eq!(report, expected);
    let (mut cancelled, mut forced) = (0, 0);
    for handle in handles {
        match joined(handle) {
            Ok(Out::Got(got)) => {
                assert_eq!(got.len(), 1);
                assert_eq!(got[0].1, Got::Cancelled);
                cancelled += 1;
            }
            Err(ProcessError::Shutdown) => forced += 1,
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert_eq!((cancelled, forced), (QUEUED, RUNNING));
    assert_eq!(scheduler.stats().blocking.cancelled, QUEUED);

    // The abandoned handlers return later; their completions are refused.
    gate.open();
    wait_until("the abandoned handlers to return", || {
        refused.load(Ordering::SeqCst) == RUNNING
    });
}

#[test]
fn dropping_the_scheduler_does_not_wait_for_a_blocking_handler_that_never_returns() {
    let gate = Arc::new(Gate::default());
    let refused = Arc::new(AtomicUsize::new(0));
    let scheduler = forever(&gate, &refused);
    let asker = ask(&scheduler, vec![(1, Cmd::Sleep(1))]);
    wait_until("the handler to run", || {
        scheduler.stats().blocking.busy == 1
    });
    let (done, dropped) = std::sync::mpsc::channel();
    thread::spawn(move || {
        drop(scheduler);
        done.send(()).unwrap();
    });
    dropped
        .recv_timeout(HANG)
        .expect("drop returned while the handler still blocks");
    assert_eq!(joined(asker), Err(ProcessError::Shutdown));
    gate.open();
    wait_until("the abandoned handler to return", || {
        refused.load(Ordering::SeqCst) == 1
    });
}

#[test]
fn build_refuses_zero_max_blocking_threads() {
    let error = Scheduler::<Proc>::builder()
        .max_blocking_threads(0)
        .build()
        .expect_err("0 blocking threads is refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        error.to_string().contains("max_blocking_threads"),
        "{error}"
    );
}
