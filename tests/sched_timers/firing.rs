//! When timers fire: in deadline order and never before their deadline, at
//! once for an instant that has passed, once for a re-armed tag, once for an
//! idle process a message reaches at the same moment, while their worker runs
//! a long step; and the dump's count of them.

use super::*;

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
