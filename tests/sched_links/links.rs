//! Links: a chain of 1,000 dies from its head; a trapping process
//! survives and sees each exit; an exit that overtook its link request
//! to a Blocked process still acts on it; an exit drained at `close`
//! leaves the process's own reason to its watchers and links.

use super::*;

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
    let mut outcomes = chain.into_iter().map(joined);
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
    assert!(joined(trapper).is_ok(), "the trapper lived on");
}

/// Makes `pid` end its next step waiting for a completion (Blocked).
fn block(s: &Scheduler<Node>, pid: Pid) {
    s.send(pid, Msg::Wait).unwrap();
    wait_until("it waits", || {
        info(s, pid).is_some_and(|i| i.state == Lifecycle::Blocked)
    });
}

/// Sends `x` a `Link(t)` and waits until the step that sent the request
/// is over (its steps counted, and Idle again: the request was pushed
/// before the step parked).
fn link_and_settle(s: &Scheduler<Node>, x: Pid, t: Pid) {
    let before = info(s, x).unwrap().steps;
    s.send(x, Msg::Link(t)).unwrap();
    wait_until("the linking step is over", || {
        info(s, x).is_some_and(|i| i.steps > before && i.state == Lifecycle::Idle)
    });
}

/// Sends `t` a note and waits until `t` has ended, or has stepped on the
/// note and parked after that step; returns whether it stepped.
fn note_or_end(s: &Scheduler<Node>, log: &Log, t: Pid) -> bool {
    if s.send(t, Msg::Note(1)).is_err() {
        return false; // already ended
    }
    let stepped = || log.order.lock().unwrap().contains(&(t, Some(1)));
    wait_until("t ends, or steps on the note and parks", || {
        info(s, t).map_or(true, |i| stepped() && i.state == Lifecycle::Idle)
    });
    stepped()
}

/// A link request to a Blocked process waits in its mailbox (a request
/// does not wake it). The linker's exit, which wakes it (a completion's
/// wake), comes after that request, as it would behind it in the
/// mailbox: an abnormal exit ends a process that does not trap
/// (`Linked`, outcome `Terminated`), and a normal one leaves no link, also
/// in a process that had no links part before the request.
#[test]
fn an_exit_after_its_link_request_to_a_blocked_process_acts_on_it() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let (w, t, x) = (spawn(&s, &log), spawn(&s, &log), spawn(&s, &log));
    let (t_pid, x_pid) = (t.pid(), x.pid());
    s.send(w.pid(), Msg::Monitor(t_pid)).unwrap();
    wait_until("t is watched", || {
        info(&s, t_pid).is_some_and(|i| i.monitored_by == 1)
    });
    block(&s, t_pid);
    link_and_settle(&s, x_pid, t_pid);
    let ti = info(&s, t_pid).unwrap();
    assert_eq!((ti.state, ti.links), (Lifecycle::Blocked, 0), "t was woken");
    s.send(x_pid, Msg::Fail).unwrap();
    assert!(matches!(joined(x), Err(ProcessError::Failed(_))));
    // x's farewell is over (it comes before its joiner is told): a note
    // sent now comes after its exit.
    let stepped = note_or_end(&s, &log, t_pid);
    assert!(!stepped, "t lived on: {:?}", info(&s, t_pid));
    let outcome = joined(t);
    assert!(
        matches!(outcome, Err(ProcessError::Terminated)),
        "{outcome:?}"
    );
    wait_until("t's Down", || log.count() == 1);
    assert_eq!(
        log.downs_of(w.pid()),
        vec![(t_pid, ExitReason::Linked(x_pid))]
    );

    // A normal end, to a process with no links part yet.
    let (u, y) = (spawn(&s, &log), spawn(&s, &log));
    block(&s, u.pid());
    link_and_settle(&s, y.pid(), u.pid());
    s.send(y.pid(), Msg::Finish).unwrap();
    assert!(joined(y).is_ok());
    assert!(note_or_end(&s, &log, u.pid()), "a normal exit ended u");
    assert_eq!(info(&s, u.pid()).unwrap().links, 0, "u linked to ended y");
}

/// As above, for a process that traps exits: the exits of two processes
/// that linked it while it was Blocked come to it as `Down`s, with their
/// reasons, and leave no link.
#[test]
fn a_trapping_blocked_process_sees_the_exits_of_processes_that_just_linked_it() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let (t, x, y) = (spawn(&s, &log), spawn(&s, &log), spawn(&s, &log));
    let (t_pid, x_pid, y_pid) = (t.pid(), x.pid(), y.pid());
    s.send(t_pid, Msg::Trap(true)).unwrap();
    block(&s, t_pid);
    link_and_settle(&s, x_pid, t_pid);
    link_and_settle(&s, y_pid, t_pid);
    s.send(x_pid, Msg::Fail).unwrap();
    assert!(matches!(joined(x), Err(ProcessError::Failed(_))));
    s.send(y_pid, Msg::Finish).unwrap();
    assert!(joined(y).is_ok());
    assert!(note_or_end(&s, &log, t_pid), "a trapping t ended");
    let mut downs = log.downs_of(t_pid);
    downs.sort_by_key(|(p, _)| p.into_raw());
    let failed = format!("\"{x_pid} failed on purpose\"");
    assert_eq!(
        downs,
        vec![
            (x_pid, ExitReason::Failed(Summary::new(failed))),
            (y_pid, ExitReason::Done)
        ]
    );
    assert_eq!(info(&s, t_pid).unwrap().links, 0);
    s.send(t_pid, Msg::Finish).unwrap();
    assert!(joined(t).is_ok());
}

