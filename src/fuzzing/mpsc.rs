//! Replays bytes as single-threaded operations on [`mpsc::Queue`] and
//! [`GlobalQueue`], and then the same bytes as operations on two
//! [`mpsc::Mailbox`]es and two [`NodeCache`]s, against `VecDeque` models.
//!
//! A single thread cannot be preempted mid-push, so the engine opens the
//! mid-link window on purpose (`Queue::push_mid_link`, test-only; with an
//! odd argument `push_mid_link_fresh`, the claim's swap into a block of the
//! push's own that a push takes after losing its CAS attempts): several
//! pushes can be left between swap and link and finished in any order. The
//! model marks each queued item with whether its incoming link is stored;
//! the consumer can reach items only up to the first one that is not, which
//! is exactly when `try_pop` must say `Inconsistent` and `is_empty` `false`.
//!
//! Pushes go through plain `Queue::push` and through a `Producer` handle
//! that lives across operations (the handle pushes as `push` does).
//!
//! Every item carries a unique id and bumps a shared counter when dropped,
//! so a lost, duplicated, reordered, leaked or doubly dropped item panics.
//! A queue's life is an *epoch*; dropping it (an operation) checks that it
//! dropped exactly the items it still held, and starts a new epoch.
//!
//! Each byte is one operation: `byte % 13` picks it and `byte / 13` (0..=19)
//! is its argument where it has one (a burst of up to 20 pushes, so the
//! block boundaries, three nodes apart under fuzzing, and block reuse are
//! reached from short inputs; which pending push
//! to link).
//!
//! The mailbox pass reads each byte as `byte % 12` and `byte / 12`
//! (0..=21), whose low bits pick the mailbox and the cache. Besides the
//! items it models each cache's length (a take from an empty cache
//! allocates, a node returned to a full one is freed), and it moves items
//! from one mailbox to the other through one cache, as a worker does, so
//! nodes change mailboxes while pushes are left mid-link.
//!
//! [`mpsc::Queue`]: crate::mpsc::Queue
//! [`mpsc::Mailbox`]: crate::mpsc::Mailbox
//! [`NodeCache`]: crate::mpsc::NodeCache

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::mpsc::{Mailbox, MidLink, NodeCache, Producer, Queue, TryPopError};
use crate::sched::core::global::{GlobalQueue, Take, BATCH};

/// A queued item: an id, and a counter bumped when it is dropped.
struct Tracked {
    id: u64,
    drops: Rc<Cell<u64>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// The MPSC model: ids in push order, each with "its incoming link is
/// stored" (false while its push is mid-link).
type Model = VecDeque<(u64, bool)>;

/// State shared by all epochs.
struct Engine {
    next_id: u64,
    drops: Rc<Cell<u64>>,
}

impl Engine {
    fn item(&mut self) -> Tracked {
        self.next_id += 1;
        Tracked {
            id: self.next_id,
            drops: Rc::clone(&self.drops),
        }
    }

    /// What `try_pop` must return given the model, and the model after it.
    fn expected_pop(model: &mut Model) -> Result<u64, TryPopError> {
        match model.front() {
            None => Err(TryPopError::Empty),
            Some(&(_, false)) => Err(TryPopError::Inconsistent),
            Some(&(id, true)) => {
                model.pop_front();
                Ok(id)
            }
        }
    }

