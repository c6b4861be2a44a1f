//! Helpers shared by the scheduler's integration tests.

use std::thread;
use std::time::{Duration, Instant};

/// Polls `done` every millisecond until it holds. The 60 s bound is a
/// liveness guard for a hung scheduler, not a timing claim: on any machine
/// the condition holds long before it.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}
