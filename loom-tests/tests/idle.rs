//! loom models of the park/wake protocol (`src/sched/core/idle.rs`, README in
//! `src/sched/`): work published while a worker goes to sleep is never left
//! with every worker asleep.
//!
//! Run (about 36 s in release; the two-worker models below take 5 to 18 s
//! each):
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test idle`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{GlobalQueue, Idle, Take};

/// The worker side: register, re-check, and sleep only if nothing is there.
/// Returns once it has seen the work.
fn worker(idle: &Idle, work: &AtomicBool, spinning: bool) {
    let mut spinning = spinning;
    loop {
        // Relaxed is enough for the model's queue: the protocol's fences
        // order it (a real queue's own Acquire only adds to that).
        if work.load(Ordering::Relaxed) {
            if spinning {
                let _ = idle.stop_spinning();
            }
            return;
        }
        idle.prepare_park(0, spinning);
        spinning = false;
        if work.load(Ordering::Relaxed) {
            idle.cancel_park(0);
            return;
        }
        idle.park(0);
    }
}

/// The publisher side, on a thread of its own: publish the work, then wake
/// a worker if none is spinning.
fn publish(idle: &Arc<Idle>, work: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let (idle, work) = (idle.clone(), work.clone());
    thread::spawn(move || {
        work.store(true, Ordering::Relaxed);
        idle.notify_one();
    })
}

/// `publishers` threads publish work while one worker (of `workers`; it
/// starts out registered as spinning if `spinning`) looks for it: the
/// worker must find it (loom reports a deadlock if it parks for good), and
/// the idle counts must end balanced.
fn publishers_vs_worker(workers: usize, publishers: usize, spinning: bool) {
    loom::model(move || {
        let idle = Arc::new(Idle::new(workers));
        if spinning {
            assert!(idle.try_start_spinning());
        }
        let work = Arc::new(AtomicBool::new(false));
        let publishers: Vec<_> = (0..publishers).map(|_| publish(&idle, &work)).collect();
        worker(&idle, &work, spinning);
        for p in publishers {
            p.join().unwrap();
        }
        assert_eq!(idle.counts(), (0, 0));
    });
}

/// A push racing a worker going to sleep is never lost.
#[test]
fn park_races_with_push() {
    publishers_vs_worker(1, 1, false);
}

/// The publisher sees a spinner and does not wake anyone; the spinner then
/// gives up and goes to sleep: its own re-check must find the work.
#[test]
fn spinner_going_to_sleep_is_not_skipped() {
    publishers_vs_worker(2, 1, true);
}

/// Two publishers and one sleeper: the sleeper is woken (once or twice,
/// harmlessly) and the bookkeeping ends balanced.
#[test]
fn two_publishers_one_sleeper() {
    publishers_vs_worker(1, 2, false);
}

// ---------------------------------------------------------------------------
// Two workers and a real `GlobalQueue`
// ---------------------------------------------------------------------------
//
// The models above stand one worker against a flag. The ones below run two
// worker threads through the search loop of `src/sched/worker/mod.rs` (`run`,
// `find_local`, `park`) against publishers that push into a real
// `GlobalQueue` and then `notify_one`, as `Scheduler::submit` does. Because
// each publisher is a loom thread, loom also preempts it between the swap
// and the link of its push (docs/ARCHITECTURE.md, trap 4: a push half
// done): then
// `is_empty()` says "work" while a take says `Inconsistent`, and the worker
// must neither sleep for good nor spin without letting the producer run.
//
// Nothing ends a worker but the phase, as in the scheduler: the worker that
// runs the last item plays `shutdown` (phase EXITING, then `wake_all`). So if
// work is ever left with both workers asleep, no thread can move and loom
// reports a deadlock.
//
// One fairness assumption is added, because loom's scheduler is not fair:
// after a `yield_now` it may run *any* other thread without counting a
// preemption, so two workers yielding to each other while a publisher sits
// between its swap and its link can starve that publisher forever (the
// model then exceeds loom's branch limit, a livelock the OS would never
// produce: it runs the preempted producer). So each worker yields at most
// `YIELDS` times while publishers are still at work; its next back-off
// instead waits for every publisher to finish, which is what the OS's
// fairness guarantees eventually happens. After that the worker yields
// freely (nothing can be mid-link any more). Every interleaving in which
// the workers back off up to `YIELDS` times each is still explored.

use loom::sync::atomic::AtomicUsize;
use loom::sync::{Condvar, Mutex};

/// `phase::EXITING` in `src/sched/shared.rs`.
const EXITING: usize = 3;

/// Idle rounds before a spinner parks (the scheduler's `park_after`,
/// default 16; two keep the model small and still cover "spin, yield, park").
const PARK_AFTER: u32 = 2;

/// How often a worker yields while publishers are at work before it waits
/// for them (the fairness assumption above).
const YIELDS: u32 = 2;

/// What `Shared` holds for the idle protocol: the global queue, the idle
/// bookkeeping, the phase; plus the model's own record of what ran.
struct World {
    idle: Idle,
    global: GlobalQueue<u32>,
    phase: AtomicUsize,
    /// Bit `i` set: item `i` ran. A second run of an item fails the model.
    ran: AtomicUsize,
    /// How many items the publishers push in all.
    items: u32,
    /// Publishers still pushing, and where a worker waits for them (the
    /// fairness assumption; not part of the protocol).
    publishing: Mutex<usize>,
    published: Condvar,
}

impl World {
    fn new(workers: usize, items: u32, publishers: usize) -> Arc<World> {
        Arc::new(World {
            idle: Idle::new(workers),
            global: GlobalQueue::new(),
            phase: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
            items,
            publishing: Mutex::new(publishers),
            published: Condvar::new(),
        })
    }

    /// `Shared::phase`.
    fn phase(&self) -> usize {
        // Acquire, as `Shared::phase` (pairs with `set_phase`).
        self.phase.load(Ordering::Acquire)
    }

    /// `Shared::has_visible_work`, with the global queue the only queue.
    fn has_visible_work(&self) -> bool {
        !self.global.is_empty()
    }

    /// Runs `item`; the run of the last item shuts the model down as
    /// `Scheduler::shutdown` does: phase EXITING, then wake every sleeper.
    fn run(&self, item: u32) {
        // Relaxed: the model's own bookkeeping; the RMW makes a double run
        // visible whatever the order.
        let before = self.ran.fetch_or(1 << item, Ordering::Relaxed);
        assert_eq!(before & (1 << item), 0, "item {item} ran twice");
        if (before | 1 << item).count_ones() == self.items {
            // AcqRel, as `Shared::set_phase`.
            self.phase.fetch_max(EXITING, Ordering::AcqRel);
            self.idle.wake_all();
        }
    }
}

/// A publisher (`Scheduler::submit`): push, then wake a sleeper if no one
/// spins.
fn push_and_notify(world: &Arc<World>, items: &'static [u32]) -> thread::JoinHandle<()> {
    let world = world.clone();
    thread::spawn(move || {
        for &item in items {
            world.global.push(item);
            world.idle.notify_one();
        }
        *world.publishing.lock().unwrap() -= 1;
        world.published.notify_all();
    })
}

/// One worker thread: the loop of `Local::run` with the global queue as its
/// only source (no deque, inject queue or runnext to look at, nothing to
/// steal), until the phase says EXITING.
struct Searcher {
    world: Arc<World>,
    index: usize,
    spinning: bool,
    /// Back-offs so far (the fairness assumption).
    yields: u32,
}

impl Searcher {
    fn spawn(world: &Arc<World>, index: usize, spinning: bool) -> thread::JoinHandle<()> {
        let world = world.clone();
        thread::spawn(move || {
            Searcher {
                world,
                index,
                spinning,
                yields: 0,
            }
            .run()
        })
    }

    /// `Local::run`.
    fn run(mut self) {
        let mut idle_rounds = 0;
        loop {
            if self.take_global() {
                self.found_work();
                idle_rounds = 0;
                continue;
            }
            if self.world.phase() == EXITING {
                break;
            }
            if !self.spinning {
                if !self.world.idle.try_start_spinning() {
                    self.park();
                    continue;
                }
                self.spinning = true;
            }
            // `steal` finds nothing: the model has no deques.
            idle_rounds += 1;
            if idle_rounds >= PARK_AFTER {
                idle_rounds = 0;
                self.park();
            } else {
                // `spin_loop` / `thread::yield_now`.
                self.back_off();
            }
        }
        if self.spinning {
            let _ = self.world.idle.stop_spinning();
        }
    }

    /// `Local::take_global` as `find_local` uses it: only `Taken` is work;
    /// `Empty`, `Busy` and `Inconsistent` (a push mid-link) are all "none".
    /// The batch is run here rather than queued locally (nothing steals in
    /// the model).
    fn take_global(&mut self) -> bool {
        let mut batch = Vec::new();
        match self.world.global.take_batch(|item| batch.push(item)) {
            Take::Taken { first, .. } => {
                self.world.run(first);
                batch.into_iter().for_each(|item| self.world.run(item));
                true
            }
            Take::Empty | Take::Busy | Take::Inconsistent => false,
        }
    }

    /// `Local::found_work`.
    fn found_work(&mut self) {
        if self.spinning {
            self.spinning = false;
            if self.world.idle.stop_spinning() {
                self.world.idle.notify_one();
            }
        }
    }

    /// A yield, so that other threads (a preempted publisher) run; or, past
    /// `YIELDS` while publishers are at work, a wait until they are done
    /// (the fairness assumption in the notes above).
    fn back_off(&mut self) {
        if self.yields < YIELDS {
            self.yields += 1;
            thread::yield_now();
            return;
        }
        let mut publishing = self.world.publishing.lock().unwrap();
        if *publishing == 0 {
            drop(publishing);
            thread::yield_now();
            return;
        }
        while *publishing > 0 {
            publishing = self.world.published.wait(publishing).unwrap();
        }
    }

    /// `Local::park`, with its back-off (docs/ARCHITECTURE.md, trap 12: a
    /// transient state is not work):
    /// a park cancelled because a queue *looks* non-empty (a push mid-link
    /// that no take can get yet) yields before searching again, so the
    /// preempted producer can run. Without that yield a worker that may not
    /// spin loops `park` -> `cancel_park` -> search with no back-off, and
    /// loom, which only switches at a yield or block once its preemption
    /// budget is spent, exceeds its branch limit
    /// (`spinner_and_sleeper_race_a_half_done_push` fails so).
    fn park(&mut self) {
        let idle = &self.world.idle;
        idle.prepare_park(self.index, self.spinning);
        self.spinning = false;
        if self.world.has_visible_work() || self.world.phase() == EXITING {
            idle.cancel_park(self.index);
            self.back_off();
            return;
        }
        idle.park(self.index);
    }
}

/// Starts `workers.len()` worker threads (worker `i` registered as spinning
/// if `workers[i]`) on an `Idle` sized for `slots` workers, and one
/// publisher thread per entry of `publishers`; every item must run exactly
/// once, every thread end, and the idle counts end balanced.
fn searchers_vs_publishers(slots: usize, workers: &[bool], publishers: &'static [&'static [u32]]) {
    searchers_vs_publishers_bounded(slots, workers, publishers, None);
}

/// [`searchers_vs_publishers`] exploring at most `max_preemptions`
/// preemptions per execution (or `LOOM_MAX_PREEMPTIONS` if lower).
fn searchers_vs_publishers_bounded(
    slots: usize,
    workers: &[bool],
    publishers: &'static [&'static [u32]],
    max_preemptions: Option<usize>,
) {
    let workers = workers.to_vec();
    // `Builder::new` reads the LOOM_* variables.
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = match (builder.preemption_bound, max_preemptions) {
        (Some(env), Some(max)) => Some(env.min(max)),
        (env, max) => env.or(max),
    };
    builder.check(move || {
        let items = publishers.iter().map(|p| p.len() as u32).sum();
        let world = World::new(slots, items, publishers.len());
        for _ in workers.iter().filter(|&&spinning| spinning) {
            assert!(world.idle.try_start_spinning());
        }
        let pushers: Vec<_> = publishers
            .iter()
            .map(|items| push_and_notify(&world, items))
            .collect();
        let mut searchers: Vec<_> = (workers.iter().enumerate().skip(1))
            .map(|(index, &spinning)| Searcher::spawn(&world, index, spinning))
            .collect();
        // Worker 0 runs on the model's main thread: one thread fewer.
        Searcher {
            world: world.clone(),
            index: 0,
            spinning: workers[0],
            yields: 0,
        }
        .run();
        pushers.into_iter().for_each(|p| p.join().unwrap());
        searchers.drain(..).for_each(|s| s.join().unwrap());
        assert_eq!(world.ran.load(Ordering::Relaxed), (1 << items) - 1);
        assert_eq!(world.idle.counts(), (0, 0));
    });
}

/// Two spinners (four workers' worth of `Idle`, so both may spin) and one
/// push, which loom also preempts between its swap and its link: both see
/// "not empty" but take `Inconsistent`; they keep spinning, yield, park,
/// cancel the park (the queue looks non-empty) and retry until the link
/// lands. The item runs once and both workers end.
///
/// Kills: a park re-check that takes instead of looking (`Inconsistent`
/// counted as empty; deadlock: both asleep, the item queued).
#[test]
fn two_spinners_race_a_half_done_push() {
    searchers_vs_publishers(4, &[true, true], &[&[0]]);
}

/// One worker spins, the other may not (two workers allow one spinner) and
/// goes to park; one push, possibly half done when either looks. The
/// sleeper's re-check after its fence sees the half-done push as work and
/// does not sleep; the publisher's `notify_one` sees the spinner and wakes
/// no one, so the spinner (or the sleeper's retry) must take it.
///
/// Kills: the park re-check counting `Inconsistent` as empty (deadlock);
/// the yield after a park cancelled for a half-done push (`worker.rs`)
/// removed (loom's branch limit: the non-spinning worker loops `park`,
/// `cancel_park` while the producer cannot run).
#[test]
fn spinner_and_sleeper_race_a_half_done_push() {
    searchers_vs_publishers(2, &[true, false], &[&[0]]);
}

/// Two workers that both start out busy (neither spinning) run out of work
/// at once and race a publisher whose push may be half done: they race for
/// the one spinner place, the loser goes to park. The item runs, and no one
/// is left asleep with it queued (loom's deadlock check).
///
/// Kills: the `fence(SeqCst)` in `Idle::prepare_park` removed, or the one
/// in `Idle::notify_one` (deadlock: the re-check misses the push and the
/// publisher misses the sleeper); the park re-check counting `Inconsistent`
/// as empty (deadlock); the back-off after a cancelled park removed
/// (branch limit, as above).
#[test]
fn two_idle_workers_race_for_the_spinner_place_and_a_push() {
    searchers_vs_publishers(2, &[false, false], &[&[0]]);
}

/// One worker spins, the other goes to park, and one publisher pushes two
/// items: the second push can be half done while the first is taken, so a
/// take returns the first and the next says `Inconsistent`. Both items run.
/// At most 2 preemptions (not the CI's 3): at 3 the model runs for more
/// than 7 minutes; at 2 it takes about 7 seconds.
///
/// Kills: either `fence(SeqCst)` of the Dekker pair removed (deadlock); the
/// back-off after a cancelled park removed (branch limit).
#[test]
fn spinner_and_sleeper_race_two_pushes() {
    searchers_vs_publishers_bounded(2, &[true, false], &[&[0, 1]], Some(2));
}
