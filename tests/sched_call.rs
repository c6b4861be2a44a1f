//! Proves calls from a step (`StepOutput::call`/`reply`,
//! `Scheduler::reply`): exactly one `Event::Reply` per call, the reply in
//! time or `TimedOut` once; a late or second reply never reaches the
//! caller's step and goes to `on_undelivered`, as does one to an ended
//! caller; a request that cannot be sent is handed back at once; calls in
//! flight are told apart; calls across workers under load all complete.
//!
//! No test asserts a bound on lateness.
//!
//! ```text
//! cargo test --test sched_call
//! ```

#[path = "common/mod.rs"]
mod common;
use common::wait_until;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepsched::process::{
    Event, NoCommand, Pid, Process, ReplyError, ReplyTo, SpawnOptions, StepOutput,
};
use stepsched::sched::Scheduler;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    /// A request: answer `n + 1`.
    Req(u64, ReplyTo),
    Ans(u64),
    Go,
}

/// What a step saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Reply(u64, u64),
    TimedOut(u64),
    Failed(u64, String),
    Message(Msg),
    Timer(u64),
}

type Log = Arc<Mutex<Vec<Seen>>>;
type StepFn = Box<dyn FnMut(&[Seen], &mut StepOutput<'_, Node>) + Send>;

/// A process whose steps are a closure over what it saw (also logged).
struct Node {
    log: Log,
    step: StepFn,
}

fn node(step: impl FnMut(&[Seen], &mut StepOutput<'_, Node>) + Send + 'static) -> (Node, Log) {
    let log = Log::default();
    let process = Node {
        log: Arc::clone(&log),
        step: Box::new(step),
    };
    (process, log)
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
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
        // A shutdown's cancel ends the process (after this step's closure
        // has seen the rest); it is not part of what these tests look at.
        let cancelled = events.iter().any(|event| matches!(event, Event::Cancel(_)));
        let seen: Vec<Seen> = events
            .drain(..)
            .filter(|event| !matches!(event, Event::Cancel(_)))
            .map(|event| match event {
                Event::Reply { tag, result } => match result {
                    Ok(Msg::Ans(n)) => Seen::Reply(tag, n),
                    Ok(other) => panic!("a reply {other:?}"),
                    Err(ReplyError::TimedOut) => Seen::TimedOut(tag),
                    Err(e) => Seen::Failed(tag, format!("{e:?}")),
                },
                Event::Message(m) => Seen::Message(m),
                Event::Timer { tag } => Seen::Timer(tag),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        self.log.lock().unwrap().extend(seen.iter().cloned());
        (self.step)(&seen, out);
        if cancelled {
            out.done(());
        }
        Ok(())
    }
}

/// Answers every request at once with `n + 1`.
fn answerer() -> Node {
    node(|seen, out| {
        for s in seen {
            if let Seen::Message(Msg::Req(n, reply_to)) = s {
                out.reply(*reply_to, Msg::Ans(n + 1));
            }
        }
    })
    .0
}

/// A scheduler whose `on_undelivered` logs what it got.
fn scheduler(workers: usize) -> (Scheduler<Node>, Arc<Mutex<Vec<String>>>) {
    let lost = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lost);
    let scheduler = Scheduler::builder()
        .workers(workers)
        .on_undelivered(move |_, event: Event<Node>| {
            // A refused call's reply with the refusal named (the event's
            // own `Debug` leaves the result out).
            let what = match event {
                Event::Reply {
                    tag,
                    result: Err(e),
                } => format!("Reply({tag}, {e:?})"),
                event => format!("{event:?}"),
            };
            sink.lock().unwrap().push(what)
        })
        .build()
        .unwrap();
    (scheduler, lost)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn replies(log: &Log) -> Vec<Seen> {
    let log = log.lock().unwrap();
    log.iter()
        .filter(|s| matches!(s, Seen::Reply(..) | Seen::TimedOut(_) | Seen::Failed(..)))
        .cloned()
        .collect()
}

/// A caller that makes one call to `to` with `timeout` in its first step,
/// and ends once it has seen `Timer(9)` (set when the reply comes).
fn one_call(to: Pid, timeout: Duration, linger: Duration) -> (Node, Log) {
    let mut called = false;
    node(move |seen, out| {
        if !called {
            // (Not "no events": a stale reply, dropped, may leave a step
            // with none.)
            called = true;
            out.call(to, 1, |reply_to| Msg::Req(10, reply_to), timeout);
        }
        for s in seen {
            match s {
                Seen::Reply(..) | Seen::TimedOut(_) | Seen::Failed(..) => out.wake_after(9, linger),
                Seen::Timer(9) => out.done(()),
                _ => {}
            }
        }
    })
}

#[test]
fn a_reply_in_time_is_the_calls_one_event() {
    let (s, lost) = scheduler(2);
    let callee = s.submit(answerer(), "callee", ()).unwrap();
    let (caller, log) = one_call(callee, Duration::from_secs(60), ms(5));
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Reply(1, 11)]);
    s.shutdown(Duration::from_secs(10));
    assert!(lost.lock().unwrap().is_empty(), "{lost:?}");
}

#[test]
fn a_timeout_arrives_once_and_a_late_reply_is_never_seen() {
    let (s, lost) = scheduler(2);
    // Answers 30 ms after the request.
    let mut held = Vec::new();
    let (slow, _) = node(move |seen, out| {
        for s in seen {
            match s {
                Seen::Message(Msg::Req(n, reply_to)) => {
                    held.push((*n, *reply_to));
                    out.wake_after(1, ms(30));
                }
                Seen::Timer(1) => {
                    for (n, reply_to) in held.drain(..) {
                        out.reply(reply_to, Msg::Ans(n + 1));
                        out.reply(reply_to, Msg::Ans(n + 2)); // and a second
                    }
                }
                _ => {}
            }
        }
    });
    let callee = s.submit(slow, "slow", ()).unwrap();
    // Times out after 1 ms; stays 200 ms for the late replies to come.
    let (caller, log) = one_call(callee, ms(1), ms(200));
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::TimedOut(1)]);
    wait_until("both late replies", || lost.lock().unwrap().len() == 2);
    assert!(
        lost.lock().unwrap().iter().all(|e| e.starts_with("Reply")),
        "{lost:?}"
    );
    assert_eq!(s.stats().unknown_tags, 2);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_second_reply_in_time_is_never_seen() {
    let (s, lost) = scheduler(1);
    let (twice, _) = node(|seen, out| {
        for s in seen {
            if let Seen::Message(Msg::Req(n, reply_to)) = s {
                out.reply(*reply_to, Msg::Ans(n + 1));
                out.reply(*reply_to, Msg::Ans(n + 2));
            }
        }
    });
    let callee = s.submit(twice, "twice", ()).unwrap();
    let (caller, log) = one_call(callee, Duration::from_secs(60), ms(20));
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Reply(1, 11)]);
    assert_eq!(lost.lock().unwrap().len(), 1, "{lost:?}");
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_reply_to_an_ended_caller_goes_to_on_undelivered() {
    let (s, lost) = scheduler(2);
    let callee = s.submit(answerer(), "callee", ()).unwrap();
    // Calls, and ends in the same step: the request still goes.
    let (caller, log) = node(move |_, out| {
        out.call(callee, 1, |reply_to| Msg::Req(0, reply_to), Duration::MAX);
        out.done(());
    });
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    wait_until("the reply reported", || lost.lock().unwrap().len() == 1);
    assert!(lost.lock().unwrap()[0].starts_with("Reply"), "{lost:?}");
    assert!(replies(&log).is_empty());
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_call_to_self_is_answered() {
    let (s, lost) = scheduler(1);
    let (caller, log) = node(|seen, out| {
        if seen.is_empty() {
            let me = out.pid();
            out.call(
                me,
                3,
                |reply_to| Msg::Req(4, reply_to),
                Duration::from_secs(60),
            );
        }
        for s in seen {
            match s {
                Seen::Message(Msg::Req(n, reply_to)) => out.reply(*reply_to, Msg::Ans(n + 1)),
                Seen::Reply(..) => out.done(()),
                _ => {}
            }
        }
    });
    s.submit_joinable(caller, "self", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Reply(3, 5)]);
    s.shutdown(Duration::from_secs(10));
    assert!(lost.lock().unwrap().is_empty(), "{lost:?}");
}

