//! Proves a step's exit signals (`StepOutput::exit`, `StepOutput::kill`):
//! an exit ends a process that does not trap, between its steps, with its
//! reason told to its watchers and links; a trapping one receives it as a
//! `Down` and goes on; a normal reason to one that does not trap does
//! nothing; a kill cannot be trapped and is told as `Killed`; a process
//! waiting in a command is ended without its completion; an unknown or
//! ended PID, a process on its way out, and the sender itself are
//! specified; and exits racing ends, terminates, other exits and a
//! shutdown end each process exactly once, its `close` run once and each
//! watcher told once. `outside.rs`: the same exit from a thread
//! (`Scheduler::exit`), sent as `Pid::OUTSIDE`.
//!
//! ```text
//! cargo test --test sched_exit
//! cargo test --release --test sched_exit
//! ```

#[path = "../common/mod.rs"]
mod common;
use common::{joined, wait_until, Held};

mod outside;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{
    Command, Event, ExitReason, Pid, Process, ProcessError, Status, StepOutput, Summary,
};
use stepsched::sched::{JoinHandle, Scheduler};

/// One thing a step does, in a script's order.
#[derive(Debug, Clone)]
enum Op {
    Exit(Pid, ExitReason),
    Kill(Pid),
    /// `exit` or `kill` of the step's own PID.
    ExitSelf(ExitReason),
    KillSelf,
    Trap(bool),
    Monitor(Pid),
    Link(Pid),
    Send(Pid, Msg),
    /// Yield a held command: the step ends `Wait`.
    Wait,
    /// Return `Continue` from every step from now on.
    Spin,
    /// Set the first flag, spin inside this step until the second is set,
    /// then finish.
    FinishWhen(Arc<AtomicBool>, Arc<AtomicBool>),
    /// Set the flag in the next step (this one continues): what this
    /// step sent has then been pushed.
    SetNext(Arc<AtomicBool>),
    Finish,
}

#[derive(Debug, Clone)]
enum Msg {
    Script(Vec<Op>),
}

struct Hold;

impl Command for Hold {
    fn kind(&self) -> &'static str {
        "hold"
    }
}

/// What the nodes saw, shared with the test.
#[derive(Default)]
struct Log {
    /// (watcher, about, reason) of every `Down` a step received.
    downs: Mutex<Vec<(Pid, Pid, ExitReason)>>,
    /// `close` calls, per process.
    closes: Mutex<HashMap<Pid, usize>>,
}

impl Log {
    fn downs_of(&self, watcher: Pid) -> Vec<(Pid, ExitReason)> {
        let downs = self.downs.lock().unwrap();
        (downs.iter())
            .filter(|(w, _, _)| *w == watcher)
            .map(|(_, about, r)| (*about, r.clone()))
            .collect()
    }

    fn closes(&self, pid: Pid) -> usize {
        self.closes.lock().unwrap().get(&pid).copied().unwrap_or(0)
    }
}

struct Node {
    log: Arc<Log>,
    me: Option<Pid>,
    spin: bool,
    set_next: Option<Arc<AtomicBool>>,
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Hold;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let me = out.pid();
        self.me = Some(me);
        if let Some(flag) = self.set_next.take() {
            flag.store(true, Ordering::SeqCst);
        }
        for event in events.drain(..) {
            match event {
                Event::Down { pid, reason } => {
                    self.log.downs.lock().unwrap().push((me, pid, reason))
                }
                Event::Message(Msg::Script(ops)) => {
                    for op in ops {
                        match op {
                            Op::Exit(pid, reason) => out.exit(pid, reason),
                            Op::Kill(pid) => out.kill(pid),
                            Op::ExitSelf(reason) => out.exit(me, reason),
                            Op::KillSelf => out.kill(me),
                            Op::Trap(trap) => out.trap_exits(trap),
                            Op::Monitor(pid) => out.monitor(pid),
                            Op::Link(pid) => out.link(pid),
                            Op::Send(pid, msg) => out.send(pid, msg),
                            Op::Wait => out.yield_command(1, Hold),
                            Op::Spin => self.spin = true,
                            Op::FinishWhen(started, flag) => {
                                started.store(true, Ordering::SeqCst);
                                while !flag.load(Ordering::SeqCst) {
                                    thread::yield_now();
                                }
                                out.done(());
                            }
                            Op::SetNext(flag) => {
                                self.set_next = Some(flag);
                                out.set_status(Status::Continue);
                            }
                            Op::Finish => out.done(()),
                        }
                    }
                }
                _ => {}
            }
        }
        if self.spin && out.status().is_none() {
            out.set_status(Status::Continue);
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Some(me) = self.me {
            *self.log.closes.lock().unwrap().entry(me).or_default() += 1;
        }
    }
}

