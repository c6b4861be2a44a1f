//! Where a worker finds its next process: its own sources in order (the
//! fairness ticks, `runnext`, the deque, the inject and global queues, the
//! processes that continued), then stealing from the others (README,
//! "Where a worker looks").

use super::*;

impl<P: Process> Local<P> {
    /// Sources 1 to 5 of the module docs. Always inlined: the worker loop
    /// and a simulation's turn (`turn.rs`) both call it, and a second call
    /// site would otherwise take it out of the loop, which costs a step.
    #[inline(always)]
    pub(super) fn find_local(&mut self) -> Option<Task<P>> {
        self.queues.tick = self.queues.tick.wrapping_add(1);
        let interval = self.shared.config.global_queue_interval;
        let turn = self.queues.tick % interval;
        if turn == 0 {
            let every = self
                .shared
                .config
                .global_queue_interval
                .saturating_mul(CLOCK_ROUNDS);
            if self.queues.tick % every == 0 {
                // One OS clock read per 488 ticks keeps the slots' stamps
                // roughly current (see `clock.rs`).
                self.shared.core.clock.refresh();
            }
            // Both queues fed from outside get their turn, or a busy local
            // deque would starve remote wakeups as well as submissions.
            let outside = self.take_inject().or_else(|| self.take_global());
            if let Some(task) = outside.or_else(|| self.queues.yielded.pop_front()) {
                return Some(task);
            }
        } else if turn == interval / 2 {
            // The own deque's turn (module docs): its oldest process, so
            // one at the top cannot wait forever under a pushing owner. A
            // tick of its own, not a fallback of the check above: with an
            // interval of 2, every tick would then take the oldest, and a
            // process in `runnext` would wait for the deque to empty.
            if let Some(task) = self.take_oldest() {
                return Some(task);
            }
        }
        if let Some(task) = self.queues.runnext.take() {
            self.queues.runnext_streak += 1;
            if self.queues.runnext_streak <= RUNNEXT_STREAK {
                return Some(task);
            }
            self.queues.yielded.push_back(task);
        }
        self.queues.runnext_streak = 0;
        if let Some(task) = self.queues.deque.pop() {
            return Some(task);
        }
        if let Some(task) = self.take_inject() {
            return Some(task);
        }
        if let Some(task) = self.take_global() {
            return Some(task);
        }
        let first = self.queues.yielded.pop_front()?;
        let moved = self.queues.yielded.len();
        for task in self.queues.yielded.drain(..) {
            self.queues.deque.push(task);
        }
        self.queued_locally(moved);
        Some(first)
    }

    /// The oldest process of this worker's own deque, taken from the top
    /// with the thieves' `steal` (one claim, the path the loom models prove
    /// against `pop`): we are the owner, so no pop of ours runs meanwhile,
    /// and to the deque this is a thief whose claim lands between two of
    /// the owner's operations. `Retry` means another worker's claim moved
    /// `top` first, which took the oldest away from here just as well: we
    /// go on to the usual sources.
    #[inline]
    pub(super) fn take_oldest(&mut self) -> Option<Task<P>> {
        self.shared.core.remotes[self.index]
            .stealer
            .steal()
            .success()
    }

    #[inline]
    pub(super) fn take_inject(&mut self) -> Option<Task<P>> {
        let own = &self.shared.core.remotes[self.index].inject;
        match own.take_batch_into(&self.queues.deque) {
            Take::Taken { first, moved } => {
                self.counters().inject_takes.add(1);
                self.record(Kind::InjectTake, 0, 1 + moved as u32);
                self.queued_locally(moved);
                Some(first)
            }
            _ => None,
        }
    }

    #[inline]
    pub(super) fn take_global(&mut self) -> Option<Task<P>> {
        match self.shared.core.global.take_batch_into(&self.queues.deque) {
            Take::Taken { first, moved } => {
                self.counters().global_takes.add(1);
                self.record(Kind::GlobalTake, 0, 1 + moved as u32);
                self.queued_locally(moved);
                Some(first)
            }
            _ => None,
        }
    }

    /// After pushing `moved` processes onto the local deque: they are
    /// stealable now, so wake a parked worker if no one is spinning.
    #[inline]
    pub(super) fn queued_locally(&self, moved: usize) {
        if moved > 0 {
            self.shared.core.idle.notify_one();
        }
    }

    /// Source 6: other workers' deques and inject queues.
    pub(super) fn steal(&mut self) -> Option<Task<P>> {
        let remotes = &self.shared.core.remotes;
        let n = remotes.len();
        if n == 1 {
            return None;
        }
        self.counters().steal_attempts.add(1);
        // xorshift32: a cheap random start spreads thieves over victims.
        self.queues.rng ^= self.queues.rng << 13;
        self.queues.rng ^= self.queues.rng >> 17;
        self.queues.rng ^= self.queues.rng << 5;
        let start = self.queues.rng as usize % n;
        for attempt in 0..2 {
            let mut retry = false;
            for victim in (start..start + n)
                .map(|i| i % n)
                .filter(|&i| i != self.index)
            {
                let before = self.queues.deque.len();
                let stealer = &remotes[victim].stealer;
                match stealer.steal_half_into_with(&self.queues.deque, warm::warm_stolen) {
                    Steal::Success(task) => {
                        let stolen = 1 + (self.queues.deque.len() - before) as u64;
                        let counters = self.counters();
                        counters.steals.add(1);
                        counters.stolen.add(stolen);
                        self.record(Kind::Steal, victim as u64, stolen as u32);
                        return Some(task);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
                match remotes[victim].inject.take_batch_into(&self.queues.deque) {
                    Take::Taken { first, moved } => {
                        let counters = self.counters();
                        counters.steals.add(1);
                        counters.stolen.add(1 + moved as u64);
                        self.record(Kind::Steal, victim as u64, 1 + moved as u32);
                        return Some(first);
                    }
                    Take::Busy | Take::Inconsistent => retry = true,
                    Take::Empty => {}
                }
            }
            if !retry || attempt == 1 {
                break;
            }
        }
        None
    }
}
