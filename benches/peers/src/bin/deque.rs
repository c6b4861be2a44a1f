//! Side-by-side figures for `stepsched::deque` against crossbeam-deque 0.8
//! (`Worker::new_lifo`, and `new_fifo` where FIFO is the yardstick) and st3
//! 0.4 (`lifo::Worker`, bounded), in one run:
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin deque
//! N=20000 ROUNDS=1 cargo run --release -p stepsched-peers --bin deque   # smoke
//! ```
//!
//! Scenarios (the issue's Performance list):
//!
//! 1. `push_pop`: the owner pushes N items then pops N; ns per push+pop pair.
//! 2. `steal_half`: the owner keeps pushing (while fewer than 256 items are
//!    queued) and never pops; one thief moves batches into its own deque
//!    (`steal_half_into` / `steal_batch_and_pop` / st3 `steal_and_pop`) and
//!    drains it; ns per item the thief receives.
//! 3. `pairs_vs_steal`: the owner does push+pop pairs on an otherwise empty
//!    deque while one thief `steal`s continuously; owner ns per pair, and
//!    the thief's success rate (successes / attempts). `pairs_over_32`: the
//!    same, but the owner keeps 32 items queued beneath its pairs (refilling
//!    inside the timed loop), so the thief always finds work.
//! 4. `busy_owner`: the owner keeps 32-64 items, pops one, does ~WORK_NS of
//!    calibrated busy work, pushes one; one thief `steal`s and one steals
//!    batches; items each thief receives per µs. Three threads: on a 2-core
//!    machine they time-slice, so `busy_owner_1` also runs each thief alone
//!    with the owner.
//! 5. `growth`: push N into a fresh deque at its default capacity (st3 is
//!    bounded and sits this one out); ns per push.
//!
//! Every scenario runs ROUNDS times (default 5) per system and prints the
//! median. Items are `Box<u64>` ids allocated before the clock starts; every
//! party keeps what it receives in a pre-sized `Vec`, and after each round
//! every id is checked to have been received exactly once.
//!
//! Environment: `N` (or `ITEMS`, default 1,000,000), `ROUNDS`, `WORK_NS`
//! (default 50). The allocator settings in effect (`GLIBC_TUNABLES`) are
//! printed with the results.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Instant;

type Item = Box<u64>;

/// Most items the owner keeps queued in `steal_half` (scenario 2).
const STEAL_HALF_BOUND: usize = 256;
/// The band the busy owner keeps its deque in (scenario 4).
const BUSY_LOW: usize = 32;
const BUSY_HIGH: usize = 64;

// ---------------------------------------------------------------------------
// The systems, behind one small interface.

/// What a steal attempt returned.
enum Got {
    Item(Item),
    Empty,
    Retry,
}

/// One deque implementation. `Worker`s are moved into the threads that own
/// them; `Stealer`s are cloned into thieves.
trait System: Sync {
    type W: Send;
    type S: Send + Sync + Clone;
    fn name(&self) -> &'static str;
    /// A deque at its default capacity; `bound` is the most items it will
    /// hold (only the bounded st3 needs it).
    fn worker(&self, bound: usize) -> Self::W;
    fn stealer(&self, w: &Self::W) -> Self::S;
    fn push(&self, w: &Self::W, item: Item);
    fn pop(&self, w: &Self::W) -> Option<Item>;
    fn len(&self, w: &Self::W) -> usize;
    /// Steals the oldest item. `dest` is only used by st3, which has no
    /// single-item steal (it steals a batch of one into `dest`).
    fn steal(&self, s: &Self::S, dest: &Self::W) -> Got;
    /// Steals a batch: returns one item, moves the rest into `dest`.
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got;
}

struct Stepsched;

impl System for Stepsched {
    type W = stepsched::deque::Worker<Item>;
    type S = stepsched::deque::Stealer<Item>;
    fn name(&self) -> &'static str {
        "stepsched"
    }
    fn worker(&self, _bound: usize) -> Self::W {
        stepsched::deque::Worker::new()
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        w.push(item)
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.len()
    }
    fn steal(&self, s: &Self::S, _dest: &Self::W) -> Got {
        from_stepsched(s.steal())
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        from_stepsched(s.steal_half_into(dest))
    }
}

fn from_stepsched(s: stepsched::deque::Steal<Item>) -> Got {
    match s {
        stepsched::deque::Steal::Success(item) => Got::Item(item),
        stepsched::deque::Steal::Empty => Got::Empty,
        stepsched::deque::Steal::Retry => Got::Retry,
    }
}

