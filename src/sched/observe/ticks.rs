//! [`Ticks`]: the execution tracer's clock, and [`Calibration`], which
//! turns its readings into nanoseconds at export.
//!
//! `Instant::now` costs tens of nanoseconds (a vDSO
//! `clock_gettime`: a sequence lock, `rdtscp`, then a scale and an offset),
//! as much as two bare steps. So on x86_64 with an *invariant* TSC (CPUID
//! leaf `0x8000_0007`, EDX bit 8: the counter runs at one constant rate in
//! every power state, on every core) the tracer reads the time-stamp
//! counter itself, `rdtsc` (cheaper back to back, and it overlaps with
//! the surrounding work), and records raw ticks. Nothing is converted while
//! recording. At export, two `(Instant, ticks)` pairs, one taken when the
//! tracer started and one when the trace is taken, give the tick rate and
//! the offset, so ticks become nanoseconds since the tracer started.
//! Elsewhere (other architectures, no invariant TSC, Miri) a reading
//! is `Instant` nanoseconds since the start, and the calibration is the
//! identity.
//!
//! Readings are per core: a thread that moves to another core may read a
//! counter slightly behind. The exporter clamps each track to its last
//! value, so a track's timestamps never go back.

use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The clock the tracer stamps records with. Cloned into every ring.
#[derive(Debug, Clone)]
pub(crate) struct Ticks {
    /// Whether readings are TSC ticks (else `Instant` ns since `epoch`).
    tsc: bool,
    epoch: Instant,
    /// A simulation's virtual nanoseconds (`timer/clock.rs`), which its
    /// trace is stamped with instead.
    simulated: Option<Arc<AtomicU64>>,
}

impl Ticks {
    /// A clock starting now, on the TSC if it is invariant.
    pub(crate) fn new() -> Self {
        Ticks {
            tsc: invariant_tsc(),
            epoch: Instant::now(),
            simulated: None,
        }
    }

    /// A clock that reads a simulation's virtual time, in nanoseconds
    /// (so its calibration is the identity).
    pub(crate) fn simulated(time: Arc<AtomicU64>) -> Self {
        Ticks {
            tsc: false,
            epoch: Instant::now(),
            simulated: Some(time),
        }
    }

    /// The current reading: TSC ticks, or nanoseconds since the start.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        if let Some(time) = &self.simulated {
            // Relaxed: see `TimerClock::simulated`.
            return time.load(Ordering::Relaxed);
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if self.tsc {
            // SAFETY: `rdtsc` exists on every x86_64 CPU and only reads the
            // time-stamp counter: no memory access, no precondition.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Nanoseconds per reading, as a 32.32 fixed-point number, measured
    /// against `Instant` over `span` (the calling thread sleeps that long);
    /// exactly `1 << 32` when readings are already nanoseconds. Over 2 ms a
    /// pair's error of tens of nanoseconds is a rate error of about 1e-5.
    pub(crate) fn scale_q32(&self, span: Duration) -> u64 {
        if !self.tsc {
            return 1 << 32;
        }
        let (i0, t0) = self.pair();
        std::thread::sleep(span);
        let (i1, t1) = self.pair();
        let ns = i1.duration_since(i0).as_nanos();
        let ticks = u128::from(t1.saturating_sub(t0).max(1));
        ((ns << 32) / ticks).min(u128::from(u64::MAX)) as u64
    }

    /// An `Instant` and the reading taken at (nearly) the same moment: the
    /// closest of a few tries, the reading being the midpoint of the two
    /// around the `Instant`.
    fn pair(&self) -> (Instant, u64) {
        let mut best = None;
        for _ in 0..5 {
            let before = self.now();
            let instant = Instant::now();
            let after = self.now();
            let spread = after.wrapping_sub(before);
            let mid = before + spread / 2;
            if best.map_or(true, |(s, _, _)| spread < s) {
                best = Some((spread, instant, mid));
            }
        }
        let (_, instant, mid) = best.expect("five tries");
        (instant, mid)
    }
}

/// How long a TSC calibration spans at least: a pair is off by at most the
/// time between its readings (tens of ns), so over 10 ms the tick rate is
/// right to a few parts per million.
const MIN_SPAN: Duration = Duration::from_millis(10);

/// Turns readings of one [`Ticks`] into nanoseconds since its start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calibration {
    /// The reading at the start.
    origin: u64,
    /// Nanoseconds over ticks, as a ratio (1/1 for `Instant` readings).
    ns: u64,
    ticks: u64,
}

