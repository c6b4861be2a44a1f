//! Shared helpers for the peer comparison binaries in `src/bin/`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The round trip of one cache line between two threads, in nanoseconds:
/// the median of 5 runs of 100,000 hand-offs of one atomic back and forth.
///
/// On the shared 2-core VMs these benches run on, it swings between ~100
/// and ~500-800 ns from minute to minute as the host moves the vCPUs, and
/// every workload that passes data between the cores (`fan_out_fan_in`
/// most of all) swings with it: printed in each bench's header, so that a
/// run says which machine it ran on.
pub fn core_round_trip_ns() -> u64 {
    const TRIPS: u64 = 100_000;
    let mut runs: Vec<u64> = (0..5)
        .map(|_| {
            let line = Arc::new(AtomicU64::new(0));
            let other = Arc::clone(&line);
            let echo = std::thread::spawn(move || {
                for i in 0..TRIPS {
                    while other.load(Ordering::Acquire) != 2 * i + 1 {
                        std::hint::spin_loop();
                    }
                    other.store(2 * i + 2, Ordering::Release);
                }
            });
            let start = Instant::now();
            for i in 0..TRIPS {
                line.store(2 * i + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            let took = start.elapsed();
            echo.join().expect("echo thread");
            (took.as_nanos() / u128::from(TRIPS)) as u64
        })
        .collect();
    runs.sort_unstable();
    runs[runs.len() / 2]
}
