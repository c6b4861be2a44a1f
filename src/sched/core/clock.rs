//! [`CoarseClock`]: a millisecond clock that costs a step one load.
//!
//! Reading the OS clock (`Instant::now`) costs tens of nanoseconds (a vDSO
//! `clock_gettime` with a TSC clocksource, and more on virtual machines
//! without one): more than two bare `Continue` steps. So process slots are
//! stamped with this clock instead: one
//! word of milliseconds since the scheduler started, which steps read with
//! a Relaxed load and which the following refresh:
//!
//! - each worker, every 8th `global_queue_interval`-th tick (488) and when
//!   it wakes from a park: one `Instant` read per 488 ticks, a negligible
//!   part of a tick (every 61 ticks it would be a visible part of a bare
//!   step);
//! - the long-step monitor, each period, if it runs;
//! - [`Scheduler::processes`](crate::sched::Scheduler::processes), before it reads.
//!
//! A refresh writes the word only when the millisecond has changed, so
//! readers miss on its cache line at most once a millisecond per refresher.
//! The clock can lag real time by as long as a worker takes for 488 steps
//! (or stays parked), when nothing else refreshes it; it never goes back.

use crate::padded::CachePadded;
use crate::sched::observe::ticks::Ticks;
use crate::sync::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Milliseconds since `epoch`, refreshed now and then (module docs); and,
/// if the builder asked for latency figures, a fine clock beside it.
pub(crate) struct CoarseClock {
    epoch: Instant,
    /// Whether latency figures are recorded (`Builder::record_latency`):
    /// then wakes stamp their slot with [`fine_now`](Self::fine_now) too.
    fine: bool,
    /// The fine clock: the TSC where it is invariant, else `Instant`
    /// (`observe/ticks.rs`), and its nanoseconds per reading (32.32 fixed
    /// point), measured at build if steps are timed.
    ticks: Ticks,
    scale: u64,
    /// Written by refreshers (a `fetch_max` once per millisecond at most),
    /// read by anyone stamping a transition.
    millis: CachePadded<AtomicU64>,
}

impl CoarseClock {
    /// A clock starting now. `fine`: wakes stamp fine times; `timed`:
    /// steps are timed, so the fine clock's rate is measured now (the
    /// calling thread sleeps 2 ms).
    pub(crate) fn new(fine: bool, timed: bool) -> Self {
        let ticks = Ticks::new();
        let scale = if timed {
            ticks.scale_q32(Duration::from_millis(2))
        } else {
            1 << 32
        };
        CoarseClock {
            epoch: Instant::now(),
            fine,
            ticks,
            scale,
            millis: CachePadded(AtomicU64::new(0)),
        }
    }

    /// The clock's value, in milliseconds since it started.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        // Relaxed: a timestamp, not a synchronisation point; pairs with the
        // `fetch_max` in `refresh` only in that it reads some recent value.
        self.millis.load(Ordering::Relaxed)
    }

    /// Whether latency figures are recorded, so that a wake stamps its
    /// slot with [`fine_now`](Self::fine_now) (one predictable branch).
    #[inline]
    pub(crate) fn fine(&self) -> bool {
        self.fine
    }

    /// A fine-clock reading (`rdtsc` where the TSC is invariant, ~10 ns;
    /// else `Instant` nanoseconds): only where steps are timed. Only
    /// differences mean anything: [`fine_nanos`](Self::fine_nanos) turns
    /// one into nanoseconds.
    #[inline]
    pub(crate) fn fine_now(&self) -> u64 {
        self.ticks.now()
    }

    /// The nanoseconds of `readings`, a difference of two
    /// [`fine_now`](Self::fine_now) readings.
    #[inline]
    pub(crate) fn fine_nanos(&self, readings: u64) -> u64 {
        ((u128::from(readings) * u128::from(self.scale)) >> 32) as u64
    }

    /// Reads the OS clock and advances this one; returns the new value.
    pub(crate) fn refresh(&self) -> u64 {
        let now = self.epoch.elapsed().as_millis() as u64;
        // Relaxed: see `now`. Write only on a new millisecond, so that
        // readers' copies of the line stay valid meanwhile; `fetch_max`
        // because two refreshers may race, and the clock must not go back.
        if now > self.millis.load(Ordering::Relaxed) {
            self.millis.fetch_max(now, Ordering::Relaxed);
        }
        now
    }
}

/// The longest wait a caller's `Duration` is taken for: a century, which
/// every platform's `Instant` can add to now.
pub(crate) const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The instant `timeout` from now, saturated: a timeout too large to add
/// to the clock (`Duration::MAX`, say) waits as long as [`FOREVER`], that
/// is for ever in practice, as `std`'s own `recv_timeout` does with one
/// too large. Every public method that takes a timeout makes its deadline
/// here.
pub(crate) fn deadline(timeout: Duration) -> Instant {
    deadline_from(Instant::now(), timeout)
}

/// The instant `timeout` after `now`, saturated as [`deadline`].
pub(crate) fn deadline_from(now: Instant, timeout: Duration) -> Instant {
    now.checked_add(timeout.min(FOREVER))
        .or_else(|| now.checked_add(Duration::from_secs(u64::from(u32::MAX))))
        .unwrap_or(now)
}

#[cfg(test)]
mod deadline_tests {
    use super::*;

    #[test]
    fn a_deadline_saturates_instead_of_overflowing() {
        let now = Instant::now();
        assert!(deadline(Duration::ZERO) >= now);
        assert!(deadline(Duration::from_secs(1)) > now);
        let far = deadline(Duration::MAX);
        assert!(
            far >= now + Duration::from_secs(365 * 24 * 60 * 60),
            "{:?}",
            far - now
        );
        assert!(deadline(FOREVER + Duration::from_secs(1)) <= far + Duration::from_secs(1));
    }
}
