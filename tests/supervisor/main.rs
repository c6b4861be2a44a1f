//! Proves `stepsched::supervisor`: each strategy restarts the children it
//! names; restart types; the restart intensity, past which the children
//! are stopped in reverse start order and the supervisor fails; a child's
//! shutdown time, then its kill; children killed in every phase (a failing
//! init, waiting in a command, idle, mid-restart, during the supervisor's
//! own shutdown); a two-level tree whose grandchild's failures escalate;
//! and, over many seeded rounds of kills from outside threads, that a
//! restart never runs two incarnations of one child at once.
//! `outside.rs`: a supervisor driven from outside its tree (its children
//! found by name, an ordered stop by `Scheduler::exit`).
//!
//! ```text
//! cargo test --test supervisor
//! cargo test --release --test supervisor
//! ```

#[path = "../common/mod.rs"]
mod common;
use common::{joined, wait_until, Held};

mod outside;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{
    Command, Event, ExitReason, Kind, Pid, ProcessError, StepOutput, Summary,
};
use stepsched::sched::Scheduler;
use stepsched::supervisor::{
    ChildSpec, Restart, Shutdown, Strategy, Supervisor, SupervisorSpec, FAILED_TO_START_CHILD,
    REACHED_MAX_RESTART_INTENSITY,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Idle,
    /// Waits in a held command.
    Wait,
    /// Traps exits, and finishes on its supervisor's `Shutdown`.
    TrapAndEnd,
    /// Traps exits and ignores them: only a kill ends it.
    TrapAndIgnore,
    /// Fails at its first step.
    Doomed,
}

/// One child spec's incarnations, seen from the test.
struct Probe {
    name: &'static str,
    mode: Mode,
    /// Inits still to fail.
    fail_inits: AtomicUsize,
    starts: AtomicUsize,
    live: AtomicUsize,
    max_live: AtomicUsize,
    pid: Mutex<Option<Pid>>,
    /// `Shutdown` exits received (trapped).
    told: AtomicUsize,
    /// Names of closed children, in order, shared by all probes.
    closed: Arc<Mutex<Vec<&'static str>>>,
}

fn probe(name: &'static str, mode: Mode, closed: &Arc<Mutex<Vec<&'static str>>>) -> Arc<Probe> {
    Arc::new(Probe {
        name,
        mode,
        fail_inits: AtomicUsize::new(0),
        starts: AtomicUsize::new(0),
        live: AtomicUsize::new(0),
        max_live: AtomicUsize::new(0),
        pid: Mutex::new(None),
        told: AtomicUsize::new(0),
        closed: Arc::clone(closed),
    })
}

impl Probe {
    fn starts(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }
    fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
    fn pid(&self) -> Option<Pid> {
        *self.pid.lock().unwrap()
    }
    /// The PID of its incarnation number `n` (1-based), once it stepped.
    fn wait_pid(&self, n: usize) -> Pid {
        let mut pid = None;
        wait_until(&format!("{} incarnation {n}", self.name), || {
            pid = self.pid();
            self.starts() >= n && pid.is_some()
        });
        pid.unwrap()
    }
}

struct Worker {
    probe: Option<Arc<Probe>>,
    stepped: bool,
}

fn worker() -> Worker {
    Worker {
        probe: None,
        stepped: false,
    }
}

#[derive(Debug)]
enum Msg {
    Finish,
    Fail,
    /// To a `Stopper`: send this exit.
    Exit(Pid, ExitReason),
    /// To a `Stopper`: monitor this process.
    Monitor(Pid),
}

struct Hold;

impl Command for Hold {
    fn kind(&self) -> &'static str {
        "hold"
    }
}

impl Kind<Node> for Worker {
    type Input = Arc<Probe>;

