//! Proves the deterministic simulation (`Builder::simulation`): one seed
//! replays one run step for step (the whole step log, the outcomes, the
//! step count and the virtual time), other seeds interleave differently,
//! the guarantees of the real scheduler (per-sender FIFO, exactly one Down
//! per monitor, no timer early) hold over many seeds, virtual time runs
//! an hour of timers at once, a drive stops at step N, a join that could
//! never return panics with its seed, and shutdown is driven too.
//!
//! ```text
//! cargo test --test simulation
//! ```

mod faults;
mod supervised;
mod system;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use stepsched::process::{Cancel, Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::{Scheduler, Stopped};
use system::{simulated, Node, Summary};

/// Seeds per property: enough interleavings to matter, few enough for
/// Miri-free CI in a second or two.
const SEEDS: u64 = if cfg!(miri) { 2 } else { 200 };

/// One run of the system: its log, its outcome, its steps and its
/// virtual time.
type Replay = (Vec<(Pid, usize)>, (Summary, u64), u64, Duration);

fn run(seed: u64, workers: usize) -> Replay {
    let (scheduler, log) = simulated(seed, workers);
    let coordinator = scheduler
        .submit_joinable(Node::coordinator(6, 5), "coordinate", ())
        .unwrap();
    let outcome = coordinator.join().expect("the coordinator's summary");
    let steps = scheduler.simulated_steps().unwrap();
    let time = scheduler.virtual_time().unwrap();
    let report = scheduler.shutdown(Duration::from_secs(1));
    assert_eq!((report.forced, report.stuck), (0, 0));
    let log = log.lock().unwrap().clone();
    (log, outcome, steps, time)
}

#[test]
fn one_seed_replays_the_same_run_step_for_step() {
    for seed in 0..SEEDS.min(20) {
        let first = run(seed, 4);
        let second = run(seed, 4);
        assert!(!first.0.is_empty());
        assert_eq!(first, second, "seed {seed}");
    }
}

#[test]
fn different_seeds_interleave_the_workers_differently() {
    let logs: HashSet<_> = (0..10).map(|seed| run(seed, 4).0).collect();
    assert_eq!(logs.len(), 10, "ten seeds, ten different schedules");
}

#[test]
fn fifo_per_sender_and_one_down_per_monitor_hold_over_many_seeds() {
    // The workers check FIFO per sender as they receive (a gap fails the
    // step, and the coordinator's join with it); the coordinator counts
    // each worker's Downs.
    for seed in 0..SEEDS {
        let workers = 1 + (seed as usize % 4);
        let (_, (summary, _), _, _) = run(seed, workers);
        assert_eq!(summary.received, vec![25; 6], "seed {seed}");
        assert_eq!(summary.downs, vec![1; 6], "seed {seed}");
    }
}

/// Sleeps `after`, then ends.
struct Sleeper {
    after: Duration,
    /// Ignores `Cancel::Shutdown`.
    stubborn: bool,
}

impl Process for Sleeper {
    type Input = ();
    type Message = ();
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
        let mut woke = false;
        for event in events.drain(..) {
            match event {
                Event::Timer { .. } => woke = true,
                Event::Cancel(Cancel::Shutdown) if !self.stubborn => out.done(()),
                _ => {}
            }
        }
        if woke {
            out.done(());
        } else if out.status().is_none() {
            out.wake_after(0, self.after);
        }
        Ok(())
    }
}

#[test]
fn an_hour_of_timers_runs_on_the_virtual_clock_and_none_fires_early() {
    let scheduler = Scheduler::builder().simulation(3).build().unwrap();
    // 1,000 sleepers, from 3.6 s to an hour.
    let handles: Vec<_> = (1..=1000u64)
        .map(|i| {
            let after = Duration::from_millis(i * 3600);
            let sleeper = Sleeper {
                after,
                stubborn: false,
            };
            let handle = scheduler.submit_joinable(sleeper, "sleep", ()).unwrap();
            (after, handle)
        })
        .collect();
    let mut handles = handles.into_iter();
    let mut before = Duration::ZERO;
    let mut finished = 0;
    // Drive to just before each sleeper's deadline: it must still sleep;
    // then past it: it must have woken.
    for (after, handle) in handles.by_ref().take(50) {
        let short = after - Duration::from_millis(1);
        scheduler.run_for(short.saturating_sub(before));
        assert!(
            !handle.is_finished(),
            "a timer of {after:?} fired by {short:?}"
        );
        scheduler.run_for(Duration::from_millis(2));
        assert!(
            handle.is_finished(),
            "a timer of {after:?} not fired by {after:?} + 1 ms"
        );
        before = scheduler.virtual_time().unwrap();
        finished += 1;
    }
    for (_, handle) in handles {
        handle.join().unwrap();
        finished += 1;
    }
    assert_eq!(finished, 1000);
    let time = scheduler.virtual_time().unwrap();
    assert!(time >= Duration::from_secs(3600), "{time:?}");
    assert!(time < Duration::from_secs(3601), "{time:?}");
    assert_eq!(scheduler.run_until_idle().stopped, Stopped::Idle);
}

