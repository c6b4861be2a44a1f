//! Side-by-side: `stepsched::mpsc::Queue` (plain `push`, and pushing through
//! a `Producer` handle) against `std::sync::mpsc`,
//! crossbeam-queue's `SegQueue` and crossbeam-channel's unbounded channel.
//! The `Box-per-push` row is the baseline of Vyukov's queue with no node
//! reuse at all: `stepsched::mpsc::Mailbox::push` and `pop`, one `malloc`
//! per push and one `free` per pop.
//!
//! Shapes: 1 producer → 1 consumer and 2 producers → 1 consumer. Each
//! producer pushes its share of `items` (default 10 000 000 in all) as
//! `u64`s tagged with its id; the consumer checks that every producer's
//! sequence arrives complete and in order, so a lost, duplicated or
//! reordered item aborts the run. The clock runs from the start barrier to
//! the consumer's last item. Consumers of the non-blocking queues
//! (stepsched, `SegQueue`, the mailbox) spin on an empty pop, yielding every
//! 64 misses;
//! the channels use their blocking `recv`.
//!
//! Prints, per shape and system, the median ns per item over `rounds`
//! (default 5) and the speed-up of stepsched's plain `Queue::push` over it
//! (that system's median divided by stepsched's: above 1 means stepsched is
//! faster; for the `Producer` row, below 1 means the handle is faster).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin mpsc             # 10M items, 5 rounds
//! cargo run --release -p stepsched-peers --bin mpsc -- 100000 1 # smoke run
//! ```
//!
//! `MPSC_ITEMS` and `MPSC_ROUNDS` in the environment work too;
//! `MPSC_ONLY=stepsched,SegQueue` runs some systems (names as printed) and
//! `MPSC_PRODUCERS=1` one shape, for profiling.

use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// Producer id in the top bits of each item, sequence number in the rest.
const ID_SHIFT: u32 = 48;

/// The systems under comparison, stepsched first.
const SYSTEMS: [&str; 6] = [
    "stepsched",
    "stepsched Producer",
    "Box-per-push",
    "std::mpsc",
    "SegQueue",
    "crossbeam-channel",
];

/// A consumer-side view of each system: `next` returns the next item,
/// waiting (spinning or blocking) as that system does.
trait Receiver {
    fn next(&mut self) -> u64;
}

/// Spins on a non-blocking pop, yielding now and then so that a producer
/// sharing the core can run (the bench machine may have few cores).
fn spin_for(mut pop: impl FnMut() -> Option<u64>) -> u64 {
    let mut misses = 0u32;
    loop {
        if let Some(v) = pop() {
            return v;
        }
        misses += 1;
        if misses.is_multiple_of(64) {
            thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

struct Stepsched<'a>(&'a stepsched::mpsc::Queue<u64>);
impl Receiver for Stepsched<'_> {
    fn next(&mut self) -> u64 {
        // SAFETY: the bench's consumer thread is the queue's only consumer.
        spin_for(|| unsafe { self.0.pop() })
    }
}

struct BoxRx<'a>(&'a stepsched::mpsc::Mailbox<u64>);
impl Receiver for BoxRx<'_> {
    fn next(&mut self) -> u64 {
        // SAFETY: the bench's consumer thread is the mailbox's only consumer.
        spin_for(|| unsafe { self.0.pop() })
    }
}

struct Seg<'a>(&'a crossbeam_queue::SegQueue<u64>);
impl Receiver for Seg<'_> {
    fn next(&mut self) -> u64 {
        spin_for(|| self.0.pop())
    }
}

struct StdRx(std::sync::mpsc::Receiver<u64>);
impl Receiver for StdRx {
    fn next(&mut self) -> u64 {
        self.0.recv().expect("producers outlive the consumer")
    }
}

struct CbRx(crossbeam_channel::Receiver<u64>);
impl Receiver for CbRx {
    fn next(&mut self) -> u64 {
        self.0.recv().expect("producers outlive the consumer")
    }
}

/// Receives `producers * per` items, checking per-producer order; returns
/// the time since `start` was passed.
fn consume(rx: &mut dyn Receiver, producers: usize, per: u64, start: &Barrier) -> Duration {
    start.wait();
    let begin = Instant::now();
    let mut next = vec![0u64; producers];
    for _ in 0..producers as u64 * per {
        let v = rx.next();
        let (p, i) = ((v >> ID_SHIFT) as usize, v & ((1 << ID_SHIFT) - 1));
        assert_eq!(i, next[p], "producer {p}: got {i}, expected {}", next[p]);
        next[p] += 1;
    }
    let elapsed = begin.elapsed();
    assert!(next.iter().all(|&n| n == per), "items missing: {next:?}");
    elapsed
}

