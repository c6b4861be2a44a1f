//! A hierarchical timing wheel (Varghese & Lauck), entries in a slab.
//!
//! Time is counted in *ticks* of [`TICK_NANOS`] (16.384 µs) since the
//! scheduler started. The wheel has [`LEVELS`] levels of 64 slots; a slot
//! of level `k` spans `64^k` ticks, so level 0 covers the next ~1 ms tick by
//! tick, level 1 the next ~67 ms a millisecond at a time, and level 6 about
//! 2.3 years. An entry is placed by the highest bit in which its deadline
//! differs from `elapsed` (the wheel's current time), as in tokio's
//! `time/wheel`: then every entry of a lower level is due before every
//! entry of a higher one, and the first occupied slot of the lowest
//! occupied level (one `trailing_zeros` on that level's bitmap) holds the
//! next expiration. When that slot's start passes, its entries are either
//! fired (deadline reached) or moved down ("cascaded") to a finer level:
//! each entry moves at most once per level, so firing is O(1) amortised and
//! exact to the tick. This is the classic cascading wheel, not the Linux
//! kernel's non-cascading one: Linux rounds a far timer to its level's
//! granularity (up to 12.5 % late), which a `sleep(60 s)` waking 7 s late
//! would not survive; the cascade costs a few list moves per timer.
//!
//! Entries live in one `Vec` (a slab) threaded into doubly linked lists, one
//! per slot, plus a *due* list for entries whose deadline has already
//! passed when they are inserted. Freed entries go on a free list and are
//! reused, so a wheel in steady state allocates nothing; insert and cancel
//! are O(1). A [`Key`] names an entry by index and a generation bumped when
//! the entry is freed, so cancelling a timer that already fired (its entry
//! maybe reused since) does nothing. The generation is 32 bits: a stale key
//! could only hit a reused entry after 2^32 reuses of that one entry
//! between a fire and the cancel that follows it.
//!
//! An entry is 36 bytes (deadline with its list and kind, PID, tag, two
//! links, generation), in a slab of fixed chunks (`entry.rs`) that never
//! shrinks.

pub use super::entry::TimerKind;
use super::entry::{Entries, Entry, NIL};

/// Nanoseconds per tick, as a shift: 2^14 ns = 16.384 µs. Fine enough that
/// rounding a deadline up to a tick adds at most 16 µs (a third of Linux's
/// default 50 µs timer slack on the futex wait a parked worker sleeps in),
/// coarse enough that the seven levels span years.
pub(crate) const TICK_SHIFT: u32 = 14;
/// Nanoseconds per tick.
pub(crate) const TICK_NANOS: u64 = 1 << TICK_SHIFT;
/// Bits of a deadline each level resolves: 64 slots, one `u64` bitmap.
const LEVEL_BITS: u32 = 6;
const SLOTS: usize = 1 << LEVEL_BITS;
/// Levels: 7 * 6 = 42 bits of ticks, about 2.3 years. A deadline further
/// out is parked in the last level and re-placed when that slot comes up.
pub(crate) const LEVELS: usize = 7;
/// The slots' lists, and the due list after them.
const LISTS: usize = LEVELS * SLOTS + 1;
/// The span of the hierarchy, in ticks.
const HORIZON: u64 = 1 << (LEVEL_BITS * LEVELS as u32);
/// The furthest placement, in ticks from `elapsed`: one last-level slot
/// short of the span, so that a far entry never lands in the last level's
/// current slot (where it would look due at once and be re-placed there
/// forever); it is re-placed when its slot comes up.
const FURTHEST: u64 = HORIZON - (HORIZON >> LEVEL_BITS);
/// `Entry::list` of a free entry.
const FREE: u16 = 1023;
/// `Entry::list` of an entry in the due list.
const DUE: u16 = 1022;

/// Names one entry: its slab index and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    /// The key as one word (for compact records).
    pub fn into_raw(self) -> u64 {
        (u64::from(self.index) << 32) | u64::from(self.generation)
    }

    /// A key from [`Key::into_raw`].
    pub fn from_raw(raw: u64) -> Self {
        Key {
            index: (raw >> 32) as u32,
            generation: raw as u32,
        }
    }
}

/// A fired (or cancelled) entry's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// The target process, as a raw PID.
    pub pid: u64,
    /// The timer's tag (for [`TimerKind::Send`], the message's index).
    pub tag: u64,
    /// What to deliver.
    pub kind: TimerKind,
    /// Its deadline, in ticks.
    pub deadline: u64,
    /// The key it had while pending: which arming of its tag this is (a
    /// fired timer's event carries it, so that its process can tell it from
    /// an earlier arming's without reading the clock: `timer/mod.rs`).
    pub key: Key,
}

