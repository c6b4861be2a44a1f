//! Our own supervisor under crash faults (`Faults::crash_per_step`), over
//! many seeds: every crash of a child is answered by exactly one restart
//! while the intensity allows, and past it the supervisor gives up the
//! same way for the same seed; its intensity runs on the virtual clock
//! (`StepOutput::now`), so the seed decides it, not the machine.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{Event, Kind, NoCommand, Pid, StepOutput};
use stepsched::sched::{Faults, Scheduler, Stopped};
use stepsched::supervisor::{ChildSpec, Strategy, Supervisor, SupervisorSpec};

/// Ticks every millisecond for ever; counts its incarnations.
struct Ticker;

impl Kind<Node> for Ticker {
    type Input = Arc<AtomicU32>;

    fn init(&mut self, incarnations: Arc<AtomicU32>) -> Result<(), String> {
        // Relaxed: a count the test reads after the drive, on this thread.
        incarnations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if events.is_empty() {
            out.wake_every(0, Duration::from_millis(1));
        }
        events.clear();
        Ok(())
    }

    fn close(&mut self) {}
}

/// Fails two virtual seconds after it starts; counts its incarnations.
struct Failer;

impl Kind<Node> for Failer {
    type Input = Arc<AtomicU32>;

    fn init(&mut self, incarnations: Arc<AtomicU32>) -> Result<(), String> {
        // Relaxed: as the ticker's.
        incarnations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if events.drain(..).any(|e| matches!(e, Event::Timer { .. })) {
            return Err("failed on time".into());
        }
        out.wake_after(0, Duration::from_secs(2));
        Ok(())
    }

    fn close(&mut self) {}
}

stepsched::kinds! {
    enum Node {
        Sup(Supervisor<Node>),
        Ticker(Ticker),
        Failer(Failer),
    }
    enum NodeInput;
    type Message = Pid;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;
}

const CHILDREN: usize = 5;

/// Runs a one-for-one supervisor of five tickers for a virtual second under
/// crashes; returns the crashes, each child's incarnations, whether the
/// supervisor still lives, and the processes left.
fn run(seed: u64, max_restarts: u32) -> (u64, Vec<u32>, bool, usize) {
    let scheduler = Scheduler::<Node>::builder()
        .simulation(seed)
        .simulation_faults(Faults::new().crash_per_step(0.002).spare("sup"))
        .build()
        .unwrap();
    let counts: Vec<_> = (0..CHILDREN).map(|_| Arc::new(AtomicU32::new(0))).collect();
    let mut spec =
        SupervisorSpec::new(Strategy::OneForOne).intensity(max_restarts, Duration::from_secs(1));
    for (i, count) in counts.iter().enumerate() {
        let count = Arc::clone(count);
        let name: &'static str = ["a", "b", "c", "d", "e"][i];
        spec = spec.child(ChildSpec::new(name, move || (Ticker, Arc::clone(&count))));
    }
    let sup = scheduler.submit_kind(Supervisor::new(), spec).unwrap();
    scheduler.register("sup", sup).unwrap();
    let run = scheduler.run_for(Duration::from_secs(1));
    // Idle only once the supervisor has given up and its children are gone.
    assert!(
        matches!(run.stopped, Stopped::Time | Stopped::Idle),
        "{run:?}"
    );
    let alive = scheduler.processes().iter().any(|p| p.pid == sup);
    let left = scheduler.processes().len();
    let counts = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    (run.crashes, counts, alive, left)
}

#[test]
fn every_crash_of_a_child_is_answered_by_one_restart_over_many_seeds() {
    for seed in 0..16 {
        let (crashes, counts, alive, left) = run(seed, 100_000);
        assert!(crashes > 0, "seed {seed}: no crash drawn");
        assert!(alive, "seed {seed}: the supervisor ended");
        let restarts: u32 = counts.iter().map(|&n| n - 1).sum();
        assert_eq!(u64::from(restarts), crashes, "seed {seed}: {counts:?}");
        assert_eq!(left, 1 + CHILDREN, "seed {seed}: every child runs again");
    }
}

#[test]
fn past_its_intensity_the_supervisor_gives_up_the_same_way_for_the_same_seed() {
    for seed in 0..10 {
        let first = run(seed, 3);
        assert!(
            !first.2,
            "seed {seed}: more than 3 crashes a second, and it lives"
        );
        assert_eq!(
            first.3, 0,
            "seed {seed}: it stopped its children as it ended"
        );
        assert_eq!(run(seed, 3), first, "seed {seed} replays");
    }
}

#[test]
fn the_restart_intensity_is_counted_on_the_virtual_clock() {
    // One restart a second allowed; the child fails every two virtual
    // seconds, so no second holds two restarts. On the wall clock the
    // five failures come within microseconds, and it would give up.
    let scheduler = Scheduler::<Node>::builder().simulation(1).build().unwrap();
    let count = Arc::new(AtomicU32::new(0));
    let start = {
        let count = Arc::clone(&count);
        move || (Failer, Arc::clone(&count))
    };
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(1, Duration::from_secs(1))
        .child(ChildSpec::new("failer", start));
    let sup = scheduler.submit_kind(Supervisor::new(), spec).unwrap();
    scheduler.run_for(Duration::from_millis(10_500));
    assert!(
        scheduler.processes().iter().any(|p| p.pid == sup),
        "it gave up"
    );
    // Failures at 2, 4, 6, 8 and 10 s: five restarts, six incarnations.
    assert_eq!(count.load(Ordering::Relaxed), 6);
}