    fn init(&mut self, probe: Arc<Probe>) -> Result<(), String> {
        let failing = probe.fail_inits.load(Ordering::SeqCst);
        if failing > 0 {
            probe.fail_inits.store(failing - 1, Ordering::SeqCst);
            return Err("init".into());
        }
        probe.starts.fetch_add(1, Ordering::SeqCst);
        let live = probe.live.fetch_add(1, Ordering::SeqCst) + 1;
        probe.max_live.fetch_max(live, Ordering::SeqCst);
        self.probe = Some(probe);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        let probe = self.probe.as_ref().expect("init");
        if !self.stepped {
            self.stepped = true;
            *probe.pid.lock().unwrap() = Some(out.pid());
            match probe.mode {
                Mode::Wait => out.yield_command(1, Hold),
                Mode::TrapAndEnd | Mode::TrapAndIgnore => out.trap_exits(true),
                Mode::Doomed => return Err("doomed".into()),
                Mode::Idle => {}
            }
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Finish) => out.done(()),
                Event::Message(Msg::Fail) => return Err("asked to".into()),
                Event::Down {
                    reason: ExitReason::Shutdown,
                    ..
                } => {
                    probe.told.fetch_add(1, Ordering::SeqCst);
                    if probe.mode == Mode::TrapAndEnd {
                        out.done(());
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Some(probe) = &self.probe {
            let mut pid = probe.pid.lock().unwrap();
            probe.live.fetch_sub(1, Ordering::SeqCst);
            *pid = None;
            probe.closed.lock().unwrap().push(probe.name);
        }
    }
}

/// Sends the exits it is told to, and records the `Down`s of what it
/// monitors.
struct Stopper {
    downs: Downs,
}

impl Kind<Node> for Stopper {
    type Input = ();

    fn init(&mut self, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Exit(pid, reason)) => out.exit(pid, reason),
                Event::Message(Msg::Monitor(pid)) => out.monitor(pid),
                Event::Down { pid, reason } => self.downs.lock().unwrap().push((pid, reason)),
                _ => {}
            }
        }
        Ok(())
    }
}

stepsched::kinds! {
    enum Node {
        Sup(Supervisor<Node>),
        Worker(Worker),
        Stopper(Stopper),
    }
    enum NodeInput;
    type Message = Msg;
    type Command = Hold;
    type Reply = ();
    type Output = ();
    type Error = String;
}

fn scheduler() -> (Scheduler<Node>, Held<Node>) {
    let held = Held::default();
    let s = Scheduler::builder()
        .workers(2)
        .handler("hold", held.handler())
        .build()
        .expect("scheduler");
    (s, held)
}

fn child(p: &Arc<Probe>) -> ChildSpec<Node> {
    let p = Arc::clone(p);
    ChildSpec::new(p.name, move || (worker(), Arc::clone(&p)))
}

fn closed_log() -> Arc<Mutex<Vec<&'static str>>> {
    Arc::default()
}

/// The `Down`s a `Stopper` records.
type Downs = Arc<Mutex<Vec<(Pid, ExitReason)>>>;

fn stopper(s: &Scheduler<Node>) -> (Pid, Downs) {
    let downs = Arc::default();
    let pid = s
        .submit_kind(
            Stopper {
                downs: Arc::clone(&downs),
            },
            (),
        )
        .expect("submit");
    (pid, downs)
}

/// Terminates child `p`'s current incarnation (number `n`) from outside.
fn kill_from_outside(s: &Scheduler<Node>, p: &Probe, n: usize) {
    let pid = p.wait_pid(n);
    s.terminate(pid).expect("a live child");
}

fn three(mode: Mode) -> (Arc<Mutex<Vec<&'static str>>>, [Arc<Probe>; 3]) {
    let log = closed_log();
    let probes = [
        probe("a", mode, &log),
        probe("b", mode, &log),
        probe("c", mode, &log),
    ];
    (log, probes)
}

fn spec(strategy: Strategy, probes: &[Arc<Probe>]) -> SupervisorSpec<Node> {
    let mut spec = SupervisorSpec::new(strategy).intensity(100, Duration::from_secs(60));
    for p in probes {
        spec = spec.child(child(p).shutdown(Shutdown::Timeout(Duration::from_secs(30))));
    }
    spec
}

fn starts(probes: &[Arc<Probe>]) -> Vec<usize> {
    probes.iter().map(|p| p.starts()).collect()
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    let (s, _held) = scheduler();
    let (_log, probes) = three(Mode::Idle);
    s.submit_kind(Supervisor::new(), spec(Strategy::OneForOne, &probes))
        .unwrap();
    kill_from_outside(&s, &probes[1], 1);
    probes[1].wait_pid(2);
    assert_eq!(starts(&probes), [1, 2, 1]);
}

