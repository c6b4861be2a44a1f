//! A canary for loom itself, not a model of `stepsched`: loom 0.7's DPOR
//! never runs a write that its own thread *loads before* ahead of another
//! thread's earlier load of the same atomic (`docs/proof/loom-limits.md`).
//!
//! loom keeps one "last access" per atomic. A store or RMW is checked for a
//! race only against it; a load overwrites it. So when the writer loads the
//! word before it stores or CASes it (`StateWord::update`: load, then
//! `compare_exchange_weak`), the writer's own load hides the reader's
//! earlier load, no backtracking point is added, and the schedule with the
//! write before the reader's load is never run. A plain store, a bare CAS
//! or a `fetch_add` races the reader's load directly and is explored.
//! Another thread's load after the reader's hides it the same way.
//!
//! The tests below pin that behaviour with a counter kept outside loom: if
//! a loom upgrade fixes it, `load_then_write_is_never_run_before_the_readers_load`
//! fails, and the gates (`stepsched_loom_tests::Gate`) and the audit in
//! `docs/proof/loom-limits.md` should be revisited. The last test shows the
//! workaround: a milestone gate makes loom run the write first.
//!
//! Run (well under a second):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test limits
//! ```
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize as StdUsize, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched_loom_tests::Gate;

/// How the writer changes the word from 0 to 1.
#[derive(Clone, Copy, Debug)]
enum Write {
    Store,
    FetchAdd,
    Cas,
    /// `StateWord::update`'s shape.
    LoadThenCas,
    LoadThenStore,
    LoadThenFetchAdd,
}

impl Write {
    fn run(self, word: &AtomicUsize) {
        // The orderings are not what is tested (any of them gives the same
        // counts); Acquire/Release as a real protocol would use.
        match self {
            Write::Store => word.store(1, Ordering::Release),
            Write::FetchAdd => {
                word.fetch_add(1, Ordering::AcqRel);
            }
            Write::Cas => {
                let _ = word.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
            }
            Write::LoadThenCas => {
                let seen = word.load(Ordering::Acquire);
                let _ = word.compare_exchange(seen, seen + 1, Ordering::AcqRel, Ordering::Acquire);
            }
            Write::LoadThenStore => {
                let seen = word.load(Ordering::Acquire);
                word.store(seen + 1, Ordering::Release);
            }
            Write::LoadThenFetchAdd => {
                let _ = word.load(Ordering::Acquire);
                word.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

/// What one `loom::model` run saw: executions, and how many of them had the
/// reader's load return the written value.
#[derive(Debug)]
struct Seen {
    executions: usize,
    new: usize,
}

/// The main thread spawns the writer, waits on a gate for the writer's
/// milestone `start` (1: the write is done; 0: no gate), and loads the word
/// once.
fn explore(write: Write, bound: Option<usize>, start: usize) -> Seen {
    // Outside loom: the tests in this file share them, so they run one
    // at a time under `SERIAL`.
    static EXECUTIONS: StdUsize = StdUsize::new(0);
    static NEW: StdUsize = StdUsize::new(0);
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    EXECUTIONS.store(0, StdOrdering::Relaxed);
    NEW.store(0, StdOrdering::Relaxed);

    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = bound;
    builder.check(move || {
        EXECUTIONS.fetch_add(1, StdOrdering::Relaxed);
        let word = Arc::new(AtomicUsize::new(0));
        // No gate at all for start 0: the gate's own store would race the
        // reader's load of the gate and open the schedule by itself.
        let gate = (start > 0).then(Gate::new);
        let writer = {
            let (word, gate) = (Arc::clone(&word), gate.clone());
            thread::spawn(move || {
                write.run(&word);
                if let Some(gate) = gate {
                    gate.pass(1);
                }
            })
        };
        if let Some(gate) = gate {
            gate.wait(start);
        }
        let seen = word.load(Ordering::Acquire);
        writer.join().unwrap();
        assert!(seen <= 1);
        NEW.fetch_add(seen, StdOrdering::Relaxed);
    });
    Seen {
        executions: EXECUTIONS.load(StdOrdering::Relaxed),
        new: NEW.load(StdOrdering::Relaxed),
    }
}

/// A write that is the writer's first access to the word races the
/// reader's load: loom runs it first in some execution (measured, start 0:
/// 6 executions unbounded or at 3 preemptions, 2 of them reading 1).
#[test]
fn a_plain_write_is_run_before_the_readers_load() {
    for write in [Write::Store, Write::FetchAdd, Write::Cas] {
        for bound in [None, Some(3)] {
            let seen = explore(write, bound, 0);
            // Both orders: some execution reads 1, some 0.
            assert!(
                seen.new > 0 && seen.executions > seen.new,
                "{write:?} at bound {bound:?}: {seen:?}"
            );
        }
    }
}

/// The blind spot: a load before the write hides the reader's load, and the
/// write is never run first, with or without a preemption bound (measured,
/// start 0: 1 execution in every case). If this fails, loom explores these
/// now: see the module docs.
#[test]
fn load_then_write_is_never_run_before_the_readers_load() {
    for write in [
        Write::LoadThenCas,
        Write::LoadThenStore,
        Write::LoadThenFetchAdd,
    ] {
        for bound in [None, Some(3)] {
            let seen = explore(write, bound, 0);
            assert_eq!(
                seen.new, 0,
                "{write:?} at bound {bound:?}: loom now runs the write first ({seen:?}); \
                 revisit docs/proof/loom-limits.md"
            );
        }
    }
}

/// The workaround: with the read gated on the writer's milestone 1, every
/// execution runs the CAS first, and the reader's load may return it (loom
/// does not force it to: the gate orders nothing).
#[test]
fn a_milestone_gate_runs_the_write_first() {
    for bound in [None, Some(3)] {
        let seen = explore(Write::LoadThenCas, bound, 1);
        assert!(seen.new > 0, "bound {bound:?}: {seen:?}");
    }
}
