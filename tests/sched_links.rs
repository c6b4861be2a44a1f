//! Monitors and links (`src/sched/links.rs`): a `Down` comes exactly once
//! per monitor, with the right reason, at once for a process already gone,
//! never after a `demonitor`'s step, and never twice when the end races the
//! monitor; a link chain dies from its head; a trapping process survives
//! and sees each exit; churn leaves no entries; a panic in a monitoring
//! step with `Down`s pending wedges nothing.
//!
//! ```text
//! cargo test --test sched_links
//! cargo test --release --test sched_links
//! ```

mod common;
use common::wait_until;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use stepsched::process::state::Lifecycle;
use stepsched::process::{
    Event, ExitReason, NoCommand, Pid, Process, ProcessError, Status, StepOutput,
};
use stepsched::sched::{JoinHandle, Scheduler};

/// What the test asks a node to do.
#[derive(Debug, Clone)]
enum Msg {
    Monitor(Pid),
    Demonitor(Pid),
    Link(Pid),
    Trap(bool),
    /// Monitor and demonitor `.0`, `.1` times in this step (each pair
    /// cancels out before it is sent: `apply_links`).
    Churn(Pid, u32),
    /// Monitor `.0` and `.1`, then demonitor both, `.2` times in this step
    /// (interleaved, so each request is sent).
    ChurnTwo(Pid, Pid, u32),
    /// In one step: link `.0`, monitor `.1`, monitor `.0`, demonitor
    /// `.1`, demonitor `.0`, monitor `.0` (the requests to each target go
    /// out together, in this order: `send_requests`); then a message to
    /// `.1`, which reaches it after the requests.
    Interleaved(Pid, Pid),
    Finish,
    Fail,
    Panic,
    /// Spawn a child that fails at once, and monitor it in the same step.
    SpawnAndMonitor,
    /// Panic on the next `Down`.
    PanicOnDown,
    /// End this step waiting for a completion (`Status::Wait`: Blocked),
    /// which only completions (a `Down` is one) wake.
    Wait,
    /// Send `.0` the notes 0, 1, ... (`.1` of them), then finish.
    NotesThenFinish(Pid, u32),
    /// A note, logged in `Log::order` by its receiver.
    Note(u32),
}

/// Every `Down` any node saw: (watcher, target, reason), and `Down`s that
/// came after their target was demonitored (must stay empty).
#[derive(Default)]
struct Log {
    downs: Mutex<Vec<(Pid, Pid, ExitReason)>>,
    after_demonitor: Mutex<Vec<(Pid, Pid)>>,
    /// Notes and `Down`s in the order each receiver's steps saw them:
    /// (receiver, `Some(note)` or `None` for a `Down`).
    order: Mutex<Vec<(Pid, Option<u32>)>>,
}

impl Log {
    fn downs_of(&self, watcher: Pid) -> Vec<(Pid, ExitReason)> {
        let downs = self.downs.lock().unwrap();
        (downs.iter())
            .filter(|(w, ..)| *w == watcher)
            .map(|(_, t, r)| (*t, r.clone()))
            .collect()
    }

    fn count(&self) -> usize {
        self.downs.lock().unwrap().len()
    }
}

struct Node {
    log: Arc<Log>,
    /// Targets demonitored in an earlier step: no `Down` may name them.
    demonitored: HashSet<Pid>,
    /// Demonitored in this step: a `Down` collected with the step's
    /// events may still come in it (the promise starts after the step).
    demonitoring: Vec<Pid>,
    panic_on_down: bool,
    /// A child of `SpawnAndMonitor`: fails in its first step.
    fail_first: bool,
}

