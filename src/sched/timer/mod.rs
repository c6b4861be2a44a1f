//! Timers: one timing wheel per worker, and how workers fire and sleep
//! until them.
//!
//! A step asks for a timer with `StepOutput::wake_after`/`wake_at` (an
//! `Event::Timer`), `yield_command_timeout` (a `TimedOut` completion), and
//! an embedder with `Scheduler::send_after` (a message). After the step,
//! its worker inserts the timer into **its own** wheel ([`wheel`]: a
//! hierarchical timing wheel, O(1) insert and cancel, slab entries, 16 µs
//! ticks) and records `(tag, key, kind, wheel)` in the process's body. The
//! wheel sits behind its own mutex ([`TimerWheel`]); the owner is almost
//! always the only one to take it, so the lock is uncontended, and there
//! is no global lock. Other threads take it only to fire a busy owner's
//! due timers, to cancel a timer of a process that has since moved to
//! another worker, or to insert a `send_after`.
//!
//! **Firing.** Each wheel publishes its next expiration in `next` (a tick;
//! `u64::MAX`: empty), written under the lock; a cancel leaves it as it
//! was (early, never late), so that cancelling and re-arming a timer does
//! not count as lowering it and wake a sleeper each time. A worker reads
//! its own `next` before each search for work: one load, and only when it
//! is not `MAX` does it read the clock (so an unused timer system costs one
//! predictable branch per step, and no `Instant::now`); right after a step
//! that set a timer, it reuses the reading taken for that (only ever
//! older, so a timer fires later by at most one step, never early). A
//! spinner also looks at every other wheel's `next`, and fires a due one
//! with `try_lock`, so a worker inside a long step holds no one's timers
//! hostage while another worker is awake. Firing takes the due entries out
//! under the lock and delivers them after it (delivery may run the
//! `on_undelivered` hook, user code, which must not run under a lock). A
//! timer or timeout goes as a `Firing` (`Shared::deliver_timer`, with
//! `Wake::Completion`, which wakes an Idle or a Waiting process, and whose
//! generation check keeps a late timer from reaching a newer process in the
//! same slot): its tag and the key and wheel of the entry it was, which
//! name its arming. A `send_after` message goes through `Shared::deliver`.
//!
//! **Sleeping.** A worker about to park computes the earliest `next` of
//! every wheel, after registering as a sleeper and its SeqCst fence, and
//! parks until then (with a timeout; no timer, no timeout: there is no
//! periodic tick). Inserting a timer that lowers a wheel's `next` is
//! *publishing work* under the wake rule (`src/sched/core/README.md`): the
//! inserter stores `next`, then `Idle::notify_one` (its SeqCst fence, then
//! the sleeper count). In the fences' order either the sleeper's comes
//! first, and the inserter sees it registered and wakes it (it then parks
//! again with a fresh deadline), or the inserter's does, and the sleeper's
//! read of `next` sees the new deadline. loom:
//! `loom-tests/tests/timers.rs`, `timer_inserted_while_worker_goes_to_sleep`.
//!
//! **Cancelling.** `cancel_timer`, a real completion beating its timeout,
//! and the end of a process remove the entry under its wheel's lock (any
//! worker may take any wheel's lock, so the entry's memory is freed at
//! once). A timer that fired just before (its event on the way) is no
//! longer in the wheel; the process's record decides: a firing becomes an
//! event only if the record is there and names the same entry
//! (`Record::armed_as`), so a cancelled timer's late firing (or an
//! earlier arming's, with the same tag re-armed) is dropped silently, with
//! no clock read and no lock; the re-armed timer's own firing is still to
//! come. A firing taken one past a full step's cap and carried to the next
//! step keeps its record, marked (`Record::carry`), until a step is given
//! it: a cancel (or re-arm) in the step that did not see it takes the
//! event out of the carry with the record. What a cancelled timer costs:
//! nothing once cancelled, or, if it fired first, one event through the
//! mailbox.
//!
//! Memory per pending timer: a 36-byte wheel entry plus a 24-byte record
//! in the process's body, 60 bytes, plus the growth slack of the slab and
//! of the record vector (both double; a vector of one record is allocated
//! for exactly one). `benches/peers` `idle_timers` measures it resident.
//!
//! **Lateness.** A timer is never early: deadlines are rounded up to the
//! tick. How late it is: on an idle scheduler, the wake-up latency of a
//! parked thread (a timed futex wait: Linux adds up to 50 µs of timer
//! slack) plus at most one 16 µs tick; on a busy worker, the rest of the
//! step in progress, since its worker checks the clock between steps (or
//! the next step too, if the deadline fell in the few hundred ns between
//! the step's own timer insert and its end, whose clock reading the check
//! after it reuses); if
//! that step is long and another worker is awake (spinning or parked), the
//! other fires it, so a long step delays a timer only while every worker is
//! busy (steps cannot be preempted). Timers that fire more than
//! [`LATE_NANOS`] after their deadline are counted as late in `stats()`.

