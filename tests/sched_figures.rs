//! Latency figures (`Builder::record_latency`), busy time and the per-step
//! hooks (`Builder::on_step_start`, `Builder::on_step`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{Scheduler, StepStatus};

const WAIT: Duration = Duration::from_secs(10);

/// Runs `steps` steps (returning `Continue`), sleeping `nap` in each, then
/// ends; or, with `steps == 0`, waits for messages and ends on the first.
struct Worker {
    steps: u32,
    nap: Duration,
}

impl Process for Worker {
    type Input = ();
    type Message = u32;
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
        if !self.nap.is_zero() {
            std::thread::sleep(self.nap);
        }
        if self.steps == 0 {
            if events.drain(..).any(|e| matches!(e, Event::Message(_))) {
                out.done(());
            }
            return Ok(());
        }
        self.steps -= 1;
        if self.steps == 0 {
            out.done(());
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

fn run(scheduler: &Scheduler<Worker>, steps: u32, nap: Duration) {
    scheduler
        .submit_joinable(Worker { steps, nap }, "w", ())
        .unwrap()
        .join_timeout(WAIT)
        .expect("ends in time")
        .unwrap();
}

#[test]
fn histograms_count_every_step() {
    let scheduler = Scheduler::builder()
        .workers(2)
        .record_latency(true)
        .build()
        .unwrap();
    for _ in 0..10 {
        run(&scheduler, 5, Duration::ZERO);
    }
    let stats = scheduler.stats();
    assert_eq!(stats.latency.len(), 2);
    let steps = stats.total().steps;
    assert_eq!(steps, 50);
    assert_eq!(stats.step_latency().count(), steps);
    assert_eq!(stats.schedule_latency().count(), steps);
    for (w, l) in stats.workers.iter().zip(&stats.latency) {
        assert_eq!(l.step.count(), w.steps);
        assert_eq!(l.step.buckets().map(|(_, n)| n).sum::<u64>(), w.steps);
    }
    scheduler.shutdown(WAIT);
}

#[test]
fn quantiles_are_bounded_by_min_and_max() {
    let scheduler = Scheduler::builder()
        .workers(1)
        .record_latency(true)
        .build()
        .unwrap();
    run(&scheduler, 20, Duration::from_micros(50));
    let h = scheduler.stats().step_latency();
    let (min, max) = (h.min().unwrap(), h.max().unwrap());
    let mut last = 0;
    for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
        let v = h.quantile(q).unwrap();
        assert!(min <= v && v <= max, "q {q}: {v} outside {min}..={max}");
        assert!(v >= last, "quantiles go down at {q}");
        last = v;
    }
    scheduler.shutdown(WAIT);
}

#[test]
fn schedule_latency_is_recorded_for_woken_processes() {
    let scheduler = Scheduler::builder()
        .workers(1)
        .record_latency(true)
        .build()
        .unwrap();
    let handle = scheduler
        .submit_joinable(
            Worker {
                steps: 0,
                nap: Duration::ZERO,
            },
            "w",
            (),
        )
        .unwrap();
    // Wait until its first step was recorded (on the histogram itself: a
    // worker's figures are Relaxed, seen in time, not in step with each
    // other).
    while scheduler.stats().schedule_latency().count() < 1 {
        std::thread::yield_now();
    }
    let before = scheduler.stats().schedule_latency().count();
    scheduler.send(handle.pid(), 1).unwrap();
    handle.join_timeout(WAIT).expect("ends").unwrap();
    let stats = scheduler.stats();
    assert_eq!(before, 1, "the first step was scheduled once");
    assert_eq!(
        stats.schedule_latency().count(),
        2,
        "the woken step was recorded"
    );
    assert_eq!(stats.total().steps, 2);
    scheduler.shutdown(WAIT);
}

#[test]
fn busy_time_grows_with_steps_that_sleep() {
    let scheduler = Scheduler::builder()
        .workers(1)
        .record_latency(true)
        .build()
        .unwrap();
    run(&scheduler, 4, Duration::from_millis(5));
    let stats = scheduler.stats();
    // Each step sleeps at least 5 ms: a lower bound, never a timing goal.
    assert!(
        stats.total().busy >= Duration::from_millis(20),
        "{:?}",
        stats.total().busy
    );
    assert!(stats.step_latency().min().unwrap() >= 5_000_000);
    assert!(stats.step_latency().sum() >= 20_000_000);
    scheduler.shutdown(WAIT);
}

#[test]
fn nothing_is_recorded_when_off() {
    let scheduler = Scheduler::builder().workers(1).build().unwrap();
    run(&scheduler, 4, Duration::from_millis(1));
    let stats = scheduler.stats();
    assert_eq!(stats.total().steps, 4);
    assert!(stats.latency.is_empty());
    assert_eq!(stats.step_latency().count(), 0);
    assert_eq!(stats.total().busy, Duration::ZERO);
    scheduler.shutdown(WAIT);
}

/// What a step hook saw: PID, worker, status, events.
type Seen = (Pid, usize, StepStatus, usize);

#[test]
fn the_step_hook_is_called_once_per_step() {
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let starts = Arc::new(AtomicU64::new(0));
    let (sink, count) = (Arc::clone(&log), Arc::clone(&starts));
    let scheduler = Scheduler::builder()
        .workers(2)
        .on_step_start(move |_, _| {
            count.fetch_add(1, Ordering::Relaxed);
        })
        .on_step(move |info| {
            sink.lock()
                .unwrap()
                .push((info.pid, info.worker, info.status, info.events));
        })
        .build()
        .unwrap();
    let pid = {
        let handle = scheduler
            .submit_joinable(
                Worker {
                    steps: 3,
                    nap: Duration::ZERO,
                },
                "w",
                (),
            )
            .unwrap();
        let pid = handle.pid();
        handle.join_timeout(WAIT).expect("ends").unwrap();
        pid
    };
    let report = scheduler.shutdown(WAIT);
    assert!(!report.timed_out);
    let log = log.lock().unwrap();
    let statuses: Vec<StepStatus> = log.iter().map(|e| e.2).collect();
    assert_eq!(
        statuses,
        [StepStatus::Continue, StepStatus::Continue, StepStatus::Done]
    );
    assert!(log.iter().all(|e| e.0 == pid && e.1 < 2 && e.3 == 0));
    assert_eq!(starts.load(Ordering::Relaxed), 3);
}

#[test]
fn a_panicking_step_hook_is_contained_and_counted() {
    let scheduler = Scheduler::builder()
        .workers(1)
        .on_step_start(|_, _| panic!("start hook"))
        .on_step(|_| panic!("step hook"))
        .build()
        .unwrap();
    run(&scheduler, 3, Duration::ZERO);
    let stats = scheduler.stats();
    assert_eq!(stats.total().steps, 3);
    assert_eq!(stats.hook_panics, 6, "two hooks per step, each contained");
    assert!(!scheduler.shutdown(WAIT).timed_out);
}

mod kinds {
    use super::WAIT;
    use stepsched::process::{Event, Kind, NoCommand, Process, StepOutput};
    use stepsched::sched::Scheduler;

