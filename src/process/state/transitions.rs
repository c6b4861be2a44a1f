//! The state word's transitions: [`StateWord`], every change one CAS on the
//! whole word, and the verdicts that tell its caller what to do next (see
//! the [module docs](super) for the protocol).

use super::layout::{
    Lifecycle, Snapshot, CLOSE, GENERATION_SHIFT, LAST_GENERATION, LATE, MESSAGED, SWEEP,
    TERMINATE, WITHDRAWN, WOKEN,
};
use crate::sync::{AtomicU64, Ordering};
use core::fmt;

/// What kind of event a notifier delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A command completion or a cancel: wakes `Blocked` and `Idle`.
    Completion,
    /// A message: wakes only `Idle`.
    Message,
}

/// What the notifier must do after [`StateWord::notify`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// The process went from waiting to Ready: the notifier must queue it.
    Schedule,
    /// Nothing: it is queued or running (a wakeup bit was left), or it is
    /// blocked and the event does not wake it.
    Nothing,
    /// The process has completed. If it is still Complete, its closer
    /// drains the mailbox again before it frees the slot (the word is
    /// marked late).
    Finished,
    /// The slot now holds another generation: the PID is stale.
    Stale,
    /// The process had ended and its slot was freed, with nothing since:
    /// the event may have been pushed after the close's last drain. The
    /// notifier now holds the freed slot's mailbox (sweeping) and must
    /// drain it, report what it finds, and let go with
    /// [`StateWord::end_sweep`].
    Sweep,
}

/// A push came after the closer's drain: from [`StateWord::free`], which
/// then leaves the slot Complete for the closer to drain again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Late;

/// How a step begins, from [`StateWord::start`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Run a step; `last` if terminate was requested (this step is its last).
    Step {
        /// Terminate was requested before the step: close after it.
        last: bool,
    },
    /// Terminate found the process waiting: close it without a step.
    Close,
}

/// What the process asked for at the end of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Park {
    /// Run again after the work already waiting.
    Continue,
    /// Wait for a completion.
    Wait,
    /// Wait for a message or a completion.
    Idle,
}

/// What the worker must do after [`StateWord::end_step`].
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStep {
    /// The process is Ready again: the worker must queue it.
    Requeue,
    /// The process is waiting; whoever wakes it will queue it.
    Parked,
    /// Terminate arrived during the step and the process wanted to wait:
    /// close it now.
    Close,
}

/// The atomic state word of one process slot. See the [module docs](super).
pub struct StateWord(AtomicU64);

impl StateWord {
    /// A free slot of generation 0.
    pub fn new() -> Self {
        StateWord(AtomicU64::new(Lifecycle::Free as u64))
    }

