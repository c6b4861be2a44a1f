//! The long-step monitor: a 100 ms step is reported exactly once; short
//! steps never are; work queued behind a long step completes on another
//! worker; a step that polls `StepOutput::should_yield` gives its worker
//! back within a few thresholds and its process still finishes its work
//! over several steps.
//!
//! Thresholds are generous (tens of ms, and 250 ms where a false report
//! would fail the test) so that a loaded 2-core machine, which may
//! deschedule a worker for several milliseconds, does not fail them.
//!
//! ```text
//! cargo test --test sched_monitor
//! cargo test --release --test sched_monitor
//! ```

mod common;
use common::wait_until;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::{LongStep, Scheduler};

/// Collects the monitor's reports.
#[derive(Clone, Default)]
struct Reports(Arc<Mutex<Vec<LongStep>>>);

impl Reports {
    fn hook(&self) -> impl Fn(LongStep) + Send + Sync + 'static {
        let reports = Arc::clone(&self.0);
        move |long| reports.lock().unwrap().push(long)
    }

    fn all(&self) -> Vec<LongStep> {
        self.0.lock().unwrap().clone()
    }
}

/// Two workers and a long-step monitor at `threshold` that reports to
/// `reports`.
fn monitored<P: Process>(threshold: Duration, reports: &Reports) -> Scheduler<P> {
    Scheduler::<P>::builder()
        .workers(2)
        .long_step_monitor(threshold, reports.hook())
        .build()
        .unwrap()
}

/// What a [`Job`] does in its step.
#[derive(Clone)]
enum Work {
    /// Sleeps this long in one step, then finishes.
    Sleep(Duration),
    /// Finishes at once, recording its thread.
    Quick(Arc<Shared>),
    /// Spawns each of these children, in order, then finishes.
    Spawn(Vec<Work>),
    /// Runs until every quick job is done (or 30 s pass), then records
    /// whether they all were, and its thread.
    WaitForQuick(Arc<Shared>, usize),
}

/// What the jobs of one test share.
#[derive(Default)]
struct Shared {
    quick_done: AtomicUsize,
    /// Each quick job's thread, and whether the long step had begun then.
    quick_threads: Mutex<Vec<(ThreadId, bool)>>,
    long_started: AtomicBool,
    long_thread: Mutex<Option<(ThreadId, bool)>>,
}

struct Job(Option<Work>);

/// What a slicing job reports about its steps.
#[derive(Debug, Default, Clone)]
struct StepLog {
    durations: Vec<Duration>,
    asked_at_start: usize,
}

impl Process for Job {
    type Input = Work;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = StepLog;
    type Error = String;

    fn init(&mut self, _: &str, work: Work) -> Result<(), String> {
        self.0 = Some(work);
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let work = self.0.take().ok_or("stepped after done")?;
        match work {
            Work::Sleep(d) => {
                thread::sleep(d);
                out.done(StepLog::default());
            }
            Work::Quick(shared) => {
                shared.quick_threads.lock().unwrap().push((
                    thread::current().id(),
                    shared.long_started.load(Ordering::SeqCst),
                ));
                shared.quick_done.fetch_add(1, Ordering::SeqCst);
                out.done(StepLog::default());
            }
            Work::Spawn(children) => {
                for child in children {
                    out.spawn(Job(None), "child", child)
                        .map_err(|e| e.to_string())?;
                }
                out.done(StepLog::default());
            }
            Work::WaitForQuick(shared, quick) => {
                shared.long_started.store(true, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(30);
                while shared.quick_done.load(Ordering::SeqCst) < quick && Instant::now() < deadline
                {
                    thread::sleep(Duration::from_millis(1));
                }
                let all = shared.quick_done.load(Ordering::SeqCst) == quick;
                *shared.long_thread.lock().unwrap() = Some((thread::current().id(), all));
                out.done(StepLog::default());
            }
        }
        Ok(())
    }
}

/// Busy work: `units` units of 200 µs, polling `should_yield` between
/// units and continuing when asked; logs each step.
#[derive(Default)]
struct Slicer {
    units: u32,
    done: u32,
    log: StepLog,
}

impl Process for Slicer {
    type Input = u32;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = (u32, StepLog);
    type Error = String;

