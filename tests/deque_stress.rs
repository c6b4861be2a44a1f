//! Multi-threaded stress of `stepsched::deque`: an owner pushing, popping
//! and now and then stealing its own oldest item (the scheduler's fairness
//! turn) while thieves `steal` and `steal_half_into`, every item accounted
//! for exactly once.
//!
//! Each test is bounded by an item count, not by wall time, and asserts
//! nothing about timing. In release each runs for about a second on two
//! cores; debug builds use fewer items, and Miri fewer still.
//!
//! ```text
//! cargo test --release --test deque_stress
//! ```

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use stepsched::deque::{Steal, Stealer, Worker};

/// Items per test: `release` in optimised builds, fewer in debug, very few
/// under Miri.
fn items(release: usize) -> usize {
    if cfg!(miri) {
        (release / 10_000).max(50)
    } else if cfg!(debug_assertions) {
        release / 10
    } else {
        release
    }
}

/// A xorshift64 generator: deterministic per seed, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One flag per item id: set when the item is delivered. Delivering an id
/// twice panics at once, naming it and who saw it; `assert_all_seen` finds
/// lost ids.
struct Seen(Vec<AtomicU8>);

impl Seen {
    fn new(n: usize) -> Self {
        Seen((0..n).map(|_| AtomicU8::new(0)).collect())
    }

    fn mark(&self, id: usize, by: &str) {
        let before = self.0[id].fetch_add(1, Ordering::Relaxed);
        assert_eq!(before, 0, "item {id} delivered twice (second time to {by})");
    }

    fn assert_all_seen(&self) {
        let missing: Vec<usize> = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, c)| c.load(Ordering::Relaxed) != 1)
            .map(|(id, _)| id)
            .take(10)
            .collect();
        assert!(
            missing.is_empty(),
            "items never delivered (first 10): {missing:?}"
        );
    }
}

/// Counts live items, so the tests also catch leaks and double drops.
struct Item {
    id: usize,
    live: Arc<AtomicUsize>,
}

