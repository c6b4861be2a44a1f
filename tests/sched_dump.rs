//! The process dump, `Scheduler::processes`: it reports what each live
//! process is doing, and it can be taken in a loop while 10,000 processes
//! are submitted, messaged and finish on 2 workers, without stopping or
//! deadlocking them; every entry of every dump is well-formed. It counts
//! the events queued for a process that cannot drain them, and forgets
//! them once they are drained or, at close, reported undelivered; its
//! pending-timer count drops when a timer fires, and does not pass to the
//! next process in the slot.
//!
//! ```text
//! cargo test --test sched_dump
//! cargo test --release --test sched_dump
//! ```

mod common;
use common::wait_until;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::Lifecycle;
use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{ProcessInfo, Scheduler};

/// Idles until it is sent `n`, then continues `n` times and finishes.
#[derive(Default)]
struct Churner {
    left: Option<u32>,
}

impl Process for Churner {
    type Input = ();
    type Message = u32;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(n) => self.left = Some(n),
                Event::Cancel(_) => {
                    out.done(());
                    return Ok(());
                }
                other => return Err(format!("unexpected {other:?}")),
            }
        }
        match &mut self.left {
            None => out.set_status(Status::Idle),
            Some(0) => out.done(()),
            Some(n) => {
                *n -= 1;
                out.set_status(Status::Continue);
            }
        }
        Ok(())
    }
}

/// The most steps a [`Churner`] sent `CONTINUES` runs: one to go idle,
/// one per continue, one to finish (plus one if the message arrived before
/// its first step ended, at most).
const CONTINUES: u32 = 20;
const MAX_STEPS: u64 = CONTINUES as u64 + 3;

/// Checks one dump; returns how many entries it had.
fn check(dump: &[ProcessInfo], workers: usize, started: Instant) -> usize {
    let mut seen = HashSet::new();
    let mut last_index = None;
    for p in dump {
        assert!(seen.insert(p.pid), "PID listed twice: {p:?}");
        assert!(
            last_index < Some(p.pid.index()),
            "dump in index order: {p:?}"
        );
        last_index = Some(p.pid.index());
        assert!(
            matches!(
                p.state,
                Lifecycle::Ready | Lifecycle::Running | Lifecycle::Blocked | Lifecycle::Idle
            ),
            "only live processes: {p:?}"
        );
        assert!(p.steps <= MAX_STEPS, "steps: {p:?}");
        if let Some(worker) = p.last_worker {
            assert!(worker < workers, "worker index: {p:?}");
        }
        if p.steps > 0 {
            assert!(
                p.last_worker.is_some(),
                "a stepped process has run somewhere: {p:?}"
            );
        }
        assert!(
            p.since_change <= started.elapsed() + Duration::from_millis(1),
            "since_change within the test: {p:?}"
        );
        // Each churner is sent one message, and no message reaches a slot
        // after its process ended: anything above 1 (an underflow, say) is
        // a miscount.
        assert!(p.queued.is_some_and(|n| n <= 1), "queued: {p:?}");
    }
    dump.len()
}

