//! The io thread: completes reads when their simulated delay has passed.

use std::collections::BinaryHeap;
use std::sync::mpsc;
use std::time::Instant;

use stepsched::sched::Completer;

use crate::nodes::Node;
use crate::{io_delay, work};

pub enum IoRequest {
    Read {
        key: u64,
        fail: bool,
        completer: Completer<Node>,
    },
    Stop,
}

/// A read in flight, ordered by when it is due (soonest first in the heap).
struct InFlight {
    due: Instant,
    key: u64,
    fail: bool,
    completer: Completer<Node>,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.key) == (other.due, other.key)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: `BinaryHeap` is a max-heap.
        (other.due, other.key).cmp(&(self.due, self.key))
    }
}

/// Runs until `Stop` and every read in flight is completed; returns how many
/// reads it completed.
pub fn io_thread(requests: mpsc::Receiver<IoRequest>) -> u64 {
    let mut in_flight = BinaryHeap::new();
    let mut completed = 0;
    let mut stopping = false;
    loop {
        let now = Instant::now();
        while in_flight.peek().is_some_and(|r: &InFlight| r.due <= now) {
            let read = in_flight.pop().expect("peeked");
            let delivered = if read.fail {
                read.completer.fail("simulated device error")
            } else {
                read.completer.succeed(work(read.key, 8))
            };
            delivered.expect("the session waits for its read");
            completed += 1;
        }
        let next = match in_flight.peek() {
            Some(read) => requests.recv_timeout(read.due.saturating_duration_since(now)),
            None if stopping => return completed,
            None => requests
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(IoRequest::Read {
                key,
                fail,
                completer,
            }) => {
                in_flight.push(InFlight {
                    due: Instant::now() + io_delay(key),
                    key,
                    fail,
                    completer,
                });
            }
            Ok(IoRequest::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => stopping = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}