impl Node {
    fn new(log: &Arc<Log>) -> Self {
        Node {
            log: Arc::clone(log),
            demonitored: HashSet::new(),
            demonitoring: Vec::new(),
            panic_on_down: false,
            fail_first: false,
        }
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, method: &str, _: ()) -> Result<(), String> {
        self.fail_first = method == "fail-first-step";
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let me = out.pid();
        if self.fail_first {
            return Err(format!("{me} failed at once"));
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Monitor(t)) => {
                    self.demonitored.remove(&t);
                    self.demonitoring.retain(|d| *d != t);
                    out.monitor(t);
                }
                Event::Message(Msg::Demonitor(t)) => {
                    self.demonitoring.push(t);
                    out.demonitor(t);
                }
                Event::Message(Msg::Link(t)) => out.link(t),
                Event::Message(Msg::Trap(on)) => out.trap_exits(on),
                Event::Message(Msg::Churn(t, n)) => {
                    for _ in 0..n {
                        out.monitor(t);
                        out.demonitor(t);
                    }
                }
                Event::Message(Msg::ChurnTwo(t, u, n)) => {
                    for _ in 0..n {
                        out.monitor(t);
                        out.monitor(u);
                        out.demonitor(t);
                        out.demonitor(u);
                    }
                }
                Event::Message(Msg::Interleaved(t, u)) => {
                    out.link(t);
                    out.monitor(u);
                    out.monitor(t);
                    out.demonitor(u);
                    out.demonitor(t);
                    out.monitor(t);
                    out.send(u, Msg::Trap(false));
                }
                Event::Message(Msg::Finish) => out.done(()),
                Event::Message(Msg::Fail) => return Err(format!("{me} failed on purpose")),
                Event::Message(Msg::Panic) => panic!("{me} panicked on purpose"),
                Event::Message(Msg::SpawnAndMonitor) => {
                    let child = out
                        .spawn(Node::new(&self.log), "fail-first-step", ())
                        .expect("spawned");
                    out.monitor(child);
                }
                Event::Message(Msg::PanicOnDown) => self.panic_on_down = true,
                Event::Message(Msg::Wait) => out.set_status(Status::Wait),
                Event::Message(Msg::NotesThenFinish(to, n)) => {
                    (0..n).for_each(|i| out.send(to, Msg::Note(i)));
                    out.done(());
                }
                Event::Message(Msg::Note(i)) => self.log.order.lock().unwrap().push((me, Some(i))),
                Event::Cancel(_) => out.done(()),
                Event::Down { pid, reason } => {
                    self.log.order.lock().unwrap().push((me, None));
                    if self.demonitored.contains(&pid) {
                        self.log.after_demonitor.lock().unwrap().push((me, pid));
                    }
                    self.log.downs.lock().unwrap().push((me, pid, reason));
                    if self.panic_on_down {
                        panic!("{me} panicked on a Down");
                    }
                }
                _ => {}
            }
        }
        self.demonitored.extend(self.demonitoring.drain(..));
        if out.status().is_none() {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

fn scheduler() -> Scheduler<Node> {
    Scheduler::builder().workers(2).build().unwrap()
}

fn spawn(s: &Scheduler<Node>, log: &Arc<Log>) -> JoinHandle<Node> {
    s.submit_joinable(Node::new(log), "run", ()).ok().unwrap()
}

/// The PID of a process that has ended.
fn ended(s: &Scheduler<Node>, log: &Arc<Log>) -> Pid {
    let gone = spawn(s, log);
    let pid = gone.pid();
    s.send(pid, Msg::Finish).unwrap();
    assert!(gone.join().is_ok());
    pid
}

fn info(s: &Scheduler<Node>, pid: Pid) -> Option<stepsched::sched::ProcessInfo> {
    s.processes().into_iter().find(|p| p.pid == pid)
}

/// A watcher `w` monitoring a target `t`, and then Blocked (waiting for a
/// completion, which a `Down` is).
fn blocked_watcher(s: &Scheduler<Node>, log: &Arc<Log>) -> (JoinHandle<Node>, JoinHandle<Node>) {
    let (w, t) = (spawn(s, log), spawn(s, log));
    s.send(w.pid(), Msg::Monitor(t.pid())).unwrap();
    wait_until("the monitor is registered", || {
        info(s, t.pid()).is_some_and(|i| i.monitored_by == 1)
    });
    s.send(w.pid(), Msg::Wait).unwrap();
    wait_until("the watcher waits", || {
        info(s, w.pid()).is_some_and(|i| i.state == Lifecycle::Blocked)
    });
    (w, t)
}

#[test]
fn a_monitor_of_an_ended_or_unknown_pid_gives_noproc_at_once() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let gone_pid = ended(&s, &log);
    let w = spawn(&s, &log);
    let w_pid = w.pid();
    let never = Pid::from_raw(0x0000_0007_00ff_ffff);
    s.send(w.pid(), Msg::Monitor(gone_pid)).unwrap();
    s.send(w.pid(), Msg::Monitor(never)).unwrap();
    wait_until("two Downs", || log.count() == 2);
    // Linking a gone process is an abnormal exit (NoProc): it ends w.
    s.send(w.pid(), Msg::Link(never)).unwrap();
    let outcome = w.join();
    assert!(
        matches!(outcome, Err(ProcessError::Terminated)),
        "{outcome:?}"
    );
    let mut downs = log.downs_of(w_pid);
    downs.sort_by_key(|(p, _)| p.into_raw());
    assert_eq!(
        downs,
        vec![(gone_pid, ExitReason::NoProc), (never, ExitReason::NoProc)]
    );
}