mod entry;
pub(crate) mod wheel;

use crate::padded::CachePadded;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use wheel::{Fired, Key, TimerKind, Wheel};

/// A timer fired this much after its deadline counts as late (1 ms).
pub(crate) const LATE_NANOS: u64 = 1_000_000;

/// `TimerWheel::next` when the wheel is empty.
pub const NEVER: u64 = u64::MAX;

/// What a wheel holds under its lock: the wheel, the messages of its
/// `send_after` entries, and whether shutdown has closed it.
pub struct Inner<M> {
    wheel: Wheel,
    /// `send_after` messages, by the index their entry's tag holds.
    messages: Vec<Option<M>>,
    free_messages: Vec<u32>,
    closed: bool,
}

impl<M> Inner<M> {
    /// Takes the message of a fired or cancelled `Send` entry.
    pub fn take_message(&mut self, fired: &Fired) -> Option<M> {
        debug_assert_eq!(fired.kind, TimerKind::Send);
        let message = self.messages.get_mut(fired.tag as usize)?.take();
        self.free_messages.push(fired.tag as u32);
        message
    }
}

/// One worker's wheel and its published next expiration.
pub struct TimerWheel<M> {
    /// The tick of the wheel's next expiration, or [`NEVER`]; never later
    /// than the true one (a cancel leaves it early: see `cancel`). Written
    /// under the lock after each insert, fire and close (Relaxed); read without it by the owner
    /// (is anything due?), by spinners (is a busy owner's timer due?) and by
    /// workers computing their park deadline, after their `prepare_park`
    /// fence: the inserter's `notify_one` fence pairs with that one (module
    /// docs, the wake rule), and what an entry holds is read under the lock,
    /// so the word itself publishes nothing and needs no Release.
    next: CachePadded<AtomicU64>,
    inner: Mutex<Inner<M>>,
}

impl<M> Default for TimerWheel<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> TimerWheel<M> {
    /// An empty wheel.
    pub fn new() -> Self {
        TimerWheel {
            next: CachePadded(AtomicU64::new(NEVER)),
            inner: Mutex::new(Inner {
                wheel: Wheel::new(),
                messages: Vec::new(),
                free_messages: Vec::new(),
                closed: false,
            }),
        }
    }

    /// The tick of the next expiration, or [`NEVER`] (see the field).
    #[inline]
    pub fn next(&self) -> u64 {
        // Relaxed: a hint read outside the lock; the park deadline's read
        // is ordered by the `prepare_park` fence (see the field).
        self.next.load(Ordering::Relaxed)
    }

    /// The earliest deadline of any timer in the wheel, or [`NEVER`]
    /// (`Wheel::earliest_deadline`; under the lock).
    pub fn earliest_deadline(&self) -> u64 {
        self.lock().wheel.earliest_deadline().unwrap_or(NEVER)
    }

