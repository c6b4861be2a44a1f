//! A Chase-Lev work-stealing deque whose thieves take half in one CAS.
//!
//! One [`Worker`] (the owner) pushes and pops at the *bottom*, newest first,
//! which keeps the owner on cache-hot work. Any number of [`Stealer`]s take
//! from the *top*, oldest first: [`Stealer::steal`] one item, or
//! [`Stealer::steal_half_into`] half of them (rounded up, at most
//! [`MAX_STEAL`]) with a single successful CAS, moving all but the oldest
//! onto the thief's own `Worker` ([`Stealer::steal_half_into_with`] shows
//! the thief the batch first). Items are owning pointers ([`Pointer`]:
//! `Box<T>`, `Arc<T>`), stored as they are, one machine word per slot.
//!
//! ```
//! use stepsched::deque::{Steal, Worker};
//!
//! let owner = Worker::new();
//! let thief = owner.stealer();
//! for job in 0..6 {
//!     owner.push(Box::new(job));
//! }
//! // The thief takes the three oldest: job 0 to run now, 1 and 2 for later.
//! let mine = Worker::new();
//! assert_eq!(thief.steal_half_into(&mine).map(|b| *b), Steal::Success(0));
//! assert_eq!(mine.len(), 2);
//! // The owner keeps working newest first.
//! assert_eq!(owner.pop().map(|b| *b), Some(5));
//! ```
//!
//! # Guarantees
//!
//! - **Order.** The owner pushes and pops at the bottom, newest first
//!   (LIFO); thieves take from the top, oldest first (FIFO).
//! - **Exactly once.** Every item pushed is returned once, by `pop` or by a
//!   steal, or dropped once with the deque: never twice, never lost. This
//!   holds for [`Stealer::steal_half_into`] too, which claims
//!   `min(ceil(len / 2), MAX_STEAL)` items with exactly one successful CAS
//!   and is linearizable with the owner's LIFO `pop`, even when a thief's
//!   view of the deque is stale while the owner pops and pushes (the
//!   interleaving explained below, which breaks the naive design).
//! - **Cheap for the owner.** `push` performs no atomic read-modify-write;
//!   `pop` performs one (a second, at times, within [`MAX_STEAL`] of the
//!   top; see "Which pops invalidate").
//! - **Thieves of a busy owner do not retry.** Only a pop within
//!   [`MAX_STEAL`] positions of the top can fail a thief's claim: an owner
//!   holding more than `MAX_STEAL` items never makes its thieves retry.
//! - **Meaningful results.** `pop` returns `None` only when the deque is
//!   empty; a steal returns [`Steal::Empty`] only when it found the deque
//!   empty, and [`Steal::Retry`] only after losing a race to another thief
//!   or to the owner.
//! - **No data race**, even on a slot a thief reads and then discards:
//!   slots are atomic words.
//! - **Bounded memory.** A full ring grows to twice its size; replaced rings
//!   are retired, not freed, until the deque drops (or a growth finds no
//!   `Stealer` left), so the deque holds less than twice its largest ring.
//!   It never shrinks.
//!
//! The sections below give the protocol behind each of these and the
//! argument that it holds; "Proof" names the models that check them.
//!
//! # The algorithm
//!
//! Positions are wrapping `u32` counters into a power-of-two ring of atomic
//! slots: items live at positions `top..bottom`. This is the deque of
//! D. Chase and Y. Lev, *Dynamic Circular Work-Stealing Deque* (SPAA 2005),
//! with the C11 orderings of N. M. Lê, A. Pop, A. Cohen and F. Zappa Nardelli,
//! *Correct and Efficient Work-Stealing for Weak Memory Models* (PPoPP 2013),
//! changed in one place: how the owner's pop excludes the thieves.
//!
//! - **push** (owner): write the slot at `bottom`, then store `bottom + 1`
//!   with Release. No read-modify-write. A full ring is first copied into
//!   one twice as large.
//! - **claim** (thieves): load `head` (Acquire), load `bottom` (Acquire),
//!   read the `k` slots from `top`, then CAS `head` from the value loaded to
//!   that value plus `k`. A failed CAS is [`Steal::Retry`]: someone else
//!   changed `head` in between.
//! - **pop** (owner): store `bottom - 1` with Release, then perform one
//!   read-modify-write on `head` (instead of Chase-Lev's SeqCst fence and
//!   load), which returns the current `top`. If `top` is not above the
//!   popped position the item is the owner's, *even the last one*: no second
//!   CAS is needed, because the RMW already excluded every thief (below). If
//!   thieves took everything, `bottom` is restored, again with Release.
//!
//! **Every store of `bottom` is Release**, the pop's two included. A thief
//! may read `bottom` from any of them and then reads the slots below it;
//! only the store it read from can order those reads after the pushes that
//! wrote the slots. The pop's stores were once Relaxed, on the argument that
//! the RMW publishes them: that covers thieves that read `head` after the
//! RMW, not one that read `head` before it and `bottom` from the pop's own
//! store (push A, push B, pop, against one steal: the thief reads slot 0
//! unordered, and its CAS can still win). x86 hides it; loom
//! (`thief_reads_bottom_from_pops_store`) and Miri
//! (`thieves_never_read_unwritten_slots`) do not. On x86 a Release store is
//! the same `mov`.
//!
//! ## Why a steal-half on `top` alone is wrong, and what replaces it
//!
//! (docs/ARCHITECTURE.md, trap 1: a steal racing a pop.)
//!
//! The papers prove single-item steals. Taking `k > 1` items with one CAS on
//! `top` alone is unsound with a LIFO owner: a thief reads `top = 0` and
//! `bottom = 10` and plans to take 5; meanwhile the owner pops 9 down to 4 —
//! each pop sees `top = 0`, so none needs a CAS — and pushes a new item X at
//! position 4; the thief's CAS `0 -> 5` still succeeds. Item 4 is now run
//! twice (or X is lost). A stale `bottom` is harmless for pushes, which only
//! add, but not for pops. (Go's `runqgrab` and tokio avoid this because their
//! owner also takes items with an RMW on the index thieves CAS; crossbeam's
//! LIFO flavour steals one item per CAS.)
//!
//! Our remedy keeps one CAS per steal and an RMW-free push: `head` packs
//! `top` (low 32 bits) with an *invalidation count* (high 32 bits), and each
//! pop joins `head`'s modification order with one RMW:
//!
//! - A claim whose CAS lands **before** the pop's RMW is seen by it: the RMW
//!   returns a `top` already above the claim.
//! - A thief whose `head` load reads the pop's RMW **or any later write**
//!   synchronizes with the pop (every write to `head` is an RMW, so later
//!   writes carry the pop's release sequence) and therefore reads the lowered
//!   `bottom`: its claim stays below the popped position.
//! - What remains are claims that loaded `head` before the pop's RMW and CAS
//!   after it. Such a CAS can only succeed if `head` was not changed in
//!   between, so it starts exactly at the `top` the pop read.
//!
//! ## Which pops invalidate
//!
//! Failing every claim in flight on every pop would starve thieves of a busy
//! owner. A claim covers at most [`MAX_STEAL`] positions, so the last kind of
//! claim can reach the popped position only if that position is less than
//! `MAX_STEAL` above `top`. The owner therefore adds the invalidation unit
//! only for such *near* pops; a *far* pop performs an RMW that adds zero,
//! which leaves every claim in flight valid. A busy owner that keeps more
//! than `MAX_STEAL` items costs its thieves nothing. The owner decides with
//! a cached lower bound of `top`; when that bound says "far" but the RMW's
//! fresh `top` says "near", it adds the unit with a second RMW.
//!
//! Thieves need no SeqCst fence: the argument above uses only the
//! modification order of `head`, release sequences and Acquire loads.
//!
//! ## The ABA window
//!
//! `head` only ever grows: claims add 1 to 32, invalidating pops add 2^32
//! (a carry out of `top` runs into the count). A thief that loaded `head`
//! and then stalls can be fooled only if `head` returns to the same value,
//! which takes 2^64 of additions: at least 2^32 invalidating pops while that
//! thief stays descheduled between two instructions — more than 20 seconds
//! of nothing but near-top pops even at one pop per 5 ns. Go's run queue
//! accepts the same 2^32 window on its `uint32` head.
//!
//! ## Growth and memory
//!
//! A full ring is copied into one twice as large, which is then published
//! with Release. Thieves may still be reading the old ring, so it is
//! *retired*, not freed: each ring keeps a pointer to the one it replaced and
//! the whole chain is freed when the last handle drops, or at once by a
//! growth that finds no `Stealer` left (a count of them, whose Release
//! decrements the growth's Acquire load pairs with). Rings double, so the
//! retired rings together are smaller than the live one: the deque uses at
//! most twice the memory of its largest ring. Every slot of a new ring is
//! written exactly once while it is built (the copied item or null), so a
//! thief with a stale `top` never reads uninitialised memory, and there is
//! no separate zeroing pass. The ring never shrinks.
//!
//! ## No data races, even on discarded reads
//!
//! Slots are `AtomicPtr`s. A thief may read a slot that the owner is
//! rewriting (it then loses its CAS and drops what it read); that is a race
//! on an atomic, not a data race. Items are converted back from raw
//! pointers only by the one party that won them.
//!
//! ## Proof
//!
//! The loom models in `loom-tests/tests/deque/` (built with
//! `--cfg loom`, where the claim limit shrinks to 2 so both pop paths are
//! reached) check exactly-once delivery for: the last item raced by `pop`
//! and `steal`, `pop` against `steal_half_into`, two `steal_half_into`s,
//! push with growth against `steal`, a thief taking items pushed
//! concurrently, and the stale thief of the interleaving above. Miri runs the
//! unit tests, and `fuzz/` compares sequences of operations with a
//! `VecDeque` model.

mod buffer;
mod pointer;
mod steal;
mod taken;
mod worker;

pub use pointer::Pointer;
pub use steal::Steal;
pub use worker::{Stealer, Worker};

/// The most items one [`Stealer::steal_half_into`] takes.
///
/// 32 keeps a claim's slot reads within four cache lines and the owner's
/// "far pop" threshold (see the module docs) small: an owner holding more
/// than 32 items never fails a thief's claim.
pub const MAX_STEAL: usize = 32;

#[cfg(test)]
mod tests;
