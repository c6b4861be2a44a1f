//! A `Down`: at once for a process already gone, with each way of ending's
//! reason, to a Blocked watcher after its target's messages, in the
//! order of a step's requests, exactly once when the end races the
//! monitor, never after a `demonitor`'s step (also one collected past the
//! step's cap, or handed over and held); and a panicking monitoring step
//! with `Down`s pending.

use super::*;

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
    let outcome = joined(w);
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

/// A monitor request that reaches its target while the target runs its
/// last step: the target takes no further step to collect it, so its
/// `close` finds it in the mailbox, registers it, and tells the watcher
/// of this end (`Done`), not of a process already gone (`NoProc`).
#[test]
fn a_request_reaching_a_target_in_its_last_step_is_told_of_that_end() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let (w, t) = (spawn(&s, &log), spawn(&s, &log));
    let flag = Arc::new(AtomicBool::new(false));
    let state = |p: Pid| info(&s, p).map(|i| i.state);
    // `t` spins on one worker (from Idle, Running is that step); `w`
    // monitors it from the other, and lets it finish in its next step,
    // after its request was sent.
    wait_until("t is idle", || state(t.pid()) == Some(Lifecycle::Idle));
    s.send(t.pid(), Msg::FinishWhen(Arc::clone(&flag))).unwrap();
    wait_until("t spins", || state(t.pid()) == Some(Lifecycle::Running));
    s.send(w.pid(), Msg::MonitorThenSet(t.pid(), flag)).unwrap();
    let t_pid = t.pid();
    assert!(joined(t).is_ok());
    wait_until("the Down", || log.count() == 1);
    assert_eq!(log.downs_of(w.pid()), vec![(t_pid, ExitReason::Done)]);
}

