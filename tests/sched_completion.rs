//! Proves that every process runs to completion with its own result, at
//! scale: 100k submitted processes, trees of spawned children reporting to
//! their parents, step and process counts in `stats()` that add up exactly,
//! the live-process limit, and the worker-thread hooks.
//!
//! ```text
//! cargo test --test sched_completion            # debug: a few seconds
//! cargo test --release --test sched_completion
//! ```

mod common;
use common::wait_until;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, SpawnError, Status, StepOutput};
use stepsched::sched::{JoinHandle, Scheduler};

/// The function every `Square` process computes.
fn f(x: u64) -> u64 {
    x * x + 1
}

/// Computes `f(input)` after `extra` steps that return `Continue`.
struct Square {
    x: u64,
    extra: u32,
    closes: Arc<AtomicUsize>,
}

impl Square {
    fn new(extra: u32, closes: &Arc<AtomicUsize>) -> Self {
        Square {
            x: 0,
            extra,
            closes: Arc::clone(closes),
        }
    }
}

impl Process for Square {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = (u64, u64);
    type Error = String;

    fn init(&mut self, method: &str, x: u64) -> Result<(), String> {
        match method {
            "square" => {
                self.x = x;
                Ok(())
            }
            other => Err(format!("no method {other}")),
        }
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if self.extra > 0 {
            self.extra -= 1;
            out.set_status(Status::Continue);
        } else {
            out.done((self.x, f(self.x)));
        }
        Ok(())
    }

    fn close(&mut self) {
        self.closes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Submits a joinable `Square` of `x` that takes `extra` steps first.
fn start_square(
    scheduler: &Scheduler<Square>,
    extra: u32,
    closes: &Arc<AtomicUsize>,
    x: u64,
) -> JoinHandle<Square> {
    scheduler
        .submit_joinable(Square::new(extra, closes), "square", x)
        .unwrap()
}

#[test]
fn hundred_thousand_submitted_processes_each_complete_once_with_their_own_result() {
    // Miri interprets every instruction: a hundred there (two of the
    // table's pages).
    const N: usize = if cfg!(miri) { 100 } else { 100_000 };
    // results[x] = f(x) once x's process completed; 0 = not yet (f is never 0).
    let results: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
    let completed = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let closes = Arc::new(AtomicUsize::new(0));
    let scheduler = {
        let (results, completed, failures) = (
            Arc::clone(&results),
            Arc::clone(&completed),
            Arc::clone(&failures),
        );
        Scheduler::<Square>::builder()
            .workers(2)
            .on_complete(move |pid, outcome| {
                match outcome {
                    Ok((x, y)) => {
                        let before = results[*x as usize].swap(*y, Ordering::Relaxed);
                        if before != 0 {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{pid}: input {x} completed twice"));
                        }
                    }
                    Err(e) => failures.lock().unwrap().push(format!("{pid}: {e}")),
                }
                completed.fetch_add(1, Ordering::Release);
            })
            .build()
            .unwrap()
    };
    let mut pids = HashSet::with_capacity(N);
    for x in 0..N as u64 {
        // Every 8th process takes a few steps, so steps interleave.
        let extra = if x % 8 == 0 { 3 } else { 0 };
        let pid = scheduler
            .submit(Square::new(extra, &closes), "square", x)
            .unwrap();
        assert!(pids.insert(pid), "pid {pid} handed out twice while live");
    }
    wait_until("100k completions", || {
        completed.load(Ordering::Acquire) >= N
    });
    let report = scheduler.shutdown(Duration::from_secs(5));

    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "first failures: {:?}",
        &failures[..failures.len().min(10)]
    );
    assert_eq!(completed.load(Ordering::Acquire), N, "on_complete calls");
    for (x, y) in results.iter().enumerate() {
        assert_eq!(
            y.load(Ordering::Relaxed),
            f(x as u64),
            "result of input {x}"
        );
    }
    assert_eq!(closes.load(Ordering::Relaxed), N, "close calls");
    let stats = scheduler.stats();
    assert_eq!(stats.submitted, N as u64);
    assert_eq!(stats.completed, N as u64);
    assert_eq!(stats.live, 0);
    let extra_steps = (N as u64).div_ceil(8) * 3;
    assert_eq!(stats.total().steps, N as u64 + extra_steps, "steps run");
    assert_eq!(report.cancelled, 0, "nothing was live at shutdown");
    assert_eq!(report.forced, 0);
}

#[test]
fn joinable_processes_each_return_their_own_result() {
    let closes = Arc::new(AtomicUsize::new(0));
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    const N: u64 = if cfg!(miri) { 50 } else { 5_000 };
    let handles: Vec<_> = (0..N)
        .map(|x| start_square(&scheduler, (x % 3) as u32, &closes, x))
        .collect();
    for (x, handle) in handles.into_iter().enumerate() {
        let x = x as u64;
        assert_eq!(handle.join(), Ok((x, f(x))));
    }
    assert_eq!(scheduler.shutdown(Duration::from_secs(1)).forced, 0);
    assert_eq!(closes.load(Ordering::Relaxed), N as usize);
}

#[test]
fn an_unknown_method_refuses_the_submit_with_the_init_error() {
    let closes = Arc::new(AtomicUsize::new(0));
    let scheduler = Scheduler::builder().workers(1).build().unwrap();
    match scheduler.submit(Square::new(7, &closes), "cube", 3) {
        Err(SpawnError::Init(process, stepsched::process::ProcessError::Failed(e))) => {
            assert_eq!(e, "no method cube");
            assert_eq!(process.extra, 7, "the same process is handed back");
        }
        other => panic!("expected Init(Failed), got {other:?}"),
    }
    assert_eq!(scheduler.live(), 0);
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(
        closes.load(Ordering::Relaxed),
        0,
        "close runs only for started processes"
    );
}

/// A binary tree: a node of depth `d > 0` spawns two children of depth
/// `d - 1` and waits for their sizes; every node sends its subtree's size to
/// its parent and finishes with it.
#[derive(Default)]
struct Tree {
    depth: u32,
    parent: Option<Pid>,
    spawned: bool,
    waiting: u32,
    size: u64,
}

impl Process for Tree {
    type Input = (u32, Option<Pid>);
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, (depth, parent): (u32, Option<Pid>)) -> Result<(), String> {
        self.depth = depth;
        self.parent = parent;
        self.size = 1;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if self.depth > 0 && !self.spawned {
            for _ in 0..2 {
                let parent = Some(out.pid());
                out.spawn(Tree::default(), "tree", (self.depth - 1, parent))
                    .map_err(|e| format!("spawn: {e}"))?;
            }
            self.spawned = true;
            self.waiting = 2;
            return Ok(()); // Idle: wait for their sizes
        }
        for event in events.drain(..) {
            match event {
                Event::Message(n) => {
                    self.size += n;
                    self.waiting -= 1;
                }
                other => return Err(format!("unexpected event {other:?}")),
            }
        }
        if self.waiting == 0 {
            if let Some(parent) = self.parent {
                out.send(parent, self.size);
            }
            out.done(self.size);
        }
        Ok(())
    }
}