#[test]
fn each_way_of_ending_is_told_with_its_reason() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let w = spawn(&s, &log);
    let targets: Vec<JoinHandle<Node>> = (0..4).map(|_| spawn(&s, &log)).collect();
    for t in &targets {
        s.send(w.pid(), Msg::Monitor(t.pid())).unwrap();
    }
    wait_until("the monitors are registered", || {
        targets
            .iter()
            .all(|t| info(&s, t.pid()).is_some_and(|i| i.monitored_by == 1))
    });
    assert_eq!(info(&s, w.pid()).unwrap().monitors, 4);
    s.send(targets[0].pid(), Msg::Finish).unwrap();
    s.send(targets[1].pid(), Msg::Fail).unwrap();
    s.send(targets[2].pid(), Msg::Panic).unwrap();
    s.terminate(targets[3].pid()).unwrap();
    wait_until("four Downs", || log.count() == 4);
    let mut got = log.downs_of(w.pid());
    got.sort_by_key(|(p, _)| p.into_raw());
    let reasons: Vec<String> = got.iter().map(|(_, r)| format!("{r:?}")).collect();
    let f = targets[1].pid();
    let p = targets[2].pid();
    assert_eq!(
        reasons,
        vec![
            "Done".to_owned(),
            format!("Failed(\"\\\"{f} failed on purpose\\\"\")"),
            format!("Panicked(\"{p} panicked on purpose\")"),
            "Terminated".to_owned(),
        ]
    );
    assert_eq!(
        info(&s, w.pid()).unwrap().monitors,
        0,
        "each Down ends its monitor"
    );
}

/// A watcher waiting for a completion (Blocked) is woken by its `Down`, as
/// by any completion (a worker claims it and hands the `Down` over, or
/// pushes it and notifies); a monitor request, which wakes only an idle
/// target, leaves a Blocked one asleep, and its end still tells the
/// watcher (its `close` drains the request).
#[test]
fn a_blocked_watcher_is_woken_by_its_down_and_a_blocked_target_is_not_by_a_request() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let (w, t) = blocked_watcher(&s, &log);
    let blocked = |p: Pid| info(&s, p).is_some_and(|i| i.state == Lifecycle::Blocked);
    s.send(t.pid(), Msg::Finish).unwrap();
    wait_until("the Down", || log.count() == 1);
    assert_eq!(log.downs_of(w.pid()), vec![(t.pid(), ExitReason::Done)]);

    // A Blocked target: a second watcher's request does not wake it.
    let v = spawn(&s, &log);
    let u = spawn(&s, &log);
    s.send(u.pid(), Msg::Wait).unwrap();
    wait_until("the target waits", || blocked(u.pid()));
    let steps = info(&s, u.pid()).unwrap().steps;
    s.send(v.pid(), Msg::Monitor(u.pid())).unwrap();
    wait_until("the watcher has sent its request", || {
        info(&s, v.pid()).is_some_and(|i| i.monitors == 1)
    });
    // A wrong wake would step it within these 20 ms; a slow machine can
    // only hide one (the check then passes), never fail a right run.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let now = info(&s, u.pid()).unwrap();
    assert_eq!((now.state, now.steps), (Lifecycle::Blocked, steps));
    s.terminate(u.pid()).unwrap();
    wait_until("its Down", || log.count() == 2);
    assert_eq!(
        log.downs_of(v.pid()),
        vec![(u.pid(), ExitReason::Terminated)]
    );
}

/// A Blocked watcher holds messages its target sent before it ended
/// (messages do not wake it); the target's `Down` claims it, and comes
/// after every one of them, also when the watcher's steps take them two
/// at a time (`max_events_per_step(2)`): the handed-over `Down` waits for
/// the step that drains the mailbox, as it would behind them in it.
#[test]
fn a_down_handed_to_a_blocked_watcher_comes_after_its_targets_messages() {
    let s: Scheduler<Node> = Scheduler::builder()
        .workers(2)
        .max_events_per_step(2)
        .build()
        .unwrap();
    let log = Arc::new(Log::default());
    let (w, t) = blocked_watcher(&s, &log);
    s.send(t.pid(), Msg::NotesThenFinish(w.pid(), 5)).unwrap();
    wait_until("the Down", || log.count() == 1);
    let order: Vec<Option<u32>> = (log.order.lock().unwrap().iter())
        .filter(|(to, _)| *to == w.pid())
        .map(|(_, e)| *e)
        .collect();
    assert_eq!(order, [Some(0), Some(1), Some(2), Some(3), Some(4), None]);
}