#[test]
fn one_for_all_stops_the_others_in_reverse_order_and_restarts_all() {
    let (s, _held) = scheduler();
    let (log, probes) = three(Mode::Idle);
    s.submit_kind(Supervisor::new(), spec(Strategy::OneForAll, &probes))
        .unwrap();
    probes[2].wait_pid(1);
    kill_from_outside(&s, &probes[1], 1);
    for p in &probes {
        p.wait_pid(2);
    }
    assert_eq!(starts(&probes), [2, 2, 2]);
    assert_eq!(*log.lock().unwrap(), ["b", "c", "a"]);
}

#[test]
fn rest_for_one_restarts_the_failed_child_and_those_after_it() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let probes = [
        probe("a", Mode::Idle, &log),
        probe("b", Mode::Idle, &log),
        probe("c", Mode::Idle, &log),
        probe("d", Mode::Idle, &log),
    ];
    s.submit_kind(Supervisor::new(), spec(Strategy::RestForOne, &probes))
        .unwrap();
    probes[3].wait_pid(1);
    kill_from_outside(&s, &probes[1], 1);
    for p in &probes[1..] {
        p.wait_pid(2);
    }
    assert_eq!(starts(&probes), [1, 2, 2, 2]);
    assert_eq!(*log.lock().unwrap(), ["b", "d", "c"]);
}

#[test]
fn transient_children_restart_only_after_an_abnormal_end_and_temporary_never() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let transient = probe("transient", Mode::Idle, &log);
    let temporary = probe("temporary", Mode::Idle, &log);
    let permanent = probe("permanent", Mode::Idle, &log);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(child(&transient).restart(Restart::Transient))
        .child(child(&temporary).restart(Restart::Temporary))
        .child(child(&permanent));
    s.submit_kind(Supervisor::new(), spec).unwrap();
    s.send(transient.wait_pid(1), Msg::Fail).unwrap();
    s.send(transient.wait_pid(2), Msg::Finish).unwrap();
    s.send(temporary.wait_pid(1), Msg::Fail).unwrap();
    wait_until("three ends", || log.lock().unwrap().len() == 3);
    s.send(permanent.wait_pid(1), Msg::Finish).unwrap();
    permanent.wait_pid(2);
    // A restart of the others would have come with the permanent
    // child's, which ended after them.
    assert_eq!(transient.starts(), 2, "restarted after the failure only");
    assert_eq!(temporary.starts(), 1, "never restarted");
    assert_eq!((transient.live(), temporary.live()), (0, 0));
}

#[test]
fn past_its_intensity_a_supervisor_stops_its_children_in_reverse_order_and_fails() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let a = probe("a", Mode::Idle, &log);
    let b = probe("b", Mode::TrapAndEnd, &log);
    let doomed = probe("doomed", Mode::Doomed, &log);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(2, Duration::from_secs(60))
        .child(child(&a))
        .child(child(&b))
        .child(child(&doomed));
    let (watcher, downs) = stopper(&s);
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    s.send(watcher, Msg::Monitor(sup.pid())).unwrap();
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    assert_eq!(doomed.starts(), 3, "started, then restarted twice");
    assert_eq!(
        *log.lock().unwrap(),
        ["doomed", "doomed", "doomed", "b", "a"]
    );
    assert_eq!((a.live(), b.live()), (0, 0));
    wait_until("the Down", || !downs.lock().unwrap().is_empty());
    let told = downs.lock().unwrap()[0].1.clone();
    assert!(
        told == ExitReason::Exit(Summary::new(REACHED_MAX_RESTART_INTENSITY))
            || told == ExitReason::NoProc,
        "{told:?}"
    );
}