#[test]
fn a_drive_stops_at_step_n_and_going_on_from_there_replays_the_whole_run() {
    let (whole, outcome, steps, _) = run(11, 4);
    let (scheduler, log) = simulated(11, 4);
    let coordinator = scheduler
        .submit_joinable(Node::coordinator(6, 5), "coordinate", ())
        .unwrap();
    let half = steps / 2;
    let first = scheduler.run_steps(half);
    assert_eq!((first.steps, first.stopped), (half, Stopped::Steps));
    assert_eq!(scheduler.simulated_steps(), Some(half));
    // Stopped mid-run: the dump shows the coordinator and its workers.
    assert_eq!(scheduler.processes().len(), 7);
    // (A blocking command run, or a close, is a step the hook does not log.)
    let logged = log.lock().unwrap().len();
    assert!(logged > 0 && logged <= half as usize, "{logged} of {half}");
    assert_eq!(log.lock().unwrap()[..], whole[..logged]);
    assert_eq!(coordinator.join().unwrap(), outcome);
    assert_eq!(scheduler.simulated_steps(), Some(steps));
    assert_eq!(*log.lock().unwrap(), whole);
}

/// Waits for a message that never comes.
struct Waiter;

impl Process for Waiter {
    type Input = ();
    type Message = ();
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
        if events.drain(..).any(|e| matches!(e, Event::Message(()))) {
            out.done(());
        }
        Ok(())
    }
}

#[test]
fn a_join_that_could_never_return_panics_with_the_seed_and_the_step() {
    let scheduler = Scheduler::builder().simulation(7).build().unwrap();
    let waiter = scheduler.submit_joinable(Waiter, "wait", ()).unwrap();
    let pid = waiter.pid();
    let panic = catch_unwind(AssertUnwindSafe(|| waiter.join())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("seed 7"), "{message}");
    assert!(message.contains("at step 1"), "{message}");
    // The process is still there: a message from outside ends it.
    scheduler.send(pid, ()).unwrap();
    assert_eq!(scheduler.run_until_idle().steps, 1);
    assert!(scheduler.processes().is_empty());
}

#[test]
fn a_join_timeout_runs_virtual_time_and_gives_the_handle_back() {
    let scheduler = Scheduler::builder().simulation(1).build().unwrap();
    let sleeper = scheduler
        .submit_joinable(
            Sleeper {
                after: Duration::from_secs(60),
                stubborn: false,
            },
            "sleep",
            (),
        )
        .unwrap();
    let sleeper = sleeper.join_timeout(Duration::from_secs(59)).unwrap_err();
    assert!(scheduler.virtual_time().unwrap() >= Duration::from_secs(59));
    let outcome = sleeper.join_timeout(Duration::from_secs(2)).ok().unwrap();
    assert_eq!(outcome, Ok(()));
}

#[test]
fn shutdown_drives_the_cancels_and_the_forced_closes() {
    let scheduler = Scheduler::builder().simulation(5).build().unwrap();
    for _ in 0..10 {
        let sleeper = Sleeper {
            after: Duration::from_secs(3600),
            stubborn: false,
        };
        scheduler.submit(sleeper, "sleep", ()).unwrap();
    }
    for _ in 0..3 {
        let stubborn = Sleeper {
            after: Duration::from_secs(3600),
            stubborn: true,
        };
        scheduler.submit(stubborn, "wait", ()).unwrap();
    }
    assert_eq!(scheduler.run_steps(13).steps, 13);
    let report = scheduler.shutdown(Duration::from_secs(1));
    // Sleepers end on the cancel; waiters ignore it and are closed by force.
    assert_eq!(report.cancelled, 13);
    assert_eq!(report.completed, 10);
    assert_eq!(report.forced, 3);
    assert_eq!(report.stuck, 0);
    assert!(report.timed_out);
    // Every sleeper's pending timer.
    assert_eq!(report.timers_cancelled, 13);
    assert!(scheduler.processes().is_empty());
}