impl Item {
    fn new(id: usize, live: &Arc<AtomicUsize>) -> Box<Item> {
        live.fetch_add(1, Ordering::Relaxed);
        Box::new(Item {
            id,
            live: live.clone(),
        })
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a thief does each round.
#[derive(Clone, Copy)]
enum Style {
    /// `steal` only.
    One,
    /// `steal_half_into` only, draining its own deque by `pop`.
    Half,
    /// Both, at random, and also robs the other thieves' deques.
    Mixed,
}

/// Runs one thief until `done` is set and the victim is empty, marking every
/// item it wins. Returns (attempts, items won).
fn thief(
    victim: Stealer<Box<Item>>,
    own: Worker<Box<Item>>,
    peers: Vec<Stealer<Box<Item>>>,
    style: Style,
    seen: &Seen,
    done: &AtomicBool,
    seed: u64,
) -> (u64, u64) {
    let mut rng = Rng(seed);
    let (mut attempts, mut won) = (0u64, 0u64);
    let take = |item: Box<Item>, won: &mut u64| {
        seen.mark(item.id, "a thief");
        *won += 1;
    };
    loop {
        // Read `done` before looking at the victim: once the owner is done,
        // an empty victim stays empty.
        let finished = done.load(Ordering::Acquire);
        let half = match style {
            Style::One => false,
            Style::Half => true,
            Style::Mixed => rng.below(2) == 0,
        };
        attempts += 1;
        let got = if half {
            victim.steal_half_into(&own)
        } else {
            victim.steal()
        };
        match got {
            Steal::Success(item) => take(item, &mut won),
            Steal::Retry => continue,
            Steal::Empty => {
                if finished {
                    break;
                }
                // Rob a peer thief's deque while the victim is empty.
                if let Style::Mixed = style {
                    for p in &peers {
                        if let Steal::Success(item) = p.steal_half_into(&own) {
                            take(item, &mut won);
                        }
                    }
                }
                std::hint::spin_loop();
            }
        }
        // Drain part of our own deque (LIFO), leaving some for peers to rob.
        let keep = if let Style::Mixed = style {
            rng.below(4) as usize
        } else {
            0
        };
        while own.len() > keep {
            match own.pop() {
                Some(item) => take(item, &mut won),
                None => break,
            }
        }
    }
    // Our victim is empty for good; nobody adds to `own` but us.
    while let Some(item) = own.pop() {
        take(item, &mut won);
    }
    (attempts, won)
}

/// A thief with a fresh deque of its own and no peers to rob.
fn lone_thief(
    victim: Stealer<Box<Item>>,
    style: Style,
    seen: &Seen,
    done: &AtomicBool,
    seed: u64,
) -> (u64, u64) {
    thief(victim, Worker::new(), Vec::new(), style, seen, done, seed)
}

/// The owner's schedule for one round: mostly grows, mostly drains, or mixes
/// (pushes, pops, and takes of its own oldest item through `mine`, its own
/// deque's `Stealer`, as the scheduler's worker does on its fairness turn).
fn owner_round(
    w: &Worker<Box<Item>>,
    mine: &Stealer<Box<Item>>,
    next_id: &mut usize,
    end: usize,
    rng: &mut Rng,
    live: &Arc<AtomicUsize>,
    seen: &Seen,
) -> u64 {
    let mut popped = 0u64;
    let mut own_steals = 0u64;
    let mut pop = |w: &Worker<Box<Item>>| match w.pop() {
        Some(item) => {
            seen.mark(item.id, "the owner");
            popped += 1;
            true
        }
        None => false,
    };
    match rng.below(8) {
        // Grow: push a burst (often past the ring's capacity), pop a few.
        0..=2 => {
            for _ in 0..rng.below(300) {
                if *next_id == end {
                    break;
                }
                w.push(Item::new(*next_id, live));
                *next_id += 1;
                if rng.below(8) == 0 {
                    pop(w);
                }
            }
        }
        // Mixed: push/pop at random, half and half; now and then the owner
        // steals its own oldest item instead of popping (a claim racing the
        // thieves', between two of its own pops).
        3 | 4 => {
            for _ in 0..rng.below(200) {
                if rng.below(2) == 0 && *next_id < end {
                    w.push(Item::new(*next_id, live));
                    *next_id += 1;
                } else if rng.below(8) == 0 {
                    if let Steal::Success(item) = mine.steal() {
                        seen.mark(item.id, "the owner's own steal");
                        own_steals += 1;
                    }
                } else {
                    pop(w);
                }
            }
        }
        // Drain to empty: pop until `None`, racing the thieves for the last items.
        5 => while pop(w) {},
        // Pause, so the thieves (who share two cores with us) get to steal
        // from a full deque, not only race us for the last items.
        _ => {
            for _ in 0..rng.below(2000) {
                std::hint::spin_loop();
            }
            if rng.below(4) == 0 {
                thread::yield_now();
            }
        }
    }
    popped + own_steals
}

/// The owner pops `w` until it is empty, marking each item; returns how
/// many it got.
fn drain(w: &Worker<Box<Item>>, seen: &Seen) -> u64 {
    let mut got = 0;
    while let Some(item) = w.pop() {
        seen.mark(item.id, "the owner");
        got += 1;
    }
    got
}

/// Each of the `n` items was delivered exactly once (`delivered` in all, to
/// the owner or a thief), and none is left alive once `w` is dropped.
fn assert_all_delivered(
    seen: &Seen,
    delivered: u64,
    n: usize,
    w: Worker<Box<Item>>,
    live: &AtomicUsize,
) {
    seen.assert_all_seen();
    assert_eq!(delivered, n as u64);
    drop(w);
    assert_eq!(live.load(Ordering::Relaxed), 0, "items leaked");
}

fn owner_vs_thieves(n: usize, styles: &[Style], initial_capacity: usize, seed: u64) {
    let seen = Seen::new(n);
    let live = Arc::new(AtomicUsize::new(0));
    let done = AtomicBool::new(false);
    let w: Worker<Box<Item>> = Worker::with_capacity(initial_capacity);
    let owns: Vec<Worker<Box<Item>>> = styles.iter().map(|_| Worker::with_capacity(1)).collect();
    let own_stealers: Vec<_> = owns.iter().map(|o| o.stealer()).collect();
    let start = Barrier::new(styles.len() + 1);

    let (popped, thief_stats) = thread::scope(|sc| {
        let handles: Vec<_> = styles
            .iter()
            .zip(owns)
            .enumerate()
            .map(|(i, (&style, own))| {
                let victim = w.stealer();
                let peers: Vec<_> = own_stealers
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, s)| s.clone())
                    .collect();
                let (seen, done, start) = (&seen, &done, &start);
                sc.spawn(move || {
                    start.wait();
                    thief(victim, own, peers, style, seen, done, seed + 1 + i as u64)
                })
            })
            .collect();

        let mine = w.stealer();
        let mut rng = Rng(seed);
        let mut next_id = 0;
        let mut popped = 0;
        start.wait();
        while next_id < n {
            popped += owner_round(&w, &mine, &mut next_id, n, &mut rng, &live, &seen);
        }
        // Take back whatever the thieves have not, then let them finish.
        popped += drain(&w, &seen);
        assert!(w.is_empty());
        done.store(true, Ordering::Release);
        let stats: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (popped, stats)
    });

