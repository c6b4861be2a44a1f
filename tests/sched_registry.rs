//! The registry of names: `Scheduler::register`, `whereis`, `unregister`,
//! `registered`, `SpawnOptions::name` and `StepOutput::register`. A name
//! is removed by every way its process ends, before a joiner hears of the
//! end; a register racing the end either fails or is removed by it, so no
//! name survives its process (a storm of such races across threads); a
//! stale PID never resolves to a later process of its slot.
//!
//! ```text
//! cargo test --test sched_registry
//! ```

mod common;
use common::{joined, wait_until};

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use stepsched::process::{
    Event, Name, NoCommand, Pid, Process, ProcessError, RegisterError, SpawnError, SpawnOptions,
    StepOutput,
};
use stepsched::sched::Scheduler;

/// What a test asks of a [`Named`] process.
#[derive(Debug)]
enum Ask {
    /// Finish with `Done`.
    Done,
    /// Fail with an error.
    Fail,
    /// Panic in the step.
    Panic,
    /// Register itself under the name; finish with the result if `then_end`.
    Register(String, bool),
    /// Link with the PID.
    Link(Pid),
}

/// Idles and does what it is asked.
struct Named;

type Reply = Option<Result<(), RegisterError>>;

impl Process for Named {
    type Input = ();
    type Message = Ask;
    type Command = NoCommand;
    type Reply = ();
    type Output = Reply;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Ask::Done) => out.done(None),
                Event::Message(Ask::Fail) => return Err("asked to fail".into()),
                Event::Message(Ask::Panic) => panic!("asked to panic"),
                Event::Message(Ask::Register(name, then_end)) => {
                    let result = out.register(name.as_str());
                    assert!(out.whereis(&name).is_some());
                    if then_end {
                        out.done(Some(result));
                    }
                }
                Event::Message(Ask::Link(pid)) => out.link(pid),
                _ => {}
            }
        }
        Ok(())
    }
}

fn scheduler() -> Scheduler<Named> {
    Scheduler::builder().workers(2).build().expect("build")
}

fn spawn(s: &Scheduler<Named>) -> Pid {
    s.submit(Named, "", ()).map_err(|_| "refused").unwrap()
}

#[test]
fn register_whereis_unregister() {
    let s = scheduler();
    let a = spawn(&s);
    assert_eq!(s.whereis("a"), None);
    s.register(String::from("a"), a).unwrap();
    assert_eq!(s.whereis("a"), Some(a));
    assert_eq!(s.registered(), vec![(Name::from("a"), a)]);
    assert_eq!(s.unregister("a"), Some(a));
    assert_eq!(s.unregister("a"), None);
    assert_eq!(s.whereis("a"), None);
    // Unnamed, it may be named again.
    s.register("b", a).unwrap();
    assert_eq!(s.whereis("b"), Some(a));
}

#[test]
fn a_taken_name_is_refused_naming_the_holder_and_a_process_holds_one_name() {
    let s = scheduler();
    let (a, b) = (spawn(&s), spawn(&s));
    s.register("room", a).unwrap();
    assert_eq!(
        s.register("room", b),
        Err(RegisterError::NameTaken {
            name: Name::from("room"),
            holder: a
        })
    );
    assert_eq!(
        s.register("other", a),
        Err(RegisterError::AlreadyNamed {
            pid: a,
            name: Name::from("room")
        })
    );
    assert_eq!(s.whereis("room"), Some(a));
    assert_eq!(s.whereis("other"), None);
    let text = s.register("room", b).unwrap_err().to_string();
    assert!(
        text.contains("room") && text.contains(&a.to_string()),
        "{text}"
    );
}

#[test]
fn registering_an_unknown_or_ended_pid_fails_with_no_such_process() {
    let s = scheduler();
    let unknown = Pid::from_raw(12_345);
    assert_eq!(
        s.register("x", unknown),
        Err(RegisterError::NoSuchProcess(unknown))
    );
    let h = s
        .submit_joinable(Named, "", ())
        .map_err(|_| "refused")
        .unwrap();
    let ended = h.pid();
    s.send(ended, Ask::Done).unwrap();
    joined(h).unwrap();
    assert_eq!(
        s.register("x", ended),
        Err(RegisterError::NoSuchProcess(ended))
    );
    assert_eq!(s.whereis("x"), None);
}