    /// Reads the word.
    #[inline]
    pub fn load(&self) -> Snapshot {
        // Acquire: pairs with the Release half of the last CAS, so a caller
        // that sees e.g. Complete also sees what happened before it.
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// Runs `f` on the current value until its CAS succeeds or `f` declines
    /// (returns no new value); returns `f`'s verdict.
    #[inline]
    fn update<R>(&self, mut f: impl FnMut(Snapshot) -> (Option<u64>, R)) -> R {
        let mut current = self.load();
        loop {
            let (next, verdict) = f(current);
            let Some(next) = next else { return verdict };
            // AcqRel: Release publishes what the caller did before (an event
            // pushed, a process stored) to the party whose later CAS or load
            // reads this value; Acquire makes the other side's earlier work
            // visible to us (the next holder's `start` reads the previous
            // holder's body; loom: `loom-tests/tests/handoff.rs`). Relaxed on
            // failure: the value only feeds the next attempt, whose success
            // acquires; a verdict `f` declines on (Finished, Stale, Nothing)
            // is acted on without touching what the writer published.
            match self
                .0
                .compare_exchange_weak(current.0, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return verdict,
                Err(actual) => current = Snapshot(actual),
            }
        }
    }

    /// Free -> Ready for a new process; returns the generation of its PID.
    ///
    /// # Panics
    ///
    /// If the slot is not free (the table's free list is broken), or is
    /// retired (freed at [`LAST_GENERATION`]).
    #[cfg(any(test, loom))]
    pub fn activate(&self) -> u32 {
        self.try_activate()
            .expect("state word: activate a slot being swept")
    }

    /// [`activate`](Self::activate), or `None`, with the word unchanged, if
    /// a late sender is sweeping the slot's mailbox ([`Notify::Sweep`]):
    /// the table then takes another slot. A sweep touches only the mailbox
    /// and the bound's released count, so the caller may have written the
    /// body before; the CAS publishes it.
    ///
    /// # Panics
    ///
    /// As [`activate`](Self::activate).
    pub fn try_activate(&self) -> Option<u32> {
        self.update(|s| {
            assert_eq!(
                s.lifecycle(),
                Lifecycle::Free,
                "state word: activate a used slot"
            );
            assert!(
                s.generation() < LAST_GENERATION,
                "state word: activate a retired slot"
            );
            if s.0 & SWEEP != 0 {
                return (None, None);
            }
            let ready = s.with_lifecycle(Lifecycle::Ready);
            (Some(ready), Some(s.generation()))
        })
    }

    /// Writes the word without changing it (an AcqRel `fetch_add(0)`) and
    /// returns the value it read: the meeting point of a sender waiting for
    /// room in a bounded mailbox and the holder that releases places
    /// (`sched/bound.rs`, `Room`), and of a register and the end of its
    /// process (`sched/registry/README.md`).
    pub fn touch(&self) -> Snapshot {
        // AcqRel: Release orders the waiter's registration (a register's
        // `named` flag) before a holder RMW that reads this write (the
        // close's `complete`); Acquire makes a holder RMW this write reads
        // (with the release of places before it) visible to the waiter's
        // next attempt.
        Snapshot(self.0.fetch_add(0, Ordering::AcqRel))
    }

    /// Delivers a wakeup of `kind` to the process of `generation`, after its
    /// event has been pushed onto the process's queue.
    ///
    /// Always an atomic read-modify-write of the word (notify-writes
    /// invariant): a CAS where something changes, else a `fetch_add(0)`,
    /// which changes nothing but, unlike a load, takes its place in the
    /// word's modification order (and compiles, on x86, to a fenced load).
    /// The same holds for a process that ended (late pushes): its word is
    /// marked late, or, once freed, the notifier takes its mailbox to sweep
    /// ([`Notify::Sweep`]), so that a push which came after the close's
    /// drain is reported at once, not when the slot is next used.
    /// Inlined always: it is on every delivery's path.
    #[inline(always)]
    pub fn notify(&self, generation: u32, kind: Wake) -> Notify {
        let mut s = self.load();
        // Whether the RMW that read `s` is already done.
        let mut written = false;
        loop {
            if s.generation() != generation {
                return self.notify_freed(s, generation);
            }
            let (next, verdict) = match (s.lifecycle(), kind) {
                (Lifecycle::Idle, _) | (Lifecycle::Blocked, Wake::Completion) => {
                    (s.with_lifecycle(Lifecycle::Ready), Notify::Schedule)
                }
                (Lifecycle::Running, Wake::Completion) if !s.is_woken() => {
                    (s.0 | WOKEN, Notify::Nothing)
                }
                (Lifecycle::Running, Wake::Message) if !s.is_messaged() => {
                    (s.0 | MESSAGED, Notify::Nothing)
                }
                // Ended, not yet freed: its closer may have drained the
                // mailbox before our push. Marked late, the closer's `free`
                // fails and it drains again (loom: `drain.rs`,
                // `a_push_that_races_its_process_end_is_reported_before_the_slot_is_reused`).
                (Lifecycle::Complete, _) if s.0 & LATE == 0 => (s.0 | LATE, Notify::Finished),
                // Marked already, by an RMW that read after ours: the
                // closer's `free` reads ours too. (Not yet written: below.)
                (Lifecycle::Complete, _) if written => return Notify::Finished,
                // Of this generation only if never issued (the sender's
                // admission refuses it): nothing of ours can be in it.
                (Lifecycle::Free, _) => return Notify::Finished,
                // Ready, Running with the bit already set, or Blocked and a
                // message: nothing to change, but the word must be written.
                _ if written => return Notify::Nothing,
                _ => {
                    // Release (notify-writes): a worker whose later CAS
                    // reads this value or a later one (the release sequence
                    // goes on through RMWs) sees our push; for an ended
                    // process, so does the closer whose `free` reads the
                    // late mark another sender set and clears it after our
                    // RMW. No Acquire: a notifier reads nothing the
                    // process's holder wrote; the next holder's `start`
                    // acquires the previous holder's writes through the
                    // release sequence our RMW continues (loom:
                    // `handoff.rs`). The value it read is current, so it is
                    // decided on again: if it still needs no change, this
                    // RMW was the write.
                    s = Snapshot(self.0.fetch_add(0, Ordering::Release));
                    written = true;
                    continue;
                }
            };
            // Release, as the `fetch_add(0)` above; Relaxed on failure, as
            // in `update`.
            match (self.0).compare_exchange_weak(s.0, next, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return verdict,
                Err(actual) => {
                    s = Snapshot(actual);
                    written = false;
                }
            }
        }
    }

    /// [`notify`](Self::notify) of a process whose slot has moved on from
    /// `generation`: freed with nothing since (the next generation, Free),
    /// the notifier takes the mailbox to sweep it, or, if another sweeper
    /// holds it, marks it late for that sweeper to drain again; reused
    /// (or further on), the PID is stale and the slot's next holder
    /// reports the event as another generation's.
    #[cold]
    #[inline(never)]
    fn notify_freed(&self, mut s: Snapshot, generation: u32) -> Notify {
        loop {
            if s.generation() != generation.wrapping_add(1) || s.lifecycle() != Lifecycle::Free {
                return Notify::Stale;
            }
            let (next, verdict) = if s.0 & SWEEP == 0 {
                (s.0 | SWEEP, Notify::Sweep)
            } else {
                // Written even if already late: the sweeper's `end_sweep`
                // must read our RMW, not only an earlier mark.
                (s.0 | LATE, Notify::Stale)
            };
            // AcqRel. Acquire: the sweeper pops where the closer (its `free`,
            // Release) or the last sweeper (`end_sweep`, Release) left the
            // mailbox. Release: a sweeper's `end_sweep` that reads our late
            // mark (or a later RMW) sees our push. Relaxed on failure: the
            // value is decided on again.
            match (self.0).compare_exchange_weak(s.0, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return verdict,
                Err(actual) => s = Snapshot(actual),
            }
        }
    }

    /// Lets go of a freed slot's mailbox after a sweep ([`Notify::Sweep`]):
    /// `true` if nothing came meanwhile (the slot may be reused); `false`
    /// if a late push marked it (the mark is cleared, the caller still
    /// holds the mailbox and drains it again).
    pub fn end_sweep(&self) -> bool {
        self.update(|s| {
            debug_assert!(s.lifecycle() == Lifecycle::Free && s.0 & SWEEP != 0);
            if s.0 & LATE != 0 {
                (Some(s.0 & !LATE), false)
            } else {
                (Some(s.0 & !SWEEP), true)
            }
        })
    }

    /// Takes a freed slot's mailbox to drain it (sweeping), as
    /// [`Notify::Sweep`] gives it a late sender: `false` if the slot is not
    /// free or another sweeper holds it (that sweeper reports what is
    /// there). For shutdown's report of stranded events.
    pub fn try_sweep(&self) -> bool {
        self.update(|s| {
            if s.lifecycle() != Lifecycle::Free || s.0 & SWEEP != 0 {
                return (None, false);
            }
            (Some(s.0 | SWEEP), true)
        })
    }

    /// Takes the waiting process of `generation` for the caller, as
    /// [`notify`](Self::notify) would schedule it, but with nothing pushed:
    /// `true` if it was Idle (or Blocked, for a [`Wake::Completion`]) and is
    /// now Ready and the caller's to queue, its body the caller's until
    /// then; `false`, with the word unchanged, otherwise (then push and
    /// `notify` as usual). A worker hands a signal to a waiting process
    /// this way without a mailbox node (`worker/signals.rs`).
    #[inline]
    pub fn claim(&self, generation: u32, kind: Wake) -> bool {
        // Relaxed: a look; the CAS below decides, and acquires.
        let mut s = Snapshot(self.0.load(Ordering::Relaxed));
        loop {
            let waiting = match s.lifecycle() {
                Lifecycle::Idle => true,
                Lifecycle::Blocked => matches!(kind, Wake::Completion),
                _ => false,
            };
            if s.generation() != generation || !waiting {
                return false;
            }
            let ready = s.with_lifecycle(Lifecycle::Ready);
            // Acquire: pairs with the Release half of `end_step`'s CAS (the
            // park that made it Idle or Blocked): the caller writes the
            // body the last holder wrote (loom: `links.rs`,
            // `a_signal_handed_to_a_parking_process_is_received_once`). No
            // Release: the caller writes the body after this, and hands it
            // on by queueing the process (its own `runnext`, or its deque's
            // Release push). Relaxed on failure: decided again, and a
            // `false` acts on nothing the word guards.
            match (self.0).compare_exchange_weak(s.0, ready, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => s = Snapshot(actual),
            }
        }
    }

    /// Requests termination of the process of `generation`: a waiting
    /// process becomes Ready to be closed (the caller must queue it); a
    /// queued or running one takes one more step, with a cancel event.
    pub fn terminate(&self, generation: u32) -> Notify {
        self.update(|s| {
            if s.generation() != generation {
                return (None, Notify::Stale);
            }
            match s.lifecycle() {
                _ if s.is_terminating() => (None, Notify::Nothing),
                Lifecycle::Idle | Lifecycle::Blocked => (
                    Some(s.with_lifecycle(Lifecycle::Ready) | TERMINATE | CLOSE),
                    Notify::Schedule,
                ),
                Lifecycle::Ready | Lifecycle::Running => {
                    (Some(s.0 | TERMINATE | WOKEN), Notify::Nothing)
                }
                Lifecycle::Complete | Lifecycle::Free => (None, Notify::Finished),
            }
        })
    }

    /// Ready -> Running, clearing the wakeup bits; by the worker that took
    /// the process from a run queue.
    ///
    /// # Panics
    ///
    /// If the process is not Ready (it was queued twice).
    #[inline]
    pub fn start(&self) -> Start {
        self.try_start()
            .expect("state word: start of a process not Ready")
    }

    /// [`start`](StateWord::start), or `None`, with the word unchanged, if
    /// the process is not Ready (it was queued twice, or is held by a
    /// party that did not queue it): the worker's way to refuse such a
    /// task without a panic.
    #[inline]
    pub fn try_start(&self) -> Option<Start> {
        self.update(|s| {
            if s.lifecycle() != Lifecycle::Ready {
                return (None, None);
            }
            let verdict = if s.0 & CLOSE != 0 {
                Start::Close
            } else {
                Start::Step {
                    last: s.is_terminating(),
                }
            };
            let next = s.with_lifecycle(Lifecycle::Running) & !(WOKEN | MESSAGED);
            (Some(next), Some(verdict))
        })
    }

    /// Running -> Ready, Blocked or Idle at the end of a step, honouring the
    /// wakeup bits set while it ran.
    #[inline]
    pub fn end_step(&self, park: Park) -> AfterStep {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Running);
            let woken = match park {
                Park::Continue => true,
                Park::Wait => s.is_woken(),
                Park::Idle => s.is_woken() || s.is_messaged(),
            };
            if s.is_terminating() && park != Park::Continue {
                (Some(s.with_lifecycle(Lifecycle::Running)), AfterStep::Close)
            } else if woken {
                (Some(s.with_lifecycle(Lifecycle::Ready)), AfterStep::Requeue)
            } else {
                let state = if park == Park::Wait {
                    Lifecycle::Blocked
                } else {
                    Lifecycle::Idle
                };
                (Some(s.with_lifecycle(state)), AfterStep::Parked)
            }
        })
    }

    /// Running -> Complete, clearing the wakeup bits (on a Complete word
    /// `MESSAGED`'s bit marks a late push). Later notifiers get
    /// [`Notify::Finished`].
    #[inline]
    pub fn complete(&self) {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Running);
            let next = s.with_lifecycle(Lifecycle::Complete) & !(WOKEN | MESSAGED);
            (Some(next), ())
        })
    }

    /// Complete -> Free, bumping the generation; by the worker that closed
    /// the process, after it drained the event queue. Returns the new
    /// generation: at [`LAST_GENERATION`] the caller must retire the slot
    /// (never [`activate`](StateWord::activate) it again).
    ///
    /// # Errors
    ///
    /// [`Late`] if a notify marked the word since the close began (or since
    /// the last `Late`): an event may have been pushed after the drain. The
    /// mark is cleared and the slot stays Complete; the caller drains the
    /// mailbox again and retries. Its Acquire reads the late notify's
    /// Release, so that drain sees the push.
    pub fn free(&self) -> Result<u32, Late> {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Complete);
            if s.0 & LATE != 0 {
                return (Some(s.0 & !LATE), Err(Late));
            }
            // A retired slot is never activated, so it is never freed again.
            assert!(
                s.generation() < LAST_GENERATION,
                "state word: free a slot past its last generation"
            );
            let generation = s.generation() + 1;
            (
                Some(u64::from(generation) << GENERATION_SHIFT | Lifecycle::Free as u64),
                Ok(generation),
            )
        })
    }

    /// Complete -> Free and sweeping, for good, bumping the generation: the
    /// free of a process its creator withdrew during shutdown
    /// (`Table::withdraw`). Its mailbox is left to shutdown's drains (the
    /// word is marked withdrawn: [`Snapshot::is_withdrawn`]), so no late
    /// sender may sweep it (one marks it late and leaves it), and the table
    /// never reuses it.
    pub fn free_withdrawn(&self) {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Complete);
            let generation = u64::from(s.generation().saturating_add(1));
            (
                Some(generation << GENERATION_SHIFT | SWEEP | WITHDRAWN | Lifecycle::Free as u64),
                (),
            )
        })
    }

    /// Moves a free slot to `generation`, for tests that bring a slot near
    /// [`LAST_GENERATION`] without 2^32 reuses.
    ///
    /// # Panics
    ///
    /// If the slot is not free.
    #[cfg(test)]
    pub fn age_free(&self, generation: u32) {
        self.update(|s| {
            assert_eq!(
                s.lifecycle(),
                Lifecycle::Free,
                "state word: age a used slot"
            );
            let next = u64::from(generation) << GENERATION_SHIFT | Lifecycle::Free as u64;
            (Some(next), ())
        })
    }
}

