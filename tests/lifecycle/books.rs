//! The books a round balances at its end: a ledger per kind of id
//! (messages, command replies, processes); the messages themselves, which
//! know their id and report it if the scheduler drops one; the PIDs the
//! threads and processes aim at; and what the hooks saw (outcomes,
//! `Down`s, what a process still waited for when it closed).

use super::*;

/// Accepted: a send returned `Ok`, a step sent it, a completion was
/// delivered, a process was started.
pub(crate) const ACCEPTED: u8 = 0;
/// Received by a step or a receiver (messages, replies) or closed
/// (processes).
pub(crate) const RECEIVED: u8 = 2;
/// Reported to `on_undelivered`.
pub(crate) const UNDELIVERED: u8 = 4;
/// Handed back: `Err(SendError)`, `Event::Refused`, a refused submit.
pub(crate) const REFUSED: u8 = 6;

const PAGE_BITS: u32 = 16;

/// Per-id counters, one byte per id in pages allocated on first use; the
/// byte holds four 2-bit counts (a second event for an id shows as a 2).
pub(crate) struct Ledger {
    name: &'static str,
    next: AtomicU64,
    pages: Vec<OnceLock<Box<[AtomicU8]>>>,
}

impl Ledger {
    pub(crate) fn new(name: &'static str) -> Self {
        Ledger {
            name,
            next: AtomicU64::new(0),
            pages: (0..1 << 12).map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn alloc(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        assert!(
            id >> PAGE_BITS < self.pages.len() as u64,
            "{} ledger full: shorten the rounds",
            self.name
        );
        id
    }

    fn cell(&self, id: u64) -> &AtomicU8 {
        let page = self.pages[(id >> PAGE_BITS) as usize]
            .get_or_init(|| (0..1 << PAGE_BITS).map(|_| AtomicU8::new(0)).collect());
        &page[(id & ((1 << PAGE_BITS) - 1)) as usize]
    }

    pub(crate) fn mark(&self, id: u64, what: u8) {
        self.cell(id).fetch_add(1 << what, Ordering::Relaxed);
    }

    /// Checks every id: accepted once and then received, undelivered or
    /// refused once; or refused once and nothing else. Returns the totals
    /// (accepted, received, undelivered, refused) and the ids out of
    /// balance (at most 20).
    pub(crate) fn check(&self, skip: &HashSet<u64>) -> ([u64; 4], Vec<String>) {
        let mut totals = [0; 4];
        let mut bad = Vec::new();
        for id in 0..self.next.load(Ordering::Relaxed) {
            let byte = self.cell(id).load(Ordering::Relaxed);
            let counts = [ACCEPTED, RECEIVED, UNDELIVERED, REFUSED].map(|w| (byte >> w) & 0b11);
            for (total, n) in totals.iter_mut().zip(counts) {
                *total += u64::from(n);
            }
            let ok = matches!(
                counts,
                [1, 1, 0, 0] | [1, 0, 1, 0] | [1, 0, 0, 1] | [0, 0, 0, 1]
            );
            if !ok && !skip.contains(&id) && bad.len() < 20 {
                let [a, r, u, x] = counts;
                bad.push(format!(
                    "{} {id}: accepted {a}, received {r}, undelivered {u}, refused {x}",
                    self.name
                ));
            }
        }
        (totals, bad)
    }
}

/// What a PID in the registry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// A process that does anything at random.
    Plain,
    /// A process that waits for the `Down` of what it monitors and links.
    Watcher,
    /// An outside receiver (`Scheduler::mailbox`).
    Receiver,
}

/// A PID to aim at: who it is and its serial (processes are ranked by it:
/// a watcher waits only for processes older than itself, so no two wait
/// for each other).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub(crate) pid: Pid,
    pub(crate) who: Who,
    pub(crate) serial: u64,
}

/// A ring of recently created PIDs.
pub(crate) struct Registry {
    entries: Mutex<Vec<Target>>,
    cursor: AtomicUsize,
    /// The highest slot index registered.
    highest: AtomicUsize,
}

impl Registry {
    const SIZE: usize = 512;

    pub(crate) fn new() -> Self {
        Registry {
            entries: Mutex::new(Vec::new()),
            cursor: AtomicUsize::new(0),
            highest: AtomicUsize::new(0),
        }
    }