/// One step's requests to two targets, interleaved: each target gets its
/// own in the step's order (they are sent per target, under one notify
/// each), so `t` ends linked and watched once, `u` unwatched; out of order
/// `t` could be watched twice (two monitors after the demonitor) or not at
/// all.
#[test]
fn a_steps_requests_reach_each_target_in_order() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let w = spawn(&s, &log);
    let (t, u) = (spawn(&s, &log), spawn(&s, &log));
    let u_steps = |s: &Scheduler<Node>| info(s, u.pid()).map_or(0, |i| i.steps);
    wait_until("u's first step", || u_steps(&s) == 1);
    s.send(w.pid(), Msg::Interleaved(t.pid(), u.pid())).unwrap();
    wait_until("t registers the link and the monitor", || {
        info(&s, t.pid()).is_some_and(|i| i.links == 1 && i.monitored_by >= 1)
    });
    // `u` stepped for the message sent after its requests: it had
    // registered both by then (signals are collected before a step).
    wait_until("u's step for the message", || u_steps(&s) == 2);
    assert_eq!(info(&s, u.pid()).unwrap().monitored_by, 0);
    let (ti, wi) = (info(&s, t.pid()).unwrap(), info(&s, w.pid()).unwrap());
    assert_eq!((ti.monitored_by, ti.links), (1, 1));
    assert_eq!((wi.monitors, wi.links), (1, 1));
    s.send(t.pid(), Msg::Finish).unwrap();
    wait_until("the Down", || log.count() == 1);
    assert_eq!(log.downs_of(w.pid()), vec![(t.pid(), ExitReason::Done)]);
    s.send(w.pid(), Msg::Finish).unwrap();
    s.send(u.pid(), Msg::Finish).unwrap();
    assert!(w.join().is_ok(), "a normal end of a link ends no one");
    assert!(u.join().is_ok());
}

#[test]
fn a_monitor_set_with_the_spawn_sees_the_childs_real_end() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let parent = spawn(&s, &log);
    for _ in 0..50 {
        s.send(parent.pid(), Msg::SpawnAndMonitor).unwrap();
    }
    wait_until("fifty Downs", || log.count() == 50);
    for (_, reason) in log.downs_of(parent.pid()) {
        assert!(matches!(reason, ExitReason::Failed(_)), "{reason:?}");
    }
}

/// A chain of 1,000; of 50 under Miri (1,000 took it 100 s under Stacked
/// Borrows, over 6 min under Tree Borrows): the exit still travels link by
/// link, through steps on both workers.
#[test]
fn a_link_chain_dies_from_its_head() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let n = if cfg!(miri) { 50 } else { 1000 };
    let chain: Vec<JoinHandle<Node>> = (0..n).map(|_| spawn(&s, &log)).collect();
    for pair in chain.windows(2) {
        s.send(pair[1].pid(), Msg::Link(pair[0].pid())).unwrap();
    }
    wait_until("every link is set", || {
        let dump = s.processes();
        dump.iter().map(|p| p.links as usize).sum::<usize>() == 2 * (n - 1)
    });
    s.send(chain[0].pid(), Msg::Fail).unwrap();
    let mut outcomes = chain.into_iter().map(JoinHandle::join);
    assert!(matches!(
        outcomes.next(),
        Some(Err(ProcessError::Failed(_)))
    ));
    for outcome in outcomes {
        assert!(
            matches!(outcome, Err(ProcessError::Terminated)),
            "{outcome:?}"
        );
    }
    assert_eq!(s.live(), 0);
}

