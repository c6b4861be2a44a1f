//! Drop counting for the queue tests.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Drops are counted here, per test (each test owns its counter).
pub struct Counted<'a>(pub &'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