    pub(crate) fn push(&self, target: Target) {
        let index = target.pid.index() as usize;
        self.highest.fetch_max(index, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap();
        if entries.len() < Self::SIZE {
            entries.push(target);
        } else {
            let at = self.cursor.fetch_add(1, Ordering::Relaxed) % Self::SIZE;
            entries[at] = target;
        }
    }

    pub(crate) fn pick(&self, rng: &mut Rng) -> Option<Target> {
        let entries = self.entries.lock().unwrap();
        if entries.is_empty() {
            return None;
        }
        Some(entries[rng.below(entries.len() as u64) as usize])
    }

    /// The entry of `pid`, if it is still in the ring.
    pub(crate) fn find(&self, pid: Pid) -> Option<Target> {
        let entries = self.entries.lock().unwrap();
        entries.iter().find(|t| t.pid == pid).copied()
    }

    /// A PID that may name nothing: a registered one with its index or
    /// generation nudged, or just past the newest slot (where the next
    /// process or receiver will be).
    pub(crate) fn guess(&self, rng: &mut Rng) -> Pid {
        let base = self.pick(rng).map_or(Pid::from_raw(0), |t| t.pid);
        let (index, generation) = (base.index(), base.generation());
        let (index, generation) = match rng.below(4) {
            0 => (index, generation.wrapping_add(1)),
            1 => (index.wrapping_sub(1), generation),
            2 => (index + 1 + rng.below(3) as u32, generation),
            _ => (rng.below(4_096) as u32, rng.below(3) as u32),
        };
        Pid::from_raw(u64::from(generation) << 32 | u64::from(index))
    }
}

impl Registry {
    /// The PIDs the next occupants of the latest freed slots will have:
    /// the newest PIDs of this ring with their generation bumped (aimed at
    /// a process or receiver being created).
    pub(crate) fn next_occupants(&self) -> Vec<Pid> {
        let entries = self.entries.lock().unwrap();
        let newest = if entries.len() < Self::SIZE {
            entries.len()
        } else {
            self.cursor.load(Ordering::Relaxed) % Self::SIZE
        };
        (1..=8)
            .filter_map(|back| entries.get(newest.checked_sub(back)?))
            .map(|t| {
                let generation = t.pid.generation().wrapping_add(1);
                Pid::from_raw(u64::from(generation) << 32 | u64::from(t.pid.index()))
            })
            .collect()
    }

    /// The PIDs of the next fresh slots (past the highest index seen, of
    /// generation 0), where a process or receiver is made when no slot is
    /// free.
    pub(crate) fn fresh(&self) -> Vec<Pid> {
        let highest = self.highest.load(Ordering::Relaxed) as u64;
        (1..=4).map(|n| Pid::from_raw(highest + n)).collect()
    }

    /// A PID that names no live process: a registered one of an earlier
    /// generation (ended, or never there).
    pub(crate) fn stale(&self, rng: &mut Rng) -> Pid {
        let base = self.pick(rng).map_or(Pid::from_raw(0), |t| t.pid);
        let generation = base.generation().wrapping_sub(1);
        Pid::from_raw(u64::from(generation) << 32 | u64::from(base.index()))
    }
}

/// What a message asks of a process.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Body {
    /// Nothing: it is counted.
    Data,
    /// Send a reply to this PID (a `call`'s receiver, or a process).
    Request(Pid),
    /// The sender linked this watcher (see `watch.rs`).
    LinkedBy(Pid),
}

/// A message of the driver: numbered, and it reports itself if the
/// scheduler drops it without delivering it anywhere.
pub(crate) struct Msg {
    pub(crate) id: u64,
    pub(crate) to: Pid,
    pub(crate) body: Body,
    round: Arc<Round>,
    armed: bool,
}

impl Msg {
    pub(crate) fn new(round: &Arc<Round>, to: Pid, body: Body) -> Self {
        Msg {
            id: round.messages.alloc(),
            to,
            body,
            round: Arc::clone(round),
            armed: true,
        }
    }

    /// Books the message as accepted (sent from a step): it stays armed
    /// until it is settled.
    pub(crate) fn accepted(&self) {
        self.round.messages.mark(self.id, ACCEPTED);
    }

