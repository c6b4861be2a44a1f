//! Monitor and demonitor churn leaves no entries, and same-step pairs
//! cancel out as they should; an idle target registers a request without
//! a step; an ended process leaves no counts in its slot.

use super::*;

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
        assert!(joined(p).is_ok());
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
    assert!(joined(t).is_ok());
    s.send(w_pid, Msg::Finish).unwrap();
    assert!(joined(w).is_ok());
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
    assert!(joined(t).is_err());
    let u = spawn(&s, &log);
    let u_pid = u.pid();
    s.send(w.pid(), Msg::Churn(u_pid, 2)).unwrap();
    s.send(w.pid(), Msg::Monitor(u_pid)).unwrap();
    wait_until("u is watched", || {
        info(&s, u_pid).is_some_and(|i| i.monitored_by == 1)
    });
    s.send(u_pid, Msg::Finish).unwrap();
    assert!(joined(u).is_ok());
    wait_until("u's Down", || log.count() == 1);
    s.send(w.pid(), Msg::Finish).unwrap();
    assert!(joined(w).is_ok());
    assert_eq!(log.downs_of(w_pid), vec![(u_pid, ExitReason::Done)]);
}

/// A process that ends watched and linked leaves no counts in its slot:
/// the next process there, which uses neither, shows none in the dump
/// (the dump reads the slot's counts, which a process without links never
/// publishes). One worker: the freed slot goes to that worker's free cache
/// (last in, first out), from which a step on it spawns the next process.
#[test]
fn the_next_process_in_a_slot_shows_none_of_the_last_ones_counts() {
    let s: Scheduler<Node> = Scheduler::builder().workers(1).build().unwrap();
    let log = Arc::new(Log::default());
    let (w, t) = (spawn(&s, &log), spawn(&s, &log));
    let t_pid = t.pid();
    s.send(w.pid(), Msg::Monitor(t_pid)).unwrap();
    s.send(w.pid(), Msg::Link(t_pid)).unwrap();
    wait_until("t is watched and linked", || {
        info(&s, t_pid).is_some_and(|i| (i.monitored_by, i.links) == (1, 1))
    });
    s.send(t_pid, Msg::Finish).unwrap();
    assert!(joined(t).is_ok());
    let child = Arc::new(Mutex::new(None));
    s.send(w.pid(), Msg::SpawnPlain(Arc::clone(&child)))
        .unwrap();
    wait_until("the child", || child.lock().unwrap().is_some());
    let child = child.lock().unwrap().unwrap();
    assert_eq!(
        child.index(),
        t_pid.index(),
        "the child is not in t's slot: the test proves nothing"
    );
    let i = info(&s, child).expect("the child is live");
    assert_eq!((i.monitors, i.monitored_by, i.links), (0, 0, 0));
}

/// An Idle target that already has links, woken only by a monitor
/// request, registers it and parks again without a step (its step would
/// see no event). The first request to it does step it: its links part
/// is made then, and records that its step ended Idle.
#[test]
fn an_idle_target_registers_a_request_without_a_step() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let (v, w, t) = (spawn(&s, &log), spawn(&s, &log), spawn(&s, &log));
    let watched = |n| info(&s, t.pid()).is_some_and(|i| i.monitored_by == n);
    s.send(v.pid(), Msg::Monitor(t.pid())).unwrap();
    wait_until("the first monitor", || watched(1));
    wait_until("t idle again", || {
        info(&s, t.pid()).is_some_and(|i| i.state == Lifecycle::Idle)
    });
    let steps = info(&s, t.pid()).unwrap().steps;
    s.send(w.pid(), Msg::Monitor(t.pid())).unwrap();
    wait_until("the second monitor", || watched(2));
    // The registration is published before the step is decided: a wrong
    // step is under way by now, and the note, sent after, takes a step of
    // its own. So one step more than before, not two, with no sleep.
    s.send(t.pid(), Msg::Note(1)).unwrap();
    wait_until("t's step with the note", || {
        log.order.lock().unwrap().contains(&(t.pid(), Some(1)))
    });
    wait_until("t idle after it", || {
        info(&s, t.pid()).is_some_and(|i| i.state == Lifecycle::Idle)
    });
    assert_eq!(info(&s, t.pid()).unwrap().steps, steps + 1);
}
