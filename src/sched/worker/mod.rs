//! The worker loop: find a process, step it (`worker/step.rs`), apply what
//! the step asked for.
//!
//! Where a worker looks for work, in order (docs/ARCHITECTURE.md, "Where
//! a worker finds work"):
//!
//! 1. every `global_queue_interval`-th tick (61), its inject queue, the
//!    global queue and the oldest *continue*d process first, so a busy local
//!    deque cannot starve remote wakeups, new submissions or yielding
//!    processes (Go's rule, extended to our other FIFO sources);
//!
//!    and halfway between two such ticks (the 30th of every 61), the oldest
//!    process of its own deque, taken from the top through the deque's own
//!    [`Stealer`](crate::deque::Stealer): the owner pops newest first, so
//!    while its steps keep pushing (a chain of spawns, a fan-out) a process
//!    near the top would otherwise wait until the pushing stops. Pushes
//!    only ever go below it, so each such turn (or a thief's claim, which
//!    is what makes ours fail) brings it one place nearer the top: a
//!    process with `d` processes above it in its worker's deque runs within
//!    `61 * (d + 1)` steps of that worker, unless a thief (whose deque was
//!    empty, so it lands no deeper) or a LIFO pop takes it sooner. One tick
//!    in 61 takes the oldest instead of the newest; the rest stay LIFO.
//!    (With an interval of 1 there is no tick between checks, and no turn.)
//! 2. `runnext`: the process this worker last woke by a message or a
//!    signal, or the first child its last step spawned, so a request and
//!    its reply (an end and its watcher, a parent and its child) stay on
//!    one core (Go's `runnext`, tokio's LIFO slot), at most
//!    [`RUNNEXT_STREAK`] times in a row;
//! 3. the local deque (LIFO);
//! 4. its own inject queue, then the global queue: take one and move up to
//!    16 more onto the local deque;
//! 5. processes that returned *continue*, oldest first: they go behind all
//!    of the above (like Go's `Gosched`);
//! 6. as a *spinner*, other workers: `steal_half_into` from each deque
//!    (asking for the stolen processes' lines at once, `worker/warm.rs`)
//!    and a batch from each inject queue, starting at a random victim.
//!
//! Before each search it fires its own timing wheel if something there is
//! due (one load when nothing is pending), and as a spinner, before
//! stealing, every wheel that is due (`worker/timers.rs`, `timer/`).
//!
//! Each task runs under `catch_unwind` (`worker/contain.rs`): user code is
//! contained where it is called, so a panic that reaches this far is the
//! scheduler's own, and the worker survives it (see
//! [`Stats::worker_panics`](crate::sched::Stats::worker_panics)).
//!
//! With nothing found it spins (rounds below `spin_tight`: a CPU pause),
//! yields its thread (below `park_after`), then parks (see `idle.rs`)
//! until woken or until the earliest timer of any wheel.

use crate::deque::{Steal, Worker};
use crate::mpsc::NodeCache;
use crate::process::{Effects, Event, Pid, Process};
use crate::sched::core::body::SpareExtras;
use crate::sched::core::table::{Envelope, FreeCache, Task};
use crate::sched::observe::monitor::StepClock;
use crate::sched::observe::trace::{Kind, Ring};
use crate::sched::observe::watch::StepWatch;
use crate::sched::shared::{phase, Shared};
use crate::sched::timer::NEVER;
use crate::sched::Take;
use crate::sync::{spin_loop, thread};
use core::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod close;
mod contain;
mod forward;
mod signals;
mod step;
mod timers;
mod warm;

/// How many times in a row `runnext` may run before it must queue behind
/// the local deque: two processes messaging each other forever would
/// otherwise starve this worker's deque. 61, like the global check: a
/// message hand-off costs ~100 ns, so queued work waits at most ~6 µs.
const RUNNEXT_STREAK: u32 = 61;

/// Every how many global-queue checks (61 ticks each) a worker refreshes
/// the coarse clock: an `Instant` read costs tens of nanoseconds, several
/// bare `Continue` steps; every 61 ticks it would still be a visible part
/// of a bare step, every 488 ticks it is a negligible one, and stamps lag
/// by at most 488 steps.
const CLOCK_ROUNDS: u32 = 8;

/// How many free mailbox nodes a worker keeps, at least: most steps send
/// a few messages.
const NODE_CACHE: usize = 256;

