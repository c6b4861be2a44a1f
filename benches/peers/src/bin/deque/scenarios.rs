//! The scenarios, each returning its figure for one round: owner
//! push/pop, batch steals while the owner pushes, push/pop against a
//! thief, a busy owner against one thief and against a batch thief,
//! pushes into a fresh deque.

use super::*;

// ---------------------------------------------------------------------------
// Scenarios. Each returns its figure for one round.

/// Scenario 1: ns per push+pop pair. One untimed pass first, so the timed pass sees
/// the deque as a running owner does: grown already (stepsched; st3 is
/// allocated at N), or shrinking as it drains and regrowing (crossbeam).
pub(crate) fn push_pop<S: System>(sys: &S, n: usize) -> f64 {
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
pub(crate) fn steal_half<S: System>(sys: &S, n: usize) -> f64 {
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
pub(crate) fn pairs_vs_steal<S: System>(sys: &S, n: usize, base: usize) -> (f64, f64) {
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
pub(crate) fn spin(iters: u64) {
    for i in 0..iters {
        black_box(i);
    }
}

/// Loop turns of [`spin`] that take about `ns` nanoseconds here.
pub(crate) fn calibrate(ns: u64) -> u64 {
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
pub(crate) fn busy_owner<S: System>(sys: &S, n: usize, work: u64, thieves: Thieves) -> (f64, f64) {
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
pub(crate) enum Thieves {
    Both,
    StealOnly,
    BatchOnly,
}

/// Scenario 5: ns per push into a fresh deque at its default capacity.
pub(crate) fn growth<S: System>(sys: &S, n: usize) -> f64 {
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
