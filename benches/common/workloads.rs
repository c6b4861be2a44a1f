//! Process types shared by the scheduler benchmarks, included with
//! `#[path]` by the criterion bench (`benches/scheduler.rs`) and the
//! side-by-side run against tokio (`benches/peers/src/bin/scheduler.rs`), so
//! that both run the same processes. Each includer uses some of them.
//! `Pinger` lives in `tests/common/pinger.rs`, shared with the ping-pong
//! soak, so that the packaged crate's tests build without benches/.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};

/// How long `Latch::wait` waits before it calls the run hung.
pub const HANG: Duration = Duration::from_secs(120);

/// Counts hits (and sums a value per hit); the bench thread waits for a
/// target number of hits.
#[derive(Default)]
pub struct Latch {
    hits: AtomicU64,
    failures: AtomicU64,
    sum: AtomicU64,
    target: AtomicU64,
    lock: Mutex<()>,
    opened: Condvar,
}

impl Latch {
    /// Resets the counts and sets how many hits open the latch.
    pub fn arm(&self, target: u64) {
        self.hits.store(0, Ordering::SeqCst);
        self.failures.store(0, Ordering::SeqCst);
        self.sum.store(0, Ordering::SeqCst);
        self.target.store(target, Ordering::SeqCst);
    }

    /// One hit, adding `value` to the sum.
    pub fn hit(&self, value: u64) {
        self.sum.fetch_add(value, Ordering::Relaxed);
        // AcqRel: the last hit sees every earlier hit's sum.
        let hits = self.hits.fetch_add(1, Ordering::AcqRel) + 1;
        if hits == self.target.load(Ordering::Relaxed) {
            // Taking the lock orders the notify after the waiter's check.
            let _guard = self.lock.lock().unwrap();
            self.opened.notify_all();
        }
    }

    /// Counts a process that ended without its output as a hit; `wait`
    /// then panics (a hook runs on a worker thread, so it must not).
    pub fn fail(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.hit(0);
    }

    /// Waits for the target; returns the sum of the hit values. Panics
    /// after [`HANG`] or if a process failed.
    pub fn wait(&self, what: &str) -> u64 {
        let deadline = Instant::now() + HANG;
        let mut guard = self.lock.lock().unwrap();
        while self.hits.load(Ordering::Acquire) < self.target.load(Ordering::Relaxed) {
            let now = Instant::now();
            assert!(
                now < deadline,
                "{what}: {} of {} completions after {HANG:?}",
                self.hits.load(Ordering::Relaxed),
                self.target.load(Ordering::Relaxed)
            );
            guard = self.opened.wait_timeout(guard, deadline - now).unwrap().0;
        }
        drop(guard);
        assert_eq!(
            self.failures.load(Ordering::Relaxed),
            0,
            "{what}: a process failed"
        );
        self.sum.load(Ordering::Acquire)
    }
}

/// Spawns the next link (its input is the depth left), then finishes with
/// the depth it had.
pub struct Link(pub u64);

impl Process for Link {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, left: u64) -> Result<(), ()> {
        self.0 = left;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if self.0 > 0 {
            out.spawn(Link(0), "link", self.0 - 1).map_err(|_| ())?;
        }
        out.done(self.0);
        Ok(())
    }
}

/// Continues `k` times, then finishes with the number of steps it ran.
#[derive(Default)]
pub struct Yielder {
    left: u64,
    steps: u64,
}

impl Process for Yielder {
    type Input = u64;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, k: u64) -> Result<(), ()> {
        self.left = k;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        self.steps += 1;
        if self.left == 0 {
            out.done(self.steps - 1);
        } else {
            self.left -= 1;
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

#[path = "../../tests/common/pinger.rs"]
mod pinger;
pub use pinger::Pinger;

/// `Worker` replies to each request; `Coordinator` sends one request to every
/// worker and waits for all replies, `rounds` times.
pub enum Fan {
    Worker {
        served: u64,
    },
    Coordinator {
        workers: Arc<[Pid]>,
        rounds: u64,
        round: u64,
        replies: u64,
        started: bool,
    },
}

pub enum FanMsg {
    /// To a worker: reply to this PID with this round number.
    Request(Pid, u64),
    /// To a worker: finish.
    Stop,
    /// To the coordinator.
    Reply(u64),
}

pub enum FanInput {
    Worker,
    Coordinator(Arc<[Pid]>, u64),
}

/// Which kind finished, and its count (requests served; replies received).
pub enum FanOutput {
    Worker(u64),
    Coordinator(u64),
}

impl Fan {
    pub fn send_round(workers: &[Pid], round: u64, out: &mut StepOutput<'_, Self>) {
        for &worker in workers {
            out.send(worker, FanMsg::Request(out.pid(), round));
        }
    }
}

impl Process for Fan {
    type Input = FanInput;
    type Message = FanMsg;
    type Command = NoCommand;
    type Reply = ();
    type Output = FanOutput;
    type Error = &'static str;
    fn init(&mut self, _: &str, input: FanInput) -> Result<(), &'static str> {
        *self = match input {
            FanInput::Worker => Fan::Worker { served: 0 },
            FanInput::Coordinator(workers, rounds) => Fan::Coordinator {
                workers,
                rounds,
                round: 0,
                replies: 0,
                started: false,
            },
        };
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), &'static str> {
        match self {
            Fan::Worker { served } => {
                for event in events.drain(..) {
                    match event {
                        Event::Message(FanMsg::Request(from, round)) => {
                            *served += 1;
                            out.send(from, FanMsg::Reply(round));
                        }
                        Event::Message(FanMsg::Stop) => {
                            out.done(FanOutput::Worker(*served));
                            return Ok(());
                        }
                        _ => return Err("fan worker: unexpected event"),
                    }
                }
            }
            Fan::Coordinator {
                workers,
                rounds,
                round,
                replies,
                started,
            } => {
                if !*started {
                    *started = true;
                    Fan::send_round(workers, 0, out);
                }
                for event in events.drain(..) {
                    let Event::Message(FanMsg::Reply(r)) = event else {
                        return Err("fan coordinator: unexpected event");
                    };
                    if r != *round {
                        return Err("fan coordinator: reply from another round");
                    }
                    *replies += 1;
                    if *replies == workers.len() as u64 * (*round + 1) {
                        *round += 1;
                        if *round == *rounds {
                            out.done(FanOutput::Coordinator(*replies));
                            return Ok(());
                        }
                        Fan::send_round(workers, *round, out);
                    }
                }
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}
