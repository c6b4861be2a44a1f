//! [`Histogram`]: a fixed-size log-linear histogram of nanoseconds, and
//! [`LiveHistogram`], the worker-owned copy that `stats()` readers load.
//!
//! # Buckets
//!
//! As HdrHistogram and Go's `runtime/metrics` lay them out: values below
//! [`SUB_BUCKETS`] (8) each have a bucket of their own; above, every power
//! of two `[2^e, 2^(e+1))` is cut into 8 equal buckets. A bucket is at most
//! 1/8 (12.5%) of its lower bound wide, whatever the magnitude, and 496
//! buckets cover every `u64`: no value is ever clamped. The index of a
//! value is a leading-zeros count, a shift and a mask; recording never
//! allocates.
//!
//! # Publishing
//!
//! A worker records into its own [`LiveHistogram`]: cells of the same
//! single-writer [`Counter`] as the worker's other statistics (a Relaxed
//! load and store, no read-modify-write), which any thread may read while
//! the worker writes. A snapshot ([`LiveHistogram::snapshot`]) is therefore
//! not one instant: its sum and its buckets may disagree by the samples
//! recorded while it was read. Its count is the sum of the buckets it read,
//! so its quantiles always fall among its own buckets; a quiet worker's
//! snapshot is exact.

use crate::sched::observe::counter::Counter;
use core::fmt;

/// Buckets per power of two (and the number of exact buckets below it).
pub const SUB_BUCKETS: usize = 8;
const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();

/// How many buckets a [`Histogram`] has: enough for every `u64`.
pub const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB_BUCKETS;

/// The bucket `value` falls in.
#[inline]
fn index(value: u64) -> usize {
    if value < SUB_BUCKETS as u64 {
        return value as usize;
    }
    let exp = 63 - value.leading_zeros(); // >= SUB_BITS
    let sub = (value >> (exp - SUB_BITS)) as usize & (SUB_BUCKETS - 1);
    (exp - SUB_BITS + 1) as usize * SUB_BUCKETS + sub
}

/// The smallest value of bucket `i`.
fn lower_bound(i: usize) -> u64 {
    if i < SUB_BUCKETS {
        return i as u64;
    }
    let group = (i / SUB_BUCKETS) as u32; // >= 1
    let sub = (i % SUB_BUCKETS) as u64;
    let exp = group - 1 + SUB_BITS;
    (SUB_BUCKETS as u64 + sub) << (exp - SUB_BITS)
}

/// The largest value of bucket `i` (inclusive).
fn upper_bound(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        lower_bound(i + 1) - 1
    }
}

/// A histogram of durations in nanoseconds, with log-linear buckets (module
/// docs): 8 buckets per power of two, so a bucket spans at most 12.5% of
/// its values, over the whole `u64` range.
///
/// It has a fixed size (496 buckets, about 4 KiB) and never allocates when
/// recording. Two histograms merge by adding buckets
/// ([`merge`](Histogram::merge)), so per-worker histograms add up to the
/// scheduler's. [`buckets`](Histogram::buckets) gives `(upper bound,
/// count)` pairs, as a Prometheus exporter writes them (cumulate them for
/// `le` buckets).
///
/// ```
/// use stepsched::sched::Histogram;
///
/// let mut h = Histogram::new();
/// for ns in [120, 250, 250, 4_000] {
///     h.record(ns);
/// }
/// assert_eq!(h.count(), 4);
/// assert_eq!(h.sum(), 4_620);
/// assert_eq!((h.min(), h.max()), (Some(120), Some(4_000)));
/// let median = h.quantile(0.5).unwrap();
/// assert!((250..=255).contains(&median)); // within its bucket
/// let mut other = Histogram::new();
/// other.record(1);
/// h.merge(&other);
/// assert_eq!(h.count(), 5);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one value. The sum saturates at `u64::MAX` (584 years of
    /// nanoseconds); every value, 0 and `u64::MAX` included, has a bucket.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.counts[index(value)] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the values recorded (saturating).
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The smallest value recorded, `None` if none was.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value recorded, `None` if none was.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The mean, `None` if nothing was recorded.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The value at quantile `q` (0.0 the smallest, 1.0 the largest): the
    /// upper bound of the bucket that holds the `ceil(q * count)`-th value,
    /// clamped to [`min`](Histogram::min) and [`max`](Histogram::max), so
    /// it is at most 12.5% above the exact quantile and never outside the
    /// recorded range. `None` if nothing was recorded.
    ///
    /// # Panics
    ///
    /// If `q` is not within `0.0..=1.0` (NaN included).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        assert!(
            (0.0..=1.0).contains(&q),
            "Histogram::quantile: q = {q} is not within 0.0..=1.0"
        );
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(upper_bound(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// The buckets that hold values, smallest first: `(upper bound, count)`,
    /// the bound inclusive (a value `v` is in the first bucket whose bound
    /// is `>= v`). Empty buckets are skipped.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (upper_bound(i), n))
    }

    /// Adds `other`'s values to this one's.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Histogram {
    /// Count, sum, min, max and the non-empty buckets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("sum", &self.sum)
            .field("min", &self.min())
            .field("max", &self.max())
            .field("buckets", &self.buckets().collect::<Vec<_>>())
            .finish()
    }
}

