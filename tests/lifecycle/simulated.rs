//! A round under the deterministic simulation (`Builder::simulation`):
//! the same actors, handlers and hooks as `round.rs`, the scheduler built
//! with `.simulation(seed)` (and, in a faulty round, crashes between
//! steps and failed blocking commands drawn from the seed), one storm on
//! the test thread.
//!
//! The storm makes one operation at a time (`Storm::step`, which replaces
//! the calls that would wait for ever under a simulation), each followed
//! by simulated steps drawn from the seed (fewer than 2, 4 or 16, by
//! round); its length is the
//! round's storm time at [`OPS_PER_MS`] operations a millisecond. Then the
//! shutdown, with the round's timeout on the virtual clock, drives the
//! simulation to its end; a few more operations are made after it (each
//! must be refused cleanly); every receiver is read with `try_recv` and
//! must end `Disconnected`; every joiner and `JoinSet` must hold its
//! outcome; and the books are `check.rs`'s.
//!
//! What the simulation cannot reach here: public calls racing a shutdown
//! in progress (one thread makes them, between drives), and the blocking
//! waits (`blocking_send_timeout`, `blocking_call`, `recv_timeout`, the
//! two-waiter proof), which the threaded rounds keep. What it adds: the
//! interleaving is the seed's, so a finding replays exactly, and the same
//! seed gives the same [`Summary`].

use super::*;

/// Storm operations per millisecond of the round's storm time: a short
/// round makes 1,500 to 3,000.
pub(crate) const OPS_PER_MS: u64 = 10;

/// A virtual time no timer of the round's but one for never reaches.
const END_OF_TIME: Duration = Duration::from_secs(100 * 365 * 24 * 3_600);

/// Operations made after the shutdown has returned.
const AFTER_SHUTDOWN: u64 = 50;

/// The faults of a faulty round: a crash after about one step in two
/// hundred, one blocking command in twenty failed.
pub(crate) fn faults() -> Faults {
    Faults::new().crash_per_step(0.005).failed_commands(0.05)
}

/// What a simulated round did, in counts: the same seed must give the
/// same summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) steps: u64,
    pub(crate) virtual_time: Duration,
    pub(crate) ops: u64,
    /// Processes the faults crashed in the storm's drives.
    pub(crate) crashes: u64,
    /// Messages: (accepted, received, undelivered, refused).
    pub(crate) messages: [u64; 4],
    /// Command replies, likewise.
    pub(crate) replies: [u64; 4],
    /// Processes started, and how many ended by each kind of outcome.
    pub(crate) started: u64,
    pub(crate) ends: BTreeMap<String, usize>,
    /// `Down`s received, by kind of reason.
    pub(crate) downs: BTreeMap<String, usize>,
    pub(crate) report: String,
    pub(crate) findings: usize,
}

/// The first word of a value's `Debug` form (its variant).
fn kind(value: &impl fmt::Debug) -> String {
    let text = format!("{value:?}");
    text.split('(').next().unwrap_or("").to_owned()
}

impl Summary {
    fn of(round: &Round, scheduler: &Scheduler<Actor>, report: &ShutdownReport) -> Self {
        let none = HashSet::new();
        let mut ends = BTreeMap::new();
        for (end, _) in round.outcomes.lock().unwrap().values() {
            *ends.entry(kind(end)).or_default() += 1;
        }
        let mut downs = BTreeMap::new();
        for (_, _, reason) in round.downs.lock().unwrap().iter() {
            *downs.entry(kind(reason)).or_default() += 1;
        }
        Summary {
            steps: scheduler.simulated_steps().unwrap_or(0),
            virtual_time: scheduler.virtual_time().unwrap_or_default(),
            ops: round.ops.load(Ordering::Relaxed),
            crashes: 0,
            messages: round.messages.check(&none).0,
            replies: round.replies.check(&none).0,
            started: round.started.load(Ordering::Relaxed),
            ends,
            downs,
            report: format!("{report:?}"),
            findings: 0,
        }
    }
}

