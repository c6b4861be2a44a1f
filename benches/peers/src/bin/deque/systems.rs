//! The systems the scenarios compare (stepsched, crossbeam-deque, st3),
//! behind one small interface: a worker that pushes and pops, and a thief
//! that steals one item or a batch.

use super::*;

// ---------------------------------------------------------------------------
// The systems, behind one small interface.

/// What a steal attempt returned.
pub(crate) enum Got {
    Item(Item),
    Empty,
    Retry,
}

/// One deque implementation. `Worker`s are moved into the threads that own
/// them; `Stealer`s are cloned into thieves.
pub(crate) trait System: Sync {
    type W: Send;
    type S: Send + Sync + Clone;
    fn name(&self) -> &'static str;
    /// A deque at its default capacity; `bound` is the most items it will
    /// hold (only the bounded st3 needs it).
    fn worker(&self, bound: usize) -> Self::W;
    fn stealer(&self, w: &Self::W) -> Self::S;
    fn push(&self, w: &Self::W, item: Item);
    fn pop(&self, w: &Self::W) -> Option<Item>;
    fn len(&self, w: &Self::W) -> usize;
    /// Steals the oldest item. `dest` is only used by st3, which has no
    /// single-item steal (it steals a batch of one into `dest`).
    fn steal(&self, s: &Self::S, dest: &Self::W) -> Got;
    /// Steals a batch: returns one item, moves the rest into `dest`.
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got;
}

pub(crate) struct Stepsched;

impl System for Stepsched {
    type W = stepsched::deque::Worker<Item>;
    type S = stepsched::deque::Stealer<Item>;
    fn name(&self) -> &'static str {
        "stepsched"
    }
    fn worker(&self, _bound: usize) -> Self::W {
        stepsched::deque::Worker::new()
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        w.push(item)
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.len()
    }
    fn steal(&self, s: &Self::S, _dest: &Self::W) -> Got {
        from_stepsched(s.steal())
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        from_stepsched(s.steal_half_into(dest))
    }
}

pub(crate) fn from_stepsched(s: stepsched::deque::Steal<Item>) -> Got {
    match s {
        stepsched::deque::Steal::Success(item) => Got::Item(item),
        stepsched::deque::Steal::Empty => Got::Empty,
        stepsched::deque::Steal::Retry => Got::Retry,
    }
}

/// crossbeam-deque, LIFO (`fifo == false`) or FIFO owner.
pub(crate) struct Crossbeam {
    pub(crate) fifo: bool,
}

impl System for Crossbeam {
    type W = crossbeam_deque::Worker<Item>;
    type S = crossbeam_deque::Stealer<Item>;
    fn name(&self) -> &'static str {
        if self.fifo {
            "crossbeam-fifo"
        } else {
            "crossbeam-lifo"
        }
    }
    fn worker(&self, _bound: usize) -> Self::W {
        if self.fifo {
            crossbeam_deque::Worker::new_fifo()
        } else {
            crossbeam_deque::Worker::new_lifo()
        }
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        w.push(item)
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.len()
    }
    fn steal(&self, s: &Self::S, _dest: &Self::W) -> Got {
        from_crossbeam(s.steal())
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        from_crossbeam(s.steal_batch_and_pop(dest))
    }
}

pub(crate) fn from_crossbeam(s: crossbeam_deque::Steal<Item>) -> Got {
    match s {
        crossbeam_deque::Steal::Success(item) => Got::Item(item),
        crossbeam_deque::Steal::Empty => Got::Empty,
        crossbeam_deque::Steal::Retry => Got::Retry,
    }
}

/// st3 0.4 `lifo::Worker` (bounded). Batches take `n - n/2` of `n` items, as
/// the scenario specifies; with `cap32` at most 32, like the others.
pub(crate) struct St3 {
    pub(crate) cap32: bool,
}

impl System for St3 {
    type W = st3::lifo::Worker<Item>;
    type S = st3::lifo::Stealer<Item>;
    fn name(&self) -> &'static str {
        if self.cap32 {
            "st3-lifo (batch<=32)"
        } else {
            "st3-lifo"
        }
    }
    fn worker(&self, bound: usize) -> Self::W {
        st3::lifo::Worker::new(bound.max(2))
    }
    fn stealer(&self, w: &Self::W) -> Self::S {
        w.stealer()
    }
    fn push(&self, w: &Self::W, item: Item) {
        if w.push(item).is_err() {
            panic!("st3: bounded deque overflowed");
        }
    }
    fn pop(&self, w: &Self::W) -> Option<Item> {
        w.pop()
    }
    fn len(&self, w: &Self::W) -> usize {
        w.capacity() - w.spare_capacity()
    }
    fn steal(&self, s: &Self::S, dest: &Self::W) -> Got {
        match s.steal_and_pop(dest, |_| 1) {
            Ok((item, _)) => Got::Item(item),
            Err(st3::StealError::Empty) => Got::Empty,
            Err(st3::StealError::Busy) => Got::Retry,
        }
    }
    fn steal_batch(&self, s: &Self::S, dest: &Self::W) -> Got {
        let cap32 = self.cap32;
        let count = move |n: usize| {
            let half = n - n / 2;
            if cap32 {
                half.min(32)
            } else {
                half
            }
        };
        match s.steal_and_pop(dest, count) {
            Ok((item, _)) => Got::Item(item),
            Err(st3::StealError::Empty) => Got::Empty,
            Err(st3::StealError::Busy) => Got::Retry,
        }
    }
}
