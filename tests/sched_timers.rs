//! Proves timers (`StepOutput::wake_after`/`wake_at`/`cancel_timer`,
//! `yield_command_timeout`, `Scheduler::send_after`): they fire in deadline
//! order and never before their deadline; a cancelled timer never reaches
//! its process, even when it fired just before the cancel, nor passes for
//! the timer re-armed with its tag; a process's
//! timers end with it; `send_after` to a process that ends first goes to
//! `on_undelivered`; shutdown cancels and counts pending timers; a timer
//! wakes an Idle process exactly once even when a message lands at the
//! same moment; a command's timeout fires, or is cancelled by the
//! completion, and never both.
//!
//! No test asserts a bound on lateness (a loaded machine must not fail
//! them): only "at or after the deadline", and that an event never comes.
//!
//! ```text
//! cargo test --test sched_timers
//! ```

mod common;
use common::{wait_until, Held};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{Command, CommandError, Event, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Text(&'static str),
    /// Set timer `tag` at the instant.
    Arm(u64, Instant),
    Ping(u64),
}

#[derive(Debug)]
enum Cmd {
    /// The handler keeps the completer (`Held`).
    Hold,
    /// Completed inline with the number.
    Echo(u64),
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Hold => "hold",
            Cmd::Echo(_) => "echo",
        }
    }
}

/// What a step saw, with when.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Timer(u64),
    Message(Msg),
    Reply(u64, u64),
    Failed(u64, String),
    TimedOut(u64),
    Cancel,
}