/// The wheel. Not synchronised: each worker's sits behind its own mutex
/// (`TimerWheel` in `mod.rs`).
pub(crate) struct Wheel {
    entries: Entries,
    /// Head of the free list (through `Entry::next`).
    free: u32,
    /// Head and tail of each slot's list, and of the due list (last).
    /// Arrays, filled by a repeat expression: Miri interprets that as one
    /// step, where `vec![NIL; n]` was a loop of ~900 pushes that every
    /// scheduler built under Miri paid (a worker's wheel is made at build).
    heads: Box<[u32; LISTS]>,
    tails: Box<[u32; LISTS]>,
    /// Bit `s` of `occupied[k]`: slot `s` of level `k` is not empty.
    occupied: [u64; LEVELS],
    /// The wheel's time: no slot before it holds an entry.
    elapsed: u64,
    len: usize,
}

impl Default for Wheel {
    fn default() -> Self {
        Self::new()
    }
}

impl Wheel {
    /// An empty wheel at tick 0.
    pub(crate) fn new() -> Self {
        Wheel {
            entries: Entries::default(),
            free: NIL,
            heads: Box::new([NIL; LISTS]),
            tails: Box::new([NIL; LISTS]),
            occupied: [0; LEVELS],
            elapsed: 0,
            len: 0,
        }
    }

    /// Entries pending.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is pending.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Moves an empty wheel's time to `now`. Without it, a wheel whose
    /// timers are all cancelled before they fire (a timeout beaten by its
    /// completion, again and again) would never advance, and each new
    /// entry would be placed relative to an ever older `elapsed`: at a
    /// coarser level, whose slot may start before `now`, so that it looks
    /// due and costs a cascade (and wakes a parked worker for nothing).
    pub(crate) fn catch_up(&mut self, now: u64) {
        if self.len == 0 {
            self.elapsed = self.elapsed.max(now);
        }
    }

    /// Adds an entry due at tick `deadline` (which may have passed: it then
    /// fires at the next [`Wheel::advance`]). O(1).
    pub(crate) fn insert(&mut self, deadline: u64, pid: u64, tag: u64, kind: TimerKind) -> Key {
        let entry = Entry {
            word: Entry::pack(deadline, FREE, kind),
            pid,
            tag,
            next: NIL,
            prev: NIL,
            generation: 0,
        };
        let index = if self.free != NIL {
            let index = self.free;
            let slot = &mut self.entries[index as usize];
            self.free = slot.next;
            let generation = slot.generation;
            *slot = Entry {
                generation,
                ..entry
            };
            index
        } else {
            let index = u32::try_from(self.entries.len())
                .ok()
                .filter(|&i| i < NIL)
                .expect("timer wheel: more than 2^32 - 1 pending timers");
            self.entries.push(entry);
            index
        };
        self.link(index);
        self.len += 1;
        Key {
            index,
            generation: self.entries[index as usize].generation,
        }
    }

    /// Removes the entry `key` names, if it is still pending, and returns
    /// its contents. O(1).
    pub(crate) fn cancel(&mut self, key: Key) -> Option<Fired> {
        let entry = self.entries.get(key.index as usize)?;
        if entry.generation != key.generation || entry.list() == FREE {
            return None;
        }
        self.unlink(key.index);
        Some(self.release(key.index))
    }

    /// Whether `key` names a pending entry of `kind` for the raw PID `pid`
    /// (a handle's check before it cancels: a key whose generation has
    /// wrapped around to another timer's is not that timer's handle).
    pub(crate) fn holds(&self, key: Key, pid: u64, kind: TimerKind) -> bool {
        self.entries.get(key.index as usize).is_some_and(|entry| {
            entry.generation == key.generation
                && entry.list() != FREE
                && { entry.pid } == pid
                && entry.kind() == kind
        })
    }

