//! A command's timeout (`yield_command_timeout`): it fires when the handler
//! is late, and then the late completion is refused; a completion in time
//! cancels it. Never both.

use super::*;

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
