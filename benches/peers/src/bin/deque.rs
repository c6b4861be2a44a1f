//! Side-by-side figures for `stepsched::deque` against crossbeam-deque 0.8
//! (`Worker::new_lifo`, and `new_fifo` where FIFO is the yardstick) and st3
//! 0.4 (`lifo::Worker`, bounded), in one run:
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin deque
//! N=20000 ROUNDS=1 cargo run --release -p stepsched-peers --bin deque   # smoke
//! ```
//!
//! Scenarios:
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

#[path = "deque/systems.rs"]
mod systems;
use systems::*;

#[path = "deque/scenarios.rs"]
mod scenarios;
use scenarios::*;

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
