//! Monitors and links (`src/sched/links/mod.rs`): a `Down` comes exactly once
//! per monitor, with the right reason, at once for a process already gone,
//! never after a `demonitor`'s step, and never twice when the end races the
//! monitor; a link chain dies from its head; a trapping process survives
//! and sees each exit, also of processes that linked it while it was
//! Blocked; a process is told with its own reason, the one its joiner
//! gets; churn leaves no entries; a panic in a monitoring step with
//! `Down`s pending wedges nothing.
//!
//! ```text
//! cargo test --test sched_links
//! cargo test --release --test sched_links
//! ```

mod churn;
mod downs;
mod links;

#[path = "../common/mod.rs"]
mod common;
use common::{joined, wait_until};

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use stepsched::process::Lifecycle;
use stepsched::process::{
    Event, ExitReason, NoCommand, Pid, Process, ProcessError, Status, StepOutput, Summary,
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
    /// Spin in this step until the flag is set, then finish: a process
    /// that is Running when requests reach it, and ends without another
    /// step (its `close` drains them).
    FinishWhen(Arc<AtomicBool>),
    /// As `FinishWhen`, failing instead (`Err` from the step).
    FailWhen(Arc<AtomicBool>),
    /// As `FinishWhen`, ending the step `Idle` instead.
    IdleWhen(Arc<AtomicBool>),
    /// Monitor `.0`, and set the flag in the next step (this one returns
    /// `Continue`): by then the request has reached `.0`'s mailbox, sent
    /// after this step.
    MonitorThenSet(Pid, Arc<AtomicBool>),
    /// From the next step on, end at a step that brings a `Down`, leaving
    /// every event of that step in its vector (its `close` reports them).
    LeaveOnDown,
    /// Spawn a child that uses no monitor or link, and leave its PID here.
    SpawnPlain(Arc<Mutex<Option<Pid>>>),
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
    /// To set in the next step (`MonitorThenSet`).
    set_next: Option<Arc<AtomicBool>>,
    /// `LeaveOnDown`.
    leave_on_down: bool,
}

impl Node {
    fn new(log: &Arc<Log>) -> Self {
        Node {
            log: Arc::clone(log),
            demonitored: HashSet::new(),
            demonitoring: Vec::new(),
            panic_on_down: false,
            fail_first: false,
            set_next: None,
            leave_on_down: false,
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
        if let Some(flag) = self.set_next.take() {
            flag.store(true, Ordering::Release);
        }
        if self.leave_on_down && events.iter().any(|e| matches!(e, Event::Down { .. })) {
            out.done(());
            return Ok(());
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
                Event::Message(Msg::FinishWhen(flag)) => {
                    spin_until(&flag, me);
                    out.done(());
                }
                Event::Message(Msg::IdleWhen(flag)) => spin_until(&flag, me),
                Event::Message(Msg::FailWhen(flag)) => {
                    spin_until(&flag, me);
                    return Err(format!("{me} failed on purpose"));
                }
                Event::Message(Msg::LeaveOnDown) => self.leave_on_down = true,
                Event::Message(Msg::SpawnPlain(into)) => {
                    let child = out.spawn(Node::new(&self.log), "run", ()).expect("spawned");
                    *into.lock().unwrap() = Some(child);
                }
                Event::Message(Msg::MonitorThenSet(t, flag)) => {
                    out.monitor(t);
                    self.set_next = Some(flag);
                    out.set_status(Status::Continue);
                }
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

/// Spins in `me`'s step until `flag` is set (`FinishWhen` and its kin).
fn spin_until(flag: &AtomicBool, me: Pid) {
    let deadline = std::time::Instant::now() + common::ms(60_000);
    while !flag.load(Ordering::Acquire) {
        // A liveness guard: the test then fails on the reason.
        assert!(std::time::Instant::now() < deadline, "{me}: never set");
        std::thread::yield_now();
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
    assert!(joined(gone).is_ok());
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
