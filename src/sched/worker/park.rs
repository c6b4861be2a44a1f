//! How a worker with nothing to do parks without losing a wakeup (README,
//! "Spin, yield, park"; the protocol is the core's `idle.rs`).

use super::*;

impl<P: Process> Local<P> {
    /// Goes to sleep (`idle.rs`), unless the re-check after registering
    /// sees work: then it withdraws, which counts as an idle round.
    ///
    /// Work that is visible but was not taken is usually a push half done
    /// (its producer preempted between swap and link: `is_empty` says
    /// "not empty", the take says `Inconsistent`), or a token or another
    /// worker's queue this worker may not take from. Going straight back
    /// to the search would loop hot through the sleepers lock on the CPU
    /// that producer needs. So the first [`YIELDING_CANCELS`] withdrawals
    /// in a row yield the thread. After them the worker, still registered,
    /// tries to take what it saw (`take_while_registered`); only if nothing
    /// can be taken does it park despite the visible work, for
    /// [`BACK_OFF_MIN`] doubling to 1.6 ms. Registered as a sleeper, it is
    /// woken at once by the half-done push's own notify (which follows its
    /// link); the timeout bounds the wait for work another taker holds. No
    /// wakeup is lost either way (README, "Spin, yield, park").
    ///
    /// `on_park` runs before the worker registers and `on_unpark` after it
    /// is back, whether it slept or withdrew: a hook that blocks then holds
    /// no sleeper registration, and the two always pair.
    pub(super) fn park(&mut self) {
        let shared = Arc::clone(&self.shared);
        shared.hooks.park(self.index);
        shared
            .core
            .idle
            .prepare_park(self.index, self.parking.spinning);
        self.parking.spinning = false;
        let mut timeout = None;
        if shared.core.phase() == phase::EXITING {
            shared.core.idle.cancel_park(self.index);
            shared.hooks.unpark(self.index);
            return;
        }
        // Likely soon after closing the last process of a shutdown: its
        // wait need not sleep out its timeout (`stopping.rs`).
        if shared.core.phase() >= phase::STOPPING && shared.core.table.live() == 0 {
            shared.stopping.tell();
        }
        if shared.core.has_visible_work() {
            let back_off = self.parking.cancelled >= YIELDING_CANCELS;
            if !back_off || self.take_while_registered() {
                shared.core.idle.cancel_park(self.index);
                self.counters().parks_cancelled.add(1);
                self.parking.cancelled = self.parking.cancelled.saturating_add(1);
                thread::yield_now();
                shared.hooks.unpark(self.index);
                return;
            }
            let doublings = (self.parking.cancelled - YIELDING_CANCELS).min(BACK_OFF_DOUBLINGS);
            self.parking.cancelled = self.parking.cancelled.saturating_add(1);
            timeout = Some(BACK_OFF_MIN * (1 << doublings));
        } else {
            // Every queue looked empty: a fresh streak after this park.
            self.parking.cancelled = 0;
        }
        // Timers: read after the fence in `prepare_park`, so a timer whose
        // inserter's `notify_one` fence came first is seen here; one whose
        // fence came after sees us registered (the wake rule).
        let next = self.earliest_timer();
        if next != NEVER {
            let clock = &shared.timers.clock;
            let now = clock.instant();
            if next <= clock.tick(now) {
                shared.core.idle.cancel_park(self.index);
                self.poll_all_timers();
                shared.hooks.unpark(self.index);
                return;
            }
            let until = clock.until(next, now);
            timeout = Some(timeout.map_or(until, |t: Duration| t.min(until)));
        }
        self.counters().parks.add(1);
        self.record(Kind::Park, 0, 0);
        shared.core.idle.park_timeout(self.index, timeout);
        shared.core.clock.refresh();
        self.counters().wakeups.add(1);
        self.record(Kind::Unpark, 0, 0);
        shared.hooks.unpark(self.index);
    }

    /// Before a back-off park, after registering as a sleeper and the
    /// fence: takes whatever this worker can take, from its inject queue,
    /// the global queue or (as a spinner would) the other workers, onto the
    /// local deque (`find_local` pops it next). The re-check only looked at
    /// emptiness; this tells work a half-done push stalls from work that
    /// is there. A publisher whose fence came before ours (which includes
    /// one that saw this worker spinning and so woke no one) had linked its
    /// work before this take, which finds it, unless another taker holds it
    /// (`Busy`, `Retry`: that taker runs it). A publisher whose fence comes
    /// after ours sees this worker registered. So the back-off never sleeps
    /// on work no one else is taking or will be told of.
    pub(super) fn take_while_registered(&mut self) -> bool {
        let taken = self.take_inject().or_else(|| self.take_global());
        match taken.or_else(|| self.steal()) {
            Some(task) => {
                self.queues.deque.push(task);
                true
            }
            None => false,
        }
    }
}
