//! Monitors and links, stepsched against tokio:
//!
//! - `pair`: the cost of one `monitor` + `demonitor` pair, made by one
//!   process against an idle one, 1,000 pairs per step, as the BEAM side
//!   loops. A pair made in one step cancels out before it is sent
//!   (`apply_links`), so the target is not woken; `apart`, pairs
//!   interleaved on two targets so that none cancels out, makes every
//!   request go out: each is a node pushed into the target's mailbox and
//!   taken out by the target, which registers it; a step's requests to
//!   one target share one notify (`send_requests`), so each target is
//!   woken once a step (much as a BEAM process, once scheduled, handles
//!   the signals that reached it meanwhile together). tokio has no
//!   monitors; its nearest registration is a `watch` channel the target
//!   holds: `subscribe()` + drop.
//! - `down`: from a process's last step to its watcher's step that sees the
//!   `Down` (p50, p99 and the mean of p10-p90 over `samples`): the watcher
//!   spawns the target and monitors it in the same step, the target stamps
//!   the clock and finishes, and the watcher reads the clock as its step
//!   matches the `Down`. tokio: a watcher task spawns the target task,
//!   awaits its `JoinHandle` and reads the clock as the `await` returns
//!   (Go: as its receive returns). Each window holds the cost of one clock
//!   read (the gap between two back-to-back reads: the end of the first
//!   read and the start of the second), printed beside them, and the
//!   middle means net of it: what the scheduler itself took. The Go and
//!   BEAM programs print the same three figures for their own clocks.
//! - `chain`: a chain of 1,000 linked processes torn down from its head,
//!   per process: from the head's failing step to the last close. tokio: a
//!   chain of detached tasks, each awaiting the previous one's `oneshot`
//!   sender being dropped and then dropping its own, from the head task's
//!   end to the last one's. Both sides start alike: every link waits and
//!   both workers have gone idle (tokio's tasks count their first polls;
//!   ours are seen through `stats()`, not `processes()`, whose scan of
//!   every slot from the main thread would leave the slots' lines in its
//!   core's cache for the teardown to fetch back); the clock starts in
//!   the head itself, not where the main thread tells it to end, a
//!   hand-off that wakes a parked worker (20-100 µs here), which is not
//!   the teardown and, spread over 1,000 processes, read as 20-100 ns a
//!   process; the main thread then blocks until the last one ends.
//! - `chain_first`: the chain as an embedder times it. Each link links its
//!   predecessor in its first step (as in `chain`), every process is a
//!   default one (no `trap_exits`), so each exit ends the next, and the
//!   head ends with a failure (its step returns `Err`); the last link is
//!   joinable. Once every first step is done and both workers sleep, the
//!   clock starts on the main thread as it sends the head its `Fail` (a
//!   wake of a parked worker) and stops as the main thread's `join` of
//!   the last link returns (a wake of the main thread). Printed with its
//!   three parts (send to the head's failing step, the teardown proper to
//!   the last close, that close to `join`'s return), each a median. With
//!   the word `scan`, the links are seen set through `processes()`, as an
//!   embedder would look, instead of `stats()`. tokio: `chain`'s tasks,
//!   timed from the main thread's drop of the head's sender to its
//!   `block_on` of the last task; the two sides alternate, a chain each.
//!
//! The BEAM side, the same three shapes on Erlang/OTP with two schedulers
//! (`apt-get install erlang-base`):
//!
//! ```text
//! erlc -o /tmp benches/peers/erlang/links.erl
//! erl -noshell +S 2 -pa /tmp -s links main -s init stop
//! ```
//!
//! Go, the shapes it can express (a done channel closed by a goroutine
//! as it ends: `down`; 1,000 goroutines each waiting on the previous one's:
//! `chain`, and `chain_first`, each goroutine making its channel in its
//! first run; Go has no monitors to set, so no `pair`), with two Ps
//! (`apt-get install golang-go`):
//!
//! ```text
//! GOMAXPROCS=2 go run benches/peers/go/links.go
//! ```
//!
//! Workers: 2 for both. The current figures are in the generated benchmark
//! report (`docs/benchmarks.md`).
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin links              # full
//! cargo run --release -p stepsched-peers --bin links -- 1000 200 3 # smoke
//! ```
//! Arguments: pairs (default 1,000,000), samples (default 20,000), chains
//! (default 20); then, optionally, the words `pair`, `apart` (the
//! interleaved pairs), `down`, `chain`, `chain_first` (and `scan`) to run
//! only those shapes, and `ours` or `tokio` to run one side only (for
//! profiling one shape under callgrind; the cross-core round trip is then
//! not measured).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stepsched::process::{Event, Lifecycle, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// Nanoseconds since the bench's start, shared by both sides of a sample.
fn now_ns(base: Instant) -> u64 {
    base.elapsed().as_nanos() as u64
}

