//! [`Pid`]: a process identifier that cannot reach a newer process.

use core::fmt;

/// Identifies one process for its whole life, and never another.
///
/// A `Pid` is a slot index in the scheduler's process table plus the
/// *generation* of that slot: when a process ends and its slot is reused,
/// the generation changes, so a stale `Pid` is refused (with the message
/// handed back) instead of reaching the newer process. Generations only
/// grow: a slot that reaches the last one (`u32::MAX`) is retired
/// instead of wrapping, so no `Pid` is ever issued twice.
///
/// ```
/// use stepsched::process::Pid;
/// let pid = Pid::from_raw(0x0000_0002_0000_0007);
/// assert_eq!((pid.index(), pid.generation()), (7, 2));
/// assert_eq!(pid.to_string(), "<7.2>");
/// assert_eq!(Pid::from_raw(pid.into_raw()), pid);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid {
    index: u32,
    generation: u32,
}

impl Pid {
    /// The sender of an exit signal from outside the scheduler's processes
    /// ([`Scheduler::exit`](crate::sched::Scheduler::exit)): a trapping
    /// target receives `Event::Down { pid: Pid::OUTSIDE, reason }`. It names
    /// no process (no slot has its index), so a send or a monitor to it is
    /// refused as any unknown PID is. Shown as `<outside>`.
    ///
    /// ```
    /// use stepsched::process::Pid;
    /// assert_eq!(Pid::OUTSIDE.to_string(), "<outside>");
    /// ```
    pub const OUTSIDE: Pid = Pid::new(u32::MAX, 0);

    pub(crate) const fn new(index: u32, generation: u32) -> Self {
        Pid { index, generation }
    }

    /// The slot index in the process table.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The slot's generation when this process was created.
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// Packs the PID into a `u64` (generation in the high half), e.g. to
    /// carry it in a message of a foreign format.
    pub const fn into_raw(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    /// Rebuilds a PID from [`Pid::into_raw`]. Any `u64` is accepted; a PID
    /// that names no process is refused when it is used.
    pub const fn from_raw(raw: u64) -> Self {
        Pid {
            index: raw as u32,
            generation: (raw >> 32) as u32,
        }
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Pid::OUTSIDE {
            return f.write_str("<outside>");
        }
        write!(f, "<{}.{}>", self.index, self.generation)
    }
}
