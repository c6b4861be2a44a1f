//! Soak test: proves that under random load nothing is lost or doubled.
//! Four client threads submit, send, terminate and complete at random
//! against a scheduler of 2 workers for `SOAK_SECS` seconds (default 60),
//! while the processes themselves send messages, yield commands (completed
//! inline, or later from a helper thread after a small random delay), spawn
//! children, fail or panic now and then. At the end the scheduler is shut
//! down and the books must balance:
//!
//! - every message id is either refused at `send` (handed back) or, once
//!   accepted, received by exactly one step or reported exactly once to
//!   `on_undelivered`;
//! - every command reply likewise: handed back by `Completer::complete`, or
//!   received once, or reported once;
//! - every process started is closed exactly once and reported once to
//!   `on_complete`; none is left live or stuck.
//!
//! ```text
//! SOAK_SECS=5 cargo test --release --test soak -- --ignored --nocapture
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{
    Cancel, Command, CommandError, Event, Pid, Process, ProcessError, SpawnError, Status,
    StepOutput,
};
use stepsched::sched::{CompleteError, Completer, Scheduler, SendError};

/// Live processes the clients and spawning steps aim to stay under.
const LIVE_CAP: usize = 2_000;
/// Client threads.
const CLIENTS: u64 = 4;
/// The panic message of deliberate panics (silenced by the panic hook).
const DELIBERATE: &str = "soak: deliberate panic";

/// A xorshift64 generator: deterministic per seed, no dependencies.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent_tenths: u64) -> bool {
        self.below(1_000) < percent_tenths
    }
}

/// Per-id counters, in pages allocated on first use (one byte per id; up
/// to 2^30 ids, about 3 million a second are used). Each id's byte holds
/// four 2-bit counts (so a second event for an id shows up as a 2).
struct Ledger {
    name: &'static str,
    next: AtomicU64,
    pages: Vec<OnceLock<Box<[AtomicU8]>>>,
}

const PAGE_BITS: u32 = 16;
/// Accepted: `send`/`complete` returned Ok, a step sent it, or the process
/// was started.
const ACCEPTED: u8 = 0;
/// Received by a step (messages, replies) or closed (processes).
const RECEIVED: u8 = 2;
/// Reported to `on_undelivered` (messages, replies) or to `on_complete`
/// (unused for processes: on_complete does not know the serial).
const UNDELIVERED: u8 = 4;
/// Refused and handed back.
const REFUSED: u8 = 6;

impl Ledger {
    fn new(name: &'static str) -> Self {
        Ledger {
            name,
            next: AtomicU64::new(0),
            pages: (0..1 << 14).map(|_| OnceLock::new()).collect(),
        }
    }

    fn alloc(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        assert!(
            id >> PAGE_BITS < self.pages.len() as u64,
            "{} ledger full: lower SOAK_SECS",
            self.name
        );
        id
    }

    fn cell(&self, id: u64) -> &AtomicU8 {
        let page = self.pages[(id >> PAGE_BITS) as usize]
            .get_or_init(|| (0..1 << PAGE_BITS).map(|_| AtomicU8::new(0)).collect());
        &page[(id & ((1 << PAGE_BITS) - 1)) as usize]
    }

    fn mark(&self, id: u64, what: u8) {
        self.cell(id).fetch_add(1 << what, Ordering::Relaxed);
    }

    fn count(byte: u8, what: u8) -> u8 {
        (byte >> what) & 0b11
    }