/// One worker's two latency histograms, written by it alone.
pub(crate) struct Latency {
    /// How long each step ran.
    pub(crate) step: LiveHistogram,
    /// From a process's becoming Ready to its step's start.
    pub(crate) schedule: LiveHistogram,
}

impl Latency {
    pub(crate) fn new() -> Self {
        Latency {
            step: LiveHistogram::new(),
            schedule: LiveHistogram::new(),
        }
    }
}

/// A histogram one worker writes and anyone reads (module docs).
pub(crate) struct LiveHistogram {
    counts: Box<[Counter]>,
    sum: Counter,
    min: Counter,
    max: Counter,
}

impl LiveHistogram {
    pub(crate) fn new() -> Self {
        let min = Counter::default();
        min.set(u64::MAX);
        LiveHistogram {
            counts: (0..BUCKETS).map(|_| Counter::default()).collect(),
            sum: Counter::default(),
            min,
            max: Counter::default(),
        }
    }

    /// Records `value`. Only the owning worker calls this.
    #[inline]
    pub(crate) fn record(&self, value: u64) {
        self.counts[index(value)].add(1);
        self.sum.add(value);
        if value < self.min.get() {
            self.min.set(value);
        }
        if value > self.max.get() {
            self.max.set(value);
        }
    }

    /// A copy, for `stats()`.
    pub(crate) fn snapshot(&self) -> Histogram {
        let mut h = Histogram::new();
        for (cell, live) in h.counts.iter_mut().zip(self.counts.iter()) {
            *cell = live.get();
        }
        h.sum = self.sum.get();
        h.min = self.min.get();
        h.max = self.max.get();
        // The sum of the buckets read (module docs).
        h.count = h.counts.iter().sum();
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lies_within_its_buckets_bounds() {
        let mut values: Vec<u64> = (0..2_000).collect();
        for e in 3..64 {
            let p = 1u64 << e;
            values.extend([
                p - 1,
                p,
                p + 1,
                p + p / 2,
                p.wrapping_mul(2).wrapping_sub(1),
            ]);
        }
        values.push(u64::MAX);
        for v in values {
            let i = index(v);
            assert!(i < BUCKETS, "{v} -> {i}");
            assert!(
                lower_bound(i) <= v && v <= upper_bound(i),
                "{v} in bucket {i}"
            );
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        assert_eq!(upper_bound(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn buckets_are_contiguous_and_at_most_an_eighth_wide() {
        for i in 1..BUCKETS {
            assert_eq!(upper_bound(i - 1) + 1, lower_bound(i), "gap before {i}");
            let (lo, hi) = (lower_bound(i), upper_bound(i));
            if lo >= SUB_BUCKETS as u64 {
                assert!(hi - lo < lo / 8 + 1, "bucket {i}: {lo}..={hi}");
            }
        }
    }

    #[test]
    fn quantiles_match_a_sorted_vector_within_a_bucket() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut values = Vec::new();
        let mut h = Histogram::new();
        for _ in 0..5_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let v = rng % 1_000_000;
            values.push(v);
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let exact = values[rank - 1];
            let got = h.quantile(q).unwrap();
            assert!(got >= exact, "q {q}: {got} < {exact}");
            assert!(
                got <= upper_bound(index(exact)),
                "q {q}: {got} beyond the bucket of {exact}"
            );
            assert!(got >= h.min().unwrap() && got <= h.max().unwrap());
        }
        assert_eq!(h.quantile(0.0), h.min());
        assert_eq!(h.quantile(1.0), h.max());
    }

    #[test]
    fn merge_adds_counts_sums_and_extremes() {
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        a.record(10);
        a.record(1_000);
        b.record(3);
        b.record(70_000);
        let mut all = Histogram::new();
        for v in [10, 1_000, 3, 70_000] {
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(a.buckets().map(|(_, n)| n).sum::<u64>(), 4);
        a.merge(&Histogram::new());
        assert_eq!(a, all);
    }

    #[test]
    fn an_empty_histogram_has_no_quantiles_or_extremes() {
        let h = Histogram::new();
        assert_eq!(
            (h.count(), h.min(), h.max(), h.quantile(0.5)),
            (0, None, None, None)
        );
        assert_eq!(h.buckets().count(), 0);
    }

    #[test]
    #[should_panic(expected = "not within 0.0..=1.0")]
    fn a_quantile_outside_zero_to_one_panics() {
        let mut h = Histogram::new();
        h.record(1);
        let _ = h.quantile(1.5);
    }

    #[test]
    fn a_live_histograms_snapshot_equals_the_same_records() {
        let live = LiveHistogram::new();
        let mut h = Histogram::new();
        assert_eq!(live.snapshot(), h);
        for v in [5, 500, 50_000, 0] {
            live.record(v);
            h.record(v);
        }
        assert_eq!(live.snapshot(), h);
    }
}
