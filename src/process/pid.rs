//! [`Pid`]: a process identifier that cannot reach a newer process, and
//! the [`NodeId`] of the scheduler it lives in.
//!
//! # Where the node lives
//!
//! A `Pid` stays two `u32`s: the node takes the top [`NODE_BITS`] bits of
//! the index, and a scheduler's table holds only indices that carry its
//! own node. The table's lookup subtracts the node's base from the index
//! before it finds the page, so a foreign PID lands on a page no local
//! slot is ever in and the lookup fails: only that failure path (taken
//! by no local delivery) asks whether the PID is remote
//! (`sched/remote/`). Local traffic pays the subtraction, beside the
//! add the page lookup already makes, and no branch.
//!
//! Rejected: a `node` field (a 12-byte `Pid`, 16 in every `(Pid,
//! message)` a step sends, and a compare in every delivery), and the node
//! in the generation's top bits (free, but a slot would then be retired
//! after 2^24 reuses instead of 2^32: a spawn-and-finish loop that reuses
//! one slot every 300 ns would retire it every 5 seconds).

use core::fmt;

/// How many top bits of a [`Pid`]'s index name its node.
pub const NODE_BITS: u32 = 8;
const NODE_SHIFT: u32 = 32 - NODE_BITS;
/// The slots a node's table may hold: below `2^24`, less a first page, so
/// that no local slot shares a page with an index of another node.
pub(crate) const LOCAL_SLOTS: u32 = (1 << NODE_SHIFT) - 64;

/// The node a scheduler is in a cluster: `0` to `254` (255 is kept for
/// [`Pid::OUTSIDE`]). A scheduler built without
/// [`Builder::node`](crate::sched::Builder::node) is node 0.
///
/// ```
/// use stepsched::process::NodeId;
/// let node = NodeId::new(3).unwrap();
/// assert_eq!(node.get(), 3);
/// assert!(NodeId::new(255).is_none());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct NodeId(u8);

impl NodeId {
    /// Node `n`, if it is below 255.
    pub const fn new(n: u8) -> Option<NodeId> {
        if n == u8::MAX {
            None
        } else {
            Some(NodeId(n))
        }
    }

    /// The node's number.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The first index of this node's PIDs (its number in the top bits).
    pub(crate) const fn base(self) -> u32 {
        (self.0 as u32) << NODE_SHIFT
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// Identifies one process for its whole life, and never another.
///
/// A `Pid` is a slot index in its node's process table (the node in the
/// index's top [`NODE_BITS`] bits, see [`Pid::node`]) plus the
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
/// assert_eq!(pid.node().get(), 0);
///
/// let remote = Pid::from_raw(0x0000_0002_0300_0007);
/// assert_eq!((remote.node().get(), remote.index()), (3, 7));
/// assert_eq!(remote.to_string(), "<3.7.2>");
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

    /// The slot index in its node's process table.
    pub const fn index(self) -> u32 {
        self.index & ((1 << NODE_SHIFT) - 1)
    }

    /// The node whose scheduler holds the process. ([`Pid::OUTSIDE`]'s is
    /// 255, which no scheduler is.)
    pub const fn node(self) -> NodeId {
        NodeId((self.index >> NODE_SHIFT) as u8)
    }

    /// The index with its node: the key of the process table's lookup.
    #[inline]
    pub(crate) const fn key(self) -> u32 {
        self.index
    }

    /// The sender of a message from outside the processes of `node`, as
    /// a remote node names it (`sched/remote/`): [`Pid::OUTSIDE`]'s
    /// index with `node`'s bits, so that a refusal finds its way back.
    pub(crate) const fn outside_of(node: NodeId) -> Pid {
        Pid::new(node.base() | ((1 << NODE_SHIFT) - 1), u32::MAX)
    }

    /// Whether this PID names no process: [`Pid::OUTSIDE`], or the outside
    /// of some node (the sender of a message from outside that node's
    /// processes, or the receiver `on_undelivered` is given for a named
    /// send whose name named no process): the last index of a node, which
    /// no table holds.
    ///
    /// ```
    /// use stepsched::process::Pid;
    /// assert!(Pid::OUTSIDE.is_outside());
    /// assert!(!Pid::from_raw(7).is_outside());
    /// ```
    pub const fn is_outside(self) -> bool {
        self.index() == (1 << NODE_SHIFT) - 1
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
        match self.node().get() {
            0 => write!(f, "<{}.{}>", self.index(), self.generation),
            node => write!(f, "<{node}.{}.{}>", self.index(), self.generation),
        }
    }
}
