//! The worker loop: find a process, step it, apply what the step asked for.
//!
//! Where a worker looks for work, in order (DESIGN.md):
//!
//! 1. every `global_queue_interval`-th tick (61), its inject queue, the
//!    global queue and the oldest *continue*d process first, so a busy local
//!    deque cannot starve remote wakeups, new submissions or yielding
//!    processes (Go's rule, extended to our other FIFO sources);
//! 2. `runnext`: the process this worker last woke by a message, so a
//!    request and its reply stay on one core (Go's `runnext`), at most
//!    [`RUNNEXT_STREAK`] times in a row;
//! 3. the local deque (LIFO);
//! 4. its own inject queue, then the global queue: take one and move up to
//!    16 more onto the local deque;
//! 5. processes that returned *continue*, oldest first: they go behind all
//!    of the above (like Go's `Gosched`);
//! 6. as a *spinner*, other workers: `steal_half_into` from each deque and a
//!    batch from each inject queue, starting at a random victim.
//!
//! With nothing found it spins (rounds below `spin_tight`: a CPU pause),
//! yields its thread (below `park_after`), then parks (see `idle.rs`).

use super::handler::Completer;
use super::monitor::{StepClock, StepWatch};
use super::shared::{phase, LocalSpawner, Shared};
use super::table::{Body, Envelope, FreeCache, Slot, Task};
use super::trace::{self, Kind, Ring};
use super::Take;
use crate::deque::{Steal, Worker};
use crate::mpsc::NodeCache;
use crate::process::state::{AfterStep, Park, Start, Wake};
use crate::process::{
    panic_message, Cancel, CommandError, Effects, Event, Outcome, Pid, Process, ProcessError,
    Status, StepOutput,
};
use crate::sync::{spin_loop, thread, Ordering};
use core::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// How many times in a row `runnext` may run before it must queue behind
/// the local deque: two processes messaging each other forever would
/// otherwise starve this worker's deque. 61, like the global check: a
/// message hand-off costs ~100 ns, so queued work waits at most ~6 µs.
const RUNNEXT_STREAK: u32 = 61;

/// Every how many global-queue checks (61 ticks each) a worker refreshes
/// the coarse clock: an `Instant` read costs ~30 ns here, which every 61
/// ticks added a measured 0.5 ns (4 %) to a bare `Continue` step; every
/// 488 ticks it is ~0.06 ns, and stamps lag by at most 488 steps.
const CLOCK_ROUNDS: u32 = 8;

/// How many free mailbox nodes a worker keeps. A step rarely sends more
/// than a few messages; 256 covers bursts (a fan-out) while holding at most
/// 256 nodes (a few KiB) per worker.
const NODE_CACHE: usize = 256;

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
    events: Vec<Event<P>>,
    effects: Effects<P>,
    /// Slots this worker freed, for its own spawns.
    free: RefCell<FreeCache>,
    /// Mailbox nodes this worker's pops released, for its sends.
    nodes: NodeCache<Envelope<P>>,
    /// Numbers this worker's steps for the long-step monitor.
    clock: StepClock,
    /// This worker's trace ring, if tracing is on (see `trace.rs`).
    trace: Option<Box<Ring>>,
    /// Whether a long-step monitor runs (a copy of the configuration's
    /// flag, on a line the worker already has).
    monitored: bool,
}

