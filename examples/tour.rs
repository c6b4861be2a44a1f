//! A tour of stepsched: a small service in a few seconds.
//!
//! ```text
//! cargo run --release --example tour          # 10,000 sessions
//! cargo run --release --example tour -- 0.1   # a tenth of the sessions
//! ```
//!
//! What runs, all as processes of one type ([`Node`]) on one scheduler:
//!
//! - **sessions** (10,000, submitted from the main thread). Each makes 60
//!   requests, one after another. A request is a message to a **router**
//!   (4); the router replies. With the reply in hand the session yields a
//!   command: a `cache` lookup, which its handler completes inline on the
//!   worker, or an `io` read, which its handler passes to an **io thread**
//!   (a plain `std` thread) that completes it 0.1–0.9 ms later from there; a
//!   few reads fail, as devices do. Now and then a session spawns a **job**
//!   (a child process, `StepOutput::spawn`) that computes for a few steps
//!   (`Status::Continue`) and messages its result back. One request in 20
//!   the session first "thinks" for 1 ms: it sleeps on a timer
//!   (`StepOutput::wake_after`), no thread held. Cache lookups are yielded
//!   with a 1 s timeout (`yield_command_timeout`), which the inline
//!   completion always beats: each timeout is set, then cancelled.
//! - **routers** count what they route and report it in batches to a
//!   **counter**, which adds everything up when the routers stop.
//!
//! The counts are deterministic: the run ends by checking every one of
//! them (and that nothing was undelivered), so nothing can be lost quietly.
//! It prints what ran, throughput, latency percentiles, the longest a
//! ready process waited for a worker and the mailbox high-water mark
//! (both sampled with `Scheduler::processes`, every 10 ms), the scheduler's
//! counters and its shutdown report.

use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::state::Lifecycle;
use stepsched::process::{Command, CommandError, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::{Completer, Scheduler};

const SESSIONS: u32 = 10_000;
const REQUESTS: u32 = 60;
const ROUTERS: u32 = 4;
/// A router reports to the counter every this many requests.
const TALLY_EVERY: u64 = 64;
/// Steps of computing a job takes (each returns `Status::Continue`).
const JOB_STEPS: u32 = 4;
/// Rounds of [`work`] a step does: a stand-in for parsing and logic.
const WORK: u32 = 1_000;

// ---------------------------------------------------------------------------
// The plan: which request does what. Pure functions, so that `main` can
// compute the expected counts the processes must report.

fn uses_io(session: u32, request: u32) -> bool {
    (session + request) % 3 == 0
}

fn io_fails(session: u32, request: u32) -> bool {
    uses_io(session, request) && (session * 7 + request) % 101 == 0
}

/// Whether the session sleeps 1 ms before sending request `request`.
fn thinks(session: u32, request: u32) -> bool {
    request > 0 && (session + request) % 20 == 7
}

fn spawns_job(session: u32, request: u32) -> bool {
    session % 5 == 0 && request % 10 == 9
}

/// A simulated device latency for an io read, 100–900 µs.
fn io_delay(key: u64) -> Duration {
    Duration::from_micros(100 + (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 800)
}

/// Some deterministic CPU work (xorshift rounds).
fn work(seed: u64, rounds: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

// ---------------------------------------------------------------------------
// The process type.

/// Every process in the tour: one type per scheduler, so roles are variants.
enum Node {
    Session(Session),
    Router(Router),
    Counter(Counter),
    Job(Job),
}

enum Msg {
    /// Session → router. `sent` measures the round trip.
    Request { from: Pid, seq: u32, sent: Instant },
    /// Router → session.
    Reply { seq: u32, sent: Instant },
    /// Job → its parent session.
    JobDone { result: u64 },
    /// Router → counter: requests routed since the last tally.
    Tally(u64),
    /// Router → counter: the last tally; the router has stopped.
    RouterDone(u64),
    /// Main thread → router: stop.
    Stop,
}

enum Cmd {
    Cache { key: u64 },
    Io { key: u64, fail: bool },
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Cache { .. } => "cache",
            Cmd::Io { .. } => "io",
        }
    }
}

/// What a process did, reported as its output; the `on_complete` hook adds
/// them all up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Processes that finished (each reports 1).
    processes: u64,
    sessions: u64,
    requests: u64,
    cache: u64,
    io: u64,
    io_errors: u64,
    jobs: u64,
    job_steps: u64,
    routed: u64,
    counted: u64,
    messages: u64,
    /// 1 ms sleeps before a request (timers fired).
    sleeps: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.processes += o.processes;
        self.sessions += o.sessions;
        self.requests += o.requests;
        self.cache += o.cache;
        self.io += o.io;
        self.io_errors += o.io_errors;
        self.jobs += o.jobs;
        self.job_steps += o.job_steps;
        self.routed += o.routed;
        self.counted += o.counted;
        self.messages += o.messages;
        self.sleeps += o.sleeps;
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = Tally;
    type Error = String;

    fn init(&mut self, method: &str, (): ()) -> Result<(), String> {
        let role = match self {
            Node::Session(_) => "session",
            Node::Router(_) => "router",
            Node::Counter(_) => "counter",
            Node::Job(_) => "job",
        };
        if method == role {
            Ok(())
        } else {
            Err(format!("a {role} has no method {method:?}"))
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let start = Instant::now();
        let result = match self {
            Node::Session(s) => s.step(events, out),
            Node::Router(r) => r.step(events, out),
            Node::Counter(c) => c.step(events, out),
            Node::Job(j) => j.step(out),
        };
        STEP_TIME.record(start.elapsed());
        result
    }
}

/// What a session waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// Its first step: nothing yet.
    Start,
    /// The reply to request `seq`.
    Reply(u32),
    /// The completion of the command for the current request.
    Command { io_since: Option<Instant> },
    /// The job it spawned.
    Job,
    /// Its think-time timer, before the next request.
    Think,
}