#[test]
fn a_call_with_a_zero_timeout_gets_exactly_one_event() {
    const ROUNDS: usize = if cfg!(miri) { 3 } else { 50 };
    let (s, _lost) = scheduler(2);
    let callee = s.submit(answerer(), "callee", ()).unwrap();
    for _ in 0..ROUNDS {
        let (caller, log) = one_call(callee, Duration::ZERO, ms(2));
        s.submit_joinable(caller, "caller", ())
            .unwrap()
            .join()
            .unwrap();
        let got = replies(&log);
        assert!(
            got == [Seen::Reply(1, 11)] || got == [Seen::TimedOut(1)],
            "{got:?}"
        );
    }
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_call_with_duration_max_waits_for_its_reply() {
    let (s, _lost) = scheduler(2);
    let mut held = None;
    let (slow, _) = node(move |seen, out| {
        for s in seen {
            match s {
                Seen::Message(Msg::Req(n, reply_to)) => {
                    held = Some((*n, *reply_to));
                    out.wake_after(1, ms(20));
                }
                Seen::Timer(1) => {
                    let (n, reply_to) = held.take().unwrap();
                    out.reply(reply_to, Msg::Ans(n + 1));
                }
                _ => {}
            }
        }
    });
    let callee = s.submit(slow, "slow", ()).unwrap();
    let (caller, log) = one_call(callee, Duration::MAX, ms(1));
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Reply(1, 11)]);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn two_calls_in_flight_with_different_tags_each_get_their_reply() {
    let (s, _lost) = scheduler(2);
    // Answers requests in pairs, the second first.
    let mut held = Vec::new();
    let (pairs, _) = node(move |seen, out| {
        for s in seen {
            if let Seen::Message(Msg::Req(n, reply_to)) = s {
                held.push((*n, *reply_to));
            }
        }
        if held.len() == 2 {
            for (n, reply_to) in held.drain(..).rev() {
                out.reply(reply_to, Msg::Ans(n + 1));
            }
        }
    });
    let callee = s.submit(pairs, "pairs", ()).unwrap();
    let mut got = 0;
    let (caller, log) = node(move |seen, out| {
        if seen.is_empty() {
            out.call(callee, 1, |r| Msg::Req(100, r), Duration::from_secs(60));
            out.call(callee, 2, |r| Msg::Req(200, r), Duration::from_secs(60));
        }
        got += seen.iter().filter(|s| matches!(s, Seen::Reply(..))).count();
        if got == 2 {
            out.done(());
        }
    });
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Reply(2, 201), Seen::Reply(1, 101)]);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_request_to_an_unknown_or_ended_process_is_handed_back_at_once() {
    let (s, lost) = scheduler(1);
    let (quitter, _) = node(|_, out| out.done(()));
    let quitter = s.submit_joinable(quitter, "quit", ()).unwrap();
    let ended = quitter.pid();
    quitter.join().unwrap();
    let unknown = Pid::from_raw(u64::from(ended.index() + 1000));
    let (caller, log) = node(move |seen, out| {
        if seen.is_empty() {
            out.call(unknown, 1, |r| Msg::Req(1, r), Duration::MAX);
            out.call(ended, 2, |r| Msg::Req(2, r), Duration::MAX);
        }
        if seen.len() == 2 {
            out.done(());
        }
    });
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    let got = replies(&log);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got.contains(&Seen::Failed(1, "NoSuchProcess(..)".into())),
        "{got:?}"
    );
    assert!(
        got.contains(&Seen::Failed(2, "Finished(..)".into())),
        "{got:?}"
    );
    s.shutdown(Duration::from_secs(10));
    assert!(lost.lock().unwrap().is_empty(), "{lost:?}");
}

