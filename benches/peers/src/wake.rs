//! Wake latency from a thread outside the runtime to a parked worker: the
//! measures the `wake` bin runs round by round and the `scheduler` bin's
//! resource figures print once. Every sample is taken with the receiving
//! side asleep: each send follows the last one by [`SPACING`], long past
//! any spin or back-off of either runtime.
//!
//! Each function returns one latency per sample, in nanoseconds, unsorted.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// The time between two samples: long enough that the waiter has stopped
/// spinning and sleeps in the kernel (stepsched parks after 16 idle rounds
/// and a back-off of at most 1.6 ms; tokio's and Go's spinning is shorter).
pub const SPACING: Duration = Duration::from_millis(2);

/// How long a wait for the other side may take before the bench gives up.
const HANG: Duration = Duration::from_secs(120);

/// Waits for messages; finishes on `Stop`. Records the latency of each
/// `Stamp` (sent → the start of the step that receives it).
#[derive(Default)]
pub struct Sleeper {
    latencies: Vec<u64>,
}

/// What a [`Sleeper`] receives.
pub enum SleeperMsg {
    /// When the sender read the clock, just before its `send`.
    Stamp(Instant),
    /// Finish, with the latencies recorded so far as the output.
    Stop,
}

impl Process for Sleeper {
    type Input = ();
    type Message = SleeperMsg;
    type Command = NoCommand;
    type Reply = ();
    type Output = Vec<u64>;
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let now = Instant::now();
        for event in events.drain(..) {
            match event {
                Event::Message(SleeperMsg::Stamp(sent)) => {
                    self.latencies.push((now - sent).as_nanos() as u64);
                }
                Event::Message(SleeperMsg::Stop) => {
                    out.done(core::mem::take(&mut self.latencies));
                    return Ok(());
                }
                _ => {}
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// stepsched: `Scheduler::send` from the calling thread to a [`Sleeper`]
/// on a scheduler of `workers` workers, every one of them parked (read
/// from `stats().sleeping` before each send), to the start of the step
/// that receives it.
pub fn stepsched_round(scheduler: &Scheduler<Sleeper>, workers: usize, samples: usize) -> Vec<u64> {
    let sleeper = scheduler
        .submit_joinable(Sleeper::default(), "sleep", ())
        .expect("submit the sleeper");
    for _ in 0..samples {
        std::thread::sleep(SPACING);
        let deadline = Instant::now() + HANG;
        while scheduler.stats().sleeping < workers {
            assert!(Instant::now() < deadline, "workers never parked");
            std::thread::sleep(Duration::from_micros(500));
        }
        let stamp = SleeperMsg::Stamp(Instant::now());
        scheduler.send(sleeper.pid(), stamp).expect("send a stamp");
    }
    scheduler
        .send(sleeper.pid(), SleeperMsg::Stop)
        .expect("send stop");
    let latencies = sleeper.join().expect("the sleeper's latencies");
    assert_eq!(latencies.len(), samples);
    latencies
}

/// tokio: an unbounded mpsc `send` from the calling thread to a task
/// awaiting `recv` on `rt`, to the return of its `recv`.
pub fn tokio_round(rt: &tokio::runtime::Runtime, samples: usize) -> Vec<u64> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let waiter = rt.spawn(async move {
        let mut latencies = Vec::new();
        while let Some(sent) = rx.recv().await {
            latencies.push(sent.elapsed().as_nanos() as u64);
        }
        latencies
    });
    for _ in 0..samples {
        std::thread::sleep(SPACING);
        tx.send(Instant::now()).expect("the waiter receives");
    }
    drop(tx);
    let latencies = rt.block_on(waiter).expect("the tokio waiter");
    assert_eq!(latencies.len(), samples);
    latencies
}

/// The floor: a thread asleep in `FUTEX_WAIT` on a word, woken by the
/// calling thread, which reads the clock, sets the word and `FUTEX_WAKE`s
/// it; the sleeper reads the clock as its wait returns. What any wake of
/// a sleeping thread costs on this machine, with no runtime around it.
pub fn futex_round(samples: usize) -> Vec<u64> {
    /// The waiter sleeps while the word is `ASLEEP`; the waker sets `WOKEN`
    /// (and the waiter sets it back); `DONE` ends it.
    const ASLEEP: u32 = 0;
    const WOKEN: u32 = 1;
    const DONE: u32 = 2;
    let word = Arc::new(AtomicU32::new(ASLEEP));
    let base = Instant::now();
    let stamp = Arc::new(AtomicU64::new(0));
    let waiter = {
        let (word, stamp) = (Arc::clone(&word), Arc::clone(&stamp));
        std::thread::spawn(move || {
            let mut latencies = Vec::with_capacity(samples);
            loop {
                // Acquire: pairs with the waker's Release store of the
                // word, which publishes the stamp.
                match word.load(Ordering::Acquire) {
                    ASLEEP => futex_wait(&word, ASLEEP),
                    WOKEN => {
                        let now = base.elapsed().as_nanos() as u64;
                        // Relaxed: ordered by the Acquire load above.
                        latencies.push(now - stamp.load(Ordering::Relaxed));
                        // Release: pairs with the waker's Acquire wait for
                        // ASLEEP, so its next stamp follows this read.
                        word.store(ASLEEP, Ordering::Release);
                    }
                    _ => return latencies,
                }
            }
        })
    };
    for _ in 0..samples {
        std::thread::sleep(SPACING);
        let deadline = Instant::now() + HANG;
        // Acquire: pairs with the waiter's Release store of ASLEEP.
        while word.load(Ordering::Acquire) != ASLEEP {
            assert!(Instant::now() < deadline, "the futex waiter never slept");
            std::thread::sleep(Duration::from_micros(100));
        }
        // Relaxed: published by the Release store of the word below.
        stamp.store(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
        word.store(WOKEN, Ordering::Release);
        futex_wake(&word);
    }
    std::thread::sleep(SPACING);
    word.store(DONE, Ordering::Release);
    futex_wake(&word);
    let latencies = waiter.join().expect("the futex waiter");
    assert_eq!(latencies.len(), samples);
    latencies
}

/// Sleeps while `word` holds `expected` (or until a spurious wake).
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned u32 for the whole call; a null
    // timeout means no timeout; the other arguments are ignored by
    // FUTEX_WAIT_PRIVATE.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes one thread sleeping on `word`.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE_PRIVATE reads no
    // other argument than the count.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// The value at fraction `p` of `sorted` (nearest rank).
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at] as f64
}
