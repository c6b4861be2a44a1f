//! The state word's layout: where each field sits in the `u64` (see the
//! diagram in the [module docs](super)), the lifecycle states, and the
//! [`Snapshot`] a load returns.

use core::fmt;

const LIFECYCLE: u64 = 0b111;
pub(super) const WOKEN: u64 = 1 << 3;
pub(super) const MESSAGED: u64 = 1 << 4;
pub(super) const TERMINATE: u64 = 1 << 5;
pub(super) const CLOSE: u64 = 1 << 6;
/// On a Complete or Free word, `MESSAGED`'s bit says *late*: an event was
/// pushed for the ended process after its close may have drained the
/// mailbox, and whoever holds the mailbox then drains it again
/// (`StateWord::free`, `StateWord::end_sweep`).
pub(super) const LATE: u64 = MESSAGED;
/// On a Free word, `WOKEN`'s bit says *sweeping*: a late sender holds the
/// freed slot's mailbox to drain it (`StateWord::notify`'s
/// [`Notify::Sweep`](super::Notify::Sweep)); the slot is not reused until
/// it lets go.
pub(super) const SWEEP: u64 = WOKEN;
/// On a Free word, `CLOSE`'s bit says *withdrawn*: the slot held a process
/// its creator withdrew (`StateWord::free_withdrawn`). It stays sweeping
/// for good, so no late sender drains it; shutdown's report of stranded
/// events and the scheduler's drop do.
pub(super) const WITHDRAWN: u64 = CLOSE;
pub(super) const GENERATION_SHIFT: u32 = 32;

/// The last generation a slot reaches. A slot freed into it is *retired*:
/// the process table never hands it out again, so a generation never wraps
/// back to one a stale [`Pid`](crate::process::Pid) still carries. (A slot
/// reused every 300 ns, one worker's spawn-and-finish loop, would otherwise
/// wrap its 32-bit generation in about 21 minutes.) Retiring costs one slot
/// per 2^32 reuses of it.
pub(crate) const LAST_GENERATION: u32 = u32::MAX;

/// Where a process is in its life.
///
/// Non-exhaustive: states may be added in a minor release, so a `match`
/// outside this crate (on [`ProcessInfo::state`](crate::sched::ProcessInfo::state),
/// say) ends with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Waiting for a message (or a completion).
    Idle = 0,
    /// Waiting for a completion of a command it yielded.
    Blocked = 1,
    /// In a run queue (queued exactly once).
    Ready = 2,
    /// A worker is stepping it.
    Running = 3,
    /// Finished; its slot is about to be freed.
    Complete = 4,
    /// The slot holds no process.
    Free = 5,
}

impl Lifecycle {
    #[inline]
    fn from_bits(bits: u64) -> Lifecycle {
        match bits & LIFECYCLE {
            0 => Lifecycle::Idle,
            1 => Lifecycle::Blocked,
            2 => Lifecycle::Ready,
            3 => Lifecycle::Running,
            4 => Lifecycle::Complete,
            5 => Lifecycle::Free,
            other => unreachable!("state word: invalid lifecycle {other}"),
        }
    }
}

/// A value read from a [`StateWord`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Snapshot(pub(super) u64);

impl Snapshot {
    /// The lifecycle state.
    #[inline]
    pub fn lifecycle(self) -> Lifecycle {
        Lifecycle::from_bits(self.0)
    }

    /// The slot generation.
    #[inline]
    pub fn generation(self) -> u32 {
        (self.0 >> GENERATION_SHIFT) as u32
    }

    /// Whether a completion or cancel arrived during the current step.
    #[inline]
    pub fn is_woken(self) -> bool {
        self.0 & WOKEN != 0
    }

    /// Whether a message arrived during the current step.
    #[inline]
    pub fn is_messaged(self) -> bool {
        self.0 & MESSAGED != 0
    }

    /// Whether terminate was requested.
    #[inline]
    pub fn is_terminating(self) -> bool {
        self.0 & TERMINATE != 0
    }

    /// Whether the slot is free and held out of use for good, its process
    /// withdrawn by its creator: its mailbox is left to the drains of
    /// shutdown and of the scheduler's drop.
    #[inline]
    pub fn is_withdrawn(self) -> bool {
        self.lifecycle() == Lifecycle::Free && self.0 & WITHDRAWN != 0
    }

    #[inline]
    pub(super) fn with_lifecycle(self, lifecycle: Lifecycle) -> u64 {
        (self.0 & !LIFECYCLE) | lifecycle as u64
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("lifecycle", &self.lifecycle())
            .field("generation", &self.generation())
            .field("woken", &self.is_woken())
            .field("messaged", &self.is_messaged())
            .field("terminating", &self.is_terminating())
            .finish()
    }
}
