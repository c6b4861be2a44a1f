//! The books the soak balances at the end: a ledger per kind of id (messages,
//! command replies, processes), each id's byte holding how many times it was
//! accepted, received, reported undelivered or refused; a ring of recent PIDs
//! for picking targets; and the generator that drives the randomness.

use super::*;

/// A xorshift64 generator: deterministic per seed, no dependencies.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(crate) fn chance(&mut self, percent_tenths: u64) -> bool {
        self.below(1_000) < percent_tenths
    }
}

/// Per-id counters, in pages allocated on first use (one byte per id; up
/// to 2^30 ids, about 3 million a second are used). Each id's byte holds
/// four 2-bit counts (so a second event for an id shows up as a 2).
pub(crate) struct Ledger {
    pub(crate) name: &'static str,
    pub(crate) next: AtomicU64,
    pub(crate) pages: Vec<OnceLock<Box<[AtomicU8]>>>,
}

pub(crate) const PAGE_BITS: u32 = 16;
/// Accepted: `send`/`complete` returned Ok, a step sent it, or the process
/// was started.
pub(crate) const ACCEPTED: u8 = 0;
/// Received by a step (messages, replies) or closed (processes).
pub(crate) const RECEIVED: u8 = 2;
/// Reported to `on_undelivered` (messages, replies) or to `on_complete`
/// (unused for processes: on_complete does not know the serial).
pub(crate) const UNDELIVERED: u8 = 4;
/// Refused and handed back.
pub(crate) const REFUSED: u8 = 6;

impl Ledger {
    pub(crate) fn new(name: &'static str) -> Self {
        Ledger {
            name,
            next: AtomicU64::new(0),
            pages: (0..1 << 14).map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn alloc(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        assert!(
            id >> PAGE_BITS < self.pages.len() as u64,
            "{} ledger full: lower SOAK_SECS",
            self.name
        );
        id
    }

    pub(crate) fn cell(&self, id: u64) -> &AtomicU8 {
        let page = self.pages[(id >> PAGE_BITS) as usize]
            .get_or_init(|| (0..1 << PAGE_BITS).map(|_| AtomicU8::new(0)).collect());
        &page[(id & ((1 << PAGE_BITS) - 1)) as usize]
    }

    pub(crate) fn mark(&self, id: u64, what: u8) {
        self.cell(id).fetch_add(1 << what, Ordering::Relaxed);
    }

    pub(crate) fn count(byte: u8, what: u8) -> u8 {
        (byte >> what) & 0b11
    }

    /// Checks every id: accepted once and then received or undelivered
    /// once, or refused once and nothing else. Returns (accepted, received,
    /// undelivered, refused) totals.
    pub(crate) fn check(&self, undelivered_allowed: bool) -> [u64; 4] {
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
pub(crate) struct Registry {
    pub(crate) pids: Mutex<Vec<Pid>>,
    pub(crate) cursor: AtomicUsize,
}

impl Registry {
    pub(crate) const SIZE: usize = 1_024;

    pub(crate) fn push(&self, pid: Pid) {
        let mut pids = self.pids.lock().unwrap();
        if pids.len() < Self::SIZE {
            pids.push(pid);
        } else {
            let at = self.cursor.fetch_add(1, Ordering::Relaxed) % Self::SIZE;
            pids[at] = pid;
        }
    }

    pub(crate) fn pick(&self, rng: &mut Rng) -> Option<Pid> {
        let pids = self.pids.lock().unwrap();
        if pids.is_empty() {
            return None;
        }
        Some(pids[rng.below(pids.len() as u64) as usize])
    }
}
