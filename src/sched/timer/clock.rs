//! [`TimerClock`]: wheel ticks from `Instant`s, on the OS clock or a
//! simulation's virtual one.

use super::wheel::{TICK_NANOS, TICK_SHIFT};
use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Converts between `Instant`s and wheel ticks (since the scheduler
/// started), and tells the time: the OS clock's, or under a
/// [simulation](crate::sched::Builder::simulation) the virtual one,
/// which only the simulation's driver moves (`simulation/`).
pub(crate) struct TimerClock {
    origin: Instant,
    /// `Some` under a simulation: the virtual nanoseconds since
    /// `origin`. Relaxed everywhere: one thread drives a simulation,
    /// and it is the only one that reads or moves this time (other
    /// threads' reads are its own calls' or a stale `processes` dump's).
    simulated: Option<Arc<AtomicU64>>,
}

impl TimerClock {
    /// A clock on the OS's time (`simulated: None`) or on a simulation's
    /// virtual time, nanoseconds from zero (shared with its tracer).
    pub(crate) fn new(simulated: Option<Arc<AtomicU64>>) -> Self {
        TimerClock {
            origin: Instant::now(),
            simulated,
        }
    }

    /// Now: the OS clock, or the virtual time as an `Instant` past the
    /// origin. Every scheduler read of the time for its timers and
    /// timeouts goes through here (one predictable branch before the
    /// clock read it replaces).
    #[inline]
    pub(crate) fn instant(&self) -> Instant {
        match &self.simulated {
            None => Instant::now(),
            Some(nanos) => self.origin + Duration::from_nanos(nanos.load(Ordering::Relaxed)),
        }
    }

    /// The virtual nanoseconds since the origin, under a simulation.
    pub(crate) fn virtual_nanos(&self) -> Option<u64> {
        (self.simulated.as_ref()).map(|nanos| nanos.load(Ordering::Relaxed))
    }

    /// Moves the virtual time forward to `nanos` (never back); nothing
    /// outside a simulation.
    pub(crate) fn advance_to(&self, nanos: u64) {
        if let Some(now) = &self.simulated {
            now.fetch_max(nanos, Ordering::Relaxed);
        }
    }

    /// The first nanosecond of tick `tick`, since the origin.
    pub(crate) fn tick_nanos(tick: u64) -> u64 {
        tick.saturating_mul(TICK_NANOS)
    }

    /// The instant `timeout` from [`instant`](Self::instant), saturated
    /// as [`deadline`](crate::sched::core::clock::deadline) does.
    pub(crate) fn deadline_in(&self, timeout: Duration) -> Instant {
        crate::sched::core::clock::deadline_from(self.instant(), timeout)
    }

    /// The current tick (rounded down: a deadline tick `<=` it has
    /// passed).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.tick(self.instant())
    }

    /// The tick of `at`, rounded down (as [`TimerClock::now`]).
    #[inline]
    pub(crate) fn tick(&self, at: Instant) -> u64 {
        self.nanos(at) >> TICK_SHIFT
    }

    /// Nanoseconds from the origin to `at` (saturated).
    #[inline]
    pub(crate) fn nanos(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.origin);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The tick of `at`, rounded up (a timer never fires early).
    pub(crate) fn deadline(&self, at: Instant) -> u64 {
        self.nanos(at).div_ceil(TICK_NANOS)
    }

    /// The tick `after` past `nanos` (a [`TimerClock::nanos`] reading),
    /// rounded up: [`TimerClock::deadline`] of that instant plus
    /// `after`, without converting a second `Instant` (saturated).
    #[inline]
    pub(crate) fn deadline_after(nanos: u64, after: Duration) -> u64 {
        let after = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        nanos.saturating_add(after).div_ceil(TICK_NANOS)
    }

    /// How long from `now` until tick `tick` (zero if passed).
    pub(crate) fn until(&self, tick: u64, now: Instant) -> Duration {
        let at = Duration::from_nanos(tick.saturating_mul(TICK_NANOS));
        let since = now.saturating_duration_since(self.origin);
        at.saturating_sub(since)
    }

    /// How many nanoseconds tick `now` is past tick `deadline`.
    pub(crate) fn late_nanos(deadline: u64, now: u64) -> u64 {
        now.saturating_sub(deadline).saturating_mul(TICK_NANOS)
    }
}
