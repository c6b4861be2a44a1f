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
//!
//! # What stays out of the public API
//!
//! `Lifecycle`, the state a process dump reports, is public
//! ([`process::Lifecycle`](crate::process::Lifecycle)); the rest of the
//! state word is not:
//!
//! ```
//! use stepsched::process::Lifecycle;
//! assert_ne!(Lifecycle::Idle, Lifecycle::Running);
//! ```
//!
//! None of the internal protocols is reachable by its own path (each block
//! below must fail to compile), and the loom-only part of this module is
//! not in a normal build (the last one):
//!
//! ```compile_fail
//! use stepsched::process::state::StateWord;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::GlobalQueue;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::Take;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::BATCH;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::bound::Bound;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::figures::Figures;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::idle::Idle;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::links::Links;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::phase::Phase;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::slab::FreeList;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::timer::TimerWheel;
//! ```
//!
//! ```compile_fail
//! use stepsched::sched::watch::StepWatch;
//! ```
//!
//! ```compile_fail
//! use stepsched::mpsc::pool::Live;
//! ```
//!
//! ```compile_fail
//! use stepsched::__internals::StateWord;
//! ```

pub use crate::sched::core::global::{GlobalQueue, Take, BATCH};
pub use crate::sched::core::idle::Idle;

#[cfg(loom)]
pub use crate::mpsc::pool::{Live, Spares};
#[cfg(loom)]
pub use crate::process::state::{AfterStep, Notify, Park, Snapshot, Start, StateWord, Wake};
#[cfg(loom)]
pub use crate::sched::bound::{Bound, Room};
#[cfg(loom)]
pub use crate::sched::core::name_flag::NameFlag;
#[cfg(loom)]
pub use crate::sched::core::phase::{Phase, EXITING, RUNNING, STOPPING};
#[cfg(loom)]
pub use crate::sched::core::slab::{FreeList, Pages};
#[cfg(loom)]
pub use crate::sched::links::{unanswered, Links, Received, Signal};
#[cfg(loom)]
pub use crate::sched::observe::figures::{Entry, Figures, QueueCounts, TimerCount};
#[cfg(loom)]
pub use crate::sched::observe::watch::StepWatch;
#[cfg(loom)]
pub use crate::sched::timer::wheel::TimerKind;
#[cfg(loom)]
pub use crate::sched::timer::{TimerWheel, NEVER};
