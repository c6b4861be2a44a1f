//! Proves that no process holds others up: a step that runs 200 ms does not
//! delay 1,000 short processes queued behind it on its worker's deque (the
//! other worker steals and finishes them all first), and processes that
//! always return `Continue` do not starve a process submitted later, nor a
//! waiting process woken by a message, on one worker or two.
//!
//! The tests in this file take turns (a lock), so that each has both cores
//! of a small machine to itself; they assert orders and counts, not
//! durations.
//!
//! ```text
//! cargo test --test sched_fairness
//! cargo test --release --test sched_fairness
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// One test at a time in this file.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worker index of the current thread, from its name `fair-{index}`.
fn worker_index() -> usize {
    let name = thread::current().name().unwrap_or_default().to_owned();
    name.strip_prefix("fair-")
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("not a worker thread: {name:?}"))
}

/// What the processes of one test share with it.
#[derive(Default)]
struct Board {
    /// Short processes completed so far.
    short_done: AtomicUsize,
    /// `short_done` when the long process completed.
    short_done_before_long: Mutex<Option<usize>>,
    /// The worker that ran the long step.
    long_worker: Mutex<Option<usize>>,
    /// Short processes that ran on the long step's worker.
    short_on_long_worker: AtomicUsize,
    /// Spinners keep continuing until this is set.
    stop: AtomicBool,
    /// Steps run by spinners.
    spins: AtomicUsize,
    /// Steps run by each spinner, by its index.
    per_spinner: [AtomicUsize; 8],
}

enum Role {
    /// Spawns `short` short processes, then the long one (so the long one is
    /// on top of its worker's LIFO deque, with the short ones under it).
    Parent { short: usize, long_ms: u64 },
    /// One step that sleeps `ms` milliseconds.
    Long { ms: u64 },
    /// One trivial step.
    Short,
    /// Returns `Continue` until `Board::stop`; counts its steps under its
    /// index.
    Spinner(usize),
    /// Waits for one message and finishes with it.
    Waiter,
}

struct Job {
    role: Role,
    board: Arc<Board>,
}

impl Process for Job {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let board = &self.board;
        match self.role {
            Role::Parent { short, long_ms } => {
                for _ in 0..short {
                    let child = Job {
                        role: Role::Short,
                        board: Arc::clone(board),
                    };
                    out.spawn(child, "short", ()).map_err(|e| e.to_string())?;
                }
                let long = Job {
                    role: Role::Long { ms: long_ms },
                    board: Arc::clone(board),
                };
                out.spawn(long, "long", ()).map_err(|e| e.to_string())?;
                out.done(0);
            }
            Role::Long { ms } => {
                *board.long_worker.lock().unwrap() = Some(worker_index());
                thread::sleep(Duration::from_millis(ms));
                out.done(ms);
            }
            Role::Short => {
                let me = worker_index();
                if *board.long_worker.lock().unwrap() == Some(me) {
                    board.short_on_long_worker.fetch_add(1, Ordering::Relaxed);
                }
                out.done(1);
            }
            Role::Spinner(index) => {
                board.spins.fetch_add(1, Ordering::Relaxed);
                board.per_spinner[index].fetch_add(1, Ordering::Relaxed);
                if board.stop.load(Ordering::Relaxed) {
                    out.done(0);
                } else {
                    out.set_status(Status::Continue);
                }
            }
            Role::Waiter => {
                for event in events.drain(..) {
                    if let Event::Message(n) = event {
                        out.done(n);
                    }
                }
            }
        }
        Ok(())
    }
}

fn job(role: Role, board: &Arc<Board>) -> Job {
    Job {
        role,
        board: Arc::clone(board),
    }
}

/// A scheduler whose `on_complete` hook counts short processes and notes
/// how many had completed when the long one did.
fn scheduler(workers: usize, board: &Arc<Board>) -> Scheduler<Job> {
    let board = Arc::clone(board);
    Scheduler::<Job>::builder()
        .workers(workers)
        .thread_name(|i| format!("fair-{i}"))
        .on_complete(move |_, outcome| match outcome {
            Ok(1) => {
                board.short_done.fetch_add(1, Ordering::SeqCst);
            }
            Ok(ms) if *ms >= 100 => {
                let done = board.short_done.load(Ordering::SeqCst);
                *board.short_done_before_long.lock().unwrap() = Some(done);
            }
            _ => {}
        })
        .build()
        .unwrap()
}

