//! Side-by-side: timers, stepsched against tokio, both with 2
//! worker threads.
//!
//! | scenario          | size (SCALE=1)                                          |
//! |-------------------|---------------------------------------------------------|
//! | `timer_churn`     | 100,000 processes each sleeping 1 ms ten times          |
//! | `deadline_not_hit`| 1,000,000 commands in sequence, 1 s timeout, answered at once |
//! | `lateness`        | 10,000 sleeps of 1-20 ms (100 sleepers), idle otherwise |
//! | `idle_timers`     | 1,000,000 pending 60 s timers, CPU over 2 s, bytes each |
//!
//! Shapes:
//!
//! - `timer_churn`: stepsched processes call `wake_after(1 ms)` and return
//!   idle, ten times; tokio tasks `sleep(1 ms).await` ten times. Printed:
//!   wall time per timer, and CPU time (the whole process's, `/proc/self/stat`)
//!   per timer.
//! - `deadline_not_hit`: one stepsched process yields a command with
//!   `yield_command_timeout(1 s)` to an inline handler that completes it at
//!   once (the timeout is inserted after the dispatch, then cancelled when
//!   the completion is taken), a million times in a row; tokio: one task
//!   awaits `timeout(1 s, rx)` on a oneshot whose sender it has handed to a
//!   second task over a channel, so the sleep is registered at the first
//!   poll and dropped when the reply comes. Printed: ns per operation.
//! - `lateness`: 100 sleepers each sleep 100 times a random 1-20 ms
//!   (xorshift, same seed for both); each wake-up records how long after
//!   its deadline it ran. Printed: p50, p99, max.
//! - `idle_timers`: in a child process per system (fresh heap): 1,000
//!   processes (tokio: tasks) each arm 1,000 timers of 60 s (stepsched:
//!   `wake_after`; tokio: 1,000 boxed `Sleep`s polled once); printed: the
//!   resident memory they added per timer, and the CPU the process used
//!   over the following 2 s, in % of one core.
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin timers                     # full size
//! SCALE=0.01 cargo run --release -p stepsched-peers --bin timers          # smoke run
//! STEPSCHED_ONLY=1 cargo run --release -p stepsched-peers --bin timers    # no tokio
//! ONLY=lateness cargo run --release -p stepsched-peers --bin timers       # one scenario
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use stepsched::process::{Command, CommandError, Event, Process, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;
const HANG: Duration = Duration::from_secs(300);
const IDLE_CHILD: &str = "STEPSCHED_PEERS_TIMERS_CHILD";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: hung");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// utime + stime of the whole process, in nanoseconds (`/proc/self/stat`,
/// clock ticks of 10 ms: coarse, so runs should last seconds).
fn process_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let rest = &stat[stat.rfind(')').expect("stat comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks * 10_000_000
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm resident field");
    pages * 4096
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------
// The stepsched process: one type, behaviour chosen by the method.

#[derive(Debug)]
struct Echo;

impl Command for Echo {
    fn kind(&self) -> &'static str {
        "echo"
    }
}

enum Msg {
    Arm,
}

struct Timed {
    method: &'static str,
    left: u64,
    done: Arc<AtomicUsize>,
    /// `lateness`: the current deadline, the xorshift state, the samples.
    deadline: Option<Instant>,
    rng: u64,
    samples: Arc<Mutex<Vec<u64>>>,
}

impl Timed {
    fn new(method: &'static str, left: u64, done: &Arc<AtomicUsize>) -> Self {
        Timed {
            method,
            left,
            done: Arc::clone(done),
            deadline: None,
            rng: 0,
            samples: Arc::default(),
        }
    }
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

impl Process for Timed {
    type Input = u64;
    type Message = Msg;
    type Command = Echo;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, seed: u64) -> Result<(), ()> {
        self.rng = seed | 1;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let first = events.is_empty();
        match self.method {
            "churn" => {
                let fired = events.drain(..).any(|e| matches!(e, Event::Timer { .. }));
                if fired || first {
                    if self.left == 0 {
                        self.done.fetch_add(1, Ordering::Relaxed);
                        out.done(());
                    } else {
                        self.left -= 1;
                        out.wake_after(0, Duration::from_millis(1));
                    }
                }
            }
            "deadline" => {
                for event in events.drain(..) {
                    if let Event::Completion { result, .. } = event {
                        assert!(!matches!(result, Err(CommandError::TimedOut)));
                    }
                }
                if self.left == 0 {
                    self.done.fetch_add(1, Ordering::Relaxed);
                    out.done(());
                } else {
                    self.left -= 1;
                    out.yield_command_timeout(self.left, Echo, Duration::from_secs(1));
                }
            }
            "lateness" => {
                // Read here only: the other shapes need no clock (tokio's
                // tasks in `timer_churn` read none either).
                let now = Instant::now();
                let fired = events.drain(..).any(|e| matches!(e, Event::Timer { .. }));
                if let (true, Some(deadline)) = (fired, self.deadline) {
                    let late = now.saturating_duration_since(deadline).as_nanos() as u64;
                    self.samples.lock().unwrap().push(late);
                }
                if fired || first {
                    if self.left == 0 {
                        self.done.fetch_add(1, Ordering::Relaxed);
                        out.done(());
                    } else {
                        self.left -= 1;
                        let ms = 1 + xorshift(&mut self.rng) % 20;
                        let deadline = now + Duration::from_millis(ms);
                        self.deadline = Some(deadline);
                        out.wake_at(0, deadline);
                    }
                }
            }
            "idle" => {
                if events
                    .drain(..)
                    .any(|e| matches!(e, Event::Message(Msg::Arm)))
                {
                    for tag in 0..self.left {
                        out.wake_after(tag, Duration::from_secs(60) + Duration::from_micros(tag));
                    }
                    self.done.fetch_add(1, Ordering::Relaxed);
                }
            }
            other => panic!("unknown method {other}"),
        }
        Ok(())
    }
}

fn scheduler() -> Scheduler<Timed> {
    Scheduler::builder()
        .workers(WORKERS)
        .thread_name(|i| format!("ss-timer-{i}"))
        .handler("echo", |_: Echo, completer| {
            let _ = completer.succeed(());
        })
        .build()
        .expect("scheduler")
}

// ---------------------------------------------------------------------------
// Scenarios

fn timer_churn(processes: usize, tokio: bool) {
    const SLEEPS: u64 = 10;
    let timers = (processes as u64 * SLEEPS) as f64;
    let scheduler = scheduler();
    let done = Arc::new(AtomicUsize::new(0));
    let (cpu0, t0) = (process_cpu_ns(), Instant::now());
    for _ in 0..processes {
        scheduler
            .submit(Timed::new("churn", SLEEPS, &done), "churn", 0)
            .expect("submit");
    }
    wait_until("timer_churn", || done.load(Ordering::Relaxed) == processes);
    let (wall, cpu) = (t0.elapsed(), process_cpu_ns() - cpu0);
    let stats = scheduler.stats();
    drop(scheduler);
    println!(
        "timer_churn  stepsched  wall {:>7.0} ns/timer  cpu {:>7.0} ns/timer  (fired {}, late {})",
        wall.as_nanos() as f64 / timers,
        cpu as f64 / timers,
        stats.timers.fired,
        stats.timers.late
    );
    if !tokio {
        return;
    }
    let rt = tokio_rt();
    let (cpu0, t0) = (process_cpu_ns(), Instant::now());
    rt.block_on(async {
        let handles: Vec<_> = (0..processes)
            .map(|_| {
                tokio::spawn(async {
                    for _ in 0..SLEEPS {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
    });
    let (t_wall, t_cpu) = (t0.elapsed(), process_cpu_ns() - cpu0);
    println!(
        "timer_churn  tokio      wall {:>7.0} ns/timer  cpu {:>7.0} ns/timer",
        t_wall.as_nanos() as f64 / timers,
        t_cpu as f64 / timers
    );
    // CPU comes in 10 ms clock ticks: a smoke run may read zero.
    let cpu_ratio = match cpu {
        0 => "n/a (under one clock tick)".to_owned(),
        cpu => format!("{:.2}x", t_cpu as f64 / cpu as f64),
    };
    println!(
        "timer_churn  tokio/stepsched: wall {:.2}x  cpu {cpu_ratio}",
        t_wall.as_secs_f64() / wall.as_secs_f64(),
    );
}

fn deadline_not_hit(ops: u64, tokio: bool) {
    let scheduler = scheduler();
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    scheduler
        .submit(Timed::new("deadline", ops, &done), "deadline", 0)
        .expect("submit");
    wait_until("deadline_not_hit", || done.load(Ordering::Relaxed) == 1);
    let wall = t0.elapsed();
    let stats = scheduler.stats();
    drop(scheduler);
    let per = wall.as_nanos() as f64 / ops as f64;
    println!(
        "deadline_not_hit  stepsched  {per:>6.0} ns/op  (timers cancelled {}, fired {}; worker wakeups {})",
        stats.timers.cancelled,
        stats.timers.fired,
        stats.total().wakeups
    );
    if std::env::var("VERBOSE").is_ok() {
        println!("{stats}");
    }
    if !tokio {
        return;
    }
    let rt = tokio_rt();
    let t0 = Instant::now();
    // Both tasks on the runtime's workers (not the thread in `block_on`), as
    // the stepsched process and its handler are.
    let driver = rt.spawn(async move {
        let (to_helper, mut requests) =
            tokio::sync::mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<()>>();
        let helper = tokio::spawn(async move {
            while let Some(tx) = requests.recv().await {
                let _ = tx.send(());
            }
        });
        for _ in 0..ops {
            let (tx, rx) = tokio::sync::oneshot::channel();
            to_helper.send(tx).unwrap();
            tokio::time::timeout(Duration::from_secs(1), rx)
                .await
                .expect("not hit")
                .unwrap();
        }
        drop(to_helper);
        helper.await.unwrap();
    });
    rt.block_on(driver).unwrap();
    let t_per = t0.elapsed().as_nanos() as f64 / ops as f64;
    println!("deadline_not_hit  tokio      {t_per:>6.0} ns/op");
    println!("deadline_not_hit  tokio/stepsched: {:.2}x", t_per / per);
}

fn percentiles(mut samples: Vec<u64>) -> (f64, f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize] as f64 / 1e3;
    (at(0.5), at(0.99), at(1.0))
}

fn lateness(sleepers: usize, sleeps: u64, tokio: bool) {
    let scheduler = scheduler();
    let done = Arc::new(AtomicUsize::new(0));
    let samples: Arc<Mutex<Vec<u64>>> = Arc::default();
    for i in 0..sleepers {
        let mut process = Timed::new("lateness", sleeps, &done);
        process.samples = Arc::clone(&samples);
        scheduler
            .submit(process, "lateness", 0x9E37_79B9 * (i as u64 + 1))
            .expect("submit");
    }
    wait_until("lateness", || done.load(Ordering::Relaxed) == sleepers);
    drop(scheduler);
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    let (p50, p99, max) = percentiles(samples);
    println!("lateness  stepsched  p50 {p50:>7.1} µs  p99 {p99:>7.1} µs  max {max:>8.1} µs");
    if !tokio {
        return;
    }
    let rt = tokio_rt();
    let samples = rt.block_on(async {
        let handles: Vec<_> = (0..sleepers)
            .map(|i| {
                tokio::spawn(async move {
                    let mut rng = (0x9E37_79B9 * (i as u64 + 1)) | 1;
                    let mut late = Vec::new();
                    for _ in 0..sleeps {
                        let ms = 1 + xorshift(&mut rng) % 20;
                        let deadline = Instant::now() + Duration::from_millis(ms);
                        tokio::time::sleep_until(deadline.into()).await;
                        late.push(deadline.elapsed().as_nanos() as u64);
                    }
                    late
                })
            })
            .collect();
        let mut all = Vec::new();
        for handle in handles {
            all.extend(handle.await.unwrap());
        }
        all
    });
    let (p50, p99, max) = percentiles(samples);
    println!("lateness  tokio      p50 {p50:>7.1} µs  p99 {p99:>7.1} µs  max {max:>8.1} µs");
}

/// Runs `idle_timers` for one system in a child process and returns its
/// line.
fn idle_timers(processes: u64, per: u64, tokio: bool) {
    for system in ["stepsched", "tokio"] {
        if system == "tokio" && !tokio {
            continue;
        }
        let exe = std::env::current_exe().expect("current exe");
        let out = std::process::Command::new(exe)
            .env(IDLE_CHILD, format!("{system}:{processes}:{per}"))
            .output()
            .expect("child runs");
        assert!(out.status.success(), "{system} idle child: {out:?}");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

fn idle_child(spec: &str) {
    let mut parts = spec.split(':');
    let system = parts.next().unwrap();
    let processes: u64 = parts.next().unwrap().parse().unwrap();
    let per: u64 = parts.next().unwrap().parse().unwrap();
    let timers = processes * per;
    let window = Duration::from_secs(2);
    let (bytes, cpu) = match system {
        "stepsched" => {
            let scheduler = scheduler();
            let done = Arc::new(AtomicUsize::new(0));
            let pids: Vec<_> = (0..processes)
                .map(|_| {
                    (scheduler.submit(Timed::new("idle", per, &done), "idle", 0)).expect("submit")
                })
                .collect();
            wait_until("idle processes", || {
                scheduler.processes().iter().all(|p| p.steps > 0)
            });
            std::thread::sleep(Duration::from_millis(100));
            let rss0 = rss_bytes();
            for pid in &pids {
                let _ = scheduler.send(*pid, Msg::Arm);
            }
            wait_until("armed", || {
                done.load(Ordering::Relaxed) == processes as usize
            });
            std::thread::sleep(Duration::from_millis(100));
            let rss1 = rss_bytes();
            let cpu0 = process_cpu_ns();
            std::thread::sleep(window);
            let cpu = process_cpu_ns() - cpu0;
            assert_eq!(scheduler.stats().timers.fired, 0);
            std::mem::forget(scheduler); // the child exits; no shutdown cost
            (rss1.saturating_sub(rss0), cpu)
        }
        _ => {
            let rt = tokio_rt();
            let armed = Arc::new(AtomicUsize::new(0));
            let (stop, _) = tokio::sync::watch::channel(());
            let mut gates = Vec::new();
            for _ in 0..processes {
                let (go, gate) = tokio::sync::oneshot::channel::<()>();
                gates.push(go);
                let armed = Arc::clone(&armed);
                let mut stopped = stop.subscribe();
                rt.spawn(async move {
                    let _ = gate.await;
                    let mut sleeps: Vec<Pin<Box<tokio::time::Sleep>>> = (0..per)
                        .map(|i| {
                            Box::pin(tokio::time::sleep(
                                Duration::from_secs(60) + Duration::from_micros(i),
                            ))
                        })
                        .collect();
                    // Poll each once: registers it with the timer wheel.
                    std::future::poll_fn(|cx| {
                        for sleep in sleeps.iter_mut() {
                            let _ = sleep.as_mut().poll(cx);
                        }
                        Poll::Ready(())
                    })
                    .await;
                    armed.fetch_add(1, Ordering::Relaxed);
                    let _ = stopped.changed().await;
                    drop(sleeps);
                });
            }
            std::thread::sleep(Duration::from_millis(100));
            let rss0 = rss_bytes();
            for go in gates {
                let _ = go.send(());
            }
            wait_until("armed", || {
                armed.load(Ordering::Relaxed) == processes as usize
            });
            std::thread::sleep(Duration::from_millis(100));
            let rss1 = rss_bytes();
            let cpu0 = process_cpu_ns();
            std::thread::sleep(window);
            let cpu = process_cpu_ns() - cpu0;
            std::mem::forget(rt);
            (rss1.saturating_sub(rss0), cpu)
        }
    };
    println!(
        "idle_timers  {system:<9}  {timers} timers  {:>6.1} bytes/timer  cpu {:.2}% of a core over {:?}",
        bytes as f64 / timers as f64,
        cpu as f64 / window.as_nanos() as f64 * 100.0,
        window
    );
}

fn main() {
    if let Ok(spec) = std::env::var(IDLE_CHILD) {
        return idle_child(&spec);
    }
    let scale: f64 = env_or("SCALE", 1.0);
    let tokio = std::env::var("STEPSCHED_ONLY").is_err();
    let only = std::env::var("ONLY").ok();
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let scaled = |n: f64| ((n * scale).round() as u64).max(1);
    if run("timer_churn") {
        timer_churn(scaled(100_000.0) as usize, tokio);
    }
    if run("deadline_not_hit") {
        deadline_not_hit(scaled(1_000_000.0), tokio);
    }
    if run("lateness") {
        lateness(100, scaled(100.0), tokio);
    }
    if run("idle_timers") {
        idle_timers(1_000, scaled(1_000.0), tokio);
    }
}