/// How an outcome is told, as `ExitReason` documents it.
fn told(outcome: &stepsched::process::Outcome<Node>) -> ExitReason {
    match outcome {
        Ok(()) => ExitReason::Done,
        Err(ProcessError::Failed(e)) => ExitReason::Failed(Summary::new(format!("{e:?}"))),
        Err(ProcessError::Terminated) => ExitReason::Terminated,
        other => panic!("not expected here: {other:?}"),
    }
}

/// B ends by its last step (`end`; terminated during it if `terminate`),
/// while the exit of A, linked to it, waits in its mailbox: A ended
/// (failing if `a_fails`, else normally) during that step, so B's
/// `close` drains the exit. B's watcher (W), a trapping process linked to
/// B (C) and its joiner are all told the same reason, B's own; a
/// non-trapping one linked to B (D) is ended only if that reason is
/// abnormal. W is told A's own reason too.
fn an_exit_drained_at_close_keeps_the_reason(
    end: fn(Arc<AtomicBool>) -> Msg,
    a_fails: bool,
    terminate: bool,
) {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let [a, b, c, d, w] = [(); 5].map(|_| spawn(&s, &log));
    let (a_pid, b_pid) = (a.pid(), b.pid());
    s.send(b_pid, Msg::Link(a_pid)).unwrap();
    s.send(c.pid(), Msg::Trap(true)).unwrap();
    s.send(c.pid(), Msg::Link(b_pid)).unwrap();
    s.send(d.pid(), Msg::Link(b_pid)).unwrap();
    s.send(w.pid(), Msg::Monitor(a_pid)).unwrap();
    s.send(w.pid(), Msg::Monitor(b_pid)).unwrap();
    wait_until("the links and monitors are set", || {
        let (ai, bi) = (info(&s, a_pid).unwrap(), info(&s, b_pid).unwrap());
        (ai.links, ai.monitored_by, bi.links, bi.monitored_by) == (1, 1, 3, 1)
            && bi.state == Lifecycle::Idle
    });
    let flag = Arc::new(AtomicBool::new(false));
    s.send(b_pid, end(Arc::clone(&flag))).unwrap();
    wait_until("b's last step runs", || {
        info(&s, b_pid).is_some_and(|i| i.state == Lifecycle::Running)
    });
    s.send(a_pid, if a_fails { Msg::Fail } else { Msg::Finish })
        .unwrap();
    // A's farewell is over (before its joiner is told): its exit is in
    // B's mailbox, B being Running.
    let a_told = told(&joined(a));
    if terminate {
        // Running: its step ends it (`Idle` here: closed `Terminated`).
        s.terminate(b_pid).unwrap();
    }
    flag.store(true, Ordering::Release);
    let b_outcome = joined(b);
    let b_told = told(&b_outcome);
    wait_until("the Downs", || {
        log.downs_of(w.pid()).len() == 2 && log.downs_of(c.pid()).len() == 1
    });
    let mut w_downs = log.downs_of(w.pid());
    w_downs.sort_by_key(|(p, _)| p.into_raw());
    let mut expected = vec![(a_pid, a_told), (b_pid, b_told.clone())];
    expected.sort_by_key(|(p, _)| p.into_raw());
    assert_eq!(w_downs, expected, "the watcher, against the joiners");
    assert_eq!(log.downs_of(c.pid()), vec![(b_pid, b_told.clone())], "C");
    if b_told.is_normal() {
        s.send(d.pid(), Msg::Finish).unwrap();
        let d_outcome = joined(d);
        assert!(
            d_outcome.is_ok(),
            "D ended with B's normal end: {d_outcome:?}"
        );
    } else {
        let d_outcome = joined(d);
        assert!(
            matches!(d_outcome, Err(ProcessError::Terminated)),
            "{d_outcome:?}"
        );
    }
}

#[test]
fn a_normal_end_with_a_linked_exit_drained_at_close_is_told_as_done() {
    an_exit_drained_at_close_keeps_the_reason(Msg::FinishWhen, true, false);
}

#[test]
fn a_failure_with_a_normal_exit_drained_at_close_is_told_as_that_failure() {
    an_exit_drained_at_close_keeps_the_reason(Msg::FailWhen, false, false);
}

#[test]
fn two_linked_processes_failing_together_each_tell_their_own_failure() {
    an_exit_drained_at_close_keeps_the_reason(Msg::FailWhen, true, false);
}

/// Terminated during its last step, with a linked exit drained at close:
/// told `Terminated` (the terminate ended it), not `Linked`.
#[test]
fn a_terminate_with_a_linked_exit_drained_at_close_is_told_as_terminated() {
    an_exit_drained_at_close_keeps_the_reason(Msg::IdleWhen, true, true);
}
