//! The core: the process table and its slots, the run queues, parking, the
//! phase word, and the clock every transition is stamped with.

pub(crate) mod global;
pub(crate) mod idle;
pub(crate) mod name_flag;
pub(crate) mod phase;
pub(crate) mod slab;

#[cfg(not(loom))]
pub(crate) mod body;
#[cfg(not(loom))]
pub(crate) mod clock;
#[cfg(not(loom))]
pub(crate) mod depot;
#[cfg(not(loom))]
pub(crate) mod shared;
#[cfg(not(loom))]
pub(crate) mod table;