/// crossbeam-deque, LIFO (`fifo == false`) or FIFO owner.
struct Crossbeam {
    fifo: bool,
}

impl System for Crossbeam {
    type W = crossbeam_deque::Worker<Item>;
    type S = crossbeam_deque::Stealer<Item>;
    fn name(&self) -> &'static str {
        if self.fifo {
            "crossbeam-fifo"
        } else {
            "crossbeam-lifo"
        }
    }
    fn worker(&self, _bound: usize) -> Self::W {
        if self.fifo {
            crossbeam_deque::Worker::new_fifo()
        } else {
            crossbeam_deque::Worker::new_lifo()
        }
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        w.push(item)
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.len()
    }
    fn steal(&self, s: &Self::S, _dest: &Self::W) -> Got {
        from_crossbeam(s.steal())
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        from_crossbeam(s.steal_batch_and_pop(dest))
    }
}

fn from_crossbeam(s: crossbeam_deque::Steal<Item>) -> Got {
    match s {
        crossbeam_deque::Steal::Success(item) => Got::Item(item),
        crossbeam_deque::Steal::Empty => Got::Empty,
        crossbeam_deque::Steal::Retry => Got::Retry,
    }
}

/// st3 0.4 `lifo::Worker` (bounded). Batches take `n - n/2` of `n` items, as
/// the issue specifies; with `cap32` at most 32, like the others.
struct St3 {
    cap32: bool,
}

impl System for St3 {
    type W = st3::lifo::Worker<Item>;
    type S = st3::lifo::Stealer<Item>;
    fn name(&self) -> &'static str {
        if self.cap32 {
            "st3-lifo (batch<=32)"
        } else {
            "st3-lifo"
        }
    }
    fn worker(&self, bound: usize) -> Self::W {
        st3::lifo::Worker::new(bound.max(2))
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        if w.push(item).is_err() {
            panic!("st3: bounded deque overflowed");
        }
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.capacity() - w.spare_capacity()
    }
    fn steal(&self, s: &Self::S, dest: &Self::W) -> Got {
        match s.steal_and_pop(dest, |_| 1) {
            Ok((item, _)) => Got::Item(item),
            Err(st3::StealError::Empty) => Got::Empty,
            Err(st3::StealError::Busy) => Got::Retry,
        }
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        let cap32 = self.cap32;
        let count = move |n: usize| {
            let half = n - n / 2;
            if cap32 {
                half.min(32)
            } else {
                half
            }
        };
        match s.steal_and_pop(dest, count) {
            Ok((item, _)) => Got::Item(item),
            Err(st3::StealError::Empty) => Got::Empty,
            Err(st3::StealError::Busy) => Got::Retry,
        }
    }
}

// ---------------------------------------------------------------------------
// Items and the exactly-once check.

/// `n` boxed ids, allocated before any clock starts; popped from the back,
/// so item 0 is pushed first.
fn items(n: usize) -> Vec<Item> {
    (0..n as u64).rev().map(Box::new).collect()
}

/// Checks that `parts` together hold every id in `0..n` exactly once.
fn check_exactly_once(scenario: &str, system: &str, n: usize, parts: &[Vec<Item>]) {
    let total: usize = parts.iter().map(Vec::len).sum();
    assert_eq!(
        total, n,
        "{scenario}/{system}: received {total} items, pushed {n}"
    );
    let mut seen = vec![false; n];
    for item in parts.iter().flatten() {
        let id = **item as usize;
        assert!(
            !std::mem::replace(&mut seen[id], true),
            "{scenario}/{system}: item {id} received twice"
        );
    }
}

/// Moves whatever `w` still holds into `into`.
fn drain<S: System>(sys: &S, w: &S::W, into: &mut Vec<Item>) {
    while let Some(item) = sys.pop(w) {
        into.push(item);
    }
}

// ---------------------------------------------------------------------------
// Scenarios. Each returns its figure for one round.

/// Scenario 1: ns per push+pop pair. One untimed pass first, so the timed pass sees
/// the deque as a running owner does: grown already (stepsched; st3 is
/// allocated at N), or shrinking as it drains and regrowing (crossbeam).
fn push_pop<S: System>(sys: &S, n: usize) -> f64 {
    let w = sys.worker(n);
    let mut pool = items(n);
    let mut out = Vec::with_capacity(n);
    let pass = |pool: &mut Vec<Item>, out: &mut Vec<Item>| {
        let t0 = Instant::now();
        while let Some(item) = pool.pop() {
            sys.push(&w, item);
        }
        while let Some(item) = sys.pop(&w) {
            out.push(black_box(item));
        }
        t0.elapsed()
    };
    pass(&mut pool, &mut out);
    check_exactly_once("push_pop", sys.name(), n, std::slice::from_ref(&out));
    let elapsed = pass(&mut out, &mut pool);
    check_exactly_once("push_pop", sys.name(), n, &[pool]);
    elapsed.as_nanos() as f64 / n as f64
}

