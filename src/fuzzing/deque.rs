//! Replays bytes as single-threaded deque operations against `VecDeque`
//! models (front = top, the oldest item; back = bottom, the newest).
//!
//! Two deques take part: `main` and `dest`. Thieves of either steal into the
//! other with `steal_half_into` (or `steal_half_into_with`, whose look is
//! checked too), so batch sizes, batch order and growth of both are checked; `main` can also be orphaned (its `Worker` dropped while
//! its `Stealer` goes on) and replaced. Every item carries a unique id and a
//! shared drop counter, so a duplicated, lost, reordered, leaked or doubly
//! dropped item is a panic.
//!
//! Byte 0 chooses the initial capacities (1 to 4 each, so growth starts at
//! once); every later byte is one operation, `byte % 12` picking it and
//! `byte / 12` its argument where it has one (a burst of up to 22 pushes, so
//! that batches of [`MAX_STEAL`] are reachable from short inputs; the
//! capacity of a replacement `main`).

use std::collections::VecDeque;

use crate::deque::{Steal, Stealer, Worker, MAX_STEAL};
use crate::sync::{Arc, AtomicUsize, Ordering};

/// A queued item: an id, and a counter bumped when it is dropped.
struct Tracked {
    id: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Relaxed: a count read by the same single-threaded engine (or after
        // the threads that drop items were joined).
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

type Item = Box<Tracked>;

/// One deque under test with its model.
struct Side {
    /// `None` once the owner's handle has been dropped.
    worker: Option<Worker<Item>>,
    stealer: Stealer<Item>,
    model: VecDeque<u64>,
    /// The capacity last observed; it may only grow.
    capacity: usize,
    name: &'static str,
}

impl Side {
    fn new(min_capacity: usize, name: &'static str) -> Self {
        let worker = Worker::with_capacity(min_capacity);
        let expected = min_capacity.max(1).next_power_of_two();
        assert_eq!(
            worker.capacity(),
            expected,
            "{name}: with_capacity({min_capacity}) gave the wrong ring"
        );
        Side {
            stealer: worker.stealer(),
            worker: Some(worker),
            model: VecDeque::new(),
            capacity: expected,
            name,
        }
    }

    /// The owner's handle, which exists unless the side was orphaned.
    fn worker(&self) -> &Worker<Item> {
        self.worker.as_ref().expect("side has a worker")
    }

    /// Checks len, is_empty and capacity against the model.
    fn check(&mut self) {
        let n = self.model.len();
        let name = self.name;
        assert_eq!(self.stealer.len(), n, "{name}: Stealer::len");
        assert_eq!(self.stealer.is_empty(), n == 0, "{name}: Stealer::is_empty");
        if let Some(w) = &self.worker {
            assert_eq!(w.len(), n, "{name}: Worker::len");
            assert_eq!(w.is_empty(), n == 0, "{name}: Worker::is_empty");
            let cap = w.capacity();
            assert!(
                cap.is_power_of_two(),
                "{name}: capacity {cap} not a power of two"
            );
            assert!(cap >= n, "{name}: capacity {cap} below len {n}");
            assert!(cap >= self.capacity, "{name}: capacity shrank to {cap}");
            self.capacity = cap;
        }
    }
}

/// The engine's state: two deques, the id source and the drop ledger.
struct Replay {
    main: Side,
    dest: Side,
    next_id: u64,
    drops: Arc<AtomicUsize>,
    /// Items handed back to the engine (each dropped right after checking)
    /// plus items dropped with an orphaned deque.
    gone: usize,
}

impl Replay {
    fn push(&mut self, to_dest: bool) {
        let item = Box::new(Tracked {
            id: self.next_id,
            drops: self.drops.clone(),
        });
        let side = if to_dest {
            &mut self.dest
        } else {
            &mut self.main
        };
        side.worker().push(item);
        side.model.push_back(self.next_id);
        self.next_id += 1;
    }

    /// Checks an item handed back by the deque against the model's answer.
    fn deliver(&mut self, got: Option<Item>, expected: Option<u64>, what: &str) {
        let got = got.map(|item| item.id); // the item drops here
        assert_eq!(got, expected, "{what}");
        if got.is_some() {
            self.gone += 1;
        }
    }

    fn pop(&mut self, from_dest: bool) {
        let side = if from_dest {
            &mut self.dest
        } else {
            &mut self.main
        };
        let got = side.worker().pop();
        let expected = side.model.pop_back();
        let what = format!("{}: pop", side.name);
        self.deliver(got, expected, &what);
    }

    fn steal(&mut self, from_dest: bool) {
        let side = if from_dest {
            &mut self.dest
        } else {
            &mut self.main
        };
        let got = match side.stealer.steal() {
            Steal::Success(item) => Some(item),
            Steal::Empty => None,
            Steal::Retry => panic!("{}: steal returned Retry with no concurrency", side.name),
        };
        let expected = side.model.pop_front();
        let what = format!("{}: steal", side.name);
        self.deliver(got, expected, &what);
    }

    /// `steal_half_into` from one side into the other's worker.
    fn steal_half(&mut self, from_dest: bool) {
        let (victim, thief) = if from_dest {
            (&mut self.dest, &mut self.main)
        } else {
            (&mut self.main, &mut self.dest)
        };
        let Some(thief_worker) = thief.worker.as_ref() else {
            return;
        };
        let n = victim.model.len();
        let k = n.div_ceil(2).min(MAX_STEAL);
        let before = thief_worker.len();
        // Every other batch through `steal_half_into_with`, whose look must
        // see the batch's ids, oldest first, before the thief's deque grows.
        let shown: Vec<u64> = victim.model.iter().take(k).copied().collect();
        let stolen = if n % 2 == 0 {
            victim.stealer.steal_half_into(thief_worker)
        } else {
            victim.stealer.steal_half_into_with(thief_worker, |batch| {
                let ids: Vec<u64> = batch.iter().map(|item| item.id).collect();
                assert_eq!(ids, shown, "{}: steal_half_into_with showed", victim.name);
                assert_eq!(thief_worker.len(), before, "pushed before the look");
            })
        };
        let got = match stolen {
            Steal::Success(item) => Some(item),
            Steal::Empty => None,
            Steal::Retry => panic!("{}: steal_half_into returned Retry", victim.name),
        };
        let expected = victim.model.pop_front();
        for _ in 1..k {
            let id = victim.model.pop_front().expect("k <= n");
            thief.model.push_back(id);
        }
        assert_eq!(
            thief_worker.len(),
            before + k.saturating_sub(1),
            "{} -> {}: steal_half_into of {n} items moved the wrong count (expected {k} taken)",
            victim.name,
            thief.name
        );
        let what = format!("{} -> {}: steal_half_into", victim.name, thief.name);
        self.deliver(got, expected, &what);
    }

    /// Drops `main`'s worker, lets its stealer take a little more, then
    /// drops the stealer too with whatever is left, and starts a new `main`.
    fn orphan_main(&mut self, arg: u8) {
        drop(self.main.worker.take());
        self.main.check();
        for step in 0..arg % 4 {
            if step % 2 == 0 {
                self.steal_half(false);
            } else {
                self.steal(false);
            }
            self.main.check();
        }
        let left = self.main.model.len();
        let old = std::mem::replace(&mut self.main, Side::new(usize::from(arg % 5), "main"));
        let dropped_before = self.drops.load(Ordering::Relaxed);
        drop(old); // the last handle: drops the `left` items still queued
        let dropped = self.drops.load(Ordering::Relaxed) - dropped_before;
        assert_eq!(dropped, left, "orphaned main: dropping the last handle");
        self.gone += left;
    }

    fn check(&mut self) {
        self.main.check();
        self.dest.check();
        assert_eq!(
            self.drops.load(Ordering::Relaxed),
            self.gone,
            "drop count differs from items delivered or discarded"
        );
    }
}

/// Replays `data` as deque operations, panicking on the first difference
/// from the model.
pub fn replay(data: &[u8]) {
    let Some((&first, ops)) = data.split_first() else {
        return;
    };
    let mut r = Replay {
        main: Side::new(usize::from(first & 3) + 1, "main"),
        dest: Side::new(usize::from((first >> 2) & 3) + 1, "dest"),
        next_id: 0,
        drops: Arc::new(AtomicUsize::new(0)),
        gone: 0,
    };
    for &byte in ops {
        match byte % 12 {
            0 | 1 => r.push(false),
            2 => {
                for _ in 0..=byte / 12 {
                    r.push(false);
                }
            }
            3 => r.pop(false),
            4 => r.steal(false),
            5 => r.steal_half(false),
            6 => r.pop(true),
            7 => r.steal(true),
            8 => r.push(true),
            9 => r.steal_half(true),
            10 => r.check(),
            _ => r.orphan_main(byte / 12),
        }
        r.main.check();
        r.dest.check();
    }
    r.check();
    // Drain both from the top and compare the whole remaining order.
    for side in [&r.main, &r.dest] {
        let rest: Vec<u64> =
            std::iter::from_fn(|| side.stealer.steal().success().map(|item| item.id)).collect();
        assert_eq!(
            rest,
            side.model.iter().copied().collect::<Vec<_>>(),
            "{}: final contents",
            side.name
        );
    }
    let Replay {
        main,
        dest,
        next_id,
        drops,
        ..
    } = r;
    drop((main, dest));
    assert_eq!(
        drops.load(Ordering::Relaxed),
        next_id as usize,
        "every item created must be dropped exactly once"
    );
}

#[cfg(test)]
mod tests {
    use super::replay;

    /// xorshift64: deterministic, no dependencies.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn replays_trivial_inputs() {
        replay(&[]);
        replay(&[0]);
        replay(&[0xFF; 64]);
        replay(&[0; 300]);
    }

    #[test]
    fn replays_pseudo_random_inputs() {
        // Miri interprets every instruction: a dozen shorter inputs there
        // (~10 s; twenty of the full length took 137 s).
        let (runs, longest) = if cfg!(miri) { (12, 150) } else { (3000, 400) };
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..runs {
            let len = (xorshift(&mut state) % longest) as usize;
            // A third of the inputs repeat each byte a few times, so the
            // deques swing between empty and large (batches of MAX_STEAL).
            let repeat = if xorshift(&mut state) % 3 == 0 { 8 } else { 1 };
            let mut data = Vec::with_capacity(len);
            while data.len() < len {
                let b = xorshift(&mut state) as u8;
                let times = 1 + xorshift(&mut state) as usize % repeat;
                data.resize(data.len() + times, b);
            }
            replay(&data);
        }
    }
}