impl Default for StateWord {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for StateWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.load().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> (StateWord, u32) {
        let word = StateWord::new();
        let generation = word.activate();
        assert_eq!(word.start(), Start::Step { last: false });
        (word, generation)
    }

    #[test]
    fn completion_while_running_requeues_once() {
        let (word, g) = running();
        assert_eq!(word.notify(g, Wake::Completion), Notify::Nothing);
        assert_eq!(word.notify(g, Wake::Completion), Notify::Nothing);
        assert_eq!(word.end_step(Park::Wait), AfterStep::Requeue);
        assert_eq!(word.load().lifecycle(), Lifecycle::Ready);
        // Queued already: further events do not queue it again.
        assert_eq!(word.notify(g, Wake::Completion), Notify::Nothing);
    }

    #[test]
    fn message_wakes_idle_but_not_blocked() {
        let (word, g) = running();
        assert_eq!(word.end_step(Park::Wait), AfterStep::Parked);
        assert_eq!(word.notify(g, Wake::Message), Notify::Nothing);
        assert_eq!(word.notify(g, Wake::Completion), Notify::Schedule);
        let _ = word.start();
        assert_eq!(word.end_step(Park::Idle), AfterStep::Parked);
        assert_eq!(word.notify(g, Wake::Message), Notify::Schedule);
    }