#[test]
fn a_stale_pid_never_resolves_to_a_later_process_of_its_slot() {
    let s = Scheduler::builder().workers(1).build().expect("build");
    let h = s
        .submit_joinable(Named, "", ())
        .map_err(|_| "refused")
        .unwrap();
    let old = h.pid();
    s.register("old", old).unwrap();
    s.send(old, Ask::Done).unwrap();
    joined(h).unwrap();
    // The slot is reused by the next process (one worker's cache, or the
    // free list); whatever slot it gets, the old name is gone and the old
    // PID cannot be named.
    let new = spawn(&s);
    assert_eq!(s.whereis("old"), None);
    assert_eq!(
        s.register("old", old),
        Err(RegisterError::NoSuchProcess(old))
    );
    s.register("new", new).unwrap();
    assert_eq!(s.register("x", old), Err(RegisterError::NoSuchProcess(old)));
    assert_eq!(s.whereis("new"), Some(new));
}

/// Registers `name` for a new process, ends it with `end`, joins it, and
/// checks that the name was gone before the joiner heard of the end.
fn ends_unnamed(end: impl FnOnce(&Scheduler<Named>, Pid)) {
    let s = scheduler();
    let h = s
        .submit_joinable(Named, "", ())
        .map_err(|_| "refused")
        .unwrap();
    let pid = h.pid();
    s.register("n", pid).unwrap();
    end(&s, pid);
    let _ = joined(h);
    assert_eq!(s.whereis("n"), None);
    assert!(s.registered().is_empty());
    // Free again at once, for another process.
    let next = spawn(&s);
    s.register("n", next).unwrap();
}

#[test]
fn a_name_is_unregistered_when_its_process_is_done() {
    ends_unnamed(|s, pid| s.send(pid, Ask::Done).unwrap());
}

#[test]
fn a_name_is_unregistered_when_its_process_fails() {
    ends_unnamed(|s, pid| s.send(pid, Ask::Fail).unwrap());
}

#[test]
fn a_name_is_unregistered_when_its_process_panics() {
    ends_unnamed(|s, pid| s.send(pid, Ask::Panic).unwrap());
}

#[test]
fn a_name_is_unregistered_when_its_process_is_terminated() {
    ends_unnamed(|s, pid| s.terminate(pid).unwrap());
}

#[test]
fn a_name_is_unregistered_when_its_process_ends_by_a_linked_exit() {
    ends_unnamed(|s, pid| {
        let peer = spawn(s);
        s.send(pid, Ask::Link(peer)).unwrap();
        // Wait until the link is set (the dump shows it), then fail the peer.
        wait_until("the link", || {
            s.processes().iter().any(|p| p.pid == peer && p.links == 1)
        });
        s.send(peer, Ask::Fail).unwrap();
    });
}

#[test]
fn a_name_is_unregistered_when_shutdown_closes_its_process() {
    let s = scheduler();
    let pid = spawn(&s);
    s.register("n", pid).unwrap();
    let report = s.shutdown(Duration::from_millis(50));
    let _ = report;
    assert_eq!(s.whereis("n"), None);
    assert!(s.registered().is_empty());
    assert_eq!(s.register("m", pid), Err(RegisterError::ShuttingDown));
}

#[test]
fn register_from_a_step_is_applied_at_once_and_reports_a_taken_name() {
    let s = scheduler();
    let holder = spawn(&s);
    s.register("taken", holder).unwrap();
    let h = s
        .submit_joinable(Named, "", ())
        .map_err(|_| "refused")
        .unwrap();
    s.send(h.pid(), Ask::Register("taken".into(), true))
        .unwrap();
    let outcome = joined(h).unwrap();
    assert_eq!(
        outcome,
        Some(Err(RegisterError::NameTaken {
            name: Name::from("taken"),
            holder
        }))
    );
    let me = spawn(&s);
    s.send(me, Ask::Register("mine".into(), false)).unwrap();
    wait_until("the step's register", || s.whereis("mine") == Some(me));
    s.send(me, Ask::Done).unwrap();
    wait_until("the end", || s.whereis("mine").is_none());
}