/// The node cache's limit for a scheduler whose steps take at most
/// `events_per_step` events: sixteen steps' worth (16,384 nodes by
/// default, 1 MiB for small messages), so that a step that sends a burst
/// (a fan-out to 10,000 processes, a monitor churn) and the steps that
/// drain its replies recycle each other's nodes instead of freeing and
/// allocating them. A smaller cache (two steps' worth, or only 256) leaves
/// `malloc` and `free` a large share of a fan-out's and of a monitor
/// churn's cost. A bound, so it comes back after a burst.
fn node_cache(events_per_step: usize) -> usize {
    events_per_step.saturating_mul(16).max(NODE_CACHE)
}

/// How many parks in a row a worker withdraws from (the re-check saw work
/// it had not taken), yielding its thread after each, before it backs off
/// by parking with a timeout instead. 16, as the idle ladder's
/// `park_after`: a yield is ~1-5 µs, so a push half done for longer than
/// ~20-80 µs (its producer was preempted, not merely slow) is waited out
/// asleep.
const YIELDING_CANCELS: u32 = 16;

/// The first back-off park's timeout, doubled at each further withdrawal
/// [`BACK_OFF_DOUBLINGS`] times. 50 µs: a few of the yields it follows.
const BACK_OFF_MIN: Duration = Duration::from_micros(50);

/// How many times the back-off doubles: 50 µs << 5 = 1.6 ms, about one
/// scheduler time slice, the time a preempted producer waits for its CPU.
/// It bounds the extra latency of work no notify announces; work whose
/// publisher notifies (as a half-done push's does once linked) wakes the
/// worker at once.
const BACK_OFF_DOUBLINGS: u32 = 5;

/// A step as published for the long-step monitor.
struct Begun<'w> {
    pid: Pid,
    /// Its sequence number on this worker (odd).
    seq: u64,
    /// Where the monitor asks it to yield.
    preempt: &'w crate::sync::AtomicU64,
}

/// One worker thread's state.
pub(crate) struct Local<P: Process> {
    index: usize,
    shared: Arc<Shared<P>>,
    deque: Worker<Task<P>>,
    runnext: Option<Task<P>>,
    runnext_streak: u32,
    /// Processes that returned *continue* (or were woken while running),
    /// oldest first.
    yielded: VecDeque<Task<P>>,
    tick: u32,
    rng: u32,
    spinning: bool,
    /// Parks in a row withdrawn from because work was visible; reset when
    /// work is found (see `park`).
    cancelled: u32,
    events: Vec<Event<P>>,
    effects: Effects<P>,
    /// A step's monitor and link requests, those of them owed an answer,
    /// and the targets pushed to, while `apply_links` sends them (buffers
    /// kept between steps).
    requests: Vec<(Pid, crate::sched::links::Signal)>,
    owed: Vec<(Pid, crate::sched::links::Signal)>,
    pushed: Vec<Pid>,
    /// Slots this worker freed, for its own spawns.
    free: RefCell<FreeCache>,
    /// Mailbox nodes this worker's pops released, for its sends.
    nodes: NodeCache<Envelope<P>>,
    /// Extra parts of bodies this worker's closes gave back (`body.rs`).
    spare_extras: SpareExtras<P>,
    /// Numbers this worker's steps for the long-step monitor.
    clock: StepClock,
    /// This worker's trace ring, if tracing is on (see `trace.rs`).
    trace: Option<Box<Ring>>,
    /// Whether a long-step monitor runs (a copy of the configuration's
    /// flag, on a line the worker already has).
    monitored: bool,
    /// Buffers for timers taken out of a wheel, and their messages, until
    /// they are delivered (`worker/timers.rs`).
    fired: Vec<crate::sched::timer::wheel::Fired>,
    fired_messages: Vec<P::Message>,
    /// Whether the process being run released places of its bounded
    /// mailbox: then `run_task` checks for waiting senders after the
    /// holding's last RMW of the state word (`bound.rs`, `Room`).
    released: bool,
    /// The process `close` is about to close ended on its own shutdown
    /// cancel (an outside receiver's step): not a forced close.
    ended_on_cancel: bool,
    /// The timer tick a step's `apply_timers` read, and the loop turn
    /// (`tick`) it ran in: the next turn's poll of this worker's wheel uses
    /// it instead of reading the clock again; no later one does (unless
    /// `tick` wraps to the same turn first: still only late). Dropped by
    /// `close` (which runs user code after it). Older than the poll, so it
    /// can only make a timer fire later, never early (`poll_own_timers`).
    timer_tick: Option<(u32, u64)>,
}