#[test]
fn a_trapping_process_survives_and_sees_each_exit() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let trapper = spawn(&s, &log);
    s.send(trapper.pid(), Msg::Trap(true)).unwrap();
    let linked: Vec<JoinHandle<Node>> = (0..10).map(|_| spawn(&s, &log)).collect();
    for l in &linked {
        s.send(trapper.pid(), Msg::Link(l.pid())).unwrap();
    }
    wait_until("the links", || info(&s, trapper.pid()).unwrap().links == 10);
    for (i, l) in linked.iter().enumerate() {
        let end = if i % 2 == 0 { Msg::Fail } else { Msg::Finish };
        s.send(l.pid(), end).unwrap();
    }
    wait_until("ten Downs", || log.downs_of(trapper.pid()).len() == 10);
    let failed = (log.downs_of(trapper.pid()).iter())
        .filter(|(_, r)| matches!(r, ExitReason::Failed(_)))
        .count();
    assert_eq!(failed, 5);
    assert_eq!(info(&s, trapper.pid()).unwrap().links, 0);
    s.send(trapper.pid(), Msg::Finish).unwrap();
    assert!(trapper.join().is_ok(), "the trapper lived on");
}

#[test]
fn monitor_demonitor_churn_leaves_no_entries() {
    let s: Scheduler<Node> = Scheduler::builder()
        .workers(2)
        .count_queued_events(true)
        .build()
        .unwrap();
    let log = Arc::new(Log::default());
    let w = spawn(&s, &log);
    let t = spawn(&s, &log);
    let u = spawn(&s, &log);
    let rounds = if cfg!(miri) { 4 } else { 1000 };
    for _ in 0..rounds {
        s.send(w.pid(), Msg::Churn(t.pid(), 50)).unwrap();
        s.send(w.pid(), Msg::ChurnTwo(t.pid(), u.pid(), 25))
            .unwrap();
    }
    wait_until("the churn is applied", || {
        let wi = info(&s, w.pid()).unwrap();
        let (ti, ui) = (info(&s, t.pid()).unwrap(), info(&s, u.pid()).unwrap());
        // w's requests are all sent once it is idle with its mailbox
        // empty; t and u have registered them once idle with theirs empty.
        let idle = |i: &stepsched::sched::ProcessInfo| {
            i.state == Lifecycle::Idle && i.queued == Some(0) && i.steps > 0
        };
        idle(&wi)
            && idle(&ti)
            && idle(&ui)
            && wi.monitors == 0
            && ti.monitored_by == 0
            && ui.monitored_by == 0
    });
    for p in [t, u, w] {
        s.send(p.pid(), Msg::Finish).unwrap();
        assert!(p.join().is_ok());
    }
    assert_eq!(log.count(), 0, "no Down after a demonitor");
}

/// A same-step pair on a target already monitored from an earlier step
/// still ends that monitor: the `monitor` changes nothing (one monitor per
/// pair of processes), so the `demonitor` goes out and no `Down` comes.
/// (Cancelling the pair as a whole would leave the old monitor in place.)
#[test]
fn a_same_step_pair_on_a_watched_target_still_demonitors_it() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let w = spawn(&s, &log);
    let w_pid = w.pid();
    let t = spawn(&s, &log);
    let t_pid = t.pid();
    s.send(w_pid, Msg::Monitor(t_pid)).unwrap();
    wait_until("t is watched", || {
        info(&s, t_pid).is_some_and(|i| i.monitored_by == 1)
    });
    s.send(w_pid, Msg::Churn(t_pid, 1)).unwrap();
    wait_until("t is no longer watched", || {
        info(&s, t_pid).is_some_and(|i| i.monitored_by == 0)
    });
    s.send(t_pid, Msg::Finish).unwrap();
    assert!(t.join().is_ok());
    s.send(w_pid, Msg::Finish).unwrap();
    assert!(w.join().is_ok());
    assert_eq!(log.downs_of(w_pid), vec![]);
}

/// A `monitor` and `demonitor` of one target in one step cancel out
/// before they are sent: no `Down` from the target's end, or for a target
/// already gone (whose `NoProc` would otherwise come); a monitor set again
/// after such a pair, in the same step, is told of the end once.
#[test]
fn a_monitor_and_demonitor_in_one_step_leave_nothing_behind() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let gone_pid = ended(&s, &log);
    let w = spawn(&s, &log);
    let w_pid = w.pid();
    let t = spawn(&s, &log);
    s.send(w.pid(), Msg::Churn(gone_pid, 3)).unwrap();
    s.send(w.pid(), Msg::Churn(t.pid(), 3)).unwrap();
    wait_until("w has stepped", || info(&s, w.pid()).unwrap().steps >= 1);
    assert_eq!(info(&s, t.pid()).unwrap().monitored_by, 0);
    s.send(t.pid(), Msg::Fail).unwrap();
    assert!(t.join().is_err());
    let u = spawn(&s, &log);
    let u_pid = u.pid();
    s.send(w.pid(), Msg::Churn(u_pid, 2)).unwrap();
    s.send(w.pid(), Msg::Monitor(u_pid)).unwrap();
    wait_until("u is watched", || {
        info(&s, u_pid).is_some_and(|i| i.monitored_by == 1)
    });
    s.send(u_pid, Msg::Finish).unwrap();
    assert!(u.join().is_ok());
    wait_until("u's Down", || log.count() == 1);
    s.send(w.pid(), Msg::Finish).unwrap();
    assert!(w.join().is_ok());
    assert_eq!(log.downs_of(w_pid), vec![(u_pid, ExitReason::Done)]);
}