    #[test]
    fn message_during_step_wakes_only_an_idle_end() {
        let (word, g) = running();
        assert_eq!(word.notify(g, Wake::Message), Notify::Nothing);
        assert_eq!(word.end_step(Park::Wait), AfterStep::Parked);
        let (word, g) = running();
        assert_eq!(word.notify(g, Wake::Message), Notify::Nothing);
        assert_eq!(word.end_step(Park::Idle), AfterStep::Requeue);
    }

    #[test]
    fn stale_generation_is_refused_after_free() {
        let (word, g) = running();
        word.complete();
        assert_eq!(word.free(), Ok(g + 1));
        let g2 = word.activate();
        assert_eq!(g2, g + 1);
        assert_eq!(word.notify(g, Wake::Message), Notify::Stale);
        assert_eq!(word.terminate(g), Notify::Stale);
    }

    #[test]
    fn a_late_notify_makes_the_closer_drain_again_before_the_free() {
        let (word, g) = running();
        word.complete();
        assert_eq!(word.notify(g, Wake::Message), Notify::Finished);
        assert_eq!(word.notify(g, Wake::Completion), Notify::Finished);
        assert_eq!(word.free(), Err(Late), "two late pushes, one more drain");
        assert_eq!(word.free(), Ok(g + 1));
    }

