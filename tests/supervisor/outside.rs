//! A supervisor seen and stopped from outside its tree: its named
//! children found across restarts, a taken name, and an ordered stop sent
//! by `Scheduler::exit`.

use super::*;

#[test]
fn named_children_are_found_by_name_across_restarts() {
    let (s, _held) = scheduler();
    let (_log, probes) = three(Mode::Idle);
    let mut spec = SupervisorSpec::new(Strategy::OneForAll).intensity(100, Duration::from_secs(60));
    for p in &probes {
        spec = spec.child(child(p).name(p.name));
    }
    s.submit_kind(Supervisor::new(), spec).unwrap();
    for p in &probes {
        let pid = p.wait_pid(1);
        assert_eq!(s.whereis(p.name), Some(pid), "{}", p.name);
    }
    // One for all: every child restarts, and each takes its name again.
    kill_from_outside(&s, &probes[1], 1);
    for p in &probes {
        let pid = p.wait_pid(2);
        wait_until(&format!("{} named again", p.name), || {
            s.whereis(p.name) == Some(pid)
        });
    }
    assert_eq!(starts(&probes), [2, 2, 2]);
}

#[test]
fn a_child_whose_name_is_taken_fails_its_first_start() {
    let (s, _held) = scheduler();
    let log = closed_log();
    let a = probe("a", Mode::Idle, &log);
    let squatter = s.submit_kind(worker(), probe("squatter", Mode::Idle, &log));
    let squatter = squatter.unwrap();
    s.register("a", squatter).unwrap();
    let spec = SupervisorSpec::new(Strategy::OneForOne).child(child(&a).name("a"));
    let sup = s.submit_kind_joinable(Supervisor::new(), spec).unwrap();
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    assert_eq!(a.starts(), 0, "refused before its init");
    assert_eq!(s.whereis("a"), Some(squatter));
}

#[test]
fn a_supervisor_sent_shutdown_from_outside_stops_its_children_in_order_and_ends() {
    let (s, _held) = scheduler();
    let (log, probes) = three(Mode::TrapAndEnd);
    let (watcher, downs) = stopper(&s);
    let sup = s
        .submit_kind_joinable(Supervisor::new(), spec(Strategy::OneForOne, &probes))
        .unwrap();
    s.send(watcher, Msg::Monitor(sup.pid())).unwrap();
    for p in &probes {
        p.wait_pid(1);
    }
    assert_eq!(s.exit(sup.pid(), ExitReason::Shutdown), Ok(()));
    assert_eq!(joined(sup), Err(ProcessError::Terminated));
    // Each trapping child was asked (a `Down` with `Shutdown`) and ended,
    // last started first; none was restarted.
    assert_eq!(*log.lock().unwrap(), ["c", "b", "a"]);
    for p in &probes {
        assert_eq!(p.told.load(Ordering::SeqCst), 1, "{}", p.name);
    }
    assert_eq!(starts(&probes), [1, 1, 1]);
    wait_until("the Down", || !downs.lock().unwrap().is_empty());
    assert_eq!(downs.lock().unwrap()[0].1, ExitReason::Shutdown);
}
