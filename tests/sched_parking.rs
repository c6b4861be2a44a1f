//! Proves that idle workers park and wake without losing work: a scheduler
//! whose workers are all parked wakes for every submit and every send;
//! workers that park at once still finish a busy load; and under a storm of
//! park/wake cycles the idle bookkeeping stays consistent (never more
//! spinning plus sleeping workers than workers) and no worker thread dies.
//!
//! ```text
//! cargo test --test sched_parking
//! cargo test --release --test sched_parking
//! ```

mod common;
use common::{wait_until, ThreadStops};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::{JoinHandle, Scheduler};

/// On method "echo": finishes with the first number it is sent. On method
/// "relay": passes each number `n > 0` on to its peer as `n - 1` (the peer
/// is learnt from the input) and finishes after forwarding 0 or receiving 0.
struct Node {
    peer: Option<Pid>,
}

impl Process for Node {
    type Input = Option<Pid>;
    type Message = (Pid, u64);
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, peer: Option<Pid>) -> Result<(), String> {
        self.peer = peer;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            let Event::Message((from, n)) = event else {
                return Err(format!("unexpected {event:?}"));
            };
            let peer = *self.peer.get_or_insert(from);
            if n == 0 {
                out.done(0);
            } else {
                out.send(peer, (out.pid(), n - 1));
                if n == 1 {
                    out.done(1);
                }
            }
        }
        Ok(())
    }
}

/// Submits a joinable "echo" process.
fn submit_echo(scheduler: &Scheduler<Node>) -> JoinHandle<Node> {
    scheduler
        .submit_joinable(Node { peer: None }, "echo", None)
        .unwrap()
}

