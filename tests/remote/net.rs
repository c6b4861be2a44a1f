//! An in-memory network of schedulers: one channel and one delivery
//! thread per node, so frames to a node arrive in the order sent (the
//! transport's contract), and a node can be cut off (`Net::cut`), which
//! tells every other node it is gone.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use stepsched::process::NodeId;
use stepsched::sched::remote::{Frame, FrameKind, Inbound, Transport};

#[derive(Default)]
struct Nodes {
    /// Each attached node's queue and inbound handle.
    links: HashMap<NodeId, (Sender<Frame>, Inbound)>,
    /// Nodes cut off: frames to them are refused.
    cut: HashSet<NodeId>,
    threads: Vec<JoinHandle<()>>,
}

/// The network; each node's transport is [`Net::transport`].
#[derive(Default, Clone)]
pub struct Net {
    nodes: Arc<Mutex<Nodes>>,
    /// Every frame sent, for tests that look at the traffic.
    pub sent: Arc<Mutex<Vec<Frame>>>,
}

impl Net {
    pub fn new() -> Self {
        Net::default()
    }

    /// The transport of node `node`.
    pub fn transport(&self, node: NodeId) -> MemTransport {
        MemTransport {
            net: self.clone(),
            node,
        }
    }

    /// Cuts `node` off: frames to and from it are refused from now on,
    /// and every other node is told it is gone.
    pub fn cut(&self, node: NodeId) {
        let others: Vec<Inbound> = {
            let mut nodes = self.nodes.lock().unwrap();
            nodes.cut.insert(node);
            (nodes.links.iter())
                .filter(|(n, _)| **n != node)
                .map(|(_, (_, inbound))| inbound.clone())
                .collect()
        };
        for inbound in others {
            inbound.node_down(node);
        }
    }

    /// Tells every node but `node` that `node` is gone, again (a
    /// transport that reports twice).
    pub fn report_down_again(&self, node: NodeId) {
        let others: Vec<Inbound> = (self.nodes.lock().unwrap().links.iter())
            .filter(|(n, _)| **n != node)
            .map(|(_, (_, inbound))| inbound.clone())
            .collect();
        for inbound in others {
            inbound.node_down(node);
        }
    }

    /// How many message frames were sent so far.
    pub fn messages_sent(&self) -> usize {
        let sent = self.sent.lock().unwrap();
        sent.iter()
            .filter(|f| matches!(f.kind, FrameKind::Message(_)))
            .count()
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.links.clear(); // closes the channels: the threads end
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

pub struct MemTransport {
    net: Net,
    node: NodeId,
}

impl Transport for MemTransport {
    fn attach(&self, inbound: Inbound) {
        let (tx, rx) = channel::<Frame>();
        let deliver = inbound.clone();
        let thread = std::thread::spawn(move || {
            for frame in rx {
                // A frame for a scheduler gone, or undecodable: the test
                // frames always decode.
                let _ = deliver.deliver(frame);
            }
        });
        let mut nodes = self.net.nodes.lock().unwrap();
        nodes.links.insert(self.node, (tx, inbound));
        nodes.threads.push(thread);
    }

    fn send(&self, frame: Frame) -> Result<(), Frame> {
        let nodes = self.net.nodes.lock().unwrap();
        let to = frame.to.node();
        if nodes.cut.contains(&to) || nodes.cut.contains(&self.node) {
            return Err(frame);
        }
        let Some((tx, _)) = nodes.links.get(&to) else {
            return Err(frame);
        };
        self.net.sent.lock().unwrap().push(frame.clone());
        tx.send(frame).map_err(|e| e.0)
    }
}