/// Scenario 2: ns per item the thief receives.
fn steal_half<S: System>(sys: &S, n: usize) -> f64 {
    let w = sys.worker(STEAL_HALF_BOUND);
    let s = sys.stealer(&w);
    let start = Barrier::new(2);
    let (elapsed, got) = thread::scope(|sc| {
        let thief = sc.spawn(|| {
            let dest = sys.worker(STEAL_HALF_BOUND);
            let mut got = Vec::with_capacity(n);
            start.wait();
            while got.len() < n {
                if let Got::Item(item) = sys.steal_batch(&s, &dest) {
                    got.push(item);
                    drain(sys, &dest, &mut got);
                }
            }
            got
        });
        let mut pool = items(n);
        start.wait();
        let t0 = Instant::now();
        let mut waits = 0u32;
        while !pool.is_empty() {
            if sys.len(&w) < STEAL_HALF_BOUND {
                sys.push(&w, pool.pop().unwrap());
                waits = 0;
            } else {
                // Full: wait for the thief. Yield now and then, in case it
                // shares our core (on a quiet 2-core machine it never does).
                waits += 1;
                if waits & 63 == 0 {
                    thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let got = thief.join().unwrap();
        (t0.elapsed(), got)
    });
    check_exactly_once("steal_half", sys.name(), n, &[got]);
    elapsed.as_nanos() as f64 / n as f64
}

/// Scenario 3: owner ns per push+pop pair, and the thief's success rate.
///
/// With `base == 0` the deque is empty between pairs, so every pop races
/// the thief for the last item. With `base > 0` the owner first tops the
/// deque up to `base` items whenever the thief has taken it below (those
/// refill pushes are inside the timed loop), so its pairs run far above
/// `top` and the thief always finds something.
fn pairs_vs_steal<S: System>(sys: &S, n: usize, base: usize) -> (f64, f64) {
    let w = sys.worker(base + 16);
    let s = sys.stealer(&w);
    let stop = AtomicBool::new(false);
    let start = Barrier::new(2);
    let (elapsed, pairs, owner_got, (attempts, thief_got)) = thread::scope(|sc| {
        let thief = sc.spawn(|| {
            let dest = sys.worker(base + 16);
            let mut got = Vec::with_capacity(n);
            let mut attempts = 0u64;
            start.wait();
            while !stop.load(Ordering::Relaxed) {
                attempts += 1;
                if let Got::Item(item) = sys.steal(&s, &dest) {
                    got.push(item);
                }
            }
            drain(sys, &dest, &mut got);
            (attempts, got)
        });
        let mut pool = items(n);
        let mut owner_got = Vec::with_capacity(n);
        let mut pairs = 0u64;
        start.wait();
        let t0 = Instant::now();
        while let Some(item) = pool.pop() {
            sys.push(&w, item);
            if sys.len(&w) <= base {
                continue; // a refill push
            }
            if let Some(item) = sys.pop(&w) {
                owner_got.push(item);
            }
            pairs += 1;
        }
        let elapsed = t0.elapsed();
        stop.store(true, Ordering::Relaxed);
        let thief = thief.join().unwrap();
        drain(sys, &w, &mut owner_got);
        (elapsed, pairs, owner_got, thief)
    });
    let success = thief_got.len() as f64 / attempts.max(1) as f64;
    check_exactly_once("pairs_vs_steal", sys.name(), n, &[owner_got, thief_got]);
    (elapsed.as_nanos() as f64 / pairs.max(1) as f64, success)
}

/// Busy work of about `iters` loop turns (see [`calibrate`]).
#[inline(never)]
fn spin(iters: u64) {
    for i in 0..iters {
        black_box(i);
    }
}

/// Loop turns of [`spin`] that take about `ns` nanoseconds here.
fn calibrate(ns: u64) -> u64 {
    let turns = 20_000_000;
    let t0 = Instant::now();
    spin(turns);
    let per_turn = t0.elapsed().as_nanos() as f64 / turns as f64;
    ((ns as f64 / per_turn).round() as u64).max(1)
}

/// Scenario 4: items per µs received by the `steal` thief and the batch
/// thief. `thieves` says which run: both together (three threads), or one
/// of them alone (two threads, which is what a 2-core machine can run
/// without time-slicing).
fn busy_owner<S: System>(sys: &S, n: usize, work: u64, thieves: Thieves) -> (f64, f64) {
    let w = sys.worker(2 * BUSY_HIGH);
    let s = sys.stealer(&w);
    let stop = AtomicBool::new(false);
    let parties = match thieves {
        Thieves::Both => 3,
        Thieves::StealOnly | Thieves::BatchOnly => 2,
    };
    let start = Barrier::new(parties);
    let elapsed_ns = AtomicU64::new(0);
    let (owner_got, one_got, batch_got) = thread::scope(|sc| {
        let thief = |batch: bool| {
            let (s, stop, start) = (s.clone(), &stop, &start);
            sc.spawn(move || {
                let dest = sys.worker(2 * BUSY_HIGH);
                let mut got = Vec::with_capacity(n);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let r = if batch {
                        sys.steal_batch(&s, &dest)
                    } else {
                        sys.steal(&s, &dest)
                    };
                    if let Got::Item(item) = r {
                        got.push(item);
                        drain(sys, &dest, &mut got);
                    }
                }
                drain(sys, &dest, &mut got);
                got
            })
        };
        let one = (thieves != Thieves::BatchOnly).then(|| thief(false));
        let batch = (thieves != Thieves::StealOnly).then(|| thief(true));
        let mut pool = items(n);
        let mut owner_got = Vec::with_capacity(n);
        let mid = (BUSY_LOW + BUSY_HIGH) / 2;
        for _ in 0..mid.min(pool.len()) {
            sys.push(&w, pool.pop().unwrap());
        }
        start.wait();
        let t0 = Instant::now();
        while !pool.is_empty() {
            if let Some(item) = sys.pop(&w) {
                owner_got.push(item);
                spin(work);
            }
            // Refill to the middle of the band when thieves took us below it;
            // otherwise replace the item just run.
            let len = sys.len(&w);
            let want = if len < BUSY_LOW { mid - len } else { 1 };
            for _ in 0..want {
                if let Some(item) = pool.pop() {
                    if sys.len(&w) < BUSY_HIGH {
                        sys.push(&w, item);
                    } else {
                        pool.push(item);
                        break;
                    }
                }
            }
        }
        elapsed_ns.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        let one = one.map_or_else(Vec::new, |t| t.join().unwrap());
        let batch = batch.map_or_else(Vec::new, |t| t.join().unwrap());
        drain(sys, &w, &mut owner_got);
        (owner_got, one, batch)
    });
    let us = elapsed_ns.load(Ordering::Relaxed) as f64 / 1000.0;
    let rates = (one_got.len() as f64 / us, batch_got.len() as f64 / us);
    check_exactly_once(
        "busy_owner",
        sys.name(),
        n,
        &[owner_got, one_got, batch_got],
    );
    rates
}

/// Which thieves run in [`busy_owner`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Thieves {
    Both,
    StealOnly,
    BatchOnly,
}

/// Scenario 5: ns per push into a fresh deque at its default capacity.
fn growth<S: System>(sys: &S, n: usize) -> f64 {
    let mut pool = items(n);
    let mut out = Vec::with_capacity(n);
    let t0 = Instant::now();
    let w = sys.worker(n);
    while let Some(item) = pool.pop() {
        sys.push(&w, item);
    }
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    drain(sys, &w, &mut out);
    drop(w);
    check_exactly_once("growth", sys.name(), n, &[out]);
    ns
}

// ---------------------------------------------------------------------------
// Driver and table.

fn env_usize(names: &[&str], default: usize) -> usize {
    names
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .map(|v| v.replace('_', "").parse().expect("a number"))
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// One table row: a system's median, and its ratio to stepsched's.
struct Row {
    scenario: &'static str,
    system: &'static str,
    metric: &'static str,
    value: f64,
}

/// Runs `f` ROUNDS times and returns the medians of its figures.
fn rounds<const K: usize>(rounds: usize, mut f: impl FnMut() -> [f64; K]) -> [f64; K] {
    let mut all: [Vec<f64>; K] = std::array::from_fn(|_| Vec::with_capacity(rounds));
    for _ in 0..rounds {
        for (k, v) in f().into_iter().enumerate() {
            all[k].push(v);
        }
    }
    all.map(median)
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<16} {:<22} {:<28} {:>12} {:>10}",
        "scenario", "system", "metric", "median", "/stepsched"
    );
    for row in rows {
        let base = rows
            .iter()
            .find(|r| {
                r.scenario == row.scenario && r.metric == row.metric && r.system == "stepsched"
            })
            .map(|r| r.value);
        let ratio = match base {
            Some(b) if b > 0.0 => format!("{:.2}x", row.value / b),
            _ => "-".to_string(),
        };
        println!(
            "{:<16} {:<22} {:<28} {:>12.3} {:>10}",
            row.scenario, row.system, row.metric, row.value, ratio
        );
    }
}