    #[test]
    fn a_notify_after_the_free_sweeps_and_holds_off_reuse_until_done() {
        let (word, g) = running();
        word.complete();
        assert_eq!(word.free(), Ok(g + 1));
        assert_eq!(word.notify(g, Wake::Message), Notify::Sweep);
        // A second late sender leaves the sweep to the first, marked late.
        assert_eq!(word.notify(g, Wake::Message), Notify::Stale);
        assert!(!word.try_sweep(), "one sweeper at a time");
        assert_eq!(word.try_activate(), None, "not reused while swept");
        assert!(!word.end_sweep(), "marked late: drain again");
        assert!(word.end_sweep());
        assert_eq!(word.try_activate(), Some(g + 1));
        assert!(!word.load().is_messaged() && !word.load().is_woken());
        assert_eq!(word.notify(g, Wake::Message), Notify::Stale);
    }

    #[test]
    fn generations_stop_at_the_last_instead_of_wrapping() {
        let word = StateWord::new();
        word.age_free(LAST_GENERATION - 1);
        let g = word.activate();
        assert_eq!(g, LAST_GENERATION - 1);
        assert_eq!(word.start(), Start::Step { last: false });
        word.complete();
        assert_eq!(
            word.free(),
            Ok(LAST_GENERATION),
            "the caller must retire it"
        );
        // A late push is still swept from a retired slot.
        assert_eq!(word.notify(g, Wake::Message), Notify::Sweep);
        assert!(word.end_sweep());
        assert_eq!(word.notify(0, Wake::Message), Notify::Stale);
    }

    #[test]
    #[should_panic(expected = "activate a retired slot")]
    fn a_retired_slot_cannot_be_activated() {
        let word = StateWord::new();
        word.age_free(LAST_GENERATION);
        let _ = word.activate();
    }

    #[test]
    fn terminate_waiting_closes_without_step() {
        let (word, g) = running();
        assert_eq!(word.end_step(Park::Idle), AfterStep::Parked);
        assert_eq!(word.terminate(g), Notify::Schedule);
        assert_eq!(word.terminate(g), Notify::Nothing);
        assert_eq!(word.start(), Start::Close);
    }

    #[test]
    fn terminate_running_gives_one_last_step() {
        let (word, g) = running();
        assert_eq!(word.terminate(g), Notify::Nothing);
        assert_eq!(word.end_step(Park::Wait), AfterStep::Close);
        let (word, g) = running();
        assert_eq!(word.terminate(g), Notify::Nothing);
        assert_eq!(word.end_step(Park::Continue), AfterStep::Requeue);
        assert_eq!(word.start(), Start::Step { last: true });
    }
}
