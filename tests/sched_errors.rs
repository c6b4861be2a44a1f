//! Proves that a process that fails ends alone and clearly: a panic in
//! `step` ends it with `Panicked` carrying the panic text, and the workers
//! and every other process go on; a panic or error in `init` refuses the
//! submit (or the spawn) with the process handed back and `close` not
//! called; a panic in `close` turns a success into `Panicked`; a step that
//! returns an error ends with `Failed`; `close` runs exactly once for every
//! started process whichever way it ended.
//!
//! ```text
//! cargo test --test sched_errors
//! cargo test --release --test sched_errors
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Process, ProcessError, SpawnError, Status, StepOutput};
use stepsched::sched::{JoinHandle, Scheduler};

/// What a `Fragile` process does once started; chosen by the method name
/// (methods "panic_in_init" and "fail_in_init" never start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Finishes with its input after a few steps.
    Succeed,
    /// Panics in its third step.
    PanicInStep,
    /// Finishes, then panics in `close`.
    PanicInClose,
    /// Its second step returns an error.
    FailInStep,
    /// Spawns a child whose `init` panics, and finishes with what the spawn
    /// returned.
    SpawnPanickingChild,
}

struct Fragile {
    plan: Plan,
    input: u64,
    steps: u32,
    tag: &'static str,
    closes: Arc<AtomicUsize>,
}

impl Fragile {
    fn new(closes: &Arc<AtomicUsize>) -> Self {
        Fragile {
            plan: Plan::Succeed,
            input: 0,
            steps: 0,
            tag: "original",
            closes: Arc::clone(closes),
        }
    }
}

impl Process for Fragile {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = String;
    type Error = String;

    fn init(&mut self, method: &str, input: u64) -> Result<(), String> {
        self.input = input;
        self.plan = match method {
            "succeed" => Plan::Succeed,
            "panic_in_step" => Plan::PanicInStep,
            "panic_in_init" => panic!("init exploded {input}"),
            "fail_in_init" => return Err(format!("init refused {input}")),
            "panic_in_close" => Plan::PanicInClose,
            "fail_in_step" => Plan::FailInStep,
            "spawn_panicking_child" => Plan::SpawnPanickingChild,
            other => return Err(format!("no method {other}")),
        };
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        self.steps += 1;
        match self.plan {
            Plan::PanicInStep if self.steps == 3 => panic!("step exploded {}", self.input),
            Plan::FailInStep if self.steps == 2 => {
                return Err(format!("step refused {}", self.input))
            }
            Plan::SpawnPanickingChild => {
                let child = Fragile {
                    tag: "child",
                    ..Fragile::new(&self.closes)
                };
                let result = match out.spawn(child, "panic_in_init", 99) {
                    Err(SpawnError::Init(child, ProcessError::Panicked(msg))) => {
                        format!("{}: {msg}", child.tag)
                    }
                    Err(other) => format!("unexpected {other}"),
                    Ok(pid) => format!("spawned {pid}"),
                };
                out.done(result);
                return Ok(());
            }
            _ => {}
        }
        if self.steps < 4 {
            out.set_status(Status::Continue);
        } else {
            out.done(format!("done {}", self.input));
        }
        Ok(())
    }

    fn close(&mut self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
        if self.plan == Plan::PanicInClose {
            panic!("close exploded {}", self.input);
        }
    }
}

/// A scheduler and the close counter for its processes.
fn setup() -> (Scheduler<Fragile>, Arc<AtomicUsize>) {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    (scheduler, Arc::new(AtomicUsize::new(0)))
}

/// Submits a joinable `Fragile` process on `method` with `input`.
fn start(
    scheduler: &Scheduler<Fragile>,
    closes: &Arc<AtomicUsize>,
    method: &str,
    input: u64,
) -> JoinHandle<Fragile> {
    scheduler
        .submit_joinable(Fragile::new(closes), method, input)
        .unwrap()
}

/// A new process still runs to completion on `scheduler`.
fn assert_still_runs(scheduler: &Scheduler<Fragile>, closes: &Arc<AtomicUsize>, input: u64) {
    let after = start(scheduler, closes, "succeed", input);
    assert_eq!(after.join(), Ok(format!("done {input}")));
}

