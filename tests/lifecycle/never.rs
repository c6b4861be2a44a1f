//! [`Defect::ClockJumpsToNever`], on its own: a timer for never
//! (`wake_after(Duration::MAX)`) under a simulation, one process that
//! sets it and one that only waits. Once nothing else can run, the
//! simulation must go idle rather than jump the virtual clock to that
//! timer (at the end of its range, where the shutdown's deadline would
//! saturate, drive nothing and report both processes stuck).

use super::*;
use stepsched::process::NoCommand;
use stepsched::sched::Stopped;

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

fn a_timer_for_never_leaves_a_simulated_shutdown_something_to_drive() {
    let scheduler = Scheduler::builder().simulation(1).build().unwrap();
    let timed = scheduler
        .submit_joinable(Sleeper(true), "timed", ())
        .unwrap();
    let waiting = scheduler
        .submit_joinable(Sleeper(false), "waiting", ())
        .unwrap();
    // Idle, with the clock where the last step left it, not at the end of
    // its range.
    assert_eq!(scheduler.run_until_idle().stopped, Stopped::Idle);
    let clock = scheduler.virtual_time().unwrap();
    assert!(clock < Duration::from_secs(1), "{clock:?}");
    let report = scheduler.shutdown(Duration::from_millis(20));
    assert_eq!(
        (report.stuck, report.timed_out),
        (0, false),
        "{report:?} (virtual clock at {clock:?} before the shutdown)"
    );
    // Both end on their cancel, in time.
    assert_eq!(timed.join(), Ok(()));
    assert_eq!(waiting.join(), Ok(()));
}