#[test]
fn driving_a_real_scheduler_or_simulating_with_a_monitor_is_refused() {
    let real = Scheduler::<Waiter>::builder().workers(1).build().unwrap();
    let panic = catch_unwind(AssertUnwindSafe(|| real.run_steps(1))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("not one"), "{message}");
    assert_eq!(real.simulation_seed(), None);
    let refused = Scheduler::<Waiter>::builder()
        .simulation(1)
        .long_step_monitor(Duration::from_millis(10), |_| {})
        .build()
        .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("simulation(..)"), "{refused}");
}

#[test]
fn the_blocking_waits_that_do_not_drive_it_panic_instead_of_waiting_for_ever() {
    let scheduler = Scheduler::<Waiter>::builder()
        .simulation(9)
        .build()
        .unwrap();
    let receiver = scheduler.mailbox().unwrap();
    let panics = [
        catch_unwind(AssertUnwindSafe(|| {
            let _ = receiver.recv();
        })),
        catch_unwind(AssertUnwindSafe(|| {
            let _ = receiver.recv_timeout(Duration::from_secs(1));
        })),
        catch_unwind(AssertUnwindSafe(|| {
            let _ = scheduler.blocking_call(receiver.pid(), |_| (), Duration::from_secs(1));
        })),
        catch_unwind(AssertUnwindSafe(|| {
            let _ = scheduler.blocking_send_timeout(receiver.pid(), (), Duration::from_secs(1));
        })),
    ];
    for panic in panics {
        let panic = panic.unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("simulated scheduler (seed 9)"),
            "{message}"
        );
    }
    // The non-blocking forms work: a send from outside, then a drive.
    scheduler.send(receiver.pid(), ()).unwrap();
    scheduler.run_until_idle();
    assert_eq!(receiver.try_recv(), Ok(()));
}

/// The whole trace of one seed's run, as Chrome trace-event JSON.
fn traced(seed: u64) -> String {
    let scheduler = Scheduler::builder()
        .simulation(seed)
        .trace(1 << 16)
        .build()
        .unwrap();
    let handles: Vec<_> = (1..=20u64)
        .map(|i| {
            let sleeper = Sleeper {
                after: Duration::from_millis(i * 7),
                stubborn: false,
            };
            scheduler.submit_joinable(sleeper, "sleep", ()).unwrap()
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    scheduler.shutdown(Duration::from_secs(1));
    let mut json = Vec::new();
    let trace = scheduler.trace().expect("a trace");
    trace.write_chrome_json(&mut json).unwrap();
    String::from_utf8(json).unwrap()
}

#[test]
fn the_trace_is_in_virtual_time_and_one_seed_gives_one_trace() {
    let first = traced(4);
    assert!(first.contains("\"ts\""), "{first}");
    assert_eq!(first, traced(4));
    assert_ne!(first, traced(5));
    // Stamped on the virtual clock: the last sleeper woke at 140 ms, and
    // nothing is stamped a virtual second later.
    // Stamped on the virtual clock: the first sleeper (7 ms) completes at
    // its deadline rounded up to the wheel's 16.384 µs tick, 7,012.352 µs,
    // exactly; the shutdown begins when the last one (140 ms) has ended.
    let completes = first.lines().filter(|l| l.contains("\"complete\""));
    let first_complete = completes.map(|l| l.to_owned()).next().unwrap();
    assert!(
        first_complete.contains("\"ts\":7012.352"),
        "{first_complete}"
    );
    let stopping = first
        .lines()
        .find(|l| l.contains("shutdown: stopping"))
        .unwrap();
    assert!(stopping.contains("\"ts\":140"), "{stopping}");
}

#[test]
fn a_simulated_scheduler_and_its_handles_are_send_and_sync_as_real_ones() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Scheduler<Waiter>>();
    send_sync::<stepsched::sched::JoinHandle<Waiter>>();
    // A run_until condition may ask the scheduler where the run stands.
    let scheduler = Scheduler::builder().simulation(2).build().unwrap();
    for _ in 0..3 {
        let sleeper = Sleeper {
            after: Duration::from_millis(5),
            stubborn: false,
        };
        scheduler.submit(sleeper, "sleep", ()).unwrap();
    }
    let run = scheduler.run_until(|| scheduler.simulated_steps() >= Some(3));
    assert_eq!((run.steps, run.stopped), (3, Stopped::Done));
}