    /// Runs operations until the input ends or an epoch-ending byte; returns
    /// whether the input has more bytes.
    fn epoch(&mut self, bytes: &mut std::slice::Iter<'_, u8>) -> bool {
        let queue = Queue::new();
        let global = GlobalQueue::new();
        let mut model = Model::new();
        let mut global_model = VecDeque::new();
        let mut pending: Vec<(u64, MidLink<'_, Tracked>)> = Vec::new();
        let mut handle: Option<Producer<'_, Tracked>> = None;
        let drops_at_start = self.drops.get();
        let mut dropped_by_us = 0;
        let mut more = false;

        for &byte in bytes.by_ref() {
            let arg = usize::from(byte / 13);
            match byte % 13 {
                0 => {
                    for _ in 0..=arg {
                        let item = self.item();
                        model.push_back((item.id, true));
                        queue.push(item);
                    }
                }
                1 | 2 => {
                    let expected = Engine::expected_pop(&mut model);
                    // SAFETY: the engine is single-threaded: one consumer.
                    let got = unsafe { queue.try_pop() }.map(|t| t.id);
                    assert_eq!(got, expected, "try_pop");
                    dropped_by_us += u64::from(got.is_ok());
                }
                3 => assert_eq!(queue.is_empty(), model.is_empty(), "is_empty"),
                4 => {
                    let item = self.item();
                    let id = item.id;
                    model.push_back((id, false));
                    // Odd arguments take the claim's bounded way out: a
                    // block of the push's own, skipping the current one's
                    // rest.
                    let link = if arg % 2 == 1 {
                        queue.push_mid_link_fresh(item)
                    } else {
                        queue.push_mid_link(item)
                    };
                    pending.push((id, link));
                }
                5 => {
                    if !pending.is_empty() {
                        let (id, link) = pending.swap_remove(arg % pending.len());
                        link.link();
                        let entry = model.iter_mut().find(|(i, _)| *i == id);
                        entry.expect("pending item is modelled").1 = true;
                    }
                }
                6 => {
                    more = true;
                    break;
                }
                7 => {
                    for _ in 0..=arg {
                        let item = self.item();
                        global_model.push_back(item.id);
                        global.push(item);
                    }
                }
                8 | 9 => {
                    let limit = if byte % 13 == 8 { BATCH } else { 0 };
                    let mut batch = Vec::new();
                    let take = if limit == 0 {
                        global.take_one()
                    } else {
                        global.take_batch(|t| batch.push(t.id))
                    };
                    let expected: Vec<u64> = {
                        let n = global_model.len().min(limit + 1);
                        global_model.drain(..n).collect()
                    };
                    match take {
                        Take::Taken { first, moved } => {
                            assert_eq!(moved, batch.len(), "take: moved");
                            batch.insert(0, first.id);
                            assert_eq!(batch, expected, "take: batch");
                        }
                        Take::Empty => assert!(expected.is_empty(), "take: Empty"),
                        Take::Busy => panic!("single-threaded take returned Busy"),
                        Take::Inconsistent => panic!("global take returned Inconsistent"),
                    }
                    dropped_by_us += expected.len() as u64;
                }
                10 => {
                    let tx = handle.get_or_insert_with(|| queue.producer());
                    for _ in 0..=arg {
                        let item = self.item();
                        model.push_back((item.id, true));
                        tx.push(item);
                    }
                }
                11 => handle = None,
                _ => assert_eq!(global.is_empty(), global_model.is_empty(), "global"),
            }
            assert_eq!(
                self.drops.get() - drops_at_start,
                dropped_by_us,
                "an operation dropped an item it should not have"
            );
        }

        // Finish the pending pushes, drop both queues: each must drop exactly
        // the items it still held.
        drop((pending, handle));
        let held = (model.len() + global_model.len()) as u64;
        drop(queue);
        drop(global);
        assert_eq!(
            self.drops.get() - drops_at_start,
            dropped_by_us + held,
            "dropping the queues dropped the wrong number of items"
        );
        more
    }
}

/// A [`NodeCache`] and its model: how many nodes it holds, at most `limit`.
struct CacheModel {
    cache: NodeCache<Tracked>,
    len: usize,
}

impl CacheModel {
    fn new(limit: usize) -> Self {
        CacheModel {
            cache: NodeCache::with_limit(limit),
            len: 0,
        }
    }

