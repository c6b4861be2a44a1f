//! Side-by-side: `big` (Savina's "big"), stepsched against tokio and Go.
//!
//! N processes; each sends a ping to a uniformly random other process,
//! waits for its pong, and does so M times; every process answers every
//! ping it gets, at all times, with a pong to the ping's sender. A round is
//! over when every process has had its M pongs. The random choice is a
//! xorshift64 seeded from the process's index (`seed`), the same sequence
//! in all three systems. Printed: the time per message (pings and pongs each
//! count one: 2·N·M in a round), medians of the rounds, and the peers'
//! times over stepsched's (above 1: stepsched faster), as a ratio of the
//! medians and as the median of each round's own ratio (the machine's
//! state may change between rounds, and hits the systems of one round
//! alike).
//!
//! - stepsched: a `Node` process whose step answers a `Ping(from)` with a
//!   `Pong` to `from`, and a `Pong` with its next ping; all N are submitted
//!   before the clock starts, idle, and the clock starts as the main
//!   thread sends each its `Start` (the table of PIDs).
//! - tokio: N tasks, each with an unbounded `mpsc` channel, the table of
//!   senders shared; the clock starts as the main thread sends each task
//!   its `Start`.
//! - Go (`benches/peers/go/big.go`, if `go` is on `PATH`): N goroutines,
//!   each with a channel of capacity N (it never holds more: one ping from
//!   each other goroutine and one pong), built once into `/tmp` and run
//!   once a round (an untimed warm-up round inside each run), `GOMAXPROCS=2`.
//!
//! All three count the pongs and the answered pings, and check both against
//! N·M, so a broken run cannot look fast. Both Rust sides run 2 workers on
//! the system's allocator; the systems alternate round by round.
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin big                # N 1,000, M 1,000, 5 rounds
//! SCALE=0.01 ROUNDS=1 cargo run --release -p stepsched-peers --bin big   # smoke run
//! SIDES=stepsched SCALE=0.05 ROUNDS=1 cargo run --release -p stepsched-peers --bin big
//! ```
//!
//! `SCALE` multiplies M (at least 1); `N` sets N (default 1,000); `ROUNDS`
//! (default 5) counts the timed rounds, after one untimed warm-up round of
//! each system; `SIDES` (a comma list of `stepsched`, `tokio`, `go`; all by
//! default) runs only those (one side alone, under callgrind or strace).

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or(default),
        Err(_) => default,
    }
}

