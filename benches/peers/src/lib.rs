//! Shared helpers for the peer comparison binaries in `src/bin/`.

pub mod wake;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The worker threads each system gets: `WORKERS` from the environment
/// (default 2, the machines these benches are tuned on), read once; the
/// scaling sweep (`benches/peers/sweep.sh`) sets it.
pub fn workers() -> usize {
    static WORKERS: OnceLock<usize> = OnceLock::new();
    *WORKERS.get_or_init(|| match std::env::var("WORKERS") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .expect("WORKERS: a count of at least 1"),
        Err(_) => 2,
    })
}

/// The round trip of one cache line between two threads, in nanoseconds:
/// the median of 5 runs of 100,000 hand-offs of one atomic back and forth.
///
/// On the shared 2-core VMs these benches run on, it swings between ~100
/// and ~500-800 ns from minute to minute as the host moves the vCPUs, and
/// every workload that passes data between the cores (`fan_out_fan_in`
/// most of all) swings with it: printed in each bench's header, so that a
/// run says which machine it ran on.
///
/// `None` when this process may run on one CPU only (`taskset -c 1`):
/// there is no second core to measure, and two threads spinning on one
/// CPU hand the line over once a time slice. A wait that spins long
/// without an answer yields its thread, so that a run whose threads take
/// turns on one CPU anyway (a profiler's) still ends.
pub fn core_round_trip_ns() -> Option<u64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    const TRIPS: u64 = 100_000;
    let mut runs: Vec<u64> = (0..5)
        .map(|_| {
            let line = Arc::new(AtomicU64::new(0));
            let other = Arc::clone(&line);
            let echo = std::thread::spawn(move || {
                for i in 0..TRIPS {
                    wait_for(&other, 2 * i + 1);
                    other.store(2 * i + 2, Ordering::Release);
                }
            });
            let start = Instant::now();
            for i in 0..TRIPS {
                line.store(2 * i + 1, Ordering::Release);
                wait_for(&line, 2 * i + 2);
            }
            let took = start.elapsed();
            echo.join().expect("echo thread");
            (took.as_nanos() / u128::from(TRIPS)) as u64
        })
        .collect();
    runs.sort_unstable();
    Some(runs[runs.len() / 2])
}

/// Spins until `line` holds `value`; yields the thread after every 100,000
/// spins without it (see [`core_round_trip_ns`]).
fn wait_for(line: &AtomicU64, value: u64) {
    let mut spins = 0u32;
    while line.load(Ordering::Acquire) != value {
        spins += 1;
        if spins.is_multiple_of(100_000) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// [`core_round_trip_ns`] for a bench's header.
pub fn core_round_trip() -> String {
    match core_round_trip_ns() {
        Some(ns) => format!("{ns} ns"),
        None => "not measured (this process may use one CPU only)".into(),
    }
}
