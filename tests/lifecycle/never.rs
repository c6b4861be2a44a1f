//! [`Defect::ClockJumpsToNever`], on its own: a timer for never
//! (`wake_after(Duration::MAX)`) under a simulation, one process that
//! sets it and one that only waits. Once nothing else can run, the
//! virtual clock jumps to that timer, at the end of its range; the
//! shutdown's deadline then saturates there, so it drives nothing and
//! reports both processes stuck, though neither is in a step.

use super::*;
use stepsched::process::NoCommand;

/// Sets a timer for never if told to, then waits; ends on `Cancel`.
struct Sleeper(bool);

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
        if events.drain(..).any(|e| matches!(e, Event::Cancel(_))) {
            out.done(());
        } else if std::mem::take(&mut self.0) {
            out.wake_after(1, Duration::MAX);
        }
        Ok(())
    }
}

#[test]
#[ignore = "ClockJumpsToNever (src/sched/simulation/mod.rs, Driver::run): open"]
fn a_timer_for_never_leaves_a_simulated_shutdown_something_to_drive() {
    let scheduler = Scheduler::builder().simulation(1).build().unwrap();
    let timed = scheduler
        .submit_joinable(Sleeper(true), "timed", ())
        .unwrap();
    let waiting = scheduler
        .submit_joinable(Sleeper(false), "waiting", ())
        .unwrap();
    scheduler.run_until_idle();
    let clock = scheduler.virtual_time().unwrap();
    let report = scheduler.shutdown(Duration::from_millis(20));
    assert_eq!(
        (report.stuck, report.timed_out),
        (0, false),
        "{report:?} (virtual clock at {clock:?} before the shutdown)"
    );
    assert_eq!(timed.join(), Err(ProcessError::Shutdown));
    assert_eq!(waiting.join(), Err(ProcessError::Shutdown));
}
