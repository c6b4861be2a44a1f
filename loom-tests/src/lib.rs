//! loom models of `stepsched`'s concurrency protocols live in `tests/`.
//!
//! Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release
//! ```
//!
//! Without `--cfg loom` every model compiles to nothing.
//!
//! What each file proves (each model is named for the interleaving it
//! covers, and says in its docs which weakened ordering or step it fails
//! under):
//!
//! - `deque/`: the Chase-Lev deque delivers every item exactly once
//!   (owner push/pop against steals and steal-half, growth).
//! - `mpsc.rs`, `mailbox.rs`: the MPSC queue and the mailbox lose, duplicate
//!   and reorder nothing, across block and node reuse; `Queue::is_empty`
//!   is never fooled by a stub whose block was reused (pop-generation).
//! - `pool.rs`: the node pool's live count (`mpsc/pool.rs`): a block is
//!   freed exactly once, after every thread's last use of its nodes, when
//!   two threads free their nodes while its carver retires it.
//! - `global_queue.rs`: the global queue's consumer token serialises takes.
//! - `idle.rs`: parking never leaves work with every worker asleep: one
//!   worker against a flag, and two workers (two spinners, a spinner and a
//!   sleeper, two idle workers) against a real `GlobalQueue` whose pushes
//!   loom preempts between swap and link.
//! - `state.rs`: the state word and the process's `Mailbox`: every event is
//!   seen by a later step, the process is queued exactly once, and the
//!   mailbox's consumer moves between workers only through the word.
//! - `table.rs`: the process table's pages and free list (`sched/slab.rs`):
//!   a slot is held by one holder at a time and never lost, a racing page
//!   allocation leaves one page, and a stale PID never reaches the slot's
//!   next process.
//! - `watch.rs`: the long-step monitor's seqlock (`sched/watch.rs`): a
//!   sample pairs a step's sequence number only with that step's PID.
//! - `dump.rs`: the process dump's read of a slot (`sched/figures.rs`)
//!   against the slot's reuse: an entry never pairs a PID with another
//!   incarnation's figures, and the queued-events figure never underflows.
//! - `bound.rs`: a bounded mailbox's count (`sched/bound.rs`): senders
//!   racing the drain at the capacity accept nothing beyond it and refuse
//!   nothing once the drain is visible; a sender waiting for room is never
//!   missed by the drain that made it.
//!
//! - `drain.rs`: the shutdown drain and the stranded-events report
//!   (`Shared::report_stranded`, `Drop for Shared`): a delivery racing
//!   phase EXITING, its process's close and shutdown's drain is refused or
//!   reported exactly once (by the close, shutdown's drain or `Drop`'s); a
//!   creator withdrawing its process as shutdown drains leaves the mailbox
//!   to the drain (the race it found); the queued figure stays consistent.
//!   Tallies where each event ended, so a blind model fails; canaries show
//!   each model failing with a step of the protocol broken.
//!
//! - `limits.rs`: not a model of `stepsched` but a canary for loom itself:
//!   the DPOR blind spot that `Gate` (`src/gate.rs`) works around
//!   (`docs/proof/loom-limits.md`) is still there.
//!
//! About 55 s of model checking in all on two cores (plus the build), most
//! of it the two-worker idle models (36 s); `drain.rs` adds about 5 s.

#[cfg(loom)]
mod gate;
#[cfg(loom)]
pub use gate::Gate;
