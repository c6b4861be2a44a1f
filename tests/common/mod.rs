//! Helpers shared by the integration tests.
//!
//! Each file in `tests/` is its own crate and includes this module with
//! `mod common;`, using only some of what is here: without the `allow`, every
//! crate would warn about the helpers it does not use.
#![allow(dead_code)]

pub mod drops;

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{Outcome, Process};
use stepsched::sched::{Completer, JoinHandle};

/// Polls `done` every millisecond until it holds. The 60 s bound (scaled
/// by [`ms`] under Miri) is a liveness guard for a hung scheduler, not a
/// timing claim: on any machine the condition holds long before it.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + ms(60_000);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Joins `handle`, failing instead of hanging if the process does not end
/// within 60 s (scaled by [`ms`] under Miri): a liveness guard, as in
/// [`wait_until`], for processes a lost event would leave waiting forever.
pub fn joined<P: Process>(handle: JoinHandle<P>) -> Outcome<P> {
    match handle.join_timeout(ms(60_000)) {
        Ok(outcome) => outcome,
        Err(handle) => panic!("{} never ended: an event was lost", handle.pid()),
    }
}

/// `n` milliseconds natively; 50 times as long under Miri. For the time
/// limits and sleeps whose ratio to the work around them a test relies on
/// (a shutdown's timeout and the grace period after it, a step that sleeps
/// past them): Miri's clock is virtual and advances 5 µs per basic block it
/// interprets, so the same work takes it far longer in virtual time (a
/// forced close of a hundred processes outlasted a 100 ms grace period).
/// Scaling every such duration together keeps their order.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(if cfg!(miri) { n * 50 } else { n })
}

/// Records the index of every worker thread that runs its stop hook, so a
/// test can check that none died.
#[derive(Clone, Default)]
pub struct ThreadStops(Arc<Mutex<Vec<usize>>>);

impl ThreadStops {
    /// The hook for `Builder::on_thread_stop`.
    pub fn hook(&self) -> impl Fn(usize) + Send + Sync + 'static {
        let stopped = Arc::clone(&self.0);
        move |i| stopped.lock().unwrap().push(i)
    }

    /// The indices recorded so far, sorted.
    pub fn sorted(&self) -> Vec<usize> {
        let mut stopped = self.0.lock().unwrap().clone();
        stopped.sort_unstable();
        stopped
    }
}

/// The completers kept by a command handler that never completes them
/// itself, for the test to complete, drop or inspect.
pub struct Held<P: Process>(Arc<Mutex<Vec<Completer<P>>>>);

impl<P: Process> Default for Held<P> {
    fn default() -> Self {
        Held(Arc::default())
    }
}

/// Drops the completers still held, with the test's `Held`: the handler
/// inside the scheduler shares this list, and each completer holds the
/// scheduler, a cycle that would leak both (Miri's leak check reports it).
/// Dropped, a completer completes its command with `Dropped`, or finds its
/// process gone.
impl<P: Process> Drop for Held<P> {
    fn drop(&mut self) {
        // Taken out first: the last completer may drop the scheduler, and
        // with it the handler's clone of this list.
        let held = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        drop(held);
    }
}

impl<P: Process> Held<P> {
    /// A handler (for `Builder::handler`) that keeps every completer here.
    pub fn handler(&self) -> impl Fn(P::Command, Completer<P>) + Send + Sync + 'static {
        let held = Arc::clone(&self.0);
        move |_, completer| held.lock().unwrap().push(completer)
    }

    /// The completers held now.
    pub fn lock(&self) -> MutexGuard<'_, Vec<Completer<P>>> {
        self.0.lock().unwrap()
    }

    /// Waits until `n` completers are held.
    pub fn wait_for(&self, what: &str, n: usize) {
        wait_until(what, || self.lock().len() == n);
    }
}
