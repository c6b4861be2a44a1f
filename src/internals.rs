//! The crate's internals, for its own tests only: **not part of the public
//! API**, outside semver, and free to change or vanish in any release.
//! Hidden from the docs; nothing here is needed to use the crate.
//!
//! This is the one door through which code outside the library reaches
//! the internal protocols it checks. Everything else is crate-private.
//!
//! - In every build: the global run queue (`GlobalQueue`, `Take`, `BATCH`)
//!   and the idle protocol (`Idle`), which `tests/global_queue.rs` and
//!   `tests/sched_parking.rs` drive directly.
//! - Under `--cfg loom` only: what the loom models in `loom-tests/` drive:
//!   the per-process state word and its verdicts; the phase word; the
//!   process table's pages and free list; the process dump's figures; a
//!   bounded mailbox's count; the timing wheel; the monitors' and links'
//!   bookkeeping; the long-step monitor's seqlock; the node pool's live
//!   count and spare blocks.

pub use crate::sched::global::{GlobalQueue, Take, BATCH};
pub use crate::sched::idle::Idle;

#[cfg(loom)]
pub use crate::mpsc::pool::{Live, Spares};
#[cfg(loom)]
pub use crate::process::state::{AfterStep, Notify, Park, Start, StateWord, Wake};
#[cfg(loom)]
pub use crate::sched::bound::{Bound, Room};
#[cfg(loom)]
pub use crate::sched::figures::{Entry, Figures, QueueCounts, TimerCount};
#[cfg(loom)]
pub use crate::sched::links::{unanswered, Links, Received, Signal};
#[cfg(loom)]
pub use crate::sched::phase::{Phase, EXITING, RUNNING, STOPPING};
#[cfg(loom)]
pub use crate::sched::slab::{FreeList, Pages};
#[cfg(loom)]
pub use crate::sched::timer::wheel::TimerKind;
#[cfg(loom)]
pub use crate::sched::timer::{TimerWheel, NEVER};
#[cfg(loom)]
pub use crate::sched::watch::StepWatch;
