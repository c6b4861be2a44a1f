//! Spinning and parking: how idle workers wait without losing a wakeup.
//!
//! The protocol is written up in `src/sched/core/README.md`; in short:
//!
//! - `state` packs how many workers are *spinning* (searching other
//!   workers' queues; low 32 bits) and *sleeping* (parked; high 32 bits).
//! - At most half of the busy workers may spin (Go's rule), so an idle
//!   scheduler does not burn every core looking for work.
//! - **Publishing work** (any thread): make the work visible, `fence(SeqCst)`,
//!   read `state`; if no one spins and someone sleeps, wake one sleeper.
//! - **Going to sleep** (a worker): register as a sleeper (one RMW on
//!   `state`, under the `sleepers` lock), `fence(SeqCst)`, then look at every
//!   queue once more; only if all are empty, wait on its own parker.
//!
//! The two fences are the Dekker pattern (docs/ARCHITECTURE.md, trap 5: a lost
//! wakeup at park): in the SeqCst
//! order one of them comes first. If the publisher's does, the worker's
//! re-check sees the work; if the worker's does, the publisher sees the
//! sleeper and wakes it. Either way no work is left with every worker asleep.
//! The counts in `state` are only counts: every RMW and load of it is
//! Relaxed. What a worker or publisher reads *through* the protocol (the
//! queues) has its own Release/Acquire, the sleepers list is under its
//! mutex, and the two SeqCst fences alone order each side's write of its
//! own word before its read of the other's (the fence-to-fence rule holds
//! for Relaxed accesses). Stronger orderings on the accesses themselves
//! would carry nothing: loom treats SeqCst accesses as AcqRel, and the
//! ordering-mutation run finds every model passing with each of them
//! weakened to Relaxed.
//! A spinner that stops spinning moves straight to sleeping in the same RMW,
//! so "someone spins" never hides a worker that is about to sleep without
//! re-checking.

use crate::padded::CachePadded;
use crate::sync::{fence, AtomicU64, Condvar, Mutex, Ordering};
use std::time::{Duration, Instant};

const SPINNER: u64 = 1;
const SLEEPER: u64 = 1 << 32;

fn spinning(state: u64) -> u64 {
    state & 0xffff_ffff
}

fn sleeping(state: u64) -> u64 {
    state >> 32
}

/// One worker's bed: a flag and a condition variable.
struct Parker {
    notified: Mutex<bool>,
    wake: Condvar,
}

/// The idle-worker bookkeeping shared by all workers. Public (hidden) only
/// so that the loom models in `loom-tests/` can drive the protocol.
pub struct Idle {
    state: CachePadded<AtomicU64>,
    /// Indices of the sleeping workers. Locked only on the way to sleep and
    /// to wake someone: never on a path that finds work.
    sleepers: Mutex<Vec<usize>>,
    parkers: Box<[Parker]>,
}

impl Idle {
    /// Bookkeeping for `workers` workers, none spinning or asleep.
    pub fn new(workers: usize) -> Self {
        Idle {
            state: CachePadded(AtomicU64::new(0)),
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            parkers: (0..workers)
                .map(|_| Parker {
                    notified: Mutex::new(false),
                    wake: Condvar::new(),
                })
                .collect(),
        }
    }

