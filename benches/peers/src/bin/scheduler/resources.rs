//! Resources: memory per idle process, allocations per message, idle CPU,
//! wake-up latency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::Pid;
use stepsched::sched::Scheduler;
use stepsched_peers::wake::{self, percentile, Sleeper, SleeperMsg};

use crate::scenarios::{pinger_scheduler, stepsched_ping_pong, tokio_ping_pong};
use crate::workloads::{Latch, Pinger, HANG};
use crate::{allocations_during, fmt_ns, tokio_runtime, workers};

pub fn resources(scale: f64) {
    println!("stepsched resources (tokio beside it where the measure applies):");
    bytes_per_idle_process(100_000);
    allocations_per_message();
    idle_cpu();
    let samples = ((1_000.0 * scale.min(1.0)).round() as usize).max(100);
    wake_latency(samples);
}

/// Resident set size in bytes (`/proc/self/statm`, field 2, in pages).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm resident field");
    pages * page_size()
}

/// The kernel page size, from the first mapping in `/proc/self/smaps`.
fn page_size() -> u64 {
    std::fs::read_to_string("/proc/self/smaps")
        .ok()
        .and_then(|smaps| {
            let line = smaps.lines().find(|l| l.starts_with("KernelPageSize:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(4096)
}

/// The environment variable that makes this binary a child measuring one
/// system's idle-task memory (a fresh process, so that neither system
/// reuses heap the other freed).
pub const IDLE_CHILD: &str = "STEPSCHED_PEERS_IDLE_CHILD";

fn bytes_per_idle_process(n: u64) {
    let measure = |system: &str| -> f64 {
        let exe = std::env::current_exe().expect("current exe");
        let out = std::process::Command::new(exe)
            .env(IDLE_CHILD, format!("{system}:{n}"))
            .output()
            .expect("child runs");
        assert!(out.status.success(), "{system} idle child: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{system} idle child said {text:?}"))
    };
    let stepsched = measure("stepsched");
    let tokio = measure("tokio");
    println!(
        "  bytes per idle process     {stepsched:>8.0} B   (RSS growth over {n} idle processes, \
         each a fresh child process; tokio task waiting on its own unbounded channel: {tokio:.0} B)"
    );
}

/// In the child: RSS growth per idle process (stepsched) or per task waiting
/// on its own unbounded channel (tokio), in bytes.
pub fn idle_child(spec: &str) {
    let (system, n) = spec.split_once(':').expect("system:n");
    let n: u64 = n.parse().expect("n");
    let per = match system {
        "stepsched" => stepsched_idle_bytes(n),
        "tokio" => tokio_idle_bytes(n),
        other => panic!("unknown system {other}"),
    };
    println!("{per}");
}

fn stepsched_idle_bytes(n: u64) -> f64 {
    let done = Arc::new(Latch::default());
    let hook = Arc::clone(&done);
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(workers())
        .on_complete(move |_, outcome| hook.hit(outcome.as_ref().map_or(1, |_| 0)))
        .build()
        .expect("scheduler");
    // Warm-up: the threads' buffers and the first table page (a few slots,
    // so that the measured processes need slots never used before).
    const WARM: u64 = 64;
    done.arm(WARM);
    let warm: Vec<Pid> = (0..WARM)
        .map(|_| scheduler.submit(Sleeper::default(), "sleep", ()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    for pid in warm {
        scheduler.send(pid, SleeperMsg::Stop).unwrap();
    }
    assert_eq!(done.wait("idle warm-up"), 0);

    let mut pids: Vec<Pid> = Vec::with_capacity(n as usize);
    let before = rss_bytes();
    done.arm(n);
    pids.extend((0..n).map(|_| scheduler.submit(Sleeper::default(), "sleep", ()).unwrap()));
    // Wait until every one has run its first step and gone Idle.
    let deadline = Instant::now() + HANG;
    while scheduler.stats().total().steps < WARM + n {
        assert!(Instant::now() < deadline, "idle processes never stepped");
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = rss_bytes();
    assert_eq!(scheduler.live() as u64, n);
    // The PID list is ours, not the scheduler's: take it out.
    let pid_bytes = (pids.capacity() * std::mem::size_of::<Pid>()) as u64;
    let per = after.saturating_sub(before).saturating_sub(pid_bytes) as f64 / n as f64;
    for pid in pids {
        scheduler.send(pid, SleeperMsg::Stop).unwrap();
    }
    assert_eq!(done.wait("idle processes"), 0);
    per
}

fn tokio_idle_bytes(n: u64) -> f64 {
    use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
    let rt = tokio_runtime();
    let done = Arc::new(Latch::default());
    let spawn = |senders: &mut Vec<UnboundedSender<u64>>| {
        let (tx, mut rx) = unbounded_channel::<u64>();
        senders.push(tx);
        let done = Arc::clone(&done);
        rt.spawn(async move {
            let mut got = 0;
            while let Some(v) = rx.recv().await {
                got += v;
            }
            done.hit(got);
        });
    };
    const WARM: u64 = 64;
    done.arm(WARM);
    let mut warm = Vec::new();
    (0..WARM).for_each(|_| spawn(&mut warm));
    std::thread::sleep(Duration::from_millis(20));
    drop(warm);
    done.wait("tokio idle warm-up");

    let mut senders = Vec::with_capacity(n as usize);
    let before = rss_bytes();
    done.arm(n);
    (0..n).for_each(|_| spawn(&mut senders));
    std::thread::sleep(Duration::from_millis(200)); // every task polled once
    let after = rss_bytes();
    let sender_bytes = (senders.capacity() * std::mem::size_of::<UnboundedSender<u64>>()) as u64;
    let per = after.saturating_sub(before).saturating_sub(sender_bytes) as f64 / n as f64;
    drop(senders);
    done.wait("tokio idle tasks");
    per
}

fn allocations_per_message() {
    const TRIPS: u64 = 50_000; // 100,000 messages
    let latch = Arc::new(Latch::default());
    let scheduler = pinger_scheduler(&latch);
    stepsched_ping_pong(&scheduler, &latch, TRIPS); // warm-up
    latch.arm(2);
    let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
    let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
    let allocs = allocations_during(|| {
        scheduler.send(a, (b, 2 * TRIPS)).unwrap();
        assert_eq!(latch.wait("allocations ping_pong"), 2 * TRIPS + 1);
    });
    drop(scheduler);

    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    tokio_ping_pong(&rt, &t_latch, TRIPS); // warm-up
    let t_allocs = allocations_during(|| {
        tokio_ping_pong(&rt, &t_latch, TRIPS);
    });
    drop(rt);
    let messages = (2 * TRIPS) as f64;
    println!(
        "  allocations per message    {:>8.4}     (ping-pong of {} messages after warm-up; \
         tokio unbounded mpsc incl. its 2 tasks and channels: {:.4})",
        allocs as f64 / messages,
        2 * TRIPS,
        t_allocs as f64 / messages
    );
}

/// CPU time of this process's threads whose name starts with `prefix`, in
/// nanoseconds (`/proc/self/task/*/schedstat`, field 1). Panics unless it
/// finds `workers()` such threads.
fn thread_cpu_ns(prefix: &str) -> u64 {
    let (mut total, mut threads) = (0, 0);
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = task.expect("task entry").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        threads += 1;
        let schedstat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
        total += schedstat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .expect("schedstat field 1");
    }
    assert_eq!(threads, workers(), "threads named {prefix}*");
    total
}

/// utime + stime of the whole process from `/proc/self/stat`, in clock
/// ticks (usually 10 ms each).
fn process_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 overall, so 12 and 13 after it.
    let rest = &stat[stat.rfind(')').expect("stat comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn idle_cpu() {
    let window = Duration::from_secs(1);
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(workers())
        .thread_name(|i| format!("ss-idle-{i}"))
        .build()
        .expect("scheduler");
    std::thread::sleep(Duration::from_millis(100)); // let the start-up spin end
    let (threads0, ticks0) = (thread_cpu_ns("ss-idle-"), process_cpu_ticks());
    std::thread::sleep(window);
    let (threads1, ticks1) = (thread_cpu_ns("ss-idle-"), process_cpu_ticks());
    let stats = scheduler.stats();
    drop(scheduler);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers())
        .thread_name("tk-idle")
        .enable_all()
        .build()
        .expect("tokio runtime");
    std::thread::sleep(Duration::from_millis(100));
    let t0 = thread_cpu_ns("tk-idle");
    std::thread::sleep(window);
    let t1 = thread_cpu_ns("tk-idle");
    drop(rt);
    let pct = |ns: u64| ns as f64 / window.as_nanos() as f64 * 100.0;
    println!(
        "  idle scheduler CPU         {:>8.4} % of one core over {window:?} (worker threads' \
         schedstat, after {:.0} µs in their first 100 ms; whole process utime+stime: {} ticks; \
         parks {}, wakeups {}; tokio: {:.4} %)",
        pct(threads1 - threads0),
        threads0 as f64 / 1e3,
        ticks1 - ticks0,
        stats.total().parks,
        stats.total().wakeups,
        pct(t1 - t0)
    );
}

/// The figure the `wake` bin measures round by round against a futex
/// floor and Go (`stepsched_peers::wake`), here once beside tokio.
fn wake_latency(samples: usize) {
    let scheduler = Scheduler::<Sleeper>::builder()
        .workers(workers())
        .build()
        .expect("scheduler");
    let mut lat = wake::stepsched_round(&scheduler, workers(), samples);
    lat.sort_unstable();
    drop(scheduler);
    let rt = tokio_runtime();
    let mut t_lat = wake::tokio_round(&rt, samples);
    t_lat.sort_unstable();
    println!(
        "  wake-up latency p50 / p99  {} / {}   (send from outside to the start of the \
         receiving step, both workers parked, {samples} samples; tokio: {} / {}; \
         against a futex floor and Go: the wake bin)",
        fmt_ns(percentile(&lat, 0.5)),
        fmt_ns(percentile(&lat, 0.99)),
        fmt_ns(percentile(&t_lat, 0.5)),
        fmt_ns(percentile(&t_lat, 0.99)),
    );
}