    /// Books the message as `what` and disarms its drop report.
    pub(crate) fn settle(mut self, what: u8) -> Body {
        self.round.messages.mark(self.id, what);
        self.armed = false;
        self.body
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        if self.armed {
            let mut dropped = self.round.dropped.lock().unwrap_or_else(|e| e.into_inner());
            dropped.push((self.id, self.to));
        }
    }
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Msg({} to {}: {:?})", self.id, self.to, self.body)
    }
}

/// How a process ended, as `on_complete` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Done,
    Failed,
    Panicked,
    Terminated,
    Shutdown,
}

impl End {
    pub(crate) fn of(outcome: &Outcome<Actor>) -> End {
        match outcome {
            Ok(_) => End::Done,
            Err(ProcessError::Failed(_)) => End::Failed,
            Err(ProcessError::Panicked(_)) => End::Panicked,
            Err(ProcessError::Terminated) => End::Terminated,
            Err(ProcessError::Shutdown) => End::Shutdown,
            // `ProcessError` is non-exhaustive: an end these books do not
            // know fails the round rather than pass unchecked.
            Err(other) => panic!("an outcome the books do not know: {other:?}"),
        }
    }
}

/// Something a process still waited for when it closed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    Monitor(Pid),
    /// A link; `true`: one the other side made (a linker's).
    Link(Pid, bool),
}

/// Everything a round's threads, processes, handlers and hooks share.
pub(crate) struct Round {
    pub(crate) seed: u64,
    pub(crate) cfg: Config,
    pub(crate) messages: Ledger,
    pub(crate) replies: Ledger,
    pub(crate) processes: Ledger,
    /// Messages the scheduler dropped: (id, addressee).
    pub(crate) dropped: Mutex<Vec<(u64, Pid)>>,
    pub(crate) registry: Registry,
    /// PIDs that ended lately (processes and receivers).
    pub(crate) ended: Registry,
    pub(crate) receivers: Mutex<HashSet<Pid>>,
    /// `on_complete`'s outcomes, and how many times each PID was reported.
    pub(crate) outcomes: Mutex<HashMap<Pid, (End, u32)>>,
    /// Every `Down` a step received: (watcher, target, reason).
    pub(crate) downs: Mutex<Vec<(Pid, Pid, ExitReason)>>,
    /// What processes still waited for when they closed.
    pub(crate) waits: Mutex<HashMap<Pid, Vec<Wait>>>,
    pub(crate) findings: Mutex<Vec<Finding>>,
    /// Completers of the "later" handler: (not before, completer).
    pub(crate) later: Mutex<VecDeque<(Instant, Completer<Actor>)>>,
    /// Public operations made (by the threads and the steps).
    pub(crate) ops: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) completed: AtomicU64,
    /// Set for the last fifth of the storm.
    pub(crate) near: AtomicBool,
    /// Set just before shutdown begins.
    pub(crate) stopping: AtomicBool,
    /// Message ids a known-defect panic in a public call unwound with
    /// (left out of the books).
    pub(crate) skip: Mutex<HashSet<u64>>,
    /// Blocking handlers running now.
    pub(crate) blocking: AtomicUsize,
    /// Set in a simulated round (`simulated.rs`): the clock is the
    /// scheduler's virtual one.
    pub(crate) sim: OnceLock<SimClock>,
}

/// A simulated round's clock: `base` plus the scheduler's virtual time.
/// `base` is taken after the scheduler is built, so it is not before the
/// scheduler's own origin: an instant of this clock is never earlier than
/// the scheduler's reading of the same virtual time (no timer seems early).
pub(crate) struct SimClock {
    pub(crate) base: Instant,
    /// Weak: the scheduler's handlers hold the round.
    pub(crate) scheduler: std::sync::Weak<Scheduler<Actor>>,
    /// Whether the simulation injects faults (`simulated::faults`).
    pub(crate) faults: bool,
}