    /// Locks the wheel (poison is ignored: nothing under the lock runs user
    /// code, so a poisoned lock only means a panic in a debug assertion).
    pub fn lock(&self) -> MutexGuard<'_, Inner<M>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks the wheel if no one holds it.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Inner<M>>> {
        match self.inner.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Publishes the locked wheel's next expiration (exact: after an
    /// insert, an advance, a close).
    fn publish(&self, inner: &Inner<M>) {
        let next = inner.wheel.next_expiration().unwrap_or(NEVER);
        // Relaxed: see the field. Under the lock, so stores are in the
        // order of the changes they describe.
        self.next.store(next, Ordering::Relaxed);
    }

    /// Inserts a timer due at tick `deadline` for the raw PID `pid`, the
    /// time being tick `now`. Returns its key, and whether it lowered the
    /// wheel's next expiration (then the caller must `notify_one`: the
    /// wake rule), or the message back if shutdown closed the wheel.
    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &self,
        now: u64,
        deadline: u64,
        pid: u64,
        tag: u64,
        kind: TimerKind,
        message: Option<M>,
    ) -> Result<(Key, bool), Option<M>> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(message);
        }
        let tag = match message {
            Some(message) => match inner.free_messages.pop() {
                Some(at) => {
                    inner.messages[at as usize] = Some(message);
                    u64::from(at)
                }
                None => {
                    inner.messages.push(Some(message));
                    (inner.messages.len() - 1) as u64
                }
            },
            None => tag,
        };
        let before = self.next();
        inner.wheel.catch_up(now);
        let key = inner.wheel.insert(deadline, pid, tag, kind);
        self.publish(&inner);
        Ok((key, self.next() < before))
    }

    /// Cancels the timer `key`, if it is still pending; a `Send` entry's
    /// message comes back with it.
    ///
    /// `next` is left as it was, even if the wheel is now empty: a stale
    /// `next` is only early (a worker that wakes or polls then finds
    /// nothing due, advances the wheel and publishes the true value), while
    /// raising it would make the next insert "lower" it again and notify a
    /// sleeper: a timeout beaten by its completion, a million times in a
    /// row, would wake a parked worker each time.
    pub fn cancel(&self, key: Key) -> Option<(Fired, Option<M>)> {
        let mut inner = self.lock();
        let fired = inner.wheel.cancel(key)?;
        let message = match fired.kind {
            TimerKind::Send => inner.take_message(&fired),
            _ => None,
        };
        Some((fired, message))
    }

    /// Cancels the `send_after` entry `key` for the raw PID `pid`, if it is
    /// still pending, and hands back its message: `None` if it has fired
    /// (its delivery is on the way, or done) or was cancelled already, or
    /// if `key` has since come to name another timer. `next` is left as
    /// [`cancel`](Self::cancel) leaves it.
    pub fn cancel_send(&self, key: Key, pid: u64) -> Option<M> {
        let mut inner = self.lock();
        if !inner.wheel.holds(key, pid, TimerKind::Send) {
            return None;
        }
        let fired = inner.wheel.cancel(key)?;
        inner.take_message(&fired)
    }

    /// Fires what is due at tick `now` into `out` (messages of `Send`
    /// entries into `messages`, in the same order), if the lock is free or
    /// `wait` is set. Returns whether it looked.
    pub fn fire(&self, now: u64, wait: bool, out: &mut Vec<Fired>, messages: &mut Vec<M>) -> bool {
        let guard = if wait {
            Some(self.lock())
        } else {
            self.try_lock()
        };
        let Some(mut inner) = guard else {
            return false;
        };
        let from = out.len();
        inner.wheel.advance(now, out);
        for fired in &out[from..] {
            if fired.kind == TimerKind::Send {
                if let Some(message) = inner.take_message(fired) {
                    messages.push(message);
                }
            }
        }
        self.publish(&inner);
        true
    }

    /// Closes the wheel (shutdown): takes out every pending entry, and
    /// their messages; later inserts are refused.
    pub fn close(&self, out: &mut Vec<Fired>, messages: &mut Vec<M>) {
        let mut inner = self.lock();
        inner.closed = true;
        let from = out.len();
        inner.wheel.drain(out);
        for fired in &out[from..] {
            if fired.kind == TimerKind::Send {
                if let Some(message) = inner.take_message(fired) {
                    messages.push(message);
                }
            }
        }
        self.publish(&inner);
    }
}

