//! `Scheduler::exit`: a step's exit signal, sent from a thread as
//! `Pid::OUTSIDE`. The same rules as `StepOutput::exit` (the parent
//! module's tests), and its errors.

use super::*;
use stepsched::sched::{SendError, TerminateError};

#[test]
fn an_exit_from_outside_ends_a_process_that_does_not_trap_and_its_watchers_are_told() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    let (k, kh) = node(&s, &log);
    run_then_wait(&s, k, vec![Op::Monitor(t)]);
    assert_eq!(s.exit(t, ExitReason::Shutdown), Ok(()));
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    wait_until("the Down", || !log.downs_of(k).is_empty());
    assert_eq!(log.downs_of(k), vec![(t, ExitReason::Shutdown)]);
    assert_eq!(log.closes(t), 1);
    run(&s, k, vec![Op::Finish]);
    assert_eq!(joined(kh), Ok(()));
}

#[test]
fn an_exit_from_outside_to_a_trapping_process_comes_as_a_down_from_outside() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    run_then_wait(&s, t, vec![Op::Trap(true)]);
    for reason in [summary("stop"), ExitReason::Done, ExitReason::Killed] {
        assert_eq!(s.exit(t, reason), Ok(()));
    }
    wait_until("three Downs", || log.downs_of(t).len() == 3);
    assert_eq!(
        log.downs_of(t),
        vec![
            (Pid::OUTSIDE, summary("stop")),
            (Pid::OUTSIDE, ExitReason::Done),
            (Pid::OUTSIDE, ExitReason::Killed)
        ]
    );
    run(&s, t, vec![Op::Finish]);
    assert_eq!(joined(th), Ok(()), "it went on");
}

#[test]
fn a_normal_exit_from_outside_to_a_process_that_does_not_trap_does_nothing() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    assert_eq!(s.exit(t, ExitReason::Done), Ok(()));
    // Behind the exit in `t`'s mailbox: it is decided first.
    run(&s, t, vec![Op::Finish]);
    assert_eq!(joined(th), Ok(()));
    assert!(log.downs_of(t).is_empty());
}

#[test]
fn an_exit_from_outside_ends_a_process_waiting_in_a_command_without_its_completion() {
    let (s, held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (t, th) = node(&s, &log);
    run(&s, t, vec![Op::Wait]);
    held.wait_for("the command", 1);
    assert_eq!(s.exit(t, summary("stop")), Ok(()));
    assert_eq!(joined(th), Err(ProcessError::Terminated));
    let completer = held.lock().pop().expect("the command is still held");
    assert!(completer.succeed(()).is_err(), "its process is gone");
    assert_eq!(log.closes(t), 1);
}

#[test]
fn an_exit_from_outside_names_why_it_was_refused() {
    let (s, _held) = scheduler(2);
    let log = Arc::new(Log::default());
    let (ended, eh) = node(&s, &log);
    run(&s, ended, vec![Op::Finish]);
    assert_eq!(joined(eh), Ok(()));
    assert_eq!(s.exit(ended, summary("x")), Err(TerminateError::Finished));
    let never = Pid::from_raw(u64::from(u32::MAX - 1) | (7 << 32));
    assert_eq!(
        s.exit(never, summary("x")),
        Err(TerminateError::NoSuchProcess)
    );
    // `Pid::OUTSIDE` names no process: nothing can be sent to it.
    assert_eq!(
        s.exit(Pid::OUTSIDE, summary("x")),
        Err(TerminateError::NoSuchProcess)
    );
    assert!(matches!(
        s.send(Pid::OUTSIDE, Msg::Script(vec![])),
        Err(SendError::NoSuchProcess(_))
    ));
    let (t, _th) = node(&s, &log);
    s.shutdown(Duration::from_secs(5));
    assert_eq!(s.exit(t, summary("x")), Err(TerminateError::ShuttingDown));
}