/// A watcher that ends in the step that brings its `Down`, leaving that
/// step's events unread: its `close` reports the message among them as
/// undelivered, and not the `Down` (a `Down` is owed to no one else).
#[test]
fn a_down_left_unread_by_an_ending_step_is_not_reported_undelivered() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&undelivered);
    let s: Scheduler<Node> = Scheduler::builder()
        .workers(2)
        .on_undelivered(move |pid, event| {
            let what = match event {
                Event::Message(Msg::Note(i)) => format!("note {i}"),
                Event::Down { .. } => "Down".to_owned(),
                _ => "other".to_owned(),
            };
            seen.lock().unwrap().push((pid, what));
        })
        .build()
        .unwrap();
    let log = Arc::new(Log::default());
    let (w, t) = (spawn(&s, &log), spawn(&s, &log));
    s.send(w.pid(), Msg::Monitor(t.pid())).unwrap();
    s.send(w.pid(), Msg::LeaveOnDown).unwrap();
    s.send(w.pid(), Msg::Wait).unwrap();
    wait_until("the watcher waits, its monitor registered", || {
        info(&s, w.pid()).is_some_and(|i| i.state == Lifecycle::Blocked)
            && info(&s, t.pid()).is_some_and(|i| i.monitored_by == 1)
    });
    // A message does not wake a Blocked process: the note waits in the
    // mailbox and comes with the `Down` (after it in the step's events).
    s.send(w.pid(), Msg::Note(7)).unwrap();
    s.send(t.pid(), Msg::Finish).unwrap();
    let w_pid = w.pid();
    assert!(joined(w).is_ok());
    assert_eq!(
        *undelivered.lock().unwrap(),
        vec![(w_pid, "note 7".to_owned())]
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
    assert!(joined(w).is_ok(), "a normal end of a link ends no one");
    assert!(joined(u).is_ok());
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
    assert!(matches!(joined(w), Err(ProcessError::Panicked(_))));
    for t in targets {
        assert!(joined(t).is_ok());
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
    assert!(joined(next).is_ok());
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
        assert!(joined(t).is_ok());
    }
    for w in &watchers {
        s.send(w.pid(), Msg::Finish).unwrap();
    }
    for w in watchers {
        assert!(joined(w).is_ok());
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

/// A `Down` handed by a claim to a Blocked watcher whose mailbox holds
/// more than a step's cap (`max_events_per_step(2)`) is held for the step
/// that drains it; the step that got the cap's worth demonitors its
/// target: the held `Down` goes, and no later step gets it.
#[test]
fn a_handed_down_held_past_the_cap_goes_with_the_demonitor_of_the_step() {
    let s: Scheduler<Node> = Scheduler::builder()
        .workers(2)
        .max_events_per_step(2)
        .build()
        .unwrap();
    let log = Arc::new(Log::default());
    let (w, t) = blocked_watcher(&s, &log);
    // Queued (a Blocked process is not woken by messages): the first
    // step takes the demonitor and note 0, and note 1 to find out more.
    for msg in [Msg::Demonitor(t.pid()), Msg::Note(0), Msg::Note(1)] {
        s.send(w.pid(), msg).unwrap();
    }
    let (w_pid, t_pid) = (w.pid(), t.pid());
    s.send(t_pid, Msg::Finish).unwrap();
    assert!(joined(t).is_ok());
    wait_until("both notes", || {
        log.order.lock().unwrap().contains(&(w_pid, Some(1)))
    });
    s.send(w_pid, Msg::Finish).unwrap();
    assert!(joined(w).is_ok());
    assert_eq!(*log.after_demonitor.lock().unwrap(), []);
    assert_eq!(log.downs_of(w_pid), []);
}

/// A watcher for the cap's test: `Hold` keeps its step running until the
/// flag is set (then it continues); it logs each step's events.
struct Gated {
    steps: Arc<Mutex<Vec<Vec<String>>>>,
}

#[derive(Debug)]
enum Gate {
    Monitor(Pid),
    Demonitor(Pid),
    /// Trap exits and link to the PID.
    TrapAndLink(Pid),
    Unlink(Pid),
    /// End with an error.
    Fail,
    Hold(Arc<AtomicBool>),
    Note,
    Finish,
}

impl Process for Gated {
    type Input = ();
    type Message = Gate;
    type Command = NoCommand;
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
        let mut seen = Vec::new();
        for event in events.drain(..) {
            seen.push(match event {
                Event::Message(Gate::Monitor(t)) => {
                    out.monitor(t);
                    "monitor".to_owned()
                }
                Event::Message(Gate::Demonitor(t)) => {
                    out.demonitor(t);
                    "demonitor".to_owned()
                }
                Event::Message(Gate::TrapAndLink(t)) => {
                    out.trap_exits(true);
                    out.link(t);
                    "link".to_owned()
                }
                Event::Message(Gate::Unlink(t)) => {
                    out.unlink(t);
                    "unlink".to_owned()
                }
                Event::Message(Gate::Fail) => return Err(()),
                Event::Message(Gate::Hold(flag)) => {
                    let deadline = std::time::Instant::now() + common::ms(60_000);
                    while !flag.load(Ordering::Acquire) {
                        // A liveness guard: the test then fails on the reason.
                        assert!(std::time::Instant::now() < deadline, "never set");
                        std::thread::yield_now();
                    }
                    out.set_status(Status::Continue);
                    "hold".to_owned()
                }
                Event::Message(Gate::Note) => "note".to_owned(),
                Event::Message(Gate::Finish) => {
                    out.done(());
                    "finish".to_owned()
                }
                Event::Down { pid, .. } => format!("down {pid}"),
                other => format!("{other:?}"),
            });
        }
        self.steps.lock().unwrap().push(seen);
        Ok(())
    }
}

/// The shape of the two tests below: `w` registers a monitor or a link of
/// `t` (`setup`, seen done by `registered`), then holds a step while its
/// mailbox fills with `cancel` and a note (a step's cap's worth,
/// `max_events_per_step(2)`) and then, `t` ended by `end` while `w` runs
/// (no claim), the `Down` of that end, taken one past the cap and carried.
/// The step that got the cap's worth cancels: the carried `Down` goes, and
/// no later step gets it.
fn a_carried_down_goes_with_the_cancel_of_the_step(
    setup: fn(Pid) -> Gate,
    registered: fn(&stepsched::sched::ProcessInfo) -> bool,
    cancel: fn(Pid) -> Gate,
    (name, end): (&str, Gate),
) {
    let s: Scheduler<Gated> = Scheduler::builder()
        .workers(2)
        .max_events_per_step(2)
        .build()
        .unwrap();
    let gated = || {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let process = Gated {
            steps: Arc::clone(&steps),
        };
        (s.submit_joinable(process, "gated", ()).ok().unwrap(), steps)
    };
    let ((w, steps), (t, _)) = (gated(), gated());
    let (w_pid, t_pid) = (w.pid(), t.pid());
    let info = |p: Pid| s.processes().into_iter().find(|i| i.pid == p);
    s.send(w_pid, setup(t_pid)).unwrap();
    wait_until("the request is registered", || {
        info(t_pid).is_some_and(|i| registered(&i))
    });
    let flag = Arc::new(AtomicBool::new(false));
    s.send(w_pid, Gate::Hold(Arc::clone(&flag))).unwrap();
    wait_until("w holds its step", || {
        info(w_pid).is_some_and(|i| i.state == Lifecycle::Running)
    });
    // Queued behind the step that holds, then the `Down` (w runs: no
    // claim); t's farewell comes before its join.
    s.send(w_pid, cancel(t_pid)).unwrap();
    s.send(w_pid, Gate::Note).unwrap();
    s.send(t_pid, end).unwrap();
    let _ = joined(t);
    flag.store(true, Ordering::Release);
    let name = name.to_owned();
    wait_until("the cancelling step", || {
        (steps.lock().unwrap().iter()).any(|s| s.contains(&name))
    });
    s.send(w_pid, Gate::Finish).unwrap();
    assert!(joined(w).is_ok());
    let steps = steps.lock().unwrap().clone();
    let at = (steps.iter()).position(|s| s.contains(&name)).unwrap();
    assert_eq!(
        steps[at],
        [name.as_str(), "note"],
        "the cap's worth: {steps:?}"
    );
    let down = format!("down {t_pid}");
    for step in &steps[at + 1..] {
        assert!(!step.contains(&down), "a Down after the {name}: {steps:?}");
    }
}

/// A monitor's `Down` carried past the cap goes with the `demonitor` of
/// the step ("no `Down` about it reaches a step after this one").
#[test]
fn a_down_collected_past_the_cap_goes_with_the_demonitor_of_the_step() {
    a_carried_down_goes_with_the_cancel_of_the_step(
        Gate::Monitor,
        |i| i.monitored_by == 1,
        Gate::Demonitor,
        ("demonitor", Gate::Finish),
    );
}

/// A trapping process's `Down` of a linked process's failure carried past
/// the cap goes with the `unlink` of the step ("no exit from it reaches
/// this process after this step").
#[test]
fn a_trapped_exit_collected_past_the_cap_goes_with_the_unlink_of_the_step() {
    a_carried_down_goes_with_the_cancel_of_the_step(
        Gate::TrapAndLink,
        |i| i.links == 1,
        Gate::Unlink,
        ("unlink", Gate::Fail),
    );
}
