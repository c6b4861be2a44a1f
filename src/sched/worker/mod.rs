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
use crate::process::{Effects, Pid, Process};
use crate::sched::core::body::SpareExtras;
use crate::sched::core::table::{FreeCache, Task};
use crate::sched::observe::monitor::StepClock;
use crate::sched::observe::trace::Kind;
use crate::sched::observe::watch::StepWatch;
use crate::sched::shared::{phase, Shared};
use crate::sched::timer::NEVER;
use crate::sched::Take;
use crate::sync::{spin_loop, thread};
use core::cell::RefCell;
use parts::{LinkBuffers, Observing, Parking, Queues, Scratch, TimerBuffers};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

mod calls;
mod close;
mod contain;
mod effects;
mod find;
mod forward;
mod park;
mod parts;
mod receive;
mod signals;
mod step;
mod timers;
mod turn;
mod warm;

pub(crate) use turn::Turn;

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

/// One worker thread's state: who it is, the shared state, and its own
/// part of each room (`parts.rs`).
pub(crate) struct Local<P: Process> {
    index: usize,
    shared: Arc<Shared<P>>,
    /// Its run queues and where its search stands (`find.rs`).
    queues: Queues<P>,
    /// Spinning and parking (`park.rs`).
    parking: Parking,
    /// A step's buffers and caches, kept between steps (`step.rs`).
    scratch: Scratch<P>,
    /// Monitor and link requests on their way (`signals.rs`).
    links: LinkBuffers,
    /// Timers taken out of a wheel (`timers.rs`).
    timers: TimerBuffers<P::Message>,
    /// The long-step monitor's numbering and the trace ring.
    observe: Observing,
}

impl<P: Process> Local<P> {
    pub(crate) fn new(index: usize, shared: Arc<Shared<P>>, deque: Worker<Task<P>>) -> Self {
        // Allocated here, before the worker runs: recording never allocates.
        let trace = (shared.trace.as_ref()).map(|t| Box::new(t.ring()));
        let monitored = shared.config.monitored;
        let timed = shared.config.record_latency || shared.hooks.per_step();
        let count_kinds = shared.config.count_kinds;
        let nodes = NodeCache::with_limit(node_cache(shared.config.events_per_step));
        Local {
            index,
            shared,
            queues: Queues {
                deque,
                runnext: None,
                runnext_streak: 0,
                yielded: VecDeque::new(),
                tick: 0,
                rng: (index as u32).wrapping_mul(0x9E37_79B9) | 1,
            },
            parking: Parking {
                spinning: false,
                cancelled: 0,
            },
            scratch: Scratch {
                events: Vec::new(),
                effects: Effects::for_worker(index),
                free: RefCell::new(FreeCache::default()),
                nodes,
                spare_extras: SpareExtras::new(),
                released: false,
                ended_on_cancel: false,
            },
            links: LinkBuffers {
                requests: Vec::new(),
                exits: Vec::new(),
                owed: Vec::new(),
                pushed: Vec::new(),
            },
            timers: TimerBuffers {
                fired: Vec::new(),
                fired_messages: Vec::new(),
                timer_tick: None,
            },
            observe: Observing {
                clock: StepClock::new(),
                per_step: trace.is_some() || timed || count_kinds,
                trace,
                monitored,
                timed,
                count_kinds,
            },
        }
    }

    /// The worker thread's body.
    pub(crate) fn run(mut self) {
        // Blocking waits refuse this thread from now on (`outside/on_worker.rs`).
        crate::sched::outside::on_worker::mark();
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
        if self.parking.spinning {
            let _ = shared.core.idle.stop_spinning();
        }
        if self.observe.trace.is_some() {
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
            if !self.parking.spinning {
                if !shared.core.idle.try_start_spinning() {
                    // Enough workers are searching already.
                    self.park();
                    continue;
                }
                self.parking.spinning = true;
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
        if let Some(mut ring) = self.observe.trace.take() {
            ring.record(Kind::Exit, 0, 0);
            if let Some(tracing) = &self.shared.trace {
                tracing.hand_back(self.index, *ring);
            }
        }
    }

    /// Records a trace event if tracing is on: one predictable branch if not.
    #[inline]
    fn record(&mut self, kind: Kind, a: u64, b: u32) {
        if let Some(ring) = &mut self.observe.trace {
            ring.record(kind, a, b);
        }
    }

    fn counters(&self) -> &crate::sched::observe::stats::Counters {
        &self.shared.core.remotes[self.index].counters
    }

    fn found_work(&mut self) {
        self.parking.cancelled = 0;
        if self.parking.spinning {
            self.parking.spinning = false;
            if self.shared.core.idle.stop_spinning() {
                // We were the last spinner: more work may wait behind what
                // we found, so make sure someone keeps looking.
                self.shared.core.idle.notify_one();
            }
        }
    }
}