enum Role {
    /// Does `left` pairs against `target`, 1,000 per step.
    /// With `other`, each pair is interleaved with one on `other`
    /// (`monitor(t) monitor(o) demonitor(t) demonitor(o)` counts two), so
    /// that no pair cancels out in the step and every request is sent.
    Churner {
        target: Pid,
        other: Option<Pid>,
        left: u64,
    },
    /// Idle until told to finish (a `Msg::Finish`).
    Idle,
    /// Spawns a `Stamp`, monitors it, records the latency of its `Down`;
    /// `left` samples to go.
    Watcher {
        left: u32,
        started: bool,
        lat: Arc<Mutex<Vec<u64>>>,
    },
    /// Stamps the clock and finishes.
    Stamp,
    /// A link of a chain: links the previous link (if any) in its first
    /// step, then waits; the head fails when told.
    Link { prev: Option<Pid>, linked: bool },
}

struct Bench {
    role: Role,
    base: Instant,
}

/// Where a `Stamp` leaves its clock reading for its watcher: a static, so
/// that no process holds a reference count (tokio's target returns the
/// reading through its `JoinHandle`, and counts nothing either).
static STAMP: AtomicU64 = AtomicU64::new(0);

/// Where a chain's head stamps the clock in its failing step: the chain's
/// start, read by the hook that sees the last link close.
static FAILED: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy)]
enum Msg {
    Finish,
    Fail,
}

impl Process for Bench {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        // When a watcher saw its `Down`: read as the event is matched, as
        // tokio's watcher reads the clock as soon as its `await` returns
        // and Go's as soon as its receive does, not after the rest of the
        // step's bookkeeping (the loop's end, the role's match).
        let mut down = None;
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Finish) | Event::Cancel(_) => out.done(()),
                Event::Message(Msg::Fail) => {
                    FAILED.store(now_ns(self.base), Ordering::Relaxed);
                    return Err(());
                }
                Event::Down { .. } => down = Some(now_ns(self.base)),
                _ => {}
            }
        }
        if out.status().is_some() {
            return Ok(());
        }
        match &mut self.role {
            Role::Churner {
                target,
                other,
                left,
            } => {
                let n = (*left).min(1000);
                match other {
                    None => {
                        for _ in 0..n {
                            out.monitor(*target);
                            out.demonitor(*target);
                        }
                    }
                    Some(other) => {
                        for _ in 0..n / 2 {
                            out.monitor(*target);
                            out.monitor(*other);
                            out.demonitor(*target);
                            out.demonitor(*other);
                        }
                    }
                }
                *left -= n;
                if *left == 0 {
                    out.send(*target, Msg::Finish);
                    if let Some(other) = other {
                        out.send(*other, Msg::Finish);
                    }
                    out.done(());
                } else {
                    out.set_status(Status::Continue);
                }
            }
            Role::Idle => {}
            Role::Watcher { left, started, lat } => {
                if let Some(seen) = down {
                    lat.lock()
                        .unwrap()
                        .push(seen - STAMP.load(Ordering::Relaxed));
                    *left -= 1;
                }
                if *left == 0 {
                    out.done(());
                } else if down.is_some() || !*started {
                    *started = true;
                    let child = Bench {
                        role: Role::Stamp,
                        base: self.base,
                    };
                    let pid = out.spawn(child, "stamp", ()).map_err(|_| ())?;
                    out.monitor(pid);
                }
            }
            Role::Stamp => {
                STAMP.store(now_ns(self.base), Ordering::Relaxed);
                out.done(());
            }
            Role::Link { prev, linked } => {
                if !*linked {
                    *linked = true;
                    if let Some(p) = prev {
                        out.link(*p);
                    }
                }
            }
        }
        Ok(())
    }
}