/// The earliest next expiration of `wheels` ([`NEVER`] if all are empty).
pub(crate) fn earliest<M>(wheels: &[TimerWheel<M>]) -> u64 {
    wheels.iter().map(TimerWheel::next).min().unwrap_or(NEVER)
}

#[cfg(not(loom))]
pub(crate) use clock::TimerClock;

#[cfg(not(loom))]
mod clock;

/// The scheduler's timers: the clock and one wheel per worker.
#[cfg(not(loom))]
pub(crate) struct Timers<M> {
    pub(crate) clock: TimerClock,
    pub(crate) wheels: Box<[TimerWheel<M>]>,
    /// Timers cancelled because their process was closed during shutdown
    /// (added to by the closing worker; read by `shutdown`).
    pub(crate) cancelled_by_shutdown: AtomicU64,
}

#[cfg(not(loom))]
impl<M> Timers<M> {
    pub(crate) fn new(workers: usize, simulated: Option<crate::sync::Arc<AtomicU64>>) -> Self {
        Timers {
            clock: TimerClock::new(simulated),
            wheels: (0..workers).map(|_| TimerWheel::new()).collect(),
            cancelled_by_shutdown: AtomicU64::new(0),
        }
    }
}

/// A pending timer as its process's body records it: 24 bytes. Only the
/// worker holding the process touches it.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub(crate) tag: u64,
    /// The wheel entry ([`Key::into_raw`]).
    key: u64,
    /// Bits 0..44: an interval's period in ticks (`wake_every`; zero: a
    /// one-shot timer); bit 44: a call's timeout (`StepOutput::call`: the
    /// tag is the call's id); bit 45: an interval whose tick a step has taken,
    /// to re-arm after that step ([`Record::due_to_rearm`]); bit 46:
    /// fired, its `Event::Timer` taken past a full step's cap and
    /// carried, not yet given to a step ([`Record::carried`]); bit 47: a
    /// command timeout (else a `wake_*` timer); bits 48..64: the wheel's
    /// worker. (No deadline: whether a firing is this timer's is told by
    /// the key, [`Record::armed_as`].)
    meta: u64,
}

#[cfg(not(loom))]
impl Record {
    const TIMEOUT: u64 = 1 << 47;
    const CARRIED: u64 = 1 << 46;
    const REARM: u64 = 1 << 45;
    const CALL: u64 = 1 << 44;
    /// The longest period an interval keeps, in ticks (about 9 years).
    pub(crate) const MAX_PERIOD: u64 = Self::CALL - 1;

    /// The record of the timeout of call `id`.
    pub(crate) fn call(id: u64, key: Key, wheel: usize) -> Self {
        let mut record = Self::new(id, key, false, wheel);
        record.meta |= Self::CALL;
        record
    }

    /// Whether it is a call's timeout ([`Record::call`]).
    pub(crate) fn is_call(&self) -> bool {
        self.meta & Self::CALL != 0
    }

    pub(crate) fn new(tag: u64, key: Key, timeout: bool, wheel: usize) -> Self {
        let wheel = u16::try_from(wheel).expect("at most 65,536 workers");
        let meta = if timeout { Self::TIMEOUT } else { 0 } | (u64::from(wheel) << 48);
        Record {
            tag,
            key: key.into_raw(),
            meta,
        }
    }

    /// The record of an interval of `period` ticks (`1..=MAX_PERIOD`).
    pub(crate) fn every(tag: u64, key: Key, period: u64, wheel: usize) -> Self {
        debug_assert!((1..=Self::MAX_PERIOD).contains(&period));
        let mut record = Self::new(tag, key, false, wheel);
        record.meta |= period;
        record
    }

    /// An interval's period in ticks; zero for a one-shot timer.
    pub(crate) fn period(&self) -> u64 {
        self.meta & Self::MAX_PERIOD
    }

