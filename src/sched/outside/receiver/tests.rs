//! A receiver's first step, made by its creator (`first_step`), against
//! what can reach the slot between its insert and that step: a terminate
//! (a thread that guessed the PID, a dropped receiver's, a brutal
//! shutdown's forced close) and a message or cancel pushed while the slot
//! is still Ready. The two halves of `mailbox` are called apart, so the
//! race is staged, not hoped for; `loom-tests/tests/state.rs` proves the
//! interleavings inside `first_step`.

use super::*;
use crate::process::{Event, NoCommand, Status, StepOutput};
use std::sync::mpsc::RecvTimeoutError;

/// Never submitted: the scheduler hosts only receivers here.
struct Nothing;

impl Process for Nothing {
    type Input = ();
    type Message = u32;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// The liveness guard of every wait below: a hang becomes a failure; no
/// timing claim.
const GUARD: Duration = Duration::from_secs(60);

fn scheduler() -> Scheduler<Nothing> {
    Scheduler::builder()
        .workers(2)
        .build()
        .expect("a scheduler")
}

/// A terminate that reaches the slot while it is Ready, before its
/// creator's first step: the worker it is handed to closes it (finding it
/// Running would panic on `start`'s assertion, kill the worker and leave
/// the slot stuck), and the receiver learns that nothing
/// more will come.
#[test]
fn a_receiver_terminated_before_its_first_step_is_closed_not_left_running() {
    let s = scheduler();
    let (receiver, slot) = s.insert_receiver().expect("a slot");
    s.terminate(receiver.pid()).expect("a live receiver");
    first_step(&s.shared, slot);
    assert_eq!(
        receiver.recv_timeout(GUARD),
        Err(RecvTimeoutError::Disconnected)
    );
    let report = s.shutdown(GUARD);
    assert_eq!(report.stuck, 0, "{report:?}");
    assert_eq!(s.live(), 0);
}

/// A message pushed while the slot is Ready sets no wakeup bit (there is
/// nothing to set on a queued process): the creator's first step sees it
/// in the mailbox and hands the slot to a worker, which forwards it
/// (rather than park the slot Idle with the message queued and nobody to
/// wake it).
#[test]
fn a_message_sent_before_a_receivers_first_step_is_forwarded() {
    let s = scheduler();
    let (receiver, slot) = s.insert_receiver().expect("a slot");
    s.send(receiver.pid(), 7).expect("a live receiver");
    first_step(&s.shared, slot);
    assert_eq!(receiver.recv_timeout(GUARD), Ok(7));
    drop(receiver);
    assert_eq!(s.shutdown(GUARD).stuck, 0);
}

/// A shutdown whose cancel reaches the slot while it is Ready: the
/// receiver is ended by it, so `recv` returns `RecvError`, not a wait for
/// ever.
#[test]
fn a_shutdown_before_a_receivers_first_step_ends_it() {
    let s = scheduler();
    let (receiver, slot) = s.insert_receiver().expect("a slot");
    std::thread::scope(|scope| {
        let stopping = scope.spawn(|| s.shutdown(GUARD));
        // The shutdown's cancel of every live slot happens while this one
        // is still Ready, or after its first step: either way it must end.
        while s.shared.core.phase() == phase::RUNNING {
            std::thread::yield_now();
        }
        first_step(&s.shared, slot);
        assert_eq!(
            receiver.recv_timeout(GUARD),
            Err(RecvTimeoutError::Disconnected)
        );
        let report = stopping.join().expect("shutdown returns");
        assert_eq!(report.stuck, 0, "{report:?}");
    });
}

/// Two threads blocked in `recv_timeout` on one receiver (it is `Sync`),
/// and one forward of two messages: both are woken and each takes one. (A
/// single wake left the second asleep for its whole timeout with a
/// message queued, and `recv_timeout` then found it: only the time tells,
/// so each must be back within half of its 60 s timeout, a liveness
/// margin, not a timing claim: a wake takes microseconds.)
#[test]
fn one_forward_of_two_messages_wakes_two_blocked_receivers() {
    let s = scheduler();
    let receiver = s.mailbox().expect("a receiver");
    std::thread::scope(|scope| {
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let started = Instant::now();
                    let got = receiver.recv_timeout(GUARD);
                    assert!(started.elapsed() < GUARD / 2, "woken only by its timeout");
                    got
                })
            })
            .collect();
        // Both usually wait by now; if one does not, it finds its message
        // queued, and the test proves less, never fails a right run.
        std::thread::sleep(Duration::from_millis(50));
        receiver
            .inbox
            .push_all([1, 2].into_iter(), |m| panic!("refused {m}"));
        let mut got: Vec<u32> = waiters
            .into_iter()
            .map(|w| w.join().expect("no panic").expect("a message"))
            .collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
    });
}

/// A forward that comes after the receiver was dropped hands its messages
/// back (the worker reports them to `on_undelivered`).
#[test]
fn a_forward_after_the_drop_hands_the_messages_back() {
    let s = scheduler();
    let receiver = s.mailbox().expect("a receiver");
    let inbox = Arc::clone(&receiver.inbox);
    drop(receiver);
    let mut refused = Vec::new();
    inbox.push_all([3, 4].into_iter(), |m| refused.push(m));
    assert_eq!(refused, [3, 4]);
}