    /// A push took a node (or allocated one if there was none).
    fn took(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    /// A pop returned a node (or freed it if the cache was full).
    fn got_back(&mut self) {
        self.len = (self.len + 1).min(self.cache.limit());
    }
}

impl Engine {
    /// The mailbox pass: like [`Engine::epoch`], on two mailboxes and two
    /// caches.
    fn mailbox_epoch(&mut self, bytes: &mut std::slice::Iter<'_, u8>) -> bool {
        let boxes = [Mailbox::new(), Mailbox::new()];
        let mut models = [Model::new(), Model::new()];
        let mut caches = [
            CacheModel::new(4),
            CacheModel::new(NodeCache::<Tracked>::DEFAULT_LIMIT),
        ];
        let mut pending: Vec<(u64, MidLink<'_, Tracked>)> = Vec::new();
        let drops_at_start = self.drops.get();
        let mut dropped_by_us = 0;
        let mut more = false;

        for &byte in bytes.by_ref() {
            let arg = usize::from(byte / 12);
            let (m, c) = (arg % 2, arg / 2 % 2);
            match byte % 12 {
                0 => {
                    for _ in 0..=arg / 2 {
                        let item = self.item();
                        models[m].push_back((item.id, true));
                        boxes[m].push(item);
                    }
                }
                1 => {
                    for _ in 0..=arg / 4 {
                        let item = self.item();
                        models[m].push_back((item.id, true));
                        boxes[m].push_with(item, &mut caches[c].cache);
                        caches[c].took();
                    }
                }
                op @ 2..=4 => {
                    let expected = Engine::expected_pop(&mut models[m]);
                    // SAFETY: the engine is single-threaded: one consumer.
                    let got = unsafe {
                        match op {
                            2 => boxes[m].try_pop(),
                            3 => boxes[m].try_pop_with(&mut caches[c].cache),
                            _ => boxes[m]
                                .pop_with(&mut caches[c].cache)
                                .ok_or(TryPopError::Empty),
                        }
                    }
                    .map(|t| t.id);
                    let expected = match (op, expected) {
                        (4, Err(_)) => Err(TryPopError::Empty),
                        (_, e) => e,
                    };
                    assert_eq!(got, expected, "mailbox {m}: pop (op {op})");
                    if got.is_ok() {
                        dropped_by_us += 1;
                        if op != 2 {
                            caches[c].got_back();
                        }
                    }
                }
                5 => {
                    let item = self.item();
                    let id = item.id;
                    models[m].push_back((id, false));
                    pending.push((id, boxes[m].push_mid_link(item, &mut caches[c].cache)));
                    caches[c].took();
                }
                6 if !pending.is_empty() => {
                    let (id, link) = pending.swap_remove(arg % pending.len());
                    link.link();
                    let entry = models.iter_mut().flatten().find(|(i, _)| *i == id);
                    entry.expect("pending item is modelled").1 = true;
                }
                7 => {
                    more = true;
                    break;
                }
                // A fresh cache (the old one frees its nodes), limit 0..=10.
                8 => caches[arg % 2] = CacheModel::new(arg / 2),
                9 => {
                    // A worker's hop: pop from `m` into cache `c`, push the
                    // item into the other mailbox from the same cache.
                    for _ in 0..=arg / 4 {
                        let Ok(id) = Engine::expected_pop(&mut models[m]) else {
                            break;
                        };
                        // SAFETY: single-threaded: one consumer.
                        let item = unsafe { boxes[m].pop_with(&mut caches[c].cache) };
                        let item = item.expect("the model has a linked item");
                        assert_eq!(item.id, id, "mailbox {m}: hop");
                        caches[c].got_back();
                        models[1 - m].push_back((id, true));
                        boxes[1 - m].push_with(item, &mut caches[c].cache);
                        caches[c].took();
                    }
                }
                10 => {
                    let expected = Engine::expected_pop(&mut models[m]).ok();
                    // SAFETY: single-threaded: one consumer.
                    let got = unsafe { boxes[m].pop() }.map(|t| t.id);
                    assert_eq!(got, expected, "mailbox {m}: pop");
                    dropped_by_us += u64::from(got.is_some());
                }
                // 6 with nothing pending, 11: no operation.
                _ => {}
            }
            for (i, c) in caches.iter().enumerate() {
                assert_eq!(c.cache.len(), c.len, "cache {i}: len");
            }
            assert_eq!(
                self.drops.get() - drops_at_start,
                dropped_by_us,
                "a mailbox operation dropped an item it should not have"
            );
        }

        // Finish the pending pushes, drop the mailboxes: each must drop
        // exactly the items it still held.
        drop(pending);
        let held = models.iter().map(|m| m.len() as u64).sum::<u64>();
        drop(boxes);
        drop(caches);
        assert_eq!(
            self.drops.get() - drops_at_start,
            dropped_by_us + held,
            "dropping the mailboxes dropped the wrong number of items"
        );
        more
    }
}

/// Replays `data` as operations on the queues and their models, then again
/// on the mailboxes and theirs, panicking on the first difference.
pub fn replay(data: &[u8]) {
    let mut engine = Engine {
        next_id: 0,
        drops: Rc::new(Cell::new(0)),
    };
    let mut bytes = data.iter();
    while engine.epoch(&mut bytes) {}
    let mut bytes = data.iter();
    while engine.mailbox_epoch(&mut bytes) {}
    assert_eq!(
        engine.drops.get(),
        engine.next_id,
        "items leaked or doubly dropped"
    );
}

#[cfg(test)]
mod tests {
    use super::replay;

    /// xorshift64: deterministic, dependency-free input generator.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn replays_generated_inputs() {
        let (inputs, max_len) = if cfg!(miri) { (20, 64) } else { (3000, 512) };
        let mut state = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..inputs {
            let len = (xorshift(&mut state) % max_len) as usize;
            let data: Vec<u8> = (0..len).map(|_| xorshift(&mut state) as u8).collect();
            replay(&data);
        }
    }

    #[test]
    fn replays_edge_inputs() {
        replay(&[]);
        replay(&[6, 6, 6]);
        // Mid-link push, pop (Inconsistent), is_empty, link, pop, pop.
        replay(&[4, 1, 3, 5, 1, 1, 3]);
        // Bursts of 20 pushes (plain, then through a handle), drained by
        // pops, repeated over many blocks.
        let mut long = Vec::new();
        for _ in 0..20 {
            long.push(247); // 247 % 13 == 0: plain burst of 20
            long.extend([1; 20]);
            long.push(244); // 244 % 13 == 10: burst of 19 through a handle
            long.extend([1; 19]);
            long.push(11); // drop the handle
        }
        replay(&long);
        // Mailboxes: mid-link push into 0 from cache 0, pops (Inconsistent),
        // a hop (blocked), link, hop to mailbox 1, pops from 1, a cache with
        // limit 0, a burst through it.
        replay(&[5, 3, 2, 4, 9, 6, 9, 3 + 12, 2 + 12, 8, 1 + 12 * 4, 10, 10]);
    }
}