#[test]
fn dumps_in_a_loop_while_10k_processes_churn() {
    // Miri interprets every instruction (and the dump loop's too, all the
    // while): eight batches of 5 there.
    const BATCH: usize = if cfg!(miri) { 5 } else { 500 };
    const BATCHES: usize = if cfg!(miri) { 8 } else { 20 };
    const PROCESSES: usize = BATCHES * BATCH;
    const WORKERS: usize = 2;
    let started = Instant::now();
    let completed = Arc::new(AtomicU64::new(0));
    let scheduler = {
        let completed = Arc::clone(&completed);
        Arc::new(
            Scheduler::<Churner>::builder()
                .workers(WORKERS)
                .count_queued_events(true)
                .on_complete(move |pid, outcome| {
                    assert!(outcome.is_ok(), "{pid}: {outcome:?}");
                    completed.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap(),
        )
    };
    let churn_done = Arc::new(AtomicBool::new(false));
    let dumper = {
        let (scheduler, churn_done) = (Arc::clone(&scheduler), Arc::clone(&churn_done));
        thread::spawn(move || {
            let (mut dumps, mut nonempty, mut entries) = (0u64, 0u64, 0usize);
            while !churn_done.load(Ordering::SeqCst) {
                let n = check(&scheduler.processes(), WORKERS, started);
                dumps += 1;
                entries += n;
                nonempty += u64::from(n > 0);
            }
            (dumps, nonempty, entries)
        })
    };
    // Submit in batches and message each batch, so that processes are
    // created, woken, stepped and finished throughout.
    for batch in 0..(PROCESSES / BATCH) {
        let pids: Vec<_> = (0..BATCH)
            .map(|_| scheduler.submit(Churner::default(), "churn", ()).unwrap())
            .collect();
        for pid in pids {
            // A process may not have run its first step yet: the message
            // waits in its mailbox either way.
            scheduler.send(pid, CONTINUES).unwrap();
        }
        if batch % 2 == 0 {
            // Spread the churn over many dumps.
            thread::sleep(Duration::from_millis(1));
        }
    }
    wait_until("every churner to finish", || {
        completed.load(Ordering::SeqCst) == PROCESSES as u64
    });
    churn_done.store(true, Ordering::SeqCst);
    let (dumps, nonempty, entries) = dumper.join().expect("the dump loop finished");
    assert!(nonempty > 0, "some dumps saw the churn: {dumps} dumps");
    println!("{dumps} dumps, {nonempty} non-empty, {entries} entries in all");
    wait_until("the live count to drop", || scheduler.live() == 0);
    assert_eq!(scheduler.processes(), Vec::new());
    let report = scheduler.shutdown(Duration::from_secs(5));
    assert_eq!(report.forced, 0);
}

#[test]
fn a_dump_shows_idle_processes_and_how_long_they_have_waited() {
    let scheduler = Scheduler::<Churner>::builder().workers(2).build().unwrap();
    let pids: Vec<_> = (0..10)
        .map(|_| scheduler.submit(Churner::default(), "churn", ()).unwrap())
        .collect();
    wait_until("every process to go idle", || {
        let dump = scheduler.processes();
        dump.len() == 10 && dump.iter().all(|p| p.state == Lifecycle::Idle)
    });
    thread::sleep(Duration::from_millis(50));
    let dump = scheduler.processes();
    let listed: Vec<_> = dump.iter().map(|p| p.pid).collect();
    assert_eq!(listed, pids, "every process, in index order");
    for p in &dump {
        assert_eq!(p.steps, 1, "{p:?}");
        assert!(p.last_worker.is_some_and(|w| w < 2), "{p:?}");
        // The coarse clock lags, never leads: the wait is at least the 50 ms
        // slept, less the millisecond truncation.
        assert!(p.since_change >= Duration::from_millis(49), "{p:?}");
        assert_eq!(p.queued, None, "not counted unless the builder asks");
    }
    for pid in pids {
        scheduler.send(pid, 0).unwrap();
    }
    wait_until("every process to finish", || scheduler.live() == 0);
    assert!(scheduler.processes().is_empty());
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn a_dump_shows_a_process_running_a_step() {
    use std::sync::Mutex;
    /// Runs one step until released.
    struct Held(Arc<Mutex<()>>);
    impl Process for Held {
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
            _: &mut Vec<Event<Self>>,
            out: &mut StepOutput<'_, Self>,
        ) -> Result<(), ()> {
            drop(self.0.lock().unwrap());
            out.done(());
            Ok(())
        }
    }
    let gate = Arc::new(Mutex::new(()));
    let held = gate.lock().unwrap();
    let scheduler = Scheduler::<Held>::builder().workers(1).build().unwrap();
    let job = scheduler
        .submit_joinable(Held(Arc::clone(&gate)), "hold", ())
        .unwrap();
    wait_until("the step to start", || {
        scheduler
            .processes()
            .iter()
            .any(|p| p.state == Lifecycle::Running)
    });
    let dump = scheduler.processes();
    assert_eq!(dump.len(), 1);
    assert_eq!(dump[0].pid, job.pid());
    assert_eq!(dump[0].last_worker, Some(0));
    assert_eq!(dump[0].steps, 0, "the step is not counted until it ends");
    drop(held);
    job.join().unwrap();
    scheduler.shutdown(Duration::from_secs(5));
}

/// The command a [`Waiter`] yields; the test's handler keeps its completer.
struct Hold;

impl stepsched::process::Command for Hold {
    fn kind(&self) -> &'static str {
        "hold"
    }
}

/// A waiter yields [`Hold`] in its first step and so stays Blocked until
/// the test completes it, while messages to it pile up unread; after that it
/// counts the messages it receives and finishes on `0` with the count. A
/// parent spawns a waiter (from its step, so on its worker's freed slots)
/// for every message it receives.
struct Waiter {
    parent: bool,
    started: bool,
    received: u64,
}

impl Waiter {
    fn new(parent: bool) -> Self {
        Waiter {
            parent,
            started: false,
            received: 0,
        }
    }
}

impl Process for Waiter {
    type Input = ();
    type Message = u32;
    type Command = Hold;
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
        if !self.started && !self.parent {
            self.started = true;
            out.yield_command(1, Hold); // Blocked until the test completes it
        }
        for event in events.drain(..) {
            match event {
                Event::Message(_) if self.parent => {
                    out.spawn(Waiter::new(false), "child", ())
                        .map_err(|e| format!("spawn: {e:?}"))?;
                }
                Event::Message(0) => out.done(self.received),
                Event::Message(_) => self.received += 1,
                Event::Completion { tag: 1, result } => {
                    result.map_err(|e| format!("completion: {e:?}"))?
                }
                Event::Cancel(_) => out.done(self.received),
                other => return Err(format!("unexpected {other:?}")),
            }
        }
        Ok(()) // Wait while the command is out, then Idle
    }
}