fn bench(role: Role, base: Instant) -> Bench {
    Bench { role, base }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

/// What a window measured as two `now_ns` reads holds beyond itself: the
/// gap between two back-to-back reads (mean of p10-p90 of 200,000 pairs).
/// Each `down` window holds it once, tokio's as ours (Go and the BEAM read
/// clocks of their own).
fn clock_gap_ns(base: Instant) -> f64 {
    let mut v: Vec<u64> = (0..200_000)
        .map(|_| {
            let a = now_ns(base);
            now_ns(base) - a
        })
        .collect();
    v.sort_unstable();
    middle_mean(&v)
}

/// The mean of the samples between the 10th and the 90th percentile: finer
/// than the p50 where `Instant` reads come in steps (10 ns on some VMs,
/// which rounds every p50 to a step), and, unlike a plain mean, not moved
/// by the rare long sample (a park, a preemption).
fn middle_mean(sorted: &[u64]) -> f64 {
    let (lo, hi) = (sorted.len() / 10, sorted.len() - sorted.len() / 10);
    let middle = &sorted[lo..hi.max(lo + 1)];
    middle.iter().sum::<u64>() as f64 / middle.len() as f64
}

/// `apart`: pairs interleaved on two targets, so that every request is
/// sent (see `Role::Churner`).
fn stepsched_pair(pairs: u64, apart: bool) -> f64 {
    let s: Scheduler<Bench> = Scheduler::builder().workers(2).build().unwrap();
    let base = Instant::now();
    let idle = || s.submit(bench(Role::Idle, base), "idle", ()).unwrap();
    let target = idle();
    let other = apart.then(idle);
    let start = Instant::now();
    let churner = Role::Churner {
        target,
        other,
        left: pairs,
    };
    let h = s
        .submit_joinable(bench(churner, base), "churn", ())
        .ok()
        .unwrap();
    h.join().unwrap();
    let took = start.elapsed();
    s.shutdown(Duration::from_secs(5));
    took.as_nanos() as f64 / pairs as f64
}

fn tokio_pair(rt: &tokio::runtime::Runtime, pairs: u64) -> f64 {
    let (tx, _rx) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    rt.block_on(async {
        tokio::spawn(async move {
            for _ in 0..pairs {
                let rx = tx.subscribe();
                drop(std::hint::black_box(rx));
            }
        })
        .await
        .unwrap();
    });
    start.elapsed().as_nanos() as f64 / pairs as f64
}

fn stepsched_down(samples: u32) -> Vec<u64> {
    let s: Scheduler<Bench> = Scheduler::builder().workers(2).build().unwrap();
    let base = Instant::now();
    let lat = Arc::new(Mutex::new(Vec::with_capacity(samples as usize)));
    let watcher = Role::Watcher {
        left: samples,
        started: false,
        lat: Arc::clone(&lat),
    };
    let h = s
        .submit_joinable(bench(watcher, base), "watch", ())
        .ok()
        .unwrap();
    h.join().unwrap();
    s.shutdown(Duration::from_secs(5));
    let mut v = lat.lock().unwrap().clone();
    v.sort_unstable();
    v
}

fn tokio_down(rt: &tokio::runtime::Runtime, samples: u32) -> Vec<u64> {
    let base = Instant::now();
    let mut v = rt.block_on(async move {
        tokio::spawn(async move {
            let mut v = Vec::with_capacity(samples as usize);
            for _ in 0..samples {
                let ended = tokio::spawn(async move { now_ns(base) }).await.unwrap();
                v.push(now_ns(base) - ended);
            }
            v
        })
        .await
        .unwrap()
    });
    v.sort_unstable();
    v
}

const CHAIN: usize = 1000;

fn stepsched_chain() -> f64 {
    // The hook looks for the last link's close alone (one Relaxed load per
    // close), as tokio's last task alone stamps the clock: a count of
    // every close (an RMW on one shared word per process, from both
    // workers) would be a cost the tokio side does not pay. It hands the
    // stamp to the main thread through a channel the main thread blocks
    // on, as tokio's `block_on` blocks: a main thread polling for it would
    // take a core from the two workers.
    let last_pid = Arc::new(AtomicU64::new(u64::MAX));
    let (closed, last_close) = std::sync::mpsc::channel::<u64>();
    let closed = Mutex::new(closed);
    let lp = Arc::clone(&last_pid);
    let base = Instant::now();
    let s: Scheduler<Bench> = Scheduler::builder()
        .workers(2)
        .on_complete(move |pid, _| {
            if pid.into_raw() == lp.load(Ordering::Relaxed) {
                let _ = closed.lock().unwrap().send(now_ns(base));
            }
        })
        .build()
        .unwrap();
    let mut prev = None;
    let mut head = None;
    for _ in 0..CHAIN {
        let role = Role::Link {
            prev,
            linked: false,
        };
        let pid = s.submit(bench(role, base), "link", ()).ok().unwrap();
        head.get_or_insert(pid);
        prev = Some(pid);
    }
    // Wait for the links to be set without reading the processes
    // (`processes()` reads every slot: a scan from the main thread just
    // before the teardown left each slot's lines shared with its core, so
    // that the teardown's writes each waited for a cross-core
    // invalidation, where tokio's tasks' cells are held by the workers
    // alone): the first steps are done and both workers sleep, twice in a
    // row. That the chain was whole is checked at its end: its last link
    // closes only when an exit reached it.
    let settled = || {
        let st = s.stats();
        st.total().steps >= CHAIN as u64 && st.sleeping == 2
    };
    while !(settled() && {
        std::thread::sleep(Duration::from_millis(1));
        settled()
    }) {
        std::thread::sleep(Duration::from_millis(1));
    }
    last_pid.store(prev.unwrap().into_raw(), Ordering::Relaxed);
    // The clock starts in the head's failing step (`FAILED`), not here:
    // the send wakes a parked worker, a thread wake-up of 20-100 µs on a
    // VM that tokio's side does not time either.
    s.send(head.unwrap(), Msg::Fail).ok().unwrap();
    let last = last_close
        .recv_timeout(Duration::from_secs(10))
        .expect("the chain's last link never closed: a link was not set");
    let took = last - FAILED.load(Ordering::Relaxed);
    s.shutdown(Duration::from_secs(5));
    took as f64 / CHAIN as f64
}

fn tokio_chain(rt: &tokio::runtime::Runtime) -> f64 {
    // Each task counts itself as it first runs (outside the timed window),
    // so that the head is told to end only once every link waits, as ours
    // once every link is set: a teardown that overtook tasks not yet
    // polled would time part of the set-up.
    let waiting = Arc::new(AtomicU64::new(0));
    let link = |w: &AtomicU64| w.fetch_add(1, Ordering::Relaxed);
    rt.block_on(async {
        let base = Instant::now();
        let (head_tx, head_rx) = tokio::sync::oneshot::channel::<()>();
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        // The head: the clock starts as it ends, as ours starts in the
        // head's failing step.
        let w = Arc::clone(&waiting);
        drop(tokio::spawn(async move {
            link(&w);
            let _ = head_rx.await;
            FAILED.store(now_ns(base), Ordering::Relaxed);
            drop(tx);
        }));
        for _ in 2..CHAIN {
            let (tx, next_rx) = tokio::sync::oneshot::channel::<()>();
            // Detached, as a stepsched process with no joiner: each task's
            // memory goes back as it ends, inside the timed window, as a
            // closed process's does. (Holding the `JoinHandle`s kept every
            // task's cell alive until after the clock stopped.)
            let w = Arc::clone(&waiting);
            drop(tokio::spawn(async move {
                link(&w);
                let _ = rx.await; // the previous link ended
                drop(tx);
            }));
            rx = next_rx;
        }
        let w = Arc::clone(&waiting);
        let last = tokio::spawn(async move {
            link(&w);
            let _ = rx.await;
            now_ns(base)
        });
        // As ours: every link waits, and the workers have gone idle. (This
        // future runs on the main thread, not on a worker: it may block.)
        while waiting.load(Ordering::Relaxed) < CHAIN as u64 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(2));
        drop(head_tx); // the head is told to end
        let end = last.await.unwrap();
        (end - FAILED.load(Ordering::Relaxed)) as f64 / CHAIN as f64
    })
}