#[test]
fn a_monitoring_step_that_panics_with_downs_pending_wedges_nothing() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let w = spawn(&s, &log);
    let boss = spawn(&s, &log);
    s.send(boss.pid(), Msg::Monitor(w.pid())).unwrap();
    let targets: Vec<JoinHandle<Node>> = (0..50).map(|_| spawn(&s, &log)).collect();
    for t in &targets {
        s.send(w.pid(), Msg::Monitor(t.pid())).unwrap();
    }
    s.send(w.pid(), Msg::PanicOnDown).unwrap();
    wait_until("w monitors all", || {
        info(&s, w.pid()).unwrap().monitors == 50
    });
    for t in &targets {
        s.send(t.pid(), Msg::Finish).unwrap();
    }
    assert!(matches!(w.join(), Err(ProcessError::Panicked(_))));
    for t in targets {
        assert!(t.join().is_ok());
    }
    wait_until("boss is told", || !log.downs_of(boss.pid()).is_empty());
    let downs = log.downs_of(boss.pid());
    assert!(
        matches!(downs[..], [(_, ExitReason::Panicked(_))]),
        "{downs:?}"
    );
    // The scheduler goes on.
    let next = spawn(&s, &log);
    s.send(next.pid(), Msg::Finish).unwrap();
    assert!(next.join().is_ok());
    let report = s.shutdown(common::ms(10_000));
    assert_eq!(report.forced, 0, "{report:?}");
}

/// Monitors set while their targets end, from two threads and two
/// workers: each yields exactly one `Down` (its reason or `NoProc`).
/// Demonitors racing ends: no `Down` after the demonitor's step.
#[test]
fn racing_ends_yield_exactly_one_down_and_none_after_a_demonitor() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let n = if cfg!(miri) { 20 } else { 2000 };
    let watchers: Vec<JoinHandle<Node>> = (0..8).map(|_| spawn(&s, &log)).collect();
    let targets: Vec<JoinHandle<Node>> = (0..n).map(|_| spawn(&s, &log)).collect();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for (i, t) in targets.iter().enumerate() {
                let w = watchers[i % 8].pid();
                s.send(w, Msg::Monitor(t.pid())).unwrap();
                if i % 3 == 0 {
                    s.send(w, Msg::Demonitor(t.pid())).unwrap();
                }
            }
        });
        scope.spawn(|| {
            for t in &targets {
                s.send(t.pid(), Msg::Finish).unwrap();
            }
        });
    });
    // A demonitored target may still be told, if its `Down` came in or
    // before the demonitor's step; a kept one must be, once.
    let kept: HashSet<Pid> = (targets.iter().enumerate())
        .filter(|(i, _)| i % 3 != 0)
        .map(|(_, t)| t.pid())
        .collect();
    let told = || {
        let downs = log.downs.lock().unwrap();
        downs.iter().filter(|(_, t, _)| kept.contains(t)).count()
    };
    wait_until("a Down per kept monitor", || told() >= kept.len());
    for t in targets {
        assert!(t.join().is_ok());
    }
    for w in &watchers {
        s.send(w.pid(), Msg::Finish).unwrap();
    }
    for w in watchers {
        assert!(w.join().is_ok());
    }
    // Every process has ended: nothing more can come.
    let downs = log.downs.lock().unwrap();
    let mut seen = HashSet::new();
    for (w, t, reason) in downs.iter() {
        assert!(seen.insert((*w, *t)), "two Downs for {t} at {w}");
        assert!(
            matches!(reason, ExitReason::Done | ExitReason::NoProc),
            "{reason:?}"
        );
    }
    drop(downs);
    assert_eq!(told(), kept.len());
    assert!(log.after_demonitor.lock().unwrap().is_empty());
}
