//! loom models of a bounded mailbox's count (`src/sched/bound.rs`):
//! senders racing the holder's drain at the capacity boundary accept no
//! message beyond the capacity, refuse none once the drain's release is
//! visible, and a sender that waits for room is never left waiting while a
//! drain made room (the `Room` Dekker pair).
//!
//! The senders and the holder run the scheduler's sequence on a real
//! [`Mailbox`]: reserve, push (`Shared::deliver`); pop, release
//! (`Local::collect_events`); the holder's end of the step on a real
//! [`StateWord`], then its check for waiters (`Local::run_task`,
//! `Room::made`) against a waiter's registration, touch of the word and
//! retry (`Room::enter`, `StateWord::touch`, then `Bound::try_reserve`).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test bound`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{Bound, Park, Room, StateWord};
use stepsched::mpsc::Mailbox;
use stepsched_loom_tests::Gate;

struct Boxed {
    bound: Bound,
    mailbox: Mailbox<u32>,
    /// Messages in the mailbox, counted after each push and before each
    /// release: never more than the limit if the count is exact.
    inside: AtomicUsize,
}

fn boxed(limit: u32) -> Arc<Boxed> {
    let b = Arc::new(Boxed {
        bound: Bound::new(),
        mailbox: Mailbox::new(),
        inside: AtomicUsize::new(0),
    });
    b.bound.set_limit(limit);
    b
}

/// `Shared::deliver` for a message: reserve, then push.
fn send(b: &Boxed, message: u32) -> bool {
    let limit = b.bound.limit();
    if !b.bound.try_reserve(limit) {
        return false;
    }
    b.mailbox.push(message);
    let now = b.inside.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(
        now <= limit as usize,
        "{now} messages in a mailbox of {limit}"
    );
    true
}

/// The holder's drain: pop what there is, then release the places.
fn drain(b: &Boxed) -> u32 {
    let mut n = 0;
    // SAFETY: the model's holder thread is the mailbox's only consumer.
    while unsafe { b.mailbox.pop() }.is_some() {
        b.inside.fetch_sub(1, Ordering::SeqCst);
        n += 1;
    }
    if n != 0 {
        b.bound.release(n);
    }
    n
}

/// Capacity 1, two senders and a drain: a message is never accepted into
/// a full mailbox, and every accepted one is drained exactly once.
#[test]
fn no_message_is_accepted_beyond_the_capacity() {
    loom::model(|| {
        let b = boxed(1);
        let senders: Vec<_> = (0..2)
            .map(|i| {
                let b = Arc::clone(&b);
                thread::spawn(move || send(&b, i) as u32)
            })
            .collect();
        let drained = drain(&b);
        let accepted: u32 = senders.into_iter().map(|t| t.join().unwrap()).sum();
        let drained = drained + drain(&b);
        assert_eq!(accepted, drained, "every accepted message is drained once");
        assert_eq!(b.bound.queued(), 0, "every place is given back");
    });
}

/// A full mailbox of capacity 1: once a sender sees that the drain is done
/// (through any synchronisation: here a flag), it finds room.
#[test]
fn no_message_is_refused_once_the_drain_is_visible() {
    loom::model(|| {
        let b = boxed(1);
        assert!(send(&b, 0));
        let drained = Arc::new(AtomicBool::new(false));
        let holder = {
            let (b, drained) = (Arc::clone(&b), Arc::clone(&drained));
            thread::spawn(move || {
                assert_eq!(drain(&b), 1);
                drained.store(true, Ordering::Release);
            })
        };
        if drained.load(Ordering::Acquire) {
            assert!(send(&b, 1), "refused after a visible drain");
        }
        holder.join().unwrap();
    });
}