    /// Checks every id: accepted once and then received or undelivered
    /// once, or refused once and nothing else. Returns (accepted, received,
    /// undelivered, refused) totals.
    fn check(&self, undelivered_allowed: bool) -> [u64; 4] {
        let mut totals = [0; 4];
        let mut bad = Vec::new();
        for id in 0..self.next.load(Ordering::Relaxed) {
            let byte = self.cell(id).load(Ordering::Relaxed);
            let [a, r, u, x] =
                [ACCEPTED, RECEIVED, UNDELIVERED, REFUSED].map(|w| Self::count(byte, w));
            for (total, n) in totals.iter_mut().zip([a, r, u, x]) {
                *total += u64::from(n);
            }
            let ok = match (a, r, u, x) {
                (1, 1, 0, 0) | (0, 0, 0, 1) => true,
                (1, 0, 1, 0) => undelivered_allowed,
                _ => false,
            };
            if !ok && bad.len() < 20 {
                bad.push(format!(
                    "id {id}: accepted {a}, received {r}, undelivered {u}, refused {x}"
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{} ledger out of balance:\n{}",
            self.name,
            bad.join("\n")
        );
        totals
    }
}

/// A ring of recently created PIDs for picking random targets.
struct Registry {
    pids: Mutex<Vec<Pid>>,
    cursor: AtomicUsize,
}

impl Registry {
    const SIZE: usize = 1_024;

    fn push(&self, pid: Pid) {
        let mut pids = self.pids.lock().unwrap();
        if pids.len() < Self::SIZE {
            pids.push(pid);
        } else {
            let at = self.cursor.fetch_add(1, Ordering::Relaxed) % Self::SIZE;
            pids[at] = pid;
        }
    }

    fn pick(&self, rng: &mut Rng) -> Option<Pid> {
        let pids = self.pids.lock().unwrap();
        if pids.is_empty() {
            return None;
        }
        Some(pids[rng.below(pids.len() as u64) as usize])
    }
}

/// Everything the processes, hooks, handlers and threads share.
struct Ctx {
    messages: Ledger,
    replies: Ledger,
    processes: Ledger,
    registry: Registry,
    /// Completers to complete later: (not before, completer).
    later: Mutex<VecDeque<(Instant, Completer<Soaker>)>>,
    on_complete: AtomicU64,
    started: AtomicU64,
    outcomes: [AtomicU64; 5], // done, failed, panicked, terminated, shutdown
    terminate_ok: AtomicU64,
    failures: Mutex<Vec<String>>,
}

impl Ctx {
    fn fail(&self, what: String) {
        let mut failures = self.failures.lock().unwrap();
        if failures.len() < 20 {
            failures.push(what);
        }
    }

    fn live(&self) -> usize {
        let started = self.started.load(Ordering::Relaxed);
        started.saturating_sub(self.on_complete.load(Ordering::Relaxed)) as usize
    }

    /// Marks a reply id by how `complete` went.
    fn completed(&self, id: u64, result: Result<(), CompleteError<Result<u64, CommandError>>>) {
        match result {
            Ok(()) => self.replies.mark(id, ACCEPTED),
            Err(e) => match e.into_inner() {
                Ok(back) if back == id => self.replies.mark(id, REFUSED),
                other => self.fail(format!("reply {id} handed back as {other:?}")),
            },
        }
    }
}

#[derive(Debug)]
enum Cmd {
    Inline,
    Later,
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Inline => "inline",
            Cmd::Later => "later",
        }
    }
}

/// A randomly behaving process.
struct Soaker {
    serial: u64,
    rng: Rng,
    steps_left: u32,
    next_tag: u64,
    pending: Vec<u64>,
    ctx: Arc<Ctx>,
}

impl Soaker {
    fn new(ctx: &Arc<Ctx>) -> Self {
        Soaker {
            serial: ctx.processes.alloc(),
            rng: Rng::new(0),
            steps_left: 0,
            next_tag: 0,
            pending: Vec::new(),
            ctx: Arc::clone(ctx),
        }
    }
}

impl Process for Soaker {
    type Input = u64;
    type Message = u64;
    type Command = Cmd;
    type Reply = u64;
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, seed: u64) -> Result<(), String> {
        self.rng = Rng::new(seed ^ self.serial);
        self.steps_left = 1 + self.rng.below(30) as u32;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let ctx = Arc::clone(&self.ctx);
        let mut stop = false;
        for event in events.drain(..) {
            match event {
                Event::Message(id) => ctx.messages.mark(id, RECEIVED),
                Event::Completion { tag, result } => {
                    match self.pending.iter().position(|t| *t == tag) {
                        Some(at) => {
                            self.pending.swap_remove(at);
                        }
                        None => ctx.fail(format!("{}: completion of unknown tag {tag}", out.pid())),
                    }
                    match result {
                        Ok(id) => ctx.replies.mark(id, RECEIVED),
                        Err(e) => ctx.fail(format!("{}: tag {tag} failed: {e}", out.pid())),
                    }
                }
                Event::Cancel(Cancel::Shutdown) => stop = true,
                Event::Cancel(Cancel::Terminate) => {}
                other => ctx.fail(format!("{}: unexpected {other:?}", out.pid())),
            }
        }
        if stop {
            out.done(self.serial);
            return Ok(());
        }
        let rng = &mut self.rng;
        for _ in 0..rng.below(4) {
            if let Some(to) = ctx.registry.pick(rng) {
                let id = ctx.messages.alloc();
                ctx.messages.mark(id, ACCEPTED);
                out.send(to, id);
            }
        }
        if self.pending.len() < 3 && rng.chance(300) {
            let tag = self.next_tag;
            self.next_tag += 1;
            let command = if rng.chance(500) {
                Cmd::Inline
            } else {
                Cmd::Later
            };
            out.yield_command(tag, command);
            self.pending.push(tag);
        }
        if ctx.live() < LIVE_CAP && rng.chance(50) {
            let child = Soaker::new(&ctx);
            let serial = child.serial;
            match out.spawn(child, "soak", rng.next()) {
                Ok(pid) => {
                    ctx.processes.mark(serial, ACCEPTED);
                    ctx.started.fetch_add(1, Ordering::Relaxed);
                    ctx.registry.push(pid);
                }
                Err(e) => {
                    let back = e.into_process().serial;
                    if back != serial {
                        ctx.fail(format!("spawn handed back {back}, not {serial}"));
                    }
                    ctx.processes.mark(serial, REFUSED);
                }
            }
        }
        if rng.chance(3) {
            return Err("deliberate failure".to_owned());
        }
        if rng.chance(2) {
            panic!("{DELIBERATE}");
        }
        self.steps_left = self.steps_left.saturating_sub(1);
        if self.steps_left == 0 && self.pending.is_empty() {
            out.done(self.serial);
        } else if !self.pending.is_empty() && rng.chance(700) {
            out.set_status(Status::Wait);
        } else if rng.chance(600) {
            out.set_status(Status::Idle);
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }

    fn close(&mut self) {
        self.ctx.processes.mark(self.serial, RECEIVED);
    }
}

fn soak_secs() -> u64 {
    std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

/// Silences the deliberate panics (this binary holds this one test).
fn quiet_deliberate_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|s| s == DELIBERATE);
        if !deliberate {
            default(info);
        }
    }));
}

