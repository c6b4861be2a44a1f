//! [`Counter`]: a statistic one worker writes and anyone reads.

use crate::sync::{AtomicU64, Ordering};

/// A `u64` written by one thread (its worker) and read by any.
///
/// Single writer, so an increment is a Relaxed load and store, not an RMW:
/// counting costs a worker nothing it would notice.
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning worker calls this.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        // Relaxed load and store: single writer; readers want a recent
        // value, not a synchronisation point.
        let value = self.0.load(Ordering::Relaxed);
        self.0.store(value.wrapping_add(n), Ordering::Relaxed);
    }

    /// Replaces the value (a histogram's min and max). Only the owning
    /// worker calls this.
    #[inline]
    pub(crate) fn set(&self, value: u64) {
        // Relaxed: single writer, as in `add`.
        self.0.store(value, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        // Relaxed: a statistic, read without synchronising with the writer.
        self.0.load(Ordering::Relaxed)
    }
}