#[test]
fn a_panicking_step_ends_only_its_process_with_the_panic_text() {
    // A tenth of it under Miri, which interprets every instruction.
    const GOOD: u64 = if cfg!(miri) { 30 } else { 300 };
    const BAD: u64 = if cfg!(miri) { 3 } else { 30 };
    let (scheduler, closes) = setup();
    let handles: Vec<_> = (0..GOOD + BAD)
        .map(|i| {
            let method = if i % 11 == 0 && i / 11 < BAD {
                "panic_in_step"
            } else {
                "succeed"
            };
            (i, method, start(&scheduler, &closes, method, i))
        })
        .collect();
    let mut panicked = 0;
    for (i, method, handle) in handles {
        match (method, handle.join()) {
            ("succeed", Ok(out)) => assert_eq!(out, format!("done {i}")),
            ("panic_in_step", Err(ProcessError::Panicked(msg))) => {
                assert!(
                    msg.contains(&format!("step exploded {i}")),
                    "message: {msg:?}"
                );
                panicked += 1;
            }
            (method, outcome) => panic!("{method} {i}: unexpected {outcome:?}"),
        }
    }
    assert_eq!(panicked, BAD);
    assert_eq!(
        closes.load(Ordering::SeqCst),
        (GOOD + BAD) as usize,
        "close once each"
    );
    // The scheduler still runs new work on both workers.
    assert_still_runs(&scheduler, &closes, 7);
    let report = scheduler.shutdown(Duration::from_secs(1));
    assert_eq!((report.cancelled, report.stuck), (0, 0));
}

#[test]
fn a_panicking_init_refuses_the_submit_and_hands_the_process_back() {
    let (scheduler, closes) = setup();
    let process = Fragile {
        tag: "mine",
        ..Fragile::new(&closes)
    };
    match scheduler.submit(process, "panic_in_init", 12) {
        Err(SpawnError::Init(back, ProcessError::Panicked(msg))) => {
            assert!(msg.contains("init exploded 12"), "message: {msg:?}");
            assert_eq!(back.tag, "mine");
        }
        other => panic!("expected Init(Panicked), got {other:?}"),
    }
    assert_eq!(scheduler.live(), 0);
    // The submitting thread and the scheduler are fine.
    assert_still_runs(&scheduler, &closes, 1);
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(
        closes.load(Ordering::SeqCst),
        1,
        "close only for the started one"
    );
}

#[test]
fn a_failing_init_refuses_the_submit_with_its_error() {
    let (scheduler, closes) = setup();
    match scheduler.submit(Fragile::new(&closes), "fail_in_init", 4) {
        Err(e @ SpawnError::Init(_, ProcessError::Failed(_))) => {
            assert!(e.to_string().contains("init refused 4"), "{e}");
            assert_eq!(e.into_process().tag, "original");
        }
        other => panic!("expected Init(Failed), got {other:?}"),
    }
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(closes.load(Ordering::SeqCst), 0);
}

#[test]
fn a_panicking_init_of_a_spawned_child_is_reported_to_the_parent_step() {
    let (scheduler, closes) = setup();
    let parent = start(&scheduler, &closes, "spawn_panicking_child", 0);
    let outcome = parent.join().unwrap();
    assert!(outcome.starts_with("child: "), "{outcome}");
    assert!(outcome.contains("init exploded 99"), "{outcome}");
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(closes.load(Ordering::SeqCst), 1, "only the parent started");
}

#[test]
fn a_panicking_close_turns_the_outcome_into_panicked() {
    let (scheduler, closes) = setup();
    let handle = start(&scheduler, &closes, "panic_in_close", 5);
    match handle.join() {
        Err(ProcessError::Panicked(msg)) => {
            assert!(msg.contains("close exploded 5"), "message: {msg:?}")
        }
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert_eq!(closes.load(Ordering::SeqCst), 1);
    assert_still_runs(&scheduler, &closes, 6);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_step_error_ends_the_process_with_failed_and_close_runs_once() {
    let (scheduler, closes) = setup();
    let handle = start(&scheduler, &closes, "fail_in_step", 8);
    assert_eq!(
        handle.join(),
        Err(ProcessError::Failed("step refused 8".to_owned()))
    );
    assert_eq!(closes.load(Ordering::SeqCst), 1);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn outcomes_reach_on_complete_once_per_process_however_it_ended() {
    let closes = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let scheduler = {
        let seen = Arc::clone(&seen);
        Scheduler::<Fragile>::builder()
            .workers(2)
            .on_complete(move |pid, outcome| {
                let kind = match outcome {
                    Ok(_) => "ok",
                    Err(ProcessError::Panicked(_)) => "panicked",
                    Err(ProcessError::Failed(_)) => "failed",
                    Err(_) => "other",
                };
                seen.lock().unwrap().push((pid, kind));
            })
            .build()
            .unwrap()
    };
    let methods = ["succeed", "panic_in_step", "panic_in_close", "fail_in_step"];
    let handles: Vec<_> = methods
        .iter()
        .map(|m| start(&scheduler, &closes, m, 0))
        .collect();
    let pids: Vec<_> = handles.iter().map(|h| h.pid()).collect();
    for handle in handles {
        let _ = handle.join();
    }
    scheduler.shutdown(Duration::from_secs(1));
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    let mut expected: Vec<_> = pids
        .into_iter()
        .zip(["ok", "panicked", "panicked", "failed"])
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
    assert_eq!(closes.load(Ordering::SeqCst), 4);
}