fn build(ctx: &Arc<Ctx>) -> Scheduler<Soaker> {
    let (c1, c2, c3) = (Arc::clone(ctx), Arc::clone(ctx), Arc::clone(ctx));
    let c4 = Arc::clone(ctx);
    Scheduler::<Soaker>::builder()
        .workers(2)
        .handler("inline", move |_, completer| {
            let id = c1.replies.alloc();
            c1.completed(id, completer.succeed(id));
        })
        .handler("later", move |_, completer| {
            let delay = Duration::from_micros(c2.replies.next.load(Ordering::Relaxed) % 2_000);
            c2.later
                .lock()
                .unwrap()
                .push_back((Instant::now() + delay, completer));
        })
        .on_undelivered(move |pid, event| match event {
            Event::Message(id) => c3.messages.mark(id, UNDELIVERED),
            Event::Completion { result: Ok(id), .. } => c3.replies.mark(id, UNDELIVERED),
            Event::Completion {
                tag,
                result: Err(e),
            } => c3.fail(format!("{pid}: undelivered error completion {tag}: {e}")),
            Event::Cancel(_) => {}
            other => c3.fail(format!("{pid}: unexpected undelivered {other:?}")),
        })
        .on_complete(move |_, outcome| {
            let kind = match outcome {
                Ok(_) => 0,
                Err(ProcessError::Failed(_)) => 1,
                Err(ProcessError::Panicked(_)) => 2,
                Err(ProcessError::Terminated) => 3,
                Err(ProcessError::Shutdown) => 4,
            };
            c4.outcomes[kind].fetch_add(1, Ordering::Relaxed);
            c4.on_complete.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap()
}

/// Completes the held completers that are due (all of them if `all`).
fn complete_due(ctx: &Ctx, all: bool, max: usize) -> usize {
    let now = Instant::now();
    let mut done = 0;
    while done < max {
        let next = {
            let mut later = ctx.later.lock().unwrap();
            match later.front() {
                Some((due, _)) if all || *due <= now => later.pop_front(),
                _ => None,
            }
        };
        let Some((_, completer)) = next else { break };
        let id = ctx.replies.alloc();
        ctx.completed(id, completer.succeed(id));
        done += 1;
    }
    done
}

/// One client thread's random operations until `deadline`.
fn client(
    index: u64,
    scheduler: &Scheduler<Soaker>,
    ctx: &Arc<Ctx>,
    deadline: Instant,
) -> Vec<stepsched::sched::JoinHandle<Soaker>> {
    let mut rng = Rng::new(0xC0FFEE + index);
    let mut joinable = Vec::new();
    while Instant::now() < deadline {
        match rng.below(1_000) {
            0..=249 => {
                if ctx.live() >= LIVE_CAP {
                    continue;
                }
                let process = Soaker::new(ctx);
                let serial = process.serial;
                let seed = rng.next();
                let result = if rng.chance(100) {
                    scheduler.submit_joinable(process, "soak", seed).map(|h| {
                        let pid = h.pid();
                        joinable.push(h);
                        pid
                    })
                } else {
                    scheduler.submit(process, "soak", seed)
                };
                match result {
                    Ok(pid) => {
                        ctx.processes.mark(serial, ACCEPTED);
                        ctx.started.fetch_add(1, Ordering::Relaxed);
                        ctx.registry.push(pid);
                    }
                    Err(e) => {
                        let refused_at_capacity = matches!(e, SpawnError::AtCapacity(_));
                        let back = e.into_process().serial;
                        if back != serial || !refused_at_capacity {
                            ctx.fail(format!("submit refused {serial} (got {back} back)"));
                        }
                        ctx.processes.mark(serial, REFUSED);
                    }
                }
            }
            250..=499 => {
                let to = if rng.chance(20) {
                    Pid::from_raw(rng.next())
                } else {
                    match ctx.registry.pick(&mut rng) {
                        Some(pid) => pid,
                        None => continue,
                    }
                };
                let id = ctx.messages.alloc();
                match scheduler.send(to, id) {
                    Ok(()) => ctx.messages.mark(id, ACCEPTED),
                    Err(e) => {
                        if matches!(e, SendError::ShuttingDown(_)) {
                            ctx.fail(format!("send refused as shutting down while running: {e}"));
                        }
                        let back = e.into_inner();
                        if back != id {
                            ctx.fail(format!("send of {id} handed back {back}"));
                        }
                        ctx.messages.mark(id, REFUSED);
                    }
                }
            }
            500..=509 => {
                if let Some(pid) = ctx.registry.pick(&mut rng) {
                    if scheduler.terminate(pid).is_ok() {
                        ctx.terminate_ok.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            _ => {
                if complete_due(ctx, rng.chance(200), 8) == 0 {
                    // Nothing due: let the workers and the helper run.
                    thread::yield_now();
                }
            }
        }
    }
    joinable
}

#[test]
#[ignore = "soak test: SOAK_SECS=5 cargo test --release --test soak -- --ignored"]
fn random_load_from_four_threads_loses_and_doubles_nothing() {
    quiet_deliberate_panics();
    let secs = soak_secs();
    let ctx = Arc::new(Ctx {
        messages: Ledger::new("message"),
        replies: Ledger::new("reply"),
        processes: Ledger::new("process"),
        registry: Registry {
            pids: Mutex::new(Vec::new()),
            cursor: AtomicUsize::new(0),
        },
        later: Mutex::new(VecDeque::new()),
        on_complete: AtomicU64::new(0),
        started: AtomicU64::new(0),
        outcomes: Default::default(),
        terminate_ok: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let scheduler = Arc::new(build(&ctx));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);

    let helper_stop = Arc::new(AtomicBool::new(false));
    let helper = {
        let (ctx, stop) = (Arc::clone(&ctx), Arc::clone(&helper_stop));
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if complete_due(&ctx, false, usize::MAX) == 0 {
                    thread::sleep(Duration::from_micros(200));
                }
            }
        })
    };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (scheduler, ctx) = (Arc::clone(&scheduler), Arc::clone(&ctx));
            thread::spawn(move || client(i, &scheduler, &ctx, deadline))
        })
        .collect();
    let mut joinable = Vec::new();
    for client in clients {
        joinable.extend(client.join().expect("a client thread panicked"));
    }
    let stats_before = scheduler.stats();

    let report = scheduler.shutdown(Duration::from_secs(10));
    helper_stop.store(true, Ordering::Relaxed);
    helper.join().unwrap();
    // Whatever is still held can no longer be delivered: handed back.
    complete_due(&ctx, true, usize::MAX);
    let stats = scheduler.stats();

    for handle in joinable {
        match handle.join_timeout(Duration::from_secs(1)) {
            Ok(Ok(_)) | Ok(Err(_)) => {}
            Err(h) => panic!("joinable {} has no outcome after shutdown", h.pid()),
        }
    }
    let failures = ctx.failures.lock().unwrap().clone();
    let messages = ctx.messages.check(true);
    let replies = ctx.replies.check(true);
    let processes = ctx.processes.check(false);
    let outcomes: Vec<u64> = ctx
        .outcomes
        .iter()
        .map(|o| o.load(Ordering::Relaxed))
        .collect();
    println!(
        "soak {secs} s: processes started {} refused {}; outcomes done/failed/panicked/terminated/shutdown {outcomes:?}; terminate ok {}",
        processes[0],
        processes[3],
        ctx.terminate_ok.load(Ordering::Relaxed)
    );
    println!(
        "messages accepted {} received {} undelivered {} refused {}",
        messages[0], messages[1], messages[2], messages[3]
    );
    println!(
        "replies accepted {} received {} undelivered {} refused {}",
        replies[0], replies[1], replies[2], replies[3]
    );
    println!("{report:?}\nbefore shutdown:\n{stats_before}\nafter:\n{stats}");

    assert!(failures.is_empty(), "failures: {failures:#?}");
    let started_count = ctx.started.load(Ordering::Relaxed);
    assert_eq!(processes[0], started_count);
    assert_eq!(
        processes[1], started_count,
        "every started process closed once"
    );
    assert_eq!(
        ctx.on_complete.load(Ordering::Relaxed),
        started_count,
        "every started process reported to on_complete once"
    );
    assert_eq!(stats.live, 0, "{stats}");
    assert_eq!(report.stuck, 0, "{report:?}");
    assert!(
        !report.timed_out,
        "processes finish on Cancel::Shutdown: {report:?}"
    );
    assert_eq!(report.forced, 0, "{report:?}");
    assert_eq!(stats.unknown_tags, 0);
    assert!(
        started_count > 0 && messages[1] > 0 && replies[1] > 0,
        "the load ran"
    );
}