    seen.assert_all_seen();
    let stolen: u64 = thief_stats.iter().map(|s| s.1).sum();
    // Visible with --nocapture: how much the thieves actually got.
    println!("n = {n}: owner popped {popped}, thieves (attempts, won) {thief_stats:?}");
    assert_eq!(popped + stolen, n as u64);
    drop(w);
    drop(own_stealers);
    assert_eq!(live.load(Ordering::Relaxed), 0, "items leaked");
}

#[test]
fn owner_push_pop_vs_three_mixed_thieves() {
    // Several rounds on fresh deques, each starting at capacity 1, so growth
    // happens under contention again and again.
    let total = items(800_000);
    let rounds = 6;
    for r in 0..rounds {
        owner_vs_thieves(
            total / rounds,
            &[Style::Mixed, Style::Mixed, Style::Mixed],
            1,
            0x5EED + r as u64,
        );
    }
}

#[test]
fn owner_push_pop_vs_steal_and_steal_half_thieves() {
    let total = items(600_000);
    for r in 0..4 {
        owner_vs_thieves(
            total / 4,
            &[Style::One, Style::Half, Style::Half],
            2,
            0xC0FFEE + r,
        );
    }
}

/// The owner pushes one to three items and pops until `None`, so almost
/// every pop races a thief for the last item(s), while three thieves hammer
/// `steal` and `steal_half_into`.
#[test]
fn last_item_races_between_owner_and_thieves() {
    let n = items(3_000_000);
    let seen = Seen::new(n);
    let live = Arc::new(AtomicUsize::new(0));
    let done = AtomicBool::new(false);
    let w: Worker<Box<Item>> = Worker::with_capacity(1);
    let styles = [Style::One, Style::Half, Style::Mixed];
    let (owner_got, stolen) = thread::scope(|sc| {
        let handles: Vec<_> = styles
            .iter()
            .enumerate()
            .map(|(i, &style)| {
                let victim = w.stealer();
                let (seen, done) = (&seen, &done);
                sc.spawn(move || lone_thief(victim, style, seen, done, 77 + i as u64))
            })
            .collect();
        let mut rng = Rng(0xDEAD_BEEF);
        let mut next = 0;
        let mut owner_got = 0u64;
        while next < n {
            for _ in 0..=rng.below(3) {
                if next < n {
                    w.push(Item::new(next, &live));
                    next += 1;
                }
            }
            owner_got += drain(&w, &seen);
            // `pop` returns None only on an empty deque.
            assert_eq!(w.len(), 0);
        }
        done.store(true, Ordering::Release);
        let stolen: u64 = handles.into_iter().map(|h| h.join().unwrap().1).sum();
        (owner_got, stolen)
    });
    println!("last item: owner {owner_got}, thieves {stolen}");
    assert_all_delivered(&seen, owner_got + stolen, n, w, &live);
}