type Held = Arc<std::sync::Mutex<Vec<stepsched::sched::Completer<Waiter>>>>;

/// A scheduler of [`Waiter`]s on one worker whose `hold` handler keeps every
/// completer in the returned list, and which counts undelivered events.
fn holding_scheduler() -> (Scheduler<Waiter>, Held, Arc<AtomicU64>) {
    let held: Held = Arc::default();
    let undelivered = Arc::new(AtomicU64::new(0));
    let scheduler = {
        let (held, undelivered) = (Arc::clone(&held), Arc::clone(&undelivered));
        Scheduler::<Waiter>::builder()
            .workers(1)
            .count_queued_events(true)
            .handler("hold", move |Hold, completer| {
                held.lock().unwrap().push(completer)
            })
            .on_undelivered(move |_, _| {
                undelivered.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap()
    };
    (scheduler, held, undelivered)
}

/// The dump entry for `pid`, which must be listed.
fn entry(scheduler: &Scheduler<Waiter>, pid: stepsched::process::Pid) -> ProcessInfo {
    let dump = scheduler.processes();
    let found = dump.iter().find(|p| p.pid == pid).cloned();
    found.unwrap_or_else(|| panic!("{pid} is not in the dump {dump:?}"))
}

#[test]
fn a_dump_counts_messages_queued_for_a_blocked_process() {
    const SENT: u32 = 7;
    let (scheduler, held, _) = holding_scheduler();
    let job = scheduler
        .submit_joinable(Waiter::new(false), "wait", ())
        .unwrap();
    let pid = job.pid();
    wait_until("the process to block on its command", || {
        let p = entry(&scheduler, pid);
        p.state == Lifecycle::Blocked && held.lock().unwrap().len() == 1
    });
    assert_eq!(entry(&scheduler, pid).queued, Some(0), "nothing sent yet");

    // A message does not wake a Blocked process: these stay in its mailbox.
    for n in 1..=SENT {
        scheduler.send(pid, n).unwrap();
    }
    let p = entry(&scheduler, pid);
    assert_eq!(p.state, Lifecycle::Blocked, "{p:?}");
    assert_eq!(p.steps, 1, "it has not run since: {p:?}");
    assert_eq!(p.queued, Some(SENT), "every message sent is queued: {p:?}");

    // The completion wakes it; its step drains the messages and the
    // completion, and it goes Idle.
    let completer = held.lock().unwrap().pop().unwrap();
    completer.succeed(()).unwrap();
    wait_until("the process to run and go idle", || {
        let p = entry(&scheduler, pid);
        p.state == Lifecycle::Idle && p.steps == 2
    });
    let p = entry(&scheduler, pid);
    assert_eq!(p.queued, Some(0), "its step drained everything: {p:?}");

    scheduler.send(pid, 0).unwrap();
    assert_eq!(job.join(), Ok(u64::from(SENT)), "it read every message");
    assert_eq!(scheduler.shutdown(Duration::from_secs(5)).forced, 0);
}

#[test]
fn events_left_at_close_are_uncounted_before_the_slot_is_reused() {
    const SENT: u32 = 5;
    let (scheduler, held, undelivered) = holding_scheduler();
    let parent = scheduler.submit(Waiter::new(true), "parent", ()).unwrap();
    // The first child: blocked, with messages queued.
    scheduler.send(parent, 1).unwrap();
    wait_until("the first child to block", || {
        held.lock().unwrap().len() == 1
    });
    let first = held.lock().unwrap()[0].pid();
    wait_until("the first child to be Blocked", || {
        entry(&scheduler, first).state == Lifecycle::Blocked
    });
    for n in 1..=SENT {
        scheduler.send(first, n).unwrap();
    }
    assert_eq!(entry(&scheduler, first).queued, Some(SENT));

    // Terminating a waiting process closes it without a step: the messages
    // are reported as undelivered, and its slot goes to the worker's cache.
    scheduler.terminate(first).unwrap();
    wait_until("the first child's messages to be reported", || {
        undelivered.load(Ordering::SeqCst) == u64::from(SENT)
    });
    wait_until("the first child to be gone", || {
        scheduler.processes().iter().all(|p| p.pid != first)
    });

    // The parent's step spawns the second child on that worker, which
    // reuses the freed slot; it starts with nothing queued.
    scheduler.send(parent, 2).unwrap();
    wait_until("the second child to block", || {
        held.lock().unwrap().len() == 2
    });
    let second = held.lock().unwrap()[1].pid();
    assert_eq!(second.index(), first.index(), "the slot was reused");
    assert_eq!(second.generation(), first.generation() + 1);
    wait_until("the second child to be Blocked", || {
        entry(&scheduler, second).state == Lifecycle::Blocked
    });
    let p = entry(&scheduler, second);
    assert_eq!(
        p.queued,
        Some(0),
        "the closed process's events are not counted: {p:?}"
    );
    assert_eq!(undelivered.load(Ordering::SeqCst), u64::from(SENT));
    held.lock().unwrap().clear(); // completes both with Dropped
    scheduler.shutdown(Duration::from_secs(5));
}

/// Sets a timer in its first step, then idles. On its timer it ends (if
/// `ends`) or idles with none pending. A parent (`spawner`, which records
/// the PIDs it spawns) instead spawns one on each message `n`: ending on
/// its timer if `n == 1`, without a timer otherwise (a plain idler).
struct Ticker {
    spawner: Option<Arc<std::sync::Mutex<Vec<Pid>>>>,
    timer: bool,
    ends: bool,
    started: bool,
}

impl Ticker {
    fn new(timer: bool, ends: bool) -> Self {
        Ticker {
            spawner: None,
            timer,
            ends,
            started: false,
        }
    }
}

impl Process for Ticker {
    type Input = ();
    type Message = u32;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if !self.started && self.timer {
            out.wake_after(7, Duration::from_millis(1));
        }
        self.started = true;
        for event in events.drain(..) {
            match event {
                Event::Message(n) if self.spawner.is_some() => {
                    let child = out
                        .spawn(Ticker::new(n == 1, true), "tick", ())
                        .map_err(|e| format!("spawn: {e:?}"))?;
                    let spawned = self.spawner.as_ref().expect("a spawner");
                    spawned.lock().unwrap().push(child);
                }
                Event::Timer { tag: 7 } if self.ends => out.done(()),
                Event::Timer { tag: 7 } => {}
                other => return Err(format!("unexpected {other:?}")),
            }
        }
        Ok(()) // Idle until the timer or a message
    }
}

fn ticker_entry(scheduler: &Scheduler<Ticker>, pid: stepsched::process::Pid) -> ProcessInfo {
    let dump = scheduler.processes();
    let found = dump.iter().find(|p| p.pid == pid).cloned();
    found.unwrap_or_else(|| panic!("{pid} is not in the dump {dump:?}"))
}

#[test]
fn a_timer_that_fired_is_no_longer_counted() {
    let scheduler = Scheduler::<Ticker>::builder().workers(1).build().unwrap();
    let pid = scheduler
        .submit(Ticker::new(true, false), "tick", ())
        .unwrap();
    // Its second step takes the timer's event and sets no other timer.
    wait_until("the timer's step", || {
        ticker_entry(&scheduler, pid).steps == 2
    });
    wait_until("it to idle", || {
        ticker_entry(&scheduler, pid).state == Lifecycle::Idle
    });
    let p = ticker_entry(&scheduler, pid);
    assert_eq!(p.timers, 0, "as of its last step, none pending: {p:?}");
    scheduler.shutdown(Duration::from_secs(5));
}

#[test]
fn a_timer_count_is_not_inherited_by_the_next_process_in_the_slot() {
    let scheduler = Scheduler::<Ticker>::builder().workers(1).build().unwrap();
    let spawned = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut parent = Ticker::new(false, false);
    parent.spawner = Some(Arc::clone(&spawned));
    let parent = scheduler.submit(parent, "spawner", ()).unwrap();
    // The first child sets a timer and ends when it fires: its close frees
    // the slot into the worker's cache. (It may end before any dump sees
    // it: its PID comes from the parent.)
    scheduler.send(parent, 1).unwrap();
    wait_until("the first child to be spawned", || {
        spawned.lock().unwrap().len() == 1
    });
    let first = spawned.lock().unwrap()[0];
    wait_until("the first child to end", || scheduler.live() == 1);
    // The parent's step spawns the second child on that worker, which
    // reuses the freed slot; it never sets a timer.
    scheduler.send(parent, 2).unwrap();
    wait_until("the second child to idle", || {
        let dump = scheduler.processes();
        dump.len() == 2 && dump[1].steps == 1 && dump[1].state == Lifecycle::Idle
    });
    let p = scheduler.processes()[1].clone();
    assert_eq!(p.pid.index(), first.index(), "the slot was reused");
    assert_eq!(p.pid.generation(), first.generation() + 1);
    assert_eq!(p.timers, 0, "the first child's timer: {p:?}");
    scheduler.shutdown(Duration::from_secs(5));
}
