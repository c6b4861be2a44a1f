//! Timers that must not reach their process: a cancelled one (even one that
//! fired just before the cancel, or was collected one past the step's cap
//! and carried: cancelled or re-armed by the step that did not see it),
//! those of a process that ends, `send_after`
//! to a process that ended first (to `on_undelivered`), and those pending at
//! shutdown (cancelled and counted).

use super::*;

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

/// The steps of a process whose timer 7 fires one past a full step's cap
/// (`max_events_per_step(2)`), and whose step that gets the cap's worth
/// cancels it (`rearm`: re-arms it, due at once, instead). Its first step
/// sends itself two messages and sets the timer, due at once, after them
/// (sends are delivered before timers are set), and waits (`Wait`:
/// messages do not wake it): the firing wakes it behind them, so its next
/// step gets the two and not the firing, which is taken to find out
/// whether more was queued. Returns each step's events, and how many
/// timers fired.
fn a_timer_past_the_cap(rearm: bool) -> (Vec<Vec<Seen>>, u64) {
    let scheduler: Scheduler<Script> = Scheduler::builder()
        .workers(1)
        .max_events_per_step(2)
        .build()
        .unwrap();
    let steps = Arc::new(Mutex::new(Vec::<Vec<Seen>>::new()));
    let record = Arc::clone(&steps);
    let (process, _) = script(move |seen, out| {
        let mut steps = record.lock().unwrap();
        steps.push(seen.to_vec());
        match steps.len() {
            1 => {
                let me = out.pid();
                out.send(me, Msg::Text("cancel"));
                out.send(me, Msg::Text("note"));
                out.wake_after(7, Duration::ZERO);
                out.set_status(stepsched::process::Status::Wait);
            }
            2 if rearm => out.wake_after(7, Duration::ZERO),
            2 => out.cancel_timer(7),
            _ if seen.contains(&Seen::Message(Msg::Text("end"))) => out.done(()),
            _ => {}
        }
    });
    let handle = scheduler.submit_joinable(process, "capped", ()).unwrap();
    let fired = if rearm { 2 } else { 1 };
    wait_until("the step that cancels, and the timers fired", || {
        steps.lock().unwrap().len() >= 2 && scheduler.stats().timers.fired == fired
    });
    if rearm {
        wait_until("the re-armed timer", || {
            (steps.lock().unwrap().iter()).any(|s| s.contains(&Seen::Timer(7)))
        });
    }
    scheduler.send(handle.pid(), Msg::Text("end")).unwrap();
    assert_eq!(common::joined(handle), Ok(()));
    let steps = steps.lock().unwrap().clone();
    (steps, scheduler.stats().timers.fired)
}

/// A timer that fired and was collected one past a full step's cap (not
/// given to that step) never comes after that step cancels it: the cancel
/// takes it out of the carry.
#[test]
fn a_timer_collected_past_the_cap_is_cancelled_by_the_step_before_it() {
    let (steps, fired) = a_timer_past_the_cap(false);
    let (cancel, note) = (Msg::Text("cancel"), Msg::Text("note"));
    assert_eq!(
        steps[1],
        [Seen::Message(cancel), Seen::Message(note)],
        "the cap's worth"
    );
    assert_eq!(fired, 1, "the timer fired before the cancelling step");
    for (i, step) in steps.iter().enumerate() {
        assert!(!step.contains(&Seen::Timer(7)), "step {i}: {steps:?}");
    }
}

/// Re-armed in that step instead, its earlier firing does not pass for
/// the new arming's: the timer comes once.
#[test]
fn a_timer_collected_past_the_cap_and_re_armed_comes_once() {
    let (steps, fired) = a_timer_past_the_cap(true);
    assert_eq!(fired, 2, "both armings fired");
    let timers = (steps.iter().flatten())
        .filter(|s| **s == Seen::Timer(7))
        .count();
    assert_eq!(timers, 1, "{steps:?}");
    assert!(!steps[1].contains(&Seen::Timer(7)));
}