/// The xorshift64 state of process `index` (never 0).
fn seed(index: usize) -> u64 {
    (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The next random other process, uniformly among the `n - 1` others.
fn other(rng: &mut u64, me: usize, n: usize) -> usize {
    let mut x = *rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    let r = (x % (n as u64 - 1)) as usize;
    if r >= me {
        r + 1
    } else {
        r
    }
}

/// Counts down to zero; `wait` blocks until it gets there.
#[derive(Default)]
struct Latch {
    left: Mutex<u64>,
    zero: Condvar,
}

impl Latch {
    fn arm(&self, n: u64) {
        *self.left.lock().unwrap() = n;
    }

    fn hit(&self) {
        let mut left = self.left.lock().unwrap();
        *left -= 1;
        if *left == 0 {
            self.zero.notify_all();
        }
    }

    fn wait(&self, what: &str) {
        let mut left = self.left.lock().unwrap();
        while *left != 0 {
            let (guard, timeout) = self
                .zero
                .wait_timeout(left, Duration::from_secs(60))
                .unwrap();
            assert!(!timeout.timed_out(), "{what}: stuck at {} left", *guard);
            left = guard;
        }
    }
}

/// Pongs received and pings answered, summed over a round's processes.
#[derive(Default)]
struct Tally {
    pongs: AtomicU64,
    answered: AtomicU64,
}

impl Tally {
    fn add(&self, pongs: u64, answered: u64) {
        self.pongs.fetch_add(pongs, Ordering::Relaxed);
        self.answered.fetch_add(answered, Ordering::Relaxed);
    }

    fn check(&self, what: &str, expected: u64) {
        let pongs = self.pongs.swap(0, Ordering::Relaxed);
        let answered = self.answered.swap(0, Ordering::Relaxed);
        assert_eq!(pongs, expected, "{what}: pongs");
        assert_eq!(answered, expected, "{what}: answered pings");
    }
}

// ---------------------------------------------------------------------------
// stepsched

enum Msg {
    /// Every process's PID, by index: start pinging.
    Start(Arc<[Pid]>),
    Ping(Pid),
    Pong,
    /// The round is over (sent once every process had its pongs).
    Stop,
}

struct Node {
    me: usize,
    m: u64,
    rng: u64,
    peers: Option<Arc<[Pid]>>,
    pongs: u64,
    answered: u64,
    /// Hit when this process has had its M pongs.
    done: Arc<Latch>,
}

impl Node {
    fn ping(&mut self, out: &mut StepOutput<'_, Self>) {
        let peers = self.peers.as_ref().expect("started");
        let to = peers[other(&mut self.rng, self.me, peers.len())];
        out.send(to, Msg::Ping(out.pid()));
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    /// Pongs received, pings answered.
    type Output = (u64, u64);
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Ping(from)) => {
                    self.answered += 1;
                    out.send(from, Msg::Pong);
                }
                Event::Message(Msg::Pong) => {
                    self.pongs += 1;
                    if self.pongs < self.m {
                        self.ping(out);
                    } else {
                        self.done.hit();
                    }
                }
                Event::Message(Msg::Start(peers)) => {
                    self.peers = Some(peers);
                    self.ping(out);
                }
                Event::Message(Msg::Stop) | Event::Cancel(_) => {
                    out.done((self.pongs, self.answered));
                }
                _ => {}
            }
        }
        if out.status().is_none() {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

struct Ours {
    scheduler: Scheduler<Node>,
    done: Arc<Latch>,
    closed: Arc<Latch>,
    tally: Arc<Tally>,
}

impl Ours {
    fn new() -> Self {
        let closed = Arc::new(Latch::default());
        let tally = Arc::new(Tally::default());
        let (hook_closed, hook_tally) = (Arc::clone(&closed), Arc::clone(&tally));
        let scheduler = Scheduler::<Node>::builder()
            .workers(WORKERS)
            .on_complete(move |_, outcome| {
                let (pongs, answered) = *outcome.as_ref().expect("a node failed");
                hook_tally.add(pongs, answered);
                hook_closed.hit();
            })
            .build()
            .expect("scheduler");
        Ours {
            scheduler,
            done: Arc::new(Latch::default()),
            closed,
            tally,
        }
    }

    /// One round: the time from the first `Start` to the last process's
    /// M-th pong.
    fn round(&self, n: usize, m: u64) -> Duration {
        self.done.arm(n as u64);
        self.closed.arm(n as u64);
        let pids: Arc<[Pid]> = (0..n)
            .map(|me| {
                let node = Node {
                    me,
                    m,
                    rng: seed(me),
                    peers: None,
                    pongs: 0,
                    answered: 0,
                    done: Arc::clone(&self.done),
                };
                self.scheduler.submit(node, "", ()).expect("submit")
            })
            .collect();
        let start = Instant::now();
        for &pid in pids.iter() {
            self.scheduler
                .send(pid, Msg::Start(Arc::clone(&pids)))
                .expect("start");
        }
        self.done.wait("stepsched big");
        let took = start.elapsed();
        for &pid in pids.iter() {
            self.scheduler.send(pid, Msg::Stop).expect("stop");
        }
        self.closed.wait("stepsched big: closing");
        self.tally.check("stepsched big", n as u64 * m);
        took
    }
}

// ---------------------------------------------------------------------------
// tokio

enum TMsg {
    Start,
    Ping(usize),
    Pong,
    Stop,
}

fn tokio_round(rt: &tokio::runtime::Runtime, n: usize, m: u64) -> Duration {
    use tokio::sync::mpsc::unbounded_channel;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| unbounded_channel()).unzip();
    let senders = Arc::new(senders);
    let done = Arc::new(Latch::default());
    done.arm(n as u64);
    let tasks: Vec<_> = receivers
        .into_iter()
        .enumerate()
        .map(|(me, mut rx)| {
            let senders = Arc::clone(&senders);
            let done = Arc::clone(&done);
            rt.spawn(async move {
                let mut rng = seed(me);
                let (mut pongs, mut answered) = (0u64, 0u64);
                while let Some(msg) = rx.recv().await {
                    match msg {
                        TMsg::Ping(from) => {
                            answered += 1;
                            let _ = senders[from].send(TMsg::Pong);
                        }
                        TMsg::Pong => {
                            pongs += 1;
                            if pongs < m {
                                let to = other(&mut rng, me, n);
                                let _ = senders[to].send(TMsg::Ping(me));
                            } else {
                                done.hit();
                            }
                        }
                        TMsg::Start => {
                            let to = other(&mut rng, me, n);
                            let _ = senders[to].send(TMsg::Ping(me));
                        }
                        TMsg::Stop => break,
                    }
                }
                (pongs, answered)
            })
        })
        .collect();
    let start = Instant::now();
    for tx in senders.iter() {
        tx.send(TMsg::Start).map_err(|_| ()).expect("start");
    }
    done.wait("tokio big");
    let took = start.elapsed();
    for tx in senders.iter() {
        tx.send(TMsg::Stop).map_err(|_| ()).expect("stop");
    }
    let tally = Tally::default();
    for task in tasks {
        let (pongs, answered) = rt.block_on(task).expect("a task failed");
        tally.add(pongs, answered);
    }
    tally.check("tokio big", n as u64 * m);
    took
}

// ---------------------------------------------------------------------------
// Go

/// The Go program, built once; `None` without `go` on `PATH`.
fn build_go() -> Option<String> {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/go/big.go");
    let binary = "/tmp/stepsched-peers-big-go".to_string();
    let built = Command::new("go")
        .args(["build", "-o", &binary, source])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !built {
        println!("big go: not run (`go build {source}` failed or `go` is not on PATH)");
    }
    built.then_some(binary)
}

/// One round of the Go program (after its own warm-up round): the time it
/// measured.
fn go_round(binary: &str, n: usize, m: u64) -> Duration {
    let output = Command::new(binary)
        .args([n.to_string(), m.to_string()])
        .env("GOMAXPROCS", WORKERS.to_string())
        .output()
        .expect("run the Go program");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "go big failed: {text}");
    let ns: u64 = text
        .lines()
        .find_map(|line| line.strip_prefix("round_ns "))
        .and_then(|ns| ns.trim().parse().ok())
        .unwrap_or_else(|| panic!("go big: no `round_ns` line in {text:?}"));
    Duration::from_nanos(ns)
}