    /// Ends after `n` steps.
    pub struct Counter(u32);
    /// Idles until terminated.
    pub struct Sleeper;

    stepsched::kinds! {
        /// Two kinds.
        pub enum Node { Counter(Counter), Sleeper(Sleeper) }
        /// Their inputs.
        pub enum NodeInput;
        type Message = ();
        type Command = NoCommand;
        type Reply = ();
        type Output = ();
        type Error = ();
    }

    impl Kind<Node> for Counter {
        type Input = ();
        fn init(&mut self, _: ()) -> Result<(), ()> {
            Ok(())
        }
        fn step(
            &mut self,
            _: &mut Vec<Event<Node>>,
            out: &mut StepOutput<'_, Node>,
        ) -> Result<(), ()> {
            self.0 -= 1;
            if self.0 == 0 {
                out.done(());
            } else {
                out.set_status(stepsched::process::Status::Continue);
            }
            Ok(())
        }
    }

    impl Kind<Node> for Sleeper {
        type Input = ();
        fn init(&mut self, _: ()) -> Result<(), ()> {
            Ok(())
        }
        fn step(
            &mut self,
            _: &mut Vec<Event<Node>>,
            _: &mut StepOutput<'_, Node>,
        ) -> Result<(), ()> {
            Ok(())
        }
    }

