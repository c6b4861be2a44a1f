//! Who watches a process of another node: the monitors and links that a
//! node gone must answer with `NoConnection` (`Inbound::node_down`).
//!
//! The remote side keeps the other half (the watcher in its target's
//! `watchers`, as locally); this node keeps, for each monitor a local
//! process set on a remote one and each link between a local and a remote
//! process, one entry, from the request (or the remote's link request)
//! until its answer (the `Down`, the exit, a `demonitor`, an `unlink`).
//! The watcher's own lists decide what passes, so an entry left behind
//! (a watcher that ended first) only costs its place until its node goes
//! or its target ends.

use crate::process::{NodeId, Pid};
use std::collections::HashSet;
use std::sync::Mutex;

/// One watch across nodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Watch {
    /// Local `watcher` monitors remote `target`.
    Monitor { watcher: Pid, target: Pid },
    /// Local `local` is linked with remote `remote`.
    Link { local: Pid, remote: Pid },
}

impl Watch {
    /// The remote process's node.
    fn node(self) -> NodeId {
        match self {
            Watch::Monitor { target, .. } => target.node(),
            Watch::Link { remote, .. } => remote.node(),
        }
    }
}

/// The watches across nodes, under one lock: only cross-node monitors and
/// links take it.
#[derive(Default)]
pub(crate) struct Watches(Mutex<HashSet<Watch>>);

impl Watches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Watch>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add(&self, watch: Watch) {
        self.lock().insert(watch);
    }

    pub(crate) fn remove(&self, watch: Watch) {
        self.lock().remove(&watch);
    }

    /// Takes out every watch of a process of `node`.
    pub(crate) fn take_node(&self, node: NodeId) -> Vec<Watch> {
        let mut all = self.lock();
        let gone: Vec<Watch> = all.iter().copied().filter(|w| w.node() == node).collect();
        for watch in &gone {
            all.remove(watch);
        }
        gone
    }
}