// ---------------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5usize).max(1);
    let n: usize = env_or("N", 1_000usize).max(2);
    let m = ((1_000.0 * scale) as u64).max(1);
    let sides = std::env::var("SIDES").unwrap_or_else(|_| "stepsched,tokio,go".into());
    let side = |name: &str| sides.split(',').any(|s| s.trim() == name);
    let messages = 2 * n as u64 * m;
    println!(
        "big: {n} processes x {m} pings ({messages} messages a round), {rounds} rounds, median"
    );

    let ours = side("stepsched").then(Ours::new);
    let rt = side("tokio").then(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .build()
            .expect("tokio runtime")
    });
    let go = if side("go") { build_go() } else { None };

    // One untimed warm-up round each: threads, table pages, queue blocks.
    let warm_m = (m / 10).max(1);
    if let Some(ours) = &ours {
        ours.round(n, warm_m);
    }
    if let Some(rt) = &rt {
        tokio_round(rt, n, warm_m);
    }
    let (mut s, mut t, mut g) = (Vec::new(), Vec::new(), Vec::new());
    let per_message = |d: Duration| d.as_nanos() as f64 / messages as f64;
    for _ in 0..rounds {
        if let Some(ours) = &ours {
            s.push(per_message(ours.round(n, m)));
        }
        if let Some(rt) = &rt {
            t.push(per_message(tokio_round(rt, n, m)));
        }
        if let Some(go) = &go {
            g.push(per_message(go_round(go, n, m)));
        }
    }
    for (name, v) in [("stepsched", &s), ("tokio", &t), ("go", &g)] {
        if !v.is_empty() {
            let rounds: Vec<String> = v.iter().map(|ns| format!("{ns:.1}")).collect();
            println!("big {name:<9} rounds: {}", rounds.join(" "));
        }
    }
    let (s_rounds, t_rounds, g_rounds) = (s.clone(), t.clone(), g.clone());
    let figure = |v: &Vec<f64>| (!v.is_empty()).then(|| median(v.clone()));
    let (s, t, g) = (figure(&s), figure(&t), figure(&g));
    for (name, ns) in [("stepsched", s), ("tokio", t), ("go", g)] {
        if let Some(ns) = ns {
            println!("big {name:<9} {ns:8.1} ns/message");
        }
    }
    if let Some(s) = s {
        for (name, ns) in [("tokio", t), ("go", g)] {
            if let Some(ns) = ns {
                println!("big ratio {name}/stepsched {:.2}", ns / s);
            }
        }
    }
    // The machine's state can change between rounds (the cross-core round
    // trip swings several-fold): the median of each round's own ratio is
    // the steadier figure.
    for (name, v) in [("tokio", &t_rounds), ("go", &g_rounds)] {
        if !s_rounds.is_empty() && v.len() == s_rounds.len() {
            let paired: Vec<f64> = v.iter().zip(&s_rounds).map(|(p, o)| p / o).collect();
            println!(
                "big ratio {name}/stepsched, median of rounds {:.2}",
                median(paired)
            );
        }
    }
    if let Some(ours) = &ours {
        let stats = ours.scheduler.stats();
        let sum = |f: fn(&stepsched::sched::WorkerStats) -> u64| -> u64 {
            stats.workers.iter().map(f).sum()
        };
        println!(
            "big stepsched stats: steps {} parks {} wakeups {} steals {} spins {}",
            sum(|w| w.steps),
            sum(|w| w.parks),
            sum(|w| w.wakeups),
            sum(|w| w.steals),
            sum(|w| w.spins),
        );
    }
    if let Some(ours) = ours {
        ours.scheduler.shutdown(Duration::from_secs(1));
    }
}