impl Calibration {
    /// Takes the start pair now.
    pub(crate) fn start(clock: &Ticks) -> CalibrationStart {
        CalibrationStart {
            clock: clock.clone(),
            pair: clock.tsc.then(|| clock.pair()),
        }
    }

    /// Nanoseconds since the start for `reading` (0 for one before it).
    pub(crate) fn ns(&self, reading: u64) -> u64 {
        let since = reading.saturating_sub(self.origin) as u128;
        (since * self.ns as u128 / self.ticks as u128) as u64
    }
}

/// The first half of a [`Calibration`]: the pair taken at the start.
#[derive(Debug, Clone)]
pub(crate) struct CalibrationStart {
    clock: Ticks,
    pair: Option<(Instant, u64)>,
}

impl CalibrationStart {
    /// Takes the end pair (waiting until [`MIN_SPAN`] has passed since the
    /// start, if need be) and returns the calibration.
    pub(crate) fn finish(&self) -> Calibration {
        let Some((i0, t0)) = self.pair else {
            return Calibration {
                origin: 0,
                ns: 1,
                ticks: 1,
            };
        };
        let waited = i0.elapsed();
        if waited < MIN_SPAN {
            std::thread::sleep(MIN_SPAN - waited);
        }
        let (i1, t1) = self.clock.pair();
        // The tracer's zero is the clock's epoch, a moment before `i0`.
        let lead = i0.duration_since(self.clock.epoch).as_nanos() as u64;
        let ns = i1.duration_since(i0).as_nanos() as u64;
        let ticks = t1.saturating_sub(t0).max(1);
        // Readings count from `origin`, the tick at the epoch.
        let lead_ticks = (lead as u128 * ticks as u128 / ns.max(1) as u128) as u64;
        Calibration {
            origin: t0.saturating_sub(lead_ticks),
            ns: ns.max(1),
            ticks,
        }
    }
}

/// Whether the TSC is invariant (constant rate, never stops), so that its
/// ticks measure time.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    // `__cpuid` is a safe function since Rust 1.87 and unsafe before (our
    // MSRV is 1.80), hence the `allow`.
    #[allow(unused_unsafe)]
    // SAFETY: `cpuid` exists on every x86_64 CPU and only reads
    // identification registers; leaf 0x8000_0000 is always defined.
    let max_extended = unsafe { __cpuid(0x8000_0000) }.eax;
    if max_extended < 0x8000_0007 {
        return false;
    }
    #[allow(unused_unsafe)]
    // SAFETY: as above; the leaf is within the maximum just read.
    let power = unsafe { __cpuid(0x8000_0007) };
    power.edx & (1 << 8) != 0
}

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
fn invariant_tsc() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_convert_to_the_nanoseconds_that_passed() {
        check_conversion(Ticks::new());
    }

    #[test]
    fn the_instant_fallback_converts_too() {
        check_conversion(Ticks {
            tsc: false,
            epoch: Instant::now(),
            simulated: None,
        });
    }

    fn check_conversion(clock: Ticks) {
        let start = Calibration::start(&clock);
        let first = clock.now();
        let after_first = clock.epoch.elapsed();
        std::thread::sleep(Duration::from_millis(20));
        let second = clock.now();
        let calibration = start.finish();
        let (a, b) = (calibration.ns(first), calibration.ns(second));
        // Orderings, not timing claims: `first` was read before
        // `after_first`, and `second` at least 20 ms after it. The slack
        // covers the calibration's error (parts per million of the span,
        // plus the pairs' spread).
        let slack = 200_000;
        assert!(
            a <= after_first.as_nanos() as u64 + slack,
            "{a} vs {after_first:?}"
        );
        assert!(
            b + slack >= a + 20_000_000,
            "20 ms of sleep span {} ns",
            b - a
        );
    }
}