    /// The tick at which [`Wheel::advance`] next has something to do: the
    /// start of the first occupied slot (the earliest deadline if it is in
    /// level 0, else a cascade), `elapsed` if an entry is due already, or
    /// `None` if the wheel is empty.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        if self.heads[LEVELS * SLOTS] != NIL {
            return Some(self.elapsed);
        }
        self.next_slot().map(|(_, _, start)| start)
    }

    /// The earliest deadline of any entry (`elapsed` if one is due), not
    /// the next slot to visit: past the hierarchy's span that slot is a
    /// parking place years before the deadline. The first occupied slot
    /// of the lowest occupied level holds the earliest deadline (module
    /// docs), so this scans that one list. For a simulation's driver
    /// (`simulation/`), which must tell a timer for never from a far one.
    pub(crate) fn earliest_deadline(&self) -> Option<u64> {
        if self.heads[LEVELS * SLOTS] != NIL {
            return Some(self.elapsed);
        }
        let (level, slot, _) = self.next_slot()?;
        let mut at = self.heads[level * SLOTS + slot];
        let mut earliest = u64::MAX;
        while at != NIL {
            let entry = &self.entries[at as usize];
            earliest = earliest.min(entry.deadline());
            at = entry.next;
        }
        Some(earliest)
    }

    /// Fires every entry due at tick `now` into `out`, oldest deadline
    /// first (entries of one tick in insertion order), and moves the
    /// wheel's time to `now`.
    pub(crate) fn advance(&mut self, now: u64, out: &mut Vec<Fired>) {
        loop {
            // The due list: inserted late, or cascaded to exactly its tick.
            while let Some(index) = self.pop_front(LEVELS * SLOTS) {
                out.push(self.release(index));
            }
            let Some((level, slot, start)) = self.next_slot() else {
                break;
            };
            if start > now {
                break;
            }
            self.elapsed = self.elapsed.max(start);
            let list = level * SLOTS + slot;
            while let Some(index) = self.pop_front(list) {
                // Re-placed relative to the slot's start: into the due list
                // if its tick is reached, else one or more levels down.
                self.link(index);
            }
        }
        self.elapsed = self.elapsed.max(now);
    }

    /// Takes out every pending entry (shutdown), in no particular order.
    pub(crate) fn drain(&mut self, out: &mut Vec<Fired>) {
        if self.len == 0 {
            // The usual shutdown: no list holds an entry (`release` counts
            // each one out), so none of the 449 lists needs a look.
            return;
        }
        for list in 0..self.heads.len() {
            while let Some(index) = self.pop_front(list) {
                out.push(self.release(index));
            }
        }
    }

    /// The first occupied slot: `(level, slot, start tick)`.
    fn next_slot(&self) -> Option<(usize, usize, u64)> {
        for level in 0..LEVELS {
            let occupied = self.occupied[level];
            if occupied == 0 {
                continue;
            }
            let shift = LEVEL_BITS * level as u32;
            let current = ((self.elapsed >> shift) as usize) & (SLOTS - 1);
            // Rotate so that the current slot is bit 0: the first set bit
            // is the next occupied slot at or after it.
            let distance = occupied.rotate_right(current as u32).trailing_zeros() as usize;
            let slot = (current + distance) % SLOTS;
            let slot_range = 1u64 << shift;
            let level_range = slot_range << LEVEL_BITS;
            let level_start = self.elapsed & !(level_range - 1);
            let mut start = level_start + slot as u64 * slot_range;
            if start < self.elapsed && distance != 0 {
                // Only in the last level: a far deadline placed past the
                // end of the hierarchy wraps into a slot "behind" us.
                start += level_range;
            }
            return Some((level, slot, start.max(self.elapsed)));
        }
        None
    }

    /// Puts entry `index` in the list its deadline calls for, at the tail.
    fn link(&mut self, index: u32) {
        let deadline = self.entries[index as usize].deadline();
        let list = if deadline <= self.elapsed {
            LEVELS * SLOTS
        } else {
            let placed = deadline.min(self.elapsed + FURTHEST);
            let differ = (self.elapsed ^ placed) | (SLOTS as u64 - 1);
            let top_bit = 63 - differ.leading_zeros();
            let level = ((top_bit / LEVEL_BITS) as usize).min(LEVELS - 1);
            let slot = ((placed >> (LEVEL_BITS * level as u32)) as usize) & (SLOTS - 1);
            self.occupied[level] |= 1 << slot;
            level * SLOTS + slot
        };
        let tail = self.tails[list];
        {
            let entry = &mut self.entries[index as usize];
            entry.set_list(if list == LEVELS * SLOTS {
                DUE
            } else {
                list as u16
            });
            entry.prev = tail;
            entry.next = NIL;
        }
        if tail == NIL {
            self.heads[list] = index;
        } else {
            self.entries[tail as usize].next = index;
        }
        self.tails[list] = index;
    }

    /// Takes entry `index` out of its list.
    fn unlink(&mut self, index: u32) {
        let (prev, next, list) = {
            let e = &self.entries[index as usize];
            let list = if e.list() == DUE {
                LEVELS * SLOTS
            } else {
                e.list() as usize
            };
            (e.prev, e.next, list)
        };
        if prev == NIL {
            self.heads[list] = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.tails[list] = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        if self.heads[list] == NIL && list < LEVELS * SLOTS {
            self.occupied[list / SLOTS] &= !(1 << (list % SLOTS));
        }
    }

    fn pop_front(&mut self, list: usize) -> Option<u32> {
        let head = self.heads[list];
        if head == NIL {
            return None;
        }
        self.unlink(head);
        Some(head)
    }

    /// Frees an unlinked entry and returns its contents.
    fn release(&mut self, index: u32) -> Fired {
        let free = self.free;
        let entry = &mut self.entries[index as usize];
        let fired = Fired {
            pid: entry.pid,
            tag: entry.tag,
            kind: entry.kind(),
            deadline: entry.deadline(),
            key: Key {
                index,
                generation: entry.generation,
            },
        };
        entry.set_list(FREE);
        entry.generation = entry.generation.wrapping_add(1);
        entry.next = free;
        self.free = index;
        self.len -= 1;
        fired
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