impl<P: Process> Local<P> {
    pub(crate) fn new(index: usize, shared: Arc<Shared<P>>, deque: Worker<Task<P>>) -> Self {
        // Allocated here, before the worker runs: recording never allocates.
        let trace = (shared.trace.as_ref()).map(|t| Box::new(t.ring()));
        let monitored = shared.config.monitored;
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
            events: Vec::new(),
            effects: Effects::new(),
            free: RefCell::new(FreeCache::default()),
            nodes: NodeCache::with_limit(NODE_CACHE),
            clock: StepClock::new(),
            trace,
            monitored,
        }
    }

    /// The worker thread's body.
    pub(crate) fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        if let Some(hook) = &shared.hooks.on_thread_start {
            hook(self.index);
        }
        let config = &shared.config;
        // Looked up once: the step loop publishes into it on every step.
        let watch = &shared.remotes[self.index].watch;
        let mut idle_rounds = 0;
        loop {
            if let Some(task) = self.find_local() {
                self.found_work();
                idle_rounds = 0;
                self.run_task(task, watch);
                continue;
            }
            if shared.phase() == phase::EXITING {
                break;
            }
            if !self.spinning {
                if !shared.idle.try_start_spinning() {
                    // Enough workers are searching already.
                    self.park();
                    continue;
                }
                self.spinning = true;
            }
            if let Some(task) = self.steal() {
                self.found_work();
                idle_rounds = 0;
                self.run_task(task, watch);
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
        if self.spinning {
            let _ = shared.idle.stop_spinning();
        }
        if self.trace.is_some() {
            self.hand_back_trace();
        }
        if let Some(hook) = &shared.hooks.on_thread_stop {
            hook(self.index);
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

    fn counters(&self) -> &super::stats::Counters {
        &self.shared.remotes[self.index].counters
    }

    fn found_work(&mut self) {
        if self.spinning {
            self.spinning = false;
            if self.shared.idle.stop_spinning() {
                // We were the last spinner: more work may wait behind what
                // we found, so make sure someone keeps looking.
                self.shared.idle.notify_one();
            }
        }
    }

    /// Sources 1 to 5 of the module docs.
    fn find_local(&mut self) -> Option<Task<P>> {
        self.tick = self.tick.wrapping_add(1);
        if self.tick % self.shared.config.global_queue_interval == 0 {
            let every = self
                .shared
                .config
                .global_queue_interval
                .saturating_mul(CLOCK_ROUNDS);
            if self.tick % every == 0 {
                // One OS clock read per 488 ticks keeps the slots' stamps
                // roughly current (see `clock.rs`).
                self.shared.clock.refresh();
            }
            // Both queues fed from outside get their turn, or a busy local
            // deque would starve remote wakeups as well as submissions.
            let outside = self.take_inject().or_else(|| self.take_global());
            if let Some(task) = outside.or_else(|| self.yielded.pop_front()) {
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

    fn take_inject(&mut self) -> Option<Task<P>> {
        let own = &self.shared.remotes[self.index].inject;
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
        match self.shared.global.take_batch_into(&self.deque) {
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
            self.shared.idle.notify_one();
        }
    }

    /// Source 6: other workers' deques and inject queues.
    fn steal(&mut self) -> Option<Task<P>> {
        let remotes = &self.shared.remotes;
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
                match remotes[victim].stealer.steal_half_into(&self.deque) {
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

    fn park(&mut self) {
        let shared = Arc::clone(&self.shared);
        shared.idle.prepare_park(self.index, self.spinning);
        self.spinning = false;
        if shared.has_visible_work() || shared.phase() == phase::EXITING {
            shared.idle.cancel_park(self.index);
            return;
        }
        self.counters().parks.add(1);
        self.record(Kind::Park, 0, 0);
        if let Some(hook) = &shared.hooks.on_park {
            hook(self.index);
        }
        shared.idle.park(self.index);
        shared.clock.refresh();
        self.counters().wakeups.add(1);
        self.record(Kind::Unpark, 0, 0);
        if let Some(hook) = &shared.hooks.on_unpark {
            hook(self.index);
        }
    }

    fn run_task(&mut self, task: Task<P>, watch: &StepWatch) {
        let slot = task.slot();
        // Release: pairs with the Acquire load in `Scheduler::processes`
        // (as `Slot::stamp`); remote wakeups read it Relaxed, as a hint.
        slot.last_worker.store(self.index, Ordering::Release);
        let start = slot.state.start();
        slot.stamp(self.shared.clock.now());
        let pid = slot.pid();
        // Published for the long-step monitor: the step, its handlers and
        // `close` are the embedder's code, any of which may run long.
        let monitored = self.monitored;
        let begun = Begun {
            pid,
            // Without a monitor nothing is published, and `preempt` stays 0,
            // which no (odd) sequence number matches.
            seq: if monitored {
                self.clock.begin(watch, pid)
            } else {
                1
            },
            preempt: &watch.preempt,
        };
        // SAFETY: `start` moved the process to Running: we hold it until
        // our next transition (end_step or complete, inside `step`/`close`).
        let body = unsafe { slot.body() };
        match start {
            _ if self.shared.phase() >= phase::FORCING => {
                self.close(slot, body, Err(ProcessError::Shutdown), false)
            }
            Start::Close => self.close(slot, body, Err(ProcessError::Terminated), false),
            Start::Step { last } => self.step(task, body, last, begun),
        }
        if monitored {
            self.clock.end(watch);
        }
    }

    fn step(&mut self, task: Task<P>, body: &mut Body<P>, last: bool, begun: Begun<'_>) {
        let slot = task.slot();
        let pid = begun.pid;
        self.collect_events(slot, body, pid);
        if last {
            self.events.push(Event::Cancel(Cancel::Terminate));
        }
        let process = body.process.as_mut().expect("a Ready process has its body");
        let spawner = LocalSpawner {
            shared: &self.shared,
            free: &self.free,
        };
        if let Some(ring) = &mut self.trace {
            ring.begin_step();
        }
        let mut out = StepOutput::new(pid, &mut self.effects, &spawner, begun.preempt, begun.seq);
        let events = &mut self.events;
        let result = catch_unwind(AssertUnwindSafe(|| process.step(events, &mut out)));
        let status = out.take_status();
        self.events.clear();
        slot.count_step();
        self.counters().steps.add(1);
        if let Some(ring) = &mut self.trace {
            let code = match (&result, &status) {
                (Ok(Ok(())), Status::Continue) => trace::status::CONTINUE,
                (Ok(Ok(())), Status::Wait) => trace::status::WAIT,
                (Ok(Ok(())), Status::Idle) => trace::status::IDLE,
                (Ok(Ok(())), Status::Done(_)) => trace::status::DONE,
                _ => trace::status::ERROR,
            };
            ring.end_step(pid, code);
        }

        let mut outcome: Option<Outcome<P>> = match result {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(Err(ProcessError::Failed(e))),
            Err(panic) => Some(Err(ProcessError::Panicked(panic_message(&*panic)))),
        };
        self.apply_spawns();
        self.apply_sends();
        let ending = outcome.is_some() || last || matches!(status, Status::Done(_));
        if ending {
            self.effects.commands.clear();
        } else if let Err(message) = self.dispatch(pid, body) {
            outcome = Some(Err(ProcessError::Panicked(message)));
        }

        let park = match (outcome, status) {
            (Some(outcome), _) => return self.close(slot, body, outcome, true),
            (None, _) if last => {
                return self.close(slot, body, Err(ProcessError::Terminated), true)
            }
            (None, Status::Done(output)) => return self.close(slot, body, Ok(output), true),
            (None, Status::Continue) => Park::Continue,
            (None, Status::Wait) => Park::Wait,
            (None, Status::Idle) => Park::Idle,
        };
        // Stamped before the transition, while we still hold the process:
        // after it, a notifier or another worker may own the slot.
        slot.stamp(self.shared.clock.now());
        match slot.state.end_step(park) {
            AfterStep::Requeue => self.yielded.push_back(task),
            AfterStep::Parked => {}
            AfterStep::Close => {
                let why = if self.shared.phase() >= phase::FORCING {
                    ProcessError::Shutdown
                } else {
                    ProcessError::Terminated
                };
                self.close(slot, body, Err(why), true);
            }
        }
    }

    /// Moves the process's queued events into the step buffer, dropping
    /// (and reporting) events meant for an earlier process in this slot and
    /// completions of tags the process is not waiting for.
    fn collect_events(&mut self, slot: &Slot<P>, body: &mut Body<P>, pid: Pid) {
        let mut drained = 0;
        // SAFETY: we hold the process (Running), which makes us the queue's
        // only consumer.
        while let Some(envelope) = unsafe { slot.events.pop_with(&mut self.nodes) } {
            drained += 1;
            if envelope.generation != pid.generation() {
                let stale = Pid::new(pid.index(), envelope.generation);
                self.shared.undelivered(stale, envelope.event);
                continue;
            }
            if let Event::Completion { tag, .. } = &envelope.event {
                match body.pending.iter().position(|t| t == tag) {
                    Some(at) => {
                        body.pending.swap_remove(at);
                    }
                    None => {
                        // Relaxed: a statistic.
                        self.shared.unknown_tags.fetch_add(1, Ordering::Relaxed);
                        self.shared.undelivered(pid, envelope.event);
                        continue;
                    }
                }
            }
            self.events.push(envelope.event);
        }
        // Once per step, for the process dump's queued figure.
        if self.shared.config.count_queued {
            slot.count_drained(drained);
        }
    }

    fn apply_spawns(&mut self) {
        let moved = self.effects.spawned.len();
        for pid in self.effects.spawned.drain(..) {
            let slot = self
                .shared
                .table
                .get(pid.index())
                .expect("a spawned process has a slot");
            if let Some(ring) = &mut self.trace {
                ring.record_effect(Kind::Spawn, pid.into_raw());
            }
            self.deque.push(Task::new(slot));
        }
        self.queued_locally(moved);
    }

    fn apply_sends(&mut self) {
        let mut displaced = 0;
        for (to, message) in self.effects.sends.drain(..) {
            let nodes = Some(&mut self.nodes);
            match self
                .shared
                .deliver(to, Event::Message(message), Wake::Message, nodes)
            {
                Ok(Some(task)) => {
                    if let Some(ring) = &mut self.trace {
                        ring.record_effect(Kind::WakeMessage, to.into_raw());
                    }
                    if let Some(old) = self.runnext.replace(task) {
                        self.deque.push(old);
                        displaced += 1;
                    }
                }
                Ok(None) => {}
                Err((_, event)) => self.shared.undelivered(to, event),
            }
        }
        self.queued_locally(displaced);
    }

    /// Hands each yielded command to its handler. A panicking handler ends
    /// the process (its message is returned).
    fn dispatch(&mut self, pid: Pid, body: &mut Body<P>) -> Result<(), String> {
        use crate::process::Command as _;
        let mut commands = core::mem::take(&mut self.effects.commands);
        let mut result = Ok(());
        for (tag, command) in commands.drain(..) {
            if result.is_err() {
                continue; // the process is ending: drop the rest
            }
            body.pending.push(tag);
            let kind = command.kind();
            match self.shared.handlers.get(kind) {
                None => {
                    let error = Event::Completion {
                        tag,
                        result: Err(CommandError::UnknownCommand(kind)),
                    };
                    // The process is Running: this only sets its wakeup bit.
                    let nodes = Some(&mut self.nodes);
                    let _ = self.shared.deliver(pid, error, Wake::Completion, nodes);
                }
                Some(handler) => {
                    let completer = Completer::new(Arc::clone(&self.shared), pid, tag);
                    if let Err(panic) =
                        catch_unwind(AssertUnwindSafe(|| handler(command, completer)))
                    {
                        result = Err(panic_message(&*panic));
                    }
                }
            }
        }
        self.effects.commands = commands; // keep the buffer
        result
    }

    /// Ends the process: `close`, report leftovers, publish the outcome,
    /// free the slot. `after_step`: right after a step of it (the trace
    /// stamps the completion with that step's end).
    fn close(
        &mut self,
        slot: &Slot<P>,
        body: &mut Body<P>,
        mut outcome: Outcome<P>,
        after_step: bool,
    ) {
        let pid = slot.pid();
        slot.state.complete();
        if let Some(mut process) = body.process.take() {
            let closed = catch_unwind(AssertUnwindSafe(move || {
                process.close();
                drop(process);
            }));
            if let Err(panic) = closed {
                if outcome.is_ok() {
                    outcome = Err(ProcessError::Panicked(panic_message(&*panic)));
                }
            }
        }
        let mut drained = 0;
        // SAFETY: we still hold the process (Complete, not yet freed): the
        // only consumer of its queue.
        while let Some(envelope) = unsafe { slot.events.pop_with(&mut self.nodes) } {
            drained += 1;
            let to = Pid::new(pid.index(), envelope.generation);
            self.shared.undelivered(to, envelope.event);
        }
        if self.shared.config.count_queued {
            slot.count_drained(drained);
        }
        body.pending.clear();
        let joiner = body.joiner.take();
        if matches!(outcome, Err(ProcessError::Shutdown)) {
            // Relaxed: read by `shutdown` after `live()` reached zero, which
            // the table's own counters order.
            self.shared.forced.fetch_add(1, Ordering::Relaxed);
        }
        self.shared
            .table
            .remove(slot, self.index, &mut self.free.borrow_mut());
        if let Some(ring) = &mut self.trace {
            if after_step {
                ring.record_effect(Kind::Complete, pid.into_raw());
            } else {
                ring.record(Kind::Complete, pid.into_raw(), 0);
            }
        }
        if let Some(hook) = &self.shared.hooks.on_complete {
            hook(pid, &outcome);
        }
        if let Some(joiner) = joiner {
            joiner.set(outcome);
        }
    }
}