type Handle = JoinHandle<Node>;

fn scheduler(workers: usize) -> (Scheduler<Node>, Held<Node>) {
    let held = Held::default();
    let s = Scheduler::builder()
        .workers(workers)
        .handler("hold", held.handler())
        .build()
        .expect("scheduler");
    (s, held)
}

/// A node that has taken one step (so it knows its PID for its `close`),
/// and is idle.
fn node(s: &Scheduler<Node>, log: &Arc<Log>) -> (Pid, Handle) {
    let handle = s
        .submit_joinable(
            Node {
                log: Arc::clone(log),
                me: None,
                spin: false,
                set_next: None,
            },
            "",
            (),
        )
        .expect("submit");
    let pid = handle.pid();
    run_then_wait(s, pid, vec![]);
    (pid, handle)
}

fn run(s: &Scheduler<Node>, pid: Pid, ops: Vec<Op>) {
    s.send(pid, Msg::Script(ops)).expect("a live node");
}

/// Runs `ops` in `pid`'s step and waits until that step is over (its
/// next step has set a flag).
fn run_then_wait(s: &Scheduler<Node>, pid: Pid, mut ops: Vec<Op>) {
    let flag = Arc::new(AtomicBool::new(false));
    ops.push(Op::SetNext(Arc::clone(&flag)));
    run(s, pid, ops);
    wait_until("the script's step to end", || flag.load(Ordering::SeqCst));
}

fn summary(text: &str) -> ExitReason {
    ExitReason::Exit(Summary::new(text))
}

#[test]
fn an_exit_ends_an_idle_process_and_its_watchers_are_told_the_reason() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, kh) = node(&s, &log);
    run(
        &s,
        k,
        vec![Op::Monitor(t), Op::Exit(t, ExitReason::Shutdown)],
    );
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    wait_until("the Down", || !log.downs_of(k).is_empty());
    assert_eq!(log.downs_of(k), vec![(t, ExitReason::Shutdown)]);
    assert_eq!(log.closes(t), 1);
    run(&s, k, vec![Op::Finish]);
    assert_eq!(joined(kh), Ok(()));
}

#[test]
fn a_trapped_exit_comes_as_a_down_and_the_process_goes_on() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    run_then_wait(&s, t, vec![Op::Trap(true)]);
    for reason in [summary("stop"), ExitReason::Done, ExitReason::Killed] {
        run(&s, k, vec![Op::Exit(t, reason)]);
    }
    wait_until("three Downs", || log.downs_of(t).len() == 3);
    assert_eq!(
        log.downs_of(t),
        vec![
            (k, summary("stop")),
            (k, ExitReason::Done),
            (k, ExitReason::Killed)
        ]
    );
    run(&s, t, vec![Op::Finish]);
    assert_eq!(joined(th), Ok(()), "it went on");
}

#[test]
fn a_normal_exit_to_a_process_that_does_not_trap_does_nothing() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    // The exit goes out before the step's sends: `t` sees it first.
    run(
        &s,
        k,
        vec![
            Op::Exit(t, ExitReason::Done),
            Op::Send(t, Msg::Script(vec![Op::Finish])),
        ],
    );
    assert_eq!(joined(th), Ok(()));
    assert!(log.downs_of(t).is_empty());
}

#[test]
fn a_kill_ends_a_trapping_process_and_is_told_as_killed() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    run_then_wait(&s, t, vec![Op::Trap(true)]);
    run(&s, k, vec![Op::Monitor(t), Op::Kill(t)]);
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    wait_until("the Down", || !log.downs_of(k).is_empty());
    assert_eq!(log.downs_of(k), vec![(t, ExitReason::Killed)]);
    assert!(log.downs_of(t).is_empty(), "never trapped");
}

