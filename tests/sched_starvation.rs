//! Proves that a process queued in a worker's own deque is not starved by
//! the worker's LIFO order while its steps keep pushing new work
//! (docs/ARCHITECTURE.md, trap 13: LIFO starves the bottom): a chain of spawns,
//! each link spawning the next, keeps the
//! bottom of the deque busy forever, and a process above it must still run
//! within `61 * (d + 1)` steps of that worker, `d` being the number of
//! processes above it.
//!
//! Every assertion is a count of chain links (steps), never a duration: a
//! probe records how far its chain had advanced when it ran. Before the
//! fix a probe ran only when its chain ended (the whole chain: 200,000
//! links); with it, a probe at the top runs within 61 links.
//!
//! ```text
//! cargo test --test sched_starvation
//! ```

mod common;
use common::wait_until;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Process, StepOutput};
use stepsched::sched::Scheduler;

/// Links per chain when nothing stops it earlier: what a starved probe
/// waits for.
const LINKS: u64 = 200_000;

/// The default `global_queue_interval`: the own deque's oldest process
/// gets a turn once in this many ticks.
const INTERVAL: u64 = 61;

/// Not set: the probe has not run yet.
const NOT_RUN: u64 = u64::MAX;

/// One test at a time in this file, so that two workers have the two cores
/// of a small machine to themselves.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the processes of one test share with it.
struct Board {
    /// Links run so far, per chain.
    links: [AtomicU64; 2],
    /// Per probe: how many links its chain had run past the probe's spawn
    /// when the probe ran (`NOT_RUN` until then).
    probe_saw: Vec<AtomicU64>,
    /// Per probe: whether it ran on the worker thread that spawned it
    /// (rather than being stolen).
    probe_at_home: Vec<AtomicBool>,
    /// Per probe: the most links either chain had run when it ran.
    probe_max_links: Vec<AtomicU64>,
    /// Whether every chain is running (so that no worker is idle and could
    /// steal a probe, which would hide starvation): set by the test's setup
    /// or by the chains.
    both_running: AtomicBool,
    /// Chains stop spawning once this is set (every probe ran).
    stop: AtomicBool,
}

impl Board {
    fn new(probes: usize) -> Arc<Self> {
        Arc::new(Board {
            links: [AtomicU64::new(0), AtomicU64::new(0)],
            probe_saw: (0..probes).map(|_| AtomicU64::new(NOT_RUN)).collect(),
            probe_at_home: (0..probes).map(|_| AtomicBool::new(false)).collect(),
            probe_max_links: (0..probes).map(|_| AtomicU64::new(0)).collect(),
            both_running: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        })
    }

    fn saw(&self) -> Vec<u64> {
        self.probe_saw
            .iter()
            .map(|s| s.load(Ordering::SeqCst))
            .collect()
    }
}

enum Role {
    /// Spawns probes `0..probes` (onto its worker's deque, oldest first),
    /// then the first link of chain 0: the probes sit above the chain.
    Starter { probes: usize },
    /// A link of chain `chain`: counts itself and spawns the next, until
    /// `LINKS` or `Board::stop`. If `probe` is set, the first link to find
    /// both chains running spawns that probe first (then no more).
    Link { chain: usize, probe: Option<usize> },
    /// Records in `probe_saw[index]` how many links `chain` has run since
    /// `spawned_at`, and whether it runs on `home`, the thread that spawned
    /// it.
    Probe {
        index: usize,
        chain: usize,
        spawned_at: u64,
        home: ThreadId,
    },
}

struct Job {
    role: Role,
    board: Arc<Board>,
}

impl Process for Job {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let board = &self.board;
        match self.role {
            Role::Starter { probes } => {
                for index in 0..probes {
                    let probe = Role::Probe {
                        index,
                        chain: 0,
                        spawned_at: 0,
                        home: thread::current().id(),
                    };
                    out.spawn(job(probe, board), "probe", ())
                        .map_err(|e| e.to_string())?;
                }
                let link = Role::Link {
                    chain: 0,
                    probe: None,
                };
                out.spawn(job(link, board), "link", ())
                    .map_err(|e| e.to_string())?;
            }
            Role::Link { chain, probe } => {
                let done = board.links[chain].fetch_add(1, Ordering::SeqCst) + 1;
                let mut next_probe = probe;
                if let Some(index) = probe {
                    let other = board.links[1 - chain].load(Ordering::SeqCst);
                    // Both chains well under way: each worker is busy with
                    // its own, so neither is idle to steal the other's probe.
                    if done >= 1_000 && other >= 1_000 {
                        board.both_running.store(true, Ordering::SeqCst);
                        let probe = Role::Probe {
                            index,
                            chain,
                            spawned_at: done,
                            home: thread::current().id(),
                        };
                        out.spawn(job(probe, board), "probe", ())
                            .map_err(|e| e.to_string())?;
                        next_probe = None;
                    }
                }
                if done < LINKS && !board.stop.load(Ordering::SeqCst) {
                    let link = Role::Link {
                        chain,
                        probe: next_probe,
                    };
                    out.spawn(job(link, board), "link", ())
                        .map_err(|e| e.to_string())?;
                }
            }
            Role::Probe {
                index,
                chain,
                spawned_at,
                home,
            } => {
                let at_home = thread::current().id() == home;
                board.probe_at_home[index].store(at_home, Ordering::SeqCst);
                let max = board.links.iter().map(|l| l.load(Ordering::SeqCst)).max();
                board.probe_max_links[index].store(max.unwrap_or(0), Ordering::SeqCst);
                let now = board.links[chain].load(Ordering::SeqCst);
                board.probe_saw[index].store(now - spawned_at, Ordering::SeqCst);
                if board.saw().iter().all(|&s| s != NOT_RUN) {
                    board.stop.store(true, Ordering::SeqCst);
                }
            }
        }
        out.done(());
        Ok(())
    }
}