/// A message is reserved, pushed, drained and its place released (one
/// thread: a sender that is also the holder, as a process sending to
/// itself); an observer that reads the count with no other synchronisation
/// never sees it "negative": it reads `released` first, with Acquire, so
/// `reserved` is not behind it. (With a Relaxed load of `released`, or a
/// Relaxed store of it, a fresh `released` and a stale `reserved` wrap to a
/// huge count: a sender would be refused with room.) The observer starts
/// after the release through a [`Gate`] (Relaxed: no happens-before of its
/// own): the holder's load before its store would otherwise hide the race
/// from loom (`docs/proof/loom-limits.md`).
#[test]
fn the_count_never_reads_a_release_ahead_of_its_reservation() {
    loom::model(|| {
        let b = boxed(1);
        let gate = Gate::new();
        let holder = {
            let (b, gate) = (Arc::clone(&b), Arc::clone(&gate));
            thread::spawn(move || {
                assert!(send(&b, 0), "an empty mailbox refused");
                assert_eq!(drain(&b), 1);
                gate.pass(1);
            })
        };
        gate.wait(1);
        let queued = b.bound.queued();
        assert!(
            queued <= 1,
            "the count read {queued}: a release ahead of its reservation"
        );
        holder.join().unwrap();
    });
}

/// A waiter registers, touches the state word and retries while the holder
/// drains a full mailbox, ends its step (an RMW of the word) and checks for
/// waiters: either the retry finds room, or the holder sees the waiter (and
/// would wake it). Never neither: that is a sender parked until its timeout
/// with room in the mailbox. Fails with the touch weakened to Acquire (the
/// registration is not ordered before the holder's check) or to Release
/// (the release is not ordered before the retry), or without the touch.
#[test]
fn a_waiting_sender_is_never_missed_by_the_drain_that_made_room() {
    loom::model(|| {
        let b = boxed(1);
        let room = Arc::new(Room::new());
        let state = Arc::new(StateWord::new());
        state.activate();
        let _ = state.start();
        assert!(send(&b, 0));
        let holder = {
            let (b, room, state) = (Arc::clone(&b), Arc::clone(&room), Arc::clone(&state));
            thread::spawn(move || {
                assert_eq!(drain(&b), 1);
                let _ = state.end_step(Park::Idle);
                room.anyone_waiting()
            })
        };
        room.enter();
        state.touch();
        let got_in = send(&b, 1);
        // A waiter that did not get in waits (registered) until woken.
        let woken = holder.join().unwrap();
        room.leave();
        assert!(got_in || woken, "a waiting sender missed by the drain");
    });
}

/// Wakes by setting a flag (the task's executor would poll it again).
struct Flag(AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The task's form of the meeting above (`Room::poll_wait`, as
/// `Scheduler::send_async` polls): the task registers, touches and
/// attempts, leaving its waker in the room's list under the lock in the
/// same critical section as the attempt; the holder drains, ends its step
/// and calls `made`. Either the attempt gets in, or the holder's `made`
/// sees the task registered and wakes its waker: never a task left
/// pending with room in the mailbox. Fails without the touch, and if the
/// waker is left after the lock is released (the wake's take of the list
/// could come between).
#[test]
fn a_waiting_task_is_never_missed_by_the_drain_that_made_room() {
    loom::model(|| {
        let b = boxed(1);
        let room = Arc::new(Room::new());
        let state = Arc::new(StateWord::new());
        state.activate();
        let _ = state.start();
        assert!(send(&b, 0));
        let holder = {
            let (b, room, state) = (Arc::clone(&b), Arc::clone(&room), Arc::clone(&state));
            thread::spawn(move || {
                assert_eq!(drain(&b), 1);
                let _ = state.end_step(Park::Idle);
                room.made();
            })
        };
        let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
        let waker = std::task::Waker::from(std::sync::Arc::clone(&flag));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut ticket = None;
        let polled = room.poll_wait(&mut ticket, &mut cx, || {
            state.touch();
            send(&b, 1).then_some(())
        });
        holder.join().unwrap();
        let got_in = polled.is_ready();
        let woken = flag.0.load(Ordering::SeqCst);
        room.cancel(&mut ticket);
        assert!(got_in || woken, "a waiting task missed by the drain");
    });
}