/// Runs simulated round `seed` (with [`faults`] if `faulty`).
pub(crate) fn run(seed: u64, long_run: bool, faulty: bool) -> (Ran, Summary) {
    let mut cfg = Config::new(seed, long_run);
    cfg.pair = false; // two waiting threads: not under a simulation
    let phase = Arc::new(round::Phase::new("build (simulated)"));
    let done = round::watchdog(seed, Arc::clone(&phase));
    let round = Arc::new(Round::new(seed, cfg.clone()));
    let mut builder = round::builder(&round).simulation(seed);
    if faulty {
        builder = builder.simulation_faults(faults());
    }
    let scheduler = Arc::new(builder.build().expect("the simulation starts"));
    let clock = SimClock {
        base: Instant::now(),
        scheduler: Arc::downgrade(&scheduler),
        faults: faulty,
    };
    check::PANICS_HERE.with(|here| here.borrow_mut().get_or_insert_with(Vec::new).clear());
    assert!(round.sim.set(clock).is_ok(), "a round is simulated once");

    phase.set("storm (simulated)");
    let started = Instant::now();
    let mut rng = Rng::new(seed).derive(3_000);
    let mut storm = Storm::new(0, &round, &scheduler);
    let mut crashes = 0;
    let ops = cfg.storm.as_millis() as u64 * OPS_PER_MS;
    // Steps per operation below this: with few, processes pile up (to the
    // round's cap) and the shutdown meets many; with many, the system
    // keeps draining and idling (the clock then jumps to its timers).
    let bound = *rng.pick(&[2, 4, 4, 16]);
    for i in 0..ops {
        if i == ops * 4 / 5 {
            round.near.store(true, Ordering::SeqCst);
        }
        storm.step();
        let steps = rng.below(bound);
        // A panic out of a drive is filed by the panic hook; the round
        // goes on to its shutdown and checks.
        match catch_unwind(AssertUnwindSafe(|| scheduler.run_steps(steps))) {
            Ok(run) => crashes += run.crashes,
            Err(_) => break,
        }
    }
    let storm_ops = round.ops.load(Ordering::Relaxed);
    let storm_time = started.elapsed();
    if std::env::var_os("LIFECYCLE_VERBOSE").is_some() {
        println!(
            "seed {seed} (simulated{}): {cfg:?}, steps per operation below {bound}\nstarted {} ended {} before shutdown, {} steps, {:?} virtual",
            if faulty { ", faults" } else { "" },
            round.started.load(Ordering::Relaxed),
            round.completed.load(Ordering::Relaxed),
            scheduler.simulated_steps().unwrap_or(0),
            scheduler.virtual_time().unwrap_or_default(),
        );
    }

    let clock = scheduler.virtual_time().unwrap_or_default();
    if clock >= END_OF_TIME {
        let detail = format!("the virtual clock reached {clock:?} in the storm");
        round.find(Check::VirtualClock, Some(Defect::ClockJumpsToNever), detail);
    }
    phase.set("shutdown (simulated)");
    round.stopping.store(true, Ordering::SeqCst);
    let report = match catch_unwind(AssertUnwindSafe(|| scheduler.shutdown(cfg.shutdown))) {
        Ok(report) => report,
        // Filed by the panic hook; the scheduler still needs its shutdown.
        Err(_) => scheduler.shutdown(LONG_SHUTDOWN),
    };
    for _ in 0..AFTER_SHUTDOWN {
        storm.step();
    }
    let mut left = storm.leftovers();
    // What is still held can no longer be delivered: handed back.
    round.complete_due(true, &mut Rng::new(seed).derive(2_000));

    phase.set("receivers and joiners (simulated)");
    let mut joined = Vec::new();
    for receiver in left.receivers.drain(..) {
        loop {
            match receiver.try_recv() {
                Ok(message) => {
                    message.settle(RECEIVED);
                }
                Err(mpsc::TryRecvError::Disconnected) => break,
                Err(mpsc::TryRecvError::Empty) => {
                    let detail = format!(
                        "{}: try_recv after shutdown found it empty, not disconnected",
                        receiver.pid()
                    );
                    round.find(Check::RecvAfterShutdown, None, detail);
                    break;
                }
            }
        }
    }
    for handle in left.joins.drain(..) {
        let pid = handle.pid();
        match handle.join_timeout(GUARD) {
            Ok(outcome) => joined.push((pid, End::of(&outcome))),
            Err(handle) => {
                let detail = format!("{} has no outcome after shutdown", handle.pid());
                round.find(Check::Join, None, detail);
            }
        }
    }
    for (set, count) in left.sets.iter_mut() {
        for _ in 0..*count {
            match set.try_join_next() {
                Some((pid, outcome)) => joined.push((pid, End::of(&outcome))),
                None => {
                    let detail =
                        "a JoinSet holds fewer outcomes than it had processes after shutdown";
                    round.find(Check::Join, None, detail.to_owned());
                    break;
                }
            }
        }
    }
    let blocking = round.blocking.load(Ordering::SeqCst);
    if blocking != 0 {
        let detail = format!("{blocking} blocking handlers still running after shutdown");
        round.find(Check::Stuck, None, detail);
    }

    check::panics(&round);
    let long = cfg.shutdown >= LONG_SHUTDOWN;
    let findings = check::check(&round, &report, long, &joined, scheduler.live());
    let summary = Summary {
        crashes,
        findings: findings.len(),
        ..Summary::of(&round, &scheduler, &report)
    };
    if std::env::var_os("LIFECYCLE_VERBOSE").is_some() {
        println!(
            "seed {seed}: simulated round took {:?}, {summary:?}",
            started.elapsed()
        );
    }
    drop(scheduler);
    let _ = done.send(());
    let ran = Ran {
        findings,
        ops: storm_ops,
        storm: storm_time,
    };
    (ran, summary)
}