#[test]
fn a_200ms_step_does_not_delay_1000_short_processes_queued_behind_it_on_its_worker() {
    const SHORT: usize = 1_000;
    let _turn = serial();
    let board = Arc::new(Board::default());
    let scheduler = scheduler(2, &board);
    let parent = Role::Parent {
        short: SHORT,
        long_ms: 200,
    };
    let parent = scheduler
        .submit_joinable(job(parent, &board), "parent", ())
        .unwrap();
    assert_eq!(parent.join(), Ok(0));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while board.short_done_before_long.lock().unwrap().is_none()
        || board.short_done.load(Ordering::SeqCst) < SHORT
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the processes never finished"
        );
        thread::sleep(Duration::from_millis(5));
    }
    let before_long = board.short_done_before_long.lock().unwrap().unwrap();
    let long_worker = board.long_worker.lock().unwrap().unwrap();
    let stats = scheduler.stats();
    scheduler.shutdown(Duration::from_secs(1));

    assert_eq!(
        before_long, SHORT,
        "all short processes must finish before the 200 ms step does"
    );
    assert_eq!(
        board.short_on_long_worker.load(Ordering::Relaxed),
        0,
        "short processes must run on the other worker"
    );
    let thief = &stats.workers[1 - long_worker];
    assert!(thief.steals > 0, "the other worker stole them: {stats}");
    assert!(thief.stolen >= SHORT as u64, "it stole every one: {stats}");
    assert!(thief.steps >= SHORT as u64, "{stats}");
}

/// Eight spinners, then a process submitted later must still finish, and
/// so must a waiting process woken from outside.
fn spinners_do_not_starve(workers: usize) {
    const SPINNERS: usize = 8;
    let _turn = serial();
    let board = Arc::new(Board::default());
    let scheduler = scheduler(workers, &board);
    let spinners: Vec<_> = (0..SPINNERS)
        .map(|i| {
            scheduler
                .submit_joinable(job(Role::Spinner(i), &board), "spin", ())
                .unwrap()
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while board.spins.load(Ordering::Relaxed) < 10 * SPINNERS {
        assert!(std::time::Instant::now() < deadline, "spinners never ran");
        thread::yield_now();
    }
    let waiter = scheduler
        .submit_joinable(job(Role::Waiter, &board), "wait", ())
        .unwrap();
    for round in 0..10 {
        let late = scheduler
            .submit_joinable(job(Role::Short, &board), "short", ())
            .unwrap();
        match late.join_timeout(Duration::from_secs(10)) {
            Ok(outcome) => assert_eq!(outcome, Ok(1)),
            Err(_) => panic!("round {round}: starved by {SPINNERS} continuing processes"),
        }
    }
    scheduler.send(waiter.pid(), 5).unwrap();
    match waiter.join_timeout(Duration::from_secs(10)) {
        Ok(outcome) => assert_eq!(outcome, Ok(5)),
        Err(_) => panic!("a woken process starved by {SPINNERS} continuing processes"),
    }
    assert!(
        board.spins.load(Ordering::Relaxed) > 10 * SPINNERS,
        "the spinners kept running meanwhile"
    );
    board.stop.store(true, Ordering::Relaxed);
    for spinner in spinners {
        assert_eq!(spinner.join(), Ok(0));
    }
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn eight_always_continuing_processes_do_not_starve_later_ones_on_two_workers() {
    spinners_do_not_starve(2);
}

#[test]
fn eight_always_continuing_processes_do_not_starve_later_ones_on_one_worker() {
    spinners_do_not_starve(1);
}

#[test]
fn continuing_processes_on_one_worker_take_turns_round_robin() {
    const SPINNERS: usize = 8;
    let _turn = serial();
    let board = Arc::new(Board::default());
    let scheduler = scheduler(1, &board);
    let spinners: Vec<_> = (0..SPINNERS)
        .map(|i| {
            scheduler
                .submit_joinable(job(Role::Spinner(i), &board), "spin", ())
                .unwrap()
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while board.spins.load(Ordering::Relaxed) < 1_000 * SPINNERS {
        assert!(std::time::Instant::now() < deadline, "spinners never ran");
        thread::yield_now();
    }
    board.stop.store(true, Ordering::Relaxed);
    for spinner in spinners {
        match spinner.join_timeout(Duration::from_secs(10)) {
            Ok(outcome) => assert_eq!(outcome, Ok(0)),
            Err(_) => panic!("a continuing process was starved by the others"),
        }
    }
    scheduler.shutdown(Duration::from_secs(1));
    let counts: Vec<usize> = board
        .per_spinner
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    // Each continue goes behind the others, so every spinner gets one step
    // per round: the counts differ by a round or two, never by a factor.
    assert!(max - min <= 2, "steps per spinner: {counts:?}");
}
