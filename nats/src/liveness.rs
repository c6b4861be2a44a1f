//! Which nodes are up: heard from (a heartbeat or a frame) within the last
//! `missed` heartbeat intervals.
//!
//! Each node keeps a state word and the instant it was last heard. A frame
//! or a heartbeat marks its node up; the checker, once an interval, marks
//! a node silent for too long down and tells the scheduler
//! (`Inbound::node_down`), once per fall. A heartbeat carries the sender's
//! incarnation (a number drawn when it connected): a new one means the node
//! restarted, so its old processes are gone too (told as a fall). When
//! the connection to the server breaks, every node falls at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use stepsched::process::NodeId;

const UNKNOWN: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

/// Every node's state (indexed by its number) and when it was last heard.
pub(crate) struct Liveness {
    states: [AtomicU8; 256],
    heard: Mutex<HashMap<NodeId, (Instant, u64)>>,
}

impl Liveness {
    pub(crate) fn new() -> Self {
        Liveness {
            states: std::array::from_fn(|_| AtomicU8::new(UNKNOWN)),
            heard: Mutex::new(HashMap::new()),
        }
    }

    /// Whether frames to `node` may be sent.
    pub(crate) fn is_up(&self, node: NodeId) -> bool {
        // Relaxed: a hint for the sender; a frame sent as the node falls is
        // answered by the fall's `node_down` (its watches) or lost with it.
        self.states[node.get() as usize].load(Ordering::Relaxed) == UP
    }

    /// `node` was heard (incarnation `incarnation`, 0 for a frame, which
    /// does not say). Returns whether an older incarnation fell with it
    /// (the caller tells its fall).
    pub(crate) fn heard(&self, node: NodeId, incarnation: u64) -> bool {
        let mut heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        let entry = heard.entry(node).or_insert((Instant::now(), incarnation));
        entry.0 = Instant::now();
        let restarted = incarnation != 0 && entry.1 != 0 && entry.1 != incarnation;
        if incarnation != 0 {
            entry.1 = incarnation;
        }
        // Relaxed: see `is_up`; the lock orders the writers.
        self.states[node.get() as usize].store(UP, Ordering::Relaxed);
        restarted
    }

    /// The nodes up but silent for longer than `limit`, now marked down.
    pub(crate) fn fallen(&self, limit: Duration) -> Vec<NodeId> {
        self.fall(|at| at.elapsed() > limit)
    }

    /// Every node up, now marked down (the connection to them all broke).
    pub(crate) fn fall_all(&self) -> Vec<NodeId> {
        self.fall(|_| true)
    }

    /// The nodes up and last heard at an instant `falls` picks, now down.
    fn fall(&self, falls: impl Fn(Instant) -> bool) -> Vec<NodeId> {
        let heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        let mut fallen = Vec::new();
        for (&node, &(at, _)) in heard.iter() {
            let state = &self.states[node.get() as usize];
            // Relaxed: under the lock, which orders every writer.
            if state.load(Ordering::Relaxed) == UP && falls(at) {
                state.store(DOWN, Ordering::Relaxed);
                fallen.push(node);
            }
        }
        fallen
    }

    /// The nodes up now.
    pub(crate) fn up(&self) -> Vec<NodeId> {
        (0..255u8)
            .filter_map(NodeId::new)
            .filter(|&n| self.is_up(n))
            .collect()
    }
}
