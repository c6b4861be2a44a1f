//! Sequential semantics of `stepsched::deque`, through the public API only.
//!
//! Everything here runs on one thread, so every answer is exact: LIFO `pop`,
//! FIFO `steal`, the batch size and order of `steal_half_into`, growth that
//! keeps order across wrap-around, `len`/`is_empty`/`capacity`, stealing after
//! the `Worker` is gone, and drop accounting (every item dropped exactly once
//! when the last handle goes). Miri runs this file (`cargo +nightly miri test
//! --test deque`), so sizes shrink under `cfg!(miri)`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use stepsched::deque::{Pointer, Steal, Stealer, Worker, MAX_STEAL};

/// `full` normally, a much smaller size under Miri (which is ~1000x slower).
fn size(full: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        full
    }
}

/// The batch `steal_half_into` must claim from `n` queued items.
fn expected_batch(n: usize) -> usize {
    n.div_ceil(2).min(MAX_STEAL)
}

fn push_range(range: std::ops::Range<usize>, w: &Worker<Box<usize>>) {
    for i in range {
        w.push(Box::new(i));
    }
}

fn pop_all(w: &Worker<Box<usize>>) -> Vec<usize> {
    std::iter::from_fn(|| w.pop().map(|b| *b)).collect()
}

fn steal_one(s: &Stealer<Box<usize>>) -> Option<usize> {
    match s.steal() {
        Steal::Success(b) => Some(*b),
        Steal::Empty => None,
        Steal::Retry => panic!("steal returned Retry with no concurrent operation"),
    }
}

fn steal_all(s: &Stealer<Box<usize>>) -> Vec<usize> {
    std::iter::from_fn(|| steal_one(s)).collect()
}

/// Counts drops per id, so a double drop and a leak are both visible.
struct Tally(Vec<AtomicUsize>);

impl Tally {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Tally((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }

    fn dropped(&self) -> Vec<usize> {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }

    fn assert_each_dropped_once(&self) {
        let d = self.dropped();
        for (id, &times) in d.iter().enumerate() {
            assert_eq!(times, 1, "item {id} dropped {times} times");
        }
    }
}

struct Counted {
    id: usize,
    tally: Arc<Tally>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.tally.0[self.id].fetch_add(1, Ordering::Relaxed);
    }
}

fn counted(w: &Worker<Box<Counted>>, tally: &Arc<Tally>, ids: std::ops::Range<usize>) {
    for id in ids {
        w.push(Box::new(Counted {
            id,
            tally: tally.clone(),
        }));
    }
}

mod basics;
mod drops;
mod growth;
mod steal_half;

// ---------------------------------------------------------------------------
// A sequential soak against a VecDeque model, all operations mixed.

#[test]
fn random_sequences_match_a_vecdeque_model() {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..size(200, 10) {
        let w = Worker::with_capacity((next() % 4) as usize);
        let s = w.stealer();
        let dest = Worker::with_capacity(1);
        let mut model = VecDeque::new();
        let mut dest_model = VecDeque::new();
        let mut id = 0usize;
        for _ in 0..size(300, 100) {
            match next() % 8 {
                0..=2 => {
                    w.push(Box::new(id));
                    model.push_back(id);
                    id += 1;
                }
                3 => assert_eq!(w.pop().map(|b| *b), model.pop_back()),
                4 => assert_eq!(steal_one(&s), model.pop_front()),
                5 => {
                    let k = expected_batch(model.len());
                    let got = s.steal_half_into(&dest).success().map(|b| *b);
                    assert_eq!(got, model.pop_front());
                    for _ in 1..k {
                        dest_model.push_back(model.pop_front().unwrap());
                    }
                }
                6 => assert_eq!(dest.pop().map(|b| *b), dest_model.pop_back()),
                _ => {
                    assert_eq!(w.len(), model.len());
                    assert_eq!(dest.len(), dest_model.len());
                }
            }
        }
        assert_eq!(
            pop_all(&dest),
            dest_model.into_iter().rev().collect::<Vec<_>>()
        );
        assert_eq!(steal_all(&s), model.into_iter().collect::<Vec<_>>());
    }
}
