//! The timing wheel's entries (`wheel.rs`): one timer's 36 bytes, and the
//! slab of fixed chunks that holds them.

/// No entry: the end of a list, or of the free chain.
pub(super) const NIL: u32 = u32::MAX;

/// What an entry asks for when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TimerKind {
    /// `StepOutput::wake_after`/`wake_at`: deliver `Event::Timer { tag }`.
    Timer = 0,
    /// `StepOutput::yield_command_timeout`: deliver a `TimedOut`
    /// completion of command `tag`.
    Timeout = 1,
    /// `Scheduler::send_after`: deliver the message stored at index `tag`
    /// of the wheel's message slab.
    Send = 2,
}

/// One timer: 36 bytes. `packed(4)` and the list and kind folded into
/// the deadline's word keep it under 40 (with a 24-byte record in the
/// process's body, a pending timer costs 60 bytes); fields are only ever
/// read and written by value, never borrowed.
#[repr(C, packed(4))]
pub(super) struct Entry {
    /// Bits 0..52: deadline tick; 52..62: `list`; 62..64: `kind`.
    pub(super) word: u64,
    pub(super) pid: u64,
    pub(super) tag: u64,
    pub(super) next: u32,
    pub(super) prev: u32,
    pub(super) generation: u32,
}

pub(super) const DEADLINE_BITS: u32 = 52;
/// The furthest deadline an entry holds, in ticks (about 2,300 years);
/// later ones are saturated to it.
pub(super) const MAX_DEADLINE: u64 = (1 << DEADLINE_BITS) - 1;
/// `Entry::list` values fit in 10 bits: 448 slots, `DUE`, `FREE`.
const LIST_MASK: u64 = (1 << 10) - 1;

impl Entry {
    /// A chunk's unused entries (never linked, never read).
    const EMPTY: Entry = Entry {
        word: 0,
        pid: 0,
        tag: 0,
        next: NIL,
        prev: NIL,
        generation: 0,
    };

    pub(super) fn deadline(&self) -> u64 {
        self.word & MAX_DEADLINE
    }

    /// `level * 64 + slot`, or `DUE`, or `FREE`.
    pub(super) fn list(&self) -> u16 {
        ((self.word >> DEADLINE_BITS) & LIST_MASK) as u16
    }

    pub(super) fn set_list(&mut self, list: u16) {
        let word = self.word & !(LIST_MASK << DEADLINE_BITS);
        self.word = word | (u64::from(list) & LIST_MASK) << DEADLINE_BITS;
    }

    pub(super) fn kind(&self) -> TimerKind {
        match self.word >> 62 {
            0 => TimerKind::Timer,
            1 => TimerKind::Timeout,
            _ => TimerKind::Send,
        }
    }

    pub(super) fn pack(deadline: u64, list: u16, kind: TimerKind) -> u64 {
        deadline.min(MAX_DEADLINE)
            | (u64::from(list) & LIST_MASK) << DEADLINE_BITS
            | (kind as u64) << 62
    }
}

/// Entries per chunk of [`Entries`]: 36 KiB (smaller chunks measured more
/// bytes per timer: 9 KiB ones fit the holes the records' vectors leave).
const CHUNK: usize = 1024;

/// The wheel's slab: entries in fixed chunks, so that growing it never
/// moves (copies and frees) what it holds. A `Vec` doubling to a million
/// entries leaves its old buffers behind, touched: when they could not be
/// reused, a pending timer measured 78-80 bytes of RSS instead of 61
/// (`idle_timers` in the peers' `timers` bench).
#[derive(Default)]
pub(super) struct Entries {
    chunks: Vec<Box<[Entry; CHUNK]>>,
    len: usize,
}

impl Entries {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    pub(super) fn push(&mut self, entry: Entry) {
        if self.len == self.capacity() {
            // Built in place: a 36 KiB array on the stack would be moved.
            let chunk: Box<[Entry]> = (0..CHUNK).map(|_| Entry::EMPTY).collect();
            let chunk: Box<[Entry; CHUNK]> = chunk.try_into().ok().expect("CHUNK entries");
            self.chunks.push(chunk);
        }
        let i = self.len;
        self.chunks[i / CHUNK][i % CHUNK] = entry;
        self.len += 1;
    }

    pub(super) fn get(&self, index: usize) -> Option<&Entry> {
        (index < self.len).then(|| &self.chunks[index / CHUNK][index % CHUNK])
    }
}

impl core::ops::Index<usize> for Entries {
    type Output = Entry;

    /// One bounds check (the chunk's): an index past `len` but inside the
    /// last chunk reads an unused entry, which the wheel never asks for.
    fn index(&self, index: usize) -> &Entry {
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl core::ops::IndexMut<usize> for Entries {
    fn index_mut(&mut self, index: usize) -> &mut Entry {
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::{Entries, Entry, TimerKind, CHUNK};

    /// Entries keep their place and value as the slab grows past chunk
    /// boundaries, and nothing beyond its length is reachable.
    #[test]
    fn entries_stay_put_across_chunks() {
        let mut entries = Entries::default();
        let n = 2 * CHUNK + CHUNK / 2;
        for i in 0..n {
            let word = Entry::pack(i as u64, 0, TimerKind::Timer);
            entries.push(Entry {
                tag: i as u64,
                word,
                ..Entry::EMPTY
            });
        }
        assert_eq!(entries.len(), n);
        assert_eq!(entries.capacity(), 3 * CHUNK);
        for i in 0..n {
            let (tag, deadline) = (entries[i].tag, entries[i].deadline());
            assert_eq!((tag, deadline), (i as u64, i as u64));
        }
        entries[CHUNK].generation = 7;
        assert_eq!(entries.get(CHUNK).map(|e| e.generation), Some(7));
        assert!(entries.get(n).is_none());
    }
}