#[test]
fn a_scheduler_with_every_worker_parked_wakes_for_each_submit_and_send() {
    // Miri interprets every instruction: a few rounds there.
    const ROUNDS: u64 = if cfg!(miri) { 5 } else { 50 };
    let parks = Arc::new(AtomicUsize::new(0));
    let unparks = Arc::new(AtomicUsize::new(0));
    let scheduler = {
        let (parks, unparks) = (Arc::clone(&parks), Arc::clone(&unparks));
        Scheduler::<Node>::builder()
            .workers(2)
            .on_park(move |_| {
                parks.fetch_add(1, Ordering::Relaxed);
            })
            .on_unpark(move |_| {
                unparks.fetch_add(1, Ordering::Relaxed);
            })
            .build()
            .unwrap()
    };
    for round in 0..ROUNDS {
        wait_until("both workers to park", || scheduler.stats().sleeping == 2);
        let echo = submit_echo(&scheduler);
        // Let the workers run its first step and park again, then wake them
        // with a message from outside.
        wait_until("both workers to park again", || {
            scheduler.stats().sleeping == 2
        });
        scheduler.send(echo.pid(), (echo.pid(), 0)).unwrap();
        match echo.join_timeout(Duration::from_secs(10)) {
            Ok(outcome) => assert_eq!(outcome, Ok(0), "round {round}"),
            Err(_) => panic!("round {round}: a parked scheduler lost a wakeup"),
        }
    }
    let total = scheduler.stats().total();
    assert!(total.parks >= ROUNDS, "{total:?}");
    assert!(total.wakeups >= ROUNDS, "{total:?}");
    assert!(parks.load(Ordering::Relaxed) >= ROUNDS as usize);
    assert!(unparks.load(Ordering::Relaxed) >= ROUNDS as usize);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn workers_that_park_at_once_finish_twenty_relays_without_a_lost_wakeup() {
    const PAIRS: usize = if cfg!(miri) { 4 } else { 20 };
    const HOPS: u64 = if cfg!(miri) { 20 } else { 5_000 };
    let scheduler = Scheduler::<Node>::builder()
        .workers(2)
        .spin_thresholds(0, 1)
        .global_queue_interval(7)
        .build()
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..PAIRS {
        let a = scheduler
            .submit_joinable(Node { peer: None }, "relay", None)
            .unwrap();
        let b = scheduler
            .submit_joinable(Node { peer: None }, "relay", Some(a.pid()))
            .unwrap();
        scheduler.send(b.pid(), (b.pid(), HOPS)).unwrap();
        handles.push(a);
        handles.push(b);
    }
    let mut ones = 0;
    for handle in handles {
        match handle.join_timeout(Duration::from_secs(30)) {
            Ok(Ok(n)) => ones += n,
            Ok(Err(e)) => panic!("relay failed: {e}"),
            Err(h) => panic!("{} never finished: a lost wakeup", h.pid()),
        }
    }
    // In each pair exactly one side forwards the last hop (1 -> 0).
    assert_eq!(ones, PAIRS as u64);
    scheduler.shutdown(Duration::from_secs(1));
}

/// Submits per storm: Miri interprets every instruction, so few there.
const STORM: usize = if cfg!(miri) { 30 } else { 20_000 };

/// Submits processes one at a time from outside while the workers keep
/// parking and waking, sampling the idle counts all along; at the end every
/// worker thread must still be alive to run its stop hook.
fn park_wake_storm(workers: usize, submits: usize) {
    let stopped = ThreadStops::default();
    let scheduler = Arc::new(
        Scheduler::<Node>::builder()
            .workers(workers)
            .on_thread_stop(stopped.hook())
            .build()
            .unwrap(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (scheduler, done) = (Arc::clone(&scheduler), Arc::clone(&done));
        thread::spawn(move || {
            let mut worst = (0, 0);
            while !done.load(Ordering::Relaxed) {
                let stats = scheduler.stats();
                if stats.spinning + stats.sleeping > worst.0 + worst.1 {
                    worst = (stats.spinning, stats.sleeping);
                }
                thread::yield_now();
            }
            worst
        })
    };
    let mut handles = Vec::with_capacity(submits);
    for _ in 0..submits {
        // Each stays idle: its one step is all the work a wakeup brings.
        let handle = submit_echo(&scheduler);
        handles.push(handle);
    }
    for handle in handles {
        scheduler.send(handle.pid(), (handle.pid(), 0)).unwrap();
        assert_eq!(
            handle.join_timeout(Duration::from_secs(30)).ok(),
            Some(Ok(0))
        );
    }
    done.store(true, Ordering::Relaxed);
    let (spinning, sleeping) = sampler.join().unwrap();
    scheduler.shutdown(Duration::from_secs(1));
    assert_eq!(
        stopped.sorted(),
        (0..workers).collect::<Vec<_>>(),
        "a worker thread died (it never ran its stop hook)"
    );
    assert!(
        spinning + sleeping <= workers,
        "idle counts out of range: {spinning} spinning + {sleeping} sleeping > {workers} workers"
    );
}

#[test]
fn a_storm_of_park_wake_cycles_keeps_idle_counts_in_range_and_every_worker_alive() {
    park_wake_storm(2, STORM);
}

#[test]
fn a_storm_of_park_wake_cycles_on_three_workers_keeps_every_worker_alive() {
    park_wake_storm(3, STORM);
}

/// The mechanism behind `shutdown_of_thousands_of_idle_processes_keeps_every_worker_thread_alive`
/// (tests/sched_shutdown.rs), driven step by step through the idle
/// protocol's own API (`stepsched::__internals::Idle`, hidden, for the
/// crate's tests): a worker that was busy during `wake_all` must not keep a
/// wakeup flag, or its next `park` returns at once while it is still
/// registered as a sleeper, and the sleeper count drifts above the worker
/// count. Failed before commit 20e09ce (`wake_all` unparked every worker,
/// parked or not).
#[test]
fn wake_all_leaves_no_stale_wakeup_for_a_worker_that_was_not_parked() {
    use stepsched::__internals::Idle;
    let idle = Arc::new(Idle::new(2));
    idle.wake_all(); // shutdown's close_waiting, while worker 0 is busy
                     // Worker 0 later runs out of work and goes to sleep.
    idle.prepare_park(0, false);
    let parked = {
        let idle = Arc::clone(&idle);
        thread::spawn(move || idle.park(0))
    };
    thread::sleep(Duration::from_millis(100));
    let returned_at_once = parked.is_finished();
    if returned_at_once {
        parked.join().unwrap();
    } else {
        idle.wake_all(); // let the thread go
        parked.join().unwrap();
    }
    assert!(
        !returned_at_once,
        "park returned at once, leaving worker 0 registered as a sleeper while it runs: counts {:?}",
        idle.counts()
    );
}