fn main() {
    let n = env_usize(&["N", "ITEMS"], 1_000_000);
    let r = env_usize(&["ROUNDS"], 5).max(1);
    let work_ns = env_usize(&["WORK_NS"], 50) as u64;
    let work = calibrate(work_ns);

    println!("stepsched deque vs peers: N = {n}, ROUNDS = {r} (medians), WORK_NS = {work_ns} ({work} spin turns)");
    println!(
        "cores: {}; GLIBC_TUNABLES = {}",
        thread::available_parallelism().map_or(0, |p| p.get()),
        std::env::var("GLIBC_TUNABLES").unwrap_or_else(|_| "(unset)".into())
    );
    println!(
        "ratio = system / stepsched: for ns metrics above 1.00x means stepsched is faster; \
         for per-µs rates and success rates, below 1.00x does."
    );
    println!();

    let cb_lifo = Crossbeam { fifo: false };
    let cb_fifo = Crossbeam { fifo: true };
    let st3 = St3 { cap32: false };
    let st3_32 = St3 { cap32: true };
    let mut rows = Vec::new();
    let t_all = Instant::now();

    // SCENARIOS=steal_half,growth runs only those (default: all five).
    let only = std::env::var("SCENARIOS").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|s| s.trim() == name))
    };
    macro_rules! each {
        ($($sys:expr),+ => |$s:ident| $body:expr) => {
            $( { let $s = &$sys; $body } )+
        };
    }

    // 1. push N then pop N.
    if wanted("push_pop") {
        each!(Stepsched, cb_lifo, st3 => |sys| {
            let [ns] = rounds(r, || [push_pop(sys, n)]);
            rows.push(Row { scenario: "push_pop", system: sys.name(), metric: "ns per push+pop pair", value: ns });
        });
    }

    // 2. batch stealing throughput.
    if wanted("steal_half") {
        each!(Stepsched, cb_lifo, cb_fifo, st3, st3_32 => |sys| {
            let [ns] = rounds(r, || [steal_half(sys, n)]);
            rows.push(Row { scenario: "steal_half", system: sys.name(), metric: "ns per item stolen", value: ns });
        });
    }

    // 3. owner pairs while a thief steals.
    if wanted("pairs_vs_steal") {
        for (scenario, base) in [("pairs_vs_steal", 0), ("pairs_over_32", 32)] {
            each!(Stepsched, cb_lifo, st3 => |sys| {
                let [ns, rate] = rounds(r, || {
                    let (ns, rate) = pairs_vs_steal(sys, n, base);
                    [ns, rate]
                });
                rows.push(Row { scenario, system: sys.name(), metric: "owner ns per pair", value: ns });
                rows.push(Row { scenario, system: sys.name(), metric: "thief success rate", value: rate });
            });
        }
    }

    // 4. busy owner, two thieves together, then each alone.
    if wanted("busy_owner") {
        each!(Stepsched, cb_lifo, st3 => |sys| {
            let [one, batch] = rounds(r, || {
                let (one, batch) = busy_owner(sys, n, work, Thieves::Both);
                [one, batch]
            });
            rows.push(Row { scenario: "busy_owner", system: sys.name(), metric: "steal thief items/us", value: one });
            rows.push(Row { scenario: "busy_owner", system: sys.name(), metric: "batch thief items/us", value: batch });
        });
        each!(Stepsched, cb_lifo, st3 => |sys| {
            let [one] = rounds(r, || [busy_owner(sys, n, work, Thieves::StealOnly).0]);
            let [batch] = rounds(r, || [busy_owner(sys, n, work, Thieves::BatchOnly).1]);
            rows.push(Row { scenario: "busy_owner_1", system: sys.name(), metric: "steal thief items/us", value: one });
            rows.push(Row { scenario: "busy_owner_1", system: sys.name(), metric: "batch thief items/us", value: batch });
        });
    }

    // 5. growth from the default capacity.
    if wanted("growth") {
        each!(Stepsched, cb_lifo => |sys| {
            let [ns] = rounds(r, || [growth(sys, n)]);
            rows.push(Row { scenario: "growth", system: sys.name(), metric: "ns per push (fresh deque)", value: ns });
        });
    }

    print_table(&rows);
    println!();
    println!(
        "every item checked exactly once in every round; total {:.1?}",
        t_all.elapsed()
    );
}