#[test]
fn a_child_that_outlives_its_shutdown_time_is_killed() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let stubborn = probe("stubborn", Mode::TrapAndIgnore, &log);
    let polite = probe("polite", Mode::TrapAndEnd, &log);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(child(&stubborn).shutdown(Shutdown::Timeout(Duration::from_millis(20))))
        .child(child(&polite).shutdown(Shutdown::Timeout(Duration::from_secs(60))));
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    let (stop, _) = stopper(&s);
    stubborn.wait_pid(1);
    polite.wait_pid(1);
    s.send(stop, Msg::Exit(sup.pid(), ExitReason::Shutdown))
        .unwrap();
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    assert_eq!(*log.lock().unwrap(), ["polite", "stubborn"]);
    assert_eq!((stubborn.live(), polite.live()), (0, 0));
}

#[test]
fn a_brutally_killed_child_is_killed_at_once_even_if_it_traps() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let stubborn = probe("stubborn", Mode::TrapAndIgnore, &log);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(child(&stubborn).shutdown(Shutdown::BrutalKill));
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    let (stop, _) = stopper(&s);
    stubborn.wait_pid(1);
    s.send(stop, Msg::Exit(sup.pid(), ExitReason::Shutdown))
        .unwrap();
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    assert_eq!(stubborn.told.load(Ordering::SeqCst), 0, "never asked");
    assert_eq!(stubborn.live(), 0);
}

#[test]
fn a_child_that_fails_its_first_start_ends_the_supervisor_after_the_others() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let a = probe("a", Mode::Idle, &log);
    let bad = probe("bad", Mode::Idle, &log);
    bad.fail_inits.store(1, Ordering::SeqCst);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(child(&a))
        .child(child(&bad));
    let (watcher, downs) = stopper(&s);
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    s.send(watcher, Msg::Monitor(sup.pid())).unwrap();
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    assert_eq!((a.starts(), a.live(), bad.starts()), (1, 0, 0));
    wait_until("the Down", || !downs.lock().unwrap().is_empty());
    let told = downs.lock().unwrap()[0].1.clone();
    assert!(
        told == ExitReason::Exit(Summary::new(FAILED_TO_START_CHILD)) || told == ExitReason::NoProc,
        "{told:?}"
    );
}

#[test]
fn children_killed_while_waiting_in_a_command_or_failing_init_are_restarted() {
    let (s, held) = scheduler();
    let log = closed_log();
    let waiting = probe("waiting", Mode::Wait, &log);
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(child(&waiting));
    s.submit_kind(Supervisor::new(), spec).unwrap();
    held.wait_for("the first command", 1);
    waiting.fail_inits.store(2, Ordering::SeqCst);
    kill_from_outside(&s, &waiting, 1);
    // Two failed inits count as restarts and are retried.
    held.wait_for("the second incarnation's command", 2);
    assert_eq!(waiting.starts(), 2);
    assert_eq!(waiting.max_live.load(Ordering::SeqCst), 1);
}

#[test]
fn children_killed_mid_restart_and_during_the_supervisors_shutdown_are_ended_once() {
    let (s, _held) = scheduler();
    let log = closed_log();
    // `slow` ignores its shutdown: a one-for-all restart waits its time.
    let a = probe("a", Mode::Idle, &log);
    let slow = probe("slow", Mode::TrapAndIgnore, &log);
    let c = probe("c", Mode::TrapAndIgnore, &log);
    let long = Shutdown::Timeout(Duration::from_secs(60));
    let spec = SupervisorSpec::new(Strategy::OneForAll)
        .intensity(10, Duration::from_secs(60))
        .child(child(&a))
        .child(child(&slow).shutdown(long))
        .child(child(&c).shutdown(long));
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    let (c1, slow1) = (c.wait_pid(1), slow.wait_pid(1));
    kill_from_outside(&s, &a, 1);
    // Mid-restart: `c` is being stopped (it ignores it); kill it, then
    // `slow`, from outside: the restart goes on.
    wait_until("the restart to start", || a.live() == 0);
    s.terminate(c1).unwrap();
    s.terminate(slow1).unwrap();
    for p in [&a, &slow, &c] {
        p.wait_pid(2);
    }
    // The supervisor's own shutdown, with children killed meanwhile.
    let told = [&c, &slow].map(|p| p.told.load(Ordering::SeqCst));
    let (stop, _) = stopper(&s);
    s.send(stop, Msg::Exit(sup.pid(), ExitReason::Shutdown))
        .unwrap();
    // Each is killed once its supervisor has asked it to stop (it
    // ignores that): `c` first, then `slow`, in reverse start order.
    for (p, before) in [&c, &slow].into_iter().zip(told) {
        let pid = p.wait_pid(2);
        wait_until("the stop request", || {
            p.told.load(Ordering::SeqCst) > before
        });
        s.terminate(pid).unwrap();
    }
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    for p in [&a, &slow, &c] {
        assert_eq!(p.starts(), 2, "{}", p.name);
        assert_eq!(p.live(), 0, "{}", p.name);
        assert_eq!(p.max_live.load(Ordering::SeqCst), 1, "{}", p.name);
    }
}