/// Runs `producers` threads that each `send` `per` tagged items through
/// `tx`, while this thread receives them through `rx`.
fn run<S: Sync>(
    tx: &S,
    send: fn(&S, u64),
    rx: &mut dyn Receiver,
    producers: usize,
    per: u64,
) -> Duration {
    let start = Barrier::new(producers + 1);
    thread::scope(|s| {
        for p in 0..producers {
            let start = &start;
            s.spawn(move || {
                start.wait();
                (0..per).for_each(|i| send(tx, ((p as u64) << ID_SHIFT) | i));
            });
        }
        consume(rx, producers, per, &start)
    })
}

/// [`run`] for stepsched's queue, each producer pushing through its own
/// `Producer` handle.
fn run_with_handle(q: &stepsched::mpsc::Queue<u64>, producers: usize, per: u64) -> Duration {
    let start = Barrier::new(producers + 1);
    thread::scope(|s| {
        for p in 0..producers {
            let start = &start;
            s.spawn(move || {
                let mut tx = q.producer();
                start.wait();
                (0..per).for_each(|i| tx.push(((p as u64) << ID_SHIFT) | i));
            });
        }
        consume(&mut Stepsched(q), producers, per, &start)
    })
}

/// One round of `system` with `producers` threads sending `per` items each,
/// on a fresh queue.
fn round(system: &str, producers: usize, per: u64) -> Duration {
    match system {
        "stepsched" => {
            let q = stepsched::mpsc::Queue::new();
            run(&q, |q, v| q.push(v), &mut Stepsched(&q), producers, per)
        }
        "stepsched Producer" => {
            let q = stepsched::mpsc::Queue::new();
            run_with_handle(&q, producers, per)
        }
        "Box-per-push" => {
            let q = stepsched::mpsc::Mailbox::new();
            run(&q, |q, v| q.push(v), &mut BoxRx(&q), producers, per)
        }
        "SegQueue" => {
            let q = crossbeam_queue::SegQueue::new();
            run(&q, |q, v| q.push(v), &mut Seg(&q), producers, per)
        }
        "std::mpsc" => {
            let (tx, rx) = std::sync::mpsc::channel();
            let send = |tx: &std::sync::mpsc::Sender<u64>, v| tx.send(v).unwrap();
            run(&tx, send, &mut StdRx(rx), producers, per)
        }
        "crossbeam-channel" => {
            let (tx, rx) = crossbeam_channel::unbounded();
            let send = |tx: &crossbeam_channel::Sender<u64>, v| tx.send(v).unwrap();
            run(&tx, send, &mut CbRx(rx), producers, per)
        }
        other => unreachable!("unknown system {other}"),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Reads a count from argument `index` or the environment variable `var`.
fn setting(index: usize, var: &str, default: u64) -> u64 {
    std::env::args()
        .nth(index)
        .or_else(|| std::env::var(var).ok())
        .map(|s| s.replace('_', "").parse().expect("a whole number"))
        .unwrap_or(default)
}

fn main() {
    let items = setting(1, "MPSC_ITEMS", 10_000_000);
    let rounds = setting(2, "MPSC_ROUNDS", 5).max(1);
    println!("{items} items per round, median of {rounds} rounds, ns per item");
    println!();
    println!(
        "{:<10} {:<18} {:>10} {:>22}",
        "shape", "system", "ns/item", "speed-up of push"
    );
    // `MPSC_ONLY=SegQueue,stepsched` runs a subset (names as printed).
    let only: Option<Vec<String>> = std::env::var("MPSC_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_owned).collect());
    // `MPSC_PRODUCERS=2` runs one shape (for profiling).
    let shapes: Vec<usize> = std::env::var("MPSC_PRODUCERS")
        .map(|s| vec![s.parse().expect("a producer count")])
        .unwrap_or_else(|_| vec![1, 2]);
    for producers in shapes {
        let per = items / producers as u64;
        let shape = format!("{producers}->1");
        let mut baseline = None;
        for system in SYSTEMS {
            if !only.as_ref().is_none_or(|o| o.iter().any(|x| x == system)) {
                continue;
            }
            // Rounds of one system back to back; each round on fresh threads
            // and a fresh queue, so no round inherits another's allocations.
            let ns: Vec<f64> = (0..rounds)
                .map(|_| {
                    round(system, producers, per).as_nanos() as f64
                        / (per * producers as u64) as f64
                })
                .collect();
            let m = median(ns);
            let base = *baseline.get_or_insert(m);
            println!("{shape:<10} {system:<18} {m:>10.2} {:>21.2}x", m / base);
        }
    }
}