    /// Marks an interval whose tick a step is given: the worker arms its
    /// next one after that step (`apply_timers`), so no two of its ticks
    /// are ever queued at once.
    pub(crate) fn mark_rearm(&mut self) {
        self.meta = (self.meta & !Self::CARRIED) | Self::REARM;
    }

    /// Whether [`mark_rearm`](Self::mark_rearm) marked it.
    pub(crate) fn due_to_rearm(&self) -> bool {
        self.meta & Self::REARM != 0
    }

    /// Names its next arming (an interval re-armed), unmarked.
    pub(crate) fn rearmed(&mut self, key: Key, wheel: usize) {
        let wheel = u16::try_from(wheel).expect("at most 65,536 workers");
        self.key = key.into_raw();
        self.meta = (self.meta & (Self::MAX_PERIOD | Self::TIMEOUT | Self::CALL))
            | (u64::from(wheel) << 48);
    }

    pub(crate) fn key(&self) -> Key {
        Key::from_raw(self.key)
    }

    pub(crate) fn is_timeout(&self) -> bool {
        self.meta & Self::TIMEOUT != 0
    }

    pub(crate) fn wheel(&self) -> usize {
        (self.meta >> 48) as usize
    }

    /// Marks the record of a timer whose firing was taken one past a full
    /// step's cap: its event waits in the carry, and the record stays until
    /// a step is given it, so that a `cancel_timer` (or a re-arm) of the
    /// step that did not see it finds it, and takes the event out too.
    pub(crate) fn carry(&mut self) {
        self.meta |= Self::CARRIED;
    }

    /// Whether [`carry`](Self::carry) marked it.
    pub(crate) fn carried(&self) -> bool {
        self.meta & Self::CARRIED != 0
    }

    /// Whether `firing` is this record's timer firing, not an earlier
    /// arming's of the same tag: the same wheel entry, by key and wheel.
    pub(crate) fn armed_as(&self, firing: &Firing) -> bool {
        self.key == firing.key && self.wheel() == usize::from(firing.wheel)
    }
}

/// A timer's firing on its way to its process (the mailbox's
/// `Item::Timer`): its tag, and which arming it is, named by the wheel entry
/// it was (`wheel`, `key`). The worker holding the process accepts it only
/// if the process's record names the same entry ([`Record::armed_as`]): a
/// key is not reused until its entry's 32-bit generation wraps, so an
/// earlier arming's late firing (its cancel came too late) never passes for
/// the pending one, and the holder needs no clock to tell them apart.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Firing {
    pub(crate) tag: u64,
    /// The entry's [`Key::into_raw`].
    pub(crate) key: u64,
    /// The worker whose wheel held it.
    pub(crate) wheel: u16,
    /// A command's timeout (a `TimedOut` completion), else `Event::Timer`.
    pub(crate) timeout: bool,
}

#[cfg(not(loom))]
mod api;
#[cfg(not(loom))]
pub(crate) use api::is_timer_made;
#[cfg(not(loom))]
pub(crate) mod cancel;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::wheel::TICK_NANOS;
    use super::TimerClock;
    use std::time::{Duration, Instant};

    #[test]
    fn a_deadline_after_a_reading_is_that_of_the_instant_after_it() {
        let clock = TimerClock::new(None);
        let now = Instant::now() + Duration::from_nanos(12_345);
        for nanos in [0, 1, 16_383, 16_384, 16_385, 1_000_000, 3_600_000_000_007] {
            let after = Duration::from_nanos(nanos);
            let deadline = TimerClock::deadline_after(clock.nanos(now), after);
            assert_eq!(deadline, clock.deadline(now + after), "{nanos} ns");
            assert!(
                deadline * TICK_NANOS >= clock.nanos(now) + nanos,
                "never early"
            );
        }
        let far = TimerClock::deadline_after(clock.nanos(now), Duration::MAX);
        assert_eq!(far, u64::MAX.div_ceil(TICK_NANOS), "saturated");
    }
}
