//! `StepOutput::wake_every`: ticks until cancelled, never two of one
//! interval queued at once (a late process gets no burst), period zero
//! taken as one tick, and the interval ends with its process.

use super::*;

#[test]
fn an_interval_ticks_until_cancelled_and_never_after() {
    let scheduler = scheduler(2);
    let mut ticks = 0;
    let (process, log) = script(move |seen, out| {
        if seen.is_empty() {
            out.wake_every(1, ms(1));
        }
        for s in seen {
            match s {
                Seen::Timer(1) => {
                    ticks += 1;
                    if ticks == 5 {
                        out.cancel_timer(1);
                        // Long enough for ticks that would still come.
                        out.wake_after(2, ms(20));
                    }
                }
                Seen::Timer(2) => out.done(()),
                _ => {}
            }
        }
    });
    let beat = scheduler.submit_joinable(process, "beat", ()).unwrap();
    beat.join().unwrap();
    assert_eq!(count(&log, &Seen::Timer(1)), 5, "{:?}", seen(&log));
    assert_eq!(seen(&log).last(), Some(&Seen::Timer(2)));
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!(report.timers_cancelled, 0, "{report:?}");
}

#[test]
fn no_two_ticks_of_an_interval_are_queued_at_once() {
    const STEPS: usize = if cfg!(miri) { 3 } else { 10 };
    let scheduler = scheduler(1);
    let mut ticks = 0;
    let (process, log) = script(move |seen, out| {
        if seen.is_empty() {
            // A period far shorter than the step.
            out.wake_every(1, Duration::from_micros(50));
        }
        let now = seen.iter().filter(|s| **s == Seen::Timer(1)).count();
        assert!(now <= 1, "{now} ticks in one step");
        ticks += now;
        thread::sleep(ms(2));
        if ticks == STEPS {
            out.done(());
        }
    });
    let late = scheduler.submit_joinable(process, "late", ()).unwrap();
    late.join().unwrap();
    let steps: Vec<Seen> = seen(&log);
    assert_eq!(
        steps.iter().filter(|s| **s == Seen::Timer(1)).count(),
        STEPS
    );
    assert!(steps.iter().all(|s| *s == Seen::Timer(1)), "{steps:?}");
    scheduler.shutdown(Duration::from_secs(10));
}

#[test]
fn an_interval_of_period_zero_ticks_every_wheel_tick() {
    let scheduler = scheduler(1);
    let mut ticks = 0;
    let (process, log) = script(move |seen, out| {
        if seen.is_empty() {
            out.wake_every(7, Duration::ZERO);
        }
        ticks += seen.iter().filter(|s| **s == Seen::Timer(7)).count();
        if ticks >= 3 {
            out.done(());
        }
    });
    let fast = scheduler.submit_joinable(process, "fast", ()).unwrap();
    fast.join().unwrap();
    assert_eq!(count(&log, &Seen::Timer(7)), 3);
    scheduler.shutdown(Duration::from_secs(10));
}

#[test]
fn an_interval_ends_with_its_process() {
    let scheduler = scheduler(2);
    let (process, log) = script(move |seen, out| {
        if seen.is_empty() {
            out.wake_every(1, ms(1));
        }
        if seen.contains(&Seen::Message(Msg::Text("stop"))) {
            out.done(());
        }
    });
    let beat = scheduler.submit_joinable(process, "beat", ()).unwrap();
    let pid = beat.pid();
    wait_until("a tick", || count(&log, &Seen::Timer(1)) >= 2);
    scheduler.send(pid, Msg::Text("stop")).unwrap();
    beat.join().unwrap();
    // The wheels hold nothing of it: shutdown finds no timer to cancel.
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!(report.timers_cancelled, 0, "{report:?}");
}