impl<P: Process> Local<P> {
    pub(crate) fn new(index: usize, shared: Arc<Shared<P>>, deque: Worker<Task<P>>) -> Self {
        // Allocated here, before the worker runs: recording never allocates.
        let trace = (shared.trace.as_ref()).map(|t| Box::new(t.ring()));
        let monitored = shared.config.monitored;
        let nodes = NodeCache::with_limit(node_cache(shared.config.events_per_step));
        Local {
            index,
            shared,
            deque,
            runnext: None,
            runnext_streak: 0,
            yielded: VecDeque::new(),
            tick: 0,
            rng: (index as u32).wrapping_mul(0x9E37_79B9) | 1,
            spinning: false,
            cancelled: 0,
            events: Vec::new(),
            effects: Effects::new(),
            requests: Vec::new(),
            owed: Vec::new(),
            pushed: Vec::new(),
            free: RefCell::new(FreeCache::default()),
            nodes,
            spare_extras: SpareExtras::new(),
            clock: StepClock::new(),
            trace,
            monitored,
            fired: Vec::new(),
            fired_messages: Vec::new(),
            released: false,
            ended_on_cancel: false,
            timer_tick: None,
        }
    }

    /// The worker thread's body.
    pub(crate) fn run(mut self) {
        #[cfg(not(loom))]
        crate::mpsc::pool::take_spares_on_this_thread();
        let shared = Arc::clone(&self.shared);
        shared.hooks.thread_start(self.index);
        // Looked up once: the step loop publishes into it on every step.
        let watch = &shared.core.remotes[self.index].watch;
        // An internal panic is contained here, once for the whole loop
        // (`worker/contain.rs`): the loop is entered again after it.
        while let Err(panic) = self.contained(|local| local.work(&shared, watch)) {
            self.internal_panic(watch, panic);
        }
        if self.spinning {
            let _ = shared.core.idle.stop_spinning();
        }
        if self.trace.is_some() {
            self.hand_back_trace();
        }
        shared.hooks.thread_stop(self.index);
    }

    /// The worker loop, until the scheduler exits.
    fn work(&mut self, shared: &Shared<P>, watch: &StepWatch) {
        let config = &shared.config;
        // Looked up once: its `next` is read before every search.
        let own_wheel = &shared.timers.wheels[self.index];
        let mut idle_rounds = 0;
        loop {
            // One load and a branch unless this worker's wheel holds timers.
            let next = own_wheel.next();
            if next != NEVER {
                self.poll_own_timers(next);
            }
            if let Some(task) = self.find_local() {
                self.found_work();
                idle_rounds = 0;
                self.run_held(task, watch);
                continue;
            }
            if shared.core.phase() == phase::EXITING {
                return;
            }
            if !self.spinning {
                if !shared.core.idle.try_start_spinning() {
                    // Enough workers are searching already.
                    self.park();
                    continue;
                }
                self.spinning = true;
            }
            // A spinner fires due timers of every wheel: a worker in a long
            // step holds no one's timers hostage (`timer/mod.rs`).
            if self.poll_all_timers() > 0 {
                continue;
            }
            if let Some(task) = self.steal() {
                self.found_work();
                idle_rounds = 0;
                self.run_held(task, watch);
                continue;
            }
            idle_rounds += 1;
            self.counters().spins.add(1);
            self.record(Kind::Spin, 0, idle_rounds);
            if idle_rounds >= config.park_after {
                idle_rounds = 0;
                self.park();
            } else if idle_rounds >= config.spin_tight {
                thread::yield_now();
            } else {
                spin_loop();
            }
        }
    }

    /// Records the exit and leaves the ring with the tracer. Out of line:
    /// it runs once, and moving a ring inlined grows the worker loop.
    #[cold]
    #[inline(never)]
    fn hand_back_trace(&mut self) {
        if let Some(mut ring) = self.trace.take() {
            ring.record(Kind::Exit, 0, 0);
            if let Some(tracing) = &self.shared.trace {
                tracing.hand_back(self.index, *ring);
            }
        }
    }

    /// Records a trace event if tracing is on: one predictable branch if not.
    #[inline]
    fn record(&mut self, kind: Kind, a: u64, b: u32) {
        if let Some(ring) = &mut self.trace {
            ring.record(kind, a, b);
        }
    }

    fn counters(&self) -> &crate::sched::observe::stats::Counters {
        &self.shared.core.remotes[self.index].counters
    }

    fn found_work(&mut self) {
        self.cancelled = 0;
        if self.spinning {
            self.spinning = false;
            if self.shared.core.idle.stop_spinning() {
                // We were the last spinner: more work may wait behind what
                // we found, so make sure someone keeps looking.
                self.shared.core.idle.notify_one();
            }
        }
    }