struct Session {
    id: u32,
    router: Pid,
    request: u32,
    waiting: Waiting,
    checksum: u64,
    tally: Tally,
}

impl Session {
    fn new(id: u32, router: Pid) -> Self {
        Session {
            id,
            router,
            request: 0,
            waiting: Waiting::Start,
            checksum: 0,
            tally: Tally::default(),
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if self.waiting == Waiting::Start {
            self.send_request(out);
        }
        for event in events.drain(..) {
            match (event, self.waiting) {
                (Event::Message(Msg::Reply { seq, sent }), Waiting::Reply(want)) if seq == want => {
                    REQUEST_RTT.record(sent.elapsed());
                    self.checksum ^= work(u64::from(seq), WORK);
                    self.yield_command(out);
                }
                (Event::Completion { tag, result }, Waiting::Command { io_since }) => {
                    if tag != u64::from(self.request) {
                        return Err(format!("session {}: completion of tag {tag}", self.id));
                    }
                    if let Some(since) = io_since {
                        IO_LATENCY.record(since.elapsed());
                    }
                    match result {
                        Ok(value) => self.checksum ^= value,
                        Err(CommandError::Failed(_)) if io_fails(self.id, self.request) => {
                            self.tally.io_errors += 1;
                        }
                        Err(e) => return Err(format!("session {}: {e}", self.id)),
                    }
                    self.after_command(out)?;
                }
                (Event::Timer { tag }, Waiting::Think) if tag == u64::from(self.request) => {
                    self.send_request(out);
                }
                (Event::Message(Msg::JobDone { result }), Waiting::Job) => {
                    self.checksum ^= result;
                    self.next_request(out);
                }
                (Event::Cancel(why), _) => return Err(format!("session {}: {why:?}", self.id)),
                (_, waiting) => {
                    return Err(format!(
                        "session {}: unexpected event in {waiting:?}",
                        self.id
                    ));
                }
            }
        }
        if out.status().is_none() {
            out.set_status(match self.waiting {
                Waiting::Command { .. } => Status::Wait,
                _ => Status::Idle,
            });
        }
        Ok(())
    }

    fn send_request(&mut self, out: &mut StepOutput<'_, Node>) {
        let seq = self.request;
        let request = Msg::Request {
            from: out.pid(),
            seq,
            sent: Instant::now(),
        };
        out.send(self.router, request);
        self.tally.messages += 1;
        self.waiting = Waiting::Reply(seq);
    }

    fn yield_command(&mut self, out: &mut StepOutput<'_, Node>) {
        let key = u64::from(self.id) << 32 | u64::from(self.request);
        let (command, io_since) = if uses_io(self.id, self.request) {
            self.tally.io += 1;
            let fail = io_fails(self.id, self.request);
            (Cmd::Io { key, fail }, Some(Instant::now()))
        } else {
            self.tally.cache += 1;
            (Cmd::Cache { key }, None)
        };
        let tag = u64::from(self.request);
        match command {
            // Inline: the completion is queued before the timeout is set,
            // so it always wins and the timeout is cancelled.
            Cmd::Cache { .. } => out.yield_command_timeout(tag, command, Duration::from_secs(1)),
            _ => out.yield_command(tag, command),
        }
        self.waiting = Waiting::Command { io_since };
    }

    fn after_command(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        if !spawns_job(self.id, self.request) {
            self.next_request(out);
            return Ok(());
        }
        let job = Job {
            parent: out.pid(),
            left: JOB_STEPS,
            acc: self.checksum,
            steps: 0,
        };
        out.spawn(Node::Job(job), "job", ())
            .map_err(|e| format!("session {}: spawn: {e}", self.id))?;
        self.tally.jobs += 1;
        self.waiting = Waiting::Job;
        Ok(())
    }

    fn next_request(&mut self, out: &mut StepOutput<'_, Node>) {
        self.tally.requests += 1;
        self.request += 1;
        if self.request == REQUESTS {
            self.tally.sessions = 1;
            self.tally.processes = 1;
            out.done(self.tally);
        } else if thinks(self.id, self.request) {
            self.tally.sleeps += 1;
            out.wake_after(u64::from(self.request), Duration::from_millis(1));
            self.waiting = Waiting::Think;
        } else {
            self.send_request(out);
        }
    }
}

struct Router {
    counter: Pid,
    routed: u64,
    messages: u64,
}

impl Router {
    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Request { from, seq, sent }) => {
                    black_box(work(u64::from(seq), WORK));
                    out.send(from, Msg::Reply { seq, sent });
                    self.routed += 1;
                    self.messages += 1;
                    if self.routed % TALLY_EVERY == 0 {
                        out.send(self.counter, Msg::Tally(TALLY_EVERY));
                        self.messages += 1;
                    }
                }
                Event::Message(Msg::Stop) => {
                    out.send(self.counter, Msg::RouterDone(self.routed % TALLY_EVERY));
                    self.messages += 1;
                    let (routed, messages) = (self.routed, self.messages);
                    out.done(Tally {
                        processes: 1,
                        routed,
                        messages,
                        ..Tally::default()
                    });
                    return Ok(());
                }
                _ => return Err("router: unexpected event".to_owned()),
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

struct Counter {
    counted: u64,
    routers_done: u32,
}

impl Counter {
    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Tally(n)) => self.counted += n,
                Event::Message(Msg::RouterDone(n)) => {
                    self.counted += n;
                    self.routers_done += 1;
                    if self.routers_done == ROUTERS {
                        out.done(Tally {
                            processes: 1,
                            counted: self.counted,
                            ..Tally::default()
                        });
                        return Ok(());
                    }
                }
                _ => return Err("counter: unexpected event".to_owned()),
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// A child of a session: computes for `JOB_STEPS` steps, then messages its
/// parent the result.
struct Job {
    parent: Pid,
    left: u32,
    acc: u64,
    steps: u64,
}

impl Job {
    fn step(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        self.steps += 1;
        if self.left > 0 {
            self.left -= 1;
            self.acc = work(self.acc, WORK);
            out.set_status(Status::Continue);
        } else {
            out.send(self.parent, Msg::JobDone { result: self.acc });
            out.done(Tally {
                processes: 1,
                job_steps: self.steps,
                messages: 1,
                ..Tally::default()
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The io thread: completes reads when their simulated delay has passed.

enum IoRequest {
    Read {
        key: u64,
        fail: bool,
        completer: Completer<Node>,
    },
    Stop,
}

/// A read in flight, ordered by when it is due (soonest first in the heap).
struct InFlight {
    due: Instant,
    key: u64,
    fail: bool,
    completer: Completer<Node>,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.key) == (other.due, other.key)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: `BinaryHeap` is a max-heap.
        (other.due, other.key).cmp(&(self.due, self.key))
    }
}

/// Runs until `Stop` and every read in flight is completed; returns how many
/// reads it completed.
fn io_thread(requests: mpsc::Receiver<IoRequest>) -> u64 {
    let mut in_flight = BinaryHeap::new();
    let mut completed = 0;
    let mut stopping = false;
    loop {
        let now = Instant::now();
        while in_flight.peek().is_some_and(|r: &InFlight| r.due <= now) {
            let read = in_flight.pop().expect("peeked");
            let delivered = if read.fail {
                read.completer.fail("simulated device error")
            } else {
                read.completer.succeed(work(read.key, 8))
            };
            delivered.expect("the session waits for its read");
            completed += 1;
        }
        let next = match in_flight.peek() {
            Some(read) => requests.recv_timeout(read.due.saturating_duration_since(now)),
            None if stopping => return completed,
            None => requests
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(IoRequest::Read {
                key,
                fail,
                completer,
            }) => {
                in_flight.push(InFlight {
                    due: Instant::now() + io_delay(key),
                    key,
                    fail,
                    completer,
                });
            }
            Ok(IoRequest::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => stopping = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Latency histograms: log-linear buckets (8 per power of two, so a bucket is
// within 12.5% of any value in it), shared by all threads.

struct Histogram {
    buckets: [AtomicU64; 512],
    max: AtomicU64,
}

static STEP_TIME: Histogram = Histogram::new();
static REQUEST_RTT: Histogram = Histogram::new();
static IO_LATENCY: Histogram = Histogram::new();

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

    fn record(&self, d: Duration) {
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

    fn row(&self, name: &str, what: &str) -> String {
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

fn rate(n: u64, d: Duration) -> String {
    let per_s = n as f64 / d.as_secs_f64();
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}

// ---------------------------------------------------------------------------
// Ready-to-run waits, from the process dump: costs the workers nothing.

/// How often the main thread dumps the processes while it waits: a dump
/// reads a few atomics per slot of the process table (~10,000 slots here)
/// and never stops a worker, so every 10 ms costs little, and any wait much
/// longer than 10 ms is seen at nearly its full length.
const DUMP_EVERY: Duration = Duration::from_millis(10);

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
struct ReadyWait {
    longest: Duration,
    pid: Option<Pid>,
    dumps: u64,
    ready_seen: u64,
    most_queued: u32,
    most_queued_pid: Option<Pid>,
}

impl ReadyWait {
    fn sample(&mut self, scheduler: &Scheduler<Node>) {
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

    fn row(&self) -> String {
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

// ---------------------------------------------------------------------------

/// The totals of every finished process (or the first failure), and a
/// signal for the main thread once the sessions are done.
struct Totals {
    tally: Mutex<(Tally, Option<String>)>,
    changed: Condvar,
}

fn main() {
    let scale: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |s| s.parse().expect("a scale factor"));
    let sessions = ((f64::from(SESSIONS) * scale) as u32).max(ROUTERS);

    // The handlers: `cache` completes inline, `io` hands off to the io thread.
    let (io_tx, io_rx) = mpsc::channel();
    let io = thread::Builder::new()
        .name("io".into())
        .spawn(move || io_thread(io_rx))
        .expect("io thread");
    let to_io = io_tx.clone();
    let totals = Arc::new(Totals {
        tally: Mutex::new((Tally::default(), None)),
        changed: Condvar::new(),
    });
    let hook_totals = Arc::clone(&totals);
    let scheduler = Scheduler::<Node>::builder()
        // For the mailbox high-water mark (see `ReadyWait`).
        .count_queued_events(true)
        .handler("cache", |cmd, completer| {
            let Cmd::Cache { key } = cmd else {
                unreachable!("kind names the variant")
            };
            let _ = completer.succeed(work(key, 8)); // inline, on the worker
        })
        .handler("io", move |cmd, completer| {
            let Cmd::Io { key, fail } = cmd else {
                unreachable!("kind names the variant")
            };
            to_io
                .send(IoRequest::Read {
                    key,
                    fail,
                    completer,
                })
                .expect("io thread runs");
        })
        // Runs on the worker as each process ends: keep it short.
        .on_complete(move |pid, outcome| {
            let mut totals = hook_totals.tally.lock().unwrap();
            match outcome {
                Ok(tally) => totals.0.add(tally),
                Err(e) => {
                    totals
                        .1
                        .get_or_insert_with(|| format!("process {pid:?}: {e}"));
                }
            }
            if totals.0.sessions == u64::from(sessions) || totals.1.is_some() {
                hook_totals.changed.notify_all();
            }
        })
        .build()
        .expect("worker threads start");
    let workers = scheduler.workers();
    println!(
        "stepsched tour: {sessions} sessions x {REQUESTS} requests, {ROUTERS} routers, 1 counter, \
         an io thread; {workers} workers\n"
    );

    // The long-lived processes, then the sessions.
    let start = Instant::now();
    let counter = Node::Counter(Counter {
        counted: 0,
        routers_done: 0,
    });
    let counter = scheduler
        .submit_joinable(counter, "counter", ())
        .expect("submit");
    let routers: Vec<_> = (0..ROUTERS)
        .map(|_| {
            let router = Node::Router(Router {
                counter: counter.pid(),
                routed: 0,
                messages: 0,
            });
            scheduler
                .submit_joinable(router, "router", ())
                .expect("submit")
        })
        .collect();
    for id in 0..sessions {
        let session = Node::Session(Session::new(id, routers[(id % ROUTERS) as usize].pid()));
        scheduler.submit(session, "session", ()).expect("submit");
    }

    // Wait for the sessions, then stop the routers; the counter follows.
    let mut ready_wait = ReadyWait::default();
    let mut wait_for = |what: &str, done: &dyn Fn(&Tally) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut tally = totals.tally.lock().unwrap();
        while !done(&tally.0) {
            if let Some(failure) = &tally.1 {
                panic!("{failure}");
            }
            assert!(
                Instant::now() < deadline,
                "{what} stuck: {tally:?}\n{}",
                scheduler.stats()
            );
            tally = totals.changed.wait_timeout(tally, DUMP_EVERY).unwrap().0;
            // Not under the lock: the completion hook takes it.
            drop(tally);
            ready_wait.sample(&scheduler);
            tally = totals.tally.lock().unwrap();
        }
    };
    wait_for("sessions", &|t| t.sessions == u64::from(sessions));
    for router in &routers {
        scheduler
            .send(router.pid(), Msg::Stop)
            .expect("router alive");
    }
    for router in routers {
        router.join().expect("router");
    }
    counter.join().expect("counter");
    // A job's completion hook may still run after its parent finished.
    wait_for("jobs", &|t| {
        t.processes == t.sessions + t.jobs + u64::from(ROUTERS) + 1
    });
    let elapsed = start.elapsed();
    io_tx.send(IoRequest::Stop).expect("io thread runs");
    let io_completed = io.join().expect("io thread");
    let stats = scheduler.stats();
    let report = scheduler.shutdown(Duration::from_secs(1));
    let (tally, failure) = totals.tally.lock().unwrap().clone();

    // What ran.
    let steps = stats.total().steps;
    let commands = tally.cache + tally.io;
    println!("ran");
    println!(
        "  {} sessions, {} routers, 1 counter, {} jobs spawned by sessions: {} processes",
        tally.sessions, ROUTERS, tally.jobs, tally.processes
    );
    println!(
        "  {} requests routed; {} messages between processes (+{ROUTERS} stops from main)",
        tally.routed, tally.messages
    );
    println!(
        "  {commands} commands: {} cache (completed inline), {} io (completed by the io thread, \
         {} of them failed)",
        tally.cache, tally.io, tally.io_errors
    );
    println!("  {steps} steps, {} in jobs", tally.job_steps);
    println!(
        "  {} sleeps of 1 ms on a timer; timers fired {}, cancelled {} (the cache lookups' \
         1 s timeouts), late {}",
        tally.sleeps, stats.timers.fired, stats.timers.cancelled, stats.timers.late
    );
    println!();
    println!(
        "throughput over {:.2} s end to end (first submit to the counter's result)",
        elapsed.as_secs_f64()
    );
    println!(
        "  steps {}   messages {}   commands {}   requests {}",
        rate(steps, elapsed),
        rate(tally.messages, elapsed),
        rate(commands, elapsed),
        rate(tally.requests, elapsed)
    );
    println!();
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9}  (all sessions are live at once and the workers \
         saturated: latencies include queueing behind ready processes)",
        "latency", "p50", "p90", "p99", "max"
    );
    println!(
        "{}",
        STEP_TIME.row("step", "wall time inside Process::step, every step")
    );
    println!(
        "{}",
        REQUEST_RTT.row(
            "request",
            "session -> router -> the session's step that sees the reply"
        )
    );
    println!(
        "{}",
        IO_LATENCY.row(
            "io command",
            "yield -> the step that sees the completion (device delay 0.1-0.9 ms)"
        )
    );
    println!("{}", ready_wait.row());
    println!();
    println!("scheduler stats (before shutdown)");
    println!("{stats}");
    println!();
    println!("shutdown: {report:?}");

    // Every count, against the plan.
    let mut expected = Tally {
        sessions: u64::from(sessions),
        ..Tally::default()
    };
    let mut per_router = [0u64; ROUTERS as usize];
    for s in 0..sessions {
        for r in 0..REQUESTS {
            expected.requests += 1;
            per_router[(s % ROUTERS) as usize] += 1;
            if uses_io(s, r) {
                expected.io += 1;
                expected.io_errors += u64::from(io_fails(s, r));
            } else {
                expected.cache += 1;
            }
            if spawns_job(s, r) {
                expected.jobs += 1;
            }
            expected.sleeps += u64::from(thinks(s, r));
        }
    }
    expected.routed = expected.requests;
    expected.counted = expected.requests;
    expected.job_steps = expected.jobs * u64::from(JOB_STEPS + 1);
    expected.processes = expected.sessions + expected.jobs + u64::from(ROUTERS) + 1;
    let tallies: u64 = per_router.iter().map(|n| n / TALLY_EVERY + 1).sum();
    // Request and reply per request, a result per job, the routers' tallies.
    expected.messages = 2 * expected.requests + expected.jobs + tallies;
    assert_eq!(failure, None, "every process finished with its output");
    assert_eq!(tally, expected, "counts against the plan");
    assert_eq!(io_completed, expected.io, "reads the io thread completed");
    assert_eq!(stats.completed, expected.processes, "processes that ended");
    assert_eq!(
        stats.submitted,
        expected.processes - expected.jobs,
        "submitted from main"
    );
    assert_eq!(
        (stats.live, stats.undelivered, stats.unknown_tags),
        (0, 0, 0)
    );
    assert_eq!(report.cancelled + report.forced + report.stuck, 0);
    println!("\nall counts check out");
}