#[test]
fn spawn_options_name_registers_at_spawn_and_a_duplicate_hands_the_process_back() {
    let s = scheduler();
    let pid = s
        .submit_with(Named, "", (), SpawnOptions::new().name("svc"))
        .map_err(|_| "refused")
        .unwrap();
    assert_eq!(s.whereis("svc"), Some(pid));
    match s.submit_with(Named, "", (), SpawnOptions::new().name("svc")) {
        Err(SpawnError::NameTaken { holder, .. }) => {
            assert_eq!(holder, pid);
        }
        Err(other) => panic!("{other:?}"),
        Ok(pid) => panic!("spawned {pid}"),
    }
    let refused = s
        .submit_with(Named, "", (), SpawnOptions::new().name("svc"))
        .expect_err("refused");
    let _process: Named = refused.into_process();
    assert_eq!(s.live(), 1);
    s.send(pid, Ask::Done).unwrap();
    wait_until("the end", || s.whereis("svc").is_none());
}

#[test]
fn names_are_shown_in_the_process_dump() {
    let s = scheduler();
    let (a, b) = (spawn(&s), spawn(&s));
    s.register("alpha", a).unwrap();
    let dump = s.processes();
    let of = |pid| dump.iter().find(|p| p.pid == pid).expect("listed").clone();
    assert_eq!(of(a).name, Some(Name::from("alpha")));
    assert_eq!(of(b).name, None);
}

#[test]
fn whereis_vs_unregister_answers_the_holder_or_none() {
    let s = Arc::new(scheduler());
    let pid = spawn(&s);
    let rounds = if cfg!(miri) { 20 } else { 2_000 };
    let reader = {
        let s = Arc::clone(&s);
        thread::spawn(move || {
            for _ in 0..rounds * 4 {
                let seen = s.whereis("flip");
                assert!(seen.is_none() || seen == Some(pid), "{seen:?}");
            }
        })
    };
    for _ in 0..rounds {
        s.register("flip", pid).unwrap();
        assert_eq!(s.unregister("flip"), Some(pid));
    }
    reader.join().unwrap();
}

#[test]
fn no_stale_name_survives_a_storm_of_registers_racing_the_ends() {
    let s = Arc::new(scheduler());
    let per_thread = if cfg!(miri) { 10 } else { 300 };
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                for i in 0..per_thread {
                    let pid = spawn(&s);
                    // End it, and register it at once, racing its end on a
                    // worker: either the register fails or the end
                    // removes the name.
                    s.send(pid, Ask::Done).unwrap();
                    let name = format!("p-{t}-{i}");
                    match s.register(name.as_str(), pid) {
                        Ok(()) | Err(RegisterError::NoSuchProcess(_)) => {}
                        Err(other) => panic!("{other:?}"),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    wait_until("every process ended", || s.live() == 0);
    assert!(s.registered().is_empty(), "{:?}", s.registered());
    for t in 0..3 {
        for i in 0..per_thread {
            assert_eq!(s.whereis(&format!("p-{t}-{i}")), None);
        }
    }
}

#[test]
fn process_errors_still_reach_the_joiner_of_a_named_process() {
    let s = scheduler();
    let h = s
        .submit_joinable(Named, "", ())
        .map_err(|_| "refused")
        .unwrap();
    s.register("t", h.pid()).unwrap();
    s.terminate(h.pid()).unwrap();
    assert_eq!(joined(h), Err(ProcessError::Terminated));
}

#[test]
fn names_are_shown_in_the_trace_steps_args_escaped() {
    let s: Scheduler<Named> = Scheduler::builder()
        .workers(1)
        .trace(1_024)
        .build()
        .expect("build");
    let pid = spawn(&s);
    s.register("room \"42\"", pid).unwrap();
    wait_until("the step", || {
        s.processes().iter().any(|p| p.pid == pid && p.steps >= 1)
    });
    s.shutdown(Duration::from_millis(50));
    let trace = s.trace().expect("the trace");
    let mut json = Vec::new();
    trace.write_chrome_json(&mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    assert!(json.contains(r#""name":"room \"42\"""#), "{json}");
}
