//! Observing a running scheduler: counters, the process dump, the
//! execution tracer, the long-step monitor and the embedder's hooks.

pub(crate) mod figures;
pub(crate) mod watch;

#[cfg(not(loom))]
mod api;
#[cfg(not(loom))]
pub(crate) mod counter;
#[cfg(not(loom))]
pub(crate) mod dump;
#[cfg(not(loom))]
pub(crate) mod histogram;
#[cfg(not(loom))]
pub(crate) mod hooks;
#[cfg(not(loom))]
pub(crate) mod kind_counts;
#[cfg(not(loom))]
pub(crate) mod monitor;
#[cfg(not(loom))]
mod ring;
#[cfg(not(loom))]
pub(crate) mod stats;
#[cfg(not(loom))]
pub(crate) mod step_hook;
#[cfg(not(loom))]
pub(crate) mod ticks;
#[cfg(not(loom))]
pub(crate) mod trace;
