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
//!
//! Calls are kept apart, by caller and call id, from the request until its
//! reply, its refusal or its timeout: a node gone answers each with
//! `ReplyError::NodeDown`; a caller that ends with calls waiting takes
//! their entries with it (its close).

use crate::process::{NodeId, Pid};
use std::collections::{HashMap, HashSet};
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

/// The watches across nodes, under one lock: only cross-node monitors,
/// links and calls take it.
#[derive(Default)]
pub(crate) struct Watches(Mutex<Book>);

#[derive(Default)]
struct Book {
    watches: HashSet<Watch>,
    /// (caller, call id) -> the callee's node.
    calls: HashMap<(Pid, u64), NodeId>,
}

impl Watches {
    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add(&self, watch: Watch) {
        self.lock().watches.insert(watch);
    }

    pub(crate) fn remove(&self, watch: Watch) {
        self.lock().watches.remove(&watch);
    }

    /// Call `id` of local `caller` waits on a process of `node`.
    pub(crate) fn add_call(&self, caller: Pid, id: u64, node: NodeId) {
        self.lock().calls.insert((caller, id), node);
    }

    /// The calls waiting (`Stats::remote_calls_waiting`).
    pub(crate) fn calls_waiting(&self) -> usize {
        self.lock().calls.len()
    }

    /// Call `id` of `caller` no longer waits (answered, refused, timed out).
    pub(crate) fn remove_call(&self, caller: Pid, id: u64) {
        self.lock().calls.remove(&(caller, id));
    }

    /// Takes out every watch of a process of `node`, and every call
    /// waiting on one (caller, id).
    pub(crate) fn take_node(&self, node: NodeId) -> (Vec<Watch>, Vec<(Pid, u64)>) {
        let mut book = self.lock();
        let gone: Vec<Watch> = book
            .watches
            .iter()
            .copied()
            .filter(|w| w.node() == node)
            .collect();
        for watch in &gone {
            book.watches.remove(watch);
        }
        let mut calls = Vec::new();
        book.calls.retain(|&call, &mut on| {
            let keep = on != node;
            if !keep {
                calls.push(call);
            }
            keep
        });
        (gone, calls)
    }
}