#[test]
fn a_killed_process_is_told_as_killed_to_its_links_which_end_as_linked() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (trapping, _h) = node(&s, &log);
    let (plain, ph) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    run_then_wait(&s, trapping, vec![Op::Trap(true), Op::Link(t)]);
    run_then_wait(&s, plain, vec![Op::Link(t)]);
    run_then_wait(&s, k, vec![Op::Monitor(plain)]);
    run(&s, k, vec![Op::Kill(t)]);
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    assert_eq!(joined(ph), Err(ProcessError::Terminated));
    wait_until("the Downs", || {
        !log.downs_of(trapping).is_empty() && !log.downs_of(k).is_empty()
    });
    assert_eq!(log.downs_of(trapping), vec![(t, ExitReason::Killed)]);
    assert_eq!(log.downs_of(k), vec![(plain, ExitReason::Linked(t))]);
}

#[test]
fn an_exit_ends_a_process_waiting_in_a_command_without_its_completion() {
    let (s, held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    run(&s, t, vec![Op::Wait]);
    held.wait_for("the command", 1);
    run(&s, k, vec![Op::Monitor(t), Op::Exit(t, summary("stop"))]);
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    wait_until("the Down", || !log.downs_of(k).is_empty());
    assert_eq!(log.downs_of(k), vec![(t, summary("stop"))]);
    let completer = held.lock().pop().expect("the command is still held");
    assert!(completer.succeed(()).is_err(), "its process is gone");
    assert_eq!(log.closes(t), 1);
}

#[test]
fn an_exit_to_an_unknown_or_ended_pid_does_nothing() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (ended, eh) = node(&s, &log);
    run(&s, ended, vec![Op::Finish]);
    assert_eq!(joined(eh), Ok(()));
    let never = Pid::from_raw(u64::from(u32::MAX - 1) | (7 << 32));
    let (k, kh) = node(&s, &log);
    run_then_wait(
        &s,
        k,
        vec![
            Op::Exit(ended, summary("x")),
            Op::Kill(ended),
            Op::Exit(never, summary("x")),
            Op::Kill(never),
        ],
    );
    run(&s, k, vec![Op::Finish]);
    assert_eq!(joined(kh), Ok(()), "the sender is unaffected");
    assert!(log.downs_of(k).is_empty());
}

#[test]
fn an_exit_to_itself_ends_it_unless_it_traps_and_a_kill_always() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (w, _wh) = node(&s, &log);

    let (a, ah) = node(&s, &log);
    run_then_wait(&s, w, vec![Op::Monitor(a)]);
    run(&s, a, vec![Op::ExitSelf(summary("me"))]);
    assert_eq!(joined(ah), Err(ProcessError::Terminated));

    let (b, bh) = node(&s, &log);
    run_then_wait(&s, b, vec![Op::Trap(true), Op::ExitSelf(summary("me"))]);
    wait_until("its own Down", || !log.downs_of(b).is_empty());
    assert_eq!(log.downs_of(b), vec![(b, summary("me"))]);
    run(&s, b, vec![Op::ExitSelf(ExitReason::Done)]);
    wait_until("a second Down", || log.downs_of(b).len() == 2);
    run(&s, b, vec![Op::KillSelf]);
    assert_eq!(joined(bh), Err(ProcessError::Terminated));

    let (c, ch) = node(&s, &log);
    run(&s, c, vec![Op::ExitSelf(ExitReason::Done)]);
    run(&s, c, vec![Op::Finish]);
    assert_eq!(joined(ch), Ok(()), "a normal exit to itself does nothing");

    wait_until("the Down", || !log.downs_of(w).is_empty());
    assert_eq!(log.downs_of(w), vec![(a, summary("me"))]);
}

#[test]
fn an_exit_to_a_process_on_its_way_out_changes_nothing() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, _kh) = node(&s, &log);
    let go = Arc::new(AtomicBool::new(false));
    // `t` runs its last step (it finishes) while the exit reaches it.
    let started = Arc::new(AtomicBool::new(false));
    run(
        &s,
        t,
        vec![Op::FinishWhen(Arc::clone(&started), Arc::clone(&go))],
    );
    wait_until("its last step to start", || started.load(Ordering::SeqCst));
    run(
        &s,
        k,
        vec![Op::Monitor(t), Op::Kill(t), Op::SetNext(Arc::clone(&go))],
    );
    assert_eq!(joined(th), Ok(()), "it ended as it was ending");
    wait_until("the Down", || !log.downs_of(k).is_empty());
    assert_eq!(log.downs_of(k), vec![(t, ExitReason::Done)]);
}