#[test]
fn a_call_to_a_callee_that_ends_before_replying_times_out() {
    let (s, _lost) = scheduler(2);
    // Ends on the request, unanswered.
    let (quitter, _) = node(|seen, out| {
        if !seen.is_empty() {
            out.done(());
        }
    });
    let callee = s.submit(quitter, "quit", ()).unwrap();
    let (caller, log) = one_call(callee, ms(20), ms(1));
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::TimedOut(1)]);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn calls_between_processes_on_different_workers_under_load_all_complete() {
    const CALLERS: u64 = if cfg!(miri) { 2 } else { 16 };
    const CALLS: u64 = if cfg!(miri) { 3 } else { 300 };
    let (s, lost) = scheduler(2);
    let callees: Vec<Pid> = (0..4)
        .map(|_| s.submit(answerer(), "callee", ()).unwrap())
        .collect();
    let done = Arc::new(AtomicUsize::new(0));
    let mut joins = Vec::new();
    for c in 0..CALLERS {
        let callees = callees.clone();
        let done = Arc::clone(&done);
        let mut made = 0;
        let (caller, _) = node(move |seen, out| {
            for s in seen {
                match s {
                    Seen::Reply(tag, n) => {
                        assert_eq!(*n, tag + 1, "the reply to this call");
                    }
                    other => panic!("caller {c}: {other:?}"),
                }
            }
            if made == CALLS {
                done.fetch_add(1, Ordering::SeqCst);
                out.done(());
                return;
            }
            let to = callees[((c + made) % 4) as usize];
            let tag = c * 1_000_000 + made;
            out.call(to, tag, |r| Msg::Req(tag, r), Duration::from_secs(60));
            made += 1;
        });
        joins.push(s.submit_joinable(caller, "caller", ()).unwrap());
    }
    for join in joins {
        join.join().unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst) as u64, CALLERS);
    s.shutdown(Duration::from_secs(10));
    assert!(lost.lock().unwrap().is_empty(), "{lost:?}");
}

