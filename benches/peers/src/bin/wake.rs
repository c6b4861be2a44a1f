//! Wake latency from a thread outside the runtime to a parked worker,
//! against the floor the machine sets: how long after a send the receiver
//! starts to run, when every worker of the runtime sleeps in the kernel.
//!
//! - `floor`: a bare two-thread ping: thread B sleeps in `FUTEX_WAIT` on a
//!   word; the main thread reads the clock, sets the word and
//!   `FUTEX_WAKE`s it; B takes the time since the stamp as its wait
//!   returns. No runtime can wake a sleeping thread faster.
//! - `stepsched`: `Scheduler::send` from the main thread to a process on a
//!   2-worker scheduler whose workers have both parked (`stats().sleeping`
//!   read before each send), to the start of the receiving step.
//! - `tokio`: an unbounded mpsc `send` from the main thread to a task
//!   awaiting `recv` on a parked 2-worker runtime, to the return of `recv`.
//! - `go`: `benches/peers/go/wake.go`, built and run by this bin if `go` is
//!   on PATH (GOMAXPROCS=2): a goroutine blocked on a channel receive, fed
//!   by a sender goroutine locked to its OS thread.
//!
//! Every sample follows the previous one by 2 ms
//! (`stepsched_peers::wake::SPACING`), so the waiter is asleep in the
//! kernel, not spinning. The systems take turns round by round, `SAMPLES`
//! samples each a round, so a drift of the machine hits all of them;
//! printed: p50 / p99 / p99.9 over every round's samples, each as a ratio
//! to the floor's same percentile, and the median of the rounds' p50s.
//! The `scheduler` bin's resource figures print the stepsched and tokio
//! figures once, from the same functions.
//!
//! ```text
//! GLIBC_TUNABLES=glibc.malloc.arena_max=1 taskset -c 0,1 \
//!     cargo run --release -p stepsched-peers --bin wake      # 5 rounds of 400
//! SAMPLES=100 ROUNDS=1 cargo run --release -p stepsched-peers --bin wake   # smoke
//! cargo run --release -p stepsched-peers --bin wake -- stepsched  # one side
//! ```
//! Arguments: the words `floor`, `stepsched`, `tokio`, `go` run only those
//! (under `strace -f -c -e trace=futex` or callgrind, say).

use std::path::PathBuf;
use std::process::Command;

use stepsched::sched::Scheduler;
use stepsched_peers::wake::{self, percentile, Sleeper};
use stepsched_peers::workers;

fn env_or(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// `wake.go` built into a temporary directory, or why not.
fn build_go() -> Result<PathBuf, String> {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("go/wake.go");
    let out = std::env::temp_dir().join(format!("stepsched-wake-go-{}", std::process::id()));
    let built = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .output()
        .map_err(|e| format!("no go on PATH ({e})"))?;
    if !built.status.success() {
        return Err(format!(
            "go build failed: {}",
            String::from_utf8_lossy(&built.stderr).trim()
        ));
    }
    Ok(out)
}

/// One round of the Go program: its latencies, in nanoseconds.
fn go_round(program: &PathBuf, samples: usize) -> Vec<u64> {
    let out = Command::new(program)
        .env("GOMAXPROCS", workers().to_string())
        .arg("-n")
        .arg(samples.to_string())
        .output()
        .expect("run the Go program");
    assert!(out.status.success(), "wake.go: {out:?}");
    let latencies: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().parse().expect("a latency in ns"))
        .collect();
    assert_eq!(latencies.len(), samples);
    latencies
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// One system's samples, pooled and per round.
#[derive(Default)]
struct Figures {
    all: Vec<u64>,
    round_p50s: Vec<f64>,
}

impl Figures {
    fn add(&mut self, mut round: Vec<u64>) {
        round.sort_unstable();
        self.round_p50s.push(percentile(&round, 0.5));
        self.all.extend(round);
    }

    fn percentiles(&mut self) -> [f64; 3] {
        self.all.sort_unstable();
        [0.5, 0.99, 0.999].map(|p| percentile(&self.all, p))
    }

    fn median_round_p50(&mut self) -> f64 {
        self.round_p50s.sort_by(f64::total_cmp);
        self.round_p50s[self.round_p50s.len() / 2]
    }
}

fn main() {
    let samples = env_or("SAMPLES", 400).max(1);
    let rounds = env_or("ROUNDS", 5).max(1);
    let words: Vec<String> = std::env::args().skip(1).collect();
    let on = |w: &str| words.is_empty() || words.iter().any(|a| a == w);

    let go = if on("go") {
        match build_go() {
            Ok(program) => Some(program),
            Err(why) => {
                println!("go: skipped, {why}");
                None
            }
        }
    } else {
        None
    };
    let scheduler = on("stepsched").then(|| {
        Scheduler::<Sleeper>::builder()
            .workers(workers())
            .build()
            .expect("scheduler")
    });
    let rt = on("tokio").then(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers())
            .enable_all()
            .build()
            .expect("tokio runtime")
    });

    let mut floor = on("floor").then(Figures::default);
    let mut ours = scheduler.as_ref().map(|_| Figures::default());
    let mut theirs = rt.as_ref().map(|_| Figures::default());
    let mut gos = go.as_ref().map(|_| Figures::default());
    for _ in 0..rounds {
        if let Some(f) = &mut floor {
            f.add(wake::futex_round(samples));
        }
        if let (Some(f), Some(s)) = (&mut ours, &scheduler) {
            f.add(wake::stepsched_round(s, workers(), samples));
        }
        if let (Some(f), Some(rt)) = (&mut theirs, &rt) {
            f.add(wake::tokio_round(rt, samples));
        }
        if let (Some(f), Some(program)) = (&mut gos, &go) {
            f.add(go_round(program, samples));
        }
    }
    if let Some(program) = &go {
        let _ = std::fs::remove_file(program);
    }

    println!(
        "wake latency, µs, {rounds} rounds x {samples} samples {} ms apart, workers parked: \
         p50 / p99 / p99.9 (x floor), median of round p50s",
        wake::SPACING.as_micros() as f64 / 1e3
    );
    let base = floor.as_mut().map(Figures::percentiles);
    let rows: [(&str, Option<&mut Figures>); 4] = [
        ("floor (futex)", floor.as_mut()),
        ("stepsched", ours.as_mut()),
        ("tokio", theirs.as_mut()),
        ("go", gos.as_mut()),
    ];
    for (name, figures) in rows {
        let Some(figures) = figures else { continue };
        let ps = figures.percentiles();
        let cells: Vec<String> = (0..3)
            .map(|i| match base {
                Some(b) => format!("{:>6} ({:.2}x)", us(ps[i]), ps[i] / b[i]),
                None => format!("{:>6}", us(ps[i])),
            })
            .collect();
        println!(
            "  {name:<14} {}   rounds {}",
            cells.join(" / "),
            us(figures.median_round_p50())
        );
    }
}