#[test]
fn a_grandchilds_failures_escalate_through_a_two_level_tree() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let doomed = probe("doomed", Mode::Doomed, &log);
    let sibling = probe("sibling", Mode::Idle, &log);
    let sub = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(1, Duration::from_secs(60))
        .child(child(&doomed));
    let top = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(2, Duration::from_secs(60))
        .child(child(&sibling))
        .child(ChildSpec::supervisor("sub", sub));
    let (watcher, downs) = stopper(&s);
    let top = s.submit_kind_joinable(Supervisor::new(), top).unwrap();
    s.send(watcher, Msg::Monitor(top.pid())).unwrap();
    assert_eq!(joined(top), Err(ProcessError::Terminated));
    // Each `sub` starts `doomed` twice (one restart), then fails; `top`
    // restarts it twice, then fails itself.
    assert_eq!(doomed.starts(), 6);
    assert_eq!(sibling.starts(), 1, "one-for-one: the sibling stays");
    assert_eq!(sibling.live(), 0, "stopped with its supervisor");
    wait_until("the Down", || !downs.lock().unwrap().is_empty());
    let told = downs.lock().unwrap()[0].1.clone();
    assert!(
        told == ExitReason::Exit(Summary::new(REACHED_MAX_RESTART_INTENSITY))
            || told == ExitReason::NoProc,
        "{told:?}"
    );
}

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
fn random_kills_from_outside_never_run_two_incarnations_of_one_child() {
    let rounds = if cfg!(miri) { 1 } else { 20 };
    let kills = if cfg!(miri) { 5 } else { 60 };
    for round in 0..rounds {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (round + 1));
        let strategy = [
            Strategy::OneForOne,
            Strategy::OneForAll,
            Strategy::RestForOne,
        ][rng.below(3) as usize];
        let (s, _held) = scheduler();
        let log = closed_log();
        let modes = [Mode::Idle, Mode::Wait, Mode::TrapAndEnd];
        let probes: Vec<Arc<Probe>> = ["a", "b", "c"]
            .into_iter()
            .map(|name| probe(name, modes[rng.below(3) as usize], &log))
            .collect();
        let mut spec = SupervisorSpec::new(strategy).intensity(10_000, Duration::from_secs(60));
        for p in &probes {
            spec = spec.child(child(p).shutdown(Shutdown::Timeout(Duration::from_millis(50))));
        }
        let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
        let seeds: Vec<u64> = (0..2).map(|_| rng.below(u64::MAX)).collect();
        thread::scope(|scope| {
            for seed in seeds {
                let (s, probes) = (&s, &probes);
                scope.spawn(move || {
                    let mut rng = Rng(seed | 1);
                    for _ in 0..kills {
                        let p = &probes[rng.below(3) as usize];
                        if let Some(pid) = p.pid() {
                            let _ = s.terminate(pid);
                        }
                        if rng.below(4) == 0 {
                            thread::yield_now();
                        }
                    }
                });
            }
        });
        for p in &probes {
            wait_until("every child running again", || p.live() == 1);
            assert_eq!(
                p.max_live.load(Ordering::SeqCst),
                1,
                "round {round} ({strategy:?}): two incarnations of {} at once",
                p.name
            );
        }
        let (stop, _) = stopper(&s);
        s.send(stop, Msg::Exit(sup.pid(), ExitReason::Shutdown))
            .unwrap();
        assert_eq!(joined(sup), Err(ProcessError::Terminated));
        for p in &probes {
            assert_eq!(p.live(), 0, "round {round}: {} stopped", p.name);
        }
    }
}
