//! The state word's transitions: [`StateWord`], every change one CAS on the
//! whole word, and the verdicts that tell its caller what to do next (see
//! the [module docs](super) for the protocol).

use super::layout::{
    Lifecycle, Snapshot, CLOSE, GENERATION_SHIFT, LAST_GENERATION, MESSAGED, TERMINATE, WOKEN,
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
    /// The process has completed.
    Finished,
    /// The slot now holds another generation: the PID is stale.
    Stale,
}

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
    pub fn activate(&self) -> u32 {
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
            (Some(s.with_lifecycle(Lifecycle::Ready)), s.generation())
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
    #[inline]
    pub fn notify(&self, generation: u32, kind: Wake) -> Notify {
        let mut s = self.load();
        // Whether the RMW that read `s` is already done.
        let mut written = false;
        loop {
            if s.generation() != generation {
                return Notify::Stale;
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
                (Lifecycle::Complete, _) | (Lifecycle::Free, _) => return Notify::Finished,
                // Ready, Running with the bit already set, or Blocked and a
                // message: nothing to change, but the word must be written.
                _ if written => return Notify::Nothing,
                _ => {
                    // Release (notify-writes): a worker whose later CAS reads
                    // this value or a later one (the release sequence goes
                    // on through RMWs) sees our push. No Acquire: a notifier
                    // reads nothing the process's holder wrote; the next
                    // holder's `start` acquires the previous holder's writes
                    // through the release sequence our RMW continues (loom:
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

    /// Running -> Complete. Later notifiers get [`Notify::Finished`].
    #[inline]
    pub fn complete(&self) {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Running);
            (Some(s.with_lifecycle(Lifecycle::Complete)), ())
        })
    }

    /// Complete -> Free, bumping the generation; by the worker that closed
    /// the process, after it drained the event queue. Returns the new
    /// generation: at [`LAST_GENERATION`] the caller must retire the slot
    /// (never [`activate`](StateWord::activate) it again).
    pub fn free(&self) -> u32 {
        self.update(|s| {
            debug_assert_eq!(s.lifecycle(), Lifecycle::Complete);
            // A retired slot is never activated, so it is never freed again.
            assert!(
                s.generation() < LAST_GENERATION,
                "state word: free a slot past its last generation"
            );
            let generation = s.generation() + 1;
            (
                Some(u64::from(generation) << GENERATION_SHIFT | Lifecycle::Free as u64),
                generation,
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
        assert_eq!(word.notify(g, Wake::Message), Notify::Finished);
        word.free();
        assert_eq!(word.notify(g, Wake::Message), Notify::Stale);
        let g2 = word.activate();
        assert_eq!(g2, g + 1);
        assert_eq!(word.terminate(g), Notify::Stale);
    }

    #[test]
    fn generations_stop_at_the_last_instead_of_wrapping() {
        let word = StateWord::new();
        word.age_free(LAST_GENERATION - 1);
        let g = word.activate();
        assert_eq!(g, LAST_GENERATION - 1);
        assert_eq!(word.start(), Start::Step { last: false });
        word.complete();
        assert_eq!(word.free(), LAST_GENERATION, "the caller must retire it");
        assert_eq!(word.notify(g, Wake::Message), Notify::Stale);
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