/// Thieves keep stealing while the owner pushes a final batch and drops its
/// `Worker`: the deque lives on, and the items go to thieves exactly once,
/// or are dropped with the last handle.
#[test]
fn thieves_outlive_the_worker() {
    let rounds = items(200_000).clamp(10, 200);
    let per_round = 64;
    for r in 0..rounds {
        let n = per_round;
        let seen = Seen::new(n);
        let live = Arc::new(AtomicUsize::new(0));
        let done = AtomicBool::new(false);
        let w: Worker<Box<Item>> = Worker::with_capacity(1 + r % 4);
        let s = w.stealer();
        thread::scope(|sc| {
            let thieves: Vec<_> = [Style::One, Style::Half]
                .into_iter()
                .enumerate()
                .map(|(i, style)| {
                    let victim = s.clone();
                    let (seen, done) = (&seen, &done);
                    sc.spawn(move || {
                        lone_thief(victim, style, seen, done, r as u64 * 3 + i as u64 + 1)
                    })
                })
                .collect();
            let owner = sc.spawn({
                let (seen, live) = (&seen, &live);
                move || {
                    for id in 0..n {
                        w.push(Item::new(id, live));
                        if id % 5 == 4 {
                            if let Some(item) = w.pop() {
                                seen.mark(item.id, "the owner");
                            }
                        }
                    }
                    drop(w);
                }
            });
            owner.join().unwrap();
            done.store(true, Ordering::Release);
            for t in thieves {
                t.join().unwrap();
            }
        });
        assert!(s.is_empty());
        drop(s);
        seen.assert_all_seen();
        assert_eq!(live.load(Ordering::Relaxed), 0, "items leaked");
    }
}

/// Full-size claims against an owner draining through them: the owner
/// pushes 64 items and pops them all, over and over, while two thieves
/// `steal_half_into`. A thief that reads 64 items claims 32 (positions
/// `top..top + 32`) while the owner pops down through `top + 31`, the
/// highest position such a claim reaches, where pops start to invalidate
/// claims in flight. (Hitting that boundary needs a thief stalled for 33
/// pops, which is rare on real hardware; the loom models prove the
/// boundary exhaustively at a reach of 2.)
#[test]
fn full_batch_claims_vs_owner_draining_through_them() {
    let batch = 2 * stepsched::deque::MAX_STEAL;
    let rounds = items(60_000);
    let n = rounds * batch;
    let seen = Seen::new(n);
    let live = Arc::new(AtomicUsize::new(0));
    let done = AtomicBool::new(false);
    let w: Worker<Box<Item>> = Worker::with_capacity(batch);
    let (owner_got, stolen) = thread::scope(|sc| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let victim = w.stealer();
                let (seen, done) = (&seen, &done);
                sc.spawn(move || {
                    let own = Worker::with_capacity(batch);
                    thief(victim, own, Vec::new(), Style::Half, seen, done, 901 + i)
                })
            })
            .collect();
        let mut owner_got = 0u64;
        for round in 0..rounds {
            for id in round * batch..(round + 1) * batch {
                w.push(Item::new(id, &live));
            }
            owner_got += drain(&w, &seen);
        }
        done.store(true, Ordering::Release);
        let stolen: u64 = handles.into_iter().map(|h| h.join().unwrap().1).sum();
        (owner_got, stolen)
    });
    println!("full batches: owner {owner_got}, thieves {stolen}");
    assert_all_delivered(&seen, owner_got + stolen, n, w, &live);
}