    /// Sources 1 to 5 of the module docs.
    fn find_local(&mut self) -> Option<Task<P>> {
        self.tick = self.tick.wrapping_add(1);
        let interval = self.shared.config.global_queue_interval;
        let turn = self.tick % interval;
        if turn == 0 {
            let every = self
                .shared
                .config
                .global_queue_interval
                .saturating_mul(CLOCK_ROUNDS);
            if self.tick % every == 0 {
                // One OS clock read per 488 ticks keeps the slots' stamps
                // roughly current (see `clock.rs`).
                self.shared.core.clock.refresh();
            }
            // Both queues fed from outside get their turn, or a busy local
            // deque would starve remote wakeups as well as submissions.
            let outside = self.take_inject().or_else(|| self.take_global());
            if let Some(task) = outside.or_else(|| self.yielded.pop_front()) {
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
        if let Some(task) = self.runnext.take() {
            self.runnext_streak += 1;
            if self.runnext_streak <= RUNNEXT_STREAK {
                return Some(task);
            }
            self.yielded.push_back(task);
        }
        self.runnext_streak = 0;
        if let Some(task) = self.deque.pop() {
            return Some(task);
        }
        if let Some(task) = self.take_inject() {
            return Some(task);
        }
        if let Some(task) = self.take_global() {
            return Some(task);
        }
        let first = self.yielded.pop_front()?;
        let moved = self.yielded.len();
        for task in self.yielded.drain(..) {
            self.deque.push(task);
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
    fn take_oldest(&mut self) -> Option<Task<P>> {
        self.shared.core.remotes[self.index]
            .stealer
            .steal()
            .success()
    }

    fn take_inject(&mut self) -> Option<Task<P>> {
        let own = &self.shared.core.remotes[self.index].inject;
        match own.take_batch_into(&self.deque) {
            Take::Taken { first, moved } => {
                self.counters().inject_takes.add(1);
                self.record(Kind::InjectTake, 0, 1 + moved as u32);
                self.queued_locally(moved);
                Some(first)
            }
            _ => None,
        }
    }

    fn take_global(&mut self) -> Option<Task<P>> {
        match self.shared.core.global.take_batch_into(&self.deque) {
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
    fn queued_locally(&self, moved: usize) {
        if moved > 0 {
            self.shared.core.idle.notify_one();
        }
    }

    /// Source 6: other workers' deques and inject queues.
    fn steal(&mut self) -> Option<Task<P>> {
        let remotes = &self.shared.core.remotes;
        let n = remotes.len();
        if n == 1 {
            return None;
        }
        self.counters().steal_attempts.add(1);
        // xorshift32: a cheap random start spreads thieves over victims.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 17;
        self.rng ^= self.rng << 5;
        let start = self.rng as usize % n;
        for attempt in 0..2 {
            let mut retry = false;
            for victim in (start..start + n)
                .map(|i| i % n)
                .filter(|&i| i != self.index)
            {
                let before = self.deque.len();
                let stealer = &remotes[victim].stealer;
                match stealer.steal_half_into_with(&self.deque, warm::warm_stolen) {
                    Steal::Success(task) => {
                        let stolen = 1 + (self.deque.len() - before) as u64;
                        let counters = self.counters();
                        counters.steals.add(1);
                        counters.stolen.add(stolen);
                        self.record(Kind::Steal, victim as u64, stolen as u32);
                        return Some(task);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
                match remotes[victim].inject.take_batch_into(&self.deque) {
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
    fn park(&mut self) {
        let shared = Arc::clone(&self.shared);
        shared.hooks.park(self.index);
        shared.core.idle.prepare_park(self.index, self.spinning);
        self.spinning = false;
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
            let back_off = self.cancelled >= YIELDING_CANCELS;
            if !back_off || self.take_while_registered() {
                shared.core.idle.cancel_park(self.index);
                self.counters().parks_cancelled.add(1);
                self.cancelled = self.cancelled.saturating_add(1);
                thread::yield_now();
                shared.hooks.unpark(self.index);
                return;
            }
            let doublings = (self.cancelled - YIELDING_CANCELS).min(BACK_OFF_DOUBLINGS);
            self.cancelled = self.cancelled.saturating_add(1);
            timeout = Some(BACK_OFF_MIN * (1 << doublings));
        } else {
            // Every queue looked empty: a fresh streak after this park.
            self.cancelled = 0;
        }
        // Timers: read after the fence in `prepare_park`, so a timer whose
        // inserter's `notify_one` fence came first is seen here; one whose
        // fence came after sees us registered (the wake rule).
        let next = self.earliest_timer();
        if next != NEVER {
            let clock = &shared.timers.clock;
            let now = Instant::now();
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
    fn take_while_registered(&mut self) -> bool {
        let taken = self.take_inject().or_else(|| self.take_global());
        match taken.or_else(|| self.steal()) {
            Some(task) => {
                self.deque.push(task);
                true
            }
            None => false,
        }
    }
}