#[test]
fn a_go_message_is_an_ordinary_message_beside_calls() {
    let (s, _lost) = scheduler(1);
    let callee = s.submit(answerer(), "callee", ()).unwrap();
    let (caller, log) = node(move |seen, out| {
        if seen.contains(&Seen::Message(Msg::Go)) {
            out.call(callee, 5, |r| Msg::Req(1, r), Duration::from_secs(60));
        }
        if seen.iter().any(|s| matches!(s, Seen::Reply(..))) {
            out.done(());
        }
    });
    let caller = s.submit_joinable(caller, "caller", ()).unwrap();
    s.send(caller.pid(), Msg::Go).unwrap();
    caller.join().unwrap();
    assert_eq!(replies(&log), [Seen::Reply(5, 2)]);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_request_to_a_full_mailbox_is_handed_back_at_once() {
    let (s, lost) = scheduler(2);
    // The callee takes its first step and stays in it until released, so
    // its mailbox (one place) fills behind it.
    let (entered, in_step) = std::sync::mpsc::channel();
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let (busy, _) = node(move |seen, out| {
        if seen.is_empty() {
            entered.send(()).unwrap();
            gate.recv().unwrap();
        } else {
            out.done(());
        }
    });
    let callee = s
        .submit_with(busy, "busy", (), SpawnOptions::new().mailbox_capacity(1))
        .unwrap();
    in_step.recv().unwrap();
    s.send(callee, Msg::Go).unwrap();
    let (caller, log) = node(move |seen, out| {
        if seen.is_empty() {
            out.call(callee, 5, |r| Msg::Req(5, r), Duration::MAX);
        } else {
            out.done(());
        }
    });
    s.submit_joinable(caller, "caller", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(replies(&log), [Seen::Failed(5, "Full(..)".into())]);
    release.send(()).unwrap();
    s.shutdown(Duration::from_secs(10));
    assert!(lost.lock().unwrap().is_empty(), "{lost:?}");
}

#[test]
fn a_call_refused_by_shutdown_is_handed_back_even_with_no_step_to_come() {
    let (s, lost) = scheduler(2);
    let callee = s.submit(answerer(), "callee", ()).unwrap();
    // The caller's first step outlasts the shutdown: it calls once the
    // scheduler is exiting, and is closed without another step.
    let (entered, in_step) = std::sync::mpsc::channel();
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let (caller, log) = node(move |seen, out| {
        if seen.is_empty() {
            entered.send(()).unwrap();
            gate.recv().unwrap();
            out.call(callee, 6, |r| Msg::Req(6, r), Duration::MAX);
        }
    });
    s.submit(caller, "caller", ()).unwrap();
    in_step.recv().unwrap();
    let report = s.shutdown(ms(50));
    // The caller is held in its step; the callee may be too, on a slow
    // interpreter (Miri), if its cancel's step has not ended in time.
    assert!(report.stuck >= 1, "{report:?}");
    release.send(()).unwrap();
    wait_until("the refused call to be reported", || {
        !lost.lock().unwrap().is_empty()
    });
    let lost = lost.lock().unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0], "Reply(6, ShuttingDown(..))");
    assert!(replies(&log).is_empty(), "no step saw it");
}