    /// Tries to become a spinner: allowed while spinners are fewer than half
    /// of the workers not asleep (at least one may always spin).
    pub fn try_start_spinning(&self) -> bool {
        let workers = self.parkers.len() as u64;
        // Relaxed: a heuristic limit; the CAS below is what counts.
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            let busy = workers - sleeping(state) - spinning(state);
            if spinning(state) > 0 && 2 * spinning(state) >= busy {
                return false;
            }
            // Relaxed: a count (module docs); the fences order it.
            match self.state.compare_exchange_weak(
                state,
                state + SPINNER,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
    }

    /// Stops spinning (the worker found work). Returns `true` if it was the
    /// last spinner: it should then wake another worker, as more work may be
    /// queued behind what it found (Go's `resetspinning`).
    pub fn stop_spinning(&self) -> bool {
        // Relaxed: a count (module docs).
        let before = self.state.fetch_sub(SPINNER, Ordering::Relaxed);
        debug_assert!(spinning(before) > 0);
        spinning(before) == 1
    }

    /// Called after publishing work: wakes a sleeper if no worker spins.
    pub fn notify_one(&self) -> bool {
        // SeqCst fence: pairs with the fence in `prepare_park`. The work was
        // made visible before this fence; a worker registered as sleeping
        // before its own fence is seen by the load below.
        fence(Ordering::SeqCst);
        // Relaxed: the fence above orders it after the published work
        // (module docs).
        let state = self.state.load(Ordering::Relaxed);
        if spinning(state) == 0 && sleeping(state) > 0 {
            self.wake_one()
        } else {
            false
        }
    }

    fn wake_one(&self) -> bool {
        let woken = {
            let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            let woken = sleepers.pop();
            if woken.is_some() {
                // Relaxed: a count (module docs). Under the lock, so it
                // matches the list.
                self.state.fetch_sub(SLEEPER, Ordering::Relaxed);
            }
            woken
        };
        match woken {
            Some(index) => {
                self.unpark(index);
                true
            }
            None => false,
        }
    }

    /// Wakes every sleeper (shutdown). A worker that is not asleep needs no
    /// flag: it checks the phase before it sleeps (after `prepare_park`).
    pub fn wake_all(&self) {
        while self.wake_one() {}
    }

    /// Registers worker `index` as a sleeper (leaving the spinners if
    /// `spinning`), then fences. The caller must re-check every queue and
    /// then call [`Idle::cancel_park`] (work found) or [`Idle::park`].
    pub fn prepare_park(&self, index: usize, spinning: bool) {
        {
            let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            sleepers.push(index);
            let delta = if spinning { SLEEPER - SPINNER } else { SLEEPER };
            // Relaxed: the fence below orders it before our re-check, and
            // before `notify_one`'s load if that comes after it (module
            // docs). One RMW moves a spinner to sleeping.
            self.state.fetch_add(delta, Ordering::Relaxed);
        }
        // SeqCst fence: pairs with the one in `notify_one` (Dekker).
        fence(Ordering::SeqCst);
    }

    /// Withdraws a sleeper registration after the re-check found work.
    pub fn cancel_park(&self, index: usize) {
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = sleepers.iter().position(|&i| i == index) {
            sleepers.swap_remove(at);
            // Relaxed: see `wake_one`.
            self.state.fetch_sub(SLEEPER, Ordering::Relaxed);
        } else {
            // A waker already took us off the list and will (or did) set our
            // flag: consume it so the next park does not return at once.
            drop(sleepers);
            let parker = &self.parkers[index];
            *parker.notified.lock().unwrap_or_else(|e| e.into_inner()) = false;
        }
    }

    /// Sleeps until woken, and leaves the sleepers in any case.
    ///
    /// A waker takes the worker off the list before setting its flag. A
    /// flag can also be stale: `cancel_park` clears it, but a waker that
    /// popped us may set it just after. Then this returns at once with the
    /// worker still registered, so it withdraws itself here: the list and the
    /// count never keep a worker that is awake.
    pub fn park(&self, index: usize) {
        self.park_timeout(index, None);
    }

    /// [`Idle::park`], but wakes by itself after `timeout` if no one woke it
    /// first (`None`: never). Used to back off while the re-check sees work
    /// that cannot be taken yet (a push half done, see `worker.rs`): the
    /// worker stays registered, so a publisher's notify still wakes it at
    /// once, and the timeout bounds the wait for work no notify will
    /// announce.
    ///
    /// On a timeout the worker withdraws as in `cancel_park`; if a waker
    /// popped it meanwhile, that waker's flag is left stale and the next
    /// park returns at once (as above). Under loom a wait never times out,
    /// so the models check the protocol without relying on the timeout.
    pub fn park_timeout(&self, index: usize, timeout: Option<Duration>) {
        {
            let parker = &self.parkers[index];
            // A timeout past what the clock can add is no timeout.
            let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
            let mut notified = parker.notified.lock().unwrap_or_else(|e| e.into_inner());
            while !*notified {
                notified = match deadline {
                    None => (parker.wake.wait(notified)).unwrap_or_else(|e| e.into_inner()),
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        let waited = parker.wake.wait_timeout(notified, deadline - now);
                        waited.unwrap_or_else(|e| e.into_inner()).0
                    }
                };
            }
            *notified = false;
        }
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = sleepers.iter().position(|&i| i == index) {
            sleepers.swap_remove(at);
            // Relaxed: see `wake_one`.
            self.state.fetch_sub(SLEEPER, Ordering::Relaxed);
        }
    }

    fn unpark(&self, index: usize) {
        let parker = &self.parkers[index];
        *parker.notified.lock().unwrap_or_else(|e| e.into_inner()) = true;
        parker.wake.notify_one();
    }

    /// `(spinning, sleeping)` now.
    pub fn counts(&self) -> (usize, usize) {
        // Relaxed: a statistic.
        let state = self.state.load(Ordering::Relaxed);
        (spinning(state) as usize, sleeping(state) as usize)
    }
}