    fn init(&mut self, _: &str, units: u32) -> Result<(), String> {
        self.units = units;
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let start = Instant::now();
        if out.should_yield() {
            self.log.asked_at_start += 1;
        }
        while self.done < self.units {
            if out.should_yield() {
                self.log.durations.push(start.elapsed());
                out.set_status(Status::Continue);
                return Ok(());
            }
            let unit = Instant::now();
            while unit.elapsed() < Duration::from_micros(200) {
                std::hint::spin_loop();
            }
            self.done += 1;
        }
        self.log.durations.push(start.elapsed());
        out.done((self.done, std::mem::take(&mut self.log)));
        Ok(())
    }
}

#[test]
fn a_100ms_step_is_reported_exactly_once() {
    let threshold = Duration::from_millis(20);
    let reports = Reports::default();
    let scheduler = monitored::<Job>(threshold, &reports);
    let job = scheduler
        .submit_joinable(Job(None), "sleep", Work::Sleep(Duration::from_millis(100)))
        .unwrap();
    let pid = job.pid();
    job.join().unwrap();
    // Give the monitor several more periods to report it again (it must not).
    thread::sleep(threshold * 3);
    let all = reports.all();
    assert_eq!(all.len(), 1, "reports: {all:?}");
    assert_eq!(all[0].pid, pid);
    assert!(all[0].worker < 2);
    assert!(all[0].elapsed >= threshold, "{:?}", all[0]);
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn short_steps_are_never_reported() {
    let reports = Reports::default();
    let scheduler = monitored::<Slicer>(Duration::from_millis(250), &reports);
    // 2,000 processes of 5 units (1 ms) each, about 1 s of work in all.
    let jobs: Vec<_> = (0..2_000)
        .map(|_| {
            let slicer = Slicer::default();
            scheduler.submit_joinable(slicer, "work", 5).unwrap()
        })
        .collect();
    for job in jobs {
        let (done, log) = job.join().unwrap();
        assert_eq!(done, 5);
        assert_eq!(log.durations.len(), 1, "never asked to yield: {log:?}");
    }
    thread::sleep(Duration::from_millis(100));
    assert_eq!(reports.all(), Vec::new());
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn work_queued_behind_a_long_step_completes_on_another_worker() {
    const QUICK: usize = 8;
    let reports = Reports::default();
    let scheduler = monitored::<Job>(Duration::from_millis(20), &reports);
    let shared = Arc::new(Shared::default());
    // Children are pushed onto the spawning worker's deque in order, and it
    // pops the newest first: the long job starts, the quick ones wait
    // behind it on the same worker.
    let mut children: Vec<Work> = (0..QUICK)
        .map(|_| Work::Quick(Arc::clone(&shared)))
        .collect();
    children.push(Work::WaitForQuick(Arc::clone(&shared), QUICK));
    scheduler
        .submit_joinable(Job(None), "spawn", Work::Spawn(children))
        .unwrap()
        .join()
        .unwrap();
    wait_until("the long job", || {
        shared.long_thread.lock().unwrap().is_some()
    });
    let (long_thread, all_done_meanwhile) = shared.long_thread.lock().unwrap().unwrap();
    assert!(
        all_done_meanwhile,
        "the quick jobs finished while the long step ran"
    );
    let quick_threads = shared.quick_threads.lock().unwrap().clone();
    assert_eq!(quick_threads.len(), QUICK);
    // A quick job may run on the long job's thread before the long step
    // begins (the worker's turn for its oldest process, or a thief taking
    // the long job): what must not happen is one waiting there behind it.
    assert!(
        quick_threads
            .iter()
            .all(|&(t, after_long_began)| t != long_thread || !after_long_began),
        "a quick job waited behind the long step on its worker: {quick_threads:?}"
    );
    wait_until("the live count to drop", || scheduler.live() == 0);
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn a_step_polling_should_yield_returns_within_a_few_thresholds() {
    let threshold = Duration::from_millis(25);
    let reports = Reports::default();
    let scheduler = monitored::<Slicer>(threshold, &reports);
    // 1,500 units of 200 µs: about 300 ms of work, a dozen thresholds.
    const UNITS: u32 = 1_500;
    let slicer = Slicer::default();
    let job = scheduler.submit_joinable(slicer, "work", UNITS).unwrap();
    let pid = job.pid();
    let (done, log) = job.join().unwrap();
    assert_eq!(done, UNITS, "all the work was done");
    assert!(log.durations.len() > 1, "it took several steps: {log:?}");
    assert_eq!(log.asked_at_start, 0, "a request targets one step: {log:?}");
    // Every step but the last was asked to yield, and answered.
    let longest = log.durations.iter().max().unwrap();
    assert!(
        *longest < threshold * 8,
        "each step returned within a few thresholds: {log:?}"
    );
    // The monitor asks before it calls back: wait for the last callback.
    wait_until("a report per yield", || {
        reports.all().len() >= log.durations.len() - 1
    });
    let all = reports.all();
    assert!(all.iter().all(|r| r.pid == pid), "{all:?}");
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn without_a_monitor_should_yield_stays_false() {
    let scheduler = Scheduler::<Slicer>::builder().workers(1).build().unwrap();
    let slicer = Slicer::default();
    // 250 units: 50 ms in one step, never asked to yield.
    let (done, log) = scheduler
        .submit_joinable(slicer, "work", 250)
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(done, 250);
    assert_eq!(log.durations.len(), 1, "{log:?}");
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn shutdown_stops_and_joins_the_monitor() {
    // A hang here is the failure: `shutdown` joins the monitor thread.
    let scheduler = Scheduler::<Job>::builder()
        .workers(1)
        .long_step_monitor(Duration::from_millis(4), |_| {})
        .build()
        .unwrap();
    let report = scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(report.stuck, 0);
    drop(scheduler);
}