/// `chain_first`, as an embedder times it: the chain's links set in each
/// link's first step, as in `chain`, and the last link joinable; the
/// clock starts on the main thread as it tells the head to fail (a wake
/// of a parked worker) and stops as the main thread's `join` of the last
/// link returns (a wake of the main thread).
///
/// `scan`: the links are seen set as an embedder sees them, through
/// `processes()` (each link shows its links, all idle), not `stats()`.
///
/// Returns the time per process and its three parts, in ns: from the
/// send to the head's failing step (`FAILED`), from there to the last
/// link's close (its `on_complete`), and from there to `join`'s return.
fn stepsched_chain_first(scan: bool) -> [f64; 4] {
    let last_pid = Arc::new(AtomicU64::new(u64::MAX));
    let closed = Arc::new(AtomicU64::new(0));
    let (lp, cl) = (Arc::clone(&last_pid), Arc::clone(&closed));
    let base = Instant::now();
    let s: Scheduler<Bench> = Scheduler::builder()
        .workers(2)
        .on_complete(move |pid, _| {
            if pid.into_raw() == lp.load(Ordering::Relaxed) {
                cl.store(now_ns(base), Ordering::Relaxed);
            }
        })
        .build()
        .unwrap();
    let link = |prev| Role::Link {
        prev,
        linked: false,
    };
    let mut prev = None;
    let mut head = None;
    for _ in 1..CHAIN {
        let pid = s.submit(bench(link(prev), base), "link", ()).ok().unwrap();
        head.get_or_insert(pid);
        prev = Some(pid);
    }
    let last = s
        .submit_joinable(bench(link(prev), base), "link", ())
        .ok()
        .unwrap();
    // Set up and settled as `chain`: every first step done, both workers
    // asleep, twice in a row.
    let settled = || {
        let st = s.stats();
        st.total().steps >= CHAIN as u64 && st.sleeping == 2
    };
    let linked = || {
        let ps = s.processes();
        let want = |i: usize| if i == 0 || i == CHAIN - 1 { 1 } else { 2 };
        ps.len() == CHAIN
            && (ps.iter().enumerate())
                .all(|(i, p)| p.links == want(i) && p.state == Lifecycle::Idle)
    };
    while !((if scan { linked() } else { settled() }) && {
        std::thread::sleep(Duration::from_millis(1));
        settled()
    }) {
        std::thread::sleep(Duration::from_millis(1));
    }
    last_pid.store(last.pid().into_raw(), Ordering::Relaxed);
    let start = now_ns(base);
    s.send(head.unwrap(), Msg::Fail).ok().unwrap();
    let Ok(outcome) = last.join_timeout(Duration::from_secs(10)) else {
        panic!("the chain's last link never closed: a link was not set");
    };
    let end = now_ns(base);
    assert!(outcome.is_err(), "the last link ends by its link");
    s.shutdown(Duration::from_secs(5));
    let (failed, closed) = (
        FAILED.load(Ordering::Relaxed),
        closed.load(Ordering::Relaxed),
    );
    let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / CHAIN as f64;
    [
        per(start, end),
        per(start, failed),
        per(failed, closed),
        per(closed, end),
    ]
}

