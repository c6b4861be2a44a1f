//! [`StepWatch`]: one worker's current step, published for the long-step
//! monitor (`monitor.rs`) as a seqlock.
//!
//! The worker (the only writer) stores, at the start of step `seq` (odd),
//! the process's PID and then `seq`; at its end, `seq + 1` (even). The
//! monitor reads `seq`, then, if it is odd, the PID, then `seq` again; if
//! the two reads agree, the PID is that step's. The seqlock's promise is
//! that a sample never pairs a step's sequence number with another step's
//! PID. It rests on two Release/Acquire pairs:
//!
//! - `begin`'s `seq` store (Release) and `sample`'s first `seq` load
//!   (Acquire): a sample that sees step `s` sees its PID, not an older one;
//! - `begin`'s `pid` store (Release) and `sample`'s `pid` load (Acquire): a
//!   sample that reads a *later* step's PID also sees the even number that
//!   ended its own step (stored before that PID), so its re-read of `seq`
//!   differs and it returns no PID.
//!
//! `end`'s store needs no Release of its own: the second pair already
//! orders it, because the next `begin`'s `pid` store is Release and comes
//! after it in program order. An even number carries nothing else.
//!
//! loom: `loom-tests/tests/watch.rs` (the monitor is not built under loom;
//! this file is, and the model reaches it through `crate::__internals`).

use crate::process::Pid;
use crate::sync::{AtomicU64, Ordering};

/// One worker's current step, published for the monitor. Written by its
/// worker only; read by the monitor. See the [module docs](self).
#[derive(Debug, Default)]
pub struct StepWatch {
    /// The worker's step sequence number: odd while a step runs, even
    /// between steps. Worker: `begin` Release, `end` Relaxed; monitor:
    /// Acquire, then Relaxed re-read.
    seq: AtomicU64,
    /// `Pid::into_raw` of the process in the current (or last) step. Worker:
    /// Release store before the odd `seq`; monitor: Acquire load.
    pid: AtomicU64,
    /// The sequence number of the step asked to yield (0: none, as steps are
    /// odd). Monitor: Relaxed store; `StepOutput::should_yield`: Relaxed load.
    preempt: AtomicU64,
}

impl StepWatch {
    /// No step yet: sequence number 0, no preemption request.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Publishes the start of step `seq` (odd) of `pid`. Worker only.
    #[inline]
    pub fn begin(&self, seq: u64, pid: Pid) {
        debug_assert!(seq & 1 == 1, "StepWatch::begin: even sequence {seq}");
        // Release: pairs with the Acquire load of `pid` in `sample`: a
        // monitor that reads this PID sees our earlier store of the even
        // `seq` that ended the previous step (Relaxed in `end`; this Release
        // orders it), so its re-read of `seq` detects the change.
        self.pid.store(pid.into_raw(), Ordering::Release);
        // Release: pairs with the Acquire load of `seq` in `sample`: a
        // monitor that sees this step also sees its PID stored above.
        self.seq.store(seq, Ordering::Release);
    }

    /// Publishes the end of the step: `seq` is the next, even, number.
    /// Worker only.
    #[inline]
    pub fn end(&self, seq: u64) {
        debug_assert!(seq & 1 == 0, "StepWatch::end: odd sequence {seq}");
        // Relaxed: an even number publishes no data, and the one ordering
        // it needs, before the next step's PID, is given by the Release
        // store of `pid` in the next `begin` (which pairs with `sample`'s
        // Acquire load of `pid`). Was Release; the loom model
        // (`loom-tests/tests/watch.rs`) passes with Relaxed, and fails when
        // either half of that `pid` pair is weakened.
        self.seq.store(seq, Ordering::Relaxed);
    }

    /// The worker's sequence number, with the PID if a step is running: the
    /// PID of *that* step (a seqlock read: if the worker moved on meanwhile,
    /// the re-read of `seq` differs, and the newer number is returned with
    /// no PID). Monitor only; public (hidden) for the loom model.
    pub fn sample(&self) -> (u64, Option<Pid>) {
        // Acquire: pairs with the Release store of `seq` in `begin`: the
        // PID loaded below is this step's or a later one's, never older.
        let seq = self.seq.load(Ordering::Acquire);
        if seq & 1 == 0 {
            return (seq, None);
        }
        // Acquire: pairs with the Release store of a later step's PID in
        // `begin`, if we read one; then the end of our step happens before
        // the re-read below, which therefore differs.
        let pid = self.pid.load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire load above.
        let again = self.seq.load(Ordering::Relaxed);
        if again != seq {
            return (again, None);
        }
        (seq, Some(Pid::from_raw(pid)))
    }

    /// Asks step `seq` to yield. Monitor only.
    pub fn request_yield(&self, seq: u64) {
        // Relaxed: a hint that carries no data; `should_yield` polls it.
        self.preempt.store(seq, Ordering::Relaxed);
    }

    /// The preemption request word, which the running step's
    /// `StepOutput::should_yield` compares with its own sequence number.
    #[inline]
    pub fn preempt(&self) -> &AtomicU64 {
        &self.preempt
    }
}