#[test]
fn a_tree_of_spawned_children_reports_every_subtree_size_to_its_parent() {
    // 2^15 - 1 = 32767 processes (63 under Miri).
    const DEPTH: u32 = if cfg!(miri) { 5 } else { 14 };
    let undelivered = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let scheduler = {
        let (undelivered, completed) = (Arc::clone(&undelivered), Arc::clone(&completed));
        Scheduler::<Tree>::builder()
            .workers(2)
            .on_undelivered(move |_, _| {
                undelivered.fetch_add(1, Ordering::Relaxed);
            })
            .on_complete(move |_, _| {
                completed.fetch_add(1, Ordering::Relaxed);
            })
            .build()
            .unwrap()
    };
    let handle = scheduler
        .submit_joinable(Tree::default(), "tree", (DEPTH, None))
        .unwrap();
    let total = (1u64 << (DEPTH + 1)) - 1;
    assert_eq!(handle.join(), Ok(total));
    wait_until("every node's on_complete", || {
        completed.load(Ordering::Relaxed) == total as usize
    });
    let report = scheduler.shutdown(Duration::from_secs(5));
    assert_eq!(report.cancelled, 0);
    assert_eq!(
        undelivered.load(Ordering::Relaxed),
        0,
        "every size reached its parent"
    );
    let stats = scheduler.stats();
    assert_eq!(stats.submitted, 1, "children are spawned, not submitted");
    assert_eq!(stats.completed, total);
    // Inner nodes take 2 steps (spawn, then sum), except that both sizes may
    // arrive before the second step; leaves take 1.
    let inner = (1u64 << DEPTH) - 1;
    let leaves = 1u64 << DEPTH;
    assert!(stats.total().steps >= leaves + 2 * inner, "{stats}");
}