fn job(role: Role, board: &Arc<Board>) -> Job {
    Job {
        role,
        board: Arc::clone(board),
    }
}

fn scheduler(workers: usize) -> Scheduler<Job> {
    Scheduler::<Job>::builder()
        .workers(workers)
        .build()
        .unwrap()
}

/// Waits (bounded by `common::wait_until`, to turn a hang into a failure)
/// until the scheduler has no live process left: every chain ended or
/// stopped.
fn wait_idle(scheduler: &Scheduler<Job>, board: &Board) {
    let what = format!("the processes to finish (probes saw {:?})", board.saw());
    wait_until(&what, || scheduler.stats().live == 0);
}

/// LIFO starving the bottom (docs/ARCHITECTURE.md, trap 13), scaled down:
/// one worker; a process spawns a probe, then a chain of 200,000 links,
/// each spawning the next. The probe sits at the top of the worker's deque,
/// the chain's link always below it.
///
/// Without the own-deque fairness turn (every 61st tick takes the oldest)
/// the probe would see all 200,000 links: it would run only when the chain
/// ended.
#[test]
fn a_process_above_a_chain_of_spawns_runs_within_61_links_on_one_worker() {
    let _turn = serial();
    let board = Board::new(1);
    let scheduler = scheduler(1);
    scheduler
        .submit(job(Role::Starter { probes: 1 }, &board), "start", ())
        .unwrap();
    wait_idle(&scheduler, &board);
    scheduler.shutdown(Duration::from_secs(1));
    let saw = board.saw()[0];
    eprintln!("the probe saw {saw} links");
    assert_ne!(saw, NOT_RUN, "the probe ran");
    assert!(
        saw <= INTERVAL,
        "the probe waited for {saw} links of the chain above which it was queued \
         (bound: {INTERVAL})"
    );
}

/// The stated bound, process by process: 100 probes queued above a chain on
/// one worker; the probe with `d` probes above it runs before the chain has
/// run `61 * (d + 1)` links. (One worker and nothing else queued: no thief
/// and no other source can take a turn, so the count is exact.)
#[test]
fn a_process_with_d_processes_above_it_runs_within_61_times_d_plus_1_steps() {
    const PROBES: usize = 100;
    let _turn = serial();
    let board = Board::new(PROBES);
    let scheduler = scheduler(1);
    scheduler
        .submit(job(Role::Starter { probes: PROBES }, &board), "start", ())
        .unwrap();
    wait_idle(&scheduler, &board);
    scheduler.shutdown(Duration::from_secs(1));
    let saw = board.saw();
    eprintln!("probes by depth saw {saw:?} links");
    for (depth, &links) in saw.iter().enumerate() {
        assert_ne!(links, NOT_RUN, "probe {depth} ran");
        let bound = INTERVAL * (depth as u64 + 1);
        assert!(
            links <= bound,
            "probe {depth} (with {depth} above it) waited {links} links, over \
             {bound}; all: {saw:?}"
        );
    }
}

/// Two workers, each running its own chain; once both chains are under way,
/// each spawns a probe above its next link. Neither worker is ever idle, so
/// no thief rescues a probe: each must get its own worker's turn.
///
/// Every probe must run while both chains still go on (counted: neither
/// had reached `LINKS`). A probe that ran on the worker that spawned it
/// must also have seen at most `61 * 3` links of its chain: on a loaded
/// machine one worker thread may start late, both chains then share the
/// other for a while, and a probe may have the other chain's link and
/// probe above it (`d <= 2`); its own chain's next link is below it, so
/// that chain runs nowhere else while the probe waits (a thief would take
/// the older probe first). A probe stolen by a late-starting worker waits
/// for that worker's steps instead, which the chain's count does not
/// measure, so for it only the first check holds.
///
/// Failed before the own-deque fairness turn: each probe ran only when a
/// chain ended (~37,000 to ~199,000 links after its spawn, when the other
/// worker, out of work, stole it).
#[test]
fn probes_above_chains_on_two_busy_workers_run_within_183_links() {
    let _turn = serial();
    let board = Board::new(2);
    let scheduler = scheduler(2);
    for chain in 0..2 {
        let link = Role::Link {
            chain,
            probe: Some(chain),
        };
        scheduler.submit(job(link, &board), "link", ()).unwrap();
    }
    wait_idle(&scheduler, &board);
    scheduler.shutdown(Duration::from_secs(1));
    assert!(board.both_running.load(Ordering::SeqCst), "both chains ran");
    let saw = board.saw();
    eprintln!("the probes saw {saw:?} links of their chains");
    for (chain, &links) in saw.iter().enumerate() {
        assert_ne!(links, NOT_RUN, "probe {chain} ran");
        let max = board.probe_max_links[chain].load(Ordering::SeqCst);
        assert!(
            max < LINKS,
            "probe {chain} ran only once a chain had ended; both saw {saw:?}"
        );
        if board.probe_at_home[chain].load(Ordering::SeqCst) {
            // At most two processes above it (see the doc comment).
            assert!(
                links <= 3 * INTERVAL,
                "probe {chain} waited {links} links of its chain; both: {saw:?}"
            );
        }
    }
}
