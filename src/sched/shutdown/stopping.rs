//! [`Stopping`]: how [`Scheduler::shutdown`](crate::sched::Scheduler::shutdown)
//! waits for the live processes to end.
//!
//! The waiting thread looks at the live count. Between its first looks it
//! yields its core ([`YIELDS`] times): processes that end on their cancel
//! usually have within a few of a worker's time slices, and with as many
//! workers as cores the yield is what lets that worker run. After that it
//! parks between looks, until a worker tells it to look again or a timeout
//! passes. A worker tells it when it is about to park while the scheduler
//! stops and finds no process live (`Local::park`): that is what a worker
//! does soon after it closes the last process, and it is off the step
//! path, so a scheduler that is not stopping pays nothing for it.
//!
//! The tell is a shortcut, not the guarantee: a look still comes after
//! each timeout, which starts at [`FIRST_POLL`] and doubles up to
//! [`POLL`]. So a tell that is missed (the worker read the live count or
//! the phase just before they changed: neither side's reads are ordered
//! against the other's writes) costs at most one timeout, and a shutdown
//! never waits on a tell that does not come (a step that never returns, a
//! worker that never parks). A tell also orders what the worker did before
//! it ahead of the waiter's next look (an unpark synchronizes with the park
//! it ends, and the waiter's lock with the worker's), so it hides the
//! orderings a look without one relies on, the closed counts' Release and
//! Acquire (`table.rs`): those are tested without a wait
//! (`table/tests.rs`). Being told, rather than sleeping a fixed period
//! between looks, keeps a shutdown with live processes from costing that
//! period each time (`benches/peers/src/bin/shutdown.rs` measures it
//! beside tokio).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How many looks the waiting thread yields after, before it first parks.
const YIELDS: u32 = 16;

/// The first timeout between looks; each later one is twice as long, up
/// to [`POLL`].
const FIRST_POLL: Duration = Duration::from_micros(10);

/// The longest timeout between looks: a look every millisecond once a wait
/// has lasted that long. Under Miri every 50 ms from the first look, with
/// no yields: there each look is interpreted, and a grace period the tests
/// stretch 50 times (`tests/common::ms`) would otherwise take thousands of
/// looks, most of a shutdown test's run.
const POLL: Duration = Duration::from_millis(if cfg!(miri) { 50 } else { 1 });

/// The thread waiting in `shutdown`, if one is.
pub(crate) struct Stopping {
    waiter: Mutex<Option<Thread>>,
}

impl Stopping {
    pub(crate) fn new() -> Self {
        Stopping {
            waiter: Mutex::new(None),
        }
    }

    /// Looks at `done` until it holds (`true`) or `deadline` passes
    /// (`false`), yielding between the first looks and then parked until
    /// [`tell`](Self::tell) or a timeout (module docs), never past
    /// `deadline`.
    pub(crate) fn wait_until(&self, deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
        // Registered before the first look: a tell after that look finds
        // us, and one before it is answered by the look itself.
        *self.waiter() = Some(thread::current());
        let mut pause = if cfg!(miri) { POLL } else { FIRST_POLL };
        let mut yields = if cfg!(miri) { 0 } else { YIELDS };
        let finished = loop {
            if done() {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            if yields > 0 {
                yields -= 1;
                thread::yield_now();
                continue;
            }
            // Returns early on a tell, an unpark made before it, or a
            // spurious wakeup: each just brings the next look sooner.
            thread::park_timeout(pause.min(deadline - now));
            pause = (pause * 2).min(POLL);
        };
        *self.waiter() = None;
        finished
    }

    /// Wakes the waiting thread, if any, for another look.
    pub(crate) fn tell(&self) {
        if let Some(waiter) = self.waiter().as_ref() {
            waiter.unpark();
        }
    }

    /// The lock holds no invariant a panic could break.
    fn waiter(&self) -> MutexGuard<'_, Option<Thread>> {
        self.waiter.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::Stopping;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_wait_ends_when_its_condition_holds_and_clears_the_waiter() {
        let stopping = Arc::new(Stopping::new());
        let done = Arc::new(AtomicBool::new(false));
        let (s, d) = (Arc::clone(&stopping), Arc::clone(&done));
        let teller = std::thread::spawn(move || {
            // Until the waiter is registered, then once more after the
            // condition holds.
            while s.waiter().is_none() {
                std::thread::yield_now();
            }
            d.store(true, Ordering::Release);
            s.tell();
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        assert!(stopping.wait_until(deadline, || done.load(Ordering::Acquire)));
        teller.join().unwrap();
        assert!(stopping.waiter().is_none(), "the waiter is cleared");
        stopping.tell(); // no one waits: nothing to wake
    }

    #[test]
    fn a_wait_gives_up_at_its_deadline() {
        let stopping = Stopping::new();
        let mut looks = 0;
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(!stopping.wait_until(deadline, || {
            looks += 1;
            false
        }));
        assert!(Instant::now() >= deadline);
        assert!(looks >= 2, "looked again before giving up: {looks}");
        assert!(stopping.waiter().is_none());
    }
}