#[test]
fn stats_count_every_step_and_every_process_exactly() {
    const N: u64 = if cfg!(miri) { 20 } else { 1_000 };
    const STEPS: u32 = 5;
    let closes = Arc::new(AtomicUsize::new(0));
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let before = scheduler.stats();
    assert_eq!(before.total().steps, 0);
    assert_eq!(before.workers.len(), 2);
    let handles: Vec<_> = (0..N)
        .map(|x| start_square(&scheduler, STEPS - 1, &closes, x))
        .collect();
    for handle in handles {
        assert!(handle.join().is_ok());
    }
    let stats = scheduler.stats();
    let per_worker: u64 = stats.workers.iter().map(|w| w.steps).sum();
    assert_eq!(per_worker, N * u64::from(STEPS), "{stats}");
    assert_eq!(stats.total().steps, per_worker);
    assert_eq!(stats.submitted, N);
    assert_eq!(stats.completed, N);
    assert_eq!(stats.live, 0);
    assert_eq!(stats.undelivered, 0);
    assert_eq!(stats.unknown_tags, 0);
    let total = stats.total();
    assert!(
        total.stolen >= total.steals,
        "a steal takes at least one process"
    );
    assert!(total.steal_attempts >= total.steals);
    // Display renders a header, one row per worker, a total, a summary
    // line and the blocking pool's line.
    assert_eq!(stats.to_string().lines().count(), 1 + 2 + 1 + 1 + 1);
    scheduler.shutdown(Duration::from_secs(1));
}

/// Waits for one message, then finishes with it; or, on method "spawn",
/// tries to spawn a child in its first step and finishes with what happened.
struct Holder {
    marker: u64,
}

impl Process for Holder {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = String;
    type Error = String;

    fn init(&mut self, method: &str, _: ()) -> Result<(), String> {
        if method == "spawn" {
            self.marker = u64::MAX;
        }
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if self.marker == u64::MAX {
            let result = match out.spawn(Holder { marker: 77 }, "hold", ()) {
                Ok(pid) => format!("spawned {pid}"),
                Err(SpawnError::AtCapacity(child)) => format!("at capacity, got {}", child.marker),
                Err(e) => format!("other error {e}"),
            };
            out.done(result);
            return Ok(());
        }
        for event in events.drain(..) {
            if let Event::Message(n) = event {
                out.done(format!("message {n}"));
            }
        }
        Ok(())
    }
}

/// Submits a joinable `Holder` with `marker` on method "hold".
fn start_holder(scheduler: &Scheduler<Holder>, marker: u64) -> JoinHandle<Holder> {
    scheduler
        .submit_joinable(Holder { marker }, "hold", ())
        .unwrap()
}

#[test]
fn max_processes_refuses_submits_and_spawns_beyond_the_limit_and_hands_them_back() {
    let scheduler = Scheduler::builder()
        .workers(2)
        .max_processes(3)
        .build()
        .unwrap();
    let held: Vec<_> = (0..3).map(|i| start_holder(&scheduler, i)).collect();
    assert_eq!(scheduler.live(), 3);
    match scheduler.submit(Holder { marker: 42 }, "hold", ()) {
        Err(SpawnError::AtCapacity(p)) => assert_eq!(p.marker, 42),
        other => panic!("expected AtCapacity, got {other:?}"),
    }
    // Finish one: there is room for exactly one more, which is itself
    // refused a child.
    let mut held = held.into_iter();
    let first = held.next().unwrap();
    scheduler.send(first.pid(), 5).unwrap();
    assert_eq!(first.join(), Ok("message 5".to_owned()));
    wait_until("the slot to be freed", || scheduler.live() == 2);
    let spawner = scheduler
        .submit_joinable(Holder { marker: 0 }, "spawn", ())
        .unwrap();
    assert_eq!(spawner.join(), Ok("at capacity, got 77".to_owned()));
    for (i, handle) in held.enumerate() {
        scheduler.send(handle.pid(), i as u64).unwrap();
        assert_eq!(handle.join(), Ok(format!("message {i}")));
    }
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn thread_hooks_run_once_per_worker_with_its_index_on_its_named_thread() {
    const WORKERS: usize = 3;
    let starts = Arc::new(Mutex::new(Vec::new()));
    let stops = Arc::new(Mutex::new(Vec::new()));
    let scheduler = {
        let (starts, stops) = (Arc::clone(&starts), Arc::clone(&stops));
        Scheduler::<Square>::builder()
            .workers(WORKERS)
            .thread_name(|i| format!("hooked-{i}"))
            .stack_size(256 * 1024)
            .on_thread_start(move |i| {
                let name = thread::current().name().map(str::to_owned);
                starts.lock().unwrap().push((i, name));
            })
            .on_thread_stop(move |i| {
                let name = thread::current().name().map(str::to_owned);
                stops.lock().unwrap().push((i, name));
            })
            .build()
            .unwrap()
    };
    assert_eq!(scheduler.workers(), WORKERS);
    let closes = Arc::new(AtomicUsize::new(0));
    let handle = start_square(&scheduler, 0, &closes, 3);
    assert_eq!(handle.join(), Ok((3, 10)));
    scheduler.shutdown(Duration::from_secs(1));
    let expected: Vec<_> = (0..WORKERS)
        .map(|i| (i, Some(format!("hooked-{i}"))))
        .collect();
    let mut starts = starts.lock().unwrap().clone();
    starts.sort();
    assert_eq!(starts, expected);
    let mut stops = stops.lock().unwrap().clone();
    stops.sort();
    assert_eq!(stops, expected);
}

#[test]
fn join_timeout_hands_the_handle_back_until_the_process_ends() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let handle = start_holder(&scheduler, 1);
    let pid = handle.pid();
    let handle = match handle.join_timeout(Duration::from_millis(20)) {
        Err(handle) => handle,
        Ok(outcome) => panic!("an idle process ended: {outcome:?}"),
    };
    assert_eq!(handle.pid(), pid);
    assert!(!handle.is_finished());
    scheduler.send(pid, 3).unwrap();
    wait_until("the process to end", || handle.is_finished());
    assert_eq!(
        handle.join_timeout(Duration::from_secs(10)).ok(),
        Some(Ok("message 3".to_owned()))
    );
    scheduler.shutdown(Duration::from_secs(1));
}

