//! Processes on two schedulers (nodes) joined by an in-memory transport
//! (`net.rs`): sends, monitors and links across them, a node cut off,
//! undeliverable messages and full remote mailboxes. The seam of
//! `src/sched/remote/`, with no network.
//!
//! ```text
//! cargo test --test remote
//! ```

#[path = "../common/mod.rs"]
mod common;

mod actor;
mod net;

mod calls;
mod gone;
mod names;
mod order;
mod refused;
mod watch;

use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actor::{Actor, Msg, MsgCodec, Seen};
use common::Held;
use net::Net;
use stepsched::process::{Event, NodeId, Pid};
use stepsched::sched::{JoinHandle, Scheduler};

pub const A: NodeId = match NodeId::new(1) {
    Some(node) => node,
    None => unreachable!(),
};
pub const B: NodeId = match NodeId::new(2) {
    Some(node) => node,
    None => unreachable!(),
};

/// Two nodes, A and B, on one [`Net`]; every actor reports to `seen`;
/// each node's `on_undelivered` to `undelivered`.
pub struct Pair {
    pub net: Net,
    pub a: Scheduler<Actor>,
    pub b: Scheduler<Actor>,
    pub seen: Receiver<(Pid, Seen)>,
    tx: std::sync::mpsc::Sender<(Pid, Seen)>,
    pub undelivered: Arc<Mutex<Vec<(NodeId, Pid, Msg)>>>,
    pub held: Held<Actor>,
}

impl Default for Pair {
    fn default() -> Pair {
        Pair::new()
    }
}

impl Pair {
    pub fn new() -> Pair {
        let net = Net::new();
        let undelivered = Arc::new(Mutex::new(Vec::new()));
        let held = Held::default();
        let node = |node: NodeId| {
            let undelivered = Arc::clone(&undelivered);
            Scheduler::<Actor>::builder()
                .workers(2)
                .node(node)
                .transport(net.transport(node))
                .codec(MsgCodec)
                .handler("wait", held.handler())
                .on_undelivered(move |pid, event| {
                    if let Event::Message(m) | Event::Reply { result: Ok(m), .. } = event {
                        undelivered.lock().unwrap().push((node, pid, m));
                    }
                })
                .build()
                .expect("the scheduler starts")
        };
        let (a, b) = (node(A), node(B));
        let (tx, seen) = channel();
        Pair {
            net,
            a,
            b,
            seen,
            tx,
            undelivered,
            held,
        }
    }

    /// An actor on `node`.
    pub fn actor(&self, node: NodeId) -> JoinHandle<Actor> {
        let scheduler = if node == A { &self.a } else { &self.b };
        let handle = scheduler
            .submit_joinable(Actor(self.tx.clone()), "actor", ())
            .expect("submitted");
        assert_eq!(handle.pid().node(), node);
        handle
    }

    /// A clone of the actors' report channel.
    pub fn sender(&self) -> std::sync::mpsc::Sender<(Pid, Seen)> {
        self.tx.clone()
    }

    /// Tells `pid` (on either node) `message`, from outside.
    pub fn tell(&self, pid: Pid, message: Msg) {
        let scheduler = if pid.node() == A { &self.a } else { &self.b };
        scheduler.send(pid, message).expect("told");
    }

    /// The next thing an actor saw (60 s: a liveness guard).
    pub fn next(&self) -> (Pid, Seen) {
        self.seen
            .recv_timeout(common::ms(60_000))
            .expect("an actor reports within the minute")
    }

    /// Whether anything more is reported within `ms` milliseconds (for
    /// "exactly once": a duplicate would come within it; this asserts
    /// nothing about time).
    pub fn quiet_for(&self, ms: u64) -> Option<(Pid, Seen)> {
        self.seen.recv_timeout(Duration::from_millis(ms)).ok()
    }
}

/// Each node's PIDs carry it, and a local PID is not taken for a remote
/// one: an actor on A sends to one on A as usual.
#[test]
fn pids_name_their_node_and_local_traffic_stays_local() {
    let pair = Pair::new();
    let (x, y) = (pair.actor(A), pair.actor(A));
    pair.tell(x.pid(), Msg::Flood(y.pid(), 0, 3));
    for n in 0..3 {
        assert_eq!(pair.next(), (y.pid(), Seen::Num(n)));
    }
    assert_eq!(pair.net.messages_sent(), 0, "nothing crossed the network");
    assert_eq!(x.pid().to_string(), format!("<1.{}.0>", x.pid().index()));
}