    #[test]
    fn per_kind_counts_give_live_processes_and_steps_of_each_kind() {
        assert_eq!(Node::KINDS, ["Counter", "Sleeper"]);
        let scheduler = Scheduler::<Node>::builder()
            .workers(2)
            .count_kinds(true)
            .build()
            .unwrap();
        let handles: Vec<_> = (0..3)
            .map(|_| scheduler.submit_kind_joinable(Counter(4), ()).unwrap())
            .collect();
        for handle in handles {
            handle.join_timeout(WAIT).expect("ends").unwrap();
        }
        let sleepers: Vec<_> = (0..2)
            .map(|_| scheduler.submit_kind(Sleeper, ()).unwrap())
            .collect();
        // Each sleeper takes its first step, then idles. Waited for on the
        // kinds' own figures: each is a worker's Relaxed counter, which a
        // reader sees in time, not in step with the totals.
        while scheduler.stats().kinds.iter().map(|k| k.steps).sum::<u64>() < 14 {
            std::thread::yield_now();
        }
        let kinds = scheduler.stats().kinds;
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            (
                kinds[0].name,
                kinds[0].started,
                kinds[0].live,
                kinds[0].steps
            ),
            ("Counter", 3, 0, 12)
        );
        assert_eq!(
            (
                kinds[1].name,
                kinds[1].started,
                kinds[1].live,
                kinds[1].steps
            ),
            ("Sleeper", 2, 2, 2)
        );
        scheduler.terminate(sleepers[0]).unwrap();
        while scheduler.stats().kinds[1].live != 1 {
            std::thread::yield_now();
        }
        // The sleeper ignores its shutdown cancel: closed by force after 100 ms.
        scheduler.shutdown(std::time::Duration::from_millis(100));
        assert_eq!(
            scheduler.stats().kinds[1].live,
            0,
            "shutdown closed the other"
        );
    }

    #[test]
    fn no_kind_is_counted_when_off() {
        let scheduler = Scheduler::<Node>::builder().workers(1).build().unwrap();
        scheduler
            .submit_kind_joinable(Counter(2), ())
            .unwrap()
            .join_timeout(WAIT)
            .expect("ends")
            .unwrap();
        assert!(scheduler.stats().kinds.is_empty());
        scheduler.shutdown(WAIT);
    }
}

/// A process whose `kind_index` panics: user code, contained like `step`'s.
struct BadKind;

impl Process for BadKind {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u32;
    type Error = ();
    const KINDS: &'static [&'static str] = &["Bad"];
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        out.done(7);
        Ok(())
    }
    fn kind_index(&self) -> usize {
        panic!("no kind")
    }
}

#[test]
fn a_panicking_kind_index_is_contained_and_not_counted() {
    // One worker: had the panic escaped, it would have ended the only one.
    let scheduler = Scheduler::<BadKind>::builder()
        .workers(1)
        .count_kinds(true)
        .build()
        .unwrap();
    for _ in 0..3 {
        let handle = scheduler.submit_joinable(BadKind, "", ()).unwrap();
        assert_eq!(handle.join_timeout(WAIT).expect("ends").unwrap(), 7);
    }
    let kinds = scheduler.stats().kinds;
    assert_eq!(
        (kinds[0].name, kinds[0].started, kinds[0].steps),
        ("Bad", 0, 0)
    );
    let report = scheduler.shutdown(WAIT);
    assert!(!report.timed_out && report.stuck == 0, "{report:?}");
}