type Log = Arc<Mutex<Vec<(Seen, Instant)>>>;
type StepFn = Box<dyn FnMut(&[Seen], &mut StepOutput<'_, Script>) + Send>;

/// A process whose steps are a closure over what it has seen (also logged).
struct Script {
    log: Log,
    step: StepFn,
}

fn script(
    step: impl FnMut(&[Seen], &mut StepOutput<'_, Script>) + Send + 'static,
) -> (Script, Log) {
    let log = Log::default();
    let process = Script {
        log: Arc::clone(&log),
        step: Box::new(step),
    };
    (process, log)
}

impl Process for Script {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
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
        let now = Instant::now();
        let seen: Vec<Seen> = events
            .drain(..)
            .map(|event| match event {
                Event::Timer { tag } => Seen::Timer(tag),
                Event::Message(m) => Seen::Message(m),
                Event::Completion { tag, result } => match result {
                    Ok(n) => Seen::Reply(tag, n),
                    Err(CommandError::TimedOut) => Seen::TimedOut(tag),
                    Err(e) => Seen::Failed(tag, e.to_string()),
                },
                Event::Cancel(_) => Seen::Cancel,
                other => panic!("unexpected event {other:?}"),
            })
            .collect();
        self.log
            .lock()
            .unwrap()
            .extend(seen.iter().map(|s| (s.clone(), now)));
        (self.step)(&seen, out);
        Ok(())
    }
}

fn scheduler(workers: usize) -> Scheduler<Script> {
    Scheduler::builder().workers(workers).build().unwrap()
}

fn seen(log: &Log) -> Vec<Seen> {
    log.lock().unwrap().iter().map(|(s, _)| s.clone()).collect()
}

fn count(log: &Log, what: &Seen) -> usize {
    seen(log).iter().filter(|s| *s == what).count()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn timers_fire_in_deadline_order_never_before_their_deadline() {
    let scheduler = scheduler(2);
    let start = Arc::new(Mutex::new(None::<Instant>));
    let set = Arc::clone(&start);
    let mut armed = false;
    let (process, log) = script(move |seen, out| {
        if !armed {
            armed = true;
            *set.lock().unwrap() = Some(Instant::now());
            // Set out of order; the 3 ms one twice (the second replaces).
            out.wake_after(30, ms(30));
            out.wake_after(3, ms(1));
            out.wake_after(10, ms(10));
            out.wake_after(3, ms(3));
            out.wake_after(20, ms(20));
        } else if seen.contains(&Seen::Timer(30)) {
            out.done(());
        }
    });
    let handle = scheduler.submit_joinable(process, "order", ()).unwrap();
    handle.join().unwrap();
    let start = start.lock().unwrap().unwrap();
    let log = log.lock().unwrap().clone();
    let timers: Vec<u64> = log
        .iter()
        .filter_map(|(s, _)| match s {
            Seen::Timer(tag) => Some(*tag),
            _ => None,
        })
        .collect();
    assert_eq!(timers, vec![3, 10, 20, 30], "deadline order, once each");
    for (s, at) in &log {
        if let Seen::Timer(tag) = s {
            assert!(
                *at >= start + ms(*tag),
                "timer {tag} early: {:?}",
                *at - start
            );
        }
    }
    let stats = scheduler.stats().timers;
    assert_eq!(stats.fired, 4);
    assert_eq!(stats.cancelled, 1, "the replaced 1 ms timer");
}

#[test]
fn wake_at_an_instant_that_passed_fires_at_once_through_an_event() {
    let scheduler = scheduler(1);
    let mut armed = false;
    let (process, log) = script(move |seen, out| {
        if !armed {
            armed = true;
            out.wake_at(7, Instant::now() - ms(5));
        } else if seen.contains(&Seen::Timer(7)) {
            out.done(());
        }
    });
    scheduler
        .submit_joinable(process, "past", ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(seen(&log), vec![Seen::Timer(7)]);
}

#[test]
fn a_cancelled_timer_never_reaches_its_process() {
    let scheduler = scheduler(2);
    // How many timers have fired, as the test last read the stats.
    let fired = Arc::new(AtomicUsize::new(0));
    let go = Arc::clone(&fired);
    // Timers to catch that fired before the step meant to cancel them
    // began (see below); the last one to catch has tag `3 + early`.
    let early = Arc::new(AtomicUsize::new(0));
    let early_count = Arc::clone(&early);
    let mut catching = 3;
    let mut started = false;
    let mut cancelled = false;
    let (process, log) = script(move |seen, out| {
        if !started {
            started = true;
            // Cancelled in the step that set it.
            out.wake_after(1, ms(1));
            out.cancel_timer(1);
            // Cancelled before it fires.
            out.wake_after(2, Duration::from_secs(60));
            // To catch: fires while the next step runs (the other worker
            // fires it: this one is busy), then is cancelled: its event is
            // in the mailbox already and must be dropped. Its delay is
            // scaled under Miri, whose clock runs by the instruction: the
            // 10 ms of a native run pass there before the next step begins.
            out.wake_after(catching, common::ms(10));
            out.set_status(stepsched::process::Status::Continue);
        } else if cancelled {
            if seen.contains(&Seen::Message(Msg::Text("end"))) {
                out.done(());
            }
        } else if seen.contains(&Seen::Timer(catching)) {
            // It fired before this step began (a stalled machine, or Miri,
            // whose clock runs by the instruction): rightly delivered, as
            // nothing cancelled it yet, and it proves nothing. Again, with
            // the next tag.
            early_count.fetch_add(1, Ordering::Relaxed);
            catching += 1;
            out.wake_after(catching, common::ms(10));
            out.set_status(stepsched::process::Status::Continue);
        } else {
            // Wait, in the step, for the timer to fire: timers 3 to
            // `catching` all have then.
            let deadline = Instant::now() + Duration::from_secs(60);
            while go.load(Ordering::Acquire) < (catching - 2) as usize && Instant::now() < deadline
            {
                thread::sleep(ms(1));
            }
            out.cancel_timer(2);
            out.cancel_timer(catching);
            cancelled = true;
        }
    });
    let handle = scheduler.submit_joinable(process, "cancel", ()).unwrap();
    wait_until("a timer to catch fires, and both cancels", || {
        let timers = scheduler.stats().timers;
        fired.store(timers.fired as usize, Ordering::Release);
        timers.cancelled == 2
    });
    scheduler.send(handle.pid(), Msg::Text("end")).unwrap();
    handle.join().unwrap();
    let early = early.load(Ordering::Relaxed);
    eprintln!("{early} timers to catch fired before their step");
    let mut expected: Vec<Seen> = (3..3 + early as u64).map(Seen::Timer).collect();
    expected.push(Seen::Message(Msg::Text("end")));
    assert_eq!(seen(&log), expected, "the caught timer never came");
    let stats = scheduler.stats();
    assert_eq!(
        stats.undelivered, 0,
        "a dropped timer event is not undelivered"
    );
    assert_eq!(stats.timers.cancelled, 2, "timers 1 and 2 left the wheel");
    assert_eq!(
        stats.timers.fired,
        early as u64 + 1,
        "the caught timer fired (and was dropped)"
    );
}

/// A timer that fires while its process runs a step, and that this step
/// re-arms with the same tag: the first firing's event is in the mailbox
/// already (its cancel came too late) and must be dropped, not taken for
/// the new timer's, which comes once, at or after its own deadline.
#[test]
fn a_timer_re_armed_after_it_fired_comes_once_for_the_new_deadline() {
    let scheduler = scheduler(2);
    // How many timers have fired, as the test last read the stats.
    let fired = Arc::new(AtomicUsize::new(0));
    let go = Arc::clone(&fired);
    let rearmed = Arc::new(Mutex::new(None::<Instant>));
    let set = Arc::clone(&rearmed);
    // Firings that came before the step meant to catch them (see below).
    let mut early = 0;
    let mut started = false;
    let mut armed_again = false;
    let (process, log) = script(move |seen, out| {
        if !started {
            started = true;
            out.wake_after(5, common::ms(10));
            out.set_status(stepsched::process::Status::Continue);
        } else if armed_again {
            if seen.contains(&Seen::Timer(5)) {
                out.done(());
            }
        } else if seen.contains(&Seen::Timer(5)) {
            // It fired before this step began (a stalled machine, or Miri):
            // rightly delivered, and it proves nothing. Again.
            early += 1;
            out.wake_after(5, common::ms(10));
            out.set_status(stepsched::process::Status::Continue);
        } else {
            // Wait, in the step, for the timer to fire (the other worker
            // fires it: this one is busy), then re-arm it.
            let deadline = Instant::now() + Duration::from_secs(60);
            while go.load(Ordering::Acquire) <= early && Instant::now() < deadline {
                thread::sleep(ms(1));
            }
            *set.lock().unwrap() = Some(Instant::now());
            out.wake_after(5, common::ms(30));
            armed_again = true;
        }
    });
    let handle = scheduler.submit_joinable(process, "re-arm", ()).unwrap();
    wait_until("the re-armed timer fires", || {
        let timers = scheduler.stats().timers;
        fired.store(timers.fired as usize, Ordering::Release);
        rearmed.lock().unwrap().is_some() && handle.is_finished()
    });
    handle.join().unwrap();
    let rearmed = rearmed.lock().unwrap().unwrap();
    let log = log.lock().unwrap().clone();
    let after: Vec<&(Seen, Instant)> = log.iter().filter(|(_, at)| *at >= rearmed).collect();
    assert_eq!(after.len(), 1, "one event after the re-arm: {after:?}");
    let (what, at) = after[0];
    assert_eq!(*what, Seen::Timer(5));
    assert!(
        *at >= rearmed + common::ms(30),
        "the first firing passed for the second: {:?} after the re-arm",
        *at - rearmed
    );
    let stats = scheduler.stats().timers;
    assert_eq!(stats.cancelled, 0, "the first had fired: nothing to cancel");
    assert_eq!(stats.fired, log.len() as u64 + 1, "one firing dropped");
}

#[test]
fn a_process_that_ends_takes_its_timers_with_it() {
    let undelivered = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&undelivered);
    let scheduler = Scheduler::builder()
        .workers(2)
        .on_undelivered(move |_, _| {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let mut handles = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..20 {
        let mut armed = false;
        let (process, _) = script(move |seen, out| {
            if !armed {
                armed = true;
                out.wake_after(1, ms(30));
                out.wake_after(2, ms(60_000));
            } else if seen.contains(&Seen::Message(Msg::Text("stop"))) {
                // Ends by itself, with both timers pending.
                out.done(());
            }
        });
        let handle = scheduler.submit_joinable(process, "end", ()).unwrap();
        pids.push(handle.pid());
        handles.push(handle);
    }
    // Both timers are set in the first step; the 30 ms one may already
    // have fired on a slow machine (under Miri it does), and the count
    // then says 1.
    wait_until("the timers are set", || {
        let dump = scheduler.processes();
        dump.len() == 20 && dump.iter().all(|p| p.timers >= 1 && p.steps >= 1)
    });
    // Half end by themselves, half are terminated (closed without a step).
    for (i, pid) in pids.iter().enumerate() {
        if i % 2 == 0 {
            scheduler.send(*pid, Msg::Text("stop")).unwrap();
        } else {
            scheduler.terminate(*pid).unwrap();
        }
    }
    for handle in handles {
        let _ = handle.join();
    }
    // A slow machine may fire a 30 ms timer before its process ends (its
    // event then reached the live process); every other one was cancelled.
    let stats = scheduler.stats();
    assert_eq!(stats.timers.cancelled + stats.timers.fired, 40, "{stats}");
    // Past the 30 ms deadlines: nothing more fires for ended processes.
    thread::sleep(ms(50));
    let after = scheduler.stats();
    assert_eq!(after.timers.fired, stats.timers.fired);
    assert_eq!(after.undelivered, 0);
    assert_eq!(undelivered.load(Ordering::Relaxed), 0);
}

#[test]
fn send_after_reaches_its_process_or_on_undelivered() {
    let lost = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lost);
    let scheduler = Scheduler::builder()
        .workers(2)
        .on_undelivered(move |pid: Pid, event: Event<Script>| {
            if let Event::Message(m) = event {
                sink.lock().unwrap().push((pid, m));
            }
        })
        .build()
        .unwrap();
    // One that waits for it.
    let (waiter, log) = script(|seen, out| {
        if seen.contains(&Seen::Message(Msg::Text("later"))) {
            out.done(());
        }
    });
    let waiter = scheduler.submit_joinable(waiter, "wait", ()).unwrap();
    let sent = Instant::now();
    scheduler
        .send_after(waiter.pid(), Msg::Text("later"), ms(10))
        .unwrap();
    waiter.join().unwrap();
    let (_, at) = log.lock().unwrap()[0];
    assert!(at >= sent + ms(10), "early by {:?}", sent + ms(10) - at);

    // One that ends first: the message goes to `on_undelivered` (unless
    // the machine stalled 50 ms between the two calls below: then the
    // process saw it first; under Miri, whose clock runs by the
    // instruction, the timer may also fire as the process ends).
    let (quitter, quitter_log) = script(|seen, out| {
        if seen.contains(&Seen::Message(Msg::Text("stop"))) {
            out.done(());
        }
    });
    let quitter = scheduler.submit_joinable(quitter, "quit", ()).unwrap();
    let pid = quitter.pid();
    scheduler
        .send_after(pid, Msg::Text("too late"), ms(50))
        .unwrap();
    scheduler.send(pid, Msg::Text("stop")).unwrap();
    quitter.join().unwrap();
    // It is not the process's own timer: its end does not cancel it.
    wait_until("the late message's timer fires", || {
        scheduler.stats().timers.fired == 2
    });

    // Refused at once, message handed back: finished, never issued.
    let refused = scheduler
        .send_after(pid, Msg::Text("x"), ms(1))
        .unwrap_err();
    assert!(matches!(
        refused,
        stepsched::sched::SendError::Finished(Msg::Text("x"))
    ));
    let unknown = Pid::from_raw(u64::from(pid.index() + 1000));
    let refused = scheduler
        .send_after(unknown, Msg::Text("y"), ms(1))
        .unwrap_err();
    assert!(matches!(
        refused,
        stepsched::sched::SendError::NoSuchProcess(Msg::Text("y"))
    ));

    // The fired message is reported when the timer finds the process
    // ended, or by the worker that closes it; but if its push raced the end
    // (the process ended after `deliver`'s check, and the closing worker
    // drained the mailbox before the push), it waits there, reported when
    // the slot is next used or at the end of shutdown
    // (`Shared::report_stranded`). Under Miri 3 to 6 seeds of 16 take that
    // path: waiting for the report without the shutdown hung.
    let reported_before = lost.lock().unwrap().len();
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
    eprintln!(
        "reported before the shutdown: {reported_before}; seen by the process: {}",
        seen(&quitter_log).contains(&Seen::Message(Msg::Text("too late")))
    );
    let lost = lost.lock().unwrap();
    if seen(&quitter_log).contains(&Seen::Message(Msg::Text("too late"))) {
        assert!(lost.is_empty(), "delivered and reported: {lost:?}");
    } else {
        assert_eq!(*lost, vec![(pid, Msg::Text("too late"))]);
    }
}

#[test]
fn shutdown_cancels_pending_timers_and_counts_them() {
    const N: usize = 10;
    let lost = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lost);
    let scheduler = Scheduler::builder()
        .workers(2)
        .on_undelivered(move |_, event: Event<Script>| {
            if let Event::Message(m) = event {
                sink.lock().unwrap().push(m);
            }
        })
        .build()
        .unwrap();
    let mut pids = Vec::new();
    for _ in 0..N {
        let mut armed = false;
        let (process, _) = script(move |seen, out| {
            if !armed {
                armed = true;
                out.wake_after(1, Duration::from_secs(60));
                out.wake_after(2, Duration::from_secs(3600));
            } else if seen.contains(&Seen::Cancel) {
                out.done(());
            }
        });
        pids.push(scheduler.submit(process, "sleep", ()).unwrap());
    }
    wait_until("every timer is set", || {
        let dump = scheduler.processes();
        dump.len() == N && dump.iter().all(|p| p.timers == 2)
    });
    scheduler
        .send_after(pids[0], Msg::Text("in an hour"), Duration::from_secs(3600))
        .unwrap();
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!(report.forced, 0);
    assert_eq!(report.timers_cancelled, 2 * N + 1);
    assert_eq!(*lost.lock().unwrap(), vec![Msg::Text("in an hour")]);
    assert_eq!(scheduler.stats().timers.fired, 0);
    let refused = scheduler.send_after(pids[0], Msg::Text("no"), ms(1));
    assert!(matches!(
        refused,
        Err(stepsched::sched::SendError::ShuttingDown(_))
    ));
}

#[test]
fn a_timer_wakes_an_idle_process_exactly_once_even_with_a_message_at_that_moment() {
    const ROUNDS: u64 = if cfg!(miri) { 5 } else { 200 };
    let scheduler = scheduler(2);
    let done = Arc::new(AtomicUsize::new(0));
    let rounds_done = Arc::clone(&done);
    let mut timer_seen = 0;
    let mut ping_seen = 0;
    let (process, log) = script(move |seen, out| {
        for s in seen {
            match *s {
                Seen::Message(Msg::Arm(tag, at)) => out.wake_at(tag, at),
                Seen::Timer(_) => timer_seen += 1,
                Seen::Message(Msg::Ping(_)) => ping_seen += 1,
                _ => {}
            }
        }
        // A round is over when its timer and its ping have both come.
        let rounds = timer_seen.min(ping_seen);
        rounds_done.store(rounds, Ordering::Release);
        if rounds == ROUNDS as usize {
            out.done(());
        }
        // Idle: the timer or the message wakes it.
    });
    let handle = scheduler.submit_joinable(process, "race", ()).unwrap();
    for round in 0..ROUNDS {
        let at = Instant::now() + Duration::from_micros(500 + round % 7 * 100);
        scheduler.send(handle.pid(), Msg::Arm(round, at)).unwrap();
        while Instant::now() < at {
            std::hint::spin_loop();
        }
        scheduler.send(handle.pid(), Msg::Ping(round)).unwrap();
        wait_until("the round ends", || {
            done.load(Ordering::Acquire) > round as usize
        });
    }
    handle.join().unwrap();
    for round in 0..ROUNDS {
        assert_eq!(
            count(&log, &Seen::Timer(round)),
            1,
            "round {round}: one timer"
        );
        assert_eq!(count(&log, &Seen::Message(Msg::Ping(round))), 1);
    }
    assert_eq!(scheduler.stats().timers.fired, ROUNDS);
}

#[test]
fn a_command_timeout_fires_when_its_handler_is_late_and_the_late_completion_is_refused() {
    let held: Held<Script> = Held::default();
    let scheduler = Scheduler::builder()
        .workers(2)
        .handler("hold", held.handler())
        .build()
        .unwrap();
    let started = Arc::new(Mutex::new(None::<Instant>));
    let set = Arc::clone(&started);
    let mut step = 0;
    let (process, log) = script(move |seen, out| {
        step += 1;
        if step == 1 {
            *set.lock().unwrap() = Some(Instant::now());
            out.yield_command_timeout(5, Cmd::Hold, ms(10));
        } else if seen.contains(&Seen::Message(Msg::Text("end"))) {
            out.done(());
        } else {
            // Waits for the end message; a stale completion must not come.
            out.set_status(stepsched::process::Status::Idle);
        }
    });
    let handle = scheduler.submit_joinable(process, "timeout", ()).unwrap();
    held.wait_for("the command", 1);
    wait_until("the timeout", || seen(&log).contains(&Seen::TimedOut(5)));
    let (_, at) = log.lock().unwrap()[0];
    let started = started.lock().unwrap().unwrap();
    assert!(at >= started + ms(10), "early: {:?}", at - started);
    // The late completion is queued, then refused as stale by the step.
    let completer = held.lock().pop().unwrap();
    completer.succeed(99).unwrap();
    wait_until("the stale completion is counted", || {
        scheduler.stats().unknown_tags == 1
    });
    scheduler.send(handle.pid(), Msg::Text("end")).unwrap();
    handle.join().unwrap();
    assert_eq!(
        seen(&log),
        vec![Seen::TimedOut(5), Seen::Message(Msg::Text("end"))]
    );
}

#[test]
fn a_command_completed_in_time_cancels_its_timeout() {
    let scheduler = Scheduler::builder()
        .workers(2)
        .handler("echo", |cmd: Cmd, completer| {
            let Cmd::Echo(n) = cmd else { unreachable!() };
            // From another thread, a little later: the timeout is in the
            // wheel when the completion comes.
            thread::spawn(move || {
                thread::sleep(ms(2));
                completer.succeed(n).unwrap();
            });
        })
        .build()
        .unwrap();
    let mut step = 0;
    let (process, log) = script(move |seen, out| {
        step += 1;
        if step == 1 {
            out.yield_command_timeout(1, Cmd::Echo(41), Duration::from_secs(60));
            out.yield_command_timeout(2, Cmd::Echo(42), Duration::from_secs(10));
        } else if seen.contains(&Seen::Message(Msg::Text("end"))) {
            out.done(());
        }
    });
    let handle = scheduler.submit_joinable(process, "in time", ()).unwrap();
    wait_until("both replies", || {
        let s = seen(&log);
        s.contains(&Seen::Reply(1, 41)) && s.contains(&Seen::Reply(2, 42))
    });
    wait_until("both timeouts cancelled", || {
        scheduler.stats().timers.cancelled == 2
    });
    // Cancelled: out of the wheel, they can never fire.
    scheduler.send(handle.pid(), Msg::Text("end")).unwrap();
    handle.join().unwrap();
    assert!(!seen(&log).iter().any(|s| matches!(s, Seen::TimedOut(_))));
    let stats = scheduler.stats();
    assert_eq!(stats.timers.fired, 0);
    assert_eq!(stats.unknown_tags, 0);
}

#[test]
fn the_dump_shows_pending_timers() {
    let scheduler = scheduler(1);
    let mut step = 0;
    let (process, _) = script(move |seen, out| {
        step += 1;
        if step == 1 {
            out.wake_after(1, Duration::from_secs(60));
            out.wake_after(2, Duration::from_secs(60));
        } else if seen.contains(&Seen::Message(Msg::Text("one"))) {
            out.cancel_timer(1);
        } else if seen.contains(&Seen::Message(Msg::Text("end"))) {
            out.done(());
        }
    });
    let handle = scheduler.submit_joinable(process, "dump", ()).unwrap();
    wait_until("two timers", || scheduler.processes()[0].timers == 2);
    scheduler.send(handle.pid(), Msg::Text("one")).unwrap();
    wait_until("one timer", || scheduler.processes()[0].timers == 1);
    scheduler.send(handle.pid(), Msg::Text("end")).unwrap();
    handle.join().unwrap();
    assert_eq!(scheduler.stats().timers.cancelled, 2);
}

#[test]
fn a_worker_in_a_long_step_does_not_hold_its_timers_hostage() {
    // The sleeper sets its timer in its worker's wheel, then spawns a child
    // that runs a 1 s step: on that worker (LIFO), or stolen. Either way
    // another worker fires the timer while the long step runs.
    let scheduler = scheduler(2);
    let long_end = Arc::new(Mutex::new(None::<Instant>));
    let end = Arc::clone(&long_end);
    let mut started = false;
    let (sleeper, log) = script(move |seen, out| {
        if !started {
            started = true;
            out.wake_after(1, ms(5));
            let end = Arc::clone(&end);
            let (long, _) = script(move |_, out| {
                thread::sleep(Duration::from_secs(1));
                *end.lock().unwrap() = Some(Instant::now());
                out.done(());
            });
            out.spawn(long, "long", ()).expect("spawn");
        } else if seen.contains(&Seen::Timer(1)) {
            out.done(());
        }
    });
    scheduler
        .submit_joinable(sleeper, "sleep", ())
        .unwrap()
        .join()
        .unwrap();
    let (_, fired_at) = log.lock().unwrap()[0].clone();
    wait_until("the long step ends", || long_end.lock().unwrap().is_some());
    let long_end = long_end.lock().unwrap().unwrap();
    assert!(
        fired_at < long_end,
        "the timer waited for the long step to end"
    );
}