/// `chain_first` on tokio: `tokio_chain`'s tasks, timed from the main
/// thread's drop of the head's sender (outside the runtime's workers) to
/// the return of the main thread's `block_on` of the last task.
fn tokio_chain_first(rt: &tokio::runtime::Runtime) -> f64 {
    let waiting = Arc::new(AtomicU64::new(0));
    let link = |w: &AtomicU64| w.fetch_add(1, Ordering::Relaxed);
    let (head_tx, head_rx) = tokio::sync::oneshot::channel::<()>();
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let w = Arc::clone(&waiting);
    drop(rt.spawn(async move {
        link(&w);
        let _ = head_rx.await;
        drop(tx);
    }));
    for _ in 2..CHAIN {
        let (tx, next_rx) = tokio::sync::oneshot::channel::<()>();
        let w = Arc::clone(&waiting);
        drop(rt.spawn(async move {
            link(&w);
            let _ = rx.await;
            drop(tx);
        }));
        rx = next_rx;
    }
    let w = Arc::clone(&waiting);
    let last = rt.spawn(async move {
        link(&w);
        let _ = rx.await;
    });
    while waiting.load(Ordering::Relaxed) < CHAIN as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(2));
    let start = Instant::now();
    drop(head_tx);
    rt.block_on(last).unwrap();
    start.elapsed().as_nanos() as f64 / CHAIN as f64
}

fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<u64> = words.iter().filter_map(|a| a.parse().ok()).collect();
    let pairs = args.first().copied().unwrap_or(1_000_000);
    let samples = args.get(1).copied().unwrap_or(20_000) as u32;
    let chains = args.get(2).copied().unwrap_or(20) as usize;
    let has = |w: &str| words.iter().any(|a| a == w);
    let all_shapes = !["pair", "apart", "down", "chain", "chain_first"]
        .iter()
        .any(|w| has(w));
    let shape = |w: &str| all_shapes || has(w);
    let (ours_on, tokio_on) = (!has("tokio"), !has("ours"));
    // Not when profiling one side: under callgrind, which runs one thread
    // at a time, the two threads' spinning hand-off never ends.
    if ours_on && tokio_on {
        println!(
            "cross-core round trip: {} (swings several-fold on a shared VM: see docs/benchmarks.md)",
            stepsched_peers::core_round_trip()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();

    if shape("pair") {
        let ours = if ours_on {
            stepsched_pair(pairs, false)
        } else {
            0.0
        };
        let theirs = if tokio_on {
            tokio_pair(&rt, pairs)
        } else {
            0.0
        };
        println!("pair (monitor+demonitor), ns: stepsched {ours:.1}  tokio watch subscribe+drop {theirs:.1}  (BEAM anchor 149)");
    }
    if shape("apart") && ours_on {
        let apart = stepsched_pair(pairs, true);
        println!(
            "  pairs interleaved on two targets (each request sent), ns: stepsched {apart:.1}"
        );
    }

    if shape("down") {
        let ours = if ours_on {
            stepsched_down(samples)
        } else {
            vec![0]
        };
        let theirs = if tokio_on {
            tokio_down(&rt, samples)
        } else {
            vec![0]
        };
        println!(
            "down latency p50/p99 (mean p10-p90), ns: stepsched {}/{} ({:.1})  tokio JoinHandle {}/{} ({:.1})  (BEAM anchor 701/902)",
            percentile(&ours, 0.5),
            percentile(&ours, 0.99),
            middle_mean(&ours),
            percentile(&theirs, 0.5),
            percentile(&theirs, 0.99),
            middle_mean(&theirs)
        );
        let gap = clock_gap_ns(Instant::now());
        println!(
            "  each window holds one clock read: two back-to-back reads differ by {gap:.1} ns"
        );
        let net = |v: &[u64]| middle_mean(v) - gap;
        println!(
            "  net of it (mean p10-p90 - the gap), ns: stepsched {:.1}  tokio {:.1}",
            net(&ours),
            net(&theirs)
        );
    }

    if shape("chain") {
        let runs = |on: bool, f: &dyn Fn() -> f64| {
            let mut v: Vec<f64> = (0..if on { chains } else { 1 })
                .map(|_| if on { f() } else { 0.0 })
                .collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ours = runs(ours_on, &stepsched_chain);
        let theirs = runs(tokio_on, &|| tokio_chain(&rt));
        println!(
            "chain of {CHAIN} torn down from its head, median ns per process: stepsched {ours:.1}  tokio {theirs:.1}  (BEAM anchor 1,125)"
        );
    }
    if shape("chain_first") {
        let (mut ours, mut theirs) = (vec![[0.0; 4]], vec![0.0]);
        // Alternated, a chain each, so that a noisy stretch of a shared
        // machine falls on both.
        for _ in 0..chains {
            if ours_on {
                ours.push(stepsched_chain_first(has("scan")));
            }
            if tokio_on {
                theirs.push(tokio_chain_first(&rt));
            }
        }
        let median = |mut v: Vec<f64>| {
            if v.len() > 1 {
                v.remove(0);
            }
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let part = |i: usize| median(ours.iter().map(|r| r[i]).collect());
        let theirs = median(theirs);
        println!(
            "chain_first of {CHAIN}, failed from the main thread and joined there, median ns per process: stepsched {:.1}  tokio {theirs:.1}",
            part(0)
        );
        println!(
            "  stepsched's parts (medians each), ns per process: send to the head's step {:.1}, teardown {:.1}, last close to join's return {:.1}",
            part(1),
            part(2),
            part(3)
        );
    }
}
