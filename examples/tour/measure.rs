//! What the tour measures: latency histograms, log-linear buckets (8 per
//! power of two, so a bucket is within 12.5% of any value in it), shared by
//! all threads; and ready-to-run waits, from the process dump, which costs
//! the workers nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stepsched::process::Lifecycle;
use stepsched::process::Pid;
use stepsched::sched::Scheduler;

use crate::nodes::Node;

pub struct Histogram {
    buckets: [AtomicU64; 512],
    max: AtomicU64,
}

pub static STEP_TIME: Histogram = Histogram::new();
pub static REQUEST_RTT: Histogram = Histogram::new();
pub static IO_LATENCY: Histogram = Histogram::new();

impl Histogram {
    const fn new() -> Self {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; 512],
            max: AtomicU64::new(0),
        }
    }

    fn bucket(ns: u64) -> usize {
        if ns < 16 {
            return ns as usize;
        }
        let exp = 63 - ns.leading_zeros(); // >= 4
        let sub = (ns >> (exp - 3)) & 7;
        ((exp - 2) * 8) as usize + sub as usize
    }

    /// The largest value that falls in bucket `index`.
    fn upper(index: usize) -> u64 {
        if index < 16 {
            return index as u64;
        }
        let (exp, sub) = (index as u32 / 8 + 2, index as u64 % 8);
        ((8 + sub + 1) << (exp - 3)) - 1
    }

    pub fn record(&self, d: Duration) {
        let ns = d.as_nanos().min(u128::from(u64::MAX)) as u64;
        // Relaxed: statistics, read after the run.
        self.buckets[Self::bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// The upper bound of the bucket holding the `q`-quantile.
    fn quantile(&self, q: f64) -> u64 {
        let rank = ((self.count() as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, bucket) in self.buckets.iter().enumerate() {
            seen += bucket.load(Ordering::Relaxed);
            if seen >= rank {
                return Self::upper(index).min(self.max.load(Ordering::Relaxed));
            }
        }
        self.max.load(Ordering::Relaxed)
    }

    pub fn row(&self, name: &str, what: &str) -> String {
        let q = |q| fmt_ns(self.quantile(q));
        let max = fmt_ns(self.max.load(Ordering::Relaxed));
        format!(
            "  {name:<12} {:>9} {:>9} {:>9} {:>9}  {what} ({} samples)",
            q(0.5),
            q(0.9),
            q(0.99),
            max,
            self.count()
        )
    }
}

fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=9_999 => format!("{:.2} µs", ns as f64 / 1e3),
        10_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

pub fn rate(n: u64, d: Duration) -> String {
    let per_s = n as f64 / d.as_secs_f64();
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}

/// How often the main thread dumps the processes while it waits: a dump
/// reads a few atomics per slot of the process table (~10,000 slots here)
/// and never stops a worker, so every 10 ms costs little, and any wait much
/// longer than 10 ms is seen at nearly its full length.
pub const DUMP_EVERY: Duration = Duration::from_millis(10);

/// The longest time a process sat `Ready` (queued, not yet running) in any
/// dump. A dump reports `since_change`, the time since the process's last
/// transition, which for a `Ready` one is when it was created, woken or
/// re-queued; the scheduler's clock counts milliseconds and may lag by a
/// worker's 488 steps (see `ProcessInfo::since_change`). Waits shorter than
/// the dump interval are mostly not seen: this is a lower bound of the
/// true longest wait, to within a millisecond or two.
///
/// The same dumps give the mailbox high-water mark: the most events queued
/// for one process (`ProcessInfo::queued`, counted because the scheduler is
/// built with `count_queued_events`, an RMW per delivery).
#[derive(Default)]
pub struct ReadyWait {
    longest: Duration,
    pid: Option<Pid>,
    dumps: u64,
    ready_seen: u64,
    most_queued: u32,
    most_queued_pid: Option<Pid>,
}

impl ReadyWait {
    pub fn sample(&mut self, scheduler: &Scheduler<Node>) {
        self.dumps += 1;
        for p in scheduler.processes() {
            let queued = p.queued.unwrap_or(0);
            if queued > self.most_queued {
                self.most_queued = queued;
                self.most_queued_pid = Some(p.pid);
            }
            if p.state == Lifecycle::Ready {
                self.ready_seen += 1;
                if p.since_change > self.longest || self.pid.is_none() {
                    self.longest = p.since_change;
                    self.pid = Some(p.pid);
                }
            }
        }
    }

    pub fn row(&self) -> String {
        let pid = self.pid.map_or("-".to_owned(), |p| p.to_string());
        let deepest = self
            .most_queued_pid
            .map_or("-".to_owned(), |p| p.to_string());
        format!(
            "{}\n  {:<12} {:>39}  most events queued for one process in any dump \
             (process {deepest}): the mailbox high-water mark seen",
            self.wait_row(&pid),
            "mailbox hwm",
            self.most_queued
        )
    }

    fn wait_row(&self, pid: &str) -> String {
        format!(
            "  {:<12} {:>39}  longest a Ready process waited for a worker (process {pid}), \
             in {} dumps every {} ms ({} Ready entries); ms resolution",
            "ready wait",
            fmt_ns(self.longest.as_nanos() as u64),
            self.dumps,
            DUMP_EVERY.as_millis(),
            self.ready_seen
        )
    }
}