/// Tiny deterministic generator (xorshift), seeded per round.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn exits_racing_ends_terminates_and_other_exits_end_each_process_exactly_once() {
    let rounds = if cfg!(miri) { 2 } else { 60 };
    let per_round = if cfg!(miri) { 3 } else { 12 };
    for round in 0..rounds {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (round + 1));
        let (s, held) = scheduler(2);
        let log = Arc::new(Log::default());
        let (watcher, wh) = node(&s, &log);
        let (killer, kh) = node(&s, &log);
        let mut targets = Vec::new();
        for _ in 0..per_round {
            let (t, th) = node(&s, &log);
            let mode = match rng.below(4) {
                0 => vec![],                                      // idle
                1 => vec![Op::Wait],                              // in a command
                2 => vec![Op::Spin],                              // always running or queued
                _ => vec![Op::Trap(rng.below(2) == 0), Op::Spin], // trapping, spinning
            };
            run(&s, t, mode);
            targets.push((t, th));
        }
        let pids: Vec<Pid> = targets.iter().map(|(t, _)| *t).collect();
        run(&s, watcher, pids.iter().map(|&t| Op::Monitor(t)).collect());
        // The killer exits and kills them; an outside thread terminates
        // them; some end by themselves; all at once.
        let mut exits = Vec::new();
        for &t in &pids {
            exits.push(match rng.below(3) {
                0 => Op::Kill(t),
                1 => Op::Exit(t, summary("x")),
                _ => Op::Exit(t, ExitReason::Shutdown),
            });
        }
        let finishing: Vec<Pid> = pids.iter().copied().filter(|_| rng.below(3) == 0).collect();
        let terminating: Vec<Pid> = pids.iter().copied().filter(|_| rng.below(3) == 0).collect();
        thread::scope(|scope| {
            scope.spawn(|| run(&s, killer, exits));
            scope.spawn(|| {
                for &t in &finishing {
                    let _ = s.send(t, Msg::Script(vec![Op::Finish]));
                }
            });
            scope.spawn(|| {
                for &t in &terminating {
                    let _ = s.terminate(t);
                }
            });
        });
        // Every target was sent an untrappable kill or an exit; the ones
        // that trap an exit are ended here.
        for &t in &pids {
            let _ = s.terminate(t);
        }
        for (t, th) in targets {
            let outcome = joined(th);
            assert!(
                matches!(outcome, Ok(()) | Err(ProcessError::Terminated)),
                "round {round}: {t}: {outcome:?}"
            );
            assert_eq!(log.closes(t), 1, "round {round}: {t} closed once");
        }
        wait_until("a Down per target", || {
            log.downs_of(watcher).len() >= pids.len()
        });
        let downs = log.downs_of(watcher);
        for &t in &pids {
            let told: Vec<_> = downs.iter().filter(|(about, _)| *about == t).collect();
            assert_eq!(told.len(), 1, "round {round}: {t} told once: {downs:?}");
        }
        drop(held.lock().drain(..).collect::<Vec<_>>());
        run(&s, watcher, vec![Op::Finish]);
        run(&s, killer, vec![Op::Finish]);
        assert_eq!(joined(wh), Ok(()));
        assert_eq!(joined(kh), Ok(()));
    }
}

#[test]
fn exits_racing_a_shutdown_close_each_process_once() {
    let rounds = if cfg!(miri) { 1 } else { 12 };
    for round in 0..rounds {
        let (s, _held) = scheduler(2);
        let log = Arc::new(Log::default());
        let mut pids = Vec::new();
        for i in 0..8 {
            let (t, _th) = node(&s, &log);
            run(
                &s,
                t,
                if i % 2 == 0 {
                    vec![Op::Spin]
                } else {
                    vec![Op::Wait]
                },
            );
            pids.push(t);
        }
        let (k, _kh) = node(&s, &log);
        let ops = pids.iter().map(|&t| Op::Kill(t)).collect();
        thread::scope(|scope| {
            scope.spawn(|| {
                let _ = s.send(k, Msg::Script(ops));
            });
            scope.spawn(|| {
                let report = s.shutdown(Duration::from_millis(200));
                assert_eq!(s.live(), 0, "round {round}: {report:?}");
            });
        });
        for &t in &pids {
            assert_eq!(log.closes(t), 1, "round {round}: {t}");
        }
        assert_eq!(log.closes(k), 1);
    }
}