impl Round {
    pub(crate) fn new(seed: u64, cfg: Config) -> Self {
        Round {
            seed,
            cfg,
            messages: Ledger::new("message"),
            replies: Ledger::new("reply"),
            processes: Ledger::new("process"),
            dropped: Mutex::new(Vec::new()),
            registry: Registry::new(),
            ended: Registry::new(),
            receivers: Mutex::new(HashSet::new()),
            outcomes: Mutex::new(HashMap::new()),
            downs: Mutex::new(Vec::new()),
            waits: Mutex::new(HashMap::new()),
            findings: Mutex::new(Vec::new()),
            later: Mutex::new(VecDeque::new()),
            ops: AtomicU64::new(0),
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            near: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            skip: Mutex::new(HashSet::new()),
            blocking: AtomicUsize::new(0),
            sim: OnceLock::new(),
        }
    }

    /// The timeout or delay of "never": `Duration::MAX`, but an hour in a
    /// simulated round while [`Defect::ClockJumpsToNever`] is known, in
    /// the long run too (it would spoil every round: `LIFECYCLE_STRICT=1`
    /// exercises it).
    pub(crate) fn never(&self) -> Duration {
        if self.simulated() && known(Defect::ClockJumpsToNever) {
            Duration::from_secs(3_600)
        } else {
            Duration::MAX
        }
    }

    /// Whether this round runs under the simulation.
    pub(crate) fn simulated(&self) -> bool {
        self.sim.get().is_some()
    }

    /// Now, on the round's clock: the OS's, or the simulation's virtual
    /// time (steps, handlers and the "later" completers all read this one,
    /// so that a simulated round replays from its seed).
    pub(crate) fn now(&self) -> Instant {
        let Some(sim) = self.sim.get() else {
            return Instant::now();
        };
        let elapsed = sim.scheduler.upgrade().and_then(|s| s.virtual_time());
        sim.base + elapsed.unwrap_or_default()
    }

    pub(crate) fn find(&self, check: Check, defect: Option<Defect>, detail: String) {
        let mut findings = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        // At most 20 of a kind are kept, so that a flood of one kind
        // never crowds out another.
        let kind = (check, defect);
        if findings
            .iter()
            .filter(|f| (f.check, f.defect) == kind)
            .count()
            < 20
        {
            findings.push(Finding::new(check, defect, detail));
        }
    }

    pub(crate) fn op(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn live(&self) -> u64 {
        let started = self.started.load(Ordering::Relaxed);
        started.saturating_sub(self.completed.load(Ordering::Relaxed))
    }

    /// Books a reply id by how `complete` went.
    pub(crate) fn completed(
        &self,
        id: u64,
        result: Result<(), CompleteError<Result<u64, CommandError>>>,
    ) {
        self.op();
        match result {
            Ok(()) => self.replies.mark(id, ACCEPTED),
            Err(e) => match e.into_inner() {
                Ok(back) if back == id => self.replies.mark(id, REFUSED),
                other => self.find(
                    Check::Api,
                    None,
                    format!("complete of reply {id} handed back {other:?}"),
                ),
            },
        }
    }

    /// Completes the held "later" completers that are due (all if `all`).
    pub(crate) fn complete_due(&self, all: bool, rng: &mut Rng) -> usize {
        let now = self.now();
        let mut done = 0;
        loop {
            let next = {
                let mut later = self.later.lock().unwrap();
                match later.front() {
                    Some((due, _)) if all || *due <= now => later.pop_front(),
                    _ => None,
                }
            };
            let Some((_, completer)) = next else { break };
            if rng.chance(50) {
                drop(completer); // completes with `CommandError::Dropped`
            } else {
                let id = self.replies.alloc();
                self.completed(id, completer.succeed(id));
            }
            done += 1;
        }
        done
    }
}

/// Books a submit or spawn by its result.
pub(crate) fn started(
    round: &Round,
    serial: u64,
    who: Who,
    result: Result<Pid, SpawnError<Actor>>,
) {
    match result {
        Ok(pid) => {
            round.processes.mark(serial, ACCEPTED);
            round.started.fetch_add(1, Ordering::Relaxed);
            if who == Who::Plain {
                // A watcher enters the registry in its first step.
                round.registry.push(Target { pid, who, serial });
            }
        }
        Err(e) => {
            let back = e.into_process().serial();
            if back != serial {
                round.find(
                    Check::Api,
                    None,
                    format!("spawn of {serial} handed back {back}"),
                );
            }
            round.processes.mark(serial, REFUSED);
        }
    }
}