/// Counts the processes between their first step and `close`.
struct Counted {
    alive: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    started: bool,
}

impl Process for Counted {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if !self.started {
            self.started = true;
            let now = self.alive.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            out.set_status(Status::Continue);
        } else {
            out.done(());
        }
        Ok(())
    }

    fn close(&mut self) {
        if self.started {
            self.alive.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn max_processes_holds_under_concurrent_submits() {
    const LIMIT: usize = 20;
    let alive = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let scheduler = Arc::new(
        Scheduler::<Counted>::builder()
            .workers(2)
            .max_processes(LIMIT)
            .build()
            .unwrap(),
    );
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (scheduler, alive, most) = (
                Arc::clone(&scheduler),
                Arc::clone(&alive),
                Arc::clone(&most),
            );
            thread::spawn(move || {
                let (mut accepted, mut refused) = (0, 0);
                for _ in 0..if cfg!(miri) { 40 } else { 5_000 } {
                    let process = Counted {
                        alive: Arc::clone(&alive),
                        most: Arc::clone(&most),
                        started: false,
                    };
                    match scheduler.submit(process, "count", ()) {
                        Ok(_) => accepted += 1,
                        Err(SpawnError::AtCapacity(_)) => refused += 1,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                (accepted, refused)
            })
        })
        .collect();
    let mut accepted = 0;
    for thread in threads {
        accepted += thread.join().unwrap().0;
    }
    wait_until("every process to end", || scheduler.live() == 0);
    scheduler.shutdown(Duration::from_secs(1));
    assert!(accepted > 0);
    assert!(
        most.load(Ordering::SeqCst) <= LIMIT,
        "{} processes were alive at once, limit {LIMIT}",
        most.load(Ordering::SeqCst)
    );
    assert_eq!(scheduler.stats().completed, accepted);
}

#[test]
fn hundred_thousand_live_processes_submitted_from_four_threads_each_get_their_own_message() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = if cfg!(miri) { 25 } else { 25_000 };
    let scheduler = Arc::new(Scheduler::builder().workers(2).build().unwrap());
    let submitters: Vec<_> = (0..THREADS)
        .map(|_| {
            let scheduler = Arc::clone(&scheduler);
            thread::spawn(move || {
                (0..PER_THREAD)
                    .map(|_| start_holder(&scheduler, 0))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let handles: Vec<_> = submitters
        .into_iter()
        .flat_map(|s| s.join().unwrap())
        .collect();
    let pids: HashSet<Pid> = handles.iter().map(|h| h.pid()).collect();
    assert_eq!(
        pids.len(),
        THREADS * PER_THREAD,
        "every live process has its own pid"
    );
    assert_eq!(scheduler.live(), THREADS * PER_THREAD);
    for (i, handle) in handles.iter().enumerate() {
        scheduler.send(handle.pid(), i as u64).unwrap();
    }
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(handle.join(), Ok(format!("message {i}")));
    }
    assert_eq!(scheduler.stats().undelivered, 0);
    scheduler.shutdown(Duration::from_secs(1));
}
