//! The per-process state word: lifecycle, wakeup bits and generation in one
//! `AtomicU64`, changed only by CAS.
//!
//! ```text
//!  63                32 31      7     6       5        4       3     2..0
//! ┌──────────────────┬─────────┬──────┬─────────┬────────┬──────┬─────────┐
//! │    generation    │ (zero)  │CLOSE │TERMINATE│MESSAGED│WOKEN │lifecycle│
//! └──────────────────┴─────────┴──────┴─────────┴────────┴──────┴─────────┘
//! ```
//!
//! - *lifecycle* ([`Lifecycle`]) is changed by the party the transition
//!   belongs to: the worker that holds the process (start, end of step,
//!   complete), the notifier that wakes a waiting one (or a worker that
//!   claims a waiting one to hand it a signal with nothing pushed:
//!   [`StateWord::claim`]), the table (free, reuse).
//! - `WOKEN`: a completion or cancel arrived while Running. Set by
//!   notifiers, cleared when the next step starts. Wakes `Wait` and `Idle`.
//! - `MESSAGED`: a message arrived while Running. Wakes only `Idle`.
//! - `TERMINATE`: terminate was requested. Once set it is never unset for
//!   this generation.
//! - `CLOSE`: terminate found the process waiting, so it is closed without
//!   another step. Never unset for this generation.
//! - On a Complete or Free word `MESSAGED`'s bit is *late* (an event was
//!   pushed after the close may have drained the mailbox: the closer's
//!   `free` fails and it drains again, or a sweeper goes round again) and
//!   on a Free word `WOKEN`'s is *sweeping* (a late sender holds the freed
//!   slot's mailbox to drain it: [`Notify::Sweep`]; the table passes the
//!   slot over until [`StateWord::end_sweep`]). A withdrawn process's slot
//!   stays sweeping for good (`Table::withdraw`). See `sched/shared/late.rs`.
//! - *generation*: bumped when the slot is freed, so operations carrying an
//!   older generation (a stale PID) fail instead of touching a newer process.
//!   It never wraps: a slot freed at [`LAST_GENERATION`] is retired by the
//!   table and never reused, so generations only grow and a stale PID can
//!   never match a later process, however long the scheduler runs.
//!
//! Every change is a CAS on the whole word, so transitions by notifiers and
//! by the running worker are totally ordered: either the notifier's CAS comes
//! first and the worker's end-of-step transition sees its bit, or the
//! worker's comes first and the notifier sees Blocked/Idle and queues the
//! process itself. Exactly one of them queues it (the exactly-once re-queue
//! guarantee); no fence is needed beyond each RMW's own ordering.
//!
//! **notify-writes invariant:** a notify of a live process always *writes*
//! the word, even when it changes nothing (the process is Ready, or already
//! has its bit, or is Blocked and the event is a message): then it performs
//! a `fetch_add(0)`. A plain load would not do. The notifier pushed its
//! event and then reads the word; the worker CASes the word (start of a
//! step) and then drains the queue. That is the store-buffer pattern: with
//! only a load on the notifier's side, the notifier can read the old
//! lifecycle (Ready) while the worker's drain misses the push, and the step
//! ends Idle with the event queued and nobody left to wake it. A ping-pong
//! stalls this way (the kick sent while its target is still queued from
//! `submit`), and loom finds it
//! (`message_to_a_queued_process_is_seen_by_its_step_or_wakes_it` and two
//! siblings in `loom-tests/tests/state.rs`). With a write, the notifier's
//! RMW and the worker's CAS are ordered in the word's modification order:
//! if the notifier's comes first, the worker's Acquire CAS reads it (or an
//! RMW after it, continuing its release sequence), so the drain sees the
//! push; if the worker's comes first, the notifier sees Running and leaves
//! a bit for the end of the step. A finished target is written too (marked
//! late), and a freed one taken to sweep, so that an event pushed after the
//! close's drain is reported at once (`sched/shared/late.rs`); only a stale
//! target, its slot already reused, skips the write: the slot's new holder
//! reports the event as another generation's.
//!
//! The word's bits, its lifecycle states and the snapshot a load returns
//! are in `layout.rs`; the transitions, each one CAS, in `transitions.rs`.

mod layout;
mod transitions;

pub(crate) use layout::LAST_GENERATION;
pub use layout::{Lifecycle, Snapshot};
pub use transitions::{AfterStep, Late, Notify, Park, Start, StateWord, Wake};
